"""The shared training loop (accelerate), its config, checkpoints and run pictures."""
from .callbacks import SampleCounter, TrainerCallback
from .config import TrainerConfig
from .trainer import Trainer, step_generator
from .visuals import image_grid, plot_reward_curve, save_samples

__all__ = ["Trainer", "TrainerConfig", "TrainerCallback", "SampleCounter", "step_generator", "image_grid", "plot_reward_curve", "save_samples"]
