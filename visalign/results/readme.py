"""Marked README blocks, ``<!-- results:NAME -->…<!-- /results -->``, whose text is rendered from a result file.

A block is either a table on its own lines (the markers on lines of their own) or a phrase inside a paragraph or list
item (the markers inline, never at the start of a line, where Markdown would read the comment as an HTML block; the
phrase may wrap over lines like the text around it).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

BLOCK = re.compile(r"<!-- results:(?P<name>[\w./-]+) -->(?P<body>.*?)<!-- /results -->", re.S)


def read_blocks(text: str) -> dict[str, str]:
    """Block name -> its current text (without the surrounding newlines of a table block)."""
    blocks: dict[str, str] = {}
    for m in BLOCK.finditer(text):
        name = m.group("name")
        if name in blocks:
            raise ValueError(f"README block {name!r} appears twice")
        line_start = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if not m.group("body").startswith("\n") and not line_start.strip():
            raise ValueError(f"README block {name!r} is inline but starts its line: Markdown would read the comment "
                             "as an HTML block; put some of the sentence before it")
        blocks[name] = m.group("body").strip("\n")
    unclosed = text.count("<!-- results:") - len(blocks)
    if unclosed:
        raise ValueError(f"{unclosed} README results block(s) not closed with <!-- /results -->")
    return blocks


def replace_blocks(text: str, rendered: dict[str, str]) -> str:
    """``text`` with every named block's body replaced by ``rendered[name]``; a name with no block is an error."""
    missing = sorted(set(rendered) - set(read_blocks(text)))
    if missing:
        raise KeyError(f"README has no results block for {missing}")

    def sub(m: re.Match) -> str:
        name, body = m.group("name"), m.group("body")
        if name not in rendered:
            return m.group(0)
        new = rendered[name]
        if body.startswith("\n"):
            new = f"\n{new}\n"
        return f"<!-- results:{name} -->{new}<!-- /results -->"

    return BLOCK.sub(sub, text)


FIGURE = re.compile(r"(?<![\w.·×:])[−-]?\d+\.\d+(?![\w.])")
CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose_figures(text: str) -> list[tuple[str, int, str]]:
    """``(section heading, line number, figure)`` for every decimal figure of the README outside results blocks and
    code spans: the hand-written numbers a rerun cannot rewrite."""
    outside = BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    figures, section = [], ""
    for number, line in enumerate(outside.splitlines(), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            continue
        for token in FIGURE.findall(CODE_SPAN.sub("", line)):
            figures.append((section, number, token.replace("−", "-")))
    return figures


def stored_values(tables, documents: Sequence[Any] = ()) -> set[float]:
    """Every number held by the result tables (values, standard errors, info) and by ``documents`` (parsed JSON
    record files, such as the GPU checks' in ``assets/gpu``), for :func:`traces_to`."""
    found: set[float] = set()

    def walk(x) -> None:
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)):
            found.add(float(x))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    for table in tables:
        for row in table.rows:
            walk([row.values, row.se, row.info])
    walk(list(documents))
    return found


def traces_to(figure: str, values: set[float]) -> bool:
    """Whether ``figure`` is some stored value (or its negative, or it as a percentage) printed at the figure's
    precision. Lenient by design: a short figure such as 0.5 may match by chance; a figure that moved with a rerun
    (a stored value changed) no longer matches."""
    decimals = len(figure.split(".")[1])
    target = abs(float(figure))
    return any(round(abs(v) * scale, decimals) == target for v in values for scale in (1.0, 100.0))
