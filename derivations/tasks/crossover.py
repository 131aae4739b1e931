r"""Where attention goes: the master flow of a task's CACO dynamics and the statements it decides.

The engine's reduced CACO flow of a task is a gradient flow with a constant diagonal metric
:math:`G` in the score gaps :math:`x_g` (``mu_QK*``) and logit gaps :math:`y_g` (``mu_OV*``),
and its loss is a function of one margin :math:`u = \sum_g a_g(x)\, y_g` (attention-weighted
logit gaps): :math:`L = \log(1 + (M - 1) e^{-u})`. :func:`master_flow` derives, from the
engine's flow and not from a typed model, the rescaled system

.. math::

    y = \ell\, Y, \qquad d\sigma = \frac{\eta_{OV}\, \psi(u)}{b (M - 1)\, \ell}\, dt, \qquad
    \Lambda = \frac{r (M - 1)\, \ell(L)^2}{M b}, \qquad \ell(L) = \log\frac{M - 1}{e^{L} - 1},

with :math:`\psi = -dL/du > 0` and :math:`r = \eta_{QK}/\eta_{OV}`: the loss :math:`L` is
reached where :math:`U = \sum_g a_g Y_g = 1`, and the right-hand sides hold no symbol of
:math:`\eta_{QK}, \eta_{OV}, b, M, L` besides :math:`\Lambda`. From zero (:math:`x = y = 0`,
hence :math:`Y = 0`) the state at the loss, and so every attention share, is therefore a
function of :math:`\Lambda` alone (the *collapse*): one master curve per task.

Where it does not hold: a start with nonzero logit gaps (:math:`Y(0) = y(0)/\ell` then depends
on :math:`L`), and the factorized parameterizations (FACO, CAFO, FAFO), whose metric is not
constant (:func:`master_flow` raises ``ValueError`` for them).

The statements decided on the master flow (:func:`exchange_symmetry`,
:func:`no_crossover_identity`, :func:`window_signs`, :func:`early_growth_ratio`) name the self
group (the query's own token) and the relevant group.

>>> flow = master_flow("query-copies")
>>> sorted(str(s) for s in flow.rhs[flow.x["r"]].free_symbols)
['Lambda', 'R', 'Y_q', 'Y_r', 'm', 'mu_QK', 'mu_QK_q', 'n', 's']
>>> window_signs(flow)
(-m + s, s - m/R)
>>> one = flow.subs({flow.symbol("R"): 1})
>>> exchange_symmetry(one, {flow.symbol("s"): flow.symbol("m"), flow.symbol("m"): flow.symbol("s")})
True
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..symbolic.exp_zero import is_zero

__all__ = ["MasterFlow", "Lambda", "ell", "margin_of_loss", "master_flow", "exchange_symmetry",
           "no_crossover_identity", "window_signs", "early_growth_ratio", "ratio_of_lambda"]

#: The collapse variable :math:`\Lambda = r (M - 1) \ell^2 / (M b)`.
Lambda = sp.Symbol("Lambda", positive=True)
#: The margin at the stopping loss, :math:`\ell(L) = \log((M - 1)/(e^L - 1))`.
ell = sp.Symbol("ell", positive=True)
_L, _r = sp.symbols("L r", positive=True)


@dataclass(frozen=True)
class MasterFlow:
    r"""The rescaled CACO flow of a task (see the module docstring).

    Attributes
    ----------
    task : str
    x : dict
        Attended, embedded token group -> its score gap (a ``mu_QK*`` observable).
    Y : dict
        The same groups -> the scaled logit gap :math:`Y_g = y_g / \ell`.
    shares : dict
        Every token group -> its attention share, in the score gaps.
    margin : sympy.Expr
        :math:`U = \sum_g a_g Y_g`; the stopping loss is reached at :math:`U = 1`.
    rhs : dict
        Every ``x`` and ``Y`` symbol -> its derivative in :math:`\sigma`; free of
        :math:`\eta_{QK}, \eta_{OV}, b, M, L` (checked when built).
    self_group : str or None
        The query's own token group (None where the query is not attended).
    relevant_group : str
        The relevant group (its share is ``alpha``).
    """

    task: str
    x: dict
    Y: dict
    shares: dict
    margin: sp.Expr
    rhs: dict
    self_group: str | None
    relevant_group: str

    def subs(self, values: dict) -> "MasterFlow":
        """The flow with task parameters replaced (e.g. ``{R: 1}``), shares and margin included.

        Parameters
        ----------
        values : dict
            Symbol -> value or expression.

        Returns
        -------
        MasterFlow
        """
        return MasterFlow(self.task, self.x, self.Y, {g: a.subs(values) for g, a in self.shares.items()},
                          self.margin.subs(values), {k: v.subs(values) for k, v in self.rhs.items()},
                          self.self_group, self.relevant_group)

    def symbol(self, name: str) -> sp.Symbol:
        """The flow's symbol called ``name`` (ValueError if it has none).

        Parameters
        ----------
        name : str
            The symbol's name.

        Returns
        -------
        sympy.Symbol

        Raises
        ------
        ValueError
            If no symbol of the flow's right-hand sides or shares has that name.
        """
        for expr in (*self.rhs.values(), *self.shares.values()):
            for sym in expr.free_symbols:
                if sym.name == name:
                    return sym
        raise ValueError(f"task {self.task!r}: the master flow has no symbol {name!r}")


def margin_of_loss(loss: sp.Expr, M: sp.Symbol) -> sp.Expr:
    r"""The margin :math:`u` with :math:`L = \log(1 + (M - 1) e^{-u})`, i.e.
    :math:`u = \log((M - 1)/(e^L - 1))`, simplified.

    Parameters
    ----------
    loss : sympy.Expr
        The task's population loss in its observables.
    M : sympy.Symbol
        The number of classes.

    Returns
    -------
    sympy.Expr
    """
    return sp.simplify(sp.log((M - 1) / (sp.exp(loss) - 1)))


def ratio_of_lambda(lam=Lambda, loss=_L, M=None, b=None) -> sp.Expr:
    r""":math:`r = \Lambda M b / ((M - 1)\, \ell(L)^2)`, the learning-rate ratio of a
    :math:`\Lambda` at the stopping loss ``loss``.

    Parameters
    ----------
    lam, loss, M, b : sympy.Expr, optional
        Symbols or values (``M`` and ``b`` default to the paper's symbols).

    Returns
    -------
    sympy.Expr
    """
    from ..symbolic.symbols import M as M_, b as b_
    M = M_ if M is None else M
    b = b_ if b is None else b
    return lam * M * b / ((M - 1) * sp.log((M - 1) / (sp.exp(loss) - 1)) ** 2)


def _split(reduction):
    """The QK and OV observables of a CACO reduction, in the metric's order."""
    names = list(reduction.observables)
    G = reduction.metric
    if G is None or not G.is_diagonal():
        raise ValueError(f"task {reduction.task!r}: the master flow needs a constant diagonal "
                         "metric (collapsed circuits, CACO)")
    from ..symbolic.symbols import eta_OV, eta_QK
    qk = [o for i, o in enumerate(names) if G[i, i].has(eta_QK) and not G[i, i].has(eta_OV)]
    ov = [o for i, o in enumerate(names) if G[i, i].has(eta_OV) and not G[i, i].has(eta_QK)]
    if len(qk) + len(ov) != len(names):
        raise ValueError(f"task {reduction.task!r}: a metric entry mixes the two rates")
    return names, G, qk, ov


def _groups(reduction, u, qk, ov):
    """Group -> (score gap, logit gap): the score gap whose softmax derivative is the group's,
    :math:`\\partial a_g/\\partial x = a_g (1 - a_g)`, and the logit gap whose coefficient in the
    margin is :math:`a_g`."""
    pairs = {}
    for group, share in reduction.attention.items():
        xs = [x for x in qk if is_zero(sp.diff(share, x) - share * (1 - share))]
        ys = [y for y in ov if is_zero(sp.diff(u, y) - share)]
        if len(xs) == 1 and len(ys) == 1:
            pairs[group] = (xs[0], ys[0])
        elif xs or ys:
            raise ValueError(f"task {reduction.task!r}: group {group!r} has no single score gap "
                             "and logit gap")
    if len(pairs) != len(qk) or not is_zero(u - sum(reduction.attention[g] * y
                                                    for g, (_x, y) in pairs.items())):
        raise ValueError(f"task {reduction.task!r}: the margin is not the attention-weighted "
                         "sum of the logit gaps")
    return pairs


def master_flow(task: str = "query-in-context", reduction=None) -> MasterFlow:
    r"""The rescaled CACO flow of ``task``, derived from the engine's reduced flow.

    Steps: the margin :math:`u` from the engine's loss (:func:`margin_of_loss`); each
    group's score and logit gap; a check that the engine's ODEs are
    :math:`\dot o = G_{oo}\, \psi(u)\, \partial u / \partial o` (a simplification to zero); the
    substitution :math:`y = \ell Y`, the re-timing by
    :math:`\eta_{OV}\psi/(b (M - 1) \ell)` and :math:`\eta_{QK} = \Lambda M b
    \eta_{OV}/((M - 1) \ell^2)`; a check that no symbol of
    :math:`\eta_{QK}, \eta_{OV}, b, M, \ell` remains.

    Parameters
    ----------
    task : str or Task
        A task the engine reduces (a built-in name or a ``Task``).
    reduction : derivations.engine.TaskReduction, optional
        The task's CACO reduction when the caller has it already (the cached one of
        :func:`derivations.task_catalog.task_reduction`); derived with
        :func:`derivations.engine.reduce_task` when omitted.

    Returns
    -------
    MasterFlow

    Raises
    ------
    ValueError
        The task's CACO flow is not of that form (the message says which step failed).
    """
    from ..engine import reduce_task
    from ..symbolic.symbols import M, b, eta_OV, eta_QK
    red = reduce_task(task, "CACO") if reduction is None else reduction
    from ..engine.reduce import as_task
    spec = as_task(task)
    if (red.task, red.parameterization) != (spec.name, "CACO"):
        raise ValueError(f"reduction must be the CACO reduction of {spec.name!r}; got "
                         f"{red.parameterization} of {red.task!r}")
    names, G, qk, ov = _split(red)
    u = margin_of_loss(red.loss, M)
    psi = (M - 1) * sp.exp(-u) / (1 + (M - 1) * sp.exp(-u))
    for i, o in enumerate(names):
        if not is_zero(red.odes[o] - G[i, i] * psi * sp.diff(u, o)):
            raise ValueError(f"task {red.task!r}: d{o}/dt is not G psi(u) du/d{o}")
    pairs = _groups(red, u, qk, ov)
    Y = {g: sp.Symbol(f"Y_{g}", real=True) for g in pairs}
    scaled = {y: ell * Y[g] for g, (_x, y) in pairs.items()}
    U = sp.simplify(u.subs(scaled) / ell)
    clock = eta_OV / (b * (M - 1) * ell)                 # d sigma / dt divided by psi
    rates = {eta_QK: Lambda * M * b * eta_OV / ((M - 1) * ell ** 2)}
    rhs = {}
    for g, (x, y) in pairs.items():
        i, j = names.index(x), names.index(y)
        rhs[x] = sp.simplify((G[i, i] * sp.diff(u, x)).subs(scaled).subs(rates) / clock)
        rhs[Y[g]] = sp.simplify((G[j, j] * sp.diff(u, y)).subs(scaled).subs(rates) / (clock * ell))
    left = set().union(*(e.free_symbols for e in rhs.values())) & {eta_QK, eta_OV, b, M, ell}
    if left:
        raise ValueError(f"task {red.task!r}: the rescaled flow still holds {sorted(map(str, left))}")
    if len(spec.relevant) != 1:
        raise ValueError(f"task {spec.name!r}: the master flow names one relevant group")
    own = spec.query if spec.query in pairs else None
    return MasterFlow(spec.name, {g: x for g, (x, _y) in pairs.items()}, Y, dict(red.attention),
                      U, rhs, own, spec.relevant[0])


def _pair(flow):
    if flow.self_group is None:
        raise ValueError(f"task {flow.task!r}: the query does not attend to itself (no self share)")
    q, r = flow.self_group, flow.relevant_group
    return q, r, flow.x[q], flow.x[r], flow.Y[q], flow.Y[r]


def _at_zero(flow, expr):
    return expr.subs({**{x: 0 for x in flow.x.values()}, **{Y: 0 for Y in flow.Y.values()}})


def exchange_symmetry(flow: MasterFlow, swap: dict) -> bool:
    r"""Whether exchanging the self and relevant groups' coordinates together with the task
    parameters in ``swap`` maps the master flow onto itself.

    Parameters
    ----------
    flow : MasterFlow
    swap : dict
        Parameter exchange, e.g. ``{s: m, m: s}`` (with ``R = 1`` substituted beforehand).

    Returns
    -------
    bool
        True when every right-hand side is carried to its partner's (a simplification to zero).
    """
    _q, _r, xq, xr, Yq, Yr = _pair(flow)
    partner = {xq: xr, xr: xq, Yq: Yr, Yr: Yq}
    return all(is_zero(flow.rhs[v].subs({**partner, **swap}, simultaneous=True) - flow.rhs[partner[v]])
               for v in partner)


def no_crossover_identity(flow: MasterFlow):
    r"""On the edge :math:`x_q = x_r` of the region :math:`\{x_q \ge x_r, Y_q \ge Y_r\}`, the
    growth of :math:`x_q - x_r` as a sum of terms of known sign.

    With :math:`A = a_q`, :math:`B = a_r`, :math:`E = Y_q - Y_r`, the derived identity (checked by
    simplification) is

    .. math:: \frac{d(x_q - x_r)}{d\sigma} = \Lambda\,[\,Y_r (A - B)(1 - A - B) + A E (1 - A + B)\,],

    valid where the self and relevant groups have the same metric (one relevant type, R = 1). With
    :math:`A > B` (which :math:`x_q = x_r` and :math:`s > m` give), :math:`A + B \le 1`,
    :math:`Y \ge 0` and :math:`E \ge 0` it is :math:`\ge 0`, and :math:`dE/d\sigma = A - B > 0`:
    the region is forward invariant, so from zero the sign of (self - relevant) is that of
    (s - m) at every :math:`\Lambda`, i.e. every ratio and loss.

    Parameters
    ----------
    flow : MasterFlow

    Returns
    -------
    tuple
        ``(identity, (A, B, E))``: the right-hand side above in the symbols ``A, B, E``, ``Y_r``,
        ``Lambda``.

    Raises
    ------
    ValueError
        The identity does not hold for this flow (e.g. unequal metrics, R > 1).
    """
    _q, _r, xq, xr, Yq, Yr = _pair(flow)
    A, B, E = sp.symbols("A B E", real=True)
    claim = Lambda * (Yr * (A - B) * (1 - A - B) + A * E * (1 - A + B))
    edge = {xq: xr, Yq: Yr + E}
    growth = (flow.rhs[xq] - flow.rhs[xr]).subs(edge)
    shares = {A: flow.shares[flow.self_group].subs(edge), B: flow.shares[flow.relevant_group].subs(edge)}
    if not is_zero(growth - claim.subs(shares)):
        raise ValueError(f"task {flow.task!r}: the edge growth is not the sign identity's "
                         "(the self and relevant groups' metrics differ)")
    return claim, (A, B, E)


def window_signs(flow: MasterFlow) -> tuple:
    r"""The two signs that bound the crossover window, derived at the start.

    * :math:`\Lambda \to 0` (score gaps frozen at zero): self minus relevant share at zero,
      times :math:`Z_0`: :math:`s - m`.
    * :math:`\Lambda \to \infty` (the score gaps ascend :math:`U` on logit gaps that have only
      begun to grow): :math:`Z_0` times the difference of the initial growth rates of
      :math:`Y_q` and :math:`Y_r`: :math:`s - m/R`; the group with the faster-growing logit gap
      draws the attention.

    A crossover (relevant ahead at small :math:`\Lambda`, self ahead at large) needs the first
    negative and the second positive: :math:`m/R < s < m`. That the difference changes sign once
    in between is observed (numerics), not derived.

    Parameters
    ----------
    flow : MasterFlow

    Returns
    -------
    tuple of sympy.Expr
        ``(small_lambda, large_lambda)``.
    """
    q, r, _xq, _xr, Yq, Yr = _pair(flow)
    Z0 = sp.denom(sp.together(_at_zero(flow, flow.shares[r])))
    small = sp.simplify(_at_zero(flow, flow.shares[q] - flow.shares[r]) * Z0)
    large = sp.simplify(_at_zero(flow, flow.rhs[Yq] - flow.rhs[Yr]) * Z0)
    return small, large


def early_growth_ratio(flow: MasterFlow) -> sp.Expr:
    r"""The ratio of the self and relevant score gaps' growth from zero, to leading order.

    :math:`Y = \sigma\, Y'(0) + O(\sigma^2)` and :math:`x_g = \Lambda k_g \sigma^2/2 +
    O(\sigma^3)` with :math:`k_g = \sum_h \partial_{Y_h} \dot x_g / \Lambda \cdot Y_h'(0)`
    at zero; the ratio :math:`k_q/k_r` holds no :math:`\Lambda`, so it does not depend on the
    learning-rate ratio (nor on L, M, b).

    Parameters
    ----------
    flow : MasterFlow

    Returns
    -------
    sympy.Expr
        :math:`k_q / k_r` in the task's parameters.

    Raises
    ------
    ValueError
        If the ratio depends on :math:`\Lambda` (the derivation's claim fails for the task).
    """
    q, r, xq, xr, _Yq, _Yr = _pair(flow)
    slopes = {Y: _at_zero(flow, flow.rhs[Y]) for Y in flow.Y.values()}
    k = {x: sum(_at_zero(flow, sp.diff(flow.rhs[x], Y)) * slopes[Y] for Y in flow.Y.values())
         for x in (xq, xr)}
    ratio = sp.simplify(k[xq] / k[xr])
    if Lambda in ratio.free_symbols:
        raise ValueError(f"task {flow.task!r}: the early growth ratio depends on Lambda")
    return ratio
