r"""The numbers of a task of the ``query-copies`` shape (:func:`~numerics.dynamics.query_copies.task_shape`), the
task the master curve of :mod:`numerics.dynamics.crossover` is integrated for, and
:func:`~numerics.dynamics.query_copies.resolve_task`,
a task and its expressions at parameter values as floats.
"""
from __future__ import annotations

import os

__all__ = ["task_shape", "resolve_task"]


def task_shape(task="query-in-context", **params) -> dict:
    r"""The numbers of a task of the ``query-copies`` shape: ``s, m, n, R, M, b``.

    The shape: the query group per class and embedded (``s`` its attended copies, its own
    position included; 0 where the query is not attended), one relevant per-class embedded
    group (``m`` copies in all, over ``R`` types), every other group zero-embedded (``n``
    tokens in all), no copies of other classes' tokens, scores unscaled.

    Parameters
    ----------
    task : str or Task
        A built-in task's name or a :class:`~derivations.engine.task.Task`.
    **params
        The task's parameter values (defaults: the task's).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        An unknown task or parameter, or a task not of this shape (the message says why).
    """
    from .task_systems import task_parameters
    spec, number = resolve_task(task, task_parameters(task, **params))
    why = None
    if number(spec.score_scale, "the score scale") != 1:
        why = "its scores are scaled"
    elif len(spec.relevant) != 1:
        why = "it has more than one relevant group"
    shape = {"s": 0.0, "n": 0.0, "R": 1.0}
    for g in spec.groups:
        if g.per_class and number(g.other_multiplicity, f"{g.name}'s other multiplicity") != 0:
            why = f"group {g.name!r} has copies of other classes' tokens"
        count = number((spec.own_count(g) if g.per_class else g.multiplicity) * g.types, g.name)
        if g.name == spec.query and g.per_class and g.embedded:
            shape["s"] = count
        elif g.name in spec.relevant and not g.embedded:
            why = f"the relevant group {g.name!r} is not embedded"
        elif g.name in spec.relevant and g.per_class:
            shape["m"], shape["R"] = count, number(g.types, f"{g.name}'s types")
        elif not g.embedded:
            shape["n"] += count
        else:
            why = f"group {g.name!r} is embedded but neither the query nor relevant"
    if why is not None:
        raise ValueError(f"task {spec.name!r} is not of the query-copies shape: {why}")
    shape.update(M=number(spec.classes, "M"), b=number(spec.embedding_scale, "b"))
    return shape


def resolve_task(task, params):
    """``(task, number)``: the engine task of a name, file or Task, and ``number(expr, what)``,
    an expression of it at the parameter values as a float.

    Parameters
    ----------
    task : str or os.PathLike or derivations.engine.task.Task
    params : dict
        Parameter values (:func:`numerics.dynamics.task_systems.task_parameters`).

    Returns
    -------
    tuple
        ``(Task, number)``.

    Raises
    ------
    ValueError
        An unknown task; ``number`` raises it naming ``what`` for an expression left symbolic.
    """
    from derivations.tasks import get_task
    spec = get_task(task) if isinstance(task, (str, os.PathLike)) else task
    values = {**dict(spec.defaults), **params}
    subs = {sym: values[sym.name] for sym in spec.free_symbols() if sym.name in values}

    def number(expr, what):
        value = expr.subs(subs) if hasattr(expr, "subs") else expr
        try:
            return float(value)
        except TypeError:
            raise ValueError(f"task {spec.name!r}: give a value for {what} ({value})") from None
    return spec, number
