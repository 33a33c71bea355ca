"""Remote rewards end to end on 127.0.0.1: same numbers as local, batching, dead / slow servers and malformed
payloads fail with messages naming the URL or the problem. Every test sends a bounded number of requests."""
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import torch

from visalign.core import FunctionReward, build_reward, score
from visalign.rewards.remote import RemoteReward, RemoteRewardError
from visalign.rewards.server import RewardServer
from visalign.rewards.wire import WireError, decode_request, decode_response, encode_request, encode_response, pack

PROMPTS = ["a red circle", "a blue square", "a green star", "a red square", "a white cat"]


def test_remote_returns_the_local_numbers_in_bounded_batches(hf_clip_folder):
    local = build_reward({"name": "multi", "rewards": [
        {"name": "pickscore", "path": str(hf_clip_folder), "weight": 0.5}, {"name": "color_match", "weight": 2.0}]})
    images = torch.rand(5, 3, 32, 32) * 2 - 1
    expected = score(local, images, PROMPTS, [{"i": i} for i in range(5)])
    with RewardServer(local, port=0) as server:
        remote = build_reward({"name": "remote", "url": server.url, "batch_size": 2, "timeout": 30})
        got = score(remote, images, PROMPTS, [{"i": i} for i in range(5)])
        assert server.requests_scored == 3  # 2 + 2 + 1
        whole = score(RemoteReward(server.url, batch_size=8), images, PROMPTS, [{"i": i} for i in range(5)])
        assert server.requests_scored == 4
    assert torch.equal(whole, expected)  # one request: bit-identical to the local call
    assert torch.allclose(got, expected, atol=1e-5)  # split into requests of 2: matmul rounding differs
    assert set(remote.components()) == {"pickscore", "color_match"}
    assert remote.weights == {"pickscore": 0.5, "color_match": 2.0}
    assert torch.equal(remote.components()["color_match"], local.components()["color_match"])


def test_video_and_audio_video_travel_intact():
    seen = {}

    def record(samples, prompts, metadata):
        seen["samples"] = samples
        video = samples["video"] if isinstance(samples, dict) else samples
        return video.flatten(1).mean(1)

    reward = FunctionReward(record, name="mean")
    video = torch.rand(2, 3, 4, 8, 8)
    av = {"video": video, "audio": torch.rand(2, 1, 64), "sample_rate": 16000, "fps": 8.0}
    with RewardServer(reward, port=0) as server:
        remote = RemoteReward(server.url)
        assert torch.allclose(remote(video, PROMPTS[:2], [{}, {}]), video.flatten(1).mean(1))
        remote(av, PROMPTS[:2], [{}, {}])
    assert seen["samples"]["sample_rate"] == 16000 and seen["samples"]["fps"] == 8.0
    assert torch.equal(seen["samples"]["audio"], av["audio"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dead_server_fails_naming_the_url_after_bounded_retries():
    url = f"http://127.0.0.1:{_free_port()}"
    remote = RemoteReward(url, timeout=2, retries=2, retry_wait=0.01)
    start = time.monotonic()
    with pytest.raises(RemoteRewardError, match=rf"{url}/score failed after 3 attempt\(s\)"):
        remote(torch.zeros(1, 3, 8, 8), ["x"], [{}])
    assert time.monotonic() - start < 5


def test_slow_server_times_out_naming_the_url():
    def slow(samples, prompts, metadata):
        time.sleep(1.5)
        return torch.zeros(len(prompts))

    with RewardServer(FunctionReward(slow, name="slow"), port=0) as server:
        remote = RemoteReward(server.url, timeout=0.3, retries=0)
        with pytest.raises(RemoteRewardError, match=rf"{server.url}/score failed after 1 attempt\(s\).*(within 0.3 s|timed out)"):
            remote(torch.zeros(1, 3, 8, 8), ["x"], [{}])


def test_a_failing_reward_is_reported_not_zeroed():
    def broken(samples, prompts, metadata):
        return torch.full((len(prompts),), float("nan"))

    with RewardServer(FunctionReward(broken, name="broken"), port=0) as server:
        with pytest.raises(RemoteRewardError, match=r"HTTP 500: reward 'broken' failed: .*non-finite"):
            RemoteReward(server.url, retries=3, retry_wait=0.01)(torch.zeros(2, 3, 8, 8), ["a", "b"], [{}, {}])
        assert server.requests_scored == 0


def _post(url: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(url + "/score", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())["error"]


def test_malformed_payloads_are_rejected_over_http():
    import pickle

    reward = FunctionReward(lambda s, p, m: torch.zeros(len(p)), name="zero")
    good = encode_request(torch.zeros(2, 3, 8, 8), ["a", "b"], [{}, {}])
    with RewardServer(reward, port=0) as server:
        cases = {
            "pickle": pickle.dumps({"samples": torch.zeros(1)}),
            "truncated": good[:40],
            "int pixels": pack({"kind": "image", "prompts": ["a"], "metadata": [{}], "shared": {}},
                               {"samples": torch.zeros(1, 3, 8, 8, dtype=torch.int64)}),
            "batch mismatch": pack({"kind": "image", "prompts": ["a"], "metadata": [{}], "shared": {}},
                                   {"samples": torch.zeros(2, 3, 8, 8)}),
            "nan": pack({"kind": "image", "prompts": ["a"], "metadata": [{}], "shared": {}},
                        {"samples": torch.full((1, 3, 8, 8), float("nan"))}),
            "extra key": pack({"kind": "image", "prompts": ["a"], "metadata": [{}], "shared": {}, "code": "x"},
                              {"samples": torch.zeros(1, 3, 8, 8)}),
        }
        for case, body in cases.items():
            status, message = _post(server.url, body)
            assert status == 400 and message.startswith("malformed request"), (case, status, message)
        assert _post(server.url, good)[0] == 200
        assert server.requests_scored == 1


def test_malformed_responses_are_rejected_by_the_client():
    with pytest.raises(WireError, match="shape"):
        decode_response(encode_response(torch.zeros(3), {}, "r"), batch_size=2)
    with pytest.raises(WireError, match="unknown tensors"):
        decode_response(pack({}, {"rewards": torch.zeros(2), "weights": torch.zeros(2)}), batch_size=2)
    samples, prompts, metadata = decode_request(encode_request(torch.ones(1, 3, 4, 4), ["p"], [{"k": [1, 2]}]))
    assert prompts == ["p"] and metadata == [{"k": [1, 2]}] and torch.equal(samples, torch.ones(1, 3, 4, 4))
    with pytest.raises(WireError, match="plain JSON"):
        encode_request(torch.ones(1, 3, 4, 4), ["p"], [{"k": object()}])


def test_bad_urls_are_refused():
    with pytest.raises(ValueError, match="http"):
        RemoteReward("ftp://example/score")


def test_serve_reward_command_serves_a_config(tmp_path):
    config = tmp_path / "serve.yaml"
    config.write_text("reward: brightness\nserve:\n  port: 0\n")
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-m", "visalign.cli", "serve-reward", str(config)], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**__import__("os").environ, "PYTHONPATH": str(root)})
    try:
        line = process.stdout.readline()
        assert "serving reward 'brightness' at http://127.0.0.1:" in line, (line, process.stderr.read() if process.poll() is not None else "")
        url = line.rsplit(" ", 1)[-1].strip()
        images = torch.rand(3, 3, 8, 8) * 2 - 1
        local = build_reward("brightness")
        assert torch.equal(RemoteReward(url)(images, PROMPTS[:3], [{}] * 3), local(images, PROMPTS[:3], [{}] * 3))
    finally:
        process.terminate()
        process.wait(timeout=10)
