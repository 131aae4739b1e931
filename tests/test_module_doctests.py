"""The examples in the modules' docstrings run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["derivations.symbols", "derivations.special_functions", "derivations.model",
           "derivations.reduction", "derivations.factorization", "derivations.first_integral",
           "derivations.sharpness", "derivations.asymptotics", "derivations.catalog",
           "derivations.print_dynamics", "derivations.vocabulary", "derivations.srepr_reader",
           "derivations.numeric_codegen", "derivations.latex", "derivations.atomic_file", "derivations.expression_cache", "derivations.cli", "derivations.cli_output",
           "derivations.latex_format", "numerics.lambdified", "numerics.closed_form",
           "numerics.special_functions"]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
