r"""A task's reduced flow, integrated: the state at a loss level from zero initialization.

The symbolic engine (:mod:`derivations`) reduces the gradient flow of a task to
a few scalar coordinates :math:`y = (y_1, \dots, y_p)` with
:math:`\dot y = f(y; \theta)`, the loss :math:`L(y; \theta)` and the attention
on the relevant tokens :math:`\alpha(y;\theta)` (:math:`\theta`: the task's
parameters and the learning rates). :class:`TaskReducedSystem` lambdifies these
expressions once (``math`` backend, stable rewrites of
:func:`numerics.functions.lambdified.numeric`) and integrates them with
:func:`scipy.integrate.solve_ivp` (DOP853) with loss-level events on
:math:`\log L - \log L^*` (root refined by ``solve_ivp``'s event location on the
dense output), so no SymPy runs on the hot path.

:func:`task_state_at_loss` is the fixed-loss state of a task in the paper's
fixed-loss comparison: collapsed circuits (CACO), zero initialization,
:math:`\eta_{OV} = 1`, :math:`\eta_{QK} = r`. For the ``paper`` task it agrees
with the closed form :func:`numerics.dynamics.closed_form.state_at_loss` to 1e-9
(``tests/test_task_state.py``).

>>> from numerics.dynamics.task_systems import task_state_at_loss
>>> st = task_state_at_loss("paper", 1.0, 0.5)
>>> sorted(k for k in st if k in ("alpha", "loss", "t"))
['alpha', 'loss', 't']
"""
from __future__ import annotations

import math
import numbers
from functools import lru_cache

import numpy as np

from .lambdified_flow import LambdifiedFlow, TaskReducedSystem

__all__ = ["TaskReducedSystem", "reduced_system", "family_system", "task_state_at_loss",
           "task_parameters", "task_reduction"]


# --------------------------------------------------------------------------- #
# the engine's systems
# --------------------------------------------------------------------------- #
@lru_cache(maxsize=None)
def reduced_system(task_name="paper", parameterization="CACO") -> LambdifiedFlow:
    """The reduced system of a built-in task (SymPy once per process, then cached).

    Raises ValueError for an unknown task, a parameterization not in the four,
    or a task the symbolic engine does not reduce (e.g. ``authors``).
    """
    from derivations.model import check_parameterization
    from derivations.task import get_task
    check_parameterization(parameterization)
    task = get_task(task_name)
    task.check_symbolic()
    return _engine_system(task, parameterization)


@lru_cache(maxsize=None)
def family_system(task_name="paper", parameterization="CACO") -> LambdifiedFlow:
    """The flow of a built-in task on its family coordinates (see :func:`reduced_system`)."""
    from derivations.model import check_parameterization
    from derivations.task import get_task
    check_parameterization(parameterization)
    task = get_task(task_name)
    task.check_symbolic()
    return _engine_system(task, parameterization, family=True)


def task_reduction(task, parameterization):
    """The engine's reduction of ``task``: from the engine's on-disk cache
    (``derivations.task_catalog.task_reduction``) for a built-in task when that
    module is present, else derived (:func:`derivations.task_reduction.reduce_task`)."""
    from derivations.task import TASKS
    if TASKS.get(task.name) is task:
        try:
            from derivations.task_catalog import task_reduction as cached
        except ImportError:
            cached = None
        if cached is not None:
            return cached(task.name, parameterization)
    from derivations.task_reduction import reduce_task
    return reduce_task(task, parameterization)


def _engine_system(task, parameterization, *, family=False):
    """The reduced system of :func:`derivations.task_reduction.reduce_task`.

    ``family=False``: the closed ODEs of the observables (score gaps ``mu_QK*``,
    logit gaps ``mu_OV*``) when the engine found them, else the family flow;
    ``family=True``: always the flow of the family coordinates. The parameters
    are the remaining free symbols (``m, n, b, M, n_c, eta_*``), by name."""
    red = task_reduction(task, parameterization)
    obs = red.observables
    if red.odes is not None and not family:
        coords = tuple(red.odes)
        rhs = tuple(red.odes[c] for c in coords)
        loss, alpha = red.loss, red.alpha
    else:
        coords = tuple(c.symbol for c in red.coordinates)
        rhs = tuple(red.family_odes[c] for c in coords)
        osyms = tuple(obs)
        via = (osyms, tuple(obs[o] for o in osyms))
        free = set().union(*(e.free_symbols for e in (*rhs, *via[1], red.loss, red.alpha)))
        params = tuple(sorted(free - set(coords) - set(osyms), key=str))
        return LambdifiedFlow(coords, rhs, red.loss, red.alpha, params,
                          name=f"{task.name}/{parameterization}", via=via)
    free = set().union(*(e.free_symbols for e in (*rhs, loss, alpha))) - set(coords)
    params = tuple(sorted(free, key=str))
    return LambdifiedFlow(coords, rhs, loss, alpha, params,
                          name=f"{task.name}/{parameterization}")


def task_parameters(task_name, **params) -> dict:
    """The task's numeric parameter values: its defaults updated with ``params``.

    Raises ValueError for a parameter the task does not have or an invalid value
    (:func:`derivations.task.validate_parameter`).
    """
    from derivations.task import get_task, validate_parameter
    task = get_task(task_name)
    allowed = ("m", "n", "b", "M") + tuple(task.parameter_names())
    values = dict(task.defaults)
    for key, v in params.items():
        if key not in allowed:
            raise ValueError(f"task {task_name!r} has no parameter {key!r} "
                             f"(parameters: {', '.join(allowed)})")
        values[key] = v
    out = {}
    for k, v in values.items():
        x = validate_parameter(k, v)
        out[k] = int(x) if k in ("M", "n_c") else float(x)
    return out


def _check_scalar(name, value, lo=0.0, hi=math.inf):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not (math.isfinite(value) and lo < value < hi):
        raise ValueError(f"{name} must be a finite number in ({lo!r}, {hi!r}), got {value!r}")
    return float(value)


def task_state_at_loss(task_name, ratio, loss, *, rtol=1e-12, atol=1e-14, **params) -> dict:
    r"""State of a task's reduced flow when its loss first reaches ``loss``.

    Setting of the paper's fixed-loss comparison: collapsed circuits (CACO),
    zero initialization, :math:`\eta_{OV} = 1`, :math:`\eta_{QK} =` ``ratio``.
    The task's reduced ODE is integrated with DOP853 (``rtol``, ``atol``) to the
    terminal event :math:`\log L = \log L^*`, located by ``solve_ivp``'s root
    finding on the dense output (agreement with the ``paper`` closed form: 1e-9).

    Parameters
    ----------
    task_name : str
        A built-in task the symbolic engine reduces.
    ratio : float
        :math:`\eta_{QK}/\eta_{OV} > 0`.
    loss : float
        Loss level in :math:`(0, L(0))` (:math:`L(0) = \log M` for class outputs).
    rtol, atol : float
        ``solve_ivp`` tolerances.
    **params
        The task's parameters (``m, n, b, M`` and its own, e.g. ``n_c``).

    Returns
    -------
    dict
        ``alpha`` (total attention on the m relevant tokens, class average),
        ``t`` (time of the crossing), ``loss``, ``ratio``, ``coordinates``
        (``{name: value}``, also as top-level keys), ``task``, ``params``.

    Raises
    ------
    ValueError
        Unknown task or parameter, invalid value, loss not in :math:`(0, L(0))`.
    RuntimeError
        The integration failed (never silently: the message says why).
    """
    ratio = _check_scalar("ratio", ratio)
    values = task_parameters(task_name, **params)
    system = reduced_system(task_name, "CACO")
    values.update(eta_QK=ratio, eta_OV=1.0)
    y0 = np.zeros(len(system.coords))
    L0 = system.loss_at(y0, values)
    loss = _check_scalar("loss", loss, 0.0, L0)
    res = system.solve(y0, values, target_loss=loss, rtol=rtol, atol=atol)
    if res["status"] != 1:
        raise RuntimeError(f"task {task_name!r}: the reduced flow did not reach loss {loss}: "
                           f"{res['message']}")
    c = res["crossings"][loss]
    coords = dict(zip(system.names, (float(v) for v in c["y"])))
    out = {"task": task_name, "ratio": ratio, "loss": c["loss"], "alpha": c["alpha"],
           "t": c["t"], "coordinates": coords, "params": values}
    for k, v in coords.items():
        out.setdefault(k, v)
    return out
