"""``visalign serve-reward``: any registry reward behind HTTP (standard library only).

``POST /score`` takes a wire-format request (``visalign.rewards.wire``) and answers with the rewards and the
per-component scores; ``GET /health`` names the reward. Malformed requests get 400 with a JSON error, a reward that
raises gets 500 with its message; one request is scored at a time (the model is not assumed thread-safe).
There is no authentication: bind to 127.0.0.1 (the default) or to an address on a network you trust.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch

from ..core.config import check
from ..core.reward import Reward, build_reward, score
from .wire import WireError, decode_request, encode_response, error_body


@dataclass
class ServeConfig:
    """``reward``: any reward spec a run config takes (its own ``device:`` key places the model); ``port: 0``
    picks a free port."""

    reward: Any
    host: str = "127.0.0.1"
    port: int = 8765
    max_request_mb: float = 1024.0

    def __post_init__(self) -> None:
        check(self.reward is not None, "serve-reward needs a 'reward' section")
        check(0 <= self.port < 65536, f"port must be in [0, 65535], got {self.port}")
        check(self.max_request_mb > 0, f"max_request_mb must be > 0, got {self.max_request_mb}")


class RewardServer:
    """A threaded HTTP server around one reward; ``start()`` serves in a background thread, ``close()`` stops."""

    def __init__(self, reward: Reward, host: str = "127.0.0.1", port: int = 0, max_request_bytes: int = 1 << 30) -> None:
        self.reward = reward
        self.max_request_bytes = max_request_bytes
        self.requests_scored = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/health":
                    return self._send(404, error_body(f"no such endpoint {self.path}; use POST /score or GET /health"))
                self._send(200, json.dumps({"name": server.reward.name, "status": "ok"}).encode(), "application/json")

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/score":
                    return self._send(404, error_body(f"no such endpoint {self.path}; use POST /score"))
                length = self.headers.get("Content-Length")
                if length is None or not length.isdigit():
                    return self._send(411, error_body("Content-Length is required"))
                if int(length) > server.max_request_bytes:
                    return self._send(413, error_body(f"request of {length} bytes exceeds {server.max_request_bytes}"))
                try:
                    samples, prompts, metadata = decode_request(self.rfile.read(int(length)))
                except WireError as exc:
                    return self._send(400, error_body(f"malformed request: {exc}"))
                try:
                    body = server.score(samples, prompts, metadata)
                except Exception as exc:  # the reward's own failure goes back to the client verbatim
                    return self._send(500, error_body(f"reward {server.reward.name!r} failed: {type(exc).__name__}: {exc}"))
                self._send(200, body)

            def _send(self, status: int, body: bytes, kind: str = "application/octet-stream") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind if status == 200 else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def score(self, samples: Any, prompts: list[str], metadata: list[dict[str, Any]]) -> bytes:
        with self._lock, torch.no_grad():
            rewards = score(self.reward, samples, prompts, metadata)
            components = self.reward.components()
            weights = {part.name: w for part, w in self.reward.parts() if part.name in components}
            body = encode_response(rewards, components, self.reward.name, weights)
            self.requests_scored += 1
        return body

    def start(self) -> "RewardServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "RewardServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


RUN_CONFIG_SECTIONS = {"generator", "policy", "eval_reward", "algorithm", "prompts", "trainer"}


def load_serve_config(path: str, overrides: list[str]) -> ServeConfig:
    """A serve config (``reward`` + optional ``serve: {host, port, max_request_mb}``); a run config's
    other sections are allowed, so ``visalign serve-reward RUN_CONFIG`` serves that run's reward."""
    from ..core.config import ConfigError, apply_overrides, from_dict, load_yaml

    data = apply_overrides(load_yaml(path), overrides)
    unknown = sorted(set(data) - {"reward", "serve"} - RUN_CONFIG_SECTIONS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; a serve config has 'reward' and 'serve'")
    if "reward" not in data:
        raise ConfigError(f"{path}: no 'reward' section to serve")
    return from_dict(ServeConfig, {"reward": data["reward"], **(data.get("serve") or {})}, prefix="serve")


def serve(config: ServeConfig) -> None:
    """Build the reward and serve it until interrupted."""
    reward = build_reward(config.reward)
    server = RewardServer(reward, config.host, config.port, int(config.max_request_mb * (1 << 20)))
    print(f"serving reward {reward.name!r} at {server.url}/score", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
