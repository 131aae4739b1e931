r"""Numeric functions of the derived theory, with named arguments.

Every builder here returns a :class:`~numerics.functions.numeric_function.NumericFunction`
over code *generated ahead of time* from the derivation catalog
(:func:`~numerics.functions.numeric_function.generated_function`): nothing is derived or
lambdified at run time, and importing this module does not import SymPy. The generator
(:mod:`derivations.output.numeric_codegen`) applies only SymPy operations (derivatives,
Jacobians, substitutions, ``solve``) and mechanical floating-point rewrites
(:mod:`derivations.output.float_rewrites`: ``expm1``, ``log1p``, ``logaddexp``, the Wright
omega identity) to the catalog's expressions. The function accepts its arguments
positionally (in ``.names`` order) or by name::

    >>> from numerics.functions.lambdified import alpha_fn
    >>> f = alpha_fn()
    >>> f.names
    ('mu_QK', 'm', 'n')
    >>> float(f(0.0, m=5, n=50))   # m e^0 / (m e^0 + n) = 5/55
    0.09090909090909091

Argument conventions
--------------------
State variables come first, then the parameters in the fixed order
:data:`PARAM_NAMES` = ``(m, n, b, M, eta_QK, eta_OV, eta_Q, eta_K, eta_O,
eta_V, C_QK, C_OV)`` (unused ones are accepted and ignored), so that hot
loops can call ``.func`` positionally. ``.args`` (SymPy symbols) and
``.expr`` (the generated expressions) are read back on demand, importing
SymPy only then. Every builder raises ``ValueError`` for an unknown backend
(:data:`~derivations.core.vocabulary.BACKENDS`), parameterization or circuit,
and for a backend the function has no code for (``math`` has no special functions).
"""
from __future__ import annotations

from derivations.core.vocabulary import check_circuit, check_parameterization

from .. import _generated
from .numeric_function import generated_function

__all__ = [
    "PARAM_NAMES", "alpha_fn", "loss_fn", "loss_of_margin_fn", "reduced_rhs", "reduced_jacobian",
    "first_integral_fn", "first_integral_scale_fn", "line_coordinates_fn", "orbit_fn",
    "orbit_residual_fn", "initial_point_fn", "initial_conserved_fn", "circuit_magnitudes_fn",
    "margin_at_loss_fn", "state_equation_fn", "state_equation_dp_fn", "state_equation_mu_fn",
    "state_bounds_fn", "odds_of_mu_QK_fn", "state_from_mu_QK_fn", "state_from_odds_fn",
    "time_integrand_fn",
]

#: Names of the parameters every flow function takes after its state variables.
PARAM_NAMES = ("m", "n", "b", "M", "eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V",
               "C_QK", "C_OV")


# --------------------------------------------------------------------------
# Model quantities
# --------------------------------------------------------------------------

def alpha_fn(backend="numpy"):
    r"""alpha(mu_QK; m, n) = m e^{mu_QK} / (m e^{mu_QK} + n) (catalog ``model.alpha``),
    written as ``1/(1 + n e^{-mu_QK}/m)`` so that neither tail overflows.

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_QK, m, n)``.
    """
    return generated_function("alpha", backend)


def loss_of_margin_fn(backend="numpy"):
    r"""Loss as a function of the margin s = alpha mu_OV,
    :math:`L = \log(1 + (M-1)e^{-s})` (catalog ``model.loss_alpha``), evaluated
    as ``logaddexp(0, log(M-1) - s)`` in floats: accurate at tiny loss and
    finite (about ``log(M-1) - s``) at a large negative margin.

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(s, M)``.
    """
    return generated_function("loss_of_margin", backend)


def loss_fn(backend="numpy"):
    r"""Loss in (mu_OV, mu_QK): :func:`loss_of_margin_fn` at s = alpha(mu_QK) mu_OV.

    >>> round(float(loss_fn()(-1e6, 0.0, m=5, n=50, M=20)), 3)  # no overflow to inf
    90912.035

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, m, n, M)``.
    """
    return generated_function("loss", backend)


def _flow_tag(parameterization, balanced):
    return f"[{check_parameterization(parameterization)},{'balanced' if balanced else 'unbalanced'}]"


def reduced_rhs(parameterization="CACO", balanced=True, backend="numpy"):
    r"""Right-hand side ``(dmu_OV/dt, dmu_QK/dt)`` of the reduced flow
    (catalog ``<P>.dmu_OV_dt``, ``<P>.dmu_QK_dt``; unbalanced:
    ``<P>.dmu_*_dt_unbalanced_alpha`` with alpha substituted).

    CACO: :math:`\dot\mu_{OV} = \eta_{OV}\alpha/(b(e^{\alpha\mu_{OV}}+M-1))`,
    :math:`\dot\mu_{QK} = \eta_{QK}(M-1)\alpha(1-\alpha)\mu_{OV}/(Mb^2(e^{\alpha\mu_{OV}}+M-1))`;
    factorized circuits replace the rate by the effective rate.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    balanced : bool, default True
        False: factorized circuits with the conserved quantities ``C_QK``/``C_OV``.
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``; returns a 2-tuple.
    """
    return generated_function("reduced_rhs" + _flow_tag(parameterization, balanced), backend)


def reduced_jacobian(parameterization="CACO", balanced=True, backend="numpy"):
    """Jacobian ``[[d f_OV/d mu_OV, d f_OV/d mu_QK], [d f_QK/d mu_OV, d f_QK/d mu_QK]]``
    of :func:`reduced_rhs` (``sympy.Matrix.jacobian`` at generation time).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    balanced : bool, default True
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``; returns the Jacobian flattened
        row-major into a 4-tuple.
    """
    return generated_function("reduced_jacobian" + _flow_tag(parameterization, balanced), backend)


def first_integral_fn(parameterization="CACO", backend="numpy"):
    r"""First integral H(mu_OV, mu_QK) of the balanced reduced flow (catalog
    ``<P>.first_integral``; CACO:
    :math:`m e^{\mu_{QK}} + n\mu_{QK} - n\frac{\eta_{QK}}{\eta_{OV}}\frac{(M-1)\mu_{OV}^2}{2Mb}`).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``.
    """
    return generated_function(f"first_integral[{check_parameterization(parameterization)}]", backend)


def first_integral_scale_fn(parameterization="CACO", backend="numpy"):
    """Sum of the absolute values of the terms of :func:`first_integral_fn`:
    the scale of the cancellation in H (a drift of H is relative to it).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``.
    """
    return generated_function(f"first_integral_scale[{check_parameterization(parameterization)}]", backend)


def line_coordinates_fn(parameterization="CACO", backend="numpy"):
    """The line coordinates of the orbit (catalog ``<P>.line_X``, ``line_Y``,
    ``line_slope``); along every trajectory ``Y - Y_0 = slope (X - X_0)``.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, *PARAM_NAMES)``; returns ``{"X", "Y", "slope"}``.
    """
    return generated_function(f"line_coordinates[{check_parameterization(parameterization)}]", backend)


def orbit_fn(parameterization="CACO", backend="numpy"):
    r"""Explicit orbit mu_QK(mu_OV) through (mu_OV_0, mu_QK_0) (CACO, CAFO;
    catalog ``<P>.orbit``): :math:`\mu_{QK} = K - \omega(K + \log(m/n))`,
    generated after the Wright omega identity as
    :math:`\log\omega(K+\log(m/n)) - \log(m/n)`.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO"}, default "CACO"
    backend : {"numpy", "mpmath"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAM_NAMES)``.

    Raises
    ------
    ValueError
        For FACO/FAFO, whose orbit is implicit (use :func:`orbit_residual_fn`).
    """
    check_parameterization(parameterization)
    if f"orbit[{parameterization}]" not in _generated.FUNCTIONS:
        raise ValueError(f"parameterization {parameterization!r} has an implicit orbit; "
                         "use orbit_residual_fn")
    return generated_function(f"orbit[{parameterization}]", backend)


def orbit_residual_fn(parameterization="CACO", backend="numpy"):
    """``lhs - rhs`` of the orbit equation (0 on the orbit), for all four
    parameterizations (explicit orbits: ``mu_QK - orbit``).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    backend : {"numpy", "mpmath"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, mu_OV_0, mu_QK_0, *PARAM_NAMES)``.
    """
    return generated_function(f"orbit_residual[{check_parameterization(parameterization)}]", backend)


def initial_point_fn(parameterization="CACO", backend="numpy"):
    """``(mu_OV(0), mu_QK(0))`` of the paper's initialization with scale eps
    (:func:`derivations.tasks.paper.factorization.initial_point`; collapsed circuits
    start at 0).

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(eps, b)``; returns a 2-tuple.
    """
    return generated_function(f"initial_point[{check_parameterization(parameterization)}]", backend)


def initial_conserved_fn(circuit="QK", backend="numpy"):
    """Conserved quantity C of a factorized circuit at the paper's initialization
    (:func:`derivations.tasks.paper.factorization.initial_conserved`,
    ``eps^2 (1/eta_A - 1/eta_B)``).

    Parameters
    ----------
    circuit : {"QK", "OV"}, default "QK"
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(eps, *PARAM_NAMES)``.
    """
    return generated_function(f"initial_conserved[{check_circuit(circuit).name}]", backend)


def circuit_magnitudes_fn(backend="numpy"):
    """Each circuit's amplitude on its basis matrix at (mu_OV, mu_QK), solved from
    the family's mu map (``b mu_QK`` and ``sqrt(b) mu_OV``; for a factorized circuit,
    the product of its factor coordinates).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_QK, b)``; returns ``{"QK", "OV"}``.
    """
    return generated_function("circuit_magnitudes", backend)


def time_integrand_fn(parameterization="CACO", backend="numpy"):
    r"""dt/dmu_OV along the explicit orbit (CACO, CAFO):
    :math:`b(e^{\alpha\mu_{OV}} + M - 1)/(\eta_{OV}\alpha)` with alpha on the
    orbit (1/``<P>.dmu_OV_dt`` on ``<P>.orbit``; for CACO this is catalog
    ``asymptotics.time_integrand``), after the Wright omega identity.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO"}, default "CACO"
    backend : {"numpy", "mpmath"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_OV, mu_OV_0, mu_QK_0, *PARAM_NAMES)``.

    Raises
    ------
    ValueError
        For FACO/FAFO, whose orbit is implicit (integrate the reduced ODE instead).
    """
    check_parameterization(parameterization)
    if f"time_integrand[{parameterization}]" not in _generated.FUNCTIONS:
        raise ValueError(f"parameterization {parameterization!r} has an implicit orbit; "
                         "integrate the reduced ODE instead")
    return generated_function(f"time_integrand[{parameterization}]", backend)


# --------------------------------------------------------------------------
# Sharpness at fixed loss (CACO, zero init, eta_OV = 1, r = eta_QK)
# --------------------------------------------------------------------------

def margin_at_loss_fn(backend="numpy"):
    r"""Margin at loss L: :math:`s = \log(M-1) - \log(\mathrm{expm1}(L))`
    (catalog ``sharpness.margin``).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(L, M)``.
    """
    return generated_function("margin_at_loss", backend)


def state_equation_fn(backend="numpy"):
    r"""State equation F(p; s, r) (= 0 at the state; catalog ``sharpness.state_equation``).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(p, s, r, m, n, b, M)``.
    """
    return generated_function("state_equation", backend)


def state_equation_dp_fn(backend="numpy"):
    """dF/dp of :func:`state_equation_fn`.

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(p, s, r, m, n, b, M)``.
    """
    return generated_function("state_equation_dp", backend)


def odds_of_mu_QK_fn(backend="numpy"):
    """The attention odds p as a function of mu_QK (``p = m e^{mu_QK}/n``,
    solved from catalog ``sharpness.state.mu_QK``).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_QK, m, n)``.
    """
    return generated_function("odds_of_mu_QK", backend)


def state_equation_mu_fn(backend="numpy"):
    r"""The state equation in u = mu_QK (the Newton variable of
    :func:`numerics.dynamics.closed_form.state_at_loss`) and its u-derivative:
    :math:`G(u) = \frac{m}{n}(e^u - 1) + u - \frac{r s^2 (M-1)}{2Mb}\,(1 + \frac{n}{m}e^{-u})^2`,
    the r-free part written with ``expm1(u)`` so that the root keeps full
    relative accuracy when mu_QK is tiny. G is increasing in u.

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_QK, s, r, m, n, b, M)``; returns ``(G, dG/du)``.
    """
    return generated_function("state_equation_mu", backend)


def state_bounds_fn(backend="numpy"):
    r"""Four Wright-omega candidates bracketing the root of the state
    equation, in u = mu_QK (from Lambert-type bounding equations of
    :math:`G_0(x) = k(1+e^{-x})^2`, :math:`k = r s^2 (M-1)/(2Mb)`, x = log p;
    see ``derivations.output.numeric_codegen._state_bounds``). The caller checks
    the signs.

    Parameters
    ----------
    backend : {"numpy", "mpmath"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(s, r, m, n, b, M)``; returns a 4-tuple.
    """
    return generated_function("state_bounds", backend)


def state_from_mu_QK_fn(backend="numpy"):
    """The state from mu_QK and the margin s (catalog ``sharpness.state.*``) with p
    eliminated through :func:`odds_of_mu_QK_fn` (no precision lost in
    ``mu_QK = log(n p/m)``).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(mu_QK, s, m, n, b, M)``; returns ``{"alpha", "mu_OV", "p"}``.
    """
    return generated_function("state_from_mu_QK", backend)


def state_from_odds_fn(backend="numpy"):
    """The state from the odds p and the margin s (catalog ``sharpness.state.*``).

    Parameters
    ----------
    backend : {"numpy", "mpmath", "math"}, default "numpy"

    Returns
    -------
    NumericFunction
        Arguments ``(p, s, m, n, b, M)``; returns ``{"alpha", "mu_QK", "mu_OV"}``.
    """
    return generated_function("state_from_odds", backend)
