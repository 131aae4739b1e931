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
from .closed_form import margin
from .state_result import StateAtLoss

__all__ = ["PaperClosedForms"]

_EPS = np.finfo(float).eps
#: Estimated relative error of the explicit orbit's root in doubles above which it is solved in mpmath.
ROOT_RTOL = 1e-13


def _illinois(g, a, b, rtol):
    """The root of ``g``, increasing, in the bracket ``[a, b]`` (``g(a) < 0 <= g(b)``): regula falsi with the
    Illinois step (an end kept twice has its value halved), to a bracket or step below ``rtol`` relative."""
    fa, fb, side, c = g(a), g(b), 0, b
    if fb == 0:
        return b
    for _ in range(10_000):
        c_old, c = c, (a * fb - b * fa) / (fb - fa)
        fc = g(c)
        if fc == 0 or abs(b - a) <= rtol * abs(c) or abs(c - c_old) <= rtol * abs(c):
            return c
        if fc > 0:
            b, fb = c, fc
            fa, side = (fa / 2 if side == 1 else fa), 1
        else:
            a, fa = c, fc
            fb, side = (fb / 2 if side == -1 else fb), -1
    raise ArithmeticError("the Illinois iteration did not converge")  # pragma: no cover - superlinear


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
        r"""mu_QK on the orbit through ``mu0`` at the given mu_OV (balanced).

        Collapsed QK circuit: the explicit orbit
        (:func:`numerics.functions.lambdified.orbit_fn`, :math:`\log\omega(K+\log(m/n)) - \log(m/n)`),
        which loses relative accuracy while mu_QK is tiny; ``precise``
        evaluates it with mpmath at 40 digits. Factorized QK circuit: the
        implicit orbit (:func:`~numerics.functions.lambdified.orbit_residual_fn`,
        increasing in mu_QK), solved for every point at once in
        :math:`\log\mu_{QK}` (``_increasing_root``).

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

    def _explicit_root_terms(self, u, s):
        r"""Sum of the magnitudes of the terms that the explicit orbit's root ``u`` (at margins ``s``) is
        computed from in doubles: its absolute error is a few ulp of this sum.

        On the orbit :math:`(m/n)e^{u} + u = A_0 + k(\mu_{OV}^j - \mu_{OV,0}^j)` (:math:`j = 2` for CACO,
        1 for CAFO), the generated form :math:`\log\omega(z) - \log(m/n)` adds :math:`\log m`,
        :math:`\log n`, the two :math:`k\mu^j` and :math:`A_0` in :math:`z`.
        """
        (x0, u0), m, n = self.mu0, self.m, self.n
        j = 2 if self.parameterization == "CACO" else 1
        x = s / np.asarray(self.alpha(u), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gap = np.abs(m / n * np.exp(u) + u - (m / n * np.exp(u0) + u0))      # k |x^j - x0^j|
            k_terms = np.where(gap > 0, gap * (np.abs(x) ** j + abs(x0) ** j) / np.abs(x ** j - x0 ** j), 0.0)
            return (abs(np.log(m)) + abs(np.log(n)) + np.abs(np.log(m / n) + m / n * np.exp(u) + u)
                    + m / n * np.exp(u0) + abs(u0) + k_terms)

    def _explicit_root_mpmath(self, loss, u_doubles, terms):
        """mu_QK of the explicit orbit at one loss, in mpmath: the orbit equation along
        ``mu_OV = s/alpha`` (increasing in mu_QK) on a bracket grown from ``mu_QK(0)`` (:func:`_illinois`), at 30
        digits more than ``mu_QK`` loses against ``terms`` (:meth:`_explicit_root_terms`)."""
        import mpmath
        orb, margin = lam.orbit_fn(self.parameterization, "mpmath").func, lam.margin_at_loss_fn("mpmath").func
        alpha = lam.alpha_fn("mpmath").func
        u0, dps = self.mu0[1], 30
        for _ in range(12):
            with mpmath.workdps(dps):
                args = [mpmath.mpf(v) for v in (*self.mu0, *self.params)]
                s_, m, n = margin(mpmath.mpf(loss), mpmath.mpf(self.M)), mpmath.mpf(self.m), mpmath.mpf(self.n)

                def g(uu):
                    return uu - orb(s_ / alpha(uu, m, n), *args)
                lo, step = mpmath.mpf(u0), mpmath.mpf(max(abs(u_doubles - u0), 8 * _EPS * terms, 1e-300))
                while g(lo + step) < 0:
                    step *= 2
                u = _illinois(g, lo, lo + step, mpmath.mpf(2) ** (8 - mpmath.mp.prec))
                lost = int(mpmath.ceil(mpmath.log10(terms / abs(u)))) if u else dps
            if dps - lost >= 25:
                return float(u)
            dps = max(lost + 30, 2 * dps)      # a root lost in the noise shows no more digits lost than dps
        raise ArithmeticError(f"the explicit orbit at loss {loss!r}: mu_QK not resolved at {dps} digits")

    def state_at_loss(self, loss) -> StateAtLoss:
        r"""The state of the balanced flow from ``mu0`` at the given losses, in closed form.

        CACO from zero: :func:`numerics.dynamics.closed_form.state_at_loss` at
        the ratio :math:`\eta_{QK}/\eta_{OV}`. Otherwise the orbit through
        ``mu0`` meets the margin :math:`\alpha\mu_{OV} = s(L)`
        (:func:`numerics.functions.lambdified.margin_at_loss_fn`; in mpmath where the
        doubles cancel, s small: losses near log M); along
        :math:`\mu_{OV} = s/\alpha(\mu_{QK})` the orbit residual increases in
        :math:`\mu_{QK}`, so a bracketed root (``_increasing_root``, every loss
        at once; in :math:`\log\mu_{QK}` for a factorized QK circuit) finds it.
        On the explicit orbit (a collapsed QK circuit) a root whose estimated relative
        error in doubles exceeds ``ROOT_RTOL`` (mu_QK tiny against the orbit's
        terms: small ratios, losses near the initial loss) is solved again in mpmath.
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
        s = np.array(margin(L, self.M), dtype=float)
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
            terms = self._explicit_root_terms(u, s)
            with np.errstate(divide="ignore", invalid="ignore"):
                redo = ~(8 * _EPS * terms / np.abs(u) < ROOT_RTOL)
            for i in np.ndindex(L.shape):    # the doubles cancel: mu_QK tiny against the terms of the orbit
                if redo[i]:
                    u[i] = self._explicit_root_mpmath(float(L[i]), float(u[i]), float(terms[i]))
        a = np.asarray(self.alpha(u), dtype=float)
        mu_OV = s / a
        return StateAtLoss(mu_OV, u, a, L, np.full(L.shape, self.ratio), s=s,
                           coordinates={"mu_OV": mu_OV, "mu_QK": u})

