"""A task's invariant family and its loss in gap form (steps 1-2 of :func:`derivations.engine.reduce.reduce_task`).

The fixed-point subspace of the task's symmetry group
(:mod:`derivations.engine.symmetry`) is spanned by orbit indicator matrices
``U_i``; every trained matrix is ``sum_i theta_i U_i`` there, one
:class:`Coordinate` ``theta_i`` per orbit. Products of factors
(``W_QK = W_Q W_K^T``, ``W_OV = W_O W_V``) are summed over hidden units class
by class (:func:`~derivations.engine.symmetry.class_sum`), so that every
expression holds for symbolic M.

>>> from derivations.tasks import get_task
>>> fam = TaskFamily(get_task("paper"), "FACO")
>>> fam.qk(("tok:q", class_label(0)), ("tok:r", class_label(0)))
W_K[r_k,h_j]*W_Q[q_k,h_j]*(M - 1) + W_K[r_k,h_k]*W_Q[q_k,h_k]
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..core.vocabulary import CIRCUITS, ov_factorized, qk_factorized
from ..symbolic.symbols import SYMBOLS, M, mu_OV, mu_QK
from .symmetry import canonical, class_sum, orbit_size, pattern_name
from .task import Task

__all__ = ["Coordinate", "TaskFamily", "RATE_OF", "eps", "class_label", "token_index", "group_symbol", "GapForm", "loss_in_gaps"]

#: The learning rate of each trained matrix, read off the circuit table
#: (:data:`derivations.core.vocabulary.CIRCUITS`).
RATE_OF = {matrix: SYMBOLS[rate] for circuit in CIRCUITS.values()
           for matrix, rate in ((circuit.matrix, circuit.rate), *zip(circuit.factors, circuit.factor_rates))}
#: Scale of the factorized circuits' structured initialization.
eps = sp.Symbol("epsilon", positive=True)


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


def class_label(i):
    """The label of class ``i`` in an index ``(role, label)`` (:mod:`~derivations.engine.symmetry`).

    Parameters
    ----------
    i : int

    Returns
    -------
    tuple
        ``("c", i)``.
    """
    return ("c", i)


def token_index(group):
    """The index of a token of ``group`` for class 0 (type 0 of a group of several types;
    type 0 of a shared group): ``("tok:<group>", label)``.

    Parameters
    ----------
    group : TokenGroup

    Returns
    -------
    tuple
    """
    if not group.per_class:
        return "tok:" + group.name, ("s", group.name, 0)
    return "tok:" + group.name, (class_label(0) if group.types == 1 else ("c", 0, 0))


def group_symbol(kind, group, task):
    """Observable symbols: mu_QK / mu_OV for the (single) relevant group, else mu_QK_<g> / mu_OV_<g>.

    Parameters
    ----------
    kind : str
        ``"QK"`` (a score gap) or ``"OV"`` (a logit gap).
    group : str
        The group's name.
    task : Task

    Returns
    -------
    sympy.Symbol
    """
    if len(task.relevant) == 1 and group == task.relevant[0]:
        return mu_QK if kind == "QK" else mu_OV
    return sp.Symbol(f"mu_{kind}_{group}", real=True)


class TaskFamily:
    """Builds the family-coordinate expressions of one task and parameterization.

    ``coords`` collects, in order of first use, every :class:`Coordinate`
    that an entry asked for (``{(matrix, pattern): Coordinate}``).

    Parameters
    ----------
    task : Task
        The task whose trained matrices' entries are expressed.
    parameterization : str
        ``"CACO"``, ``"CAFO"``, ``"FACO"`` or ``"FAFO"``: which circuits are factorized.
    """

    def __init__(self, task: Task, parameterization: str):
        self.task, self.param = task, parameterization
        self.qk_fact = qk_factorized(parameterization)
        self.ov_fact = ov_factorized(parameterization)
        self.coords = {}
        self.shared_types = {g.name: g.types for g in task.groups if not g.per_class or g.types != 1}

    def coord(self, mat, i, j):
        """The coordinate symbol of entry ``(i, j)`` of trained matrix ``mat``.

        Parameters
        ----------
        mat : str
            A trained matrix (``"W_QK"``, ``"W_Q"``, ...).
        i, j : tuple
            Row and column index ``(role, label)`` (:mod:`~derivations.engine.symmetry`).

        Returns
        -------
        sympy.Symbol
            ``<mat>[<orbit name>]``; its :class:`Coordinate` is added to ``coords``.
        """
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
        """W_QK[i, j] on the family.

        Parameters
        ----------
        i, j : tuple
            Token indices ``(role, label)``.

        Returns
        -------
        sympy.Expr
            A coordinate, or (factorized) the sum over hidden units of ``W_Q[i, h] W_K[j, h]``.
        """
        if not self.qk_fact:
            return self.coord("W_QK", i, j)
        return class_sum(lambda h: self.coord("W_Q", i, ("hid", class_label(h)))
                         * self.coord("W_K", j, ("hid", class_label(h))), self._classes(i, j), M)

    def ov(self, o, t):
        """W_OV[o, t] on the family.

        Parameters
        ----------
        o, t : tuple
            Output index and token index ``(role, label)``.

        Returns
        -------
        sympy.Expr
            A coordinate, or (factorized) the sum over hidden units of ``W_O[o, h] W_V[h, t]``.
        """
        if not self.ov_fact:
            return self.coord("W_OV", o, t)
        return class_sum(lambda h: self.coord("W_O", o, ("hid", class_label(h)))
                         * self.coord("W_V", ("hid", class_label(h)), t), self._classes(o, t), M)

    def initial_values(self):
        """The structured initialization (factor coordinates ~ eps; collapsed 0)."""
        init = {}
        q0, h0, h1 = ("tok:" + self.task.query, class_label(0)), ("hid", class_label(0)), ("hid", class_label(1))
        o0, o1 = ("out", class_label(0)), ("out", class_label(1))
        if self.qk_fact:
            init[self.coord("W_Q", q0, h0)] = eps
            for r in self.task.relevant:
                init[self.coord("W_K", token_index(self.task.group(r)), h0)] = eps
        if self.ov_fact:
            init[self.coord("W_O", o0, h0)] = eps * (1 - 1 / M)
            init[self.coord("W_O", o1, h0)] = -eps / M
            for r in self.task.relevant:
                init[self.coord("W_V", h0, token_index(self.task.group(r)))] = eps * (1 - 1 / M)
                init[self.coord("W_V", h1, token_index(self.task.group(r)))] = -eps / M
        return init


# ---------------------------------------------------------------- step 2

@dataclass(frozen=True)
class GapForm:
    """Class k's loss on the family in gap form (step 2).

    Attributes
    ----------
    reference : str
        The group whose score is the reference of the score gaps.
    observables : dict
        Observable symbol -> its expression in the family coordinates.
    attention : dict
        Group name -> its total attention, in the observables.
    margin, loss, alpha : sympy.Expr
        ``z_k - z_j``, the loss and the relevant attention, in the observables.
    family_loss : sympy.Expr
        The loss in the family coordinates.
    """
    reference: str
    observables: dict
    attention: dict
    margin: sp.Expr
    loss: sp.Expr
    alpha: sp.Expr
    family_loss: sp.Expr


def _attended_groups(task):
    """``[(group, index, count)]`` of the groups class 0 attends to (nonzero count), and the
    reference group: a zero-embedded group first, else a shared one, else an irrelevant per-class one."""
    reps = []
    for g in task.groups:      # count: the copies of all the group's types in a class's context
        count = g.types * (task.own_count(g) if g.per_class else g.multiplicity)
        if sp.simplify(count) == 0:
            continue
        reps.append((g, token_index(g), count))
    order = ([r for r in reps if not r[0].embedded] + [r for r in reps if r[0].embedded and not r[0].per_class]
             + [r for r in reps if r[0].embedded and r[0].per_class and r[0].name not in task.relevant]
             + [r for r in reps if r[0].embedded and r[0].name in task.relevant])
    return reps, order[0][0]


def loss_in_gaps(task: Task, fam: TaskFamily) -> GapForm:
    """Step 2: class k (label 0) of the family, in gap form.

    Parameters
    ----------
    task : Task
    fam : TaskFamily
        The task's family (step 1).

    Returns
    -------
    GapForm
    """
    q0 = ("tok:" + task.query, class_label(0))
    o0, o1 = ("out", class_label(0)), ("out", class_label(1))
    reps, ref = _attended_groups(task)
    score = {g.name: task.score_scale * fam.qk(q0, idx) / task.embedding_scale if g.embedded else sp.S.Zero
             for g, idx, _ in reps}
    obs_forms, x_sym, g_sym = {}, {}, {}
    for g, idx, _ in reps:
        if g is ref:
            continue
        form = sp.expand(score[g.name] - score[ref.name])
        if form != 0:
            sym = group_symbol("QK", g.name, task)
            obs_forms[sym], x_sym[g.name] = form, sym
    for g, idx, _ in reps:
        if not g.embedded:
            continue
        form = sp.expand((fam.ov(o0, idx) - fam.ov(o1, idx)) / sp.sqrt(task.embedding_scale))
        if form != 0:
            sym = group_symbol("OV", g.name, task)
            obs_forms[sym], g_sym[g.name] = form, sym
    weights = {g.name: count * (sp.exp(x_sym[g.name]) if g.name in x_sym else 1) for g, _, count in reps}
    Z = sum(weights.values())
    attention = {k: w / Z for k, w in weights.items()}
    margin = sum(attention[k] * g_sym[k] for k in g_sym)
    loss = sp.log(1 + (M - 1) * sp.exp(-margin))
    alpha = sum(attention[r] for r in task.relevant if r in attention)
    return GapForm(ref.name, obs_forms, attention, margin, loss, alpha, loss.subs(obs_forms))
