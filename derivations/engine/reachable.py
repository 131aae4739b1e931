"""The smallest invariant family from the initialization (step 3 of
:func:`derivations.engine.reduce.reduce_task`).

Starting from the coordinates that are nonzero at the initialization (zero for collapsed circuits; the
paper's structured ``eps`` factors for factorized ones), a coordinate joins the family when its flow does
not vanish there; repeated until nothing joins. Vanishing is decided at random rational points
(:func:`nonzero_at_random_points`); the explicit-instance check
(:func:`derivations.engine.explicit.invariance_residual`) confirms the family exactly.
"""
from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..symbolic.symbols import M
from .family import GapForm, TaskFamily

__all__ = ["nonzero_at_random_points", "active_coordinates", "reachable_family"]


def _random_point(symbols, rng):
    vals = {}
    for s in sorted(symbols, key=str):   # a set's order follows the hash seed: sorted, reproducible
        if s == M:
            vals[s] = sp.Rational(rng.randint(35, 65), 10)
        elif s.is_positive:
            vals[s] = sp.Rational(rng.randint(5, 40), 10)
        else:
            vals[s] = sp.Rational(rng.randint(-20, 20), 17)
    return vals


def nonzero_at_random_points(expr, free, rng, trials=2):
    """Decide whether ``expr`` is not identically zero by evaluation at random rational points (30 digits); a
    zero everywhere sampled counts as zero -- the explicit-instance check confirms the family exactly.

    Parameters
    ----------
    expr, free, rng
        The :class:`sympy.Expr`, the symbols given random values, a :class:`random.Random`.
    trials : int, optional
        Number of points (default 2).

    Returns
    -------
    bool
    """
    if expr == 0:
        return False
    for _ in range(trials):
        v = sp.N(expr.subs(_random_point(free, rng)), 30)
        if abs(v) > 1e-20:
            return True
    return False


def active_coordinates(fam, loss_of, init, rng):
    """The coordinates reachable from the initialization: starting from those nonzero
    there, a coordinate joins when the loss's derivative in it, with every coordinate
    not yet joined set to 0, is not identically zero (:func:`nonzero_at_random_points`);
    repeated until nothing joins.

    Parameters
    ----------
    fam : TaskFamily
    loss_of : sympy.Expr
        The loss on the family, in its coordinates.
    init : dict
        Coordinate symbol -> initial value.
    rng : random.Random

    Returns
    -------
    list of sympy.Symbol
        The reached coordinates, in the family's order.
    """
    all_coords = [c.symbol for c in fam.coords.values()]
    active = {c for c, v in init.items() if v != 0}
    while True:
        zero = {c: 0 for c in all_coords if c not in active}
        free = set(loss_of.free_symbols) | set(all_coords)
        new = [c for c in all_coords
               if c not in active and nonzero_at_random_points(sp.diff(loss_of, c).subs(zero), free, rng)]
        if not new:
            return [c for c in all_coords if c in active]
        active |= set(new)


def reachable_family(fam: TaskFamily, gap: GapForm, rng):
    """``(init, coords, zero, gap)``: the initialization, the coordinates reached from it, the others
    (set to 0), and the gap form restricted to them (observables that vanish there dropped).

    Parameters
    ----------
    fam, gap, rng
        The :class:`TaskFamily`, its :class:`GapForm` (step 2), a :class:`random.Random`.

    Returns
    -------
    tuple

    Raises
    ------
    ValueError
        No observable is left: the loss on the family is constant, and there is nothing to reduce.
    """
    init = fam.initial_values()
    active = active_coordinates(fam, gap.family_loss, init, rng)
    zero = {c.symbol: 0 for c in fam.coords.values() if c.symbol not in active}
    coords = tuple(c for c in fam.coords.values() if c.symbol in active)
    obs_forms = {k: sp.expand(v.subs(zero)) for k, v in gap.observables.items()}
    obs_forms = {k: v for k, v in obs_forms.items() if v != 0}
    dropped = {k: 0 for k in gap.observables if k not in obs_forms}
    if not obs_forms:
        raise ValueError(f"task {fam.task.name!r} ({fam.param}): nothing to reduce: on its invariant family the loss "
                         f"is {sp.sympify(gap.loss).subs(dropped)} whatever the trained matrices (no attended token "
                         "is both embedded and of one class: the context never tells the classes apart)")
    if dropped:
        gap = replace(gap, loss=gap.loss.subs(dropped), alpha=gap.alpha.subs(dropped),
                      margin=gap.margin.subs(dropped),
                      attention={k: v.subs(dropped) for k, v in gap.attention.items()})
    return init, coords, zero, replace(gap, observables=obs_forms, family_loss=gap.family_loss.subs(zero))
