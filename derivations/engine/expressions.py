r"""The safe reader of a task's text values: arithmetic over known names, never Python.

A task's counts, numbers of types and scales may be given as text
(``"m / R"``, ``"s - 1"``). :func:`parse_expression` reads such text with a
small recursive-descent parser that knows only

* numbers (``2``, ``0.5``, ``1e-3``; read exactly, as SymPy rationals),
* names (each must be one of the ``names`` given; ``known_only=False`` makes
  a positive-integer placeholder symbol of any other identifier, which the
  task resolves against its declared parameters),
* ``+ - * / **``, parentheses and unary minus/plus.

Nothing is evaluated as Python and nothing can be called. The text, its
nesting, the numbers in it and its degree are bounded (:data:`MAX_TEXT`,
:data:`MAX_DEPTH`, :data:`MAX_NUMBER`, :data:`MAX_EXPONENT`, :data:`MAX_DEGREE`), and so is
a power of numbers by its exponent's numerator and denominator, so a long, deep or high-degree
text is a ``ValueError``, never a ``RecursionError`` or a hang.
:func:`check_bounds` applies the same bounds to a SymPy expression given
directly.

>>> import sympy as sp
>>> parse_expression("m / R - (s - 1)**2", {"m": sp.Symbol("m", positive=True)}, known_only=False)
-(s - 1)**2 + m/R
>>> parse_expression("__import__('os')", {})
Traceback (most recent call last):
...
ValueError: unexpected character '_' at position 0 (an expression holds numbers, names, + - * / ** and parentheses)
"""
from __future__ import annotations

import re

import sympy as sp

__all__ = ["MAX_TEXT", "MAX_DEPTH", "MAX_NUMBER", "MAX_EXPONENT", "MAX_NODES", "MAX_DEGREE", "parse_expression",
           "check_bounds", "degree", "placeholder"]

#: Longest text accepted (characters).
MAX_TEXT = 1000
#: Deepest nesting of parentheses, unary signs and powers.
MAX_DEPTH = 40
#: Largest magnitude of a number in an expression (numerators and denominators of rationals too).
MAX_NUMBER = 2 ** 53
#: Largest magnitude of a numeric exponent.
MAX_EXPONENT = 16
#: Most nodes of an expression tree.
MAX_NODES = 2000
#: Largest degree of an expression (:func:`degree`): exponents multiply through nested powers, so
#: ``(((m + 1)**16 + 1)**16 + 1)**16``, 27 characters within every other bound, has degree 4096, and
#: SymPy's sign analysis of it runs for minutes and gigabytes.
MAX_DEGREE = 64

#: Most bits of a power of numbers the parser computes (a number of 2**53 to the 16th).
_POWER_BITS = 54 * MAX_EXPONENT

_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z][A-Za-z0-9_]*)"
                    r"|(?P<op>\*\*|[-+*/()]))")


def placeholder(name: str) -> sp.Symbol:
    """The symbol of a name a group uses before its task declares it (a positive integer).

    Parameters
    ----------
    name : str

    Returns
    -------
    sympy.Symbol
        ``name``, positive and integer.
    """
    return sp.Symbol(name, positive=True, integer=True)


def _tokens(text: str) -> list:
    out, pos = [], 0
    stripped = text.rstrip()
    while pos < len(stripped):
        match = _TOKEN.match(stripped, pos)
        if match is None or match.end() == pos:
            bad = stripped[pos:].lstrip()[:1]
            where = len(stripped) - len(stripped[pos:].lstrip())
            raise ValueError(f"unexpected character {bad!r} at position {where} (an expression holds "
                             "numbers, names, + - * / ** and parentheses)")
        kind = match.lastgroup
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def _number(text: str) -> sp.Rational:
    if len(text) > 30:
        raise ValueError(f"number {text[:20]}... is too long")
    mantissa, _, exponent = text.lower().partition("e")
    if exponent and int(exponent) > 30:
        raise ValueError(f"number {text} is out of range ({_MAGNITUDE})")
    if exponent and int(exponent) < -30:
        raise ValueError(f"number {text} is out of range ({_FRACTION}; its denominator is at least 10**31)")
    value = sp.Rational(mantissa) * sp.Integer(10) ** int(exponent or 0)
    _check_number(value, text)
    return value


_MAGNITUDE = "numbers in an expression are at most 2**53 in magnitude"
#: Why a small number can be out of range: read exactly, ``1e-30`` is the fraction ``1/10**30``.
_FRACTION = "a number in an expression is read exactly, as a fraction whose numerator and denominator are at most 2**53"


def _check_number(value, shown):
    if isinstance(value, sp.Float) or value.q == 1:
        if abs(value) > MAX_NUMBER:
            raise ValueError(f"number {shown} is out of range ({_MAGNITUDE})")
        return
    large = [f"{part} {n}" if n < 10 ** 20 else f"{part} of {len(str(n))} digits"
             for part, n in (("numerator", abs(value.p)), ("denominator", value.q)) if n > MAX_NUMBER]
    if large:
        raise ValueError(f"number {shown} is out of range ({_FRACTION}; its {' and '.join(large)} "
                         f"{'is' if len(large) == 1 else 'are'} above 2**53)")


class _Parser:
    def __init__(self, tokens, names, known_only):
        self.tokens, self.pos, self.names, self.known_only = tokens, 0, names, known_only
        self.depth = 0

    def peek(self):
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self):
        kind, text = self.tokens[self.pos]
        self.pos += 1
        return kind, text

    def deeper(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"expression nested deeper than {MAX_DEPTH} levels")

    def sum(self):
        terms = [self.product()]
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            term = self.product()
            terms.append(term if op == "+" else -term)
        return sp.Add(*terms)

    def product(self):
        factors = [self.unary()]
        while self.peek() in ("*", "/"):
            op = self.take()[1]
            factor = self.unary()
            if op == "/":
                if factor == 0:
                    raise ValueError("division by zero")
                factor = 1 / factor
            factors.append(factor)
        return sp.Mul(*factors)

    def unary(self):
        if self.peek() in ("-", "+"):
            op = self.take()[1]
            self.deeper()
            value = self.unary()
            self.depth -= 1
            return -value if op == "-" else value
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek() != "**":
            return base
        self.take()
        self.deeper()
        exponent = self.unary()
        self.depth -= 1
        if not exponent.is_Rational or abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"exponents must be numbers of magnitude at most {MAX_EXPONENT}; got {exponent}")
        if base == 0 and exponent < 0:
            raise ValueError("division by zero")
        if base.is_Rational:
            from ..symbolic.srepr_reader import power_bits      # here: a cold print_dynamics reads no cache text
            if power_bits(base, exponent) > _POWER_BITS:
                raise ValueError(f"a power of numbers too large to compute: ({base})**({exponent}) (SymPy "
                                 "raises the base to the exponent's numerator, or denominator, before it takes "
                                 "the root)")
        value = base ** exponent
        if value.is_Number:
            _check_number(value, f"{base}**{exponent}")
        return value

    def atom(self):
        if self.pos >= len(self.tokens):
            raise ValueError("the expression ends too early")
        kind, text = self.take()
        if kind == "num":
            return _number(text)
        if kind == "name":
            if text in self.names:
                return self.names[text]
            if self.known_only:
                raise ValueError(f"unknown symbol {text!r} (known: {', '.join(sorted(self.names))})")
            return placeholder(text)
        if text == "(":
            self.deeper()
            value = self.sum()
            self.depth -= 1
            if self.peek() != ")":
                raise ValueError("a parenthesis is not closed")
            self.take()
            return value
        raise ValueError(f"unexpected {text!r}")


def parse_expression(text: str, names: dict, *, known_only: bool = True) -> sp.Expr:
    """The SymPy expression of ``text`` (see the module docstring).

    Parameters
    ----------
    text : str
        The expression, at most :data:`MAX_TEXT` characters.
    names : dict
        ``{name: sympy.Symbol}``: the names the text may use.
    known_only : bool, optional
        False: any other identifier becomes :func:`placeholder` (resolved by the task).
        Default True.

    Returns
    -------
    sympy.Expr

    Raises
    ------
    ValueError
        Not an expression of this grammar, an unknown name, too long, too deep,
        a number or an exponent out of range.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text; got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ValueError(f"expression longer than {MAX_TEXT} characters ({len(text)})")
    tokens = _tokens(text)
    if not tokens:
        raise ValueError("empty expression")
    parser = _Parser(tokens, names, known_only)
    value = parser.sum()
    if parser.pos != len(tokens):
        raise ValueError(f"unexpected {tokens[parser.pos][1]!r} after a complete expression")
    return check_bounds(value)


def check_bounds(expr) -> sp.Expr:
    """``expr`` when it is within the bounds of this module (nodes, numbers, exponents), else ValueError.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
        ``expr`` itself.

    Raises
    ------
    ValueError
        If it has more than :data:`MAX_NODES` nodes, a number beyond :data:`MAX_NUMBER` in
        magnitude, an exponent that is not a number of magnitude at most :data:`MAX_EXPONENT`,
        or a :func:`degree` above :data:`MAX_DEGREE`.
    """
    nodes = 0
    for node in sp.preorder_traversal(expr):
        nodes += 1
        if nodes > MAX_NODES:
            raise ValueError(f"expression has more than {MAX_NODES} nodes")
        if isinstance(node, sp.Number) and node.is_finite:
            _check_number(node, str(node) if len(str(node)) < 40 else str(node)[:30] + "...")
        if isinstance(node, sp.Pow):
            e = node.exp
            if not e.is_Number or abs(e) > MAX_EXPONENT:
                raise ValueError(f"exponents must be numbers of magnitude at most {MAX_EXPONENT}; got {e}")
    if degree(expr) > MAX_DEGREE:
        raise ValueError(f"expression of degree {degree(expr)}, above {MAX_DEGREE} (exponents multiply through "
                         f"nested powers)")
    return expr


def degree(expr) -> sp.Rational:
    r"""The degree of ``expr`` as a polynomial in its symbols, taken through every operation:
    a symbol has degree 1, a number 0, a sum the largest of its terms', a product the sum of its
    factors', :math:`u^k` (and :math:`u^{-k}`) :math:`|k|` times :math:`u`'s, a function of
    :math:`u` (``exp``, ``log``, ...) :math:`u`'s.

    Parameters
    ----------
    expr : sympy.Basic
        An expression within :data:`MAX_NODES` nodes, exponents numbers.

    Returns
    -------
    sympy.Rational

    Examples
    --------
    >>> m, n = sp.symbols("m n", positive=True)
    >>> degree(((m + 1)**4 + n)**2 / m), degree(sp.Integer(3))
    (9, 0)
    """
    found: dict = {}
    for node in sp.postorder_traversal(expr):
        if node in found:
            continue
        if not node.args:
            found[node] = sp.Integer(1 if node.free_symbols else 0)
        elif node.is_Pow and node.exp.is_Number:
            found[node] = abs(node.exp) * found[node.base]
        else:
            values = [found[a] for a in node.args]
            found[node] = sp.Add(*values) if node.is_Mul else max(values)
    return found[expr]
