"""Simulated data sets with a known truth, for the coverage tests and scripts/stats_coverage.py.

Binormal scores: positives N(d, 1), negatives N(0, 1), pred = sigmoid(score); the true
AUC of the raw preds is Phi(d / sqrt 2) (the sigmoid keeps the order).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from typing import Any

import numpy as np

from mpieval import AucMetric, Comm, UndefinedMetricWarning, WuaucMetric
from mpieval.kernels import stats

POSITIVE_SHARE = 0.3


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def binormal(rng: np.random.Generator, n: int, d: float,
             positive_share: float = POSITIVE_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """``(pred, label)``: ``n`` rows, a share ``positive_share`` positive in expectation."""
    label = (rng.random(n) < positive_share).astype(np.int8)
    return sigmoid(rng.standard_normal(n) + d * label), label


def mean_sigmoid(d: float) -> float:
    """``E[sigmoid(Z + d)]``, Z standard normal (Gauss-Hermite quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(100)
    return float(w @ sigmoid(x + d)) / math.sqrt(2 * math.pi)


def truth(d: float) -> dict[str, float]:
    """The true values the binormal rows estimate."""
    mean_pred = POSITIVE_SHARE * mean_sigmoid(d) + (1 - POSITIVE_SHARE) * mean_sigmoid(0.0)
    return {"auc": stats.normal_cdf(d / math.sqrt(2)), "actual_ctr": POSITIVE_SHARE,
            "predicted_ctr": mean_pred, "copc": POSITIVE_SHARE / mean_pred}


def auc_coverage(rng: np.random.Generator, datasets: int, n: int, d: float,
                 table_size: int = 10_000) -> dict[str, float]:
    """Share of ``datasets`` binormal data sets whose 95% interval covers the truth, for
    each value of ``truth``."""
    want = truth(d)
    hits = dict.fromkeys(want, 0)
    for _ in range(datasets):
        pred, label = binormal(rng, n, d)
        metric = AucMetric(table_size=table_size, comm=Comm.local())
        metric.update(pred, label)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            ci = metric.compute().ci()
        for name, value in want.items():
            pair = ci[name]
            hits[name] += pair is not None and pair[0] <= value <= pair[1]
    return {name: count / datasets for name, count in hits.items()}


def paired(rng: np.random.Generator, n: int, d: float, noise_a: float,
           noise_b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pred_a, pred_b, label)``: one binormal score per row, each model adding its own
    independent noise N(0, noise^2); model m's true AUC is Phi(d / sqrt(2 (1 + noise^2)))."""
    label = (rng.random(n) < POSITIVE_SHARE).astype(np.int8)
    score = rng.standard_normal(n) + d * label
    return (sigmoid(score + noise_a * rng.standard_normal(n)),
            sigmoid(score + noise_b * rng.standard_normal(n)), label)


def paired_auc(d: float, noise: float) -> float:
    return stats.normal_cdf(d / math.sqrt(2 * (1 + noise**2)))


def ab_rates(rng: np.random.Generator, datasets: int, n: int, d: float, noise_a: float,
             noise_b: float, table_size: int = 10_000) -> dict[str, float]:
    """Over ``datasets`` paired data sets: the shares with ``p < 0.05`` and ``p < 0.01``,
    and the share whose 95% interval of ``auc_diff`` covers the true difference."""
    true_diff = paired_auc(d, noise_b) - paired_auc(d, noise_a)
    below_05 = below_01 = covered = 0
    for _ in range(datasets):
        pred_a, pred_b, label = paired(rng, n, d, noise_a, noise_b)
        metric = AucMetric(table_size=table_size, compare="b", comm=Comm.local())
        metric.update(pred_a, label, compare=pred_b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            comparison = metric.compute().compare
        assert comparison is not None
        pair = comparison.ci()
        below_05 += comparison.p < 0.05
        below_01 += comparison.p < 0.01
        covered += pair is not None and pair[0] <= true_diff <= pair[1]
    return {"p<0.05": below_05 / datasets, "p<0.01": below_01 / datasets,
            "covers": covered / datasets}


def users(rng: np.random.Generator, n_users: int, d_mean: float, d_sd: float,
          mean_rows: float = 10.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(uid, pred, label)``: users with ``1 + Poisson(mean_rows - 1)`` rows, 30%
    positives, and their own separation ``d_u ~ N(d_mean, d_sd^2)`` and score shift
    ``N(0, 1)``: user ``u``'s true AUC is ``Phi(d_u / sqrt 2)`` whatever its shift."""
    rows = 1 + rng.poisson(mean_rows - 1, n_users)
    uid = np.repeat(np.arange(n_users), rows)
    d = rng.normal(d_mean, d_sd, n_users)[uid]
    shift = rng.standard_normal(n_users)[uid]
    label = (rng.random(len(uid)) < POSITIVE_SHARE).astype(np.int8)
    return uid, sigmoid(rng.standard_normal(len(uid)) + d * label + shift), label


def user_truth(d_mean: float, d_sd: float) -> float:
    """``E[Phi(d_u / sqrt 2)]``, ``d_u ~ N(d_mean, d_sd^2)``: the mean true AUC of a user,
    which UAUC estimates, and WUAUC too (rows and labels do not depend on ``d_u``)."""
    x, w = np.polynomial.hermite_e.hermegauss(100)
    values = [stats.normal_cdf((d_mean + d_sd * t) / math.sqrt(2)) for t in x]
    return float(w @ np.array(values)) / math.sqrt(2 * math.pi)


def user_coverage(rng: np.random.Generator, datasets: int, n_users: int, d_mean: float,
                  d_sd: float) -> dict[str, float]:
    """Share of ``datasets`` simulated user sets whose 95% intervals of ``uauc`` and
    ``wuauc`` cover the mean true AUC of a user (:func:`user_truth`)."""
    want = user_truth(d_mean, d_sd)
    hits = {"uauc": 0, "wuauc": 0}
    for _ in range(datasets):
        uid, pred, label = users(rng, n_users, d_mean, d_sd)
        metric = WuaucMetric(comm=Comm.local())
        metric.update(uid, pred, label)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            ci = metric.compute().all.ci()
        for name in hits:
            pair = ci[name]
            hits[name] += pair is not None and pair[0] <= want <= pair[1]
    return {name: count / datasets for name, count in hits.items()}


def user_ab_rates(rng: np.random.Generator, datasets: int, n_users: int, d_mean: float,
                  d_sd: float, noise: float) -> dict[str, float]:
    """Over ``datasets`` user sets scored by two equally good models (the users' shared
    score plus each model's own N(0, noise^2)): per value (``uauc_diff``,
    ``wuauc_diff``), the share with ``p < 0.05`` and the share whose 95% interval covers
    0, the true difference."""
    rates = {f"{name} {what}": 0.0 for name in ("uauc_diff", "wuauc_diff")
             for what in ("p<0.05", "covers")}
    for _ in range(datasets):
        uid, pred, label = users(rng, n_users, d_mean, d_sd)
        score = np.log(pred / (1 - pred))
        a = sigmoid(score + noise * rng.standard_normal(len(uid)))
        b = sigmoid(score + noise * rng.standard_normal(len(uid)))
        metric = WuaucMetric(comm=Comm.local(), compare="b")
        metric.update(uid, a, label, compare=b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            comparison = metric.compute().all.compare
        assert comparison is not None
        for name in ("uauc_diff", "wuauc_diff"):
            pair = comparison.ci(name)
            rates[f"{name} p<0.05"] += comparison.p(name) < 0.05
            rates[f"{name} covers"] += pair is not None and pair[0] <= 0 <= pair[1]
    return {key: count / datasets for key, count in rates.items()}


# -- small samples (issue 21): few users per tag, few positives, rare clicks --------------


def valid_users(rng: np.random.Generator, n_users: int, d_mean: float, d_sd: float,
                mean_rows: float = 10.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(uid, score, label)`` as :func:`users` (raw scores, before the sigmoid) but every
    user valid: ``2 + Poisson(mean_rows - 2)`` rows, the first a click, the second not,
    the others clicks with probability 0.3; user ``u``'s true AUC is still ``Phi(d_u /
    sqrt 2)`` and the mean over users :func:`user_truth`."""
    rows = 2 + rng.poisson(mean_rows - 2, n_users)
    uid = np.repeat(np.arange(n_users), rows)
    first = np.cumsum(rows) - rows
    label = (rng.random(len(uid)) < POSITIVE_SHARE).astype(np.int8)
    label[first], label[first + 1] = 1, 0
    d = rng.normal(d_mean, d_sd, n_users)[uid]
    shift = rng.standard_normal(n_users)[uid]
    return uid, rng.standard_normal(len(uid)) + d * label + shift, label


def tag_rates(rng: np.random.Generator, datasets: int, n_users: int, d_mean: float = 1.0,
              d_sd: float = 0.5, noise: float = 0.7, per_run: int = 100) -> dict[str, float]:
    """Per-tag ``uauc`` and ``wuauc`` over ``datasets`` user sets of ``n_users`` valid users
    each, every set one tag of a ``wuauc`` run with ``compare`` (``per_run`` tags a run):
    the share of model A's 95% intervals covering its mean true AUC of a user, and of tags
    whose paired test of two equally good models (the users' score plus each model's own
    N(0, noise^2)) gives ``p < 0.05``. A null interval or p-value counts as no cover and no
    rejection."""
    # model A's score is the users' plus N(0, noise^2): its separations are d_u / c
    c = math.sqrt(1 + noise * noise)
    want = user_truth(d_mean / c, d_sd / c)
    counts = dict.fromkeys(("uauc", "wuauc", "uauc_diff p<0.05", "wuauc_diff p<0.05"), 0)
    done = 0
    while done < datasets:
        tags = min(per_run, datasets - done)
        uid, score, label = valid_users(rng, tags * n_users, d_mean, d_sd)
        tag = uid // n_users
        a = sigmoid(score + noise * rng.standard_normal(len(uid)))
        b = sigmoid(score + noise * rng.standard_normal(len(uid)))
        metric = WuaucMetric(comm=Comm.local(), compare="b")
        metric.update(uid, a, label, tag=tag, compare=b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result = metric.compute()
        for block in result.blocks[1:]:
            ci = block.ci()
            for name in ("uauc", "wuauc"):
                pair = ci[name]
                counts[name] += pair is not None and pair[0] <= want <= pair[1]
            assert block.compare is not None
            for name in ("uauc_diff", "wuauc_diff"):
                counts[f"{name} p<0.05"] += block.compare.p(name) < 0.05
        done += tags
    return {key: count / datasets for key, count in counts.items()}


def few_positives_rates(rng: np.random.Generator, datasets: int, positives: int,
                        n: int = 10_000, d: float = 1.0, noise: float = 0.7,
                        table_size: int = 10_000) -> dict[str, float]:
    """``auc`` over ``datasets`` binormal sets of ``n`` rows with exactly ``positives``
    positives: the share of 95% intervals covering ``Phi(d / sqrt 2)``, and with two
    equally good models (one score, each model's own N(0, noise^2)) the share of paired
    tests with ``p < 0.05``. A null interval or p-value counts as no cover and no
    rejection."""
    want = stats.normal_cdf(d / math.sqrt(2))
    covered = rejected = 0
    for _ in range(datasets):
        label = np.zeros(n, dtype=np.int8)
        label[rng.choice(n, positives, replace=False)] = 1
        score = rng.standard_normal(n) + d * label
        metric = AucMetric(table_size=table_size, comm=Comm.local())
        metric.update(sigmoid(score), label)
        pair_metric = AucMetric(table_size=table_size, compare="b", comm=Comm.local())
        pair_metric.update(sigmoid(score + noise * rng.standard_normal(n)), label,
                           compare=sigmoid(score + noise * rng.standard_normal(n)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            pair = metric.compute().ci()["auc"]
            comparison = pair_metric.compute().compare
        assert comparison is not None
        covered += pair is not None and pair[0] <= want <= pair[1]
        rejected += comparison.p < 0.05
    return {"auc": covered / datasets, "auc_diff p<0.05": rejected / datasets}


def rare_click_coverage(rng: np.random.Generator, datasets: int, n: int = 1000,
                        ctr: float = 0.002) -> dict[str, float]:
    """The share of ``datasets`` sets of ``n`` rows, each a click with probability ``ctr``
    and the pred ``ctr`` (a calibrated model), whose 95% intervals of ``actual_ctr`` cover
    ``ctr`` and of ``copc`` cover 1."""
    hits = {"actual_ctr": 0, "copc": 0}
    for _ in range(datasets):
        label = (rng.random(n) < ctr).astype(np.int8)
        metric = AucMetric(comm=Comm.local())
        metric.update(np.full(n, ctr), label)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            ci = metric.compute().ci()
        for name, want in (("actual_ctr", ctr), ("copc", 1.0)):
            pair = ci[name]
            hits[name] += pair is not None and pair[0] <= want <= pair[1]
    return {name: count / datasets for name, count in hits.items()}


# -- importance weights (issue 21): negative downsampling -----------------------------------


def downsampling_coverage(rng: np.random.Generator, datasets: int, n: int = 20_000,
                          ctr: float = 0.05, d: float = 1.0, keep: float = 0.1,
                          table_size: int = 10_000) -> dict[str, float]:
    """Negative downsampling: each of ``datasets`` full sets has ``n`` binormal rows (a
    click with probability ``ctr``), of which every click and a share ``keep`` of the
    non-clicks are kept, the clicks with weight 1 and the non-clicks with ``1 / keep``.
    For ``weights`` ``"frequency"`` and ``"importance"`` (the same kept rows), the share
    of 95% intervals covering the population's values (``auc`` ``Phi(d / sqrt 2)``,
    ``actual_ctr`` ``ctr``, ``predicted_ctr``, ``copc``; keys ``"importance auc"``...)
    and the full set's own ``auc`` and ``actual_ctr`` (keys ``"importance auc full"``...).
    A null interval counts as no cover."""
    mean_pred = ctr * mean_sigmoid(d) + (1 - ctr) * mean_sigmoid(0.0)
    want = {"auc": stats.normal_cdf(d / math.sqrt(2)), "actual_ctr": ctr,
            "predicted_ctr": mean_pred, "copc": ctr / mean_pred}
    hits: dict[str, int] = {}
    for _ in range(datasets):
        pred, label = binormal(rng, n, d, ctr)
        full_metric = AucMetric(table_size=table_size, comm=Comm.local())
        full_metric.update(pred, label)
        kept = (label == 1) | (rng.random(n) < keep)
        weight = np.where(label[kept] == 1, 1.0, 1 / keep)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            full = full_metric.compute()
            for weights in ("frequency", "importance"):
                metric = AucMetric(table_size=table_size, weights=weights, comm=Comm.local())
                metric.update(pred[kept], label[kept], weight)
                ci = metric.compute().ci()
                truths = [(name, value) for name, value in want.items()]
                truths += [(f"{name} full", getattr(full, name))
                           for name in ("auc", "actual_ctr")]
                for key, value in truths:
                    pair = ci[key.split()[0]]
                    covered = pair is not None and pair[0] <= value <= pair[1]
                    hits[f"{weights} {key}"] = hits.get(f"{weights} {key}", 0) + covered
    return {key: count / datasets for key, count in hits.items()}


# -- heterogeneous users (issue 32): log-uniform sizes, per-user CTR, ties, weights --------

ROW_VALUES = ("actual_ctr", "predicted_ctr", "copc", "logloss")


def hetero_users(rng: np.random.Generator, n_users: int, prevalence: float,
                 noise: float = 0.7, ties: bool = False, low: int = 5,
                 high: int = 200, valid: bool = False,
                 keep: float = 1.0) -> dict[str, np.ndarray]:
    """Users with log-uniform sizes in ``[low, high]`` rows, each its own click rate
    ``sigmoid(N(logit(prevalence), 0.7^2))``, separation ``d_u ~ N(1, 0.5^2)`` and score
    shift ``N(0, 1)``; two equally good models (the score plus each its own ``N(0,
    noise^2)``), preds rounded to 2 decimals with ``ties``. ``valid``: each user's first
    row a click and its second not (every user valid; the AUCs' truth is the same, the
    CTRs' not). ``keep < 1``: negative downsampling, each non-click kept with probability
    ``keep`` and weight ``1 / keep`` (importance weights; key ``weight``). Keys: uid, a, b,
    label (and weight)."""
    sizes = np.exp(rng.uniform(math.log(low), math.log(high + 1), n_users)).astype(int)
    uid = np.repeat(np.arange(n_users), sizes)
    centre = math.log(prevalence / (1 - prevalence))
    rate = sigmoid(rng.normal(centre, 0.7, n_users))[uid]
    label = (rng.random(len(uid)) < rate).astype(np.int8)
    if valid:
        first = np.cumsum(sizes) - sizes
        label[first], label[first + 1] = 1, 0
    score = (rng.normal(1.0, 0.5, n_users)[uid] * label + rng.standard_normal(n_users)[uid]
             + rng.standard_normal(len(uid)) + centre)
    models = {}
    for name in ("a", "b"):
        pred = sigmoid(score + noise * rng.standard_normal(len(uid)))
        models[name] = np.round(pred, 2) if ties else pred
    data = {"uid": uid, "label": label, **models}
    if keep < 1:
        kept = (label == 1) | (rng.random(len(uid)) < keep)
        data = {key: value[kept] for key, value in data.items()}
        data["weight"] = np.where(data["label"] == 1, 1.0, 1 / keep)
    return data


@functools.lru_cache(maxsize=16)
def hetero_truth(prevalence: float, noise: float = 0.7, ties: bool = False,
                 draws: int = 4_000_000, seed: int = 5) -> dict[str, float]:
    """The population values :func:`hetero_users` estimates (users' sizes are independent
    of everything else, so a row-weighted value is a mean over rows of random users): by
    Monte Carlo over ``draws`` rows, each of its own user, and the mean true AUC of a user
    (a tied pair one half) over ``draws`` (positive, negative) pairs of one user."""
    rng = np.random.default_rng(seed)
    centre = math.log(prevalence / (1 - prevalence))
    rate = sigmoid(rng.normal(centre, 0.7, draws))
    label = rng.random(draws) < rate
    d = rng.normal(1.0, 0.5, draws)
    shift = rng.standard_normal(draws) + centre

    def model(with_label: np.ndarray) -> np.ndarray:
        pred = sigmoid(d * with_label + shift + rng.standard_normal(draws)
                       + noise * rng.standard_normal(draws))
        return np.round(pred, 2) if ties else pred

    pred = model(label)
    q = np.clip(pred, 1e-15, 1 - 1e-15)
    logloss = -np.where(label, np.log(q), np.log(1 - q))
    positive, negative = model(np.ones(draws, bool)), model(np.zeros(draws, bool))
    auc = float(np.mean((positive > negative) + 0.5 * (positive == negative)))
    return {"actual_ctr": float(label.mean()), "predicted_ctr": float(pred.mean()),
            "copc": float(label.mean() / pred.mean()), "logloss": float(logloss.mean()),
            "uauc": auc, "wuauc": auc}


def hetero_tag_rates(rng: np.random.Generator, tags: int, n_users: int, prevalence: float,
                     ties: bool = False, per_run: int = 100, valid: bool = False,
                     keep: float = 1.0) -> dict[str, float]:
    """Over ``tags`` tags of ``n_users`` :func:`hetero_users` each (``per_run`` tags a
    ``wuauc --compare`` run): the share of model A's 95% intervals covering the truth
    (:func:`hetero_truth`), the share of tags whose paired test of the two equally good
    models gives ``p < 0.05`` (``X_diff``), and per run the share with some ``q < 0.05``
    (``X_diff fdr``: under the null every discovery is false, so this is the false
    discovery rate). A null interval or p-value counts as no cover and no rejection.
    ``valid``: every user valid (:func:`hetero_users`), and only the per-user values
    (``uauc``, ``wuauc`` and their differences) measured, also as main computed them
    before issue 32 on the same tags (keys ``"before X"``: ``users - 1`` degrees of
    freedom, ``sqrt(V / (V - 1))``); else only the row values (which had no interval).
    ``keep``: negative downsampling with importance weights (:func:`hetero_users`), the
    truth the full population's. The row values also give ``"predicted_ctr (log
    scale)"``: its interval as issue 32's first round computed it, on the same tags."""
    want = hetero_truth(prevalence, ties=ties)
    names = ("uauc", "wuauc") if valid else ROW_VALUES
    diffs = ("uauc_diff", "wuauc_diff") if valid else ("logloss_diff", "copc_diff")
    keys = [*names, *diffs, *(f"{d} fdr" for d in diffs)]
    counts = dict.fromkeys([*keys, *(f"before {key}" for key in keys)] if valid
                           else [*keys, "predicted_ctr (log scale)"], 0.0)
    runs = done = 0
    while done < tags:
        k = min(per_run, tags - done)
        data = hetero_users(rng, k * n_users, prevalence, ties=ties, valid=valid, keep=keep)
        metric = WuaucMetric(comm=Comm.local(), compare="b",
                             weights="importance" if keep < 1 else "frequency")
        tag = data["uid"] // n_users
        metric.update(data["uid"], data["a"], data["label"], tag=tag, compare=data["b"],
                      weight=data.get("weight"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            result = metric.compute()
        pairs = [(block, block.compare) for block in result.blocks[1:]]
        versions = [("", pairs)]
        if valid:
            rows = np.bincount(data["uid"]).astype(float)  # every user valid: its rows
            befores = []
            for block, compare in pairs:
                n = rows[int(block.tag) * n_users: (int(block.tag) + 1) * n_users]
                factor = (1 - 2 * (n**3).sum() / (n.sum() * (n**2).sum())
                          + (n**2).sum() / n.sum() ** 2)
                befores.append((_before(block, factor, block.valid_user_count),
                                _before(compare, factor, block.valid_user_count)))
            versions.append(("before ", befores))
        for prefix, blocks in versions:
            for block, compare in blocks:
                assert compare is not None
                ci = block.ci()
                for name in names:
                    pair = ci[name]
                    counts[prefix + name] += pair is not None and pair[0] <= want[name] <= pair[1]
                if not valid:  # predicted_ctr on the log scale, as before stats3
                    pair = stats.log_cluster_interval(
                        block.predicted_ctr, block.stderr.get("predicted_ctr", math.nan),
                        block.real_user_count, 0.95, 1.0,
                        effective=block.effective.get("predicted_ctr"))
                    counts["predicted_ctr (log scale)"] += (
                        pair is not None and pair[0] <= want["predicted_ctr"] <= pair[1])
                for name in diffs:
                    counts[prefix + name] += compare.p(name) < 0.05
            for name in diffs:
                q = stats.bh_q_values([compare.p(name) for _, compare in blocks])
                counts[f"{prefix}{name} fdr"] += any(value < 0.05 for value in q)
        done += k
        runs += 1
    return {key: value / (runs if key.endswith("fdr") else tags)
            for key, value in counts.items()}


def _before(value: Any, k: float, users: int) -> Any:
    """A wuauc block or comparison as main computed it before issue 32: Student's t with
    ``users - 1`` degrees of freedom and the small-sample factor ``sqrt(V / (V - 1))`` for
    ``wuauc`` (``k``, the users' factor of
    :func:`mpieval.kernels.stats.weighted_cluster_stderr`, undone)."""
    stderr = dict(value.stderr)
    for name in ("wuauc", "wuauc_diff"):
        if name in stderr:
            stderr[name] *= math.sqrt(k) * math.sqrt(users / (users - 1))
    return dataclasses.replace(value, effective={}, stderr=stderr)
