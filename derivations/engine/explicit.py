r"""Explicit instances: every matrix entry an independent symbol, the literal loss, and the one
invariance check.

For a concrete number of classes ``M_value`` (and of shared types), each trained matrix of a task
is a :class:`sympy.Matrix` of independent symbols and the population loss is built literally from
the model's definition (:func:`explicit_loss`). :func:`invariance_residual` evaluates the full
gradient flow ``-eta dL/dW`` on the reduced family and subtracts the family flow; an empty result
means the reduction is exact on that instance. :func:`nonzero_entries` is the one decision "is
this residual zero" that the engine's check and the paper's
(:func:`derivations.tasks.paper.reduction.invariance_residual`) share.

>>> from derivations.engine.explicit import invariance_residual
>>> invariance_residual("paper", "CACO", 2, exact=False)
[]
"""
from __future__ import annotations

import random

import sympy as sp

from ..core.vocabulary import check_classes, ov_factorized, qk_factorized
from ..symbolic.exp_zero import is_zero_exactly
from ..symbolic.symbols import M
from .family import RATE_OF, class_label as _cls
from .reachable import nonzero_at_random_points
from .reduce import TaskReduction, as_task, reduce_task
from .symmetry import canonical

__all__ = ["basis_matrices", "explicit_loss", "invariance_residual", "nonzero_entries"]


def nonzero_entries(residuals, *, exact: bool = True, rng=None) -> list:
    """The entries of ``residuals`` (``[(where, expression)]``) that are not zero.

    ``exact=True``: a residual is zero when :func:`derivations.symbolic.exp_zero.is_zero_exactly`
    proves it (exponentials as powers of independent symbols, numerator of one fraction expanded
    to 0), or else when :func:`sympy.simplify` reduces it to 0 -- after a 30-digit evaluation at a
    random point (with ``rng``) that catches a wrong flow early.
    ``exact=False``: a residual counts as zero when it vanishes to 1e-20 at two random rational
    points (30 digits) -- fast, for the default tests. Equal expressions are decided once.

    Parameters
    ----------
    residuals : iterable of tuple
        ``(where, expression)`` pairs.
    exact : bool, optional
        Decide exactly (default True) or numerically.
    rng : random.Random, optional
        For the random points (the numeric pre-check of ``exact=True`` needs one).

    Returns
    -------
    list of tuple
        The ``(where, expression)`` pairs found nonzero, in order.
    """
    out, verdict = [], {}
    for where, diff in residuals:
        if diff == 0:
            continue
        if diff not in verdict:   # entries of one orbit often give the same expression: decide once
            if exact:   # proved zero cheaply, else a wrong flow caught numerically, else simplify decides
                verdict[diff] = not is_zero_exactly(diff) and (
                    (rng is not None and nonzero_at_random_points(diff, diff.free_symbols, rng, trials=1))
                    or sp.simplify(diff) != 0)
            else:
                verdict[diff] = nonzero_at_random_points(diff, diff.free_symbols, rng, trials=2)
        if verdict[diff]:
            out.append((where, diff))
    return out


def _label(g, k, i):
    """The symmetry label of token (class k, type i) of group g (:mod:`~derivations.engine.symmetry`)."""
    if k is None:
        return "s", g.name, i
    return _cls(k) if i is None else ("c", k, i)


def _check_M_value(M_value) -> int:
    """``M_value`` as an int (:func:`~derivations.core.vocabulary.check_classes`), else ValueError naming it."""
    try:
        return check_classes(M_value)
    except ValueError as exc:
        raise ValueError(f"M_value: {exc}") from None


def _explicit_indices(task, M_value, shared_types):
    """Row/column indices of each matrix of an explicit instance, in TaskInstance order."""
    M_value = _check_M_value(M_value)
    toks = [("tok:" + g.name, _label(g, k, s)) for g, k, s in task.layout(M_value, shared_types) if g.embedded]
    outs = [("out", _cls(k)) for k in range(M_value)]
    hids = [("hid", _cls(k)) for k in range(M_value)]
    return {"W_QK": (toks, toks), "W_Q": (toks, hids), "W_K": (toks, hids),
            "W_OV": (outs, toks), "W_O": (outs, hids), "W_V": (hids, toks)}


def basis_matrices(reduction: TaskReduction, M_value: int, shared_types: dict | None = None) -> dict:
    """``{coordinate name: (matrix name, nested list of 0/1)}`` for a concrete
    instance (rows/columns in :class:`~derivations.engine.TaskInstance` order),
    so that each trained matrix is ``sum theta_i U_i`` on the family.

    Parameters
    ----------
    reduction : TaskReduction
    M_value : int
        Number of classes.
    shared_types : dict, optional
        Group name -> number of types, where the task's is a symbol.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If a group's symbolic number of types has no value in ``shared_types``, or ``M_value``
        is not an integer >= 2.
    """
    from ..tasks.registry import get_task
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
        if (not g.per_class or g.types != 1) and g.name not in shared_types:
            if g.types.free_symbols:
                raise ValueError(f"give the number of types of group {g.name!r} ({g.types})")
            shared_types[g.name] = int(g.types)
    return shared_types


def explicit_loss(task, M_value, params, shared_types):
    """The literal population loss of a concrete instance (matrices ``params``,
    every entry a symbol), from the model's definition.

    Parameters
    ----------
    task : Task
    M_value : int
        Number of classes.
    params : dict of str to sympy.Matrix
        The trained matrices (``W_QK`` or ``W_Q``, ``W_K``; ``W_OV`` or ``W_O``, ``W_V``).
    shared_types : dict of str to int
        Group name -> number of types.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    ValueError
        ``M_value`` not an integer >= 2.
    """
    M_value = _check_M_value(M_value)
    idx = _explicit_indices(task, M_value, shared_types)
    toks = idx["W_QK"][0]
    W_QK = params["W_QK"] if "W_QK" in params else params["W_Q"] * params["W_K"].T
    W_OV = params["W_OV"] if "W_OV" in params else params["W_O"] * params["W_V"]
    nc_subs = {g.types: shared_types[g.name] for g in task.groups if isinstance(g.types, sp.Symbol)}
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
                j = toks.index(("tok:" + g.name, _label(g, kk, s)))
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
    :func:`derivations.symbolic.exp_zero.is_zero_exactly` (exponentials as powers of
    independent symbols, numerator of one fraction expanded to 0), or else
    by ``sympy.simplify`` after a 30-digit evaluation at a random point that
    catches a wrong flow early.
    ``exact=False``: a residual counts as zero when it vanishes to 1e-20 at two
    random rational points (30 digits) -- fast, for the default tests.

    Parameters
    ----------
    task : str or Task
        A task or a built-in task name (``derivations.engine.reduce.as_task``).
    parameterization : str, optional
        One of ``CACO``, ``CAFO``, ``FACO``, ``FAFO`` (default ``"CACO"``).
    M_value : int, optional
        Number of classes of the instance (default 2).
    shared_types : dict, optional
        Group name -> number of types, where the task's is a symbol.
    exact : bool, optional
        Decide exactly (default True) or numerically (:func:`nonzero_entries`).

    Returns
    -------
    list of tuple
        The nonzero residuals ``((matrix, row, column), expression)``; empty when exact.

    Raises
    ------
    ValueError
        If the task or parameterization is invalid, a symbolic number of types has no value, or
        ``M_value`` is not an integer >= 2.
    """
    M_value = _check_M_value(M_value)
    task = as_task(task)
    rng = random.Random(7)
    red = reduce_task(task, parameterization)
    shared_types = _shared_values(task, shared_types)
    idx = _explicit_indices(task, M_value, shared_types)
    mats = (["W_Q", "W_K"] if qk_factorized(parameterization) else ["W_QK"]) + \
           (["W_O", "W_V"] if ov_factorized(parameterization) else ["W_OV"])
    coordinate_at = {(c.matrix, c.pattern): c.symbol for c in red.coordinates}
    params, point = {}, {}     # point: each entry -> its family coordinate, or 0 off the family
    for name in mats:
        rows, cols = idx[name]
        W = sp.Matrix(len(rows), len(cols), lambda i, j: sp.Symbol(f"{name}_{i}_{j}", real=True))
        params[name] = W
        for i, ri in enumerate(rows):
            for j, cj in enumerate(cols):
                point[W[i, j]] = coordinate_at.get((name, canonical((ri, cj))), 0)
    loss = explicit_loss(task, M_value, params, shared_types)
    values = {M: M_value}
    for g in task.groups:
        if g.types.free_symbols:
            values.update({s: shared_types[g.name] for s in g.types.free_symbols})
    flows = {c.symbol: red.family_odes[c.symbol].subs(values) for c in red.coordinates}
    entries = []
    for name, W in params.items():
        rows, cols = idx[name]
        for i in range(len(rows)):
            for j in range(len(cols)):
                full = -RATE_OF[name] * sp.diff(loss, W[i, j]).xreplace(point)
                entries.append(((name, i, j), full - flows.get(point[W[i, j]], 0)))
    return nonzero_entries(entries, exact=exact, rng=rng)
