"""The examples of the packages' ``__main__`` modules, which pytest's ``--doctest-modules`` never imports
(it skips every ``__main__.py``); every other module's examples run through ``--doctest-modules`` (setup.cfg)."""
import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAINS = sorted(str(p.relative_to(ROOT).with_suffix("")).replace("/", ".")
               for package in ("derivations", "numerics") for p in (ROOT / package).rglob("__main__.py"))


@pytest.mark.parametrize("name", MAINS)
def test_main_module_examples(name):
    finder = doctest.DocTestFinder()
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
