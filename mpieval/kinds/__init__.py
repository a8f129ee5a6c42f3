"""The registry of metric kinds: one folder each, listed here.

A kind's folder holds everything of it: its declaration (``KIND`` in the folder's
``__init__``: inputs, options, flags, JSON names; :class:`mpieval.declaration.Kind`), its
metric class and result (``metric``), its kernels and its report section. Adding a kind
is a new folder and its name in :data:`FOLDERS`; the command line, the config reader and
the report find it here.
"""

from __future__ import annotations

import importlib

from mpieval.declaration import Kind, check_shared_options
from mpieval.errors import InputError, KindUnavailable

FOLDERS = ("auc", "wuauc", "pn", "pairwise", "ranking")

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (importlib.import_module(f"mpieval.kinds.{folder}").KIND for folder in FOLDERS)
}
check_shared_options(KINDS.values())  # one flag per option name: one declaration of it


def kind_named(name: str) -> Kind:
    """The kind called ``name``; an unknown name is an input error."""
    try:
        return KINDS[name]
    except KeyError:
        raise InputError(
            "kind", f"unknown metric kind {name!r} (known: {', '.join(KINDS)})"
        ) from None


def available(name: str) -> bool:
    """Whether the kind's metric class can be imported in this build."""
    try:
        KINDS[name].load()
    except KindUnavailable:
        return False
    return True
