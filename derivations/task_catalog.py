r"""The task engine's results, derived once and cached on disk as data.

:func:`task_reduction` returns :func:`derivations.engine.reduce_task`'s
result for a built-in task, from a JSON cache when it is fresh, so that the
``print_dynamics --task`` CLI and ``numerics`` start fast.

Cache
-----
The store :data:`STORE` of the one expression cache
(:class:`derivations.core.expression_cache.ExpressionStore`), as the paper's
catalog (:mod:`derivations.catalog`):

* Data, never code: every expression is stored as its ``srepr`` text, checked
  on writing and rebuilt on reading from a whitelist of SymPy constructors
  (:func:`derivations.symbolic.srepr_reader.to_srepr`,
  :func:`derivations.symbolic.srepr_reader.from_srepr`); loading never evaluates text.
* The key is a SHA-256 over the source of every module of
  ``derivations/core``, ``symbolic``, ``engine``, ``tasks``, of the built-in
  task files and of this module, the file format and the SymPy version
  (:func:`derivations.core.expression_cache.source_key`). Look-up: the shipped file
  ``derivations/_cache/tasks.json``, then ``$XDG_CACHE_HOME/qkov/tasks-<key>.json``.
  A missing, stale or damaged cache (an entry missing, of the wrong shape or outside
  the whitelist, or results that do not match the file's digest) is derived again
  and written atomically to the user cache only; when it is not writable, one
  line on stderr says so.
* ``python -m derivations.task_catalog --rebuild`` rewrites the shipped cache;
  ``--check`` exits 1 when it is stale.

>>> from derivations.task_catalog import task_reduction
>>> task_reduction("shared-irrelevant", "CACO").mapping
{eta_QK: eta_QK*(n_c + 1)/n_c}
"""
from __future__ import annotations

import sys
from dataclasses import replace

from .core.cli import OneLineParser
from .core.interrupt import exit_on_interrupt
from .core.expression_cache import ExpressionStore

__all__ = ["STORE", "REDUCTION_SECONDS", "derive_all", "task_reduction", "build_parser", "main"]

#: Longest wall time (seconds) of the symbolic reduction of a task that is not built in, per
#: parameterization (a built-in task's takes a few seconds; numbers such as 10**5 or powers such
#: as (m + 1)**16 in a task file would keep SymPy busy for hours).
REDUCTION_SECONDS = 60
#: ``(task, parameterization)`` -> the message of a reduction that ran out of time in this process.
_TIMED_OUT = {}


# ---------------------------------------------------------------- reductions as data

def _dump(red) -> dict:
    from .symbolic.srepr_reader import to_srepr as e
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


def _coordinates(d) -> tuple:
    """The family coordinates of a stored entry ``d`` (decoded without the rest of it)."""
    from .engine.family import Coordinate
    from .symbolic.srepr_reader import from_srepr as f
    return tuple(Coordinate(f(c["symbol"]), c["matrix"], tuple((r, tuple(l)) for r, l in c["pattern"]),
                            f(c["orbit"]), f(c["rate"])) for c in d["coordinates"])


def _load(d):
    import sympy as sp

    from .engine.reduce import TaskReduction
    from .symbolic.srepr_reader import from_srepr as f

    def pairs(x):
        return None if x is None else {f(k): f(v) for k, v in x}
    return TaskReduction(
        task=d["task"], parameterization=d["parameterization"], coordinates=_coordinates(d),
        initial=pairs(d["initial"]),
        family_odes=pairs(d["family_odes"]), observables=pairs(d["observables"]), reference=d["reference"],
        attention={k: f(v) for k, v in d["attention"]}, alpha=f(d["alpha"]), loss=f(d["loss"]),
        metric=None if d["metric"] is None else sp.Matrix([[f(x) for x in row] for row in d["metric"]]),
        odes=pairs(d["odes"]), conserved=tuple(f(c) for c in d["conserved"]), mapping=pairs(d["mapping"]),
        first_integral=None if d["first_integral"] is None else f(d["first_integral"]), note=d["note"],
        family_loss=f(d["family_loss"]), odes_alpha=pairs(d["odes_alpha"]),
        orbit=None if d["orbit"] is None else f(d["orbit"]))


def _names() -> list:
    """``[(task, parameterization)]``: every built-in symbolic task in every parameterization."""
    from .core.vocabulary import PARAMETERIZATIONS
    from .tasks.registry import symbolic_task_names
    return [(t, p) for t in symbolic_task_names() for p in PARAMETERIZATIONS]


def derive_all() -> dict:
    """Every built-in symbolic task in every parameterization: ``{"task/P": dumped}``."""
    from .engine.reduce import reduce_task
    return {f"{t}/{p}": _dump(reduce_task(t, p)) for t, p in _names()}


def _shape() -> dict:
    """The shape of the stored entries (:mod:`derivations.core.json_shape`), as :func:`_dump` writes
    them: one per task and parameterization, naming both; expressions are srepr text."""
    pairs = [[str, str]]
    coordinate = {"symbol": str, "matrix": str, "pattern": [[str, [(str, int)]]], "orbit": str, "rate": str}
    return {f"{t}/{p}": {
        "task": frozenset({t}), "parameterization": frozenset({p}), "reference": str, "note": str,
        "coordinates": [coordinate], "initial": pairs, "family_odes": pairs, "observables": pairs,
        "attention": pairs, "alpha": str, "loss": str, "family_loss": str, "metric": (None, [[str]]),
        "odes": (None, pairs), "odes_alpha": (None, pairs), "conserved": [str], "mapping": (None, pairs),
        "first_integral": (None, str), "orbit": (None, str)} for t, p in _names()}


#: The task engine's results in the one expression cache (``derivations/_cache/tasks.json``): the
#: entries as stored, each read when asked for (``_load``).
STORE = ExpressionStore("tasks", __file__, lambda: derive_all(), dict, dict,
                        prog="derivations.task_catalog", what="task cache", shape=_shape)
_MEMO = {}


def _builtin_like(task):
    """The built-in task whose reduction ``task``'s is (the same groups, roles, scales and
    parameters; the name, description and defaults do not enter a reduction), or None."""
    from .tasks.registry import TASKS

    def structure(t):
        return (t.groups, t.query, t.query_in_context, t.relevant, t.outputs, t.label, t.classes,
                t.embedding_scale, t.score_scale, t.parameters)
    return next((builtin for builtin in TASKS.values() if structure(builtin) == structure(task)), None)


def task_reduction(task, parameterization: str = "CACO"):
    """The reduction of a task: a built-in task's from the cache when fresh (derived and
    cached otherwise); another task's derived once per process
    (:func:`derivations.engine.reduce_task`, within :data:`REDUCTION_SECONDS`, a bar of the seconds
    spent on a terminal after the first), or the cached
    one of the built-in task it equals up to its name, description and defaults.

    Parameters
    ----------
    task : str, path or derivations.engine.Task
        A built-in task's name, a task file's path, or a Task.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    derivations.engine.TaskReduction

    Raises
    ------
    ValueError
        An unknown task or parameterization, a task the engine does not reduce, or (a task
        that is not built in) whose reduction takes longer than :data:`REDUCTION_SECONDS` (said at
        once when it ran out of time before in this process).
    """
    from .core.vocabulary import check_parameterization
    from .tasks.registry import get_task, is_builtin
    task = get_task(task).check_symbolic()
    check_parameterization(parameterization)
    if not is_builtin(task):
        same = _builtin_like(task)
        if same is None:
            from .core.time_bound import time_limit
            from .engine.reduce import reduce_task
            key = (task, parameterization)
            if key in _TIMED_OUT:           # once per process: a retry would take as long
                raise ValueError(_TIMED_OUT[key])
            message = (f"task {task.name!r} ({parameterization}): the symbolic reduction did not finish within "
                       f"{REDUCTION_SECONDS:g} s (numbers or powers too large for the engine, or too many token "
                       "groups: its cost grows about 2.5-fold with each)")
            try:
                with time_limit(REDUCTION_SECONDS, message, status=f"{task.name} ({parameterization}): reducing"):
                    return reduce_task(task, parameterization)
            except ValueError as exc:
                if str(exc) == message:
                    _TIMED_OUT[key] = message
                raise
        return replace(task_reduction(same, parameterization), task=task.name)
    name = f"{task.name}/{parameterization}"
    if name not in _MEMO:
        try:
            _MEMO[name] = _load(STORE.load()[name])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            _MEMO[name] = _load(STORE.load(rebuild=True)[name])   # damaged entry: derived again
    return _MEMO[name]


def build_parser() -> OneLineParser:
    """The argparse parser of ``python -m derivations.task_catalog`` (rendered in the docs)."""
    parser = OneLineParser(prog="python -m derivations.task_catalog", name=STORE.prog,
                           description="Rebuild or check the cache of the task engine's results.")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--rebuild", action="store_true",
                       help="derive every built-in task and rewrite the shipped cache")
    modes.add_argument("--check", action="store_true",
                       help="exit status 1 while the shipped cache is stale")
    return parser


@exit_on_interrupt("derivations.task_catalog")
def main(argv=None) -> int:
    """Entry point of ``python -m derivations.task_catalog``; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0, or 1 while ``--check`` finds the cache stale (or the output cannot be written),
        2 bad options (one line on stderr, nothing done), 130 Ctrl-C and 143 SIGTERM (one line,
        no traceback).
    """
    return STORE.main(argv, build_parser(), shipped_label="shipped task cache")


if __name__ == "__main__":
    sys.exit(main())
