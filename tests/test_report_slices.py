"""The report's newer parts, from real ``mpieval eval`` results: slices in the layout of
``--slice`` (built here from runs over row subsets, nested as the JSON reference says, the
q-values over a column's slices by scipy), ranking's per-tag figures and the share of
users of at most K rows beside Recall@K (counted here from the rows), model B's own
intervals in the per-tag figures, and the weights each section says it uses."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from test_report import ab_rows, eval_json, parse, run, section_text

from mpieval import report

pytest.importorskip("matplotlib", reason="the report extra (matplotlib) is not installed")

MIN_ROWS = 100
FLAGS = ("--metrics", "auc,wuauc", "--tag", "tag", "--compare", "pred_b")


def sliced_rows(seed: int = 7) -> dict[str, np.ndarray]:
    """An A/B test where B is better but in DE, where it is noise; LU has too few rows."""
    data = ab_rows(12_000, 4, seed)
    rng = np.random.default_rng(seed)
    n = len(data["pred"])
    country = rng.choice(np.array(["US", "DE", "FR", "LU"]), n, p=[0.55, 0.3, 0.146, 0.004])
    de = country == "DE"
    data["pred_b"] = data["pred_b"].copy()
    data["pred_b"][de] = np.round(rng.random(de.sum()), 5)
    return {**data, "country": country}


def q_values(ps: list[float | None]) -> list[float | None]:
    """scipy's Benjamini-Hochberg over the p-values that are not null."""
    from scipy.stats import false_discovery_control

    tested = [p for p in ps if p is not None]
    qs = iter(false_discovery_control(tested).tolist()) if tested else iter([])
    return [None if p is None else next(qs) for p in ps]


def nest(whole: dict[str, Any], parts: dict[str, dict[str, Any] | int]) -> dict[str, Any]:
    """``whole`` (a run's JSON) with each metric's ``slices``: per slice its part's block
    and ``rows``, or for a too small slice (an int: its rows) ``rows`` and ``too_small``;
    ``X_diff_q`` beside each ``X_diff_p`` that has none, over the slices."""
    for name, block in whole.items():
        if name == "run":
            continue
        slices: dict[str, Any] = {}
        for label, part in parts.items():
            if isinstance(part, int):
                slices[label] = {"rows": part, "too_small": True}
            else:
                slices[label] = {**part[name], "rows": part["run"]["rows"]}
        places: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for sliced in slices.values():
            for path, node in _nodes(sliced, ()):
                for key in list(node):
                    if key.endswith("_diff_p") and f"{key[:-2]}_q" not in node:
                        places.setdefault((*path, key), []).append(node)
        for where, nodes in places.items():
            key = where[-1]
            for node, q in zip(nodes, q_values([node[key] for node in nodes]), strict=True):
                node[f"{key[:-2]}_q"] = q
        block["slices"] = slices
    return whole


def _nodes(node: dict[str, Any], path: tuple[str, ...]):
    yield path, node
    for key, value in node.items():
        if isinstance(value, dict):
            yield from _nodes(value, (*path, key))


@pytest.fixture(scope="module")
def sliced(tmp_path_factory) -> tuple[str, dict[str, Any], dict[str, np.ndarray]]:
    directory = tmp_path_factory.mktemp("sliced")
    data = sliced_rows()
    columns = {k: v for k, v in data.items() if k != "country"}
    whole = json.loads(open(eval_json(directory, "whole", columns, *FLAGS)).read())
    parts: dict[str, Any] = {}
    for value in sorted(set(data["country"].tolist())):
        chosen = data["country"] == value
        if chosen.sum() < MIN_ROWS:
            parts[f"country={value}"] = int(chosen.sum())
            continue
        path = eval_json(directory, f"part-{value}",
                         {k: v[chosen] for k, v in columns.items()}, *FLAGS)
        parts[f"country={value}"] = json.loads(open(path).read())
    result = nest(whole, parts)
    path = str(directory / "sliced.json")
    open(path, "w").write(json.dumps(result))
    return path, result, data


def test_the_summary_names_the_slices_where_b_differs_worst_first(sliced):
    """B worse in DE (named with its AUC effect and q), better in the others; the lines
    of a direction list the largest effect first; the too small slice is counted."""
    path, result, _ = sliced
    page = report.render(report.load_runs([path]))
    summary = section_text(page, "summary")
    slices = result["auc"]["slices"]
    de = slices["country=DE"]["compare"]
    assert de["auc_diff"] < 0 and de["auc_diff_q"] < 0.05
    worse = next(line for line in summary.split("\n") if "by country: B worse in" in line) \
        if "\n" in summary else summary[summary.index("by country: B worse"):]
    assert "country=DE (AUC " + f"{de['auc_diff']:+.4f}" in worse
    assert "slices by country: 4 (1 too small to measure)" in summary
    better = summary[summary.index("by country: B better in"):]
    named = re.findall(r"country=(US|FR|DE)", better.split("wuauc")[0])
    effects = {}
    for label in ("US", "FR"):
        compare = slices[f"country={label}"]["compare"]
        effects[label] = max(abs(compare[f"{f}_diff"]) for f in ("auc", "copc", "logloss")
                             if compare.get(f"{f}_diff_q") is not None
                             and compare[f"{f}_diff_q"] < 0.05)
    listed = [label for label in named if label in effects]
    assert listed == sorted(effects, key=lambda label: -effects[label])
    # the wuauc metric's slices are its "all" tag's values
    assert "WUAUC" in summary[summary.index("wuauc"):]


def test_each_slice_column_has_a_figure_and_a_table_too_small_named_not_drawn(sliced,
                                                                              monkeypatch):
    """The dot plot and the forest plot of the column draw the measured slices only, the
    forest's rows with the q of each slice; the table has every slice, the too small one
    saying so; the caption names it."""
    from mpieval.report import figures

    path, result, _ = sliced
    seen: dict[str, Any] = {}
    real = figures.differences

    def spy(rows, xlabel, key, over="tags"):
        seen.setdefault(key, (rows, over))
        return real(rows, xlabel, key, over)

    monkeypatch.setattr(figures, "differences", spy)
    page = report.render(report.load_runs([path]))
    text = section_text(page, "m-auc")
    assert "By country" in text
    assert "Too small to measure, not drawn: country=LU" in text
    table = text[text.index("By country"):]
    assert "country=LU" in table and "too small to measure" in table
    slice_rows = [(rows, over) for key, (rows, over) in seen.items()
                  if over == "slices of country" and "m-auc" in key]
    assert len(slice_rows) == 1
    rows = slice_rows[0][0]
    slices = result["auc"]["slices"]
    assert sorted(row.label for row in rows) == ["country=DE", "country=FR", "country=US"]
    for row in rows:
        compare = slices[row.label]["compare"]
        assert row.q == compare["auc_diff_q"] and row.p == compare["auc_diff_p"]
        assert row.estimate.value == compare["auc_diff"]
    de = next(row for row in rows if row.label == "country=DE")
    assert de.direction == "worse"


def test_a_slices_value_that_is_not_an_object_is_bad_input(tmp_path, capsys, sliced):
    _, result, _ = sliced
    broken = json.loads(json.dumps(result))
    broken["auc"]["slices"]["country=US"] = 3
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    status, _, err = run(capsys, "report", str(path), "-o", str(tmp_path / "page.html"))
    assert status == 2 and "slice 'country=US': not an object" in err
    assert not (tmp_path / "page.html").exists()


def test_b_s_own_interval_is_drawn_in_the_per_tag_figure(sliced, monkeypatch):
    """wuauc's dot plot of the tags draws model B with the compare block's ci95."""
    from mpieval.report import figures

    path, result, _ = sliced
    panels_seen: list[Any] = []
    real = figures.intervals

    def spy(categories, panels, key, category="tag"):
        if "m-wuauc-tags" in key:
            panels_seen.append((list(categories), panels))
        return real(categories, panels, key, category)

    monkeypatch.setattr(figures, "intervals", spy)
    report.render(report.load_runs([path]))
    categories, panels = panels_seen[0]
    tags = result["wuauc"]["tags"]
    for panel, field in zip(panels, ("wuauc", "uauc"), strict=True):
        b_series, b_estimates = panel[1][1]
        assert b_series.dashed
        for tag, drawn in zip(categories, b_estimates, strict=True):
            low, high = tags[tag]["compare"]["ci95"][field]
            assert (drawn.low, drawn.high) == (low, high), (tag, field)


def test_ranking_says_the_share_of_users_of_at_most_k_rows(tmp_path):
    """Beside each tag's Recall@K the share of its valid users of at most K rows, counted
    here from the rows; the summary flags a Recall@K whose users are mostly such; ranking
    draws NDCG@K and Recall@K per tag and B - A of both as forest plots."""
    rng = np.random.default_rng(11)
    users = 400
    counts = np.where(rng.random(users) < 0.7, rng.integers(1, 4, users),
                      rng.integers(4, 30, users))
    uid = np.repeat(np.arange(users), counts)
    n = len(uid)
    grade = (rng.random(n) < 0.3).astype(np.int64)
    tag = np.where(uid % 3 == 0, "x", "y")
    data = {"uid": uid, "tag": tag, "pred": np.round(rng.random(n), 4),
            "pred_b": np.round(rng.random(n), 4), "label": grade}
    path = eval_json(tmp_path, "ranking", data, "--metrics", "ranking", "--tag", "tag",
                     "--k", "3,10", "--compare", "pred_b")
    page = report.render(report.load_runs([path]))
    for name, rows in (("all", np.ones(n, bool)), ("x", tag == "x")):
        valid = short = 0
        for user in np.unique(uid[rows]):
            mine = rows & (uid == user)
            if grade[mine].any():
                valid += 1
                short += int(mine.sum() <= 3)
        share = f"{100.0 * short / valid:.0f}%"
        assert f"{share} of users \u2264 3 rows" in page, name
        if name == "all":
            summary = section_text(page, "summary")
            assert (f"{share} of valid users have at most 3 rows: their Recall@3 is 1 "
                    "whatever the ranking") in summary
            assert short / valid >= 0.5 and "says little" in summary
    text = section_text(page, "m-ranking")
    assert "NDCG@3 and Recall@3 per tag" in text
    elements = parse(page)
    titles = [t for t in elements.text if t.strip() == "Differences B - A"]
    assert len(titles) >= 2


def test_each_section_says_which_weights_it_uses(tmp_path):
    data = ab_rows(4000, 2, 5)
    data["w"] = np.where(data["label"] == 1, 1.0, 4.0)
    weighted = eval_json(tmp_path, "weighted", data, "--metrics", "auc,wuauc", "--tag", "tag",
                         "--weight", "w", "--weights", "importance")
    page = report.render(report.load_runs([weighted]))
    for section in ("m-auc", "m-wuauc"):
        assert "Weights: weighted by w (importance)." in section_text(page, section)
    plain = eval_json(tmp_path, "plain", ab_rows(4000, 2, 5), "--metrics", "auc")
    page = report.render(report.load_runs([plain, weighted]))
    auc = section_text(page, "m-auc")
    assert "plain: unweighted (every row counts once); weighted: weighted by w (importance)" \
        in auc
