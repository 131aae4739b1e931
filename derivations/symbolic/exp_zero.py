r"""An exact, cheap test that an expression in exponentials is identically zero.

The invariance residuals of the task engine (:func:`derivations.engine.invariance_residual`)
are rational functions of symbols and of exponentials ``exp(a)``, whose arguments ``a`` are
themselves rational in the symbols and in further exponentials (the softmax of the logits holds
the attention weights). :func:`sympy.simplify` decides such an expression slowly; this module
decides the common case, an identity, by plain rational-function arithmetic.

Method
------
Innermost exponentials first (arguments free of ``exp``), level by level:

1. each argument is expanded into terms, each term written as one fraction ``P/Q``
   (:func:`sympy.cancel`, numbers and sign moved out of ``Q``) and ``P`` expanded:
   ``a = sum_i c_i r_i`` with rational ``c_i`` and ``r_i = m_i / Q`` (``m_i`` a monomial);
2. for every distinct ``r`` among the level's arguments, with ``g_r`` the rational gcd of its
   coefficients, a fresh symbol stands for ``E_r = exp(g_r r)`` (an ``E_r`` of an inner level is
   reused where its ``g_r`` divides the new coefficients);
3. ``exp(a) = prod_i exp(c_i r_i) = prod_i E_{r_i}^{c_i / g_{r_i}}`` with integer powers
   ``c_i / g_{r_i}``, an identity of the exponential function.

After the last level the expression is a rational function ``F`` of the original symbols and the
``E_r``. If the numerator of ``F`` (:func:`sympy.together`, then :func:`sympy.expand`) is the zero
polynomial, ``F = 0`` for *independent* ``E_r`` and hence also for ``E_r = exp(g_r r)``, a
specialisation: the original expression is identically zero. The converse need not hold: the
``E_r`` may satisfy relations the test does not see (``exp(x/(x+1)) exp(1/(x+1)) = e`` holds,
but ``x/(x+1)`` and ``1/(x+1)`` get independent symbols), so a numerator that does not vanish
means *not proved*, never *nonzero*; callers fall back to :func:`sympy.simplify`.

Soundness needs exact arithmetic: an expression containing a :class:`sympy.Float` is never
declared zero (floating-point cancellation could fake an identity).

>>> import sympy as sp
>>> from derivations.symbolic.exp_zero import is_zero_exactly
>>> x, y = sp.symbols("x y", real=True)
>>> is_zero_exactly(sp.exp(x + y) - sp.exp(x) * sp.exp(y))
True
>>> is_zero_exactly(1 / (1 + sp.exp(-x)) - sp.exp(x) / (sp.exp(x) + 1))
True
>>> is_zero_exactly(sp.exp(x * y) - sp.exp(x) * sp.exp(y))     # not an identity: not proved
False
>>> is_zero_exactly(sp.exp(x / (x + 1)) * sp.exp(1 / (x + 1)) - sp.E)   # an identity it does not see
False
"""
from __future__ import annotations

from math import gcd, lcm

import sympy as sp

__all__ = ["exp_to_symbols", "is_zero_exactly", "is_zero"]


def _rational_gcd(coefficients):
    """Largest rational g with every c / g an integer: gcd of numerators / lcm of denominators."""
    return sp.Rational(gcd(*(c.p for c in coefficients)), lcm(*(c.q for c in coefficients)))


def _split_argument(arg):
    """``arg = sum_i c_i r_i``: rational ``c_i``; ``r_i = m_i / Q`` with ``m_i`` a monomial of the
    expanded numerator ``P`` of one additive term ``P/Q`` of ``arg`` (``Q`` primitive, sign fixed)."""
    parts = []
    for term in sp.Add.make_args(sp.expand(arg)):
        num, den = sp.fraction(sp.cancel(term))
        content, den = den.as_content_primitive()     # numbers out of Q: exp(3x/2) and exp(x) share r = x
        if den.could_extract_minus_sign():
            content, den = -content, -den
        for mono_term in sp.Add.make_args(sp.expand(num)):
            c, mono = mono_term.as_coeff_Mul(rational=True)
            if c == 0:   # an argument that expands to 0: exp(0) = 1, no factor
                continue
            parts.append((sp.Rational(c) / content, mono / den))
    return parts


def exp_to_symbols(expr):
    r"""Replace every exponential in ``expr`` by integer powers of fresh symbols.

    Parameters
    ----------
    expr : sympy.Expr
        Any SymPy expression; exponentials may be nested (``exp`` inside the argument of ``exp``).

    Returns
    -------
    rational : sympy.Expr
        ``expr`` with each ``exp(sum_i c_i r_i)`` written as ``prod_i E_{r_i}^{c_i/g_{r_i}}``
        (integer exponents), free of ``exp``.
    meaning : dict
        ``{E_r: exp(g_r r)}`` (:class:`sympy.Dummy` keys), so that
        ``rational.xreplace(meaning)`` equals ``expr`` (the exponential identities
        ``exp(a + b) = exp(a) exp(b)`` and ``exp(k a) = exp(a)^k``, k integer).

    Raises
    ------
    ValueError
        If ``expr`` is not a SymPy expression (parameter ``expr``).

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x")
    >>> rational, meaning = exp_to_symbols(sp.exp(x) + sp.exp(3 * x / 2))
    >>> [meaning[s] for s in sorted(rational.free_symbols, key=str)]
    [exp(x/2)]
    >>> sp.simplify(rational.xreplace(meaning) - sp.exp(x) - sp.exp(3 * x / 2))
    0
    """
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"expr must be a SymPy expression; got {expr!r}")
    meaning, known, level = {}, {}, 0    # known: r -> (symbol, g), shared by the levels
    while True:
        inner = [a for a in expr.atoms(sp.exp) if not a.args[0].has(sp.exp)]
        if not inner:
            return expr, meaning
        parts = {a: _split_argument(a.args[0]) for a in inner}
        coefficients = {}
        for split in parts.values():
            for c, r in split:
                coefficients.setdefault(r, []).append(c)
        for i, (r, cs) in enumerate(coefficients.items()):
            if r in known and all((c / known[r][1]).is_Integer for c in cs):
                continue   # an r of an inner level (exp(z) inside, exp(y/(1+exp(x)) + z) outside): same symbol
            g = _rational_gcd(cs)
            known[r] = (sp.Dummy(f"E{level}_{i}"), g)
            meaning[known[r][0]] = sp.exp(g * r.xreplace(meaning))   # in the original symbols
        replacement = {}
        for a, split in parts.items():
            factors = []
            for c, r in split:
                symbol = known[r]
                power = c / symbol[1]
                assert power.is_Integer   # c is a multiple of the gcd of r's coefficients
                factors.append(symbol[0] ** power)
            replacement[a] = sp.Mul(*factors)
        expr = expr.xreplace(replacement)
        level += 1


def is_zero_exactly(expr) -> bool:
    r"""True when ``expr`` is *proved* identically zero as a rational function in exponentials.

    The exponentials are replaced by powers of independent symbols (:func:`exp_to_symbols`),
    the result is brought over one denominator (:func:`sympy.together`) and its numerator
    expanded; zero numerator => ``expr == 0`` identically (a specialisation of an identity
    in independent symbols). False means "not proved" (possibly zero through relations
    between the exponentials that this test does not use, or through other functions), never
    "nonzero". Expressions holding a :class:`sympy.Float` are never declared zero.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        If ``expr`` is not a SymPy expression (parameter ``expr``).

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x", real=True)
    >>> is_zero_exactly(sp.exp(2 * x) - sp.exp(x) ** 2)
    True
    >>> is_zero_exactly(sp.exp(x) - 1 - x)
    False
    """
    if not isinstance(expr, sp.Expr):
        raise ValueError(f"expr must be a SymPy expression; got {expr!r}")
    if expr == 0:
        return True
    if expr.has(sp.Float):
        return False
    rational, _ = exp_to_symbols(expr)
    numerator, _ = sp.fraction(sp.together(rational))
    return sp.expand(numerator) == 0


def is_zero(expr) -> bool:
    """True when ``expr`` is identically zero: proved by :func:`is_zero_exactly`, else decided by
    :func:`sympy.simplify` (the fast proof first; simplify only for what it does not prove).

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    bool

    Raises
    ------
    ValueError
        If ``expr`` is not a SymPy expression (parameter ``expr``).

    Examples
    --------
    >>> import sympy as sp
    >>> x = sp.Symbol("x", real=True)
    >>> is_zero(sp.exp(2 * x) - sp.exp(x) ** 2), is_zero(sp.sin(x) ** 2 + sp.cos(x) ** 2 - 1)
    (True, True)
    >>> is_zero(sp.exp(x) - 1 - x)
    False
    """
    return is_zero_exactly(expr) or sp.simplify(expr) == 0
