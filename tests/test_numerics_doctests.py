"""The examples in the numerics modules' docstrings run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["numerics.validation", "numerics.trajectory", "numerics.bounded_ivp",
           "numerics.reduced_system",
           "numerics.reduced_ode", "numerics.model.family", "numerics.model.attention",
           "numerics.model.instance", "numerics.dynamics.training",
           "numerics.verify", "numerics.verify.task_kinds"]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
