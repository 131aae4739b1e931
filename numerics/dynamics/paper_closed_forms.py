r"""The paper's closed forms as capabilities of its reduced system.

The paper's task has closed forms that a general task lacks: the first
integral :math:`H` of the balanced flow, its orbits (explicit Wright-omega
orbits for a collapsed QK circuit, implicit ones for a factorized one) and the
state at a loss (:func:`numerics.dynamics.closed_form.state_at_loss` for CACO
from zero; else the orbit through the initial point meets the margin
:math:`\alpha\mu_{OV} = s(L)`). :class:`PaperClosedForms` holds them as methods
of :class:`numerics.dynamics.reduced_system.ReducedSystem`; each asks first for
the capability: a system of another task raises ``ValueError`` saying why
(the state at a loss of every task is :func:`numerics.dynamics.state_at_loss`).

>>> from numerics.dynamics.reduced_system import ReducedSystem
>>> system = ReducedSystem("CAFO", eta_QK=3.0)
>>> u = system.orbit([0.0, 1.0, 5.0])
>>> drift = system.first_integral(5.0, u[2]) - system.first_integral(*system.mu0)
>>> bool(abs(drift) < 1e-9 * system.first_integral_scale(5.0, u[2]))
True
"""
from __future__ import annotations

import numpy as np

from derivations.core.vocabulary import qk_factorized

from ..functions import lambdified as lam
from ..validation import check_loss_level
from .state_result import StateAtLoss

__all__ = ["PaperClosedForms"]

_EPS = np.finfo(float).eps


class PaperClosedForms:
    """The closed-form capabilities of the paper's reduced system (a mixin of
    :class:`~numerics.dynamics.reduced_system.ReducedSystem`, which sets
    ``task``, ``parameterization``, ``params``, ``mu0``, ``balanced``, ``m``,
    ``n``, ``b``, ``M``, ``C_QK``, ``C_OV``, ``alpha``, ``loss`` and ``ratio``)."""

    def _require_closed_form(self, what):
        if self.task != "paper":
            raise ValueError(f"{what} is a closed form of the paper's task; task {self.task!r} "
                             "has none (integrate its flow instead)")

    def _require_balanced(self, what):
        self._require_closed_form(what)
        if not self.balanced:
            raise ValueError(f"{what} is derived for balanced factors (C_QK = C_OV = 0); "
                             f"this system has C_QK={self.C_QK!r}, C_OV={self.C_OV!r}")

    def first_integral(self, mu_OV, mu_QK):
        """First integral H of the balanced flow (constant along trajectories).

        Parameters
        ----------
        mu_OV, mu_QK : float or array_like
            A point (arrays broadcast).

        Returns
        -------
        float or ndarray

        Raises
        ------
        ValueError
            Another task than the paper's, or unbalanced factors.
        """
        self._require_balanced("first_integral")
        return lam.first_integral_fn(self.parameterization).func(mu_OV, mu_QK, *self.params)

    def first_integral_scale(self, mu_OV, mu_QK):
        """Sum of the absolute values of H's terms: the scale on which H
        cancels, the denominator of a relative drift of H.

        Parameters
        ----------
        mu_OV, mu_QK : float or array_like
            A point (arrays broadcast).

        Returns
        -------
        ndarray
            Of the broadcast shape.
        """
        self._require_closed_form("first_integral_scale")
        f = lam.first_integral_scale_fn(self.parameterization).func
        shape = np.broadcast(np.asarray(mu_OV), np.asarray(mu_QK)).shape
        return np.broadcast_to(np.asarray(f(mu_OV, mu_QK, *self.params), dtype=float), shape)

    def orbit(self, mu_OV, *, precise=False):
        r"""mu_QK on the orbit through :attr:`mu0` at the given mu_OV (balanced).

        Collapsed QK circuit: the explicit orbit
        (:func:`numerics.functions.lambdified.orbit_fn`, :math:`\log\omega(K+\log(m/n)) - \log(m/n)`),
        which loses relative accuracy while mu_QK is tiny; ``precise``
        evaluates it with mpmath at 40 digits. Factorized QK circuit: the
        implicit orbit (:func:`~numerics.functions.lambdified.orbit_residual_fn`,
        increasing in mu_QK), solved for every point at once in
        :math:`\log\mu_{QK}` (:meth:`_increasing_root`).

        Parameters
        ----------
        mu_OV : float or array_like
        precise : bool
            Evaluate the explicit orbit with mpmath at 40 digits.

        Returns
        -------
        ndarray
            ``mu_QK``, shaped like ``mu_OV``.

        Raises
        ------
        ValueError
            Another task than the paper's, unbalanced factors, or an implicit
            orbit through ``mu_QK(0) <= 0``.
        ArithmeticError
            The implicit orbit's root not bracketed or not converged at some point.
        """
        self._require_balanced("orbit")
        x = np.asarray(mu_OV, dtype=float)
        P, (x0, u0) = self.parameterization, self.mu0
        if not qk_factorized(P):
            if not precise:
                return np.asarray(lam.orbit_fn(P).func(x, x0, u0, *self.params), dtype=float)
            import mpmath
            f = lam.orbit_fn(P, "mpmath").func
            with mpmath.workdps(40):
                args = [mpmath.mpf(v) for v in (x0, u0, *self.params)]
                out = [float(f(mpmath.mpf(float(xi)), *args)) for xi in x.ravel()]
            return np.array(out).reshape(x.shape)
        self._require_positive_u0()
        res, params = lam.orbit_residual_fn(P).func, self.params

        def g(lu, xi):
            return res(xi, np.exp(lu), x0, u0, *params)
        return np.exp(self._increasing_root(g, np.full(x.shape, np.log(u0)), x))

    def _require_positive_u0(self):
        u0 = self.mu0[1]
        if not u0 > 0:
            raise ValueError(f"the implicit orbit of {self.parameterization} needs mu_QK(0) > 0; got {u0!r}")

    @staticmethod
    def _increasing_root(g, lo, *args):
        """Elementwise root of ``g(x, *args)``, increasing in ``x``, at or above ``lo``
        (arrays of one shape): ``lo`` where ``g(lo) >= 0``; elsewhere a bracket grown
        to the right of ``lo`` (:func:`scipy.optimize.elementwise.bracket_root`, the
        width doubling) and the root in it
        (:func:`scipy.optimize.elementwise.find_root`, to 4 ulp).

        Raises
        ------
        ArithmeticError
            ``g`` is NaN at ``lo``, or for some element no bracket or no root was
            found (per-element status: never a NaN in the result).
        """
        from scipy.optimize import elementwise

        lo = np.asarray(lo, dtype=float)
        args = tuple(np.broadcast_to(np.asarray(a, dtype=float), lo.shape) for a in args)
        g0 = np.asarray(g(lo, *args), dtype=float)
        if np.isnan(g0).any():
            raise ArithmeticError("the orbit equation is undefined at the initial point")
        out = lo.copy()
        todo = g0 < 0
        if not todo.any():
            return out
        a = tuple(arg[todo] for arg in args)
        bracket = elementwise.bracket_root(g, lo[todo], lo[todo] + 1.0, xmin=lo[todo], factor=2.0, args=a,
                                           maxiter=60)
        if not np.all(bracket.success):
            raise ArithmeticError(f"no bracket for the orbit equation at {int(np.sum(~bracket.success))} "
                                  f"of {int(todo.sum())} points")
        root = elementwise.find_root(g, bracket.bracket, args=a, maxiter=200,
                                     tolerances={"xatol": 4 * _EPS, "xrtol": 4 * _EPS})
        if not np.all(root.success):
            raise ArithmeticError(f"the orbit equation did not converge at {int(np.sum(~root.success))} "
                                  f"of {int(todo.sum())} points")
        out[todo] = root.x
        return out

    def state_at_loss(self, loss) -> StateAtLoss:
        r"""The state of the balanced flow from :attr:`mu0` at the given losses, in closed form.

        CACO from zero: :func:`numerics.dynamics.closed_form.state_at_loss` at
        the ratio :math:`\eta_{QK}/\eta_{OV}`. Otherwise the orbit through
        :attr:`mu0` meets the margin :math:`\alpha\mu_{OV} = s(L)`
        (:func:`numerics.functions.lambdified.margin_at_loss_fn`); along
        :math:`\mu_{OV} = s/\alpha(\mu_{QK})` the orbit residual increases in
        :math:`\mu_{QK}`, so a bracketed root (:meth:`_increasing_root`, every loss
        at once; in :math:`\log\mu_{QK}` for a factorized QK circuit) finds it.
        Losses must lie in (0, log M) and below the initial loss.
        The state at a loss of any task is
        :func:`numerics.dynamics.state_at_loss`, which calls this method for
        the paper's factorized circuits.

        Parameters
        ----------
        loss : float or array_like
            Loss levels in (0, log M), below the initial loss.

        Returns
        -------
        StateAtLoss
            ``mu_OV``, ``mu_QK``, ``alpha`` (arrays shaped like ``loss``),
            ``method="closed form"``.

        Raises
        ------
        ValueError
            Another task than the paper's, unbalanced factors, or a loss
            outside (0, log M) or not below the initial loss.
        """
        if self.task != "paper":
            raise ValueError(f"ReducedSystem.state_at_loss is a closed form of the paper's task; "
                             f"the state at a loss of task {self.task!r} is "
                             f"numerics.dynamics.state_at_loss(loss, ratio, task={self.task!r})")
        self._require_balanced("state_at_loss")
        L = np.asarray(loss, dtype=float)
        for v in L.ravel():
            check_loss_level("loss", float(v), self.M)
        P, (x0, u0) = self.parameterization, self.mu0
        if P == "CACO" and x0 == 0.0 and u0 == 0.0:
            from . import closed_form   # looked up on call (tests replace it)
            return closed_form.state_at_loss(L, self.ratio, m=self.m, n=self.n, b=self.b, M=self.M)
        s = np.asarray(lam.margin_at_loss_fn().func(L, self.M), dtype=float)
        s0 = float(self.alpha(u0)) * x0
        if np.any(s <= s0):
            raise ValueError(f"loss must be below the initial loss {float(self.loss(x0, u0))!r}")
        res, params, alpha, m, n = lam.orbit_residual_fn(P).func, self.params, self._alpha, self.m, self.n
        if qk_factorized(P):      # implicit orbit, mu_QK > 0: root in log mu_QK
            self._require_positive_u0()

            def g(lu, si):
                uu = np.exp(lu)
                return res(si / alpha(uu, m, n), uu, x0, u0, *params)
            u = np.exp(self._increasing_root(g, np.full(L.shape, np.log(u0)), s))
        else:
            orb = lam.orbit_fn(P).func

            def g(uu, si):
                # far right of the root the orbit's omega underflows: its log is -inf, g is +inf (the sign
                # the bracket reads), not a fault to warn of
                with np.errstate(divide="ignore"):
                    return uu - orb(si / alpha(uu, m, n), x0, u0, *params)
            u = self._increasing_root(g, np.full(L.shape, float(u0)), s)
        a = np.asarray(self.alpha(u), dtype=float)
        mu_OV = s / a
        return StateAtLoss(mu_OV, u, a, L, np.full(L.shape, self.ratio), s=s,
                           coordinates={"mu_OV": mu_OV, "mu_QK": u})

