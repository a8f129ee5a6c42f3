"""The JSON Schema (draft 2020-12) of a results file (``mpieval eval --json``), assembled
from the kinds' fragments.

The shared parts (the top-level object, ``interval``, ``run``) are
``mpieval/results.schema.json``; each kind's block is the fragment in its folder,
``mpieval/kinds/<kind>/schema.json`` (:meth:`mpieval.declaration.Kind.schema`): its
``$defs``, the kind's own named after it (``auc``) and any others it refers to prefixed
with it (``auc_compare``). The docs site serves the assembly as
``schema/results.schema.json``.
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
        schema["additionalProperties"]["oneOf"].append({"$ref": f"#/$defs/{kind.name}"})
    return schema


def text() -> str:
    """The schema as the file the docs site serves."""
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"
