"""The docstring examples of numerics.experiments run and show what they say."""
import doctest
import importlib

import pytest

MODULES = ["numerics.experiments.models", "numerics.experiments.measure",
           "numerics.experiments.jobs", "numerics.experiments.__main__", "numerics.experiments.task_sampling",
           "numerics.experiments.theory", "numerics.experiments.memory", "numerics.experiments.cross_entropy",
           "numerics.experiments.sampler", "numerics.experiments.stopping"]


@pytest.mark.parametrize("name", MODULES)
def test_experiments_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
