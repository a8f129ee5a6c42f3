"""The ``auc`` kind on a report page: its summary lines and its section, the values with
their 95% intervals (and B - A with ``--compare``), the ROC curve, the calibration plot,
the precision-recall curve and the scores by class (:mod:`mpieval.kinds.auc.figures`), the
bucket error in context, and with ``--compare`` the difference B - A of AUC as a forest
plot. Its sane ranges: NE below 1, COPC in [0.8, 1.25], AUC above 0.5, some clicks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mpieval.kinds.auc import KIND, figures, kernels
from mpieval.report import verdicts
from mpieval.report.figures import Difference, Estimate, Series
from mpieval.report.html import (
    OLDER,
    escape,
    pair,
    value_text,
    weighting_text,
)
from mpieval.report.page import Model, Page
from mpieval.report.runs import Run
from mpieval.report.section import Flag, Section, SliceView
from mpieval.report.verdicts import Family

# The curves of a block: the shape of each point, as the error message names it.
CURVES = {"roc_curve": "[fpr, tpr] pairs",
          "calibration_curve": "[mean_pred, actual_ctr, rows] triples",
          "pr_curve": "[recall, precision] pairs",
          "score_histogram": "[pred_low, pred_high, negatives, positives] rows"}
# The curves a run of an older mpieval lacks (its figures say so).
MAIN_CURVES = ("roc_curve", "calibration_curve")
# The summary's values of a model, in order (field, name).
HEADLINE = (("auc", "AUC"), ("copc", "COPC"), ("ece", "ECE"), ("ne", "NE"),
            ("actual_ctr", "actual CTR"))
FLAGGED = ("auc", "ne", "copc", "actual_ctr")
# What decides between two models (B - A), in the verdict's order.
FAMILIES = (
    Family("ranking", (("auc", "AUC"), ("auprc", "AUPRC")), "ranks better", "ranks worse"),
    Family("calibration", (("copc", "COPC"), ("ece", "ECE")), "is better calibrated",
           "is worse calibrated",
           lambda a, b: verdicts.prediction_ratio(a.get("copc"), b.get("copc"))),
    Family("loss", (("logloss", "LogLoss"), ("ne", "NE")), "has a lower loss",
           "has a higher loss"),
)
COPC_RANGE = (0.8, 1.25)
FLAGS = (
    Flag(("ne",), lambda value, _: value >= 1, "NE ≥ 1: no better than predicting the base rate"),
    Flag(("copc",), lambda value, _: not COPC_RANGE[0] <= value <= COPC_RANGE[1],
         f"COPC outside [{COPC_RANGE[0]}, {COPC_RANGE[1]}]: miscalibrated"),
    Flag(("auc",), lambda value, _: value <= 0.5, "{FIELD} ≤ 0.5: no better than random"),
    Flag(("actual_ctr", "positives"), lambda value, block: value == 0 and "num" in block,
         "no clicks in the run"),
)

# What each value is, with its unit, in the order the tables list them.
AUC_FIELDS = {
    "auc": "AUC: chance that a click is ranked above a non-click (0.5 = random)",
    "bucket_error": "Bucket error: row-weighted mean of |actual / predicted CTR - 1| over "
                    "pred ranges at most 0.01 wide (0 = calibrated in every range)",
    "copc": "COPC: actual CTR / predicted CTR (1 = calibrated overall)",
    "actual_ctr": "Actual CTR: clicks per row",
    "predicted_ctr": "Predicted CTR: mean pred (clicks per row)",
    "rmse": "RMSE of pred against label",
    "mae": "MAE of pred against label",
    "logloss": "LogLoss: mean cross-entropy, nats per row",
    "ne": "NE: LogLoss / entropy of the actual CTR (below 1 beats the base rate)",
    "auprc": "AUPRC: average precision",
    "ece": "ECE: row-weighted mean |actual CTR - mean pred| over the calibration plot's "
           "20 bins of about equal rows (0 = calibrated in every bin)",
    "auc_tie_bound": "Tie bound: the most the table's binning can move AUC",
    "num": "Rows (sum of weights when weighted)",
}


# -- the summary -------------------------------------------------------------------------


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """One line per model (its headline values and intervals, changes against the
    baseline, flags), and per compared run the verdict B - A over ranking, calibration and
    loss (:mod:`mpieval.report.verdicts`)."""
    lines = []
    a_block: dict[str, Any] = {}
    for model in page.models([(run, run.metrics[name]) for run in runs]):
        block = model.block
        base = page.baseline_block(name, model)
        if base is not None and model.is_b and base.get("compare"):
            base = base["compare"]
        line = f"{escape(model.series.label)}: " + page.headlines(block, HEADLINE, base)
        line += "".join(f"<span class=flag>⚠ {flag}</span>"
                        for flag in SECTION.flag_texts(block, FLAGGED))
        if not model.is_b:
            line += _weighting(model, name)
            a_block = block
        lines.append(line)
        if model.is_b:
            lines += verdicts.lines(KIND, page.compared_label(model), a_block, block, FAMILIES)
    return lines


def _weighting(model: Model, name: str) -> str:
    """A weighted run says so: the rows, the weights' sum and their meaning."""
    spec = ((model.run.provenance or {}).get("weights") or {}).get(name)
    rows, num = model.block.get("rows"), model.block.get("num")
    if isinstance(spec, dict):
        return f"; weighted by {weighting_text(spec, rows)}"
    if isinstance(rows, (int, float)) and isinstance(num, (int, float)) and rows != num:
        return f"; weighted: {rows:,} rows, weights summing to {num:,.6g}"
    return ""


# -- the section -------------------------------------------------------------------------


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    """The values' table, the figures, the bucket error in context and B against A."""
    models = page.models([(run, run.metrics[name]) for run in runs])
    notes = _missing_notes([m for m in models if not m.is_b])
    notes += [f"{escape(m.series.label)}: no curves of model B in the run (its values only); "
              "A's are drawn." for m in models
              if m.is_b and not any(m.block.get(field) for field in MAIN_CURVES)]
    parts = [page.value_table(name, models, AUC_FIELDS)]
    drawn = [figure for draw in (_lift, _roc, _calibration, _precision_recall, _scores)
             if (figure := draw(page, name, models))]
    if drawn:
        parts.append(f"<div class=figures>{''.join(drawn)}</div>")
    parts.append(_bucket_error_context(models))
    rows = _differences(page, models)
    if rows:
        parts.append("<h3>B against A</h3><div class=figures>"
                     f"{page.differences(name, rows, 'AUC')}</div>")
    return "".join(parts), notes


def _lift(page: Page, name: str, models: Sequence[Model]) -> str:
    """The lift figure and, below it, each model's lift at the top 1%, 5% and 10%."""
    drawn = [m for m in models if m.block.get("lift")]
    if not drawn:
        return ""
    said = []
    for m in drawn:
        parts = [f"top {100 * p['fraction']:g}%: lift {value_text(p.get('lift'), digits=3)}"
                 f" (CTR {value_text(p.get('ctr'), digits=3)}, "
                 f"{value_text(p.get('recall'), digits=3)} of clicks)"
                 for p in m.block["lift"] if p.get("fraction") in (0.01, 0.05, 0.1)]
        said.append(f"{escape(m.series.label)}: " + "; ".join(parts))
    return page.figure(
        figures.lift([(m.series, m.block["lift"]) for m in drawn], page.key(name, "lift")),
        "Lift: the CTR of the top rows by pred over the overall CTR (how many times a random "
        "pick's clicks the top of the ranking finds). " + ". ".join(said) + ". A pred range "
        "the cut falls in counts by its share.")


def _roc(page: Page, name: str, models: Sequence[Model]) -> str:
    drawn = [m for m in models if m.block.get("roc_curve")]
    if not drawn:
        return ""
    aucs = "; ".join(f"{escape(m.series.label)} AUC {value_text(m.block.get('auc'))}"
                     for m in drawn)
    return page.figure(
        figures.roc([(m.series, m.block["roc_curve"]) for m in drawn], page.key(name, "roc")),
        f"ROC curve from the merged histogram ({aucs}). Both axes are shares "
        "(0 to 1); the dotted diagonal is a random ranking.")


def _calibration(page: Page, name: str, models: Sequence[Model]) -> str:
    return _figure(page, name, models, "calibration_curve", figures.calibration, "calibration",
                   "Calibration: actual CTR against mean predicted CTR, the run's bins merged "
                   f"into {kernels.CALIBRATION_GROUPS} of about equal rows, with each bin's "
                   "95% binomial interval; points on the dotted diagonal are calibrated. "
                   "Below: the share of rows per predicted-CTR range.")


def _precision_recall(page: Page, name: str, models: Sequence[Model]) -> str:
    drawn = [m for m in models if m.block.get("pr_curve")]
    if not drawn:
        return ""
    rates = [m.run.metrics[name].get("actual_ctr") for m in drawn]
    return page.figure(
        figures.precision_recall([(m.series, m.block["pr_curve"]) for m in drawn],
                                 page.key(name, "pr"), rates),
        "Precision-recall curve from the merged table (AUPRC: "
        + "; ".join(f"{escape(m.series.label)} {value_text(m.block.get('auprc'))}"
                    for m in drawn)
        + "). The dotted line is a random ranking: precision equal to the actual CTR.")


def _scores(page: Page, name: str, models: Sequence[Model]) -> str:
    return _figure(page, name, models, "score_histogram", figures.score_distributions,
                   "scores", "Distribution of pred among clicks and among non-clicks: the "
                   "further apart, the better the ranking. The two end ranges, which reach 0 "
                   "and 1, hold whole tails and are not drawn (the figure's description "
                   "gives their shares).")


def _figure(page: Page, name: str, models: Sequence[Model], field: str,
            draw: Callable[[list[tuple[Series, Any]], str], str], what: str,
            caption: str) -> str:
    """The figure ``draw`` makes of ``field`` of the models that have it ('' when none)."""
    curves = [(m.series, m.block[field]) for m in models if m.block.get(field)]
    if not curves:
        return ""
    return page.figure(draw(curves, page.key(name, what)), caption)


def _differences(page: Page, models: Sequence[Model]) -> list[Difference]:
    """B - A of AUC of each compared run with its paired interval, for the forest plot."""
    rows = []
    for m in models:
        compare: dict[str, Any] | None = m.block.get("compare") if not m.is_b else None
        if not compare or not isinstance(compare.get("auc_diff"), (int, float)):
            continue
        low, high = pair(compare.get("auc_diff_ci95"))
        if low is None or high is None:
            continue
        label = "AUC" + (f" · {m.run.label}" if len(page.runs) > 1 else "")
        rows.append(Difference(label, Estimate(compare["auc_diff"], low, high),
                               compare.get("auc_diff_p"), None, emphasis=True))
    return rows


def _missing_notes(models: Sequence[Model]) -> list[str]:
    """What the runs' auc blocks lack of the statistics, one note per run."""
    notes = []
    for m in models:
        lacking = []
        if not any(field in m.block for field in MAIN_CURVES):
            lacking.append("no ROC or calibration curve")
        if "ci95" not in m.block:
            lacking.append("no intervals")
        if lacking:
            what = " and ".join(lacking)
            notes.append(f"{what[0].upper()}{what[1:]} in {escape(m.run.label)} {OLDER}.")
        elif "roc_curve" in m.block and not m.block["roc_curve"]:
            notes.append(f"No ROC curve in {escape(m.run.label)}: it needs both clicks and "
                         "non-clicks.")
    return notes


def _bucket_error_context(models: Sequence[Model]) -> str:
    items = []
    for m in models:
        if "bucket_error" not in m.block:
            continue
        parts = [f"bucket error {value_text(m.block.get('bucket_error'))}"]
        if "copc" in m.block:
            parts.append(f"COPC {value_text(m.block.get('copc'))}")
        ctrs = [f"{what} {value_text(m.block[field])}" for field, what in (
            ("actual_ctr", "actual CTR"), ("predicted_ctr", "predicted CTR")) if field in m.block]
        text = ", ".join(parts) + (f" ({', '.join(ctrs)})" if ctrs else "")
        items.append(f"<li><b>{escape(m.series.label)}</b>: {text}</li>")
    if not items:
        return ""
    return ("<div class=context><p>Bucket error: the row-weighted mean of |actual CTR / "
            "predicted CTR - 1| over ranges of pred at most 0.01 wide (Abacus' "
            "calculate_bucket_error). COPC is the same ratio over all rows at once: errors of "
            "opposite sign cancel in COPC, not in bucket error; the calibration plot shows "
            "where they lie.</p>"
            f"<ul>{''.join(items)}</ul></div>")


# A slice's values the page names (the first drawn per slice column).
SLICES = SliceView((("auc", "AUC"), ("copc", "COPC"), ("logloss", "LogLoss")))
SECTION = Section(KIND, draw=section, summary=summary, curves=CURVES, flags=FLAGS, rows="rows",
                  slices=SLICES)
