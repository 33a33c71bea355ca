"""``--checkpoints name=path`` lists of the comparison scripts."""
from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import load_pipeline_script

checkpoint_args = load_pipeline_script("checkpoint_args")


def test_pairs_keep_their_order_and_paths_may_contain_equals():
    named = checkpoint_args.parse_checkpoints(["b=runs/x", "a=runs/y=z"])
    assert list(named) == ["b", "a"]
    assert named == {"b": Path("runs/x"), "a": Path("runs/y=z")}


@pytest.mark.parametrize("pairs, message", [(["a"], "name=path"), (["=x"], "name=path"), (["a="], "name=path"),
                                            (["a=x", "a=y"], "unique")])
def test_checkpoint_names_are_checked(pairs, message):
    with pytest.raises(SystemExit, match=message):
        checkpoint_args.parse_checkpoints(pairs)
