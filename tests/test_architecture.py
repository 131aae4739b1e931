"""The map of docs/architecture.md holds: layers import only downwards, the
symbolic side never imports numerics (but for the print_dynamics entry), the
floor imports no SymPy or NumPy, no module forwards another's names, no import
cycle (imports inside functions included), and the size limits of the
developers' guide (functions, modules) hold."""
import ast
import builtins
import functools
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


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """The parsed source of ``path`` (read once per test process)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """``(imported module, inside a function)`` for every import of ``path``."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = _tree(path)
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
    code = ("import sys, derivations.core, numerics.dynamics.closed_form, numerics.experiments.sgd; "
            "print(sorted(m for m in ('sympy', 'numpy') if m in sys.modules))")
    core_only = "import sys, derivations.core; print(sorted(m for m in ('sympy', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "sympy" not in out.stdout
    out = subprocess.run([sys.executable, "-c", core_only], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    assert out.stdout.strip() == "[]"


def _is_forwarder(path: Path) -> bool:
    """A module (not a package's ``__init__`` or ``__main__``, the entry of ``python -m``) whose
    body is a docstring, imports, ``__all__`` and at most a ``__main__`` guard: a second name for
    code that lives elsewhere."""
    if path.name in ("__init__.py", "__main__.py"):
        return False
    body = _tree(path).body
    if not body or not (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
        return False
    for node in body[1:]:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.If)):
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            continue
        return False
    return True


def test_no_forwarding_modules():
    """Each public name has one home: no module only re-exports another's names."""
    assert [p.relative_to(ROOT).as_posix() for p in SOURCES if _is_forwarder(p)] == []


MODULES = {_module_name(p): p for p in SOURCES}


def _defined(path: Path) -> set:
    """The names a module binds itself at its top level (definitions and assignments, inside
    ``if``/``try`` too), not the ones it imports."""
    names = set()
    for node in _tree(path).body:
        for d in ast.walk(node):
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(d.name)
            elif isinstance(d, ast.Name) and isinstance(d.ctx, ast.Store):
                names.add(d.id)
    return names


def test_every_package_declares_its_api():
    """One home per concept, exported by its subpackage's ``__init__`` with ``__all__``."""
    missing = [str(path.relative_to(ROOT)) for path in SOURCES if path.name == "__init__.py"
               and not any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                                  for t in node.targets)
                           for node in _tree(path).body)]
    assert missing == []


def _module_all(path: Path) -> list:
    for node in _tree(path).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            return list(ast.literal_eval(node.value))
    return []


def _package_exports(init: Path) -> dict:
    """``{name: module it is exported from}`` of a package's ``__init__``: its ``from .x import name``
    and the ``{".x": (names,)}`` table of its lazy exports (x relative to the package)."""
    exports = {}
    for node in _tree(init).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            exports.update({a.asname or a.name: node.module or a.name for a in node.names})
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Constant) and str(key.value).startswith(".") and \
                        isinstance(value, (ast.Tuple, ast.List)):
                    exports.update({ast.literal_eval(v): key.value.lstrip(".") for v in value.elts})
    return exports


def test_no_package_exports_a_name_of_one_of_its_modules():
    """A package attribute named like one of its modules is the module once that module is imported:
    exporting another object under that name would give one name two meanings."""
    clashes = []
    for init in (p for p in SOURCES if p.name == "__init__.py"):
        modules = {p.stem for p in init.parent.glob("*.py")} | {
            p.parent.name for p in init.parent.glob("*/__init__.py")}
        clashes += [f"{_module_name(init)}.{name} (from .{home})" for name, home in _package_exports(init).items()
                    if name in modules and home != name]
    assert clashes == []


def test_names_are_imported_from_their_home():
    """One name for each thing: a module's ``__all__`` lists only what it defines (a package's
    ``__init__`` exports its modules' names), and every ``from module import name`` in the
    package, the tests and the benchmarks names the module defining ``name`` (or a package)."""
    defined = {name: _defined(path) for name, path in MODULES.items()}
    wrong = [f"{name}.__all__: {n}" for name, path in MODULES.items() if path.name != "__init__.py"
             for n in _module_all(path) if n not in defined[name]]
    files = SOURCES + sorted(p for d in ("tests", "benchmarks") for p in (ROOT / d).rglob("*.py"))
    for path in files:
        me = _module_name(path)
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve("." * node.level + (node.module or ""), package)
            if target not in MODULES or MODULES[target].name == "__init__.py":
                continue
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {target}" for a in node.names
                      if a.name != "*" and a.name not in defined[target] and f"{target}.{a.name}" not in MODULES]
    assert wrong == []


#: Private names the engine imports from its ``checks``: renaming them changes the derivation caches' keys
#: (a rebuild), so they wait for one.
PRIVATE_IMPORTS_KNOWN = {("derivations/engine/task.py", "_check_parameter_name"),
                         ("derivations/engine/task.py", "_exact_integer")}


def test_no_module_imports_a_private_name_of_another():
    """A name that starts with ``_`` is its module's own: another module that needs it imports a public
    name from its one home (a private module, such as ``numerics._generated``, is imported as a module)."""
    wrong = []
    for path in SOURCES:
        package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                continue
            target = _resolve("." * node.level + (node.module or ""), package)
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name} from {target}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__") and f"{target}.{a.name}" not in MODULES
                      and (path.relative_to(ROOT).as_posix(), a.name) not in PRIVATE_IMPORTS_KNOWN]
    assert wrong == []


def _top_level_names(tree: ast.Module) -> set:
    """The names a module defines or imports outside its functions and classes (and the builtins)."""
    names = set(dir(builtins))
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        statements += [c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler))]
        statements += [c for h in getattr(node, "handlers", []) for c in h.body]
    return names


def test_annotations_name_what_their_module_defines():
    """Every name in a function's annotations is defined or imported at its module's top level (an
    annotation is text under ``from __future__ import annotations``, but it names a type: one imported only
    inside a function is undefined where the annotation is read, ruff's F821)."""
    wrong = []
    for path in SOURCES:
        tree = _tree(path)
        known = _top_level_names(tree)
        for f in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            a = f.args
            annotations = [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                           if x is not None and x.annotation is not None] + [f.returns]
            wrong += [f"{path.relative_to(ROOT)}:{f.lineno}: {f.name}: {n.id}" for ann in annotations if ann is not None
                      for n in ast.walk(ann) if isinstance(n, ast.Name) and n.id not in known]
    assert wrong == []


def _resolve(target: str, package: str):
    """The module ``target`` (relative to ``package`` when it starts with dots)."""
    if not target.startswith("."):
        return target
    dots = len(target) - len(target.lstrip("."))
    base = package.split(".")[:len(package.split(".")) - dots + 1]
    rest = target[dots:]
    return ".".join(base + ([rest] if rest else []))


def _package_homes(package: str) -> dict:
    """``{name: module}`` of the names a package's ``__init__`` imports or exports lazily
    (the ``{".module": (names, ...)}`` table of :func:`derivations.core.exports.lazy_exports`)."""
    homes = {}
    for node in _tree(MODULES[package]).body:
        if isinstance(node, ast.ImportFrom):
            target = _resolve("." * node.level + (node.module or ""), package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                homes[alias.asname or alias.name] = sub if sub in MODULES else target
        for d in ast.walk(node):
            if isinstance(d, ast.Dict) and all(isinstance(k, ast.Constant) and str(k.value).startswith(".")
                                               for k in d.keys) and d.keys:
                for k, v in zip(d.keys, d.values):
                    for name in getattr(v, "elts", ()):
                        homes[name.value] = _resolve(k.value, package)
    return homes


def _import_graph() -> dict:
    """``{module: modules it imports}`` over derivations/ and numerics/, imports inside
    functions included; ``from package import name`` points at the module defining ``name``."""
    graph = {}
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                target = _resolve("." * node.level + (node.module or ""), package)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:
                        edges.add(sub)
                    elif target in MODULES and MODULES[target].name == "__init__.py":
                        edges.add(_package_homes(target).get(alias.name, target))
                    else:
                        edges.add(target)
        graph[name] = {e for e in edges if e in MODULES and e != name}
    return graph


def _cycles(graph: dict) -> list:
    """The strongly connected groups of more than one module (Tarjan), sorted."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def test_no_import_cycles():
    """No two modules import each other, directly or through others, counting the imports
    inside functions (``python -c "import tests.test_architecture as t; print(t._cycles(t._import_graph()))"``)."""
    assert _cycles(_import_graph()) == []


def _public_functions(path: Path):
    """``(qualified name, node, docstring)`` of the module's public functions (its ``__all__``), of the
    public methods of its public classes and of their constructors (an ``__init__`` written in the class,
    documented in the class's docstring or its own, as numpydoc reads them)."""
    try:
        public = set(_module_all(path))
    except ValueError:      # a computed __all__ (a package's lazy exports): it defines no functions
        public = set()
    for node in _tree(path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in public:
            if isinstance(node, ast.ClassDef):
                methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
                yield from ((node.name, m, f"{ast.get_docstring(node) or ''}\n{ast.get_docstring(m) or ''}")
                            for m in methods if m.name == "__init__")
                yield from ((f"{node.name}.{m.name}", m, ast.get_docstring(m) or "") for m in methods
                            if not m.name.startswith("_"))
            else:
                yield node.name, node, ast.get_docstring(node) or ""


def _takes_arguments(node) -> bool:
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return bool([n for n in names if n not in ("self", "cls")] or a.vararg or a.kwarg)


def _own_nodes(node):
    """The nodes of a function's body, nested functions, classes and lambdas left out."""
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def _returns_a_value(node) -> bool:
    """A ``return`` with a value or a ``yield`` in the function itself (not in nested ones)."""
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) or (
        isinstance(n, ast.Return) and n.value is not None
        and not (isinstance(n.value, ast.Constant) and n.value.value is None)) for n in _own_nodes(node))


def _raises(node) -> bool:
    """A ``raise`` of an exception in the function itself (a bare re-raise aside)."""
    return any(isinstance(n, ast.Raise) and n.exc is not None for n in _own_nodes(node))


def _section(doc: str, title: str) -> bool:
    lines = [line.strip() for line in doc.splitlines()]
    return any(a == title and b == "-" * len(title) for a, b in zip(lines, lines[1:]))


def undocumented_functions(paths) -> list:
    """The public functions and methods of ``paths`` that take arguments but have no numpydoc
    ``Parameters`` section, or no ``Returns`` (``Yields``) where they return a value, or (taking
    arguments or not) no ``Raises`` where they raise an exception themselves; properties aside."""
    missing = []
    for path in paths:
        for name, node, doc in _public_functions(path):
            if any(getattr(d, "id", None) == "property" or getattr(d, "attr", None) == "setter"
                   for d in node.decorator_list):
                continue
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}: {name}"
            if _raises(node) and not _section(doc, "Raises"):
                missing.append(f"{where} (Raises)")
            if not _takes_arguments(node):
                continue
            if not _section(doc, "Parameters"):
                missing.append(f"{where} (Parameters)")
            if _returns_a_value(node) and not (_section(doc, "Returns") or _section(doc, "Yields")):
                missing.append(f"{where} (Returns)")
    return missing


def test_public_functions_have_numpydoc_sections(tmp_path):
    """Public functions and constructors that take arguments have Parameters, those that return a value
    Returns, those that raise Raises (../shared/design/docstrings.md); the check finds a function without them."""
    missing = undocumented_functions([p for p in SOURCES if str(p.relative_to(ROOT)) not in GENERATED])
    assert missing == []
    bad = tmp_path / "undocumented.py"
    text = ('__all__ = ["f", "C", "D"]\n'
            'def f(x):\n    """Twice x."""\n    return 2 * x\n'
            'class C:\n    def g(self, y):\n        """Nothing back."""\n        print(y)\n'
            '    def h(self):\n        """Refuses."""\n        raise ValueError("no")\n'
            '    @property\n    def p(self):\n        return 1\n'
            'class D:\n    """A thing.\n\n    Parameters\n    ----------\n    x : int\n    """\n'
            '    def __init__(self, x):\n        if x < 0:\n            raise ValueError("x")\n')
    bad.write_text(text)
    assert undocumented_functions([bad]) == ["undocumented.py: f (Parameters)", "undocumented.py: f (Returns)",
                                             "undocumented.py: C.g (Parameters)", "undocumented.py: C.h (Raises)",
                                             "undocumented.py: D (Raises)"]


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
