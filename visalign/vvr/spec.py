"""The VVR task format of the method's paper ("visual spec"), read and validated as a first-class input.

A spec lists the whole scene (closed world): every object group with its colour, shape and exact count (optionally
a layout of regions or grid cells), the relations between groups, forbidden colours and the background. Any coloured
object the spec does not list fails the task. ``parse_spec`` turns a dict or JSON string into a :class:`VisualSpec`
and raises :class:`SpecError` naming every problem (``objects[2].color: ...``).

The 46 atomic types of the format are in :data:`IMAGE_TYPES` (criterion -> family). visalign adds an *extension*
(:data:`EXTENSION_TYPES`: parity, symmetric, same_color, different_color, overlap; shape ``star``; ``"any"`` colour or
shape for a group), accepted only in specs whose ``verifier_version`` is :data:`EXTENSION_VERSION`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .colour_model import BACKGROUND_NAMES, COLOUR_NAMES

PAPER_VERSIONS = ("vvr_bench_v1", "vvr_bench_v2", "vvr_bench_v3", "vvr_bench_v4")
PAPER_VERSION = "vvr_bench_v4"
EXTENSION_VERSION = "visalign_ext_v2"
SHAPE_NAMES: tuple[str, ...] = ("circle", "square", "triangle")
EXTENSION_SHAPES: tuple[str, ...] = ("star",)
ANY = "any"
REGIONS: tuple[str, ...] = ("top_left", "top", "top_right", "left", "center", "right", "bottom_left", "bottom",
                            "bottom_right")

FAMILIES: dict[str, tuple[str, ...]] = {
    "grounding": ("color_attribute", "shape_attribute", "color_shape_binding"),
    "cardinality": ("exact_count", "same_count", "more_than_count", "fewer_than_count", "times_as_many"),
    "spatial": ("absolute_region", "grid_occupancy", "left_of", "right_of", "above", "below", "all_left_of",
                "all_right_of", "all_above", "all_below", "leftmost", "rightmost", "topmost", "bottommost", "between",
                "same_row", "same_column", "all_same_row", "all_same_column", "not_all_same_row",
                "not_all_same_column", "closer_than", "farther_than"),
    "size": ("larger_than", "smaller_than", "same_size", "all_larger_than", "all_smaller_than", "all_same_size",
             "not_all_same_size", "largest", "smallest"),
    "topology": ("touching", "not_touching", "inside", "contains", "each_inside", "each_contains"),
}
#: the 46 atomic types of the paper's format -> family
IMAGE_TYPES: dict[str, str] = {t: fam for fam, types in FAMILIES.items() for t in types}
#: visalign's extension types -> family (marked as extension in reports)
EXTENSION_TYPES: dict[str, str] = {"parity": "cardinality", "symmetric": "spatial", "same_color": "grounding",
                                   "different_color": "grounding", "overlap": "topology"}
ALIASES: dict[str, str] = {"twice_as_many": "times_as_many", "separate": "not_touching"}
#: criteria that come from object groups rather than from relations
GROUP_CRITERIA = ("color_attribute", "shape_attribute", "color_shape_binding", "exact_count", "absolute_region",
                  "grid_occupancy")
SUBJECT_ONLY = ("all_same_row", "all_same_column", "not_all_same_row", "not_all_same_column", "not_all_same_size",
                "parity")
ANCHORED = ("between", "closer_than", "farther_than")
EXTREMES = ("largest", "smallest", "leftmost", "rightmost", "topmost", "bottommost")
#: relations whose referenced groups must hold exactly one object (the format's validator)
SINGLETON = ("larger_than", "smaller_than", "same_size", "largest", "smallest", "closer_than", "farther_than",
             "touching", "not_touching", "same_row", "same_column", "leftmost", "rightmost", "topmost", "bottommost",
             "symmetric", "overlap", "same_color", "different_color")
CONTAINMENT = ("inside", "contains", "each_inside", "each_contains")
#: optional per-relation parameters of the format (numbers)
RELATION_PARAMS = ("margin_px", "min_size_ratio", "max_size_ratio", "max_distance_ratio", "min_margin_px",
                   "tolerance_px", "decision_distance_px", "multiplier", "min_difference", "between_score_threshold")
LEGACY_LAYOUTS = ("horizontal_row", "vertical_column", "diagonal_down")


class SpecError(ValueError):
    """An invalid visual spec; ``problems`` lists every problem found, each prefixed with where it is."""

    def __init__(self, problems: list[str], where: str = "") -> None:
        self.problems = problems
        head = f"{where}: " if where else ""
        super().__init__(head + "invalid visual spec: " + "; ".join(problems))


@dataclass(frozen=True)
class Layout:
    """Where a group's objects are: named regions (each object in one, each region used), grid cells of a
    ``rows x cols`` grid (one object per listed cell), or a legacy line layout."""

    type: str
    regions: tuple[str, ...] = ()
    rows: int = 0
    cols: int = 0
    cells: tuple[tuple[int, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        if self.type == "regions":
            return {"type": "regions", "regions": list(self.regions)}
        if self.type == "grid_cells":
            return {"type": "grid_cells", "rows": self.rows, "cols": self.cols, "cells": [list(c) for c in self.cells]}
        return {"type": self.type}


@dataclass(frozen=True)
class Group:
    """An object group: every object of one colour and shape in the scene."""

    id: str
    color: str
    shape: str
    count: int
    count_mode: str = "exact"
    max_count: int = 0
    layout: Layout | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "color": self.color, "shape": self.shape, "count": self.count,
                             "count_mode": self.count_mode}
        if self.count_mode == "relative":
            d["max_count"] = self.max_count
        if self.layout is not None:
            d["layout"] = self.layout.to_dict()
        return d


@dataclass(frozen=True)
class Relation:
    """A relation between groups; ``type`` is canonical (aliases resolved), ``params`` the optional numbers."""

    type: str
    subject: str
    object: str | None = None
    anchor_a: str | None = None
    anchor_b: str | None = None
    references: tuple[str, ...] | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    def ids(self) -> list[str]:
        return [i for i in (self.subject, self.object, self.anchor_a, self.anchor_b, *(self.references or ())) if i]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "subject": self.subject}
        for key in ("object", "anchor_a", "anchor_b"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.references is not None:
            d["references"] = list(self.references)
        d.update(dict(self.params))
        return d


@dataclass
class VisualSpec:
    """A validated visual spec (image or video)."""

    version: str
    modality: str
    background: str | None
    groups: list[Group]
    relations: list[Relation] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    temporal: list[dict[str, Any]] = field(default_factory=list)

    @property
    def extension(self) -> bool:
        return self.version == EXTENSION_VERSION

    def group(self, gid: str) -> Group:
        for g in self.groups:
            if g.id == gid:
                return g
        raise KeyError(gid)

    def criteria(self) -> list[str]:
        """Atomic types this spec checks (grounding of every group, counts, layouts, relation types)."""
        out = ["color_shape_binding"]
        if any(g.count_mode == "exact" and g.count > 1 for g in self.groups):
            out.append("exact_count")
        for g in self.groups:
            if g.layout is not None and g.layout.type in ("regions", "grid_cells"):
                out.append("absolute_region" if g.layout.type == "regions" else "grid_occupancy")
        out += [r.type for r in self.relations]
        return sorted(set(out))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"verifier_version": self.version, "modality": self.modality}
        if self.background is not None:
            d["background"] = {"color": self.background}
        d["objects"] = [g.to_dict() for g in self.groups]
        d["relations"] = [r.to_dict() for r in self.relations]
        d["forbidden"] = [{"color": c} for c in self.forbidden]
        if self.temporal:
            d["temporal"] = [dict(t) for t in self.temporal]
        return d

    def to_json(self) -> str:
        """Canonical one-line JSON (sorted keys, ASCII)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# ---------------------------------------------------------------- parsing + validation


def _int(value: Any, where: str, problems: list[str], minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        problems.append(f"{where}: expected an integer, got {value!r}")
        return 0
    if minimum is not None and value < minimum:
        problems.append(f"{where}: must be >= {minimum}, got {value}")
    return int(value)


def _layout(raw: Any, where: str, problems: list[str]) -> Layout | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: layout must be an object, got {type(raw).__name__}")
        return None
    kind = raw.get("type")
    if kind == "regions":
        regions = raw.get("regions")
        if not isinstance(regions, list) or not regions:
            problems.append(f"{where}.regions: must be a non-empty list of regions")
            return None
        bad = [r for r in regions if r not in REGIONS]
        if bad:
            problems.append(f"{where}.regions: unknown region(s) {bad}; known: {', '.join(REGIONS)}")
        return Layout("regions", regions=tuple(str(r) for r in regions))
    if kind == "grid_cells":
        rows = _int(raw.get("rows"), f"{where}.rows", problems, 1)
        cols = _int(raw.get("cols"), f"{where}.cols", problems, 1)
        cells_raw = raw.get("cells")
        if not isinstance(cells_raw, list) or not cells_raw:
            problems.append(f"{where}.cells: must be a non-empty list of [row, col] pairs")
            return None
        cells = []
        for k, cell in enumerate(cells_raw):
            if not (isinstance(cell, (list, tuple)) and len(cell) == 2):
                problems.append(f"{where}.cells[{k}]: expected [row, col], got {cell!r}")
                continue
            r, c = _int(cell[0], f"{where}.cells[{k}][0]", problems), _int(cell[1], f"{where}.cells[{k}][1]", problems)
            if not (0 <= r < max(rows, 1) and 0 <= c < max(cols, 1)):
                problems.append(f"{where}.cells[{k}]: cell {[r, c]} is outside the {rows}x{cols} grid")
            cells.append((r, c))
        if len(set(cells)) != len(cells):
            problems.append(f"{where}.cells: a cell is listed twice")
        return Layout("grid_cells", rows=rows, cols=cols, cells=tuple(cells))
    if kind in LEGACY_LAYOUTS:
        return Layout(str(kind))
    problems.append(f"{where}.type: unknown layout type {kind!r}; known: regions, grid_cells, {', '.join(LEGACY_LAYOUTS)}")
    return None


def _group(raw: Any, k: int, extension: bool, problems: list[str]) -> Group | None:
    where = f"objects[{k}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object, got {type(raw).__name__}")
        return None
    gid = raw.get("id")
    if not isinstance(gid, str) or not gid:
        problems.append(f"{where}.id: missing or not a string")
        gid = f"#{k}"
    colours = COLOUR_NAMES + ((ANY,) if extension else ())
    shapes = SHAPE_NAMES + ((*EXTENSION_SHAPES, ANY) if extension else ())
    color = raw.get("color")
    if color not in colours:
        hint = " (visalign's extension only)" if color in (ANY,) else ""
        problems.append(f"{where}.color: unknown colour {color!r}{hint}; known: {', '.join(colours)}")
    shape = raw.get("shape", "circle")
    if shape not in shapes:
        hint = " (visalign's extension only)" if shape in (*EXTENSION_SHAPES, ANY) else ""
        problems.append(f"{where}.shape: unknown shape {shape!r}{hint}; known: {', '.join(shapes)}")
    if raw.get("size") is not None:
        problems.append(f"{where}.size: absolute size is not part of the format (use size relations)")
    mode = raw.get("count_mode", "exact")
    count, max_count = 0, 0
    if mode == "exact":
        count = _int(raw.get("count"), f"{where}.count", problems, 1)
    elif mode == "relative":
        max_count = _int(raw.get("max_count"), f"{where}.max_count", problems, 1)
        count = int(raw.get("count", 0)) if isinstance(raw.get("count"), int) else 0
    else:
        problems.append(f"{where}.count_mode: must be 'exact' or 'relative', got {mode!r}")
    layout = _layout(raw["layout"], f"{where}.layout", problems) if raw.get("layout") else None
    if layout is not None and layout.type == "grid_cells" and mode == "exact" and count and len(layout.cells) != count:
        problems.append(f"{where}.layout.cells: {len(layout.cells)} cells for a group of {count}")
    return Group(gid, str(color), str(shape), count, str(mode), max_count, layout)


def _relation(raw: Any, k: int, groups: dict[str, Group], extension: bool, problems: list[str]) -> Relation | None:
    where = f"relations[{k}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object, got {type(raw).__name__}")
        return None
    rtype = ALIASES.get(raw.get("type"), raw.get("type"))
    known = [t for t in IMAGE_TYPES if t not in GROUP_CRITERIA] + (list(EXTENSION_TYPES) if extension else [])
    if rtype not in known:
        hint = " (visalign's extension: needs verifier_version " + EXTENSION_VERSION + ")" if rtype in EXTENSION_TYPES else ""
        problems.append(f"{where}.type: unknown relation {raw.get('type')!r}{hint}")
        return None

    def ref(key: str, required: bool = True) -> str | None:
        v = raw.get(key)
        if v is None:
            if required:
                problems.append(f"{where}.{key}: missing (a group id)")
            return None
        if v not in groups:
            problems.append(f"{where}.{key}: no object group with id {v!r}")
        return str(v)

    subject = ref("subject")
    obj = a = b = None
    refs: tuple[str, ...] | None = None
    if rtype in ANCHORED:
        a, b = ref("anchor_a"), ref("anchor_b")
    elif rtype in EXTREMES:
        r = raw.get("references")
        if r is not None:
            if not isinstance(r, list) or not r:
                problems.append(f"{where}.references: must be a non-empty list of group ids")
            else:
                refs = tuple(str(x) for x in r)
                for x in refs:
                    if x not in groups:
                        problems.append(f"{where}.references: no object group with id {x!r}")
    elif rtype == "all_same_size":
        obj = ref("object", required=False)
    elif rtype not in SUBJECT_ONLY:
        obj = ref("object")
    params = []
    for key in RELATION_PARAMS:
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
                problems.append(f"{where}.{key}: must be a number >= 0, got {v!r}")
            else:
                params.append((key, v))
    if rtype == "parity":
        if raw.get("parity") not in ("odd", "even"):
            problems.append(f"{where}.parity: must be 'odd' or 'even', got {raw.get('parity')!r}")
        params.append(("parity", raw.get("parity")))
    unknown = sorted(set(raw) - {"type", "subject", "object", "anchor_a", "anchor_b", "references", "parity",
                                 *RELATION_PARAMS})
    if unknown:
        problems.append(f"{where}: unknown key(s) {unknown}")
    rel = Relation(str(rtype), subject or "", obj, a, b, refs, tuple(params))
    ids = rel.ids()
    if len(ids) != len(set(ids)):
        problems.append(f"{where}: a group cannot be compared with itself")
    _check_counts(rel, groups, where, problems)
    return rel


def _check_counts(rel: Relation, groups: dict[str, Group], where: str, problems: list[str]) -> None:
    def count(gid: str | None) -> int:
        g = groups.get(gid or "")
        return 0 if g is None else (g.count if g.count_mode == "exact" else -1)

    if rel.type in SINGLETON:
        ids = list(rel.ids())
        if rel.type in EXTREMES and rel.references is None:
            ids = [rel.subject]
        for gid in ids:
            if gid in groups and count(gid) != 1:
                problems.append(f"{where}: {rel.type} needs singleton groups; {gid!r} has count "
                                f"{groups[gid].count if groups[gid].count_mode == 'exact' else 'relative'}")
    if rel.type in ("all_same_row", "all_same_column", "not_all_same_row", "not_all_same_column", "not_all_same_size") \
            or (rel.type == "all_same_size" and rel.object is None):
        if rel.subject in groups and 0 <= count(rel.subject) < 2:
            problems.append(f"{where}: {rel.type} needs a subject group with at least two objects")
    if rel.type in ("each_inside", "each_contains") and rel.subject in groups and rel.object in groups:
        cs, co = count(rel.subject), count(rel.object)
        if cs < 0 or co < 0:
            problems.append(f"{where}: {rel.type} needs exact counts on both groups")
        elif rel.type == "each_inside" and cs > co:
            problems.append(f"{where}: each_inside needs subject count ({cs}) <= object count ({co})")
        elif rel.type == "each_contains" and co > cs:
            problems.append(f"{where}: each_contains needs object count ({co}) <= subject count ({cs})")
    if rel.type == "parity" and rel.subject in groups and count(rel.subject) >= 0:
        problems.append(f"{where}: parity needs a subject group with count_mode 'relative' (an exact count fixes it)")


def _containment_cycle(relations: list[Relation]) -> list[str] | None:
    edges: dict[str, set[str]] = {}
    for r in relations:
        if r.type in CONTAINMENT and r.object:
            inner, outer = (r.subject, r.object) if r.type in ("inside", "each_inside") else (r.object, r.subject)
            edges.setdefault(inner, set()).add(outer)
    for start in sorted(edges):
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    return path + [start]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, path + [nxt]))
    return None


def parse_spec(raw: dict[str, Any] | str, where: str = "") -> VisualSpec:
    """Read and validate a visual spec (dict or JSON string). Raises :class:`SpecError` listing every problem."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as err:
            raise SpecError([f"visual_spec_json is not valid JSON ({err})"], where) from err
    if not isinstance(raw, dict):
        raise SpecError([f"a visual spec must be a JSON object, got {type(raw).__name__}"], where)
    problems: list[str] = []
    version = raw.get("verifier_version", PAPER_VERSION)
    if version not in (*PAPER_VERSIONS, EXTENSION_VERSION):
        problems.append(f"verifier_version: unknown {version!r}; known: {', '.join((*PAPER_VERSIONS, EXTENSION_VERSION))}")
    extension = version == EXTENSION_VERSION
    modality = raw.get("modality", "image")
    if modality not in ("image", "video"):
        problems.append(f"modality: must be 'image' or 'video', got {modality!r}")
    background = None
    if raw.get("background"):
        bg = raw["background"]
        background = bg.get("color") if isinstance(bg, dict) else None
        if background not in BACKGROUND_NAMES:
            problems.append(f"background.color: unknown background {background!r}; known: {', '.join(BACKGROUND_NAMES)}")
    objects = raw.get("objects")
    if not isinstance(objects, list) or not objects:
        problems.append("objects: a spec needs a non-empty list of object groups")
        objects = []
    groups: dict[str, Group] = {}
    for k, o in enumerate(objects):
        g = _group(o, k, extension, problems)
        if g is None:
            continue
        if g.id in groups:
            problems.append(f"objects[{k}].id: duplicate id {g.id!r}")
        groups[g.id] = g
    _check_group_identity(list(groups.values()), problems)
    rel_raw = raw.get("relations", [])
    if not isinstance(rel_raw, list):
        problems.append("relations: must be a list")
        rel_raw = []
    relations = [r for k, x in enumerate(rel_raw) if (r := _relation(x, k, groups, extension, problems)) is not None]
    cycle = _containment_cycle(relations)
    if cycle:
        problems.append("relations: containment forms an impossible cycle: " + " inside ".join(cycle))
    varied = {r.subject for r in relations if r.type == "not_all_same_size"}
    for k, r in enumerate(relations):
        if r.type == "all_same_size" and {r.subject, r.object} & varied:
            problems.append(f"relations[{k}]: all_same_size contradicts not_all_same_size on the same group")
    forbidden = []
    for k, f in enumerate(raw.get("forbidden", []) or []):
        if isinstance(f, dict) and f.get("type") == "text":
            continue  # text absence is part of the format but not checked by a colour verifier
        c = f.get("color") if isinstance(f, dict) else None
        if c not in COLOUR_NAMES:
            problems.append(f"forbidden[{k}].color: unknown colour {c!r}")
            continue
        if any(g.color == c for g in groups.values()):
            problems.append(f"forbidden[{k}].color: {c!r} is also the colour of an object group")
        forbidden.append(str(c))
    temporal = raw.get("temporal", []) or []
    if temporal and modality != "video":
        problems.append("temporal: temporal predicates need modality 'video'")
    unknown = sorted(set(raw) - {"verifier_version", "modality", "background", "objects", "relations", "forbidden",
                                 "temporal"})
    if unknown:
        problems.append(f"unknown top-level key(s) {unknown}")
    if problems:
        raise SpecError(problems, where)
    return VisualSpec(str(version), str(modality), background, list(groups.values()), relations, forbidden,
                      [dict(t) for t in temporal])


def _check_group_identity(groups: list[Group], problems: list[str]) -> None:
    """Every image object must belong to at most one group: (colour, shape) pairs are unique, and an ``any``
    group may not share its named attribute with another group."""
    seen: dict[tuple[str, str], str] = {}
    for g in groups:
        key = (g.color, g.shape)
        if key in seen:
            problems.append(f"objects: groups {seen[key]!r} and {g.id!r} are both {g.color} {g.shape}s; a closed-world "
                            "spec lists each colour and shape once (one group with the total count)")
        seen[key] = g.id
    for g in groups:
        for h in groups:
            if h is g:
                continue
            if g.shape == ANY and h.color in (g.color, ANY) or g.color == ANY and h.shape in (g.shape, ANY):
                problems.append(f"objects: group {g.id!r} ({g.color} {g.shape}) would also take the objects of "
                                f"group {h.id!r} ({h.color} {h.shape})")
                return
