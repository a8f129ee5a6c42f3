"""Saved states stay readable after an upgrade: tests/data/states keeps a saved run
(``--save-state``, 2 ranks, a metric of every kind) of every state format this project
has written (``scripts/record_states.sh``), and this version must merge each to the
results it was saved with (and may add values to them); a state of a newer format, or
one missing a part, is refused with an error naming the formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from test_cli import run

from mpieval import AucMetric, StateFormatError, WuaucMetric, checkpoint
from mpieval.metric import STATE_FORMAT

SAVED = sorted((Path(__file__).parent / "data" / "states").glob("format-*"))
SLICED = Path(__file__).parent / "data" / "states" / "sliced-format-2"
"""Sliced metrics (sliced.toml) saved by the last version of format 2, each slice's own
state under entries of its own: format 3 packs them."""


def test_every_format_up_to_this_one_is_kept():
    assert [path.name for path in SAVED] == [f"format-{n}" for n in range(1, STATE_FORMAT + 1)]


@pytest.mark.parametrize("saved", [*SAVED, SLICED], ids=lambda path: path.name)
def test_a_saved_run_of_every_format_merges_to_its_results(tmp_path, capsys, saved):
    out = tmp_path / "merged.json"
    status, _, err = run(capsys, "merge", saved, "--json", out)
    assert status == 0, err
    merged = json.loads(out.read_text())
    merged.pop("run")
    want = json.loads((saved / "results.json").read_text())
    for name, block in want.items():  # issue 32 changed the auc kind's intervals
        if saved.name != "format-1":  # (recorded after those changes)
            break
        if block.get("kind") == "auc":
            old, new = block.pop("ci95"), merged[name].pop("ci95")
            assert old["actual_ctr"] == new["actual_ctr"]
            # a state saved before the moments: no interval of the values they give
            assert all(new[key] is None for key in ("logloss", "ne", "rmse", "mae"))
        if block.get("kind") == "wuauc":  # its predicted_ctr interval's scale changed
            for tag in block["tags"].values():
                tag.get("ci95", {}).pop("predicted_ctr", None)
    assert_holds(want, merged)


def assert_holds(recorded, merged, where="results"):
    """Every value ``recorded`` holds, ``merged`` holds alike (the JSON's names are never
    renamed or dropped; a later version may add some: docs/json.md)."""
    if isinstance(recorded, dict):
        assert isinstance(merged, dict), where
        for key, value in recorded.items():
            assert key in merged, f"{where}.{key}"
            assert_holds(value, merged[key], f"{where}.{key}")
    else:
        assert merged == recorded, where


def test_a_state_says_its_format():
    assert AucMetric(table_size=10).state_dict()["format"] == STATE_FORMAT
    assert WuaucMetric().state_dict()["format"] == STATE_FORMAT


def test_a_state_of_a_newer_format_is_refused_naming_both(tmp_path, capsys):
    saved = tmp_path / "run"
    shutil.copytree(SAVED[-1], saved)
    for path in saved.glob("state-*.npz"):
        states = checkpoint.load(path)
        for state in states.values():
            state["format"] = np.int64(STATE_FORMAT + 1)
        checkpoint.save(path, states)
    status, out, err = run(capsys, "merge", saved)
    assert status == 2 and out == ""
    assert (f"state of format {STATE_FORMAT + 1}, written by a newer mpieval: this version "
            f"reads state formats up to {STATE_FORMAT}") in err


def test_a_state_without_a_part_is_refused_naming_it():
    state = AucMetric(table_size=10).state_dict()
    part = next(key for key in state if key not in ("kind", "format")
                and not key.startswith("options."))
    del state[part]
    with pytest.raises(StateFormatError, match=f"without {part}: not a state this version"):
        AucMetric(table_size=10).load_state_dict(state)
    state = AucMetric(table_size=10).state_dict()
    del state["format"]  # a state saved before the format was: format 1
    AucMetric(table_size=10).load_state_dict(state)
