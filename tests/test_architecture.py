"""The map of docs/architecture.md holds: layers import only downwards, the
symbolic side never imports numerics (but for the print_dynamics entry), the
floor imports no SymPy or NumPy, forwarding modules only forward, and the
size limits of the developers' guide (functions, modules) hold."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for pkg in ("derivations", "numerics") for p in (ROOT / pkg).rglob("*.py"))
GENERATED = {"numerics/_generated.py"}

#: derivations' layers, bottom first: a module may import its own layer and those below.
DERIVATION_LAYERS = ["core", "symbolic", "engine", "tasks", "output"]
#: The engine's known upward look-ups, inside functions only (no import cycle at import time):
#: a built-in task by name, and the paper's effective factor rates, against which the engine
#: reduces factorized circuits (docs/architecture.md says so).
ENGINE_LOOKUPS = {("derivations.engine.explicit", "derivations.tasks.registry"),
                  ("derivations.engine.reduce", "derivations.tasks.registry"),
                  ("derivations.engine.reduce", "derivations.tasks.paper.factorization")}
#: numerics' subpackages that sit below others: they must not import the ones listed.
NUMERIC_FORBIDDEN = {
    "functions": {"model", "dynamics", "verify", "output", "experiments"},
    "model": {"dynamics", "verify", "output", "experiments"},
    "dynamics": {"verify", "output", "experiments"},
    "verify": {"experiments"},
    "output": {"verify", "experiments"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """``(imported module, inside a function)`` for every import of ``path``."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    nested = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    for node in ast.walk(tree):
        inside = id(node) in nested
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, inside
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, inside
            for alias in node.names:        # "from . import x": x may be a module
                yield f"{target}.{alias.name}", inside


def _layer(module: str, package: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package else None


def test_symbolic_code_never_imports_numerics():
    offenders = []
    for path in SOURCES:
        name = _module_name(path)
        if not name.startswith("derivations"):
            continue
        for target, inside in _imports(path):
            if target.split(".")[0] == "numerics" and not (name == "derivations.print_dynamics" and inside):
                offenders.append(f"{name} imports {target}")
    assert offenders == []


def test_derivation_layers_import_only_downwards():
    offenders = []
    for path in SOURCES:
        name = _module_name(path)
        own = _layer(name, "derivations")
        if not name.startswith("derivations") or own not in DERIVATION_LAYERS:
            continue
        allowed = set(DERIVATION_LAYERS[:DERIVATION_LAYERS.index(own) + 1])
        for target, inside in _imports(path):
            layer = _layer(target, "derivations")
            if inside and any(name == a and target.startswith(b) for a, b in ENGINE_LOOKUPS):
                continue
            if target.startswith("derivations.") and layer not in allowed and \
                    (ROOT / "derivations" / str(layer)).is_dir():
                offenders.append(f"{name} ({own}) imports {target}")
            elif target.startswith("derivations.") and own in ("core", "symbolic", "engine") \
                    and not (ROOT / "derivations" / str(layer)).is_dir():
                offenders.append(f"{name} ({own}) imports the top-level module {target}")
    assert offenders == []


def test_numeric_layers_import_only_downwards():
    offenders = []
    for path in SOURCES:
        name = _module_name(path)
        own = _layer(name, "numerics")
        for target, _ in _imports(path):
            if target.startswith("numerics.") and _layer(target, "numerics") in NUMERIC_FORBIDDEN.get(own, ()):
                offenders.append(f"{name} imports {target}")
    assert offenders == []


def test_the_floor_and_the_cold_paths_import_no_sympy():
    code = ("import sys, derivations.core, numerics.closed_form, numerics.experiments.sgd; "
            "print(sorted(m for m in ('sympy', 'numpy') if m in sys.modules))")
    core_only = "import sys, derivations.core; print(sorted(m for m in ('sympy', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "sympy" not in out.stdout
    out = subprocess.run([sys.executable, "-c", core_only], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "[]"


def _forwarders():
    return [p for p in SOURCES if p.read_text(encoding="utf-8").startswith('"""Moved to :mod:`')]


def test_forwarding_modules_only_forward():
    """A forwarder keeps an old import path working: a docstring and imports, nothing else."""
    assert _forwarders(), "no forwarding module found"
    for path in _forwarders():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = tree.body[1:]
        kinds = {type(n).__name__ for n in body}
        allowed = {"Import", "ImportFrom", "If", "Expr"}     # If: a `__main__` guard
        assert kinds <= allowed, f"{path.relative_to(ROOT)} does more than forward: {kinds - allowed}"


def _code_lines(node) -> int:
    """Lines of a function without its docstring."""
    lines = node.end_lineno - node.lineno + 1
    doc = node.body[0] if node.body and isinstance(node.body[0], ast.Expr) and \
        isinstance(getattr(node.body[0], "value", None), ast.Constant) and \
        isinstance(node.body[0].value.value, str) else None
    return lines - ((doc.end_lineno - doc.lineno + 1) if doc is not None else 0)


@pytest.mark.parametrize("limit_module,limit_function", [(500, 80)])
def test_size_limits_of_hand_written_code(limit_module, limit_function):
    long_modules, long_functions = [], []
    for path in SOURCES:
        rel = str(path.relative_to(ROOT))
        if rel in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > limit_module:
            long_modules.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(node) > limit_function:
                long_functions.append(f"{rel}:{node.lineno} {node.name}: {_code_lines(node)} lines")
    assert long_modules == [] and long_functions == []


def test_tests_mirror_the_tree():
    """Every test module sits in ``tests/<package path>/`` of the code it tests: the folders under
    ``tests/`` are packages of derivations/numerics (or ``docs``); only whole-tree checks and shared
    fixtures sit at the top."""
    tests = ROOT / "tests"
    top_level = {"test_architecture.py", "test_packaging.py"}   # whole-tree checks: the layout, the package
    for path in tests.rglob("test_*.py"):
        rel = path.relative_to(tests)
        if len(rel.parts) == 1:
            assert rel.name in top_level, f"{rel}: put it in tests/<package>/ beside the code it tests"
            continue
        folder = Path(*rel.parts[:-1])
        target = ROOT / folder
        assert folder.parts[0] == "docs" or (target / "__init__.py").is_file(), \
            f"tests/{rel}: tests/{folder} mirrors no package ({folder.as_posix().replace('/', '.')})"
