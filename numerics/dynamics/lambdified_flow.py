r"""The run-time lambdify backend of a reduced system: a flow given as SymPy expressions.

The task engine (:func:`derivations.engine.reduce_task`) writes a
task's reduced system as SymPy expressions: the right-hand side
:math:`\dot y = f(y;\theta)`, the loss :math:`L(y;\theta)` and the attention on
the relevant tokens :math:`\alpha(y;\theta)` (:math:`\theta`: the task's
parameters and the learning rates). :class:`LambdifiedFlow` lambdifies them
once (``math`` backend, the stable rewrites of
:func:`numerics.functions.numeric_function.numeric`), and on first use the Jacobian
:math:`\partial f/\partial y` (SymPy's ``Matrix.jacobian`` of the same
expressions), so that no SymPy runs on the hot path.

It is the backend of :class:`numerics.dynamics.reduced_system.ReducedSystem`
for every task without generated code (the paper's task has generated code),
and the object of :func:`numerics.dynamics.task_systems.reduced_flow`;
:meth:`ReducedSystem.integrate
<numerics.dynamics.reduced_system.ReducedSystem.integrate>` integrates it with
the one bounded loop :func:`numerics.dynamics.bounded_ivp.solve_loss_levels`.

>>> from numerics.dynamics.task_systems import reduced_flow
>>> flow = reduced_flow("paper", "CACO")
>>> flow.names, flow.param_names
(('mu_QK', 'mu_OV'), ('M', 'b', 'eta_OV', 'eta_QK', 'm', 'n'))
>>> values = dict(m=5, n=50, b=50, M=20, eta_QK=1.0, eta_OV=1.0)
>>> flow.rhs_at((0.0, 0.0), values).shape
(2,)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LambdifiedFlow"]


@dataclass(frozen=True, eq=False)
class LambdifiedFlow:
    r"""A reduced ODE :math:`\dot y = f(y;\theta)` with its loss, attention and Jacobian.

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
        from ..functions.numeric_function import numeric   # lambdified once per system (imports SymPy)
        args = tuple(self.coords) + tuple(self.params)
        from derivations.output.float_rewrites import cancel_fractions
        # the right-hand side: common subexpressions shared (lambdify cse), which
        # makes both the lambdification and the calls ~100x faster on the family
        # flows of factorized circuits, and 1 - alpha without cancellation
        # (cancel_fractions; the other float rewrites cost seconds on the family flows);
        # loss and alpha get the float rewrites (float_rewrites.float_form: logaddexp,
        # log1p/expm1) that matter at small loss, alpha its share divided through (no inf/inf)
        rhs = tuple(cancel_fractions(e) for e in self.rhs)
        self._set("_f", numeric(rhs, args, "math", stable=False, cse=True).func)
        if self.via is None:
            self._set("_L", numeric(self.loss, args, "math").func)
            self._set("_a", numeric(self.alpha, args, "math", shares=True).func)
        else:  # loss and alpha are functions of the observables, which are functions of y
            osyms, oexprs = self.via
            O = numeric(tuple(oexprs), args, "math", stable=False, cse=True).func
            oargs = tuple(osyms) + tuple(self.params)
            Lo = numeric(self.loss, oargs, "math").func
            ao = numeric(self.alpha, oargs, "math", shares=True).func
            p = len(self.coords)
            self._set("_L", lambda *a: Lo(*O(*a), *a[p:]))
            self._set("_a", lambda *a: ao(*O(*a), *a[p:]))
        self._set("_J", None)
        self._set("_Lmp", None)
        self._set("names", tuple(str(c) for c in self.coords))
        self._set("param_names", tuple(str(p) for p in self.params))

    def _set(self, name, value):
        object.__setattr__(self, name, value)

    def jacobian_function(self):
        r"""The raw Jacobian ``J(*y, *theta)`` (nested tuples, row i = :math:`\partial f_i/\partial y`):
        SymPy's ``Matrix.jacobian`` of ``rhs``, lambdified with shared
        subexpressions on first use (imports SymPy then, never on the paper's
        generated path)."""
        if self._J is None:
            import sympy as sp

            from ..functions.numeric_function import numeric
            J = sp.Matrix(self.rhs).jacobian(sp.Matrix(self.coords))
            rows = tuple(tuple(J.row(i)) for i in range(J.rows))
            flat = numeric(tuple(e for row in rows for e in row), tuple(self.coords) + tuple(self.params),
                           "math", stable=False, cse=True).func
            d = len(self.coords)
            self._set("_J", lambda *a: np.array(flat(*a), dtype=float).reshape(d, d))
        return self._J

    def loss_mpmath_function(self):
        r"""The loss ``L(*y, *theta)`` in mpmath (at the working precision), lambdified on first use
        (imports SymPy then)."""
        if self._Lmp is None:
            from ..functions.numeric_function import numeric
            args = tuple(self.coords) + tuple(self.params)
            if self.via is None:
                self._set("_Lmp", numeric(self.loss, args, "mpmath").func)
            else:
                osyms, oexprs = self.via
                O = numeric(tuple(oexprs), args, "mpmath", stable=False, cse=True).func
                Lo = numeric(self.loss, tuple(osyms) + tuple(self.params), "mpmath").func
                p = len(self.coords)
                self._set("_Lmp", lambda *a: Lo(*O(*a), *a[p:]))
        return self._Lmp

    def _pvals(self, values):
        missing = [p for p in self.param_names if p not in values]
        if missing:
            raise ValueError(f"{self.name}: missing parameter values {missing}")
        return tuple(float(values[p]) for p in self.param_names)

    def loss_at(self, y, values) -> float:
        """Loss at coordinates ``y``.

        Parameters
        ----------
        y : sequence of float
            The coordinates, in the order of ``names``.
        values : dict
            ``{name: value}`` of every parameter in ``param_names``.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            A parameter value missing.
        """
        return float(self._L(*y, *self._pvals(values)))

    def rhs_at(self, y, values) -> np.ndarray:
        r""":math:`\dot y` at ``y``.

        Parameters
        ----------
        y : sequence of float
            The coordinates, in the order of ``names``.
        values : dict
            ``{name: value}`` of every parameter in ``param_names``.

        Returns
        -------
        ndarray, shape (d,)

        Raises
        ------
        ValueError
            A parameter value missing.
        """
        return np.array(self._f(*y, *self._pvals(values)), dtype=float)
