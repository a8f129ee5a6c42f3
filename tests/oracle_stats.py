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


# -- issue 32: every value's interval and paired difference (written from the formulas) ----

def wilson(successes, n, z):
    """Wilson's score interval of ``successes / n`` (no edge modification)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def row_terms(pred, label, weight=None, importance=False):
    """Per row ``(w, v, p, y, ce)``: ``v`` the weight, or its square under importance."""
    rows = []
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        q = min(max(float(p), CLIP), 1 - CLIP)
        y = float(y)
        ce = -(y * math.log(q) + (1 - y) * math.log(1 - q))
        rows.append((w, w * w if importance else w, float(p), y, ce))
    return rows


def mean_stderr(rows, value):
    """``(mean, se)`` of ``sum w a / sum w`` with ``a = value(row)``: ``sqrt(sum v (a -
    mean)^2) / sum w``."""
    total = sum(w for w, *_ in rows)
    mean = sum(w * value(r) for r in rows for w in [r[0]]) / total
    spread = sum(r[1] * (value(r) - mean) ** 2 for r in rows)
    return mean, math.sqrt(spread) / total


def entropy(r):
    return -(r * math.log(r) + (1 - r) * math.log(1 - r))


def ne_stderr(rows):
    """NE = logloss / H(ctr) by the delta method: each row's ``(ce - L) / H - NE H'(r) (y
    - r) / H`` over the total weight, ``H'(r) = ln((1 - r) / r)``."""
    total = sum(r[0] for r in rows)
    loss = sum(r[0] * r[4] for r in rows) / total
    ctr = sum(r[0] * r[3] for r in rows) / total
    h = entropy(ctr)
    ne = loss / h
    slope = math.log((1 - ctr) / ctr)
    spread = sum(r[1] * ((r[4] - loss) / h - ne * slope * (r[3] - ctr) / h) ** 2 for r in rows)
    return ne, math.sqrt(spread) / total


def paired_stderrs(pred_a, pred_b, label, weight=None, importance=False):
    """``{name: (B - A, se)}`` for logloss, ne and copc: the delta method over each row's
    paired influence (the difference of the two models' per-row influences)."""
    ra = row_terms(pred_a, label, weight, importance)
    rb = row_terms(pred_b, label, weight, importance)
    total = sum(r[0] for r in ra)
    la = sum(r[0] * r[4] for r in ra) / total
    lb = sum(r[0] * r[4] for r in rb) / total
    ctr = sum(r[0] * r[3] for r in ra) / total
    h = entropy(ctr)
    slope = math.log((1 - ctr) / ctr)
    pa = sum(r[0] * r[2] for r in ra)
    pb = sum(r[0] * r[2] for r in rb)
    ca, cb = ctr * total / pa, ctr * total / pb
    out = {}
    d = lb - la
    out["logloss"] = (d, math.sqrt(sum(a[1] * (b[4] - a[4] - d) ** 2
                                       for a, b in zip(ra, rb, strict=True))) / total)
    ne_d = d / h
    out["ne"] = (ne_d, math.sqrt(sum(
        a[1] * ((b[4] - a[4] - d) / h - ne_d * slope * (a[3] - ctr) / h) ** 2
        for a, b in zip(ra, rb, strict=True))) / total)
    out["copc"] = (cb - ca, math.sqrt(sum(
        a[1] * ((a[3] - cb * b[2]) / pb - (a[3] - ca * a[2]) / pa) ** 2
        for a, b in zip(ra, rb, strict=True))))
    return out


def average_precision_stderr(score, label, weight=None, importance=False):
    """``(AP, se)`` of average precision (ties one threshold) by its influence function,
    row by row: a row ``(y, s)`` moves ``AP = E[Y R(S)] / pi`` by ``(y R(s) + sum_{j: s_j
    <= s} w_j y_j (y - R(s_j)) / cnt(s_j) - AP y) / pi``, ``R(s)`` the precision at
    threshold ``s`` and ``cnt(s)`` the weight at or above it
    (:func:`average_precision_influences`); ``se = sqrt(sum v IF^2) / W`` (O(n^2))."""
    influences, ap = average_precision_influences(score, label, weight)
    total = len(score) if weight is None else sum(float(v) for v in weight)
    spread = sum((part * part if importance else part) * value**2
                 for part, value in _row_parts(influences, label, weight))
    return ap, math.sqrt(spread) / total


def _row_parts(influences, label, weight):
    """Each row's ``(weight of its positive part, its IF)`` and ``(weight of its negative
    part, its IF)``, parts of weight 0 left out."""
    for i, (i1, i0) in enumerate(influences):
        w = 1.0 if weight is None else float(weight[i])
        for part, value in ((w * float(label[i]), i1), (w * (1 - float(label[i])), i0)):
            if part != 0:
                yield part, value


def auc_score_interval(auc, positives, negatives, z):
    """Newcombe's score-type interval with Hanley & McNeil's variance at ``theta``, by a
    fine grid (independent of the bisection)."""

    def var(t):
        q1, q2 = t / (2 - t), 2 * t * t / (1 + t)
        return (t * (1 - t) + (positives - 1) * (q1 - t * t)
                + (negatives - 1) * (q2 - t * t)) / (positives * negatives)

    inside = [k / 200_000 for k in range(200_001)
              if (auc - k / 200_000) ** 2 <= z * z * var(k / 200_000)]
    return min(inside), max(inside)


def average_precision_influences(score, label, weight=None):
    """Per row ``(IF of its positive part, IF of its negative part)`` of average precision
    (:func:`average_precision_stderr`'s formula), and the AP."""
    n = len(score)
    w = [1.0 if weight is None else float(weight[i]) for i in range(n)]
    y = [float(v) for v in label]
    total = sum(w)
    positives = sum(wi * yi for wi, yi in zip(w, y, strict=True))
    pi = positives / total
    prec, cnt = {}, {}
    for s in set(score):
        tp = sum(w[j] * y[j] for j in range(n) if score[j] >= s)
        cnt[s] = sum(w[j] for j in range(n) if score[j] >= s)
        prec[s] = tp / cnt[s]
    ap = sum(w[i] * y[i] * prec[score[i]] for i in range(n)) / positives
    out = []
    for i in range(n):
        s = score[i]
        parts = []
        for part in (1.0, 0.0):
            c = sum(w[j] * y[j] * (part - prec[score[j]]) / cnt[score[j]]
                    for j in range(n) if score[j] <= s)
            parts.append((part * prec[s] + c - ap * part) / pi)
        out.append(tuple(parts))
    return out, ap


def ece_influences(pred, label, table_size, weight=None, points=1000, groups=20):
    """Per row ``(IF positive part, IF negative part)`` of ECE: a row of calibration group
    ``k`` moves ``sum_k |G_k| / W`` by ``s_k (m - y) - ECE`` (``m`` its bucket's midpoint,
    ``s_k`` the sign of the group's gap); and the ECE. Buckets go to ``points`` bins by
    the weight below them, bins to ``groups`` groups by the weight below them."""
    n = len(pred)
    w = [1.0 if weight is None else float(weight[i]) for i in range(n)]
    y = [float(v) for v in label]
    bucket = [min(int(float(p) * table_size), table_size - 1) for p in pred]
    rows = {}
    for b, wi in zip(bucket, w, strict=True):
        rows[b] = rows.get(b, 0.0) + wi
    total = sum(w)
    below, bin_of = 0.0, {}
    for b in sorted(rows):
        bin_of[b] = min(int(below * points / total), points - 1)
        below += rows[b]
    bin_rows = {}
    for b, r in rows.items():
        bin_rows[bin_of[b]] = bin_rows.get(bin_of[b], 0.0) + r
    running, last, group, group_of_bin = 0.0, -1, -1, {}
    for k in sorted(bin_rows):
        index = min(int(running * groups / total), groups - 1)
        if index != last:
            group, last = group + 1, index
        group_of_bin[k] = group
        running += bin_rows[k]
    gap = {}
    for i in range(n):
        g = group_of_bin[bin_of[bucket[i]]]
        mid = (bucket[i] + 0.5) / table_size
        gap[g] = gap.get(g, 0.0) + w[i] * (mid - y[i])
    ece = sum(abs(v) for v in gap.values()) / total
    out = []
    for i in range(n):
        g = group_of_bin[bin_of[bucket[i]]]
        sign = (gap[g] > 0) - (gap[g] < 0)
        mid = (bucket[i] + 0.5) / table_size
        out.append((sign * (mid - 1) - ece, sign * mid - ece))
    return out, ece


def paired_table_stderr(influences_a, influences_b, label, weight=None, importance=False):
    """``sqrt(sum v1 (IF1_B - IF1_A)^2 + v0 (IF0_B - IF0_A)^2) / W`` over the rows, ``v1 =
    w y``, ``v0 = w (1 - y)`` (squared under importance weights)."""
    total = spread = 0.0
    for i, ((a1, a0), (b1, b0)) in enumerate(zip(influences_a, influences_b, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        v1, v0 = w * float(label[i]), w * (1 - float(label[i]))
        if importance:
            v1, v0 = v1 * v1, v0 * v0
        spread += v1 * (b1 - a1) ** 2 + v0 * (b0 - a0) ** 2
        total += w
    return math.sqrt(spread) / total


def hall_interval(mean, stderr, skewness, z):
    """Hall's (1992) interval: ``mean - se g^-1(+/-z)``, ``g(t) = t + a t^2 + a^2 t^3 / 3
    + a / 2``, ``a = skewness / 3``; ``g^-1`` by bisection (not the closed form)."""
    a = skewness / 3

    def inverse(x):
        low, high = -1e3, 1e3
        for _ in range(200):
            mid = (low + high) / 2
            if mid + a * mid * mid + a * a * mid**3 / 3 + a / 2 > x:
                high = mid
            else:
                low = mid
        return (low + high) / 2

    return mean - stderr * inverse(z), mean - stderr * inverse(-z)


def mean_skewness(rows, importance=False):
    """The skewness of a weighted mean of preds: ``sum w^k (p - m)^3 / (sum w^j (p -
    m)^2)^(3/2)`` with ``k, j = 1, 1`` (frequency) or ``3, 2`` (importance)."""
    total = sum(r[0] for r in rows)
    m = sum(r[0] * r[2] for r in rows) / total
    third = sum((r[0] ** 3 if importance else r[0]) * (r[2] - m) ** 3 for r in rows)
    second = sum(r[1] * (r[2] - m) ** 2 for r in rows)
    return third / second**1.5
def user_cluster_stats(uids, preds, labels, compare=None, weights=None, level=0.95,
                       min_users=10, min_effective=2.0):
    """The intervals of one ``wuauc`` block's row values (and, with ``compare``, the paired
    ``logloss_diff`` and ``copc_diff``) with users as clusters, from the formulas
    (docs/statistics.md): per user ``u`` its weight ``n_u``, clicks ``c_u``, pred sum
    ``p_u``, logloss sum ``l_u`` (B's ``pb_u``, ``lb_u``); a ratio ``R = sum a_u / sum
    b_u`` has ``se = sqrt(sum (a_u - R b_u)^2) / |sum b_u| / sqrt(k)``, ``k = 1 - 2 sum
    w^3 / (sum w sum w^2) + sum w^2 / (sum w)^2`` of the same weights ``w_u``; the
    interval ``R exp(-/+ t se / R)`` (``predicted_ctr``: ``R / (1 +/- t se / R)``, its
    upper end the bound from ``t se / R >= 1``; a difference: ``R -/+ t se``) with
    Student's t of
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

    def interval(value, spread_sq, denominator, w, low, high, effective=None, log=False,
                 reciprocal=False):
        effective = kish(w) if effective is None else effective
        if U < min_users or effective < min_effective or spread_sq <= 0:
            return None, math.nan
        total, square, cube = sum(w), sum(x * x for x in w), sum(x ** 3 for x in w)
        k = 1 - 2 * cube / (total * square) + square / total ** 2
        se = math.sqrt(spread_sq) / abs(denominator) / math.sqrt(k)
        df = min(effective, U) - 1
        t = scipy_stats.t.ppf(0.5 + level / 2, df)
        p_value = 2 * scipy_stats.t.sf(abs(value) / se, df)
        if reciprocal:  # the reciprocal scale: value / (1 +/- t se / value)
            half = t * se / value
            return (value / (1 + half), high if half >= 1 else min(high, value / (1 - half))
                    ), p_value
        if log:  # a positive ratio: value * exp(-/+ t se / value)
            return (value * math.exp(-t * se / value),
                    min(high, value * math.exp(t * se / value))), p_value
        return (max(low, value - t * se), min(high, value + t * se)), p_value

    def ratio(a, b, w, low, high, reciprocal=False):
        r = sum(a) / sum(b)
        spread = sum((x - r * y) ** 2 for x, y in zip(a, b, strict=True))
        return r, interval(r, spread, sum(b), w, low, high, log=True, reciprocal=reciprocal)

    out = {}
    for name, a, b, w, bounds in (("actual_ctr", c, n, n, (0, 1)),
                                  ("predicted_ctr", p, n, n, (0, 1)),
                                  ("copc", c, p, p, (0, math.inf)),
                                  ("logloss", l_, n, n, (0, math.inf))):
        value, (pair, _) = ratio(a, b, w, *bounds, reciprocal=name == "predicted_ctr")
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


def average_precision_terms(score, label, weight=None, importance=False):
    """Satterthwaite's effective number of rows behind AP's influence spread, ``(sum a)^2 /
    sum a^2`` with a row's ``a = v IF^2`` (:func:`average_precision_influences`): a row
    of frequency weight ``w`` is ``w`` rows of ``IF^2`` each, under importance weights one
    of ``w^2 IF^2``."""
    influences, _ = average_precision_influences(score, label, weight)
    total = fourth = 0.0
    for part, value in _row_parts(influences, label, weight):
        a = part * part * value**2 if importance else part * value**2
        total += a
        fourth += a * a if importance else part * value**4
    return total * total / fourth


def average_precision_without_self(score, label, weight=None):
    """AP with each positive row left out of its own precision: the mean over positives
    (weighted) of the precision of the other rows at or above its score (0 with none),
    cut to [0, 1]; row by row."""
    n = len(score)
    w = [1.0 if weight is None else float(weight[i]) for i in range(n)]
    y = [float(v) for v in label]
    positives = sum(wi * yi for wi, yi in zip(w, y, strict=True))
    out = 0.0
    for i in range(n):
        if y[i] == 0:
            continue
        tp = sum(w[j] * y[j] for j in range(n) if j != i and score[j] >= score[i])
        cnt = sum(w[j] for j in range(n) if j != i and score[j] >= score[i])
        out += w[i] * y[i] * (min(1.0, max(0.0, tp / cnt)) if cnt > 0 else 0.0)
    return out / positives


def paired_table_terms(influences_a, influences_b, label, weight=None, importance=False):
    """Satterthwaite's effective number of rows behind :func:`paired_table_stderr`'s
    spread: ``(sum a)^2 / sum a^2``, a row's ``a = v1 d1^2 + v0 d0^2`` under importance
    weights (one observation), ``w`` rows of ``d^2`` each under frequency weights."""
    total = fourth = 0.0
    for i, ((a1, a0), (b1, b0)) in enumerate(zip(influences_a, influences_b, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        v1, v0 = w * float(label[i]), w * (1 - float(label[i]))
        d1, d0 = (b1 - a1) ** 2, (b0 - a0) ** 2
        if importance:
            a = v1 * v1 * d1 + v0 * v0 * d0
            total, fourth = total + a, fourth + a * a
        else:
            total += v1 * d1 + v0 * d0
            fourth += v1 * d1 * d1 + v0 * d0 * d0
    return total * total / fourth
