r"""Input checks of the numeric solvers, each raising ``ValueError`` that names
the parameter and its valid range.

The model parameters, the parameterization names and the positivity rule are
checked by :mod:`derivations.core.vocabulary` (one rule everywhere); this module
holds what only numerics needs: integers with a lower bound, numbers in the range a method is
tested on (:func:`check_in_range`), loss levels in :math:`(0, \log M)`, solver tolerances, output
times and integration intervals.

>>> from numerics.validation import check_times, check_loss_level
>>> check_times("t_eval", [0, 1, 2]).tolist()
[0.0, 1.0, 2.0]
>>> check_times("t_eval", [1, float("nan")])
Traceback (most recent call last):
...
ValueError: t_eval must be finite, strictly increasing times; got [1.0, nan]
>>> check_loss_level("target_loss", 5.0, 20)
Traceback (most recent call last):
...
ValueError: target_loss must be in (0, log M) = (0, 2.995732273553991); got 5.0 (a loss the dynamics never reach)
"""
from __future__ import annotations

import decimal
import math
import numbers

import numpy as np

from derivations.core.output import shown_float

__all__ = ["as_numbers", "check_int", "check_in_range", "check_loss_level", "check_loss_levels", "check_target_losses",
           "check_times", "check_t_span", "check_point", "check_positive_values", "check_positive_range",
           "check_result", "shown_number"]


def check_int(name, value, minimum, maximum=None) -> int:
    """An integer argument, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : int
        An integer (not a bool).
    minimum : int
    maximum : int, optional
        The largest value allowed (default: no upper bound).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Not an integer in ``[minimum, maximum]``; the message names the bounds.

    >>> check_int("epochs", 10 ** 21, 1, 10 ** 9)
    Traceback (most recent call last):
    ...
    ValueError: epochs must be an integer in [1, 1000000000]; got 1000000000000000000000
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum
            or (maximum is not None and int(value) > maximum)):
        span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an integer {span}; got {value!r}")
    return int(value)


def shown_number(value) -> str:
    """A number as the user would type it (``1e+300``, ``0.5``, ``7``; no ``np.float64(...)``): a double at
    15 significant digits, a subnormal one (below about 2.2e-308, which holds fewer) at the digits it holds,
    the shortest text that reads back as it (``1e-320``, not ``9.99988867182683e-321``):
    :func:`derivations.core.output.shown_float`.

    Parameters
    ----------
    value : object

    Returns
    -------
    str
        ``repr`` of what is not a number.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (np.datetime64, np.timedelta64)):     # NumPy calls a timedelta an integer
        return repr(value)
    if isinstance(value, (bool, np.bool_)):
        return repr(bool(value))
    if isinstance(value, numbers.Integral):
        return repr(int(value))
    if isinstance(value, numbers.Real):
        try:
            return shown_float(value)
        except OverflowError:            # Fraction(10**400)
            return str(value)
    return repr(value)


def _bound(value) -> str:
    """A range bound, short where that is exact (``1e-08``), else in full."""
    if float(f"{value:g}") == value:
        return f"{value:g}"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def as_numbers(name, values, what) -> np.ndarray:
    """``values`` as a float array, where they are real numbers: the one test of what is a number.

    Numbers are Python's and NumPy's integers and floats and other real numbers (``Fraction``,
    ``Decimal``, SymPy's), alone or in (object) arrays or lists; booleans, text, complex numbers,
    dates, other objects and ragged lists are refused (``np.asarray(..., dtype=float)`` would take
    ``True``, ``"0.5"`` and ``1+0j``), as is a number too large for a float (``10**400``).

    Parameters
    ----------
    name : str
        The parameter, for the message.
    values : float or array_like
    what : str
        What the values must be, for the message (``"in (0, log M)"``).

    Returns
    -------
    ndarray
        A 0-d array for a number.

    Raises
    ------
    ValueError
        ``"<name> must be <what>; got <values>"``.

    >>> as_numbers("loss", True, "in (0, log M)")
    Traceback (most recent call last):
    ...
    ValueError: loss must be in (0, log M); got True
    """
    try:
        x = np.asarray(values)
        if x.dtype.kind in "iuf" and (isinstance(values, np.ndarray) or not x.ndim
                                      or not any(isinstance(v, (bool, np.bool_))         # [True, 2.0]
                                                 for v in np.asarray(values, dtype=object).flat)):
            return x.astype(float)
        if x.dtype.kind == "O" and all(isinstance(v, (numbers.Real, decimal.Decimal)) and not isinstance(v, bool)
                                       for v in x.flat):
            return np.array([float(v) for v in x.flat], dtype=float).reshape(x.shape)
    except (TypeError, ValueError, OverflowError):                  # ragged; too large for a float
        pass
    raise ValueError(f"{name} must be {what}; got {shown_number(values)}")


def _point(name, value, what, size=2, *, finite=False) -> tuple:
    """``size`` numbers (:func:`as_numbers`; all finite if ``finite``) as floats, else ``ValueError``
    ``"<name> must be <what>; got ..."``."""
    x = as_numbers(name, value, what)
    if x.shape != (size,) or (finite and not np.isfinite(x).all()):
        raise ValueError(f"{name} must be {what}; got {shown_number(value)}")
    return tuple(x.tolist())


def check_in_range(name, values, lo, hi, why="", *, hi_open=False, lo_open=False, scalar=False):
    """Every entry of ``values`` a finite number in ``[lo, hi]`` (``(lo, ...`` if ``lo_open``,
    ``..., hi)`` if ``hi_open``).

    The one range check of the numeric methods: each is accepted on the range it is
    tested or verified on, and the message says which range and why.

    Parameters
    ----------
    name : str
        The parameter, for the message.
    values : float or array_like
    lo, hi : float
    why : str, optional
        What the range is, for the message (``"for the closed-form state (the range it is
        verified on)"``).
    hi_open, lo_open : bool, optional
    scalar : bool, optional
        One number only (a sequence, even an empty one, refused); it is returned as a float.

    Returns
    -------
    ndarray or float
        ``values`` as floats (a 0-d array for a number); a float if ``scalar``.

    Raises
    ------
    ValueError
        An entry that is not a number (booleans and text included) or outside the range, or
        (``scalar``) not one number; the message names ``name``, the range, ``why`` and the
        first such entry.

    >>> check_in_range("ratio", [0.5, 2.0], 1e-3, 50.0).tolist()
    [0.5, 2.0]
    >>> check_in_range("ratio", 1e6, 1e-3, 50.0, "(the range the flow answers in bounded time)")
    Traceback (most recent call last):
    ...
    ValueError: ratio must be in [0.001, 50] (the range the flow answers in bounded time); got 1000000
    """
    what = f"in {'(' if lo_open else '['}{_bound(lo)}, {_bound(hi)}{')' if hi_open else ']'}{' ' + why if why else ''}"
    x = as_numbers(name, values, what)
    if scalar and x.ndim:
        raise ValueError(f"{name} must be {what}; got {shown_number(values)}")
    ok = np.isfinite(x) & ((x > lo) if lo_open else (x >= lo)) & ((x < hi) if hi_open else (x <= hi))
    if not ok.all():
        raise ValueError(f"{name} must be {what}; got {shown_number(values if x.ndim == 0 else x[~ok].ravel()[0])}")
    return float(x) if scalar else x


def check_result(name, value, inputs, fix="") -> np.ndarray:
    """A result computed from valid inputs, refused where double precision cannot hold it: not a
    finite number > 0 (an overflow to inf, an underflow to 0).

    Parameters
    ----------
    name : str
        The result and its formula, for the message (``"Lambda = r (M - 1) l(L)^2 / (M b)"``).
    value : array_like
    inputs : dict
        ``{name: array_like}``, broadcast against ``value``; the message shows them at the first
        entry refused.
    fix : str, optional
        What keeps the result in range, for the message.

    Returns
    -------
    array_like
        ``value`` itself.

    Raises
    ------
    ValueError
        ``"<name> must be a finite number > 0 (at most 1.8e308, at least 5e-324); got inf at
        <inputs>"``.

    >>> check_result("y = x^2", math.inf, {"x": 1e200}, "x at most 1e154")
    Traceback (most recent call last):
    ...
    ValueError: y = x^2 must be a finite number > 0 (at most 1.8e308, at least 5e-324); got inf at x=1e+200 (x at most 1e154)
    """
    x = np.asarray(value)
    bad = ~(np.isfinite(x) & (x > 0))
    if bad.any():
        i = np.unravel_index(np.argmax(bad), x.shape) if x.ndim else ()
        at = ", ".join(f"{k}={shown_number(np.broadcast_to(v, x.shape)[i])}" for k, v in inputs.items())
        raise ValueError(f"{name} must be a finite number > 0 (at most 1.8e308, at least 5e-324); "
                         f"got {shown_number(x[i])} at {at}{f' ({fix})' if fix else ''}")
    return value


def check_loss_level(name, value, M) -> float:
    r"""A loss level the dynamics reach, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : float
        Finite, in :math:`(0, \log M)`.
    M : int
        Number of classes.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Outside :math:`(0, \log M)` or not a number.
    """
    log_M = math.log(M)
    try:
        x = as_numbers(name, value, "a loss")           # the one test of a number (not 10**400, not True)
        v = float(x) if x.ndim == 0 else math.nan
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0 < v < log_M):
        raise ValueError(f"{name} must be in (0, log M) = (0, {log_M!r}); got {value!r} "
                         "(a loss the dynamics never reach)")
    return v


def check_loss_levels(name, values, M) -> tuple:
    """A sequence of loss levels, each checked by :func:`check_loss_level`.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    values : sequence of float
    M : int
        Number of classes.

    Returns
    -------
    tuple of float
        In the given order.

    Raises
    ------
    ValueError
        Not a sequence, or a level outside (0, log M).
    """
    if isinstance(values, (str, bytes)) or not np.iterable(values):
        raise ValueError(f"{name} must be a sequence of losses in (0, log M); got {values!r}")
    return tuple(check_loss_level(name, v, M) for v in values)


def check_target_losses(name, values, M) -> np.ndarray:
    r"""One stopping loss or a non-empty sequence of them, each in :math:`(0, \log M)`, and the
    class count :math:`M` (a finite number > 1) they are checked against.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    values : float or sequence of float
    M : float
        Number of classes.

    Returns
    -------
    ndarray
        The losses, 1-D, in the given order.

    Raises
    ------
    ValueError
        ``M`` not a finite number > 1; no loss, or one outside :math:`(0, \log M)`.
    """
    ok = isinstance(M, numbers.Real) and not isinstance(M, bool)
    if not (ok and math.isfinite(M) and M > 1):
        raise ValueError(f"M must be a finite number > 1; got {M!r}")
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = values.item()
    if isinstance(values, (str, bytes)) or not np.iterable(values):
        values = (values,)
    if len(values) == 0:
        raise ValueError(f"{name} must name at least one loss in (0, log M); got {values!r}")
    return np.array(check_loss_levels(name, values, float(M)))


def check_times(name, times) -> np.ndarray:
    """Output times, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    times : array_like
        A non-empty 1-d sequence of finite, strictly increasing numbers.

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        Otherwise.
    """
    t = as_numbers(name, times, "finite, strictly increasing times")
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        shown = t.tolist() if t.size <= 6 else f"array of shape {t.shape}"
        raise ValueError(f"{name} must be finite, strictly increasing times; got {shown}")
    return t


def check_t_span(t_span, *, allow_infinite_end=False) -> tuple:
    """An integration interval, checked.

    Parameters
    ----------
    t_span : (float, float)
        ``(t0, t1)`` with ``t0`` finite and ``t1 > t0``.
    allow_infinite_end : bool
        Accept ``t1 = inf``.

    Returns
    -------
    (float, float)

    Raises
    ------
    ValueError
        Otherwise.
    """
    t0, t1 = _point("t_span", t_span, "(t0, t1) with t1 > t0")
    end_ok = math.isfinite(t1) or (allow_infinite_end and t1 == math.inf)
    if not (math.isfinite(t0) and end_ok and t1 > t0):
        kind = "t1 > t0" if allow_infinite_end else "finite t1 > t0"
        raise ValueError(f"t_span must be (t0, t1) with t0 finite and {kind}; got {t_span!r}")
    return t0, t1


def check_point(name, value, names=("mu_OV", "mu_QK")) -> tuple:
    """A point of the reduced coordinates, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : sequence of float
        One finite number per coordinate.
    names : tuple of str
        The coordinates (default ``(mu_OV, mu_QK)``).

    Returns
    -------
    tuple of float

    Raises
    ------
    ValueError
        Not ``len(names)`` finite numbers.
    """
    what = f"{'two' if len(names) == 2 else len(names)} finite numbers ({', '.join(names)})"
    return _point(name, value, what, len(names), finite=True)


def check_positive_values(name, values) -> np.ndarray:
    """Numbers that must all be finite and > 0, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    values : array_like
        Real numbers (:func:`as_numbers`), any shape.

    Returns
    -------
    ndarray
        ``values`` as floats.

    Raises
    ------
    ValueError
        An entry that is not a number (:func:`as_numbers`), or not finite and > 0; the message
        names the first such entry.
    """
    what = "finite numbers > 0"
    x = as_numbers(name, values, what)
    bad = ~(np.isfinite(x) & (x > 0))
    if bad.any():
        raise ValueError(f"{name} must be {what}; got {shown_number(values if x.ndim == 0 else x[bad][0])}")
    return x


def check_positive_range(name, value) -> tuple:
    """An interval of positive numbers, checked.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : (float, float)
        ``(low, high)`` with ``0 < low < high < inf``.

    Returns
    -------
    (float, float)

    Raises
    ------
    ValueError
        Otherwise.
    """
    message = f"{name} must be (low, high) with 0 < low < high < inf; got {value!r}"
    low, high = _point(name, value, "(low, high) with 0 < low < high < inf")
    if not (0 < low < high < math.inf):
        raise ValueError(message)
    return low, high
