"""The examples in the numerics modules' docstrings run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["numerics.validation", "numerics.dynamics.trajectory", "numerics.dynamics.bounded_ivp",
           "numerics.dynamics.reduced_system", "numerics.dynamics.reduced_ode",
           "numerics.dynamics.closed_form", "numerics.dynamics.task_systems",
           "numerics.dynamics.lambdified_flow", "numerics.dynamics.paper_closed_forms",
           "numerics.functions.lambdified", "numerics.functions.special_functions",
           "numerics.invariant_family", "numerics.training", "numerics.verify"]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
