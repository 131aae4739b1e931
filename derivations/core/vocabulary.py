"""The project's vocabulary: names, the paper's setting, the circuit table and
the input checks, each defined once.

This module is plain Python (no SymPy, no NumPy at import time), so that both
:mod:`derivations` (symbolic) and :mod:`numerics` (numeric hot paths) import
it without cost. Everything that is a *formula* (for example how a circuit's
matrix entry relates to mu) is derived in :mod:`derivations.tasks.paper.model` and shipped
to numerics in ``numerics._generated``; this module holds only names, data
and checks.

================================  ==============================================
name                              what
================================  ==============================================
:data:`PARAMETERIZATIONS`         ``("CACO", "CAFO", "FACO", "FAFO")``
:func:`check_parameterization`    the name, or ValueError listing the choices
:func:`qk_factorized`             is W_QK = W_Q W_K^T in this parameterization?
:func:`ov_factorized`             is W_OV = W_O W_V in this parameterization?
:data:`PAPER_SETTING`             ``{"m": 5, "n": 50, "b": 50, "M": 20}``
:data:`MODEL_PARAMETERS`          ``("m", "n", "b", "M")``
:data:`MAX_CLASSES`               largest supported M, 2**53
:data:`MODEL_PARAMETER_RANGE`     the range of m, n and b, ``(1e-100, 1e100)``
:func:`check_model_parameters`    ``(m, n, b, M) -> (float, float, float, int)``
:func:`is_number_text`            is text a number as typed: ASCII digits, sign, point, exponent
:data:`CIRCUITS`                  the circuit table (:class:`Circuit` records)
:func:`check_circuit`             ``"QK"``/``"OV"`` -> its :class:`Circuit`
:data:`SHARES`                    where attention goes: relevant, the query's own token, other
:data:`BACKENDS`                  ``("numpy", "mpmath", "math")``: numeric functions' backends
================================  ==============================================

The rule for the model parameters (the same everywhere)
-------------------------------------------------------
* ``m``, ``n``, ``b``: real numbers, finite and > 0 (``m`` and ``n`` are
  multiplicities in a softmax, so non-integers are allowed), in
  :data:`MODEL_PARAMETER_RANGE` ``[1e-100, 1e100]``. Measured on the paper's reduced flow
  (every parameterization, to losses 2.5, 1 and 1e-3): it answers with ``m`` and ``n`` scaled
  together from 1e-150 to 1e150 and with ``b`` up to 1e150, and fails beyond (an overflow, a
  non-finite flow, a solver that stops at once); the range keeps 50 decades from there, as the
  master flow's numbers do (at most 1e100). Inside it, a method may answer on less and says so
  (the closed forms: 1e-8 to 1e8).
* ``M``: an integer (an integer-valued float such as ``20.0`` is accepted) in
  ``[2, MAX_CLASSES]`` with ``MAX_CLASSES = 2**53``: beyond it ``M`` and
  ``M - 1`` are the same double, so no double-precision formula in ``M`` can
  be trusted, and ``float(M)`` is no longer exact.

Functions that can only answer on a smaller range (a simulation with 2M x 2M
matrices, a closed form in double precision) check that range themselves and
name it in their ValueError.

Examples
--------
>>> from derivations.core.vocabulary import PAPER_SETTING, check_model_parameters
>>> check_model_parameters(**PAPER_SETTING)
(5.0, 50.0, 50.0, 20)
>>> check_model_parameters(5, 50, 50, 1e23)
Traceback (most recent call last):
...
ValueError: M must be an integer in [2, 9007199254740992]; got 1e+23
>>> CIRCUITS["QK"].factors, CIRCUITS["QK"].factor_rates
(('W_Q', 'W_K'), ('eta_Q', 'eta_K'))
>>> [p for p in PARAMETERIZATIONS if qk_factorized(p)]
['FACO', 'FAFO']
"""
from __future__ import annotations

import math
import numbers
import re
import sys
from typing import NamedTuple

__all__ = ["PARAMETERIZATIONS", "check_parameterization", "qk_factorized", "ov_factorized",
           "PAPER_SETTING", "MODEL_PARAMETERS", "MODEL_PARAMETER_MEANINGS", "MAX_CLASSES", "MODEL_PARAMETER_RANGE",
           "check_model_parameters", "check_positive", "check_classes", "is_number_text",
           "Circuit", "CIRCUITS", "check_circuit", "RATE_NAMES", "SHARES", "BACKENDS"]

# --------------------------------------------------------------------------
# Parameterizations
# --------------------------------------------------------------------------

#: The 2x2 grid: C/F = collapsed/factorized, first pair A = attention (QK),
#: second pair O = output (OV).
PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")


def check_parameterization(name) -> str:
    """Return ``name`` if it is one of :data:`PARAMETERIZATIONS`, else raise
    ``ValueError`` naming the valid choices.

    Parameters
    ----------
    name : str
        A parameterization name.

    Returns
    -------
    str
        ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not one of :data:`PARAMETERIZATIONS`.

    >>> check_parameterization("FACO")
    'FACO'
    """
    if not isinstance(name, str) or name not in PARAMETERIZATIONS:
        raise ValueError(
            f"parameterization must be one of {', '.join(PARAMETERIZATIONS)}; got {name!r}")
    return name


def qk_factorized(parameterization: str) -> bool:
    """True when the QK (attention) circuit is factorized, ``W_QK = W_Q W_K^T``
    (:meth:`Circuit.factorized` of :data:`CIRCUITS` ``["QK"]``).

    Parameters
    ----------
    parameterization : str
        One of :data:`PARAMETERIZATIONS`.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of :data:`PARAMETERIZATIONS`.
    """
    return CIRCUITS["QK"].factorized(parameterization)


def ov_factorized(parameterization: str) -> bool:
    """True when the OV (output) circuit is factorized, ``W_OV = W_O W_V``
    (:meth:`Circuit.factorized` of :data:`CIRCUITS` ``["OV"]``).

    Parameters
    ----------
    parameterization : str
        One of :data:`PARAMETERIZATIONS`.

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        If ``parameterization`` is not one of :data:`PARAMETERIZATIONS`.
    """
    return CIRCUITS["OV"].factorized(parameterization)


# --------------------------------------------------------------------------
# Model parameters
# --------------------------------------------------------------------------

#: Names of the model parameters, in the order used everywhere.
MODEL_PARAMETERS = ("m", "n", "b", "M")
#: The paper's setting (its Figures 2-4).
PAPER_SETTING = {"m": 5, "n": 50, "b": 50, "M": 20}
#: What each model parameter means, with its valid range.
MODEL_PARAMETER_MEANINGS = {
    "m": "number of relevant context tokens (real, > 0)",
    "n": "number of irrelevant context tokens (real, > 0)",
    "b": "embedding scale: tokens are one-hot / sqrt(b) (real, > 0)",
    "M": "number of classes (integer in [2, 2**53])",
}
#: Largest supported number of classes: beyond it M - 1 == M in double precision.
MAX_CLASSES = 2 ** 53
#: The range of m, n and b (see the module docstring: measured, with 50 decades to spare).
MODEL_PARAMETER_RANGE = (1e-100, 1e100)


def check_positive(name: str, value, *, normal: bool = False) -> float:
    """``float(value)`` if ``value`` is a real number, finite and > 0; else
    ValueError naming ``name`` (bools and strings are rejected).

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : real
        The value to check.
    normal : bool, optional
        Also refuse a subnormal double (below ``sys.float_info.min``, about 2.2e-308), which has lost
        digits (``1e-320`` is held as ``9.99988867182683e-321``), naming the range of the normal ones.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``value`` is not a real number (or is a bool), not finite, or not > 0 (with ``normal``, not a
        normal double).

    >>> check_positive("b", 50)
    50.0
    >>> check_positive("ratio", 1e-320, normal=True)
    Traceback (most recent call last):
    ...
    ValueError: ratio must be a normal double in [2.2250738585072014e-308, 1.7976931348623157e+308] (a subnormal one has lost digits); got 1e-320
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    try:
        v = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0; got {value!r}")
    if normal and v < sys.float_info.min:
        raise ValueError(f"{name} must be a normal double in [{sys.float_info.min!r}, {sys.float_info.max!r}] "
                         f"(a subnormal one has lost digits); got {value!r}")
    return v


def check_classes(M) -> int:
    """``int(M)`` if ``M`` is an integer (or integer-valued float) in
    ``[2, MAX_CLASSES]``; else ValueError naming the range.

    Parameters
    ----------
    M : int or float
        The number of classes.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``M`` is not an integer (or integer-valued float) in ``[2, MAX_CLASSES]``.

    >>> check_classes(20.0)
    20
    """
    message = f"M must be an integer in [2, {MAX_CLASSES}]; got {M!r}"
    if isinstance(M, bool) or not isinstance(M, numbers.Real):
        raise ValueError(message)
    if isinstance(M, numbers.Integral):
        value = int(M)
    else:
        v = float(M)
        if not math.isfinite(v) or v != math.floor(v):
            raise ValueError(message)
        value = int(v)
    if not 2 <= value <= MAX_CLASSES:
        raise ValueError(message)
    return value


#: A number as text: ASCII digits with an optional sign, decimal point and exponent, or inf, infinity, nan.
_NUMBER_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)",
                          re.ASCII | re.IGNORECASE)
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def is_number_text(text, integer: bool = False) -> bool:
    """Whether ``text`` (spaces around it aside) is a number written plainly: ASCII digits with an
    optional sign, decimal point and exponent (``5``, ``-0.5``, ``1e-3``), or ``inf``, ``infinity``,
    ``nan`` (any case); with ``integer``, digits with an optional sign only. Python's ``float`` and
    ``int`` read more (``1_0`` as 10, other scripts' digits such as ``５``): a number typed on a command
    line is read only where this holds.

    Parameters
    ----------
    text : str
    integer : bool, optional
        Accept integers only (default False).

    Returns
    -------
    bool
        False for what is not a ``str``.

    >>> [is_number_text(t) for t in ("5", " -1.5e-3 ", ".5", "Inf", "1_0", "\\uff15", "0x10")]
    [True, True, True, True, False, False, False]
    >>> is_number_text("5.0", integer=True)
    False
    """
    if not isinstance(text, str):
        return False
    return (_INTEGER_TEXT if integer else _NUMBER_TEXT).fullmatch(text.strip()) is not None


def check_model_parameters(m, n, b, M):
    """Validate the model parameters by the one rule of this module.

    Parameters
    ----------
    m, n, b : real
        Finite and > 0, in :data:`MODEL_PARAMETER_RANGE`.
    M : int
        Integer (or integer-valued float) in ``[2, MAX_CLASSES]``.

    Returns
    -------
    tuple
        ``(float(m), float(n), float(b), int(M))``.

    Raises
    ------
    ValueError
        Naming the first invalid parameter and its valid range.

    >>> check_model_parameters(1e308, 50, 50, 20)
    Traceback (most recent call last):
    ...
    ValueError: m must be in [1e-100, 1e+100] (the paper's parameters: its reduced flow overflows beyond); got 1e+308
    """
    lo, hi = MODEL_PARAMETER_RANGE
    out = []
    for name, value in (("m", m), ("n", n), ("b", b)):
        v = check_positive(name, value)
        if not lo <= v <= hi:
            raise ValueError(f"{name} must be in [{lo:g}, {hi:g}] (the paper's parameters: its reduced flow "
                             f"overflows beyond); got {value!r}")
        out.append(v)
    return (*out, check_classes(M))


# --------------------------------------------------------------------------
# The circuit table
# --------------------------------------------------------------------------

class Circuit(NamedTuple):
    """One circuit of the model, by the names used throughout the project.

    Attributes
    ----------
    name : str
        ``"QK"`` or ``"OV"``.
    matrix, rate, basis : str
        The collapsed circuit's trained matrix, learning rate and basis matrix
        (:func:`derivations.tasks.paper.model.basis_matrix`) on the invariant family.
    factors, factor_rates, factor_bases : tuple[str, str]
        The factorized circuit's trained matrices (``W = A B``, for QK
        ``W_QK = W_Q W_K^T``), their rates and their family basis matrices.
    extra_bases : tuple[tuple[str, str], ...]
        Further family directions of a factor that do not change the product
        (``W_V`` also moves along ``V1``, with ``U_O U_1 = 0``).
    conserved : str
        Symbol name of the factorized circuit's conserved quantity.
    mu : str
        The scalar of the reduced dynamics carried by this circuit.
    only_factorized : str
        The parameterization in which only this circuit is factorized.
    letter : int
        Index of this circuit's C/F letter in a parameterization name.
    """
    name: str
    matrix: str
    rate: str
    basis: str
    factors: tuple
    factor_rates: tuple
    factor_bases: tuple
    extra_bases: tuple
    conserved: str
    mu: str
    only_factorized: str
    letter: int

    def factorized(self, parameterization: str) -> bool:
        """Is this circuit factorized in ``parameterization``?

        Parameters
        ----------
        parameterization : str
            One of :data:`PARAMETERIZATIONS`.

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            If ``parameterization`` is not one of :data:`PARAMETERIZATIONS`.
        """
        return check_parameterization(parameterization)[self.letter] == "F"

    def trained(self, parameterization: str) -> tuple:
        """``((matrix, basis, rate), ...)``: the trained matrices of this
        circuit in ``parameterization`` with their family basis matrices and
        rates (one entry per family coordinate).

        Parameters
        ----------
        parameterization : str
            One of :data:`PARAMETERIZATIONS`.

        Returns
        -------
        tuple of (str, str, str)
            ``(matrix, basis, rate)`` names: the collapsed matrix, or each factor and
            each of :attr:`extra_bases`.

        Raises
        ------
        ValueError
            If ``parameterization`` is not one of :data:`PARAMETERIZATIONS`.
        """
        if not self.factorized(parameterization):
            return ((self.matrix, self.basis, self.rate),)
        out = tuple(zip(self.factors, self.factor_bases, self.factor_rates))
        rate_of = dict(zip(self.factors, self.factor_rates))
        return out + tuple((mat, basis, rate_of[mat]) for mat, basis in self.extra_bases)


#: The circuit table. Formulas (the magnitude of a circuit in mu units, the
#: effective rate, the conserved quantity) are derived from the model in
#: :mod:`derivations.tasks.paper.model` and :mod:`derivations.tasks.paper.factorization`.
CIRCUITS = {
    "QK": Circuit("QK", "W_QK", "eta_QK", "QK", ("W_Q", "W_K"), ("eta_Q", "eta_K"), ("Q", "K"),
                  (), "C_QK", "mu_QK", "FACO", 0),
    "OV": Circuit("OV", "W_OV", "eta_OV", "OV", ("W_O", "W_V"), ("eta_O", "eta_V"), ("O", "V"),
                  (("W_V", "V1"),), "C_OV", "mu_OV", "CAFO", 2),
}

#: All learning-rate names: collapsed rates, then factor rates.
RATE_NAMES = ("eta_QK", "eta_OV", "eta_Q", "eta_K", "eta_O", "eta_V")
#: Where the attention goes, three shares that sum to 1: the relevant tokens (alpha), the
#: query's own token (its position and its copies in the context) and all other positions.
SHARES = ("relevant_attention", "self_attention", "other_attention")
#: The backends a numeric function is generated, printed or lambdified for.
BACKENDS = ("numpy", "mpmath", "math")


def check_circuit(circuit) -> Circuit:
    """The :class:`Circuit` named ``circuit`` (``"QK"`` or ``"OV"``), else ValueError.

    Parameters
    ----------
    circuit : str
        ``"QK"`` or ``"OV"``.

    Returns
    -------
    Circuit
        Its entry of :data:`CIRCUITS`.

    Raises
    ------
    ValueError
        If ``circuit`` is neither.

    >>> check_circuit("OV").only_factorized
    'CAFO'
    """
    if not isinstance(circuit, str) or circuit not in CIRCUITS:
        raise ValueError(f"circuit must be 'QK' or 'OV'; got {circuit!r}")
    return CIRCUITS[circuit]
