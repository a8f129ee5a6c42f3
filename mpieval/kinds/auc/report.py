"""The ``auc`` kind's summary lines and section of a report page: the values with their 95%
intervals (and B - A with ``--compare``), the ROC curve, the calibration plot, the
precision-recall curve and the scores by class, the bucket error in context, and with
``--compare`` the difference B - A of AUC as a forest plot."""

from __future__ import annotations

from collections.abc import Sequence

from mpieval import figures
from mpieval.figures import Difference, Estimate
from mpieval.kinds.auc import kernels
from mpieval.report import (
    OLDER,
    Model,
    Page,
    Run,
    escape,
    flags,
    headline,
    pair,
    value_text,
    verdict,
    weighting_text,
)

CURVES = ("roc_curve", "calibration_curve")
# The summary's values of a model, in order (field, name).
HEADLINE = (("auc", "AUC"), ("copc", "COPC"), ("ece", "ECE"), ("ne", "NE"),
            ("actual_ctr", "actual CTR"))
FLAGGED = ("auc", "ne", "copc", "actual_ctr")

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


def summary(page: Page, name: str, runs: Sequence[Run]) -> list[str]:
    """One line per model (its headline values and intervals, changes against the
    baseline, flags), and per compared run the verdict B - A."""
    lines = []
    for model in page.models([(run, run.metrics[name]) for run in runs]):
        block = model.block
        base = page.baseline_block(name, model)
        if base is not None and model.is_b and base.get("compare"):
            base = base["compare"]
        values = []
        for field, what in HEADLINE:
            text = headline(block, field, what)
            if text and base is not None:
                text += page.change(block.get(field), base.get(field))
            if text:
                values.append(text)
        line = f"{escape(model.series.label)}: " + ", ".join(values)
        line += "".join(f"<span class=flag>⚠ {flag}</span>" for flag in flags(block, FLAGGED))
        if not model.is_b:
            line += _weighting(model, name)
        lines.append(line)
        if model.is_b:
            label = f"{escape(model.run.label)}: B \u2212 A" if len(page.runs) > 1 else "B \u2212 A"
            lines.append(f"<b>{label}</b>: {verdict(block, 'auc', 'AUC')}")
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


def section(page: Page, name: str, runs: Sequence[Run]) -> tuple[str, list[str]]:
    models = page.models([(run, run.metrics[name]) for run in runs])
    notes = _missing_notes([m for m in models if not m.is_b])
    notes += [f"{escape(m.series.label)}: no curves of model B in the run (its values only); "
              "A's are drawn." for m in models
              if m.is_b and not any(m.block.get(field) for field in CURVES)]
    parts = [page.value_table(name, models, AUC_FIELDS)]
    drawn = []
    rocs = [(m.series, m.block["roc_curve"]) for m in models if m.block.get("roc_curve")]
    if rocs:
        aucs = "; ".join(f"{escape(m.series.label)} AUC {value_text(m.block.get('auc'))}"
                         for m in models if m.block.get("roc_curve"))
        drawn.append(page.figure(
            figures.roc(rocs, page.key(name, "roc")),
            f"ROC curve from the merged histogram ({aucs}). Both axes are shares "
            "(0 to 1); the dotted diagonal is a random ranking."))
    calibrations = [(m.series, m.block["calibration_curve"]) for m in models
                    if m.block.get("calibration_curve")]
    if calibrations:
        drawn.append(page.figure(
            figures.calibration(calibrations, page.key(name, "calibration")),
            "Calibration: actual CTR against mean predicted CTR, the run's bins merged "
            f"into {kernels.CALIBRATION_GROUPS} of about equal rows, with each bin's "
            "95% binomial interval; points on the dotted diagonal are calibrated. Below: "
            "the share of rows per predicted-CTR range."))
    prs = [(m, m.block["pr_curve"]) for m in models if m.block.get("pr_curve")]
    if prs:
        rates = [m.run.metrics[name].get("actual_ctr") for m, _ in prs]
        drawn.append(page.figure(
            figures.precision_recall([(m.series, curve) for m, curve in prs],
                                     page.key(name, "pr"), rates),
            "Precision-recall curve from the merged table (AUPRC: "
            + "; ".join(f"{escape(m.series.label)} {value_text(m.block.get('auprc'))}"
                        for m, _ in prs)
            + "). The dotted line is a random ranking: precision equal to the actual CTR."))
    histograms = [(m.series, m.block["score_histogram"]) for m in models
                  if m.block.get("score_histogram")]
    if histograms:
        drawn.append(page.figure(
            figures.score_distributions(histograms, page.key(name, "scores")),
            "Distribution of pred among clicks and among non-clicks: the further apart, "
            "the better the ranking."))
    if drawn:
        parts.append(f"<div class=figures>{''.join(drawn)}</div>")
    parts.append(_bucket_error_context(models))
    rows = []
    for m in models:
        compare = m.block.get("compare") if not m.is_b else None
        if not compare or not isinstance(compare.get("auc_diff"), (int, float)):
            continue
        low, high = pair(compare.get("auc_diff_ci95"))
        if low is None or high is None:
            continue
        label = "AUC" + (f" · {m.run.label}" if len(page.runs) > 1 else "")
        rows.append(Difference(label, Estimate(compare["auc_diff"], low, high),
                               compare.get("auc_diff_p"), None, emphasis=True))
    if rows:
        parts.append("<h3>B against A</h3><div class=figures>"
                     f"{page.differences(name, rows, 'AUC')}</div>")
    return "".join(parts), notes


def _missing_notes(models: Sequence[Model]) -> list[str]:
    """What the runs' auc blocks lack of the statistics, one note per run."""
    notes = []
    for m in models:
        lacking = []
        if not any(field in m.block for field in CURVES):
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
