"""Tilted-target toys: 2-D Gaussian mixtures, exact tilted targets, and distribution distances with a noise floor."""
from .metrics import mmd_rbf, noise_floor, sliced_w2
from .mixtures import GaussianMixture, importance_resample, ring_mixture, tilted_reference_sample

__all__ = ["GaussianMixture", "ring_mixture", "importance_resample", "tilted_reference_sample", "mmd_rbf", "sliced_w2", "noise_floor"]
