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
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.integrate import solve_ivp

__all__ = ["TaskReducedSystem", "reduced_system", "family_system", "task_state_at_loss",
           "task_parameters", "task_reduction"]


class _TooManyEvaluations(Exception):
    pass


@dataclass(frozen=True, eq=False)
class TaskReducedSystem:
    r"""A reduced ODE :math:`\dot y = f(y;\theta)` with its loss and attention, lambdified once.

    The task engine's counterpart of :class:`numerics.dynamics.reduced_system.ReducedSystem`
    (the paper's system, with generated code and closed forms): it evaluates any
    built-in task's reduced expressions, lambdified from the engine's cache.

    Parameters
    ----------
    coords : tuple of sympy.Symbol
        The reduced coordinates :math:`y`.
    rhs : tuple of sympy.Expr
        :math:`\dot y`, one expression per coordinate.
    loss, alpha : sympy.Expr
        Loss and relevant attention as functions of :math:`y` and :math:`\theta`.
    params : tuple of sympy.Symbol
        :math:`\theta`, in the positional order of the numeric calls.
    name : str
    via : (tuple of Symbol, tuple of Expr), optional
        ``(observables, their expressions in y)``: ``loss`` and ``alpha`` are
        then written in the observables (small expressions, stabilized), which
        are evaluated from ``y`` first.

    Attributes
    ----------
    names, param_names : tuple[str]
    """

    coords: tuple
    rhs: tuple
    loss: object
    alpha: object
    params: tuple
    name: str = ""
    via: tuple | None = None

    def __post_init__(self):
        from ..functions.lambdified import numeric   # lambdified once per system (imports SymPy)
        args = tuple(self.coords) + tuple(self.params)
        # the right-hand side: common subexpressions shared (lambdify cse), which
        # makes both the lambdification and the calls ~100x faster on the family
        # flows of factorized circuits; loss and alpha get the stable rewrites
        # (log1p/expm1) that matter at small loss
        object.__setattr__(self, "_f", numeric(tuple(self.rhs), args, "math", stable=False,
                                               cse=True).func)
        if self.via is None:
            object.__setattr__(self, "_L", numeric(self.loss, args, "math").func)
            object.__setattr__(self, "_a", numeric(self.alpha, args, "math").func)
        else:  # loss and alpha are functions of the observables, which are functions of y
            osyms, oexprs = self.via
            O = numeric(tuple(oexprs), args, "math", stable=False, cse=True).func
            oargs = tuple(osyms) + tuple(self.params)
            Lo = numeric(self.loss, oargs, "math").func
            ao = numeric(self.alpha, oargs, "math").func
            p = len(self.coords)
            object.__setattr__(self, "_L", lambda *a: Lo(*O(*a), *a[p:]))
            object.__setattr__(self, "_a", lambda *a: ao(*O(*a), *a[p:]))
        object.__setattr__(self, "names", tuple(str(c) for c in self.coords))
        object.__setattr__(self, "param_names", tuple(str(p) for p in self.params))

    def _pvals(self, values):
        missing = [p for p in self.param_names if p not in values]
        if missing:
            raise ValueError(f"{self.name}: missing parameter values {missing}")
        return tuple(float(values[p]) for p in self.param_names)

    def loss_at(self, y, values) -> float:
        """Loss at coordinates ``y`` with parameter ``values`` (dict by name)."""
        return float(self._L(*y, *self._pvals(values)))

    def alpha_at(self, y, values) -> float:
        """Relevant attention at ``y``."""
        return float(self._a(*y, *self._pvals(values)))

    def rhs_at(self, y, values) -> np.ndarray:
        """:math:`\\dot y` at ``y``."""
        return np.array(self._f(*y, *self._pvals(values)), dtype=float)

    def solve(self, y0, values, *, target_loss=None, loss_thresholds=(), t_span=(0.0, np.inf),
              t_eval=None, rtol=1e-12, atol=1e-14, method="DOP853", max_nfev=1_000_000) -> dict:
        r"""Integrate from ``y0``; stop at ``target_loss`` (terminal event) if given.

        Returns
        -------
        dict
            ``t`` (records), ``y`` (records x coords), ``loss``, ``alpha`` (at the
            records), ``crossings`` (``{level: {"t", "y", "loss", "alpha"}}`` for
            each level crossed downwards), ``status`` (1 target reached, 0 end of
            ``t_span``, -1 failure), ``message``, ``nfev``.
        """
        pv = self._pvals(values)
        f, Lf, af = self._f, self._L, self._a
        y0 = np.asarray(y0, dtype=float)
        if y0.shape != (len(self.coords),) or not np.all(np.isfinite(y0)):
            raise ValueError(f"y0 must be {len(self.coords)} finite numbers, got {y0!r}")
        levels = [float(v) for v in loss_thresholds]
        if target_loss is not None:
            levels.append(float(target_loss))
        for v in levels:
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"loss levels must be finite and > 0, got {v!r}")
        if not math.isfinite(t_span[1]) and target_loss is None:
            raise ValueError("an infinite t_span needs target_loss")
        count = [0]

        def rhs(t, y):
            count[0] += 1
            if count[0] > max_nfev:
                raise _TooManyEvaluations
            return f(*y, *pv)

        def make_event(level, terminal):
            log_level = math.log(level)

            def event(t, y):
                return math.log(Lf(*y, *pv)) - log_level
            event.terminal, event.direction = terminal, -1
            return event

        events = [make_event(v, False) for v in loss_thresholds]
        if target_loss is not None:
            events.append(make_event(float(target_loss), True))
        try:
            sol = solve_ivp(rhs, t_span, y0, method=method, t_eval=t_eval, events=events or None,
                            rtol=rtol, atol=atol)
        except _TooManyEvaluations:
            return {"t": np.empty(0), "y": np.empty((0, y0.size)), "loss": np.empty(0),
                    "alpha": np.empty(0), "crossings": {}, "status": -1, "nfev": count[0],
                    "message": f"stopped after max_nfev={max_nfev} evaluations"}
        crossings = {}
        for lev, te, ye in zip(levels, sol.t_events or (), sol.y_events or ()):
            if len(te) and lev not in crossings:
                crossings[lev] = {"t": float(te[0]), "y": ye[0].copy(),
                                  "loss": float(Lf(*ye[0], *pv)), "alpha": float(af(*ye[0], *pv))}
        Y = sol.y.T
        return {"t": sol.t, "y": Y,
                "loss": np.array([Lf(*y, *pv) for y in Y], dtype=float),
                "alpha": np.array([af(*y, *pv) for y in Y], dtype=float),
                "crossings": crossings, "status": int(sol.status), "message": str(sol.message),
                "nfev": count[0]}


# --------------------------------------------------------------------------- #
# the engine's systems
# --------------------------------------------------------------------------- #
@lru_cache(maxsize=None)
def reduced_system(task_name="paper", parameterization="CACO") -> TaskReducedSystem:
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
def family_system(task_name="paper", parameterization="CACO") -> TaskReducedSystem:
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
        return TaskReducedSystem(coords, rhs, red.loss, red.alpha, params,
                             name=f"{task.name}/{parameterization}", via=via)
    free = set().union(*(e.free_symbols for e in (*rhs, loss, alpha))) - set(coords)
    params = tuple(sorted(free, key=str))
    return TaskReducedSystem(coords, rhs, loss, alpha, params,
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
