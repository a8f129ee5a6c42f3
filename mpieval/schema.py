"""The JSON Schema (draft 2020-12) of a results file (``mpieval eval --json``), assembled
from the kinds' fragments.

The shared parts (the top-level object, ``interval``, ``run``) are
``mpieval/results.schema.json``; each kind's block is the fragment in its folder,
``mpieval/kinds/<kind>/schema.json`` (:meth:`mpieval.declaration.Kind.schema`): its
``$defs``, the kind's own named after it (``auc``) and any others it refers to prefixed
with it (``auc_compare``). Every kind's block may hold ``slices`` (``--slice``,
:mod:`mpieval.slices`): the assembly adds it to each, each slice the kind's own block with
its ``rows``, or a ``too_small`` slice (the shared ``slice_too_small``). The docs site
serves the assembly as ``schema/results.schema.json``.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from mpieval.kinds import KINDS


def results_schema() -> dict[str, Any]:
    """The whole schema: the shared parts, every registered kind's ``$defs``, and a block
    of any metric one of the kinds' blocks."""
    schema: dict[str, Any] = json.loads(
        files("mpieval").joinpath("results.schema.json").read_text(encoding="utf-8"))
    for kind in KINDS.values():
        schema["$defs"].update(kind.schema()["$defs"])
        schema["$defs"][kind.name]["properties"]["slices"] = _slices(kind.name)
        schema["additionalProperties"]["oneOf"].append({"$ref": f"#/$defs/{kind.name}"})
    return schema


_ONE = "[^ \t\n=*]+=[^ \t\n=*]+"  # COL=VALUE: no blank, = or * in either


def _slices(kind: str) -> dict[str, Any]:
    """The ``slices`` of a block of ``kind``: by ``COL=VALUE`` (``a=x*b=y``), each the
    kind's block over the slice's rows with ``rows``, or a slice too small for values."""
    return {"type": "object",
            "propertyNames": {"pattern": f"^{_ONE}(\\*{_ONE})?$"},
            "additionalProperties": {"oneOf": [
                {"$ref": "#/$defs/slice_too_small"},
                {"allOf": [{"$ref": f"#/$defs/{kind}"}, {"$ref": "#/$defs/slice_rows"}]}]}}


def text() -> str:
    """The schema as the file the docs site serves."""
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"
