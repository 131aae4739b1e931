r"""The state at a loss, for every task: one entry point, one result type.

Setting of the paper's fixed-loss comparison (Figure 4): collapsed circuits
(CACO) from zero initialization, :math:`\eta_{OV} = 1`, :math:`\eta_{QK} = r`
(the *ratio*); the state is where the loss first reaches ``loss``.
:func:`state_at_loss` answers

* with the **closed form** where the task has it: the paper's task
  (:func:`numerics.dynamics.closed_form.state_at_loss`, no SymPy imported),
  and every task whose CACO flow the engine maps onto the paper's equations
  (``eta_QK -> kappa_QK eta_QK``, ``eta_OV -> kappa_OV eta_OV``; for example
  ``shared-irrelevant`` with :math:`\kappa_{QK} = (n_c+1)/n_c`): the paper's
  state at the mapped ratio :math:`r\,\kappa_{QK}/\kappa_{OV}`;
* with the **reduced flow** otherwise: the task's reduced ODE
  (:class:`~numerics.dynamics.lambdified_flow.LambdifiedFlow`) integrated from
  zero by DOP853 (``rtol``, ``atol``) to the terminal event
  :math:`\log L = \log L^*`.

Both return a :class:`StateAtLoss` whose ``method`` says which answered. Each
method has the range it is tested on (:data:`REDUCED_FLOW_RANGE`,
:data:`numerics.dynamics.closed_form.SUPPORTED_RANGE`); outside it a
``ValueError`` names the user's parameter and the range, never a wrong number
and never the mapped ratio.

>>> from numerics.dynamics.state import state_at_loss
>>> paper = state_at_loss(0.1, 10.0)
>>> paper.method, round(float(paper.alpha), 6)
('closed form', 0.695206)
>>> mapped = state_at_loss(0.1, 10.0, task="shared-irrelevant", n_c=5)
>>> mapped.method, float(mapped.mapped_ratio)
('closed form', 12.0)
>>> flow = state_at_loss(0.1, 10.0, task="query-in-context")
>>> flow.method, sorted(flow.coordinates), round(float(flow.alpha), 6)
('reduced flow', ['mu_OV', 'mu_OV_q', 'mu_QK', 'mu_QK_q'], 0.693866)
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..validation import as_numbers, check_in_range, shown_number
from .state_result import StateAtLoss

__all__ = ["state_at_loss", "METHODS", "REDUCED_FLOW_RANGE", "FACTORIZED_RATIO_RANGE"]

#: The methods that answer, in the order :func:`state_at_loss` tries them.
METHODS = ("closed form", "reduced flow")
#: Ratios on which the paper's factorized state (FAFO, FACO, CAFO) is tested: against the reduced ODEs
#: integrated by DOP853 up to 1e6 and against a 40-digit mpmath quadrature of their orbit from 1e9 (relative
#: error at most 2e-15 up to 1e300; ``tests/numerics/dynamics/test_factorized_state_extreme.py``): up to the top
#: of the collapsed closed form's range and print_dynamics' (the lower end open: small ratios are answered
#: down to where the factors' rates underflow, which is refused by name).
FACTORIZED_RATIO_RANGE = (0.0, 1e12)
#: Ranges on which the reduced-flow state is tested against the paper's closed
#: form (every corner, relative error below 1e-8, each under two seconds;
#: ``tests/numerics/dynamics/test_task_numerics_state.py``). ``loss`` runs from the lower bound
#: up to the initial loss (exclusive); ``M`` is an integer.
REDUCED_FLOW_RANGE = {"ratio": (1e-4, 1e4), "loss": (1e-8, math.inf), "m": (1e-3, 1e3),
                      "n": (1e-3, 1e3), "b": (0.1, 1e3), "M": (2, 10**6)}


def state_at_loss(loss, ratio=1.0, *, task="paper", parameterization="CACO", method=None,
                  rtol=1e-12, atol=1e-14, **params) -> StateAtLoss:
    r"""The state where the loss first reaches ``loss``, for any task.

    Parameters
    ----------
    loss : array_like
        Loss levels below the initial loss (:math:`\log M` for class outputs).
    ratio : array_like
        :math:`r = \eta_{QK}/\eta_{OV}` (broadcast against ``loss``).
    task : str or derivations.engine.task.Task
        A task the engine reduces: a built-in name, the path of a task file (.toml)
        or a :class:`~derivations.engine.task.Task`.
    parameterization : str
        ``"CACO"`` (the fixed-loss comparison). The paper's task also answers
        the factorized ones in closed form (its balanced orbits through the
        paper's initialization, :meth:`ReducedSystem.state_at_loss
        <numerics.dynamics.paper_closed_forms.PaperClosedForms.state_at_loss>`),
        at ratios in :data:`FACTORIZED_RATIO_RANGE`.
    method : {None, "closed form", "reduced flow"}
        Force a method; default: the closed form where the task has it.
    rtol, atol : float
        Tolerances of the reduced flow's DOP853 (finite, > 0; checked whichever method answers).
    **params
        The task's parameters (``m, n, b, M`` and its own, e.g. ``n_c``).

    Returns
    -------
    StateAtLoss

    Raises
    ------
    ValueError
        Unknown task, parameter or method; a value outside the range the
        answering method is tested on (the message names it).
    RuntimeError
        The reduced flow failed (the message says why; never silently).
    """
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    from derivations.core.vocabulary import check_positive
    rtol, atol = check_positive("rtol", rtol), check_positive("atol", atol)
    if isinstance(task, str) and task == "paper" and parameterization == "CACO" and method != "reduced flow":
        return _paper_closed_form(loss, ratio, params)      # the cold path: no SymPy
    from derivations.tasks import get_task
    task = get_task(task)      # a built-in name, a task file or a Task
    from derivations.core.vocabulary import check_parameterization
    P = check_parameterization(parameterization)
    if P != "CACO":
        if task.name != "paper" or method == "reduced flow":
            raise ValueError(f"the state at a loss of task {task.name!r} is defined for collapsed "
                             f"circuits (CACO) from zero initialization; got {P}")
        return _paper_orbit(loss, ratio, P, params)
    from .task_systems import task_parameters
    values = task_parameters(task, **params)
    task.check_symbolic()     # a task the engine does not reduce says so
    shown = {**values, **params}     # the user's values, for the messages
    kappa = None if method == "reduced flow" else _ratio_map(task, values)
    if kappa is not None:
        from .closed_form import SUPPORTED_RANGE
        ranges = {**SUPPORTED_RANGE, "M": (2, 2**53)}
        _check_model_range(task, params, shown, ranges, f"the closed-form state of task {task.name!r}")
        st = _mapped_closed_form(loss, ratio, task, values, *kappa)
        return st._replace(**_attention_shares(task, {"mu_QK": st.mu_QK, "mu_OV": st.mu_OV}, values))
    if method == "closed form":
        raise ValueError(f"task {task.name!r} has no closed-form state: the engine maps its flow onto "
                         "no equation of the paper's (use method='reduced flow')")
    _check_model_range(task, params, shown, REDUCED_FLOW_RANGE, f"the reduced-flow state of task {task.name!r}")
    st = _reduced_flow(loss, ratio, task, values, rtol, atol)
    return st._replace(**_attention_shares(task, st.coordinates, values))


def _check_model_range(task, params, values, ranges, what):
    """``values`` of m, n, b, M in ``ranges``; a value the caller did not give (not in ``params``) that
    the task's file sets is named by the file's key (``"<path>: defaults.n: n must be ..."``)."""
    from derivations.engine.task_file import default_key
    for key in ("m", "n", "b", "M"):
        try:
            check_in_range(key, values[key], *ranges[key], f"for {what} (the range it is tested on)")
        except ValueError as exc:
            where = None if key in params else default_key(task, key)
            if where is None:
                raise
            raise ValueError(f"{where}: {exc}") from None


def _paper_closed_form(loss, ratio, params):
    from .closed_form import state_at_loss as closed
    unknown = sorted(set(params) - {"m", "n", "b", "M"})
    if unknown:
        raise ValueError(f"task 'paper' has no parameter {unknown[0]!r} (parameters: m, n, b, M)")
    st = closed(loss, ratio, **params)
    alpha = np.asarray(st.alpha, dtype=float)
    with np.errstate(divide="ignore"):
        other = np.where(np.isfinite(st.p), 1.0 / (1.0 + np.asarray(st.p, dtype=float)), 1.0 - alpha)
    return st._replace(relevant_attention=alpha, self_attention=np.zeros_like(alpha), other_attention=other)


def _attention_shares(task, coordinates, values) -> dict:
    """``{relevant_attention, self_attention, other_attention}`` of ``task`` at its reduced
    ``coordinates`` (observables by name, arrays) and parameter ``values``: the engine's
    attention of each token group, summed by role; ``{}`` where the coordinates are not
    the observables."""
    coords, params, f = _shares_function(task)
    if any(name not in coordinates for name in coords):
        return {}
    shape = np.shape(next(iter(coordinates.values())))
    out = f(*(np.asarray(coordinates[name], dtype=float) for name in coords),
            *(float(values[name]) for name in params))
    return {k: np.broadcast_to(np.asarray(v, dtype=float), shape).copy()
            for k, v in zip(("relevant_attention", "self_attention", "other_attention"), out)}


@lru_cache(maxsize=64)
def _shares_function(task):
    """``(coordinate names, parameter names, f)``: the summed shares of :func:`_attention_shares`
    as a NumPy function of the observables and the task's parameters, each share divided
    through by its term (finite where an exponential overflows; the relevant share the same
    expression as the flow's alpha); lambdified once per task."""
    import sympy as sp

    from ..functions.numeric_function import numeric

    from derivations.task_catalog import task_reduction
    red = task_reduction(task, "CACO")
    params = set(task.symbols().values())
    rel = sum((red.attention[g] for g in task.relevant if g in red.attention), sp.S.Zero)
    own = red.attention.get(task.query, sp.S.Zero)
    other = sum((v for g, v in red.attention.items() if g != task.query and g not in task.relevant), sp.S.Zero)
    exprs = tuple(sp.sympify(e) for e in (rel, own, other))
    free = set().union(*(e.free_symbols for e in exprs))
    coords = sorted(free - params, key=str)
    pars = sorted(free & params, key=str)
    f = numeric(exprs, (*coords, *pars), "numpy", stable=False, shares=True).func
    return tuple(map(str, coords)), tuple(map(str, pars)), f


def _paper_orbit(loss, ratio, P, params):
    from .reduced_system import ReducedSystem
    r = check_in_range("ratio", ratio, *FACTORIZED_RATIO_RANGE,
                       f"for the closed-form state of {P} (the range it is tested on)", lo_open=True)
    L, r = np.broadcast_arrays(as_numbers("loss", loss, "a number (or numbers) in (0, log M)"), r)
    out = {k: np.empty(L.shape) for k in ("mu_OV", "mu_QK", "alpha")}
    for i in np.ndindex(L.shape):
        st = ReducedSystem(P, eta_QK=float(r[i]), **params).state_at_loss(float(L[i]))
        for k in out:
            out[k][i] = float(getattr(st, k))
    coords = {"mu_OV": out["mu_OV"], "mu_QK": out["mu_QK"]}
    return StateAtLoss(out["mu_OV"], out["mu_QK"], out["alpha"], L, r, coordinates=coords,
                       relevant_attention=out["alpha"], self_attention=np.zeros_like(out["alpha"]),
                       other_attention=1.0 - out["alpha"])


def _ratio_map(task, values):
    """``(kappa_QK, kappa_OV)`` (SymPy numbers) of a task whose CACO flow the
    engine maps onto the paper's, else None."""
    if task.name == "paper":
        return 1, 1
    from derivations.output.dynamics import exact_number
    from derivations.symbolic.symbols import SYMBOLS, eta_OV, eta_QK
    from derivations.task_catalog import task_reduction
    red = task_reduction(task, "CACO")
    if red.mapping is None:
        return None
    table = {**SYMBOLS, **task.symbols()}
    subs = {table[k]: exact_number(v) for k, v in values.items()}
    k_qk = (red.mapping.get(eta_QK, eta_QK) / eta_QK).subs(subs)
    k_ov = (red.mapping.get(eta_OV, eta_OV) / eta_OV).subs(subs)
    return k_qk, k_ov


def _mapped_closed_form(loss, ratio, task, values, k_qk, k_ov):
    """The paper's closed form at the mapped ratio ``ratio * k_qk / k_ov``;
    its ratio range is the closed form's divided by the map, named in the
    user's terms (never the mapped value)."""
    from .closed_form import SUPPORTED_RANGE
    from .closed_form import state_at_loss as closed
    lo, hi = SUPPORTED_RANGE["ratio"]
    k = float(k_qk / k_ov)
    scale = "" if k == 1 else f", the paper's at ratio x {k:.15g}"
    what = (f"in [{lo / k:.6g}, {hi / k:.6g}] for the closed-form state of task {task.name!r}{scale} "
            "(the range it is tested on)")
    r = as_numbers("ratio", ratio, what)
    # as derivations.output.dynamics computes it: ratio * k_QK / k_OV in SymPy, then rounded
    with np.errstate(invalid="ignore", over="ignore"):
        mapped = np.vectorize(lambda x: float(float(x) * k_qk / k_ov), otypes=[float])(r)
    ok = np.isfinite(mapped) & (mapped >= lo) & (mapped <= hi)
    if not ok.all():
        raise ValueError(f"ratio must be {what}; got {shown_number(r[~ok].ravel()[0])}")
    model = {key: values[key] for key in ("m", "n", "b", "M")}
    st = closed(loss, mapped, **model)
    return st._replace(ratio=np.broadcast_to(r, st.ratio.shape).copy(), task=task.name,
                       mapped_ratio=st.ratio)


def _check_reduced_flow_range(loss, ratio, task, values, flow, y0):
    """The arguments within :data:`REDUCED_FLOW_RANGE`, the loss below the initial loss."""
    what = f"for the reduced-flow state of task {task.name!r}"
    r = check_in_range("ratio", ratio, *REDUCED_FLOW_RANGE["ratio"], f"{what} (the range it is tested on)")
    L0 = flow.loss_at(y0, dict(values, eta_QK=1.0, eta_OV=1.0))   # the initial loss
    L = check_in_range("loss", loss, REDUCED_FLOW_RANGE["loss"][0], L0,
                       f"{what} up to its initial loss (the range it is tested on)", hi_open=True)
    return np.broadcast_arrays(L, r)


def _reduced_flow(loss, ratio, task, values, rtol, atol):
    """The task's reduced flow from zero (:meth:`ReducedSystem.integrate
    <numerics.dynamics.reduced_system.ReducedSystem.integrate>` of its lambdified
    system), one integration per (loss, ratio)."""
    from .reduced_system import ReducedSystem
    from .task_systems import reduced_flow
    flow = reduced_flow(task, "CACO")
    y0 = np.zeros(len(flow.names))
    L, r = _check_reduced_flow_range(loss, ratio, task, values, flow, y0)
    fields = {k: np.empty(L.shape) for k in ("loss", "alpha", "t", *flow.names)}
    for i in np.ndindex(L.shape):
        system = ReducedSystem("CACO", task=task, flow=flow, mu0=y0, eta_QK=float(r[i]),
                               eta_OV=1.0, **values)
        run = system.integrate(target_loss=float(L[i]), rtol=rtol, atol=atol)
        if run.status != 1:
            raise RuntimeError(f"task {task.name!r}: the reduced flow did not reach loss "
                               f"{float(L[i])}: {run.message}")
        for name in fields:
            fields[name][i] = run.target_state[name]
    fields["time"] = fields.pop("t")
    coords = {name: fields[name] for name in flow.names}
    return StateAtLoss(coords.get("mu_OV"), coords.get("mu_QK"), fields["alpha"],
                       fields["loss"], r.copy(), method="reduced flow", time=fields["time"],
                       coordinates=coords, task=task.name)
