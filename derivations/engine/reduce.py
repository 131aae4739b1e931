r"""The derivation engine: reduced gradient-flow dynamics of a :class:`~derivations.engine.task.Task`.

Procedure (:func:`reduce_task`), one function per step
------------------------------------------------------
1. **Family by symmetry** (:class:`~derivations.engine.family.TaskFamily`). The fixed-point subspace of the
   task's symmetry group (:mod:`derivations.engine.symmetry`) is spanned by orbit indicator matrices ``U_i``;
   every trained matrix is ``sum_i theta_i U_i`` there.
2. **Loss on the family, one class** (:func:`loss_in_gaps`). On the family all classes have the same
   cross-entropy, so the population loss is class k's, computed from the model's definition in *gap form*:
   scores enter the softmax through their differences ``x_t = s_t - s_ref`` from a reference token, logits
   through ``z_k - z_j``; ``L = log(1 + (M-1) exp(-(z_k - z_j)))`` with ``z_k - z_j = sum_t alpha_t g_t`` and
   ``g_t`` the logit gap of one attended copy of token t (per unit attention). The ``x_t`` and ``g_t`` are the
   task's **observables**; the loss depends on the family coordinates only through them.
3. **Smallest invariant family from the initialization**
   (:func:`~derivations.engine.reachable.reachable_family`). Starting from the coordinates that are nonzero
   at the initialization (zero for collapsed circuits; the paper's structured ``eps`` factors for factorized
   ones), a coordinate joins the family when its flow does not vanish there; repeated until nothing joins
   (:func:`~derivations.engine.reachable.active_coordinates`).
4. **Flow on the family** (:func:`family_flow`, the lemma): for mutually orthogonal ``U_i``, ``dtheta_i/dt =
   -eta_i / ||U_i||_F^2 dL/dtheta_i`` with ``||U_i||_F^2`` the orbit size; the trace invariants of factorized
   circuits are conserved (:func:`conserved_quantities`).
5. **Observables.** With collapsed circuits the observables are linear in the coordinates and the chain rule
   gives a gradient flow with a constant metric, ``d obs/dt = -G grad_obs L``, ``G = J diag(eta_i/||U_i||^2)
   J^T`` (:func:`collapsed_flow`). Where a factorized circuit's family is the paper's, its observable moves
   like the collapsed one with the paper's effective rate (:func:`factorized_flow`). Otherwise the reduced
   system is the family flow itself.
6. **Paper mapping** (:func:`paper_mapping`). If the observables, attention and loss are the paper's, the
   reduced ODEs are the paper's with ``eta -> kappa eta`` (``kappa`` = the ratio of the metrics), derived and
   checked (``TaskReduction.mapping``).
7. **First integral** (:func:`first_integral_step`) of two-observable systems by separating the orbit equation
   (:mod:`derivations.engine.first_integral`), else a statement why not.

Exactness is checked on explicit instances (every matrix entry an independent symbol, the literal loss) by
:func:`derivations.engine.explicit.invariance_residual`.

>>> from derivations.engine.reduce import reduce_task
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

from ..core.vocabulary import CIRCUITS, check_parameterization
from ..symbolic.forms import canonical
from ..symbolic.symbols import alpha as S_alpha, eta_OV, eta_QK, mu_QK
from .family import RATE_OF, GapForm, TaskFamily, loss_in_gaps
from .first_integral import first_integral_of, orbit_of
from .reachable import reachable_family
from .symmetry import pattern_name
from .task import Task

__all__ = ["reduce_task", "TaskReduction", "family_flow", "conserved_quantities", "collapsed_flow",
           "factorized_flow", "paper_mapping", "first_integral_step"]


def as_task(task) -> Task:
    """``task`` (a :class:`Task` or a built-in name) checked for the symbolic engine.

    Parameters
    ----------
    task : str or Task

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        If ``task`` names no task, or the task is not fit for the symbolic engine.
    """
    if isinstance(task, str):
        from ..tasks.registry import get_task
        task = get_task(task)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task or a built-in task name; got {task!r}")
    return task.check_symbolic()


@dataclass(frozen=True)
class TaskReduction:
    r"""The derived reduced dynamics of one task and parameterization.

    Attributes
    ----------
    task, parameterization : str
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
        Observable symbol -> d obs/dt, closed in the observables (None if the family does not reduce to them, see ``note``).
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


def _circuits_like_paper(parameterization, coords, paper_fam):
    """Per factorized circuit: does the task's factor family equal the paper's (same orbit patterns
    and sizes: R relevant types per class make ``W_K[r_k,h_k]`` an orbit of M R entries, not M)?"""
    out = {}
    for circuit in CIRCUITS.values():
        if not circuit.factorized(parameterization):
            continue
        mats = circuit.factors
        mine = {(c.matrix, pattern_name(c.pattern), c.orbit) for c in coords if c.matrix in mats}
        if paper_fam is None:
            out[circuit.name] = True
        else:
            theirs = {(c.matrix, pattern_name(c.pattern), c.orbit) for c in paper_fam.coordinates
                      if c.matrix in mats}
            out[circuit.name] = mine == theirs
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


# ---------------------------------------------------------------- step 4

def family_flow(coords, gap: GapForm):
    """Step 4: ``(family_odes, grad_obs, J)``: the family flow by the lemma, through the
    observables' gradient ``grad_obs`` and the Jacobian ``J[(observable, coordinate)]``.

    Parameters
    ----------
    coords, gap
        The family coordinates (:class:`Coordinate`) and the :class:`GapForm` (step 3).

    Returns
    -------
    tuple of dict
    """
    obs = list(gap.observables)
    grad_obs = {k: sp.diff(gap.loss, k) for k in obs}
    J = {(a, c.symbol): sp.diff(gap.observables[a], c.symbol) for a in obs for c in coords}
    family_odes = {}
    for c in coords:
        dL = sum(grad_obs[a] * J[(a, c.symbol)] for a in obs)
        family_odes[c.symbol] = -c.rate / c.orbit * dL.subs(gap.observables)
    return family_odes, grad_obs, J


def conserved_quantities(coords, obs, J, what: str = "") -> tuple:
    """The trace invariants ``tr(A^T A)/eta_A - tr(B B^T)/eta_B`` of factorized circuits,
    with ``d/dt = 0`` checked for an arbitrary loss gradient (opaque symbols ``G_<obs>``).

    Parameters
    ----------
    coords, obs, J
        The family's coordinates, the observables and the Jacobian of :func:`family_flow`.
    what : str, optional
        Task and parameterization, for the ArithmeticError raised if an invariant is not conserved.

    Returns
    -------
    tuple of sympy.Expr

    Raises
    ------
    ArithmeticError
        An invariant whose time derivative does not simplify to zero (a failed derivation).
    """
    conserved = []
    Gs = {a: sp.Symbol(f"G_{a}") for a in obs}
    opaque = {c.symbol: -c.rate / c.orbit * sum(Gs[a] * J[(a, c.symbol)] for a in obs) for c in coords}
    for A, B in (circuit.factors for circuit in CIRCUITS.values()):
        ca = [c for c in coords if c.matrix == A]
        cb = [c for c in coords if c.matrix == B]
        if not ca:
            continue
        C = (sum(c.orbit * c.symbol**2 for c in ca) / RATE_OF[A] - sum(c.orbit * c.symbol**2 for c in cb) / RATE_OF[B])
        dC = sp.expand(sp.together(sum(sp.diff(C, c.symbol) * opaque[c.symbol] for c in coords)))
        if sp.simplify(dC) != 0:  # pragma: no cover - a failed derivation must not pass silently
            raise ArithmeticError(f"{what}: trace invariant not conserved: {dC}")
        conserved.append(sp.factor_terms(C))
    return tuple(conserved)


# ---------------------------------------------------------------- step 5

def collapsed_flow(coords, gap: GapForm, grad_obs, J):
    """Step 5, collapsed circuits: ``(metric, odes, odes_alpha)``, the gradient flow of the observables with
    the constant metric G; ``(None, None, None)`` when the observables are not linear in the coordinates.

    Parameters
    ----------
    coords, gap, grad_obs, J
        The family's coordinates and :class:`GapForm`, and what :func:`family_flow` returns.

    Returns
    -------
    tuple
    """
    obs = list(gap.observables)
    if not all(sp.diff(J[(a, c.symbol)], c2.symbol) == 0 for a in obs for c in coords for c2 in coords):
        return None, None, None
    metric = sp.Matrix(len(obs), len(obs), lambda i, j: sp.factor(sum(
        c.rate / c.orbit * J[(obs[i], c.symbol)] * J[(obs[j], c.symbol)] for c in coords)))
    odes = {obs[i]: canonical(-sum(metric[i, j] * grad_obs[obs[j]] for j in range(len(obs))))
            for i in range(len(obs))}
    odes_alpha = _in_alpha(odes, gap.alpha, obs)
    if odes_alpha is not None:   # the paper's route: canonical in alpha, then alpha(mu_QK) substituted
        odes = {k: v.subs(S_alpha, gap.alpha) for k, v in odes_alpha.items()}
    return metric, odes, odes_alpha


def _unlike_paper(circuit: str, coords, paper_fam) -> str:
    """Why the factorized ``circuit``'s family is not the paper's: coordinates the paper's family has not
    (a coordinate is its matrix and orbit pattern, as in :func:`_circuits_like_paper`), the paper's
    coordinates as orbits of other sizes (R relevant types per class: ``W_K[r_k,h_k]`` of M R entries, not
    M), or the paper's coordinates missing."""
    factors = CIRCUITS[circuit].factors
    theirs = {(c.matrix, pattern_name(c.pattern)): c for c in paper_fam.coordinates if c.matrix in factors}
    mine = {(c.matrix, pattern_name(c.pattern)): c for c in coords if c.matrix in factors}
    new = sorted(str(c.symbol) for key, c in mine.items() if key not in theirs)
    sizes = sorted(f"{c.symbol}: {c.orbit} entries, the paper's {theirs[key].orbit}" for key, c in mine.items()
                   if key in theirs and c.orbit != theirs[key].orbit)
    missing = sorted(str(c.symbol) for key, c in theirs.items() if key not in mine)
    parts = [f"reaches coordinates the paper's does not ({', '.join(new)}), so its observables share factors "
             "and no single effective rate exists"] if new else []
    if sizes and new:
        parts.append(f"its coordinates the paper's has are orbits of other sizes ({'; '.join(sizes)})")
    elif sizes:
        parts.append(f"has the paper's coordinates, but as orbits of other sizes ({'; '.join(sizes)}), so the "
                     "paper's effective rate is not derived for it")
    if missing:
        parts.append(f"lacks coordinates the paper's has ({', '.join(missing)})")
    return f"the factorized {circuit} circuit " + "; ".join(parts)


def factorized_flow(task: Task, parameterization: str, coords):
    """Step 5, factorized circuits: ``(odes, odes_alpha, mapping, note)``. Where every factorized circuit
    reaches the paper's factor family, the collapsed reduction with the paper's effective rates
    (:func:`derivations.tasks.paper.factorization.effective_rate`, its ``b`` the task's embedding scale);
    otherwise no closed observable flow (``odes`` None) and the note says why.

    Parameters
    ----------
    task, parameterization, coords
        The :class:`Task`, a parameterization other than CACO, the family's coordinates.

    Returns
    -------
    tuple
    """
    base = reduce_task(task, "CACO")
    paper_fam = reduce_task("paper", parameterization) if task.name != "paper" else None
    same = _circuits_like_paper(parameterization, coords, paper_fam)
    bad = [c for c, ok in same.items() if not ok]
    if base.odes is not None and not bad:
        from ..symbolic.symbols import b
        from ..tasks.paper.factorization import effective_rates
        # the paper's effective rates are in its magnitudes b mu_QK and sqrt(b) mu_OV: b is the embedding scale
        subs = {k: v.subs(b, task.embedding_scale) for k, v in effective_rates(parameterization).items()}
        odes_alpha = None
        if base.odes_alpha is not None:
            odes_alpha = {k: v.subs(subs) for k, v in base.odes_alpha.items()}
            odes = {k: v.subs(S_alpha, base.alpha) for k, v in odes_alpha.items()}
        else:
            odes = {k: v.subs(subs) for k, v in base.odes.items()}
        note = ("factorized circuits have the paper's family: the collapsed reduced ODEs with each factorized "
                "circuit's rate replaced by its effective rate (balanced factors)")
        return odes, odes_alpha, (base.mapping or None), note
    why = [_unlike_paper(circuit, coords, paper_fam) for circuit in bad]
    if base.odes is None:
        why.append("the collapsed system itself does not close in the observables")
    note = ("reduced system = the family flow in its " + str(len(coords)) + " coordinates; " + "; ".join(why))
    return None, None, None, note



# ---------------------------------------------------------------- step 6

def paper_mapping(task, obs, alpha, loss, metric, odes):
    """Step 6: the rate substitution turning the paper's CACO ODEs into this task's, or None. The
    observables, attention and loss must be the paper's and the metric diagonal; each rate is scaled by
    the ratio ``kappa`` of the metrics, and the mapped paper ODEs must equal ``odes`` exactly.

    Parameters
    ----------
    task : Task
    obs : list of sympy.Symbol
        The observables.
    alpha, loss : sympy.Expr
        Attention on the relevant tokens and the population loss, in the observables.
    metric : sympy.Matrix
        The constant metric G of :func:`collapsed_flow`.
    odes : dict
        Observable symbol -> d obs/dt.

    Returns
    -------
    dict or None
        ``{rate: kappa * rate}`` (empty when every ``kappa`` is 1), or None if the task's system is not
        the paper's with mapped rates.
    """
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


# ---------------------------------------------------------------- step 7

_NO_FIRST_INTEGRAL = (
    "; no first integral: the orbit equations d mu_QK_t / d mu_OV_t = (G_QK/G_OV)(mu_OV_t - margin) "
    "couple every score gap to all the others through the shared softmax normalization, so the "
    "separation that gives the paper's first integral (where Z (1 - alpha) = n is constant) fails; "
    "the state at a loss comes from integrating the reduced ODE numerically")


def first_integral_step(odes, mapping):
    """Step 7: the first integral and orbit of a two-observable system by separation
    (:mod:`derivations.engine.first_integral`); for more observables, why there is none.

    Parameters
    ----------
    odes : dict or None
        Observable symbol -> d obs/dt (None if the family does not reduce to the observables).
    mapping : dict or None
        What :func:`paper_mapping` returned.

    Returns
    -------
    first_integral : sympy.Expr or None
    orbit : sympy.Expr, sympy.Eq or None
        The orbit through ``(mu_OV_0, mu_QK_0)``.
    note : str
        Text appended to ``TaskReduction.note``.
    """
    first = orbit = None
    note = ""
    if odes is not None and len(odes) == 2:
        qk = [k for k in odes if "QK" in str(k)][0]
        ov = [k for k in odes if "OV" in str(k)][0]
        first = first_integral_of(odes, ov, qk)
        if first is not None:
            G = sum((t for t in sp.Add.make_args(first) if not t.has(ov)), sp.S.Zero)
            orbit = orbit_of(G, G - first, ov, qk)
        if mapping:
            note += ("; state at a loss from zero initialization: the paper's closed form at the mapped "
                     "learning rates")
    if first is None and odes is not None and len(odes) > 2:
        note += _NO_FIRST_INTEGRAL
    return first, orbit, note


# ---------------------------------------------------------------- the procedure

def reduce_task(task, parameterization: str = "CACO") -> TaskReduction:
    """Derive the reduced dynamics of ``task`` (a :class:`Task` or a built-in
    name) for one parameterization. See the module docstring.

    Parameters
    ----------
    task : str or Task
    parameterization : str, optional
        One of :data:`~derivations.core.vocabulary.PARAMETERIZATIONS` (default ``"CACO"``).

    Returns
    -------
    TaskReduction

    Raises
    ------
    ValueError
        If ``task`` or ``parameterization`` is not valid.
    """
    return _reduce(as_task(task), check_parameterization(parameterization))


@lru_cache(maxsize=None)
def _reduce(task: Task, parameterization: str) -> TaskReduction:
    fam = TaskFamily(task, parameterization)                                       # step 1
    gap = loss_in_gaps(task, fam)                                                   # step 2
    init, coords, zero, gap = reachable_family(fam, gap, random.Random(20261130))   # step 3
    obs = list(gap.observables)
    family_odes, grad_obs, J = family_flow(coords, gap)                             # step 4
    conserved = conserved_quantities(coords, obs, J, f"{task.name} {parameterization}")
    metric = odes = odes_alpha = mapping = None                                     # step 5
    if parameterization == "CACO":
        metric, odes, odes_alpha = collapsed_flow(coords, gap, grad_obs, J)
        note = f"gradient flow in the {len(obs)} observables with the constant metric G"
    else:
        odes, odes_alpha, mapping, note = factorized_flow(task, parameterization, coords)
    if parameterization == "CACO" and task.name != "paper" and odes is not None:   # step 6
        mapping = paper_mapping(task, obs, gap.alpha, gap.loss, metric, odes)
        if mapping:
            note += "; equal to the paper's reduced ODEs with " + ", ".join(f"{k} -> {v}" for k, v in mapping.items())
    first, orbit, more = first_integral_step(odes, mapping)                         # step 7
    return TaskReduction(task=task.name, parameterization=parameterization, coordinates=coords,
                         initial={c.symbol: init.get(c.symbol, sp.S.Zero) for c in coords},
                         family_odes=family_odes, observables=gap.observables, reference=gap.reference,
                         attention=gap.attention, alpha=gap.alpha, loss=gap.loss, metric=metric, odes=odes,
                         conserved=conserved, mapping=mapping, first_integral=first, note=note + more,
                         family_loss=gap.family_loss, odes_alpha=odes_alpha, orbit=orbit)
