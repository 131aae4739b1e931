r"""One result type for every trajectory: the reduced flow
(:meth:`numerics.dynamics.reduced_system.ReducedSystem.integrate`,
:func:`numerics.dynamics.reduced_ode.solve_reduced`) and the full model's gradient flow
and gradient descent (:func:`numerics.dynamics.training.gradient_flow`,
:func:`numerics.dynamics.training.gradient_descent`).

Like SciPy's ``OdeResult``/``OptimizeResult`` it is a ``dict`` with attribute
access and named fields. Loss crossings are a list aligned with the
requested ``thresholds`` (``crossings[i]`` belongs to ``thresholds[i]``), so
they are looked up by position, never by a float key.

>>> from numerics.dynamics.reduced_ode import solve_reduced
>>> res = solve_reduced("CACO", loss_thresholds=(1.0, 0.3), target_loss=0.1)
>>> res.thresholds, [round(c["loss"], 9) for c in res.crossings]
((1.0, 0.3), [1.0, 0.3])
>>> res.status, round(res.target_state["loss"], 9) == 0.1 == res.target_loss
(1, True)
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import OptimizeResult

__all__ = ["Trajectory"]


class Trajectory(OptimizeResult):
    r"""A trajectory of the reduced coordinates, with SciPy-style named fields.

    Attributes
    ----------
    t : ndarray
        Times of the records (``t_eval`` if given, else the solver's steps;
        descent: ``step * lr``), ending at the terminal state if the target
        loss was reached.
    mu_OV, mu_QK : ndarray
        Reduced coordinates at ``t`` (full model: least-squares projection
        on the invariant family).
    alpha : ndarray
        Attention on the relevant tokens at ``t`` (full model: class mean).
    loss : ndarray
        Loss at ``t``.
    thresholds : tuple of float
        The requested ``loss_thresholds``, in the order given.
    crossings : list of (dict or None)
        ``crossings[i]``: the state where the loss first fell through
        ``thresholds[i]``, a dict with keys ``t, mu_OV, mu_QK, alpha, loss``
        (full model also ``distance, params``), or ``None`` if it never did.
    target_loss : float or None
        The requested target loss.
    target_state : dict or None
        The state where the loss reached ``target_loss`` (same keys).
    status : int
        -1 failure (solver failure, step budget exhausted, non-finite
        values), 0 end of the time span / steps reached, 1 ``target_loss``
        reached.
    message : str
        Why the run ended.
    reason : str
        The same, as a word (flows, not descent): ``"terminal"`` (``target_loss``
        reached), ``"end"`` (end of the time span), ``"steps"`` or ``"nfev"`` (the
        solver's budget spent), ``"horizon"`` (the target not reached by
        :data:`~numerics.dynamics.bounded_ivp.HORIZON`), ``"failed"`` (the solver
        failed), ``"nonfinite"`` (a value became non-finite) or ``"unresolved"`` (a
        loss crossing the doubles of t did not resolve, not found on its step
        integrated again in a local time).
    success : bool
        ``status >= 0``.
    nfev : int
        Right-hand-side (gradient) evaluations.
    njev : int
        Jacobian evaluations (reduced flow only).
    nsteps : int
        Solver steps (flows) or descent steps taken.

    Notes
    -----
    Full-model runs also carry ``distance`` (relative distance from the
    invariant family at ``t``), ``params`` (the final parameter matrices)
    and, for descent, ``step`` (step index of each record); reduced runs
    carry ``system`` (the :class:`~numerics.dynamics.reduced_system.ReducedSystem`).
    """

    def __repr__(self):
        parts = []
        for k, v in self.items():
            if isinstance(v, (dict, list, tuple)) or np.ndim(v) > 0:
                parts.append(f"{k}=<{type(v).__name__}>")
            else:
                parts.append(f"{k}={v!r}")
        return f"Trajectory({', '.join(parts)})"
