"""The ``remote`` reward: scores batches on a ``visalign serve-reward`` server over HTTP (standard library).

Samples travel as safetensors bytes with a JSON header (``visalign.rewards.wire``), never pickle. Batches are
split into requests of ``batch_size`` samples; a timeout, refused connection or 502/503/504 is retried
``retries`` times with exponential back-off; anything else fails at once. Every failure raises
``RemoteRewardError`` naming the URL, so the training step stops instead of training on a made-up reward.
"""
from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Sequence
from urllib.parse import urlparse

import torch

from ..core.reward import Reward, register_reward
from ..core.types import Metadata, Samples, batch_size_of, index_samples
from .wire import WireError, decode_response, encode_request

RETRYABLE_STATUS = (502, 503, 504)


class RemoteRewardError(RuntimeError):
    """A remote reward could not be obtained; the message names the URL and the cause."""


@register_reward("remote")
class RemoteReward(Reward):
    """A reward computed by a server (``visalign serve-reward``); black-box (no gradients)."""

    differentiable = False

    def __init__(self, url: str, timeout: float = 60.0, retries: int = 2, retry_wait: float = 0.5,
                 batch_size: int = 64, name: str | None = None) -> None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"remote reward url must be http(s)://host:port[/score], got {url!r}")
        if timeout <= 0 or retries < 0 or retry_wait < 0 or batch_size < 1:
            raise ValueError(f"remote reward {url}: need timeout > 0, retries >= 0, retry_wait >= 0, batch_size >= 1")
        self.url = url.rstrip("/") if url.rstrip("/").endswith("/score") else url.rstrip("/") + "/score"
        self.timeout, self.retries, self.retry_wait, self.batch_size = timeout, retries, retry_wait, batch_size
        self.name = name or f"remote({self.url})"
        self.last_components: dict[str, torch.Tensor] = {}
        self.weights: dict[str, float] = {}

    def __call__(self, samples: Samples, prompts: Sequence[str], metadata: Metadata) -> torch.Tensor:
        n = batch_size_of(samples)
        device = samples["video"].device if isinstance(samples, dict) else samples.device  # type: ignore[union-attr]
        rewards, parts = [], []
        for start in range(0, n, self.batch_size):
            rows = slice(start, min(n, start + self.batch_size))
            try:
                body = encode_request(index_samples(samples, rows), list(prompts[rows]), list(metadata[rows]))
            except WireError as exc:
                raise RemoteRewardError(f"remote reward {self.url}: cannot encode the batch: {exc}") from exc
            try:
                values, components, self.weights = decode_response(self._post(body), rows.stop - rows.start)
            except WireError as exc:
                raise RemoteRewardError(f"remote reward {self.url} sent a malformed response: {exc}") from exc
            rewards.append(values)
            parts.append(components)
        names = set(parts[0]) if parts else set()
        self.last_components = {k: torch.cat([p[k] for p in parts]).to(device) for k in names if all(k in p for p in parts)}
        return torch.cat(rewards).to(device)

    def components(self) -> dict[str, torch.Tensor]:
        """The server reward's per-component scores of the last call; their weights are in ``self.weights``."""
        return dict(self.last_components)

    def _post(self, body: bytes) -> bytes:
        attempts = self.retries + 1
        cause = ""
        for attempt in range(attempts):
            request = urllib.request.Request(self.url, data=body, method="POST",
                                             headers={"Content-Type": "application/octet-stream"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.read()
            except urllib.error.HTTPError as exc:
                cause = f"HTTP {exc.code}: {_error_text(exc)}"
                if exc.code not in RETRYABLE_STATUS:
                    raise RemoteRewardError(f"remote reward {self.url} failed: {cause}") from exc
            except (socket.timeout, TimeoutError) as exc:
                cause = f"no answer within {self.timeout:g} s ({exc})"
            except (urllib.error.URLError, ConnectionError, OSError) as exc:
                cause = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            if attempt + 1 < attempts:
                time.sleep(self.retry_wait * 2**attempt)
        raise RemoteRewardError(f"remote reward {self.url} failed after {attempts} attempt(s): {cause}")


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(exc.read().decode())["error"])
    except Exception:
        return exc.reason if isinstance(exc.reason, str) else "no error message"
