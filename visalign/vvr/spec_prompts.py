"""Prompts for VVR v2 specs: the whole scene in words (closed world).

One sentence lists every object group with its exact count, on the named background, "and nothing else"; then one
sentence per layout, per relation and for the forbidden colours. Paraphrases are drawn from a seeded
``random.Random``, so a task's prompt is fixed by its seed.
"""
from __future__ import annotations

import random

from .spec import ANY, Group, Relation, VisualSpec
from .vocab import NUMBER_WORDS

PLURAL = {"circle": "circles", "square": "squares", "triangle": "triangles", "star": "stars", ANY: "shapes"}
ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth"}
REGION_WORDS = {"top_left": "in the top-left quarter", "top": "in the top half", "top_right": "in the top-right quarter",
                "left": "in the left half", "center": "in the centre", "right": "in the right half",
                "bottom_left": "in the bottom-left quarter", "bottom": "in the bottom half",
                "bottom_right": "in the bottom-right quarter"}


def _num(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def noun(g: Group, plural: bool | None = None) -> str:
    """``red circle`` / ``red circles``; a group of any colour reads ``circle``, of any shape ``red shape``."""
    plural = (g.count != 1) if plural is None else plural
    shape = PLURAL[g.shape] if plural else ("shape" if g.shape == ANY else g.shape)
    return shape if g.color == ANY else f"{g.color} {shape}"


def the(g: Group) -> str:
    return f"the {noun(g)}"


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def _count_phrase(g: Group) -> str:
    if g.count_mode == "relative":
        return f"some {noun(g, True)} (at most {_num(g.max_count)})"
    return f"{'exactly ' if g.count > 1 else ''}{_num(g.count)} {noun(g)}"


def _join(items: list[str], word: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def scene_sentence(spec: VisualSpec, rng: random.Random) -> str:
    groups = _join([_count_phrase(g) for g in spec.groups])
    bg = spec.background or "plain"
    start = rng.choice([f"On a plain {bg} background, draw {groups}, and nothing else.",
                        f"A plain {bg} background with {groups} and no other objects.",
                        f"Draw {groups} on a plain {bg} background, with nothing else in the image."])
    return start


def layout_sentence(g: Group) -> str | None:
    lay = g.layout
    if lay is None:
        return None
    subj = _cap(the(g))
    verb = "is" if g.count == 1 else "are"
    if lay.type == "regions":
        where = _join([REGION_WORDS[r] for r in lay.regions])
        return f"{subj} {verb} {where} of the image." if len(lay.regions) == 1 else \
            f"{subj} {verb} placed {where} of the image, each of these areas holding one."
    if lay.type == "grid_cells":
        cells = _join([f"(row {r + 1}, column {c + 1})" for r, c in lay.cells])
        grid = f"Seen as a grid of {_num(lay.rows)} rows and {_num(lay.cols)} columns, {the(g)} {verb} in"
        return f"{grid} the cell {cells}." if len(lay.cells) == 1 else f"{grid} the cells {cells}, one per cell."
    return {"horizontal_row": f"{subj} {verb} lined up in a horizontal row.",
            "vertical_column": f"{subj} {verb} lined up in a vertical column.",
            "diagonal_down": f"{subj} {verb} lined up on a diagonal from top left to bottom right."}[lay.type]


def relation_sentence(r: Relation, spec: VisualSpec, rng: random.Random) -> str:
    s = spec.group(r.subject)
    o = spec.group(r.object) if r.object else None
    S, O = the(s), (the(o) if o else "")
    is_ = "is" if s.count == 1 else "are"
    t = r.type
    pick = rng.choice
    if t == "same_count":
        return f"There are as many {noun(s, True)} as {noun(o, True)}."
    if t in ("more_than_count", "fewer_than_count"):
        k = int(r.param("min_difference", 1))
        word = "more" if t == "more_than_count" else "fewer"
        lead = f"at least {_num(k)} {word}" if k > 1 else word
        return f"There are {lead} {noun(s, True)} than {noun(o, True)}."
    if t == "times_as_many":
        m = int(r.param("multiplier", 2))
        times = {2: "twice", 3: "three times"}.get(m, f"{_num(m)} times")
        return f"There are {times} as many {noun(s, True)} as {noun(o, True)}."
    if t in ("left_of", "right_of", "above", "below"):
        words = {"left_of": ["to the left of", "left of"], "right_of": ["to the right of", "right of"],
                 "above": ["above", "higher up than"], "below": ["below", "lower down than"]}[t]
        return f"{_cap(S)} {is_} {pick(words)} {O}."
    if t.startswith("all_") and t[4:] in ("left_of", "right_of", "above", "below"):
        where = {"left_of": "to the left of", "right_of": "to the right of", "above": "above", "below": "below"}[t[4:]]
        return f"Every {noun(s, False)} is {where} every {noun(o, False)}."
    if t in ("leftmost", "rightmost", "topmost", "bottommost"):
        side, than = {"leftmost": ("furthest left", "further left"), "rightmost": ("furthest right", "further right"),
                      "topmost": ("highest up", "higher up"), "bottommost": ("lowest down", "lower down")}[t]
        if r.references is None:
            return f"{_cap(S)} is the object {side} in the image."
        refs = _join([f"every {noun(spec.group(x), False)}" for x in r.references])
        return f"{_cap(S)} is {than} than {refs}."
    if t in ("largest", "smallest"):
        if r.references is None:
            return f"{_cap(S)} is the {t} object in the image."
        refs = _join([f"every {noun(spec.group(x), False)}" for x in r.references])
        return f"{_cap(S)} is {'larger' if t == 'largest' else 'smaller'} than {refs}."
    if t == "between":
        return f"{_cap(S)} {is_} between {the(spec.group(r.anchor_a))} and {the(spec.group(r.anchor_b))}."
    if t in ("same_row", "same_column"):
        line = pick(["in the same row", "at the same height"]) if t == "same_row" else \
            pick(["in the same column", "vertically aligned"])
        return f"{_cap(S)} and {O} are {line}."
    if t in ("all_same_row", "all_same_column", "not_all_same_row", "not_all_same_column"):
        line = "one horizontal row" if t.endswith("row") else "one vertical column"
        neg = "not " if t.startswith("not") else ""
        return f"{_cap(S)} are {neg}all in {line}."
    if t in ("closer_than", "farther_than"):
        a, b = the(spec.group(r.anchor_a)), the(spec.group(r.anchor_b))
        if t == "closer_than":
            return f"{_cap(S)} {is_} closer to {a} than to {b}."
        return f"{_cap(S)} {is_} farther from {a} than from {b}."
    if t in ("larger_than", "smaller_than"):
        word = pick(["larger", "bigger"]) if t == "larger_than" else "smaller"
        return f"{_cap(S)} {is_} {word} than {O}."
    if t == "same_size":
        return pick([f"{_cap(S)} and {O} are the same size.", f"{_cap(S)} is the same size as {O}."])
    if t in ("all_larger_than", "all_smaller_than"):
        word = "larger" if t == "all_larger_than" else "smaller"
        return f"Every {noun(s, False)} is {word} than every {noun(o, False)}."
    if t == "all_same_size":
        if o is None:
            return f"All {noun(s, True)} are the same size."
        return f"All the {noun(s, True)} and {noun(o, True)} are the same size."
    if t == "not_all_same_size":
        return f"{_cap(S)} are not all the same size."
    if t == "touching":
        return f"{_cap(S)} {pick(['touches', 'is touching'])} {O}."
    if t == "not_touching":
        return f"{_cap(S)} and {O} {pick(['do not touch', 'are apart, not touching'])}."
    if t in ("inside", "contains"):
        word = pick(["inside", "within"]) if t == "inside" else "contains"
        return f"{_cap(S)} {is_} {word} {O}." if t == "inside" else f"{_cap(S)} {'contains' if s.count == 1 else 'contain'} {O}."
    if t == "each_inside":
        return f"Each {noun(s, False)} is inside a different {noun(o, False)}."
    if t == "each_contains":
        return f"Each {noun(s, False)} contains a different {noun(o, False)}."
    if t == "parity":
        return f"The number of {noun(s, True)} is {'odd' if r.param('parity') == 'odd' else 'even'}."
    if t == "symmetric":
        return f"{_cap(S)} and {O} are mirror images of each other across the vertical centre line."
    if t in ("same_color", "different_color"):
        return f"{_cap(S)} and {O} have {'the same colour' if t == 'same_color' else 'different colours'}."
    if t == "overlap":
        return f"{_cap(S)} partly covers {O}."
    raise KeyError(f"no prompt template for relation {t!r}")


def write_spec_prompt(spec: VisualSpec, rng: random.Random) -> str:
    """The whole scene: objects and background, layouts, relations, forbidden colours."""
    parts = [scene_sentence(spec, rng)]
    parts += [s for g in spec.groups if (s := layout_sentence(g))]
    parts += [relation_sentence(r, spec, rng) for r in spec.relations]
    if spec.forbidden:
        parts.append(f"Nothing in the image is {_join(spec.forbidden, 'or')}.")
    return " ".join(parts)
