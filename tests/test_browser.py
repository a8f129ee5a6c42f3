"""The HTML report read in a real browser: headless Chromium (Debian's package, installed
by ``scripts/setup``, never downloaded by a test) renders the demo's page, an A/B page
where B is truly better, a 300-tag A/B page, two days side by side, a compared ranking
run and a sliced A/B run (``--slice``'s layout), at 1280 and 420 px wide, and checks what
a reader meets: the summary before any figure and the first verdict on the first screen
(1280 x 800 and 420 x 900), nothing wider than the screen (1000, 1280, 420 px), few
figures and a small file for many tags, no network request, figures whose text is text
with a title and a description, and every numeric tick label read back as its place on
its axis.

Screenshots (the first screen and the whole page, both widths) and the pages go to the
directory ``MPIEVAL_SCREENSHOTS`` names when it is set (to look at them); without it none
are taken (no test reads them, and they were most of a render's time). Without Chromium
the tests skip, saying how to install it; with ``CI=true`` they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
INSTALL = "apt-get install --no-install-recommends chromium (or run scripts/setup as root)"
WIDTHS = (1280, 420)
SCREEN_HEIGHT = 800  # the first screen of a laptop
MAX_FIGURES = 12  # of the 300-tag page
MAX_BYTES = 1_000_000  # of the 300-tag page
SHOT_MS = 180_000  # a screenshot of a long page takes a while on a busy machine
MAX_SHOT_HEIGHT = 20_000  # px of a page's screenshot (the rest is left out)


def chromium() -> str:
    """The path of Debian's Chromium; skips the test without it (fails it on CI)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = None
    if path is None:
        missing = f"Chromium is not installed: {INSTALL}"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the playwright package is missing: pip install -e '.[test]'"
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    assert path is not None
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def shots() -> Path | None:
    named = os.environ.get("MPIEVAL_SCREENSHOTS")
    if not named:
        return None
    directory = Path(named)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def mpieval(*argv: object, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mpieval", *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith(("PMI_", "PMIX_", "OMPI_"))})
    assert done.returncode == 0, done.stderr


def ab_rows(rng: np.random.Generator, tag_users: list[int], rows_per_user: float
            ) -> dict[str, np.ndarray]:
    """Clicks from a true CTR (about 4%, users of uneven activity and taste); model A sees
    it through more noise than model B, so B is truly better. ``tag_users``: the users of
    each tag (tag ``t000``, ...)."""
    user_tag = np.repeat(np.arange(len(tag_users)), tag_users)
    users = len(user_tag)
    activity = rng.pareto(1.5, users) + 1
    counts = np.maximum(2, np.round(activity / activity.mean() * rows_per_user)).astype(int)
    user = np.repeat(np.arange(users), counts)
    n = len(user)
    logit = -3.4 + rng.normal(0, 0.8, users)[user] + rng.normal(0, 0.9, n)
    label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int8)

    def model(noise: float) -> np.ndarray:
        return np.round(1 / (1 + np.exp(-(logit + rng.normal(0, noise, n)))), 6)

    return {"uid": user * 7919 + 10**9, "tag": np.array([f"t{t:03d}" for t in user_tag])[user],
            "label": label, "pred": model(1.1), "pred_b": model(0.7)}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three pages: the demo's, an A/B run with a few tags, an A/B run with 300 tags
    (some of 2 or 3 users)."""
    root = tmp_path_factory.mktemp("pages")
    rng = np.random.default_rng(22)
    mpieval("demo", "--rows", 20_000, "--report", root / "demo.html", cwd=root)
    pq.write_table(pa.table(ab_rows(rng, [500, 300, 200], 30)), root / "ab.parquet")
    mpieval("eval", "--metrics", "auc,wuauc", "--compare", "pred_b", "--tag", "tag",
            "--json", root / "ab.json", "--report", root / "ab.html", root / "ab.parquet",
            cwd=root)
    sizes = rng.zipf(1.6, 300).clip(4, 400).tolist()
    sizes[250:] = [2, 3] * 25  # tags of 2-3 users: too few for an interval
    pq.write_table(pa.table(ab_rows(rng, sizes, 20)), root / "tags.parquet")
    mpieval("eval", "--metrics", "auc,wuauc", "--compare", "pred_b", "--tag", "tag",
            "--json", root / "tags.json", "--report", root / "tags.html",
            root / "tags.parquet", cwd=root)
    # two days of the same A/B test side by side: the second day's rows are new
    pq.write_table(pa.table(ab_rows(rng, [500, 300, 200], 30)), root / "day2.parquet")
    mpieval("eval", "--metrics", "auc,wuauc", "--compare", "pred_b", "--tag", "tag",
            "--json", root / "day2.json", root / "day2.parquet", cwd=root)
    shutil.copy(root / "ab.json", root / "day1.json")
    mpieval("report", root / "day1.json", root / "day2.json", "-o", root / "days.html",
            cwd=root)
    # a compared ranking run: graded labels, users of 2 rows or more, tags
    ranking = ab_rows(rng, [400, 250, 150], 8)
    ranking["label"] = ranking["label"] * (1 + (rng.random(len(ranking["label"])) < 0.3))
    pq.write_table(pa.table(ranking), root / "ranking.parquet")
    mpieval("eval", "--metrics", "ranking", "--compare", "pred_b", "--tag", "tag", "--k",
            "5,10", "--report", root / "ranking.html", root / "ranking.parquet", cwd=root)
    sliced_page(rng, root)
    return {"demo": root / "demo.html", "ab": root / "ab.html", "tags": root / "tags.html",
            "days": root / "days.html", "ranking": root / "ranking.html",
            "slices": root / "slices.html"}


def sliced_page(rng: np.random.Generator, root: Path) -> None:
    """``slices.html``: an A/B run of auc and wuauc sliced by country (B noise in DE, LU
    too small), in ``--slice``'s layout built from runs over the rows of each value
    (:func:`test_report_slices.nest`)."""
    from test_report_slices import MIN_ROWS, nest

    data = ab_rows(rng, [500, 300, 200], 30)
    n = len(data["pred"])
    country = rng.choice(np.array(["US", "DE", "FR", "LU"]), n, p=[0.55, 0.3, 0.147, 0.003])
    data["pred_b"][country == "DE"] = np.round(rng.random((country == "DE").sum()), 6)
    flags = ["--metrics", "auc,wuauc", "--compare", "pred_b", "--tag", "tag"]
    pq.write_table(pa.table(data), root / "sliced.parquet")
    mpieval("eval", *flags, "--json", root / "sliced.json", root / "sliced.parquet", cwd=root)
    parts: dict[str, Any] = {}
    for value in sorted(set(country.tolist())):
        chosen = country == value
        if chosen.sum() < MIN_ROWS:
            parts[f"country={value}"] = int(chosen.sum())
            continue
        pq.write_table(pa.table({k: v[chosen] for k, v in data.items()}), root / "part.parquet")
        mpieval("eval", *flags, "--json", root / "part.json", root / "part.parquet", cwd=root)
        parts[f"country={value}"] = json.loads((root / "part.json").read_text())
    whole = nest(json.loads((root / "sliced.json").read_text()), parts)
    (root / "sliced.json").write_text(json.dumps(whole))
    mpieval("report", root / "sliced.json", "-o", root / "slices.html", cwd=root)


# What the page shows, measured in the browser (document order, boxes, overflow).
MEASURE = """() => {
  const summary = document.getElementById("summary");
  const figures = [...document.querySelectorAll("svg")]
    .filter(s => !s.parentElement.closest("svg"));
  const visible = e => e.getClientRects().length > 0;
  const overflow = e => ({what: e.tagName.toLowerCase() + (e.id ? "#" + e.id : ""),
                          scroll: e.scrollWidth, client: e.clientWidth,
                          right: e.getBoundingClientRect().right});
  const tables = [...document.querySelectorAll("table")].filter(visible);
  return {
    summary: summary && {top: summary.getBoundingClientRect().top,
                         ...overflow(summary),
                         beforeFigures: figures.length === 0 || Boolean(
                           summary.compareDocumentPosition(figures[0])
                           & Node.DOCUMENT_POSITION_FOLLOWING)},
    tables: tables.flatMap(t => [overflow(t), overflow(t.parentElement)]),
    pageWidth: document.documentElement.scrollWidth,
    figures: figures.map(s => ({
      title: Boolean(s.querySelector("title")) && s.querySelector("title").textContent.trim(),
      desc: Boolean(s.querySelector("desc")) && s.querySelector("desc").textContent.trim(),
      label: s.getAttribute("aria-label") || s.getAttribute("aria-labelledby"),
      role: s.getAttribute("role"),
      texts: s.querySelectorAll("text").length})),
  };
}"""


def render(browser: Any, page_file: Path, width: int, shots: Path | None) -> dict[str, Any]:
    """``page_file`` opened at ``width`` px: what :data:`MEASURE` finds, and every request
    the page made besides its own file (none are let through). Screenshots of the first
    screen and the whole page are saved to ``shots`` when it is given."""
    context = browser.new_context(viewport={"width": width, "height": SCREEN_HEIGHT})
    own = page_file.resolve().as_uri()
    requests: list[str] = []

    def refuse(route: Any) -> None:
        if route.request.url == own:
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url) if r.url != own
            and not r.url.startswith("data:") else None)
    try:
        page.goto(own, wait_until="load")
        page.wait_for_load_state("networkidle")
        measured: dict[str, Any] = page.evaluate(MEASURE)
        if shots is not None:
            stem = f"{page_file.stem}-{width}"
            page.screenshot(path=str(shots / f"{stem}-first-screen.png"), timeout=SHOT_MS)
            height = min(page.evaluate("document.documentElement.scrollHeight"),
                         MAX_SHOT_HEIGHT)
            page.screenshot(path=str(shots / f"{stem}-full.png"), full_page=True,
                            timeout=SHOT_MS,
                            clip={"x": 0, "y": 0, "width": width, "height": height})
    finally:
        context.close()
    measured["requests"] = sorted(set(requests))
    return measured


@pytest.fixture(scope="module")
def rendered(browser: Any, pages: dict[str, Path], shots: Path | None
             ) -> dict[tuple[str, int], dict[str, Any]]:
    for path in pages.values() if shots is not None else ():  # beside their screenshots
        shutil.copy(path, shots / path.name)
    return {(name, width): render(browser, path, width, shots)
            for name, path in pages.items() for width in WIDTHS}


NAMES = ("demo", "ab", "tags", "days", "ranking", "slices")
VERDICT_SCREENS = {1280: 800, 420: 900}  # width: the height of its first screen


@pytest.mark.parametrize("name", NAMES)
def test_the_summary_comes_before_the_figures_on_the_first_screen(rendered, name):
    for width in WIDTHS:
        summary = rendered[name, width]["summary"]
        assert summary is not None, f"{name} at {width} px: no element with id 'summary'"
        assert summary["beforeFigures"], f"{name} at {width} px: a figure precedes the summary"
    assert rendered[name, 1280]["summary"]["top"] < SCREEN_HEIGHT


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_wider_than_a_phone(rendered, name):
    measured = rendered[name, 420]
    assert measured["summary"] is not None, f"{name}: no element with id 'summary'"
    assert measured["pageWidth"] <= 420
    for box in [measured["summary"], *measured["tables"]]:
        assert box["scroll"] <= box["client"], f"{name} at 420 px: {box} overflows"
        assert box["right"] <= 420 + 0.5, f"{name} at 420 px: {box} is cut at the edge"


@pytest.mark.parametrize("name", NAMES)
def test_the_page_asks_for_nothing_over_the_network(rendered, name):
    for width in WIDTHS:
        assert rendered[name, width]["requests"] == []


@pytest.mark.parametrize("name", NAMES)
def test_figures_are_text_with_a_title_and_a_description(rendered, name):
    figures = rendered[name, 1280]["figures"]
    assert figures, f"{name}: no figure"
    for k, figure in enumerate(figures):
        described = (figure["title"] and figure["desc"]) or (
            figure["role"] == "img" and figure["label"])
        assert described, f"{name}, figure {k}: no <title>/<desc> nor role=img and a label"
        assert figure["texts"] > 0, f"{name}, figure {k}: its text is not <text>"


def test_the_300_tag_page_is_small_and_has_few_figures(rendered, pages):
    assert pages["tags"].stat().st_size <= MAX_BYTES
    assert len(rendered["tags", 1280]["figures"]) <= MAX_FIGURES


def test_the_checks_see_a_request_an_overflow_and_a_figure_first(browser, tmp_path):
    """The measures above on a page that has each fault: a figure before the summary, a
    table wider than a phone, an image from the network."""
    page = tmp_path / "faulty.html"
    page.write_text(
        "<!doctype html><html><head><meta name='viewport' content='width=device-width'>"
        "</head><body><svg width='10' height='10'><text>x</text></svg>"
        "<div id='summary'>summary</div><table><tr><td style='min-width: 900px'>wide</td>"
        "</tr></table><img src='http://198.51.100.1/pixel.png'></body></html>")
    measured = render(browser, page, 420, tmp_path)
    assert not measured["summary"]["beforeFigures"]
    assert measured["pageWidth"] > 420
    assert any(box["right"] > 420 for box in measured["tables"])
    assert measured["requests"] == ["http://198.51.100.1/pixel.png"]
    assert measured["figures"] == [{"title": False, "desc": False, "label": None,
                                    "role": None, "texts": 1}]



# The page printed: A4 less the print style's margins, at the browser's 96 px an inch.
PRINT_WIDTH = round((210 - 2 * 13) / 25.4 * 96)
MIN_PRINT_TEXT = 9.0  # px of a figure's text, printed: about 7 pt
PRINTED = """() => {
  const rows = [...document.querySelectorAll("table.tags tbody tr")];
  const shown = rows.filter(r => r.checkVisibility());
  const sizes = [...document.querySelectorAll("figure.plot svg text")]
    .filter(t => t.textContent.trim() && t.checkVisibility())
    .map(t => t.getBoundingClientRect().height).filter(h => h > 0);
  return {rows: rows.length, shown: shown.length, smallest: Math.min(...sizes)};
}"""


def test_print_keeps_every_tag_and_figure_text_readable(browser, pages):
    """Printed (the print style at A4's width), the 300-tag page shows every tag's row,
    also those behind "The other N tags" (closed on the screen), and no figure's text is
    scaled below about 7 pt."""
    context = browser.new_context(viewport={"width": PRINT_WIDTH, "height": 1100})
    try:
        page = context.new_page()
        page.goto(pages["tags"].resolve().as_uri(), wait_until="load")
        on_screen = page.evaluate(PRINTED)
        page.emulate_media(media="print")
        printed = page.evaluate(PRINTED)
    finally:
        context.close()
    assert on_screen["shown"] < on_screen["rows"]  # the closed tables: hidden on the screen
    assert printed["rows"] >= 300 and printed["shown"] == printed["rows"], printed
    assert printed["smallest"] >= MIN_PRINT_TEXT, printed


@pytest.mark.parametrize("name", NAMES)
def test_nothing_overflows_a_small_laptop(browser, pages, name):
    """At 1000 px no table is wider than its box (two runs side by side included: runs
    that would not fit go to tables below), and every box that scrolls can be reached by
    the keyboard."""
    measured = render(browser, pages[name], 1000, None)
    assert measured["pageWidth"] <= 1000
    for box in measured["tables"]:
        assert box["scroll"] <= box["client"] + 1, f"{name} at 1000 px: {box} overflows"


def axe_violations(browser: Any, page_file: Path, width: int) -> list[str]:
    """axe-core's serious and critical violations on ``page_file`` at ``width`` px, one
    line each: the rule, its help and the first offending element."""
    from importlib.resources import files

    script = files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")
    context = browser.new_context(viewport={"width": width, "height": SCREEN_HEIGHT})
    try:
        page = context.new_page()
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        page.evaluate(script)
        found = page.evaluate("axe.run(document, {resultTypes: ['violations']})"
                              ".then(r => r.violations)")
    finally:
        context.close()
    return [f"{v['id']} ({v['impact']}): {v['help']}: {v['nodes'][0]['html'][:160]}"
            for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("name", NAMES)
def test_axe_finds_no_serious_or_critical_violation(browser, pages, name):
    """axe-core (WCAG 2 A and AA rules, best practices) on each page at 1280 and 420 px."""
    for width in WIDTHS:
        found = axe_violations(browser, pages[name], width)
        assert not found, f"{name} at {width} px:\n" + "\n".join(found)


TEXT_PX = """() => [...document.querySelectorAll("figure.plot svg")].flatMap(svg => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return [...svg.querySelectorAll("text")].filter(t => t.textContent.trim())
    .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
})"""


@pytest.mark.parametrize("name", NAMES)
def test_figure_text_is_at_least_11_px_on_a_phone(browser, pages, name):
    """At 420 px a figure is drawn no smaller than its smallest text's 11 px (it scrolls
    sideways in its own box when wider than the screen; the page does not)."""
    context = browser.new_context(viewport={"width": 420, "height": SCREEN_HEIGHT})
    try:
        page = context.new_page()
        page.goto(pages[name].resolve().as_uri(), wait_until="load")
        sizes = page.evaluate(TEXT_PX)
        width = page.evaluate("document.documentElement.scrollWidth")
    finally:
        context.close()
    assert sizes and min(sizes) >= 11.0 - 0.05, (name, min(sizes))
    assert width <= 420


VERDICT = """() => {
  const first = document.querySelector("#summary .better, #summary .worse, #summary .neutral");
  return first && {top: first.getBoundingClientRect().top, text: first.textContent};
}"""


@pytest.mark.parametrize("name", [name for name in NAMES if name != "demo"])
def test_the_first_verdict_is_on_the_first_screen(browser, pages, name):
    """A compared page's first verdict (better, worse or no evidence) is on the first
    screen of a laptop (1280 x 800) and of a phone (420 x 900)."""
    for width, height in VERDICT_SCREENS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            page.goto(pages[name].resolve().as_uri(), wait_until="load")
            found = page.evaluate(VERDICT)
        finally:
            context.close()
        assert found is not None, f"{name}: no verdict in the summary"
        assert found["top"] < height - 20, (name, width, found)


@pytest.mark.parametrize("name", NAMES)
def test_nothing_overflows_a_laptop(rendered, name):
    measured = rendered[name, 1280]
    assert measured["pageWidth"] <= 1280
    for box in measured["tables"]:
        assert box["scroll"] <= box["client"] + 1, f"{name} at 1280 px: {box} overflows"


# Every numeric tick label of every axis, with the x (or y) of its tick mark on the screen.
TICKS = """() => [...document.querySelectorAll("figure.plot svg g[id*='-axes_']")]
  .filter(axes => /-axes_[0-9]+$/.test(axes.id)).flatMap(axes => ["xtick", "ytick"].map(kind => {
    const ticks = [...axes.querySelectorAll(`g[id*='-${kind}_']`)]
      .filter(g => new RegExp(`-${kind}_[0-9]+$`).test(g.id)
                   && g.closest("g[id*='-axes_']") === axes)
      .map(g => {
        const mark = g.querySelector("use");
        const text = g.querySelector("text");
        if (!mark || !text) return null;
        const box = mark.getBoundingClientRect();
        return {at: kind === "xtick" ? box.x + box.width / 2 : box.y + box.height / 2,
                label: text.textContent.trim()};
      }).filter(t => t && t.label);
    return {axes: axes.id, kind, ticks};
  }))"""


def _number(label: str) -> float | None:
    text = label.replace("\u2212", "-").replace("%", "").replace("+", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def read_ticks(browser: Any, page_file: Path) -> list[dict[str, Any]]:
    """Every axis of the page's figures with its ticks (:data:`TICKS`), at 1280 px."""
    context = browser.new_context(viewport={"width": 1280, "height": SCREEN_HEIGHT})
    try:
        page = context.new_page()
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        axes: list[dict[str, Any]] = page.evaluate(TICKS)
    finally:
        context.close()
    return axes


def tick_faults(axes: list[dict[str, Any]]) -> tuple[list[Any], int]:
    """The axes whose numeric tick labels do not lie on one straight line (or one on a
    log or logit scale) against their tick marks' places, and how many axes were read."""
    faults, checked = [], 0
    for axis in axes:
        ticks = [(t["at"], value) for t in axis["ticks"]
                 if (value := _number(t["label"])) is not None]
        if len(ticks) < 3 or len(ticks) < len(axis["ticks"]):
            continue  # categories, or too few to tell a line
        ticks.sort()
        at = np.array([t for t, _ in ticks])
        values = np.array([v for _, v in ticks])
        scales = [values]
        if (values > 0).all():
            scales.append(np.log(values))  # a log axis (the lift's top shares)
            if (values < 1).all():
                scales.append(np.log(values / (1 - values)))  # a logit axis (preds)
        fits = []
        for scale in scales:
            slope, intercept = np.polyfit(at, scale, 1)
            span = scale.max() - scale.min()
            fits.append(np.abs(slope * at + intercept - scale).max() <= 0.005 * span)
        if not any(fits):
            faults.append((axis["axes"], axis["kind"], ticks))
        checked += 1
    return faults, checked


@pytest.mark.parametrize("name", NAMES)
def test_every_tick_label_reads_back_as_its_place_on_the_axis(browser, pages, name):
    """On every axis the numeric tick labels, read from the page, lie on one straight
    line (or one on a log or logit scale) against their tick marks' places: a label
    rounded to a wrong value (-0.025 shown as -0.03) is off that line."""
    faults, checked = tick_faults(read_ticks(browser, pages[name]))
    assert checked > 0, f"{name}: no numeric axis found"
    assert not faults, (name, faults)


def test_a_tick_label_off_its_place_is_seen(browser, pages, tmp_path):
    """The check above on a page whose forest plot's second x tick label is changed by
    a fifth of a step (as "-0.03" for -0.025 would be)."""
    import re

    text = pages["ab"].read_text(encoding="utf-8")
    faults, _ = tick_faults(read_ticks(browser, pages["ab"]))
    assert not faults
    tick = re.search(r'id="f[0-9]+-m-wuauc-differences-xtick_2".*?<text[^>]*>([^<]+)</text>',
                     text, flags=re.S)
    assert tick is not None
    first = re.search(r'id="f[0-9]+-m-wuauc-differences-xtick_1".*?<text[^>]*>([^<]+)</text>',
                      text, flags=re.S)
    assert first is not None
    low, high = float(first.group(1).replace("+", "")), float(tick.group(1).replace("+", ""))
    wrong = f"{high + (high - low) / 5:+.4f}"
    broken = tmp_path / "broken.html"
    broken.write_text(text[:tick.start(1)] + wrong + text[tick.end(1):], encoding="utf-8")
    faults, _ = tick_faults(read_ticks(browser, broken))
    assert faults and "wuauc-differences" in faults[0][0]
