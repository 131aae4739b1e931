r"""The engine's reduced systems of the built-in tasks, lambdified.

The symbolic engine (:mod:`derivations`) reduces the gradient flow of a task to
a few scalar coordinates :math:`y = (y_1, \dots, y_p)` with
:math:`\dot y = f(y; \theta)`, the loss :math:`L(y; \theta)` and the attention
on the relevant tokens :math:`\alpha(y;\theta)` (:math:`\theta`: the task's
parameters and the learning rates). :func:`reduced_flow` and
:func:`family_system` lambdify them once per task and parameterization
(:class:`~numerics.dynamics.lambdified_flow.LambdifiedFlow`), from the engine's cache (:func:`derivations.task_catalog.task_reduction`);
:func:`task_parameters` resolves a task's parameter values.

>>> from numerics.dynamics.task_systems import reduced_flow, task_parameters
>>> reduced_flow("shared-irrelevant", "CACO").names
('mu_QK', 'mu_OV')
>>> task_parameters("shared-irrelevant", n_c=3)
{'m': 5.0, 'n': 50.0, 'b': 50.0, 'M': 20, 'n_c': 3}
"""
from __future__ import annotations

from functools import lru_cache

from .lambdified_flow import LambdifiedFlow

__all__ = ["reduced_flow", "family_system", "task_parameters"]


# --------------------------------------------------------------------------- #
# the engine's systems
# --------------------------------------------------------------------------- #
def reduced_flow(task_name="paper", parameterization="CACO") -> LambdifiedFlow:
    """The reduced system of a task (a built-in name, a task file's path or a
    :class:`derivations.engine.task.Task`), lambdified (SymPy once per process, then cached).

    The closed ODEs of the observables (score gaps ``mu_QK*``, logit gaps
    ``mu_OV*``) where the engine found them, else the flow of the family
    coordinates.

    Parameters
    ----------
    task_name : str
        A built-in task (:data:`derivations.tasks.TASKS`) the engine reduces.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Returns
    -------
    LambdifiedFlow

    Raises
    ------
    ValueError
        An unknown task, a parameterization not in the four, or a task the
        symbolic engine does not reduce (e.g. ``authors``).
    """
    return _system(*_key(task_name, parameterization), False)


def family_system(task_name="paper", parameterization="CACO") -> LambdifiedFlow:
    """The flow of a built-in task on its family coordinates, lambdified and cached.

    Parameters
    ----------
    task_name : str
        A built-in task the engine reduces.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}

    Raises
    ------
    ValueError
        As :func:`reduced_flow`.

    Returns
    -------
    LambdifiedFlow
    """
    return _system(*_key(task_name, parameterization), True)


def _key(task_name, parameterization):
    """The cache key of :func:`_system`, checked first: what is not hashable is not a task nor a
    parameterization (ValueError naming the valid ones, not the cache's TypeError)."""
    from derivations.core.vocabulary import check_parameterization
    from derivations.tasks import get_task
    check_parameterization(parameterization)
    try:
        hash(task_name)
    except TypeError:
        get_task(task_name)
        raise ValueError(f"task_name must be a task's name, a task file's path or a Task; got {task_name!r}") from None
    return task_name, parameterization


@lru_cache(maxsize=None)
def _system(task_name, parameterization, family):
    from derivations.core.vocabulary import check_parameterization
    from derivations.tasks import get_task
    check_parameterization(parameterization)
    task = get_task(task_name)
    task.check_symbolic()
    return _engine_system(task, parameterization, family=family)


def _engine_system(task, parameterization, *, family=False):
    """The reduced system of :func:`derivations.engine.reduce_task`.

    ``family=False``: the closed ODEs of the observables (score gaps ``mu_QK*``,
    logit gaps ``mu_OV*``) when the engine found them, else the family flow;
    ``family=True``: always the flow of the family coordinates. The parameters
    are the remaining free symbols (``m, n, b, M, n_c, eta_*``), by name."""
    from derivations.task_catalog import task_reduction

    red = task_reduction(task, parameterization)
    via, osyms = None, ()
    if red.odes is not None and not family:
        coords = tuple(red.odes)
        rhs = tuple(red.odes[c] for c in coords)
    else:
        coords = tuple(c.symbol for c in red.coordinates)
        rhs = tuple(red.family_odes[c] for c in coords)
        osyms = tuple(red.observables)
        via = (osyms, tuple(red.observables[o] for o in osyms))
    exprs = (*rhs, *(via[1] if via else ()), red.loss, red.alpha)
    free = set().union(*(e.free_symbols for e in exprs)) - set(coords) - set(osyms)
    return LambdifiedFlow(coords, rhs, red.loss, red.alpha, tuple(sorted(free, key=str)),
                          name=f"{task.name}/{parameterization}", via=via)


def task_parameters(task_name, **params) -> dict:
    """The task's numeric parameter values: its defaults updated with ``params``.

    Parameters
    ----------
    task_name : str
        A built-in task (:data:`derivations.tasks.TASKS`).
    **params
        Values of ``m, n, b, M`` and the task's own parameters (e.g. ``n_c``).

    Returns
    -------
    dict
        ``{name: value}``; ``M`` and ``n_c`` as int, the others as float.

    Raises
    ------
    ValueError
        An unknown task, a parameter the task does not have, an invalid
        value (:func:`derivations.engine.validate_parameter`), or values that leave a relevant group
        without copies (:func:`derivations.engine.instance.parameter_values`).
    """
    from derivations.engine.instance import parameter_values
    from derivations.tasks import get_task
    task = get_task(task_name)
    allowed = ("m", "n", "b", "M") + tuple(task.parameter_names())
    values = dict(task.defaults)
    for key, v in params.items():
        if key not in allowed:
            raise ValueError(f"task {task.name!r} has no parameter {key!r} "
                             f"(parameters: {', '.join(allowed)})")
        values[key] = v
    out = {}
    for k, v in values.items():
        x = task.validate(k, v)
        out[k] = int(x) if task.integer_parameter(k) else float(x)
    parameter_values(task, None, out)         # the values together: every relevant group keeps its copies
    return out
