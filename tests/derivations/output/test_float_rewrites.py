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


@pytest.mark.parametrize("expr", [
    x / (x + y) - 1 + 1 / (x + 2),                        # two denominators in one sum: left as it is
    c * x / (x + y) - c + y / (x + 2) ** 2,
    sp.exp(x) / (sp.exp(x) + y) ** 2,                     # a share squared: not one share
    c * sp.exp(x) / ((sp.exp(x) + y) ** 2 * (sp.exp(x) + c)),
    sp.log(1 + c * sp.exp(x)) - sp.exp(x) / (sp.exp(x) + c) + 1,
])
def test_every_rewrite_keeps_the_value_of_other_forms(expr):
    """Forms beside the ones each rewrite is for keep their value (mpmath at 50 digits, at a point)."""
    point = {x: mpmath.mpf("0.7"), y: mpmath.mpf("1.3"), c: mpmath.mpf("2.9")}
    want = at_50_digits(expr, point)
    for got in (cancel_fractions(expr), as_shares(expr), as_logaddexp(expr), float_form(expr, "math", shares=True)):
        assert abs(at_50_digits(got, point) - want) <= mpmath.mpf("1e-45") * abs(want), got


def test_float_form_computes_in_floats_what_the_plain_form_loses():
    """In math's float64, against mpmath at 50 digits: 1 - a softmax share near 1 (e^x / (e^x + e^y) - 1 at
    x = 40, y = 0: -4.2e-18, which the plain difference rounds to 0), and log(1 + 3 e^-x) where e^-x overflows
    (x = -800: 800 + log 3)."""
    from numerics.functions.numeric_function import numeric     # (float_form applied, logaddexp defined)

    share_less_one = sp.exp(x) / (sp.exp(x) + sp.exp(y)) - 1
    want = at_50_digits(share_less_one, {x: 40, y: 0})
    assert abs(numeric(share_less_one, (x, y), "math").func(40.0, 0.0) - want) <= 1e-14 * abs(want)
    loss = sp.log(1 + 3 * sp.exp(-x))
    want = at_50_digits(loss, {x: -800})
    assert abs(numeric(loss, (x,), "math").func(-800.0) - want) <= 1e-14 * abs(want)


def test_float_form_for_mpmath_is_evaluated_by_mpmath():
    """mpmath has no logaddexp: the mpmath form keeps the logarithm and evaluates to the value."""
    from numerics.functions.numeric_function import numeric
    loss = sp.log(1 + 3 * sp.exp(-x))
    f = numeric(loss, (x,), "mpmath").func
    with mpmath.workdps(30):
        assert abs(f(mpmath.mpf(2)) - mpmath.log(1 + 3 * mpmath.exp(-2))) <= mpmath.mpf("1e-28")
