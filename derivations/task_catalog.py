r"""The task engine's results, derived once and cached on disk as data.

:func:`task_reduction` returns :func:`derivations.task_reduction.reduce_task`'s
result for a built-in task, from a JSON cache when it is fresh, so that the
``print_dynamics --task`` CLI and ``numerics`` start fast.

Cache
-----
* Data, never code: every expression is stored as a JSON tree of a
  whitelisted set of SymPy node types (:func:`expr_to_json`,
  :func:`expr_from_json`); loading never evaluates text. (The catalog of the
  paper's results uses ``srepr`` strings at the time of writing; this module
  does not.)
* The key is a SHA-256 over the source of the engine's modules
  (:data:`SOURCE_MODULES`) and the SymPy version. Look-up: the shipped file
  ``derivations/_cache/tasks.json``, then ``$XDG_CACHE_HOME/qkov/tasks-<key>.json``.
  A missing, stale or damaged cache is rebuilt (written atomically).
* ``python -m derivations.task_catalog --rebuild`` rewrites the shipped cache;
  ``--check`` exits 1 when it is stale.

>>> from derivations.task_catalog import task_reduction
>>> task_reduction("shared-irrelevant", "CACO").mapping
{eta_QK: eta_QK*(n_c + 1)/n_c}
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SHIPPED_CACHE = PACKAGE_DIR / "_cache" / "tasks.json"
SOURCE_MODULES = ("symbols", "special_functions", "factorization", "model", "reduction", "symmetry", "task",
                  "task_reduction", "task_catalog")
FORMAT = 1


def cache_key() -> str:
    """SHA-256 of the engine modules' source, the format and the SymPy version."""
    import importlib.metadata as md
    h = hashlib.sha256()
    for name in SOURCE_MODULES:
        path = PACKAGE_DIR / f"{name}.py"
        if path.exists():
            h.update(path.read_bytes())
    h.update(f"{FORMAT}/{md.version('sympy')}".encode())
    return h.hexdigest()


# ---------------------------------------------------------------- expressions as data

_NODES = None


def _nodes():
    global _NODES
    if _NODES is None:
        import sympy as sp

        from .special_functions import wright_omega
        _NODES = {c.__name__: c for c in (sp.Add, sp.Mul, sp.Pow, sp.exp, sp.log, sp.Ei, sp.LambertW,
                                          sp.Equality, sp.Abs, sp.sign, wright_omega)}
    return _NODES


def expr_to_json(expr):
    """A JSON-able tree of ``expr`` (whitelisted node types only; ValueError otherwise)."""
    import sympy as sp
    expr = sp.sympify(expr)
    if isinstance(expr, sp.Symbol):
        return ["Symbol", expr.name, dict(sorted(getattr(expr, "_assumptions_orig", {}).items()))]
    if isinstance(expr, sp.Integer):
        return ["Integer", str(expr)]
    if isinstance(expr, sp.Rational):
        return ["Rational", str(expr.p), str(expr.q)]
    if isinstance(expr, sp.Float):
        return ["Float", str(expr)]
    if expr is sp.pi or expr is sp.E:
        return ["Constant", "pi" if expr is sp.pi else "E"]
    name = type(expr).__name__
    if name not in _nodes():
        raise ValueError(f"cannot store a {name} node in the task cache")
    return [name] + [expr_to_json(a) for a in expr.args]


def expr_from_json(tree):
    """Inverse of :func:`expr_to_json` (ValueError on anything unknown)."""
    import sympy as sp
    head = tree[0]
    if head == "Symbol":
        return sp.Symbol(tree[1], **{k: bool(v) for k, v in tree[2].items()})
    if head == "Integer":
        return sp.Integer(int(tree[1]))
    if head == "Rational":
        return sp.Rational(int(tree[1]), int(tree[2]))
    if head == "Float":
        return sp.Float(tree[1])
    if head == "Constant":
        return {"pi": sp.pi, "E": sp.E}[tree[1]]
    if head not in _nodes():
        raise ValueError(f"unknown node {head!r} in the task cache")
    return _nodes()[head](*[expr_from_json(a) for a in tree[1:]])


# ---------------------------------------------------------------- reductions as data

def _dump(red) -> dict:
    e = expr_to_json
    return {
        "task": red.task, "parameterization": red.parameterization, "reference": red.reference, "note": red.note,
        "coordinates": [{"symbol": e(c.symbol), "matrix": c.matrix, "pattern": [[r, list(l)] for r, l in c.pattern],
                         "orbit": e(c.orbit), "rate": e(c.rate)} for c in red.coordinates],
        "initial": [[e(k), e(v)] for k, v in red.initial.items()],
        "family_odes": [[e(k), e(v)] for k, v in red.family_odes.items()],
        "observables": [[e(k), e(v)] for k, v in red.observables.items()],
        "attention": [[k, e(v)] for k, v in red.attention.items()],
        "alpha": e(red.alpha), "loss": e(red.loss), "family_loss": e(red.family_loss),
        "metric": None if red.metric is None else [[e(x) for x in row] for row in red.metric.tolist()],
        "odes": None if red.odes is None else [[e(k), e(v)] for k, v in red.odes.items()],
        "odes_alpha": None if red.odes_alpha is None else [[e(k), e(v)] for k, v in red.odes_alpha.items()],
        "conserved": [e(c) for c in red.conserved],
        "mapping": None if red.mapping is None else [[e(k), e(v)] for k, v in red.mapping.items()],
        "first_integral": None if red.first_integral is None else e(red.first_integral),
        "orbit": None if red.orbit is None else e(red.orbit),
    }


def _load(d):
    import sympy as sp

    from .task_reduction import Coordinate, TaskReduction
    f = expr_from_json

    def pairs(x):
        return None if x is None else {f(k): f(v) for k, v in x}
    coords = tuple(Coordinate(f(c["symbol"]), c["matrix"], tuple((r, tuple(l)) for r, l in c["pattern"]),
                              f(c["orbit"]), f(c["rate"])) for c in d["coordinates"])
    return TaskReduction(
        task=d["task"], parameterization=d["parameterization"], coordinates=coords, initial=pairs(d["initial"]),
        family_odes=pairs(d["family_odes"]), observables=pairs(d["observables"]), reference=d["reference"],
        attention={k: f(v) for k, v in d["attention"]}, alpha=f(d["alpha"]), loss=f(d["loss"]),
        metric=None if d["metric"] is None else sp.Matrix([[f(x) for x in row] for row in d["metric"]]),
        odes=pairs(d["odes"]), conserved=tuple(f(c) for c in d["conserved"]), mapping=pairs(d["mapping"]),
        first_integral=None if d["first_integral"] is None else f(d["first_integral"]), note=d["note"],
        family_loss=f(d["family_loss"]), odes_alpha=pairs(d["odes_alpha"]),
        orbit=None if d.get("orbit") is None else f(d["orbit"]))


def derive_all() -> dict:
    """Every built-in symbolic task in every parameterization: ``{"task/P": dumped}``."""
    from .task import symbolic_task_names
    from .task_reduction import PARAMETERIZATIONS, reduce_task
    return {f"{t}/{p}": _dump(reduce_task(t, p)) for t in symbolic_task_names() for p in PARAMETERIZATIONS}


def _user_cache(key):
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "qkov" / f"tasks-{key}.json"


def _read(path, key):
    try:
        data = json.loads(path.read_text())
        if data.get("key") != key or not isinstance(data.get("results"), dict):
            return None
        return data
    except (OSError, ValueError, AttributeError):
        return None


def write_cache(path: Path, key: str, dumped: dict) -> None:
    """Write atomically (temporary file + rename); sorted keys, byte-stable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"key": key, "format": FORMAT, "results": dumped}, indent=None, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tasks-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_MEMO = {}


def task_reduction(task: str, parameterization: str = "CACO"):
    """The :class:`~derivations.task_reduction.TaskReduction` of a built-in task,
    from the cache when fresh (derived and cached otherwise)."""
    from .task import get_task
    from .task_reduction import _check_param
    get_task(task).check_symbolic()
    _check_param(parameterization)
    name = f"{task}/{parameterization}"
    if name in _MEMO:
        return _MEMO[name]
    key = cache_key()
    data = _read(SHIPPED_CACHE, key) or _read(_user_cache(key), key)
    red = None
    if data is not None and name in data["results"]:
        try:
            red = _load(data["results"][name])
        except (ValueError, KeyError, TypeError, IndexError):
            red = None   # damaged entry: rebuilt below
    if red is None:
        dumped = derive_all()
        for path in (SHIPPED_CACHE, _user_cache(key)):
            try:
                write_cache(path, key, dumped)
                break
            except OSError:
                continue
        red = _load(dumped[name])
    _MEMO[name] = red
    return red


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``python -m derivations.task_catalog`` (rendered in the docs)."""
    parser = argparse.ArgumentParser(prog="python -m derivations.task_catalog",
                                     description="Rebuild or check the cache of the task engine's results.")
    parser.add_argument("--rebuild", action="store_true",
                        help="derive every built-in task and rewrite the shipped cache")
    parser.add_argument("--check", action="store_true",
                        help="exit status 1 while the shipped cache is stale")
    return parser


def main(argv=None) -> int:
    """Entry point of ``python -m derivations.task_catalog``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    key = cache_key()
    if args.check:
        fresh = _read(SHIPPED_CACHE, key) is not None
        print("shipped task cache is " + ("fresh" if fresh else
                                          "STALE: run python -m derivations.task_catalog --rebuild"))
        return 0 if fresh else 1
    if args.rebuild:
        write_cache(SHIPPED_CACHE, key, derive_all())
        print(f"wrote {SHIPPED_CACHE} (key {key[:12]})")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
