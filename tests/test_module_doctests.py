"""The examples in the modules' docstrings run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["derivations.symbols", "derivations.special_functions", "derivations.model",
           "derivations.reduction", "derivations.factorization", "derivations.first_integral",
           "derivations.sharpness", "derivations.asymptotics", "derivations.catalog",
           "derivations.print_dynamics", "derivations.srepr_reader",
           "derivations.output.numeric_codegen", "derivations.latex", "derivations.core.cli",
           "derivations.core.output", "derivations.core.vocabulary", "derivations.core.atomic_file",
           "derivations.core.expression_cache", "derivations.core.authors_setting",
           "derivations.output.tex"]   # numerics: tests/test_numerics_doctests.py


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
