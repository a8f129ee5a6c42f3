#!/usr/bin/env bash
# kind_copy_check.sh: adding a kind is one folder, one test fixture, one docs page and one
# registry line. In a temporary copy of this tree, the `pairwise` kind is copied as a new
# kind `pairwise2` (its folder mpieval/kinds/pairwise/, its fixture tests/kinds/pairwise.py,
# its page docs/kinds/pairwise.md, the names inside renamed) and its folder's name added
# to FOLDERS; nothing else changes. Then the fast test suite (serial, -v) and the strict
# docs build run in the copy, and the script says which files changed outside the copied
# three (the registry line's file only) and which tests ran the new kind.
#
#   scripts/kind_copy_check.sh [PYTEST ARGS...]     (default: the whole fast suite)
#
# The copy runs on a venv of its own that sees this tree's .venv's packages (not its
# editable install of mpieval, which points here) and the built mpieval._core; KEEP=1
# keeps the copy (printed) instead of removing it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.venv
work=$(mktemp -d /tmp/mpieval-kind-copy.XXXXXX)
if [ "${KEEP:-0}" = 1 ]; then echo "== the copy: $work/tree"; else trap 'rm -rf "$work"' EXIT; fi
copy=$work/tree
mkdir -p "$copy"

echo "== a copy of the tree (its files as they are now)"
(cd "$root" && git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
    | tar --null -T - -cf -) | tar -xf - -C "$copy"
git -C "$copy" init -q
git -C "$copy" add -A
git -C "$copy" -c user.name=check -c user.email=check@localhost commit -qm copy

echo "== the new kind pairwise2: a copied folder, fixture and page, and one registry line"
cp -r "$copy/mpieval/kinds/pairwise" "$copy/mpieval/kinds/pairwise2"
cp "$copy/tests/kinds/pairwise.py" "$copy/tests/kinds/pairwise2.py"
cp "$copy/docs/kinds/pairwise.md" "$copy/docs/kinds/pairwise2.md"
find "$copy/mpieval/kinds/pairwise2" "$copy/tests/kinds/pairwise2.py" \
    "$copy/docs/kinds/pairwise2.md" -type f -print0 \
    | xargs -0 sed -i -e 's/pairwise/pairwise2/g' -e 's/Pairwise/Pairwise2/g' \
                      -e 's/pair_click/pair2_click/g'  # the demo's metric name
registry=$copy/mpieval/kinds/__init__.py
sed -i -E 's/^(FOLDERS = \(.*)\)$/\1, "pairwise2")/' "$registry"
grep -q '"pairwise2")$' "$registry" || { echo "FOLDERS not found in $registry" >&2; exit 1; }
outside=$(git -C "$copy" status --porcelain --untracked-files=all \
    | awk '{print $2}' \
    | grep -v -e '^mpieval/kinds/pairwise2/' -e '^tests/kinds/pairwise2\.py$' \
              -e '^docs/kinds/pairwise2\.md$' || true)
echo "files changed outside the new folder, fixture and page: $(echo "$outside" | grep -c . || true)"
echo "$outside" | sed 's/^/  /'
git -C "$copy" diff --unified=0 -- "$(echo "$outside" | head -1)" | sed -n '5,$p'

echo "== a venv for the copy"
cd "$copy"
"$venv/bin/python" -m venv --without-pip "$work/venv"
py=$work/venv/bin/python
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
parent=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
printf '%s\n%s\n' "$copy" "$parent" >"$site/mpieval_copy.pth"
cp "$parent"/mpieval/_core.*.so "$copy/mpieval/"
printf '#!%s\nimport sys\nfrom mpieval.cli import command\nsys.exit(command())\n' "$py" \
    >"$work/venv/bin/mpieval"
chmod +x "$work/venv/bin/mpieval"
for tool in "$venv"/bin/mpiexec* "$venv"/bin/hydra_*; do  # MPI's launcher and its helpers
    ln -s "$tool" "$work/venv/bin/"
done
for lib in "$venv"/lib/*; do  # MPI from the mpich wheel, looked for in sys.prefix/lib
    case $lib in */python3*) ;; *) ln -s "$lib" "$work/venv/lib/" ;; esac
done
"$py" -c "import mpieval, sys; assert mpieval.__file__.startswith('$copy'), mpieval.__file__
from mpieval import Pairwise2Metric, Pairwise2Result
print('mpieval from the copy;', Pairwise2Metric.__module__, Pairwise2Result.__name__)"

echo "== docs: sphinx-build, strict"
"$py" -m sphinx -W --keep-going -n -q -b dirhtml -d "$work/doctrees" docs "$work/site"
grep -q pairwise2 "$work/site/schema/results.schema.json"
test -f "$work/site/kinds/pairwise2/index.html"
echo "built; the site has the page kinds/pairwise2/ and the schema's pairwise2 block"

echo "== the fast test suite, serial"
status=0
MPIEVAL_TEST=1 PYTHONDONTWRITEBYTECODE=1 nice "$py" -m pytest -v -p no:cacheprovider \
    --timeout=600 --timeout-method=thread --with-mpi -m "not slow" "${@:-tests}" \
    >"$work/pytest.log" 2>&1 || status=$?
tail -3 "$work/pytest.log"
echo "== tests that ran pairwise2, by file"
grep -oE '^tests/[^ ]*pairwise2[^ ]*' "$work/pytest.log" | sed -E 's/\[.*//' | sort | uniq -c || true
if [ "$status" != 0 ]; then
    grep -E '^(FAILED|ERROR)' "$work/pytest.log" || true
    [ "${KEEP:-0}" = 1 ] && echo "log: $work/pytest.log"
fi
exit "$status"
