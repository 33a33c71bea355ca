"""Prompt writer: one templated sentence per constraint, with a little paraphrase variety."""
from __future__ import annotations

import random
from typing import Any, Sequence

from .task import Constraint
from .vocab import NUMBER_WORDS, PLURALS


def noun(ref: dict[str, Any], plural: bool = False) -> str:
    """``{"color": "red", "shape": "circle"}`` -> ``red circle`` / ``red circles``; colour only -> ``red object``."""
    shape = ref.get("shape")
    color = ref.get("color")
    base = (PLURALS[shape] if plural else shape) if shape else ("objects" if plural else "object")
    return f"{color} {base}" if color else base


def the(ref: dict[str, Any]) -> str:
    return f"the {noun(ref)}"


def num(n: int) -> str:
    return NUMBER_WORDS.get(n, str(n))


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _count_np(n: int, ref: dict[str, Any]) -> str:
    return f"{num(n)} {noun(ref, plural=n != 1)}"


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def sentence(c: Constraint, rng: random.Random) -> str:
    """A grammatical sentence stating exactly constraint ``c``."""
    a = c.args
    t = c.type
    pick = rng.choice
    if t in ("exists_shape", "exists_color", "exists_shape_color"):
        s = pick(["there is at least one {n}", "the image contains at least one {n}", "show at least one {n}"])
        return _cap(s.format(n=noun(a["ref"]))) + "."
    if t == "count_exact":
        return _cap(pick(["there are exactly {x}", "the image shows exactly {x}"]).format(x=_count_np(a["n"], a["ref"]))) + "."
    if t == "count_more":
        return f"There are more {noun(a['a'], True)} than {noun(a['b'], True)}."
    if t == "count_fewer":
        return f"There are fewer {noun(a['a'], True)} than {noun(a['b'], True)}."
    if t == "count_equal":
        return f"There are as many {noun(a['a'], True)} as {noun(a['b'], True)}, and at least one of each."
    if t == "count_total":
        return pick(["There are exactly {x} in total.", "The image contains exactly {x} altogether."]).format(
            x=f"{num(a['n'])} object" + ("s" if a["n"] != 1 else ""))
    if t == "absent":
        return (f"There is at least one {a['shape']}, but no {a['color']} {a['shape']}." if rng.random() < 0.5 else
                f"There are one or more {PLURALS[a['shape']]}, none of them {a['color']}.")
    if t == "parity":
        if a["parity"] == "odd":
            return f"The number of {noun(a['ref'], True)} is odd."
        return f"The number of {noun(a['ref'], True)} is even and at least two."
    if t == "color_binding":
        return pick(["Every {s} is {c}, and there is at least one {s}.", "All {p} are {c}, and there is at least one."]).format(
            s=a["shape"], p=PLURALS[a["shape"]], c=a["color"])
    if t == "same_color":
        return pick(["{A} and {B} have the same colour.", "{A} is the same colour as {b}."]).format(
            A=_cap(the(a["a"])), B=the(a["b"]), b=the(a["b"]))
    if t == "different_color":
        return pick(["{A} and {B} have different colours.", "{A} is a different colour from {b}."]).format(
            A=_cap(the(a["a"])), B=the(a["b"]), b=the(a["b"]))
    if t == "all_distinct_colors":
        return f"There are exactly {num(a['n'])} objects, each a different colour."
    if t == "size_abs":
        return f"{_cap(the(a['a']))} is {a['size']}."
    if t in ("larger", "smaller"):
        word = {"larger": ["larger than", "bigger than"], "smaller": ["smaller than", "smaller in size than"]}[t]
        return f"{_cap(the(a['a']))} is {pick(word)} {the(a['b'])}."
    if t == "same_size":
        return pick(["{A} and {B} are the same size.", "{A} is the same size as {b}."]).format(
            A=_cap(the(a["a"])), B=the(a["b"]), b=the(a["b"]))
    if t in ("left_of", "right_of", "above", "below"):
        words = {"left_of": ["to the left of", "left of"], "right_of": ["to the right of", "right of"],
                 "above": ["above", "higher up than"], "below": ["below", "lower down than"]}[t]
        return f"{_cap(the(a['a']))} is {pick(words)} {the(a['b'])}."
    if t == "region":
        where = {"centre": "in the centre of the image"}.get(a["region"], f"in the {a['region']} quarter of the image")
        return f"{_cap(the(a['a']))} is {where}."
    if t == "between":
        return f"{_cap(the(a['b']))} is between {the(a['a'])} and {the(a['c'])}."
    if t == "nearest":
        return pick(["Of all the other objects, {B} is the closest to {a}.", "The object nearest to {a} is {b}."]).format(
            B=the(a["b"]), a=the(a["a"]), b=the(a["b"]))
    if t == "inside":
        return f"{_cap(the(a['a']))} is {pick(['inside', 'within'])} {the(a['b'])}."
    if t == "overlap":
        return f"{_cap(the(a['a']))} {pick(['overlaps', 'partly covers'])} {the(a['b'])}."
    if t == "touching":
        return f"{_cap(the(a['a']))} {pick(['touches', 'is touching'])} {the(a['b'])}."
    if t == "separated":
        return f"{_cap(the(a['a']))} and {the(a['b'])} {pick(['do not touch', 'are apart, not touching'])}."
    if t == "aligned":
        names = [the(r) for r in a["objs"]]
        line = "in a horizontal row" if a["axis"] == "row" else "in a vertical column"
        return f"{_cap(names[0])}, {names[1]} and {names[2]} are lined up {line}."
    if t == "ordered":
        if a["key"] == "color":
            cols = a["colors"]
            lst = ", ".join(cols[:-1]) + " and " + cols[-1]
            return f"There are exactly {_count_np(len(cols), a['ref'])}; from left to right they are {lst}."
        return f"There are exactly {_count_np(a['n'], a['ref'])}, each larger than the one to its left."
    if t == "symmetric":
        return f"{_cap(the(a['a']))} and {the(a['b'])} are placed mirror-symmetrically about the vertical centre line."
    raise KeyError(f"no prompt template for constraint type {t!r}")


def write_prompt(constraints: Sequence[Constraint], rng: random.Random) -> str:
    """The task prompt: the constraint sentences in order, nothing else."""
    return " ".join(sentence(c, rng) for c in constraints)
