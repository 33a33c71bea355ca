"""The v2 colour model and the colour-boundary fix: generator-like colours get the right names, and where two
colours meet (touching, nested) blur and JPEG make no third colour and no ring object."""
from __future__ import annotations

import numpy as np
import pytest

from visalign.vvr.accuracy import N_PAIR_CASES, blur, jpeg, measure_pair, pair_case
from visalign.vvr.colour_model import BACKGROUND_COLOURS, OBJECT_COLOURS, name_background, name_colour
from visalign.vvr.render import render_scene
from visalign.vvr.segment import segment
from visalign.vvr.task import Contact, Obj, Scene

NAMED = {
    "red": [(220, 40, 40), (255, 0, 0), (128, 0, 0), (220, 20, 60), (255, 99, 71)],
    "orange": [(240, 140, 30), (255, 165, 0), (139, 69, 19), (255, 69, 0)],
    "yellow": [(235, 210, 40), (255, 215, 0), (225, 173, 1)],
    "green": [(40, 170, 80), (50, 205, 50), (0, 100, 0), (127, 255, 0)],
    "cyan": [(30, 190, 210), (0, 206, 209), (0, 128, 128)],
    "blue": [(40, 90, 220), (0, 145, 240), (0, 0, 255), (100, 149, 237)],
    "purple": [(140, 70, 200), (128, 0, 128), (138, 43, 226), (75, 0, 130), (106, 90, 205), (140, 20, 120)],
    "pink": [(235, 80, 150), (255, 182, 193), (255, 105, 180), (255, 0, 255)],
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_generator_like_colours_get_their_names(name):
    for rgb in NAMED[name]:
        assert name_colour(rgb) == name, rgb
    assert name_colour((128, 128, 128)) is None and name_colour((250, 250, 250)) is None


def test_backgrounds_are_named_within_a_tolerance():
    for name, rgb in BACKGROUND_COLOURS.items():
        assert name_background(rgb)[0] == name
    assert name_background((236, 236, 236))[0] == "white"  # a brightness gradient keeps its name
    assert name_background((120, 40, 200))[0] is None


def test_nested_red_in_yellow_under_blur_makes_no_orange_ring():
    scene = Scene([Obj("circle", "red", 500, 500, 140), Obj("circle", "yellow", 500, 500, 330)], [Contact("inside", 0, 1)])
    img = render_scene(scene, 256, "white", colours=OBJECT_COLOURS, backgrounds=BACKGROUND_COLOURS)
    for degraded in (img, blur(img, 2.0), jpeg(img, 30)):
        seen = sorted(c.label() for c in segment(degraded).components)
        assert seen == ["red circle", "yellow circle"], seen


def test_colour_pair_cases_pass_under_blur_jpeg_and_64px():
    """Every 7th of the 168 touching / nested / overlap cases (all colour pairs: python -m visalign.vvr.accuracy)."""
    rows = [measure_pair(i) for i in range(0, N_PAIR_CASES, 7)]
    for cond in ("clean256", "blur2", "jpeg30", "clean64"):
        assert all(r[cond] for r in rows), [r for r in rows if not r[cond]]
    spec, scene = pair_case(1)
    assert spec.relations[0].type == "inside" and len(scene.objects) == 2


def test_mixes_that_look_like_the_background_stay_with_their_colours():
    """Yellow meeting cyan on beige: the blurred mix is beige-like; it must not cut the two apart."""
    scene = Scene([Obj("circle", "yellow", 340, 560, 120), Obj("square", "cyan", 500, 500, 300, 10)],
                  [Contact("overlap", 0, 1)])
    img = jpeg(render_scene(scene, 256, "beige", colours=OBJECT_COLOURS, backgrounds=BACKGROUND_COLOURS), 30)
    seg = segment(img)
    assert sorted(c.color for c in seg.components) == ["cyan", "yellow"]
    assert seg.gap(0, 1) == 0.0
