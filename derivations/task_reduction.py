r"""The derivation engine: reduced gradient-flow dynamics of a :class:`~derivations.task.Task`.

Procedure (:func:`reduce_task`)
-------------------------------
1. **Family by symmetry.** The fixed-point subspace of the task's symmetry
   group (:mod:`derivations.symmetry`) is spanned by orbit indicator matrices
   ``U_i``; every trained matrix is ``sum_i theta_i U_i`` there. Products of
   factors (``W_QK = W_Q W_K^T``, ``W_OV = W_O W_V``) are summed over hidden
   units class by class (:func:`derivations.symmetry.class_sum`), so every
   expression holds for symbolic M.
2. **Loss on the family, one class.** On the family all classes have the same
   cross-entropy, so the population loss is class k's, computed from the
   model's definition in *gap form*: scores enter the softmax through their
   differences ``x_t = s_t - s_ref`` from a reference token, logits through
   ``z_k - z_j``; ``L = log(1 + (M-1) exp(-(z_k - z_j)))`` with
   ``z_k - z_j = sum_t alpha_t g_t`` and ``g_t`` the logit gap of one attended
   copy of token t (per unit attention). The ``x_t`` and ``g_t`` are the
   task's **observables**; the loss depends on the family coordinates only
   through them.
3. **Smallest invariant family from the initialization.** Starting from the
   coordinates that are nonzero at the initialization (zero for collapsed
   circuits; the paper's structured ``eps`` factors for factorized ones), a
   coordinate joins the family when its flow does not vanish there; repeated
   until nothing joins (:func:`active_coordinates`). The others stay 0.
4. **Flow on the family** (the lemma): for mutually orthogonal ``U_i``,
   ``dtheta_i/dt = -eta_i / ||U_i||_F^2 dL/dtheta_i`` with
   ``||U_i||_F^2`` the orbit size (:func:`family_rate`).
5. **Observables.** With collapsed circuits the observables are linear in the
   coordinates and the chain rule gives a gradient flow with a constant metric,
   ``d obs/dt = -G grad_obs L``, ``G = J diag(eta_i/||U_i||^2) J^T``. Where a
   factorized circuit's family is the paper's, its observable moves like the
   collapsed one with the effective rate of :mod:`derivations.factorization`.
   Otherwise the reduced system is the family flow itself.
6. **Paper mapping.** If the observables, attention and loss are the paper's,
   the reduced ODEs are the paper's with ``eta -> kappa eta`` (``kappa`` = the
   ratio of the metrics), derived and checked (:attr:`TaskReduction.mapping`).
7. **First integral** of two-observable systems by separating the orbit
   equation (as :mod:`derivations.first_integral`), else a statement why not.

Exactness is checked on explicit instances (every matrix entry an independent
symbol, the literal loss) by :func:`invariance_residual`.

>>> from derivations.task_reduction import reduce_task
>>> red = reduce_task("shared-irrelevant", "CACO")
>>> red.mapping
{eta_QK: eta_QK*(n_c + 1)/n_c}
>>> [str(c) for c in red.coordinates]
['W_QK[q_k,r_k]', 'W_QK[q_k,u_s]', 'W_OV[o_k,r_k]', 'W_OV[o_k,r_j]']
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache

import sympy as sp

from .exp_zero import is_zero_exactly
from .symbols import alpha as S_alpha
from .symbols import (M, b, eta_K, eta_O, eta_OV, eta_Q, eta_QK, eta_V, m, mu_OV,
                      mu_QK, n)
from .symmetry import canonical, class_sum, orbit_size, pattern_name
from .task import TASK_PARAMETERS, Task, get_task
from .vocabulary import PARAMETERIZATIONS
from .vocabulary import check_parameterization as _check_param

RATE_OF = {"W_QK": eta_QK, "W_OV": eta_OV, "W_Q": eta_Q, "W_K": eta_K, "W_O": eta_O, "W_V": eta_V}
#: Scale of the factorized circuits' structured initialization.
eps = sp.Symbol("epsilon", positive=True)


def _as_task(task) -> Task:
    if isinstance(task, str):
        task = get_task(task)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task or a built-in task name; got {task!r}")
    return task.check_symbolic()


@dataclass(frozen=True)
class Coordinate:
    """One family coordinate: ``matrix`` = theta * U where U is the indicator
    of the orbit ``pattern`` (``orbit`` elements)."""
    symbol: sp.Symbol
    matrix: str
    pattern: tuple
    orbit: sp.Expr
    rate: sp.Symbol

    def __str__(self):
        return str(self.symbol)


def _cls(i):
    return ("c", i)


class _Family:
    """Builds the family-coordinate expressions of one task and parameterization."""

    def __init__(self, task: Task, parameterization: str):
        self.task, self.param = task, parameterization
        self.qk_fact = parameterization[0] == "F"
        self.ov_fact = parameterization[2] == "F"
        self.coords = {}
        self.shared_types = {g.name: g.types for g in task.groups if not g.per_class}

    def coord(self, mat, i, j):
        pat = canonical((i, j))
        key = (mat, pat)
        if key not in self.coords:
            sym = sp.Symbol(f"{mat}[{pattern_name(pat)}]", real=True)
            self.coords[key] = Coordinate(sym, mat, pat, orbit_size(pat, M, self.shared_types), RATE_OF[mat])
        return self.coords[key].symbol

    @staticmethod
    def _classes(*indices):
        return tuple(lab[1] for _, lab in indices if lab[0] == "c")

    def qk(self, i, j):
        """W_QK[i, j] on the family."""
        if not self.qk_fact:
            return self.coord("W_QK", i, j)
        return class_sum(lambda h: self.coord("W_Q", i, ("hid", _cls(h))) * self.coord("W_K", j, ("hid", _cls(h))),
                         self._classes(i, j), M)

    def ov(self, o, t):
        """W_OV[o, t] on the family."""
        if not self.ov_fact:
            return self.coord("W_OV", o, t)
        return class_sum(lambda h: self.coord("W_O", o, ("hid", _cls(h))) * self.coord("W_V", ("hid", _cls(h)), t),
                         self._classes(o, t), M)

    def initial_values(self):
        """The structured initialization (factor coordinates ~ eps; collapsed 0)."""
        init = {}
        q0, h0, h1 = ("tok:" + self.task.query, _cls(0)), ("hid", _cls(0)), ("hid", _cls(1))
        o0, o1 = ("out", _cls(0)), ("out", _cls(1))
        if self.qk_fact:
            init[self.coord("W_Q", q0, h0)] = eps
            for r in self.task.relevant:
                init[self.coord("W_K", ("tok:" + r, _cls(0)), h0)] = eps
        if self.ov_fact:
            init[self.coord("W_O", o0, h0)] = eps * (1 - 1 / M)
            init[self.coord("W_O", o1, h0)] = -eps / M
            for r in self.task.relevant:
                init[self.coord("W_V", h0, ("tok:" + r, _cls(0)))] = eps * (1 - 1 / M)
                init[self.coord("W_V", h1, ("tok:" + r, _cls(0)))] = -eps / M
        return init


def _group_symbol(kind, group, task):
    """Observable symbols: mu_QK / mu_OV for the (single) relevant group, else mu_QK_<g> / mu_OV_<g>."""
    if len(task.relevant) == 1 and group == task.relevant[0]:
        return mu_QK if kind == "QK" else mu_OV
    return sp.Symbol(f"mu_{kind}_{group}", real=True)


@dataclass(frozen=True)
class TaskReduction:
    r"""The derived reduced dynamics of one task and parameterization.

    Attributes
    ----------
    task : str
    parameterization : str
    coordinates : tuple[Coordinate, ...]
        The family found (smallest invariant coordinate family containing the initialization).
    initial : dict
        Coordinate -> initial value (in ``epsilon`` for factorized circuits).
    family_odes : dict
        Coordinate symbol -> d theta / dt (the lemma).
    observables : dict
        Observable symbol -> its expression in the coordinates (score gaps ``mu_QK*``, logit gaps ``mu_OV*``).
    reference : str
        The token group whose score is the reference of the score gaps.
    attention : dict
        Token group -> its total attention, in the observables.
    alpha : sympy.Expr
        Attention on the relevant tokens, in the observables.
    loss : sympy.Expr
        The population loss, in the observables.
    metric : sympy.Matrix or None
        Collapsed circuits: the constant metric G (rows/columns in ``observables`` order).
    odes : dict or None
        Observable symbol -> d obs/dt, closed in the observables (None when the
        family does not reduce to them, see ``note``).
    odes_alpha : dict or None
        The same written with the symbol ``alpha`` where the attention depends on
        one score gap only (two-observable tasks), as the paper writes them.
    conserved : tuple
        Conserved quantities of factorized circuits (trace of A^T A/eta_A - B B^T/eta_B), with d/dt = 0 checked.
    mapping : dict or None
        ``{rate: kappa * rate}`` turning the paper's reduced ODEs into this task's (None if none).
    first_integral : sympy.Expr or None
    orbit : sympy.Expr, sympy.Eq or None
        The orbit through (mu_OV_0, mu_QK_0): mu_QK explicit (Wright omega) or an implicit equation.
    note : str
        What reduces to what, and why not where it does not.
    """
    task: str
    parameterization: str
    coordinates: tuple
    initial: dict
    family_odes: dict
    observables: dict
    reference: str
    attention: dict
    alpha: sp.Expr
    loss: sp.Expr
    metric: object
    odes: object
    conserved: tuple
    mapping: object
    first_integral: object
    note: str = ""
    family_loss: sp.Expr = field(default=None, repr=False)
    odes_alpha: object = None
    orbit: object = None

    def coordinate(self, name: str) -> Coordinate:
        for c in self.coordinates:
            if str(c.symbol) == name:
                return c
        raise ValueError(f"no coordinate {name!r}")


def _canonical(expr):
    """Compact form: exponentials combined, one fraction, common factors out."""
    expr = sp.simplify(sp.powsimp(sp.expand_power_exp(expr), combine="exp"))
    return sp.factor_terms(sp.factor(sp.together(expr)))


def _random_point(symbols, rng):
    vals = {}
    for s in symbols:
        if s == M:
            vals[s] = sp.Rational(rng.randint(35, 65), 10)
        elif s.is_positive:
            vals[s] = sp.Rational(rng.randint(5, 40), 10)
        else:
            vals[s] = sp.Rational(rng.randint(-20, 20), 17)
    return vals


def _nonzero(expr, free, rng, trials=2):
    """Decide whether ``expr`` is not identically zero by evaluation at random
    rational points (30 digits); a zero everywhere sampled counts as zero --
    the explicit-instance check confirms the family exactly."""
    if expr == 0:
        return False
    for _ in range(trials):
        v = sp.N(expr.subs(_random_point(free, rng)), 30)
        if abs(v) > 1e-20:
            return True
    return False


def _paper_parameters(task):
    out = {m, n, b, M}
    out |= {TASK_PARAMETERS[p] for p in task.parameters}
    return out


def active_coordinates(fam, loss_of, init, rng):
    """Step 3: the coordinates reachable from the initialization."""
    all_coords = [c.symbol for c in fam.coords.values()]
    active = {c for c, v in init.items() if v != 0}
    while True:
        zero = {c: 0 for c in all_coords if c not in active}
        base = loss_of.subs(zero)
        free = set(loss_of.free_symbols) | set(all_coords)
        new = [c for c in all_coords if c not in active and _nonzero(sp.diff(loss_of, c).subs(zero), free, rng)]
        if not new:
            return [c for c in all_coords if c in active]
        active |= set(new)


def reduce_task(task, parameterization: str = "CACO") -> TaskReduction:
    """Derive the reduced dynamics of ``task`` (a :class:`Task` or a built-in
    name) for one parameterization. See the module docstring."""
    return _reduce(_as_task(task), _check_param(parameterization))


@lru_cache(maxsize=None)
def _reduce(task: Task, parameterization: str) -> TaskReduction:
    fam = _Family(task, parameterization)
    rng = random.Random(20261130)

    # --- step 2: class k (label 0) of the family, in gap form
    q0 = ("tok:" + task.query, _cls(0))
    o0, o1 = ("out", _cls(0)), ("out", _cls(1))
    reps = []   # (group, index, count, embedded)
    for g in task.groups:
        count = task.own_count(g) if g.per_class else g.types * g.multiplicity
        if sp.simplify(count) == 0:
            continue
        label = _cls(0) if g.per_class else ("s", g.name, 0)
        reps.append((g, ("tok:" + g.name, label), count, g.embedded))
    order = ([r for r in reps if not r[3]] + [r for r in reps if r[3] and not r[0].per_class]
             + [r for r in reps if r[3] and r[0].per_class and r[0].name not in task.relevant]
             + [r for r in reps if r[3] and r[0].name in task.relevant])
    ref = order[0]
    score = {}
    for g, idx, _, emb in reps:
        score[g.name] = task.score_scale * fam.qk(q0, idx) / task.embedding_scale if emb else sp.S.Zero
    obs_forms, x_sym, g_sym = {}, {}, {}
    for g, idx, _, emb in reps:
        if g is ref[0]:
            continue
        form = sp.expand(score[g.name] - score[ref[0].name])
        if form != 0:
            sym = _group_symbol("QK", g.name, task)
            obs_forms[sym], x_sym[g.name] = form, sym
    for g, idx, _, emb in reps:
        if not emb:
            continue
        form = sp.expand((fam.ov(o0, idx) - fam.ov(o1, idx)) / sp.sqrt(task.embedding_scale))
        if form != 0:
            sym = _group_symbol("OV", g.name, task)
            obs_forms[sym], g_sym[g.name] = form, sym
    weights = {g.name: count * (sp.exp(x_sym[g.name]) if g.name in x_sym else 1) for g, _, count, _ in reps}
    Z = sum(weights.values())
    attention = {k: w / Z for k, w in weights.items()}
    margin = sum(attention[k] * g_sym[k] for k in g_sym)
    loss = sp.log(1 + (M - 1) * sp.exp(-margin))
    alpha = sum(attention[r] for r in task.relevant if r in attention)
    obs = list(obs_forms)
    family_loss = loss.subs(obs_forms)

    # --- step 3: the family reached from the initialization
    init = fam.initial_values()
    active = active_coordinates(fam, family_loss, init, rng)
    zero = {c.symbol: 0 for c in fam.coords.values() if c.symbol not in active}
    coords = tuple(c for c in fam.coords.values() if c.symbol in active)
    obs_forms = {k: sp.expand(v.subs(zero)) for k, v in obs_forms.items()}
    obs_forms = {k: v for k, v in obs_forms.items() if v != 0}
    dropped = [k for k in obs if k not in obs_forms]
    if dropped:
        loss, alpha, margin = (e.subs({k: 0 for k in dropped}) for e in (loss, alpha, margin))
        attention = {k: v.subs({k2: 0 for k2 in dropped}) for k, v in attention.items()}
    obs = list(obs_forms)

    # --- step 4: family flow by the lemma, through the observables' gradient
    grad_obs = {k: sp.diff(loss, k) for k in obs}
    J = {(a, c.symbol): sp.diff(obs_forms[a], c.symbol) for a in obs for c in coords}
    family_odes = {}
    for c in coords:
        dL = sum(grad_obs[a] * J[(a, c.symbol)] for a in obs)
        family_odes[c.symbol] = -c.rate / c.orbit * dL.subs(obs_forms)

    # --- conserved quantities of factorized circuits (trace invariant), checked with opaque gradients
    conserved = []
    Gs = {a: sp.Symbol(f"G_{a}") for a in obs}
    opaque = {c.symbol: -c.rate / c.orbit * sum(Gs[a] * J[(a, c.symbol)] for a in obs) for c in coords}
    for A, B in (("W_Q", "W_K"), ("W_O", "W_V")):
        ca = [c for c in coords if c.matrix == A]
        cb = [c for c in coords if c.matrix == B]
        if not ca:
            continue
        C = (sum(c.orbit * c.symbol**2 for c in ca) / RATE_OF[A] - sum(c.orbit * c.symbol**2 for c in cb) / RATE_OF[B])
        dC = sp.expand(sp.together(sum(sp.diff(C, c.symbol) * opaque[c.symbol] for c in coords)))
        if sp.simplify(dC) != 0:  # pragma: no cover - a failed derivation must not pass silently
            raise ArithmeticError(f"{task.name} {parameterization}: trace invariant not conserved: {dC}")
        conserved.append(sp.factor_terms(C))

    # --- step 5: observables
    metric, odes, note, odes_alpha = None, None, "", None
    collapsed_all = parameterization == "CACO"
    linear = all(sp.diff(J[(a, c.symbol)], c2.symbol) == 0 for a in obs for c in coords for c2 in coords)
    if collapsed_all and linear:
        metric = sp.Matrix(len(obs), len(obs), lambda i, j: sp.factor(sum(
            c.rate / c.orbit * J[(obs[i], c.symbol)] * J[(obs[j], c.symbol)] for c in coords)))
        odes = {obs[i]: _canonical(-sum(metric[i, j] * grad_obs[obs[j]] for j in range(len(obs))))
                for i in range(len(obs))}
        odes_alpha = _in_alpha(odes, alpha, obs)
        if odes_alpha is not None:   # the paper's route: canonical in alpha, then alpha(mu_QK) substituted
            odes = {k: v.subs(S_alpha, alpha) for k, v in odes_alpha.items()}
    mapping = first = None
    if parameterization != "CACO":
        base = reduce_task(task, "CACO")
        paper_fam = reduce_task("paper", parameterization) if task.name != "paper" else None
        same = _circuits_like_paper(task, parameterization, coords, paper_fam)
        bad = [c for c, ok in same.items() if not ok]
        if base.odes is not None and not bad:
            from .factorization import effective_rate
            subs = {}
            if fam.qk_fact:
                subs[eta_QK] = effective_rate("QK")
            if fam.ov_fact:
                subs[eta_OV] = effective_rate("OV")
            if base.odes_alpha is not None:
                odes_alpha = {k: v.subs(subs) for k, v in base.odes_alpha.items()}
                odes = {k: v.subs(S_alpha, base.alpha) for k, v in odes_alpha.items()}
            else:
                odes = {k: v.subs(subs) for k, v in base.odes.items()}
            note = ("factorized circuits have the paper's family: the collapsed reduced ODEs with each factorized "
                    "circuit's rate replaced by its effective rate (balanced factors)")
            if base.mapping:
                mapping = base.mapping
        else:
            why = []
            for circuit in bad:
                extra = sorted(str(c.symbol) for c in coords if c.matrix in _FACTORS[circuit]
                               and (paper_fam is None or c.pattern not in {p.pattern for p in paper_fam.coordinates
                                                                           if p.matrix == c.matrix}))
                why.append(f"the factorized {circuit} circuit reaches coordinates the paper's does not "
                           f"({', '.join(extra)}), so its observables share factors and no single effective rate "
                           f"exists")
            if base.odes is None:
                why.append("the collapsed system itself does not close in the observables")
            note = ("reduced system = the family flow in its " + str(len(coords)) + " coordinates; " + "; ".join(why))
    else:
        note = f"gradient flow in the {len(obs)} observables with the constant metric G"

    # --- step 6: mapping to the paper (collapsed)
    if parameterization == "CACO" and task.name != "paper" and odes is not None:
        mapping = _paper_mapping(task, obs, alpha, loss, metric, odes)
        if mapping:
            note += "; equal to the paper's reduced ODEs with " + ", ".join(f"{k} -> {v}" for k, v in mapping.items())

    # --- step 7: first integral
    orbit = None
    if odes is not None and len(odes) == 2:
        first = _first_integral(odes)
        if first is not None:
            orbit = _orbit(first, [k for k in odes if "QK" in str(k)][0], [k for k in odes if "OV" in str(k)][0])
        if mapping:
            note += ("; state at a loss from zero initialization: the paper's closed form at the mapped "
                     "learning rates")
    if first is None and odes is not None and len(odes) > 2:
        note += ("; no first integral: the orbit equations d mu_QK_t / d mu_OV_t = (G_QK/G_OV)(mu_OV_t - margin) "
                 "couple every score gap to all the others through the shared softmax normalization, so the "
                 "separation that gives the paper's first integral (where Z (1 - alpha) = n is constant) fails; "
                 "the state at a loss comes from integrating the reduced ODE numerically")
    return TaskReduction(task=task.name, parameterization=parameterization, coordinates=coords,
                         initial={c.symbol: init.get(c.symbol, sp.S.Zero) for c in coords},
                         family_odes=family_odes, observables=obs_forms, reference=ref[0].name,
                         attention=attention, alpha=alpha, loss=loss, metric=metric, odes=odes,
                         conserved=tuple(conserved), mapping=mapping, first_integral=first, note=note,
                         family_loss=family_loss.subs(zero), odes_alpha=odes_alpha, orbit=orbit)


_FACTORS = {"QK": ("W_Q", "W_K"), "OV": ("W_O", "W_V")}


def _circuits_like_paper(task, parameterization, coords, paper_fam):
    """Per factorized circuit: does the task's factor family equal the paper's (same orbit patterns)?"""
    out = {}
    for circuit, mats in _FACTORS.items():
        if not (parameterization[0 if circuit == "QK" else 2] == "F"):
            continue
        mine = {(c.matrix, pattern_name(c.pattern)) for c in coords if c.matrix in mats}
        if paper_fam is None:
            out[circuit] = True
        else:
            theirs = {(c.matrix, pattern_name(c.pattern)) for c in paper_fam.coordinates if c.matrix in mats}
            out[circuit] = mine == theirs
    return out


def _in_alpha(odes, alpha, obs):
    """Rewrite ODEs through the symbol alpha when alpha depends on one score
    gap x only: e^x solved from alpha(x) = alpha and substituted; None otherwise."""
    xs = [k for k in obs if k in alpha.free_symbols]
    if len(xs) != 1:
        return None
    (x,) = xs
    y = sp.Symbol("y", positive=True)
    sol = sp.solve(sp.Eq(alpha.subs(sp.exp(x), y), S_alpha), y)
    if len(sol) != 1:
        return None
    out = {}
    for k, v in odes.items():
        e = sp.simplify(v.subs(sp.exp(x), sol[0]))
        if e.has(x) and k != x and any(x in a.free_symbols for a in e.atoms(sp.exp)):
            return None
        out[k] = sp.factor(e, deep=True) if not e.has(x) else e
    return out


def _paper_mapping(task, obs, alpha, loss, metric, odes):
    """Rate substitution turning the paper's CACO ODEs into this task's, or None."""
    paper = reduce_task("paper", "CACO")
    if set(obs) != set(paper.observables):
        return None
    if sp.simplify(alpha - paper.alpha) != 0 or sp.simplify(loss - paper.loss) != 0:
        return None
    if any(metric[i, j] != 0 for i in range(len(obs)) for j in range(len(obs)) if i != j):
        return None
    pobs = list(paper.observables)
    mapping = {}
    for i, k in enumerate(obs):
        kappa = sp.factor(metric[i, i] / paper.metric[pobs.index(k), pobs.index(k)])
        rate = eta_QK if k == mu_QK else eta_OV
        if kappa != 1:
            mapping[rate] = sp.factor(kappa * rate)
    for k in obs:   # the mapping reproduces the task's ODEs exactly
        if sp.simplify(paper.odes[k].subs(mapping, simultaneous=True) - odes[k]) != 0:
            return None   # pragma: no cover
    return mapping


def _orbit(H, qk, ov):
    """The orbit H(mu_OV, mu_QK) = H(mu_OV_0, mu_QK_0): mu_QK explicitly (Lambert W
    written as Wright omega) when the mu_QK part inverts, else the implicit equation."""
    from .special_functions import lambert_to_wright_omega
    from .symbols import mu_OV_0, mu_QK_0
    Y = sum((t for t in sp.Add.make_args(H) if not t.has(ov)), sp.S.Zero)
    X = H - Y
    rhs = Y.subs(qk, mu_QK_0) + X.subs(ov, mu_OV_0) - X
    if Y.has(sp.Ei):
        return sp.Eq(Y, rhs)
    K = sp.Symbol("K", real=True)
    sol = sp.solve(sp.Eq(Y, K), qk)
    if len(sol) != 1:
        return sp.Eq(Y, rhs)
    return lambert_to_wright_omega(sol[0]).subs(K, rhs)


def _first_integral(odes):
    """H with dH/dt = 0 by separating d mu_QK / d mu_OV (two observables), or None."""
    (k1, f1), (k2, f2) = odes.items()
    xo, xq = sp.Symbol("x_o", positive=True), sp.Symbol("x_q", positive=True)
    ov, qk = (k1, k2) if "OV" in str(k1) else (k2, k1)
    ratio = sp.simplify((odes[qk] / odes[ov]).subs({ov: xo, qk: xq}))
    parts = sp.separatevars(ratio, symbols=[xo, xq], dict=True)
    if parts is None:
        return None
    h = parts["coeff"] * parts.get(xo, 1)
    g = 1 / parts.get(xq, 1)
    G = sp.integrate(sp.expand(g), xq)
    F = sp.integrate(sp.expand(h), xo)
    H = sp.expand((G - F).subs({xq: qk, xo: ov}))
    dH = sp.simplify(sp.diff(H, ov) * odes[ov] + sp.diff(H, qk) * odes[qk])
    return H if dH == 0 else None


# ---------------------------------------------------------------- explicit instances

def _explicit_indices(task, M_value, shared_types):
    """Row/column indices of each matrix of an explicit instance, in TaskInstance order."""
    toks = [("tok:" + g.name, _cls(k) if k is not None else ("s", g.name, s))
            for g, k, s in task.layout(M_value, shared_types) if g.embedded]
    outs = [("out", _cls(k)) for k in range(M_value)]
    hids = [("hid", _cls(k)) for k in range(M_value)]
    return {"W_QK": (toks, toks), "W_Q": (toks, hids), "W_K": (toks, hids),
            "W_OV": (outs, toks), "W_O": (outs, hids), "W_V": (hids, toks)}


def basis_matrices(reduction: TaskReduction, M_value: int, shared_types: dict | None = None) -> dict:
    """``{coordinate name: (matrix name, nested list of 0/1)}`` for a concrete
    instance (rows/columns in :class:`~derivations.task.TaskInstance` order),
    so that each trained matrix is ``sum theta_i U_i`` on the family."""
    task = get_task(reduction.task)
    shared_types = _shared_values(task, shared_types)
    idx = _explicit_indices(task, M_value, shared_types)
    out = {}
    for c in reduction.coordinates:
        rows, cols = idx[c.matrix]
        out[str(c.symbol)] = (c.matrix, [[1 if canonical((i, j)) == c.pattern else 0 for j in cols] for i in rows])
    return out


def _shared_values(task, shared_types):
    shared_types = dict(shared_types or {})
    for g in task.groups:
        if not g.per_class and g.name not in shared_types:
            if g.types.free_symbols:
                raise ValueError(f"give the number of types of shared group {g.name!r} ({g.types})")
            shared_types[g.name] = int(g.types)
    return shared_types


def explicit_loss(task, M_value, params, shared_types):
    """The literal population loss of a concrete instance (matrices ``params``,
    every entry a symbol), from the model's definition."""
    idx = _explicit_indices(task, M_value, shared_types)
    toks = idx["W_QK"][0]
    W_QK = params["W_QK"] if "W_QK" in params else params["W_Q"] * params["W_K"].T
    W_OV = params["W_OV"] if "W_OV" in params else params["W_O"] * params["W_V"]
    nc_subs = {g.types: shared_types[g.name] for g in task.groups
               if not g.per_class and isinstance(g.types, sp.Symbol)}
    scale = 1 / sp.sqrt(task.embedding_scale)
    total = 0
    for k in range(M_value):
        q = toks.index(("tok:" + task.query, _cls(k)))
        entries = []   # (score, count, embedding column or None)
        for g, kk, s in task.layout(M_value, shared_types):
            count = (task.own_count(g) if kk == k else g.other_multiplicity) if g.per_class else g.multiplicity
            count = sp.sympify(count).subs(nc_subs)
            if count == 0:
                continue
            if g.embedded:
                j = toks.index(("tok:" + g.name, _cls(kk) if kk is not None else ("s", g.name, s)))
                entries.append((task.score_scale * scale**2 * W_QK[q, j], count, j))
            else:
                entries.append((sp.S.Zero, count, None))
        Z = sum(c * sp.exp(sc) for sc, c, _ in entries)
        z = [sum(c * sp.exp(sc) / Z * scale * W_OV[o, j] for sc, c, j in entries if j is not None)
             for o in range(M_value)]
        total += sp.log(sum(sp.exp(zi) for zi in z)) - z[k]
    return total / M_value


def invariance_residual(task, parameterization: str = "CACO", M_value: int = 2, shared_types=None,
                        *, exact: bool = True):
    """Check on an explicit instance: the full gradient flow ``-eta dL/dW``
    of every trained matrix (independent symbolic entries, literal loss),
    evaluated on the family, minus ``sum_i dtheta_i/dt U_i`` of the reduced
    family flow. Returns the nonzero residual entries (``[]`` = exact).

    ``exact=True``: every residual entry must be exactly 0: proved by
    :func:`derivations.exp_zero.is_zero_exactly` (exponentials as powers of
    independent symbols, numerator of one fraction expanded to 0), or else
    by ``sympy.simplify`` after a 30-digit evaluation at a random point that
    catches a wrong flow early.
    ``exact=False``: a residual counts as zero when it vanishes to 1e-20 at two
    random rational points (30 digits) -- fast, for the default tests."""
    task = _as_task(task)
    rng = random.Random(7)
    red = reduce_task(task, parameterization)
    shared_types = _shared_values(task, shared_types)
    idx = _explicit_indices(task, M_value, shared_types)
    mats = (["W_Q", "W_K"] if parameterization[0] == "F" else ["W_QK"]) + \
           (["W_O", "W_V"] if parameterization[2] == "F" else ["W_OV"])
    params, point = {}, {}
    for name in mats:
        rows, cols = idx[name]
        W = sp.Matrix(len(rows), len(cols), lambda i, j: sp.Symbol(f"{name}_{i}_{j}", real=True))
        params[name] = W
        for i, ri in enumerate(rows):
            for j, cj in enumerate(cols):
                pat = canonical((ri, cj))
                match = [c.symbol for c in red.coordinates if c.matrix == name and c.pattern == pat]
                point[W[i, j]] = match[0] if match else 0
    loss = explicit_loss(task, M_value, params, shared_types)
    values = {M: M_value}
    for g in task.groups:
        if not g.per_class and g.types.free_symbols:
            values.update({s: shared_types[g.name] for s in g.types.free_symbols})
    flows = {c.symbol: red.family_odes[c.symbol].subs(values) for c in red.coordinates}
    residual, verdict = [], {}
    for name, W in params.items():
        rows, cols = idx[name]
        for i in range(len(rows)):
            for j in range(len(cols)):
                full = -RATE_OF[name] * sp.diff(loss, W[i, j]).xreplace(point)
                pat = canonical((rows[i], cols[j]))
                match = [c.symbol for c in red.coordinates if c.matrix == name and c.pattern == pat]
                predicted = flows[match[0]] if match else 0
                diff = full - predicted
                if diff == 0:
                    continue
                if diff not in verdict:   # entries of one orbit often give the same expression: decide once
                    if exact:   # proved zero cheaply, else a wrong flow caught numerically, else simplify decides
                        verdict[diff] = not is_zero_exactly(diff) and (
                            _nonzero(diff, diff.free_symbols, rng, trials=1) or sp.simplify(diff) != 0)
                    else:
                        verdict[diff] = _nonzero(diff, diff.free_symbols, rng, trials=2)
                if verdict[diff]:
                    residual.append(((name, i, j), diff))
    return residual
