"""Plain-Python oracles of the statistics (loops over rows and pairs, no numpy)."""

from __future__ import annotations

import math

CLIP = 1e-15


def logloss(pred, label, weight=None):
    """``sum w ce / sum w`` with the pred clipped to ``[1e-15, 1 - 1e-15]``."""
    total = weights = 0.0
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        q = min(max(float(p), CLIP), 1 - CLIP)
        y = float(y)
        ce = 0.0
        if y != 0:
            ce -= y * math.log(q)
        if y != 1:
            ce -= (1 - y) * math.log(1 - q)
        total += w * ce
        weights += w
    return total / weights


def torchrec_ne(pred, label, weight=None, eta=1e-12):
    """TorchRec's ``compute_ne`` (metrics/ne.py) written out: cross entropy in log2 with
    preds clamped to ``[eta, 1 - eta]``, over the entropy of the clamped mean label."""
    ce_sum = pos = neg = 0.0
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        q = min(max(float(p), eta), 1 - eta)
        y = float(y)
        ce_sum += -w * y * math.log2(q) - w * (1 - y) * math.log2(1 - q)
        pos += w * y
        neg += w * (1 - y)
    mean = min(max(pos / (pos + neg), eta), 1 - eta)
    return ce_sum / (-pos * math.log2(mean) - neg * math.log2(1 - mean))


def delong(score, label):
    """``(auc, variance)`` by DeLong's placement values, every pair compared (O(n^2)); a
    tied pair counts one half."""
    pos = [s for s, y in zip(score, label, strict=True) if y == 1]
    neg = [s for s, y in zip(score, label, strict=True) if y == 0]

    def psi(x, y):
        return 1.0 if x > y else 0.5 if x == y else 0.0

    v10 = [sum(psi(x, y) for y in neg) / len(neg) for x in pos]
    v01 = [sum(psi(x, y) for x in pos) / len(pos) for y in neg]
    auc = sum(v10) / len(pos)
    s10 = sum((v - auc) ** 2 for v in v10) / (len(pos) - 1)
    s01 = sum((v - auc) ** 2 for v in v01) / (len(neg) - 1)
    return auc, s10 / len(pos) + s01 / len(neg)


def ratio_stderr(a, b, weight):
    """Delta-method standard error of ``sum w a / sum w b`` over independent rows, a
    weight counting as repeated rows: ``sqrt(sum w (a_i - r b_i)^2) / |sum w b|``."""
    wa = sum(w * x for w, x in zip(weight, a, strict=True))
    wb = sum(w * y for w, y in zip(weight, b, strict=True))
    r = wa / wb
    spread = sum(w * (x - r * y) ** 2 for w, x, y in zip(weight, a, b, strict=True))
    return math.sqrt(spread) / abs(wb)


def paired_delong(score_a, score_b, label):
    """``(auc_b - auc_a, variance)`` by DeLong's paired test, every pair compared:
    ``(S10_AA + S10_BB - 2 S10_AB) / m + (S01_AA + S01_BB - 2 S01_AB) / n``."""

    def psi(x, y):
        return 1.0 if x > y else 0.5 if x == y else 0.0

    pos = [i for i, y in enumerate(label) if y == 1]
    neg = [i for i, y in enumerate(label) if y == 0]
    placements = {}
    for name, score in (("a", score_a), ("b", score_b)):
        v10 = [sum(psi(score[i], score[j]) for j in neg) / len(neg) for i in pos]
        v01 = [sum(psi(score[i], score[j]) for i in pos) / len(pos) for j in neg]
        placements[name] = (v10, v01, sum(v10) / len(pos))

    def cov(x, y, mx, my):
        return sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / (len(x) - 1)

    (a10, a01, auc_a), (b10, b01, auc_b) = placements["a"], placements["b"]
    s10 = cov(a10, a10, auc_a, auc_a) + cov(b10, b10, auc_b, auc_b) - 2 * cov(a10, b10, auc_a,
                                                                              auc_b)
    s01 = cov(a01, a01, auc_a, auc_a) + cov(b01, b01, auc_b, auc_b) - 2 * cov(a01, b01, auc_a,
                                                                              auc_b)
    return auc_b - auc_a, s10 / len(pos) + s01 / len(neg)


def user_cluster_stats(uids, preds, labels, compare=None, weights=None, level=0.95,
                       min_users=10, min_effective=2.0):
    """The intervals of one ``wuauc`` block's row values (and, with ``compare``, the paired
    ``logloss_diff`` and ``copc_diff``) with users as clusters, from the formulas
    (docs/statistics.md): per user ``u`` its weight ``n_u``, clicks ``c_u``, pred sum
    ``p_u``, logloss sum ``l_u`` (B's ``pb_u``, ``lb_u``); a ratio ``R = sum a_u / sum
    b_u`` has ``se = sqrt(sum (a_u - R b_u)^2) / |sum b_u| / sqrt(k)``, ``k = 1 - 2 sum
    w^3 / (sum w sum w^2) + sum w^2 / (sum w)^2`` of the same weights ``w_u``; the
    interval ``R exp(-/+ t se / R)`` (a difference: ``R -/+ t se``) with Student's t of
    ``(sum w_u)^2 / sum w_u^2 - 1`` degrees of
    freedom (scipy's quantile), ``w_u = n_u`` (``p_u`` for COPC and ``copc_diff``, whose
    degrees of freedom are the smaller of the two models'); None below ``min_users``
    users or ``min_effective``."""
    from scipy import stats as scipy_stats

    users: dict[object, list[float]] = {}
    for i, (u, p, y) in enumerate(zip(uids, preds, labels, strict=True)):
        w = 1.0 if weights is None else float(weights[i])
        b = 0.0 if compare is None else float(compare[i])
        s = users.setdefault(u, [0.0] * 6)
        lb = w * _row_logloss(b, int(y)) if compare is not None else 0.0
        for k, value in enumerate((w, w * int(y), w * float(p),
                                   w * _row_logloss(float(p), int(y)), w * b, lb)):
            s[k] += value
    U = len(users)
    n = [s[0] for s in users.values()]
    c = [s[1] for s in users.values()]
    p = [s[2] for s in users.values()]
    l_ = [s[3] for s in users.values()]
    pb = [s[4] for s in users.values()]
    lb = [s[5] for s in users.values()]

    def kish(w):
        return sum(w) ** 2 / sum(x * x for x in w)

    def interval(value, spread_sq, denominator, w, low, high, effective=None, log=False):
        effective = kish(w) if effective is None else effective
        if U < min_users or effective < min_effective or spread_sq <= 0:
            return None, math.nan
        total, square, cube = sum(w), sum(x * x for x in w), sum(x ** 3 for x in w)
        k = 1 - 2 * cube / (total * square) + square / total ** 2
        se = math.sqrt(spread_sq) / abs(denominator) / math.sqrt(k)
        df = min(effective, U) - 1
        t = scipy_stats.t.ppf(0.5 + level / 2, df)
        p_value = 2 * scipy_stats.t.sf(abs(value) / se, df)
        if log:  # a positive ratio: value * exp(-/+ t se / value)
            return (value * math.exp(-t * se / value),
                    min(high, value * math.exp(t * se / value))), p_value
        return (max(low, value - t * se), min(high, value + t * se)), p_value

    def ratio(a, b, w, low, high):
        r = sum(a) / sum(b)
        spread = sum((x - r * y) ** 2 for x, y in zip(a, b, strict=True))
        return r, interval(r, spread, sum(b), w, low, high, log=True)

    out = {}
    for name, a, b, w, bounds in (("actual_ctr", c, n, n, (0, 1)),
                                  ("predicted_ctr", p, n, n, (0, 1)),
                                  ("copc", c, p, p, (0, math.inf)),
                                  ("logloss", l_, n, n, (0, math.inf))):
        value, (pair, _) = ratio(a, b, w, *bounds)
        out[name] = (value, pair)
    if compare is not None:
        d = [y - x for x, y in zip(l_, lb, strict=True)]
        diff = sum(d) / sum(n)
        spread = sum((x - diff * y) ** 2 for x, y in zip(d, n, strict=True))
        out["logloss_diff"] = (diff, *interval(diff, spread, sum(n), n, -math.inf, math.inf))
        clicks, pa_sum, pb_sum = sum(c), sum(p), sum(pb)
        copc_a, copc_b = clicks / pa_sum, clicks / pb_sum
        e = [(ci - copc_b * b) / pb_sum - (ci - copc_a * a) / pa_sum
             for ci, a, b in zip(c, p, pb, strict=True)]
        out["copc_diff"] = (copc_b - copc_a, *interval(  # k of A's pred sums
            copc_b - copc_a, sum(x * x for x in e), 1.0, p, -math.inf, math.inf,
            min(kish(p), kish(pb))))
    return out


def _row_logloss(pred, label):
    q = min(max(pred, CLIP), 1 - CLIP)
    return -math.log(q) if label == 1 else -math.log(1 - q)
