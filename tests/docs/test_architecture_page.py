"""The map of docs/architecture.md is the tree: its tree names every module of ``derivations`` and
``numerics``, and every module it names exists.

The tree is the page's first ``text`` block. A line indented less than the description column names
one or more entries (``a, b``) before its first double space; ``name/`` is a package, whose entries are
indented two more spaces; a line indented to the description column continues a description.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
#: Lines indented at least this far continue the description of the entry above them.
DESCRIPTION_COLUMN = 20


def tree_modules(text: str) -> set:
    """The module paths (``derivations/core/cli``; a package as ``derivations/core/__init__``) that the
    first ``text`` block of ``text`` names."""
    block = re.search(r"^```text\n(.*?)^```", text, flags=re.M | re.S).group(1)
    stack, named = [], set()
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= DESCRIPTION_COLUMN:
            continue
        assert indent % 2 == 0, f"odd indentation: {line!r}"
        del stack[indent // 2:]
        for name in line.strip().split("  ")[0].split(", "):
            if name.endswith("/"):
                stack.append(name.rstrip("/"))
                named.add("/".join(stack) + "/__init__")
            else:
                named.add("/".join(stack + [name.removesuffix(".py")]))
    return named


def test_the_tree_names_every_module_and_only_modules():
    actual = {p.relative_to(ROOT).with_suffix("").as_posix() for pkg in ("derivations", "numerics")
              for p in (ROOT / pkg).rglob("*.py")}
    named = tree_modules(PAGE.read_text(encoding="utf-8"))
    assert sorted(actual - named) == [], "modules the map of docs/architecture.md does not name"
    assert sorted(named - actual) == [], "names in the map of docs/architecture.md that are no module"


def test_the_tree_is_read_as_written():
    text = ("```text\nroot/                   what\n  sub/                  a package\n    one, two.py          "
            "modules\n                        continued\n  three                 a module\n```\n")
    assert tree_modules(text) == {"root/__init__", "root/sub/__init__", "root/sub/one", "root/sub/two",
                                  "root/three"}

