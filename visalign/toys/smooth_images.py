"""Synthetic "real" images with a known density, and a deterministic judge of them (preferences without people).

Data: ``x = Σ_j a_j z_j U_j + σ ε`` with ``z ~ N(0, I)`` on ``k`` orthonormal smooth patterns ``U_j`` (brightness,
colour casts, gradients, a centred bump) plus small pixel noise, clamped to [-1, 1]. Because the density is known,
the judge can tell on-data from off-data images:

    V(x) = γ·tanh(z_0) − ½·mean_j z_j² − β·(ρ² − 1)

``z_j = ⟨x, U_j⟩ / a_j`` are standardised pattern coordinates (``z_0`` is brightness), ``ρ² = mean(residual²)/σ²``
is the energy off the pattern subspace in units of the data's pixel noise (≈ 1 on data). On real images V mostly
ranks brightness (saturating) and typicality, so a reward model fitted to real pairs never sees the off-data term:
that is what a generator can exploit (latent reward hacking) and what the judge still measures.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.config import check, option


@dataclass
class SmoothImagesConfig:
    size: int = option(8, "image side")
    channels: int = option(3, "image channels (3: the colour patterns need RGB)")
    brightness_amplitude: float = option(0.15, "pixel std of the brightness pattern")
    pattern_amplitude: float = option(0.08, "pixel std of each other pattern")
    noise: float = option(0.03, "pixel noise σ off the pattern subspace")
    gamma: float = option(1.0, "judge: weight γ of the saturating brightness preference tanh(z_0)")
    beta: float = option(0.5, "judge: weight β of the off-data energy ρ² − 1")

    def __post_init__(self) -> None:
        check(self.size >= 4 and self.channels == 3, f"smooth images need size >= 4 and 3 channels, got {self.size}, {self.channels}")
        check(self.noise > 0 and self.brightness_amplitude > 0 and self.pattern_amplitude > 0, "amplitudes and noise must be > 0")


class SmoothImages:
    """The data distribution and the judge (both deterministic; no parameters to learn)."""

    def __init__(self, config: SmoothImagesConfig | None = None) -> None:
        self.config = c = config or SmoothImagesConfig()
        s = c.size
        v, u = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
        one, zero = torch.ones(s, s), torch.zeros(s, s)
        bump = torch.exp(-(u**2 + v**2) / 0.3)

        def rgb(r, g, b):
            return torch.stack([r, g, b])

        patterns = [rgb(one, one, one), rgb(one, zero, -one), rgb(-one / 2, one, -one / 2), rgb(u, u, u), rgb(v, v, v),
                    rgb(u, -u, zero), rgb(bump, bump, bump), rgb(u * v, u * v, u * v)]
        basis, _ = torch.linalg.qr(torch.stack([p.flatten() for p in patterns], 1))
        sign = torch.sign(basis[0, 0])  # brightness pattern positive
        self.basis = (basis * sign).T.contiguous()  # [k, D], orthonormal rows; row 0 is the constant image
        dim = self.basis.shape[1]
        self.amplitudes = torch.full((self.basis.shape[0],), c.pattern_amplitude * dim**0.5)
        self.amplitudes[0] = c.brightness_amplitude * dim**0.5
        self.shape = (c.channels, s, s)

    @property
    def num_patterns(self) -> int:
        return self.basis.shape[0]

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        z = torch.randn((n, self.num_patterns), generator=generator)
        eps = torch.randn((n, self.basis.shape[1]), generator=generator)
        x = (z * self.amplitudes) @ self.basis + self.config.noise * eps
        return x.clamp(-1, 1).reshape(n, *self.shape)

    def ranked_pairs(self, n: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` pairs of fresh images ordered by the judge: ``(winners, losers)``, each ``[n, C, H, W]`` (ties go to
        the first draw). Preference data without people."""
        a, b = self.sample(n, generator), self.sample(n, generator)
        first = (self.judge(a) >= self.judge(b))[:, None, None, None]
        return torch.where(first, a, b), torch.where(first, b, a)

    def coordinates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Standardised pattern coordinates ``z [B, k]`` and off-subspace energy ``ρ² [B]``."""
        flat = x.flatten(1).float()
        basis = self.basis.to(flat.device)
        proj = flat @ basis.T
        residual = flat - proj @ basis
        return proj / self.amplitudes.to(flat.device), residual.pow(2).mean(1) / self.config.noise**2

    def judge(self, x: torch.Tensor) -> torch.Tensor:
        """V(x) of the module docstring, ``[B]``."""
        if x.shape[1:] != self.shape:
            raise ValueError(f"smooth-image judge expects images of shape [B, {', '.join(map(str, self.shape))}], got {tuple(x.shape)}")
        z, rho2 = self.coordinates(x)
        c = self.config
        return c.gamma * torch.tanh(z[:, 0]) - 0.5 * z.pow(2).mean(1) - c.beta * (rho2 - 1)


__all__ = ["SmoothImages", "SmoothImagesConfig"]
