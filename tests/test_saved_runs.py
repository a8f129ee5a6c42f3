"""``mpieval eval --save-state DIR`` and ``mpieval merge DIR...``: several saved runs
merged give what one run over all their files gives, on any numbers of ranks."""

from __future__ import annotations

import pytest
from test_cli import metrics_json, rows, shards
from test_cli_mpi import ALL_KINDS, ALONE, FLAGS, launch

from mpieval import cli


def _eval(ranks: int, files: list[str], *flags: object) -> str:
    proc, _ = launch(ranks, "eval", "--metrics", ",".join(ALL_KINDS), *FLAGS,
                     "--table-size", 1000, *flags, *files)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(("save_ranks", "merge_ranks"), [(ALONE, ALONE), (2, 3), (3, 1)])
def test_merged_days_equal_one_run_over_every_file(tmp_path, save_ranks, merge_ranks):
    days = []
    for day in range(3):
        (tmp_path / f"day{day}").mkdir()
        files = shards(tmp_path / f"day{day}", rows(2000, seed=day), ["a.tsv", "b.csv"])
        out = tmp_path / f"state{day}"
        _eval(save_ranks, files, "--save-state", out)
        days.append((files, out))
    whole = _eval(ALONE, [f for files, _ in days for f in files], "--json", tmp_path / "w.json")
    proc, _ = launch(merge_ranks, "merge", *[out for _, out in days],
                     "--json", tmp_path / "m.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == whole
    merged = metrics_json(tmp_path / "m.json")
    assert merged == _approx(metrics_json(tmp_path / "w.json"))


def _approx(value: object) -> object:
    """Floats approximate: sums added in another order differ in the last bits."""
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_approx(v) for v in value]
    return pytest.approx(value, rel=1e-12) if isinstance(value, float) else value


def test_merge_of_a_directory_that_is_not_a_saved_run_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["merge", str(tmp_path)]) == 2
    assert "is not a saved run" in capsys.readouterr().err


def test_runs_of_different_metrics_do_not_merge(tmp_path, capsys):
    files = shards(tmp_path, rows(500), ["a.tsv"])
    assert cli.main(["eval", "--save-state", str(tmp_path / "one"), *files]) == 0
    assert cli.main(["eval", "--metrics", "pairwise", "--left-label", "left", "--right-label",
                     "right", "--save-state", str(tmp_path / "two"),
                     *files]) == 0
    capsys.readouterr()
    assert cli.main(["merge", str(tmp_path / "one"), str(tmp_path / "two")]) == 2
    assert "holds the metrics" in capsys.readouterr().err
