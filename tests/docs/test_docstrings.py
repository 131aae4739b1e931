"""The docstrings of ``derivations`` and ``numerics``, as documentation: their examples all run, and
they and the pages say what is, not what was (the developers' guide: history belongs in git).

pytest's ``--doctest-modules`` (setup.cfg) runs the examples of every module but ``__main__.py``,
which it never collects; the examples of those modules are run here.
"""
import ast
import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for pkg in ("derivations", "numerics") for p in (ROOT / pkg).rglob("*.py")
                 if p.name != "_generated.py")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Words that narrate a change instead of saying what is: history belongs in git.
HISTORY = re.compile(
    r"\b(formerly|previously|used to be|no longer (?:is|are|does|do|has|have|uses?|needs?|reads?|writes?|takes?"
    r"|returns?|calls?)|(?:was|were|has been|have been) (?:renamed|moved|removed|rewritten|dropped)|renamed (?:from|to)"
    r"|moved (?:from|to|into)|(?:is|are|does|do) now|now (?:is|are|uses?|takes?|reads?|returns?|raises?|gives?)"
    r"|any ?more|deprecated|legacy|in (?:earlier|older|previous) versions?|until recently|originally"
    r"|the old (?:name|code|version|way|path)|before (?:the|this) (?:fix|change|rewrite))\b", re.I)


def _docstrings(path: Path):
    """``(name, docstring)`` of the module, its classes and functions (nested ones too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in (tree, *ast.walk(tree)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                yield getattr(node, "name", "<module>"), doc


def history(text: str) -> list:
    """The phrases of ``text`` (line breaks read as spaces) that narrate history."""
    return [m.group(0) for m in HISTORY.finditer(" ".join(text.split()))]


def test_docstrings_say_what_is():
    found = [f"{path.relative_to(ROOT)}: {name}: {phrase!r}" for path in SOURCES
             for name, doc in _docstrings(path) for phrase in history(doc)]
    assert found == []


def test_pages_say_what_is():
    found = [f"{page.relative_to(ROOT)}: {phrase!r}" for page in PAGES
             for phrase in history(page.read_text(encoding="utf-8"))]
    assert found == []


def test_history_is_recognised():
    assert history("The parser, formerly in cli, now\nreturns a list; it was renamed from x. A file\nchanged "
                   "after it was written is refused; stop now.") == ["formerly", "now returns", "was renamed"]


MAIN_MODULES = [p for p in SOURCES if p.name == "__main__.py" and ">>>" in p.read_text(encoding="utf-8")]


def test_some_main_module_has_examples():
    assert MAIN_MODULES


@pytest.mark.parametrize("path", MAIN_MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_examples_of_main_modules_run(path):
    """The docstring examples of a ``__main__.py`` (never collected by ``--doctest-modules``) run."""
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    tests = [t for t in doctest.DocTestFinder().find(importlib.import_module(name), name) if t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert tests and result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
