"""Each kind's test fixture, found by the kind's name: ``tests/kinds/<kind>.py`` holds
``FIXTURE``, a :class:`KindFixture`. The shared tests (``test_kinds_common.py``, the
command line's, the trainer's and checkpoints', the JSON schema's, the docs examples')
iterate the registry (:data:`mpieval.kinds.KINDS`) and ask :func:`fixture` for what they
need of each kind; a registered kind without a fixture fails them (ImportError naming the
file to write), it is never skipped.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpieval.comm import Comm
from mpieval.kinds import KINDS
from mpieval.metric import Metric

Rows = dict[str, np.ndarray]


def preds(rng: np.random.Generator, n: int) -> np.ndarray:
    """Preds in [0, 1]: half of them from five values (ties, 0 and 1), half anywhere."""
    return np.where(rng.random(n) < 0.5, rng.integers(0, 5, n) / 4, rng.random(n))


def users(rng: np.random.Generator, n: int, rows_per_user: int = 4) -> np.ndarray:
    """Integer uids, about ``rows_per_user`` rows a user."""
    return rng.integers(0, max(1, n // rows_per_user), n)


@dataclass(frozen=True)
class KindFixture:
    """What the shared tests need of one kind.

    ``rows(rng, n)``: ``n`` valid rows for ``update()``, every input (ids and names as
    integers), the ``option_inputs`` too. ``option_inputs``: inputs a metric takes only
    when made with the option of the same name (``compare``: model B's preds).
    ``out_of_range``: a finite value refused in each input named (beside NaN in every
    input, which every kind refuses). ``row_counts``: result fields that count rows, not
    weight. ``options``: the options of the trainer's and checkpoints' tests;
    ``fast_options`` small ones for the many small examples of the common tests;
    ``variants`` more option sets the JSON of a result is checked with (an option input
    given when its option is set).
    ``columns``: the column each input reads in the command line's test file
    (``tests/test_cli.py`` :func:`rows`: ``uid``, ``tag``, ``pred``, ``label``, ``grade``,
    ``left``, ``right``, ``pred2``, ``w``). ``configs``: the kind's ``[metrics.NAME]``
    tables of the JSON schema's run (``tests/test_docs_schema.py``: columns ``uid``,
    ``tag``, ``pred``, ``pred_b``, ``label``, ``grade``, ``weight``, ``left_label``,
    ``right_label``), each key a config key; every option worth seeing in the JSON set
    in one of them.
    """

    rows: Callable[[np.random.Generator, int], Rows]
    columns: Mapping[str, str]
    configs: Mapping[str, Mapping[str, Any]]
    out_of_range: Mapping[str, float] = field(default_factory=dict)
    option_inputs: frozenset[str] = frozenset()
    row_counts: frozenset[str] = frozenset()
    options: Mapping[str, Any] = field(default_factory=dict)
    fast_options: Mapping[str, Any] = field(default_factory=dict)
    variants: tuple[Mapping[str, Any], ...] = ()

    def plain_rows(self, rng: np.random.Generator, n: int) -> Rows:
        """``rows`` without the option inputs: what a metric of the default options takes."""
        return {k: v for k, v in self.rows(rng, n).items() if k not in self.option_inputs}

    def rows_for(self, options: Mapping[str, Any], rng: np.random.Generator, n: int) -> Rows:
        """``rows`` with the option inputs whose option is set in ``options``."""
        return {k: v for k, v in self.rows(rng, n).items()
                if k not in self.option_inputs or options.get(k) is not None}


def fixture(name: str) -> KindFixture:
    """The fixture of kind ``name`` (``tests/kinds/<name>.py``)."""
    try:
        module = importlib.import_module(f"kinds.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"kinds.{name}":
            raise
        raise ImportError(f"kind {name!r} has no test fixture: write tests/kinds/{name}.py "
                          "(FIXTURE = KindFixture(...), see tests/kinds/__init__.py)") from None
    found: KindFixture = module.FIXTURE
    return found


NAMES = sorted(KINDS)


def build(name: str, options: Mapping[str, Any], comm: Comm | None = None) -> Metric:
    """A fresh metric of kind ``name`` with ``options`` (:meth:`Kind.build`)."""
    return KINDS[name].build(options, comm)


def bad_cases(name: str) -> Iterator[tuple[str, Any]]:
    """(input, bad value) of kind ``name``: NaN in each number or id, a missing name, and
    the fixture's out-of-range values; each an :class:`InputError` naming the input."""
    kind, data = KINDS[name], fixture(name)
    for input_name in kind.inputs:
        if input_name not in data.option_inputs:
            yield input_name, None if input_name in kind.names else math.nan
    yield from data.out_of_range.items()


def with_bad_value(rows: Rows, input_name: str, value: Any, at: int) -> Rows:
    """``rows`` with ``value`` at row ``at`` of ``input_name``."""
    column = rows[input_name].astype(object if value is None else np.float64)
    column[at] = value
    return {**rows, input_name: column}
