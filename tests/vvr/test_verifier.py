"""Verifier accuracy on a fixed-seed subset of VVRBench, and robustness to degenerate images.

Full-benchmark numbers: ``python -m visalign.vvr.accuracy --split bench`` (see docs/vvr.md)."""
from __future__ import annotations

import numpy as np
import pytest

from visalign.vvr.accuracy import jpeg
from visalign.vvr.mutations import mutate
from visalign.vvr.parse import parse_image
from visalign.vvr.render import layout, render_scene, render_task
from visalign.vvr.sampler import LOW_RES_TYPES, generate_task
from visalign.vvr.verifier import verify
from visalign.vvr.vocab import BACKGROUNDS, PALETTE


def test_clean_256_subset(bench_subset):
    ok = [verify(render_task(t, 256, seed=1), t).all_satisfied for t in bench_subset]
    assert np.mean(ok) >= 0.995, [t.id for t, k in zip(bench_subset, ok) if not k]


@pytest.mark.parametrize("condition", ["jpeg75", "noise10", "clean64"])
def test_degraded_subset(bench_subset, condition):
    tasks = bench_subset[::3]
    ok = []
    for t in tasks:
        scene = layout(t, 2)
        if condition == "jpeg75":
            img = jpeg(render_scene(scene, 256))
        elif condition == "noise10":
            img = render_scene(scene, 256, noise_std=10.0, seed=2)
        else:
            img = render_scene(scene, 64)
        ok.append(verify(img, t).all_satisfied)
    assert np.mean(ok) >= 0.99, [t.id for t, k in zip(tasks, ok) if not k]


def test_mutations_caught(bench_subset):
    caught = []
    for k, t in enumerate(bench_subset[::3]):
        scene = layout(t, 3)
        m = mutate(t, scene, k)
        if m is not None:
            caught.append(not verify(render_scene(m[0], 256), t).all_satisfied)
    assert len(caught) >= 90 and np.mean(caught) >= 0.99


def test_level0_at_32px():
    tasks = [generate_task(500 + i, 0, LOW_RES_TYPES[i % len(LOW_RES_TYPES)]) for i in range(84)]
    ok = [verify(render_task(t, 32, seed=i), t).all_satisfied for i, t in enumerate(tasks)]
    assert np.mean(ok) >= 0.9  # measured 91-92%: 32 px is at the edge of what shapes survive


def test_resolution_independent():
    t = generate_task(31, 2)
    scene = layout(t, 0)
    for size in (64, 256, 1024):
        assert verify(render_scene(scene, size), t).all_satisfied, size


def test_background_choices():
    t = generate_task(32, 1)
    for bg in BACKGROUNDS:
        assert verify(render_task(t, 128, background=bg), t).all_satisfied, bg


def _degenerate_images(size):
    rng = np.random.default_rng(0)
    yield "white", np.full((size, size, 3), 255, np.uint8)
    yield "black", np.zeros((size, size, 3), np.uint8)
    for name, rgb in {**PALETTE, **BACKGROUNDS}.items():
        yield name, np.broadcast_to(np.array(rgb, np.uint8), (size, size, 3)).copy()
    yield "uniform-noise", rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
    yield "gray-noise", np.clip(rng.normal(128, 60, (size, size, 3)), 0, 255).astype(np.uint8)
    yield "float-zeros", np.zeros((3, size, size), np.float32)


@pytest.mark.parametrize("size", [16, 64, 512])
def test_blank_noise_and_single_colour_score_zero(size, bench_subset):
    tasks = [bench_subset[0], bench_subset[-1]]
    for name, img in _degenerate_images(size):
        parsed = parse_image(img)
        for t in tasks:
            res = verify(img, t)
            assert res.reward() == 0.0 and not res.all_satisfied and res.fraction == 0.0, (name, t.prompt)
        assert parsed.gate() == 0.0, name


def test_bad_image_arrays():
    t = generate_task(1, 1)
    with pytest.raises(ValueError, match="H x W x 3"):
        verify(np.zeros((32, 32), np.uint8), t)
    with pytest.raises(ValueError, match="too small"):
        verify(np.zeros((4, 4, 3), np.uint8), t)
