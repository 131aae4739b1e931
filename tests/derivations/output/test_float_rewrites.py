"""The float rewrites of derivations.output.float_rewrites: each leaves the value unchanged (checked
at 50 digits on the engine's own expressions) and does what it says on the forms it is for."""
import mpmath
import pytest
import sympy as sp

from derivations.output.float_rewrites import as_logaddexp, as_shares, cancel_fractions, float_form
from derivations.task_catalog import task_reduction

x, y = sp.symbols("x y", real=True)
c = sp.Symbol("c", positive=True)


def at_50_digits(expr, point):
    """The value of ``expr`` at ``point`` ({symbol: number}) with 50 digits (logaddexp written out)."""
    from sympy.codegen.numpy_nodes import logaddexp
    expr = expr.replace(logaddexp, lambda a, b: sp.log(sp.exp(a) + sp.exp(b)))
    args = sorted(point, key=str)
    with mpmath.workdps(50):
        return sp.lambdify(args, expr, "mpmath")(*(mpmath.mpf(point[a]) for a in args))


@pytest.mark.parametrize("task", ["paper", "query-copies"])
def test_rewrites_keep_the_engine_forms_value(task):
    """As the lambdified flow applies them: float_form with shares to the loss and the attention,
    cancel_fractions to the right-hand side."""
    red = task_reduction(task, "CACO")
    shares = (red.loss, red.alpha, *red.attention.values())
    rhs = tuple(red.odes.values())
    point = {s: mpmath.mpf(3 * (i + 1)) / 7 for i, s in enumerate(sorted(set().union(
        *(e.free_symbols for e in shares + rhs)), key=str))}
    pairs = [(float_form(e, "math", shares=True), e) for e in shares] + [(cancel_fractions(e), e) for e in rhs]
    for got, want in pairs:
        got, want = at_50_digits(got, point), at_50_digits(want, point)
        assert abs(got - want) <= mpmath.mpf("1e-45") * abs(want)


def test_log_of_one_plus_an_exponential_is_logaddexp():
    assert str(as_logaddexp(sp.log(1 + (c + 1) * sp.exp(-x - y)))) == "logaddexp(0, -x - y + log(c + 1))"
    assert as_logaddexp(sp.log(2 + sp.exp(x))) == sp.log(2 + sp.exp(x))       # not 1 + ...: left alone
    assert as_logaddexp(sp.log(1 + x * sp.exp(y))) == sp.log(1 + x * sp.exp(y))  # x of either sign


def test_cancel_fractions_cancels_only_what_cancels():
    share = c * sp.exp(x) / (c * sp.exp(x) + 1)
    assert cancel_fractions(share - 1).doit() == -1 / (c * sp.exp(x) + 1)
    assert cancel_fractions(x / (x + y) + 2) == x / (x + y) + 2
    assert cancel_fractions(sp.exp(-x) - 1) == sp.exp(-x) - 1


def test_as_shares_divides_through_by_the_term():
    assert as_shares(c * sp.exp(x) / (c * sp.exp(x) + y)) == 1 / (1 + y * sp.exp(-x) / c)
    assert as_shares(sp.exp(x) / (sp.exp(x) + sp.exp(y))) == 1 / (1 + sp.exp(y - x))
    assert as_shares(x / (y + 1)) == x / (y + 1)
    assert as_shares(y / (sp.exp(x) + y)) == y / (sp.exp(x) + y)       # no exponential above: left alone
