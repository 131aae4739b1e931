"""Special functions called by the generated numeric code (``numerics._generated``).

Kept out of SciPy's import at cold start: :func:`wright_omega` is a vectorized
NumPy iteration, :func:`expi` imports :mod:`scipy.special` on first use, and
mpmath is imported only by the mpmath variants. :func:`logsumexp_rows` is the
full model's log-sum-exp (:class:`numerics.model.TaskModel`).

>>> from numerics.functions.special_functions import wright_omega
>>> float(wright_omega(1.0))      # omega + log(omega) = 1 at omega = 1
1.0
"""
import math

import numpy

__all__ = ["wright_omega", "wright_omega_mpmath", "expi", "logaddexp_math", "logsumexp_rows"]


def wright_omega(z):
    """Wright omega of real z (vectorized): the solution of omega + log(omega) = z.

    Start from e^z (z <= 1) or z - log z (z > 1), then four steps of the
    fourth-order iteration of Fritsch, Shafer and Crowley (as in Lawrence,
    Corless and Jeffrey, ACM TOMS 38 (2012), Algorithm 917, which SciPy's
    ``wrightomega`` implements); below z = -40, omega = e^z to double
    precision. Agrees with mpmath to a few ulp on [-1e3, 1e300]
    (``tests/derivations/output/test_generated.py``).

    Parameters
    ----------
    z : float or array_like

    Returns
    -------
    float or ndarray
    """
    z = numpy.asarray(z, dtype=float)
    with numpy.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        big = z > 1.0
        w = numpy.where(big, z - numpy.log(numpy.where(big, z, 1.0)), numpy.exp(numpy.where(big, 0.0, z)))
        for _ in range(4):
            r = z - w - numpy.log(w)
            wp1 = 1.0 + w
            t = wp1 * (wp1 + (2.0 / 3.0) * r)
            step = w * (r / wp1) * (t - 0.5 * r) / (t - r)
            w = numpy.where((z > -40.0) & numpy.isfinite(step), w + step, w)
        w = numpy.where(z == numpy.inf, numpy.inf, w)
    return w[()] if w.ndim == 0 else w


def wright_omega_mpmath(z):
    """Wright omega in mpmath: ``lambertw(exp(z))`` (exact for any real z).

    Parameters
    ----------
    z : mpmath.mpf or float

    Returns
    -------
    mpmath.mpf
    """
    import mpmath
    return mpmath.lambertw(mpmath.exp(z)).real


def expi(x):
    """The exponential integral Ei (:data:`scipy.special.expi`, imported on first use).

    Parameters
    ----------
    x : float or array_like

    Returns
    -------
    float or ndarray
    """
    import scipy.special
    return scipy.special.expi(x)


def logaddexp_math(a, b):
    """``log(e^a + e^b)`` for floats without overflow (``-inf`` and ``inf`` included).

    Parameters
    ----------
    a, b : float

    Returns
    -------
    float
    """
    hi, lo = (a, b) if a >= b else (b, a)
    if lo == -math.inf or hi == math.inf:      # e^lo adds nothing (both -inf: log 0), or the sum is inf
        return hi + 0.0                         # a float, as hi + log1p(0) was (-0.0 gives 0.0)
    return hi + math.log1p(math.exp(lo - hi))


def logsumexp_rows(z):
    r"""``scipy.special.logsumexp(z, axis=-1)``, bit for bit, without its per-call cost.

    SciPy's stable form (1.15 and later): with :math:`m` the largest entry of a row,
    occurring :math:`c` times, and :math:`s = \sum_{z_j < m} e^{z_j - m} / c`,

    .. math:: \operatorname{logsumexp}(z) = \operatorname{log1p}(s) + \log c + m,

    the same operations in the same order, as plain NumPy calls (SciPy's array-API
    dispatch costs about 100 µs a call, most of the time of a gradient flow's
    loss evaluations).  A row that is not finite is left to SciPy itself.

    Parameters
    ----------
    z : ndarray, shape (..., n)

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ValueError
        ``z`` not a float array with at least one entry per row (an integer array's rows were
        summed in integers: a wrong result).

    >>> from scipy.special import logsumexp
    >>> z = numpy.array([[0.0, 1.0, 2.0], [5.0, 5.0, -1.0]])
    >>> bool(numpy.array_equal(logsumexp_rows(z), logsumexp(z, axis=-1)))
    True
    """
    if not (isinstance(z, numpy.ndarray) and z.dtype.kind == "f" and z.ndim and z.shape[-1]):
        got = f"{z.dtype} of shape {z.shape}" if isinstance(z, numpy.ndarray) else repr(z)
        raise ValueError(f"z must be a float array of shape (..., n) with n >= 1; got {got}")
    top = z.max(axis=-1, keepdims=True)
    at_top = z == top
    count = at_top.sum(axis=-1, keepdims=True, dtype=z.dtype)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        s = numpy.exp(numpy.where(at_top, -numpy.inf, z) - top).sum(axis=-1, keepdims=True, dtype=z.dtype)
        s = numpy.where(s == 0, s, s / count)
        out = (numpy.log1p(s) + numpy.log(count) + top)[..., 0]
    if not numpy.isfinite(out).all():
        from scipy.special import logsumexp

        return logsumexp(z, axis=-1)
    return out
