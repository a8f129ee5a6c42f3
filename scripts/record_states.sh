#!/usr/bin/env bash
# Record a saved run of this version's state format under tests/data/states/format-N
# (N: mpieval.metric.STATE_FORMAT), with the results it must merge to: run when
# STATE_FORMAT is raised, so that tests/test_state_formats.py keeps reading every earlier
# format. Two ranks, so that a merge reads more than one state.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
format=$("$PY" -c "from mpieval.metric import STATE_FORMAT; print(STATE_FORMAT)")
out=tests/data/states/format-$format
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m mpieval demo --rows 2000 --dir "$work/demo" >/dev/null 2>&1
rm -rf "$out"
.venv/bin/mpiexec -n 2 "$PY" -m mpieval eval --config tests/data/states/metrics.toml \
    --save-state "$out" --json "$work/results.json" "$work"/demo/part-* >/dev/null 2>&1
sed -i "s#$work/##g" "$out/run.json"  # the run's paths, not this machine's
"$PY" - "$work/results.json" "$out/results.json" <<'PYTHON'
import json, sys
results = json.load(open(sys.argv[1]))
results.pop("run")
json.dump(results, open(sys.argv[2], "w"), indent=1, sort_keys=True)
PYTHON
du -sh "$out"
