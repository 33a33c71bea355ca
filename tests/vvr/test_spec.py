"""The visual spec format: validation errors name the problem, canonical JSON round trips, criteria."""
from __future__ import annotations

import json

import pytest

from visalign.vvr.spec import EXTENSION_TYPES, EXTENSION_VERSION, IMAGE_TYPES, SpecError, parse_spec


def _spec(**over):
    base = {"verifier_version": "vvr_bench_v4", "background": {"color": "white"},
            "objects": [{"id": "a", "color": "red", "shape": "circle", "count": 1},
                        {"id": "b", "color": "blue", "shape": "square", "count": 2}],
            "relations": [{"type": "left_of", "subject": "a", "object": "b"}], "forbidden": [{"color": "green"}]}
    base.update(over)
    return base


def test_there_are_46_types_in_five_families_and_an_extension():
    assert len(IMAGE_TYPES) == 46
    assert set(IMAGE_TYPES.values()) == {"grounding", "cardinality", "spatial", "size", "topology"}
    assert set(EXTENSION_TYPES) == {"parity", "symmetric", "same_color", "different_color", "overlap"}


def test_round_trip_and_criteria():
    spec = parse_spec(json.dumps(_spec()))
    assert parse_spec(spec.to_json()).to_json() == spec.to_json()
    assert spec.criteria() == ["color_shape_binding", "exact_count", "left_of"]
    assert parse_spec(_spec(relations=[{"type": "twice_as_many", "subject": "b", "object": "a"}])).relations[0].type \
        == "times_as_many"


BAD = [
    ({"objects": []}, "non-empty list of object groups"),
    ({"background": {"color": "purple"}}, "background.color: unknown background 'purple'"),
    ({"objects": [{"id": "a", "color": "magenta", "shape": "circle", "count": 1}]}, "objects[0].color: unknown colour"),
    ({"objects": [{"id": "a", "color": "red", "shape": "star", "count": 1}]}, "extension only"),
    ({"objects": [{"id": "a", "color": "red", "shape": "circle", "count": 0}]}, "objects[0].count: must be >= 1"),
    ({"objects": [{"id": "a", "color": "red", "shape": "circle", "count": 1, "size": "large"}]}, "absolute size"),
    ({"objects": [{"id": "a", "color": "red", "shape": "circle", "count": 1},
                  {"id": "b", "color": "red", "shape": "circle", "count": 2}]}, "both red circles"),
    ({"relations": [{"type": "left_of", "subject": "a", "object": "zz"}]}, "relations[0].object: no object group"),
    ({"relations": [{"type": "larger_than", "subject": "a", "object": "b"}]}, "needs singleton groups; 'b'"),
    ({"relations": [{"type": "all_same_row", "subject": "a"}]}, "at least two objects"),
    ({"relations": [{"type": "inside", "subject": "a", "object": "b"},
                    {"type": "inside", "subject": "b", "object": "a"}]}, "impossible cycle"),
    ({"relations": [{"type": "all_same_size", "subject": "b"}, {"type": "not_all_same_size", "subject": "b"}]},
     "contradicts"),
    ({"relations": [{"type": "each_inside", "subject": "b", "object": "a"}]}, "subject count (2) <= object count (1)"),
    ({"relations": [{"type": "parity", "subject": "a", "parity": "odd"}]}, "visalign's extension"),
    ({"relations": [{"type": "left_of", "subject": "a", "object": "b", "margin_px": -3}]}, "margin_px: must be a number"),
    ({"forbidden": [{"color": "red"}]}, "also the colour of an object group"),
    ({"objects": [{"id": "a", "color": "red", "shape": "circle", "count": 2,
                   "layout": {"type": "grid_cells", "rows": 2, "cols": 2, "cells": [[0, 0], [2, 1]]}}],
      "relations": []}, "outside the 2x2 grid"),
    ({"objects": [{"id": "a", "color": "red", "shape": "circle", "count": 1,
                   "layout": {"type": "regions", "regions": ["middle"]}}], "relations": []}, "unknown region(s) ['middle']"),
    ({"verifier_version": "v9"}, "verifier_version: unknown 'v9'"),
    ({"colour": "red"}, "unknown top-level key(s) ['colour']"),
]


@pytest.mark.parametrize("over, match", BAD, ids=[m[:24] for _, m in BAD])
def test_validation_names_the_problem(over, match):
    with pytest.raises(SpecError, match=match.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        parse_spec(_spec(**over))


def test_every_problem_is_listed_and_bad_json_is_named():
    with pytest.raises(SpecError) as err:
        parse_spec(_spec(background={"color": "teal"}, forbidden=[{"color": "grey"}]))
    assert len(err.value.problems) == 2
    with pytest.raises(SpecError, match="not valid JSON"):
        parse_spec("{objects: ")


def test_extension_needs_its_version():
    ext = _spec(verifier_version=EXTENSION_VERSION,
                objects=[{"id": "a", "color": "any", "shape": "circle", "count": 1},
                         {"id": "b", "color": "any", "shape": "square", "count": 1}],
                relations=[{"type": "same_color", "subject": "a", "object": "b"}], forbidden=[])
    assert parse_spec(ext).extension
    with pytest.raises(SpecError, match="would also take the objects"):
        parse_spec({**ext, "objects": ext["objects"] + [{"id": "c", "color": "red", "shape": "circle", "count": 1}]})
