"""Every module, object and command that README.md and docs/ name in code spans exists.

A dotted name ``derivations.x.y`` or ``numerics.x.y`` in backticks (or a MyST role such as
{py:func}`...`) must import: its longest module prefix imports and the rest are attributes.
``python -m NAME`` (of derivations or numerics) must name a module that runs (a module, or a
package with ``__main__``). Names resolve in this checkout only.
"""
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
#: Inline code spans and fenced blocks.
SPAN = re.compile(r"```.*?```|``[^`]+``|`[^`\n]+`", re.S)
DOTTED = re.compile(r"(?<![\w./-])((?:derivations|numerics)(?:\.\w+)+)")
COMMAND = re.compile(r"python -m ((?:derivations|numerics)[\w.]*)")


def _names(kind):
    found = set()
    for page in PAGES:
        for span in SPAN.findall(page.read_text(encoding="utf-8")):
            pattern = DOTTED if kind == "dotted" else COMMAND
            found.update((page.relative_to(ROOT).as_posix(), name) for name in pattern.findall(span))
    return sorted(found)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        if ROOT not in Path(obj.__file__).resolve().parents:     # another checkout's module
            return False
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_pages_name_code():
    assert len(_names("dotted")) > 50 and len(_names("command")) > 5


@pytest.mark.parametrize("page, name", _names("dotted"))
def test_dotted_name_resolves(page, name):
    assert _resolves(name), f"{page} names {name}, which does not exist"


@pytest.mark.parametrize("page, name", _names("command"))
def test_command_is_a_module(page, name):
    spec = importlib.util.find_spec(name)
    assert spec is not None and ROOT in Path(spec.origin).resolve().parents, \
        f"{page}: python -m {name}: no such module"
    if spec.submodule_search_locations is not None:      # a package runs its __main__
        assert importlib.util.find_spec(f"{name}.__main__") is not None, f"{page}: python -m {name}"
