"""The examples in the modules' docstrings run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["derivations.symbolic.symbols", "derivations.symbolic.special_functions",
           "derivations.symbolic.forms", "derivations.tasks.paper.model",
           "derivations.tasks.paper.reduction", "derivations.tasks.paper.factorization",
           "derivations.tasks.paper.first_integral", "derivations.tasks.paper.sharpness",
           "derivations.tasks.paper.asymptotics", "derivations.catalog",
           "derivations.print_dynamics", "derivations.symbolic.srepr_reader",
           "derivations.output.numeric_codegen", "derivations.output.latex", "derivations.core.cli",
           "derivations.core.output", "derivations.core.vocabulary", "derivations.core.atomic_file",
           "derivations.core.expression_cache", "derivations.core.authors_setting",
           "derivations.output.tex", "derivations.core.exports"]   # numerics: tests/numerics/test_numerics_doctests.py


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
