"""Spark against Spark's own recipes and mpieval eval (issue 35): time and peak memory.

    python scripts/bench_spark.py --rows 10000000 [--dir bench-data/spark]

Writes Parquet rows shaped like traffic (text uids, a Zipf head of users and one heavy
user of 10% of the rows, preds near the CTR, three tags), then runs each case in a process
of its own and samples the resident memory of its whole process tree (the JVM and the
Python workers too) every 0.2 s:

- ``mpieval``: ``mpieval eval --metrics auc,wuauc --tag slot`` (one process);
- ``spark``: ``mpieval.spark.evaluate`` of the same metrics in ``local[*]``;
- ``bcm``: Spark ML's ``BinaryClassificationEvaluator`` (``BinaryClassificationMetrics``),
  AUC alone;
- ``pandas``: ``groupBy(uid).applyInPandas`` with scikit-learn's ``roc_auc_score`` per
  user (UAUC: their mean over users with both classes).

Prints one table row per case (seconds, peak MB, AUC and UAUC) and checks that mpieval's
two engines agree to the bit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

CASES = ("mpieval", "spark", "bcm", "pandas")


def write_rows(path: Path, rows: int, seed: int = 35) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    writer = None
    step = 1_000_000
    for start in range(0, rows, step):
        n = min(step, rows - start)
        users = rng.zipf(1.3, n) % 200_000
        users[rng.random(n) < 0.1] = 999_999_999  # the heavy user: 10% of the rows
        ctr = rng.beta(2, 30, n)
        label = (rng.random(n) < ctr).astype(np.int8)
        pred = np.clip(ctr * np.exp(rng.normal(0, 0.5, n)), 1e-6, 1 - 1e-6)
        batch = pa.table({"uid": pa.array(np.char.add("u", users.astype(str))),
                          "pred": pred, "label": label,
                          "slot": pa.array(rng.choice(["feed", "search", "push"], n))})
        writer = writer or pq.ParquetWriter(path, batch.schema)
        writer.write_table(batch)
    assert writer is not None
    writer.close()


def session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "3g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_case(case: str, path: Path, out: Path) -> None:
    """One case, in this process; its values go to ``out`` (JSON)."""
    start = time.perf_counter()
    values: dict[str, float] = {}
    if case == "mpieval":
        json_path = out.with_suffix(".eval.json")
        subprocess.run([sys.executable, "-m", "mpieval", "eval", str(path), "--metrics",
                        "auc,wuauc", "--tag", "slot", "--json", str(json_path)], check=True,
                       stdout=subprocess.DEVNULL)
        result = json.loads(json_path.read_text())
        del result["run"]
        values = {"auc": result["auc"]["auc"], "uauc": result["wuauc"]["tags"]["all"]["uauc"],
                  "json": json.dumps(result, sort_keys=True)}
    elif case == "spark":
        from mpieval.spark import evaluate

        result = evaluate(session().read.parquet(str(path)), metrics="auc,wuauc", tag="slot")
        data = result.to_dict()
        values = {"auc": data["auc"]["auc"], "uauc": data["wuauc"]["tags"]["all"]["uauc"],
                  "json": json.dumps(data, sort_keys=True)}
    elif case == "bcm":
        from pyspark.ml.evaluation import BinaryClassificationEvaluator
        from pyspark.sql import functions

        df = session().read.parquet(str(path)).withColumn("label", functions.col("label")
                                                          .cast("double"))
        values = {"auc": BinaryClassificationEvaluator(
            rawPredictionCol="pred", labelCol="label", metricName="areaUnderROC").evaluate(df)}
    else:
        import pandas as pd
        from sklearn.metrics import roc_auc_score

        def user_auc(rows: pd.DataFrame) -> pd.DataFrame:
            if rows["label"].nunique() < 2:
                return pd.DataFrame({"auc": []})
            return pd.DataFrame({"auc": [roc_auc_score(rows["label"], rows["pred"])]})

        aucs = (session().read.parquet(str(path)).groupBy("uid")
                .applyInPandas(user_auc, "auc double").agg({"auc": "avg"}).collect())
        values = {"uauc": aucs[0][0]}
    values["seconds"] = time.perf_counter() - start
    out.write_text(json.dumps(values))


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            pages = int((Path("/proc") / str(current) / "statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        total += pages * os.sysconf("SC_PAGE_SIZE")
    return total


def measured(case: str, path: Path, directory: Path) -> dict[str, float]:
    out = directory / f"{case}.json"
    process = subprocess.Popen([sys.executable, __file__, "--case", case, "--data", str(path),
                                "--out", str(out)])
    peak = 0

    def sample() -> None:
        nonlocal peak
        while process.poll() is None:
            peak = max(peak, tree_rss(process.pid))
            time.sleep(0.2)

    watcher = threading.Thread(target=sample)
    watcher.start()
    status = process.wait()
    watcher.join()
    if status != 0:
        return {"failed": status, "peak_mb": peak / 1e6}
    return {**json.loads(out.read_text()), "peak_mb": peak / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", default="bench-data/spark")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        run_case(args.case, Path(args.data), Path(args.out))
        return
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"rows-{args.rows}.parquet"
    if not path.exists():
        write_rows(path, args.rows)
    results = {case: measured(case, path, directory) for case in args.cases.split(",")}
    print(f"{args.rows:,} rows, text uids, a heavy user of 10% of the rows")
    print("| case | seconds | peak MB | AUC | UAUC |\n| --- | --- | --- | --- | --- |")
    for case, values in results.items():
        if "failed" in values:
            print(f"| {case} | failed (status {values['failed']}) | "
                  f"{values['peak_mb']:.0f} | | |")
            continue
        print(f"| {case} | {values['seconds']:.1f} | {values['peak_mb']:.0f} | "
              f"{values.get('auc', '')} | {values.get('uauc', '')} |")
    if "json" in results.get("mpieval", {}) and "json" in results.get("spark", {}):
        same = results["mpieval"]["json"] == results["spark"]["json"]
        print(f"mpieval eval and mpieval.spark: {'the same bits' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
