"""One constructor convention for every metric class, checked against its kind's
declaration; options of several kinds declared once; an input error that names the
option which would accept the values, spelled as Python or as the command line sets it."""

from __future__ import annotations

import inspect
import pickle
import re
from typing import Any

import numpy as np
import pytest

from mpieval import AucMetric, cli
from mpieval.comm import Comm
from mpieval.declaration import (
    COMPARED,
    PRED,
    WINDOW,
    Kind,
    Option,
    check_shared_options,
    signature_problem,
)
from mpieval.errors import InputError
from mpieval.kinds import KINDS, available
from mpieval.kinds.auc import KIND as AUC
from mpieval.validation import auc_table_size, one_of

CLASSES = [KINDS[name].load() for name in KINDS if available(name)]


@pytest.mark.parametrize("name", [name for name in KINDS if available(name)])
def test_every_class_is_checked_against_its_kinds_declaration(name):
    cls = KINDS[name].load()
    assert (cls.kind, cls.options) == (name, KINDS[name].declared_options)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_class_takes_comm_first_then_its_declared_options_by_keyword(cls):
    parameters = list(inspect.signature(cls).parameters.values())
    assert (parameters[0].name, parameters[0].default) == ("comm", None)
    options = [p for p in parameters[1:] if p.name not in cls.arguments]
    assert [(p.name, p.default) for p in options] == [(o.name, o.default) for o in cls.options]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:])


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_an_option_given_by_position_is_a_type_error_that_says_how(cls):
    first = cls.options[0].name
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\(\) takes a communicator or None "
                       rf"first, got 1000: options are keyword arguments "
                       rf"\({cls.__name__}\({first}=1000\)\)$"):
        cls(1000)


def test_two_positional_arguments_are_pythons_type_error():
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments"):
        AucMetric(None, 1000)


def _subclass(init: Any) -> type:
    """An ``auc`` class with the constructor ``init``."""
    return type("BadAuc", (AucMetric,), {"__init__": init})


def _table_first(self, table_size=AUC.declared_options[0].default, *, soft_labels=False,
                 compare=None, weights="frequency", window=None, comm=None):
    pass


def _comm_by_keyword(self, *, comm=None, table_size=1_000_000, soft_labels=False,
                     compare=None, weights="frequency", window=None):
    pass


def _other_default(self, comm=None, *, table_size=1000, soft_labels=False, compare=None,
                   weights="frequency", window=None):
    pass


def _positional_option(self, comm=None, table_size=1_000_000, *, soft_labels=False,
                       compare=None, weights="frequency", window=None):
    pass


def _missing_option(self, comm=None, *, table_size=1_000_000, soft_labels=False,
                    compare=None, window=None):
    pass


def _undeclared(self, comm=None, *, table_size=1_000_000, soft_labels=False, compare=None,
                weights="frequency", window=None, bins=10):
    pass


def _any_keyword(self, comm=None, **options):
    pass


def _true_for_false(self, comm=None, *, table_size=1_000_000, soft_labels=0, compare=None,
                    weights="frequency", window=None):
    pass


@pytest.mark.parametrize(("init", "problem"), [
    (_table_first, "must take comm=None first"),
    (_comm_by_keyword, "must take comm as its one positional argument"),
    (_other_default, "has table_size=1000, its kind declares table_size=1000000"),
    (_positional_option, "must take table_size as a keyword-only argument (after *)"),
    (_missing_option, "takes options (table_size, soft_labels, compare, window), its kind "
                      "declares (table_size, soft_labels, compare, weights, window)"),
    (_undeclared, "takes options (table_size, soft_labels, compare, weights, window, bins)"),
    (_any_keyword, "must name each option, not take **options"),
    (_true_for_false, "has soft_labels=0, its kind declares soft_labels=False"),
])
def test_a_class_whose_constructor_disagrees_with_its_declaration_is_refused(init, problem):
    with pytest.raises(TypeError, match="^" + re.escape(f"BadAuc() {problem}")):
        _subclass(init)


def test_a_class_that_keeps_its_kinds_constructor_is_accepted():
    cls = type("SameAuc", (AucMetric,), {})
    assert cls(table_size=10, comm=Comm.local()).table_size == 10


def test_a_class_of_its_own_arguments_names_them():
    def init(self, comm=None, *, table_size=1_000_000, soft_labels=False, compare=None,
             weights="frequency", window=None, bins=10):
        pass

    binned = type("BinnedAuc", (AucMetric,), {"__init__": init, "arguments": ("bins",)})
    assert signature_problem(inspect.signature(binned), AUC.declared_options) \
        == "takes options (table_size, soft_labels, compare, weights, window, bins), its " \
           "kind declares (table_size, soft_labels, compare, weights, window)"


def _fake(*options: Option) -> Kind:
    return Kind(name="fake", summary="", metric="", declared_inputs=(PRED,),
                declared_options=options)


def test_the_registry_shares_one_declaration_per_option_name():
    check_shared_options(KINDS.values())  # as when the registry loads
    check_shared_options([*KINDS.values(), _fake(WINDOW, COMPARED)])


@pytest.mark.parametrize(("option", "what"), [
    (Option("table_size", 10, auc_table_size), "option table_size"),
    (Option("compare", None, one_of("a", "b")), "option compare"),
    (Option("window", None, auc_table_size, config=False), "option window"),
    (Option("tie_mode", "half", one_of("half"), flag_name="--pn-ties"), "flag --pn-ties"),
])
def test_another_kinds_own_declaration_of_a_name_or_flag_is_refused(option, what):
    with pytest.raises(ValueError, match=r"^kinds (auc|pn) and fake declare the "
                       + what + " each its own way"):
        check_shared_options([*KINDS.values(), _fake(option)])


def test_an_option_is_set_on_the_command_line_by_its_flag():
    assert AUC.options["soft_labels"].setting(True) == "--soft-labels"
    assert KINDS["pn"].options["ties"].setting("half") == "--pn-ties half"


BAD_LABEL = ("label: must be 0 or 1 (pass soft_labels=True for labels in [0, 1]) "
             "(1 bad value, first at index 1: 0.5)")


def test_a_soft_label_names_the_option_in_python():
    with pytest.raises(InputError) as info:
        AucMetric(comm=Comm.local()).update(np.array([0.1, 0.2]), np.array([0, 0.5]))
    assert str(info.value) == BAD_LABEL
    assert info.value.hint is not None and info.value.hint.option == "soft_labels"
    again = pickle.loads(pickle.dumps(info.value))  # as it travels between ranks
    assert str(again) == BAD_LABEL
    assert again.problem_setting("--soft-labels") == info.value.problem_setting("--soft-labels")


def test_a_soft_label_names_the_flag_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    path.write_text("pred,label\n0.1,0\n0.2,0.5\n")
    assert cli.main(["eval", str(path)]) == 2
    assert (f"{path}:3: column label: value 0.5 must be 0 or 1 (pass --soft-labels for labels "
            "in [0, 1])") in capsys.readouterr().err


def test_an_error_without_a_hint_reads_the_same_on_the_command_line():
    error = InputError("label", "must be 0 or 1")
    assert error.hint is None and error.problem_setting("--soft-labels") == "must be 0 or 1"
