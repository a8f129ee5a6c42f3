"""Plain-Python oracle of the ``auc`` kind, written from the seed's C++ (loops, no numpy)."""

from __future__ import annotations

import math


def table_of(pred, label, table_size, weight=None):
    """The two rows of the histogram, as Python lists of floats."""
    table = [[0.0] * table_size, [0.0] * table_size]
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        bucket = min(math.floor(float(p) * table_size), table_size - 1)
        table[0][bucket] += w * (1.0 - float(y))
        table[1][bucket] += w * float(y)
    return table


def auc(table):
    area = fp = tp = 0.0
    for i in range(len(table[0]) - 1, -1, -1):
        newfp = fp + table[0][i]
        newtp = tp + table[1][i]
        area += (newfp - fp) * (tp + newtp) / 2
        fp, tp = newfp, newtp
    return area / (fp * tp) if fp * tp > 0 else math.nan


def bucket_error(table):
    k_max_span, k_relative_error_bound = 0.01, 0.05
    table_size = len(table[0])
    last_ctr = -1.0
    impression_sum = ctr_sum = click_sum = error_sum = error_count = 0.0
    for i in range(table_size):
        click = table[1][i]
        show = table[0][i] + table[1][i]
        ctr = i / table_size
        if abs(ctr - last_ctr) > k_max_span:
            last_ctr = ctr
            impression_sum = ctr_sum = click_sum = 0.0
        impression_sum += show
        ctr_sum += ctr * show
        click_sum += click
        try:
            adjust_ctr = ctr_sum / impression_sum
            relative_error = math.sqrt((1 - adjust_ctr) / (adjust_ctr * impression_sum))
        except ZeroDivisionError:  # C gives NaN or inf here: never below the bound
            continue
        if relative_error < k_relative_error_bound:
            actual_ctr = click_sum / impression_sum
            error_sum += abs(actual_ctr / adjust_ctr - 1) * impression_sum
            error_count += impression_sum
            last_ctr = -1.0
    return error_sum / error_count if error_count > 0 else math.nan


def metrics(pred, label, table_size, weight=None):
    """Every value of the auc kind, as a dict of floats."""
    table = table_of(pred, label, table_size, weight)
    abserr = sqrerr = pred_sum = 0.0
    for i, (p, y) in enumerate(zip(pred, label, strict=True)):
        w = 1.0 if weight is None else float(weight[i])
        abserr += w * abs(float(p) - float(y))
        sqrerr += w * (float(p) - float(y)) ** 2
        pred_sum += w * float(p)
    positives = sum(table[1])
    num = positives + sum(table[0])
    if num == 0:
        nan = math.nan
        return dict(auc=nan, bucket_error=nan, rmse=nan, mae=nan, num=0.0, actual_ctr=nan,
                    predicted_ctr=nan, copc=nan)
    actual, predicted = positives / num, pred_sum / num
    return dict(
        auc=auc(table),
        bucket_error=bucket_error(table),
        rmse=math.sqrt(sqrerr / num),
        mae=abserr / num,
        num=num,
        actual_ctr=actual,
        predicted_ctr=predicted,
        copc=actual / predicted if predicted else math.nan,
    )
