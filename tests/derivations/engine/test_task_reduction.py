"""The task engine: family by symmetry, reduced ODEs, paper identity, mappings, exactness on instances."""
import random

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from derivations.tasks.paper import reduction
from derivations.symbolic import M, b, eta_QK, eta_OV, m, mu_OV, mu_QK, n
from derivations.tasks import get_task
from derivations.engine import n_c
from derivations.symbolic import exp_to_symbols, is_zero_exactly
from derivations.core import PARAMETERIZATIONS
from derivations.engine import basis_matrices, invariance_residual, reduce_task
from derivations.task_catalog import task_reduction
from _orbits import assert_orbits_are_patterns

def _srepr(expr):
    """srepr with each symbol's assumptions in sorted order."""
    import re
    return re.sub(r"Symbol\('([^']*)'((?:, \w+=\w+)*)\)",
                  lambda mt: "Symbol('%s'%s)" % (mt.group(1), "".join(
                      ", " + a for a in sorted(filter(None, mt.group(2).split(", "))))), sp.srepr(expr))


SYMBOLIC = ["paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context"]


@pytest.mark.parametrize("param", [p if p in ("CACO", "FAFO") else pytest.param(p, marks=pytest.mark.slow)
                                   for p in PARAMETERIZATIONS])       # both circuits collapsed / factorized
def test_paper_task_gives_the_catalog_expressions(param):
    """Engine on the paper task == reduction.reduced_odes: the same expression trees (structural
    equality; srepr equal up to the order in which a symbol's assumptions were first given, which
    depends on SymPy's symbol cache, not on the derivation), and the alpha forms equal."""
    red = reduce_task("paper", param)
    ref = reduction.reduced_odes(param)
    ref_alpha = reduction.reduced_odes(param, in_alpha=True)
    assert red.odes[mu_OV] == ref[0] and red.odes[mu_QK] == ref[1]
    assert _srepr(red.odes[mu_OV]) == _srepr(ref[0]) and _srepr(red.odes[mu_QK]) == _srepr(ref[1])
    assert sp.simplify(red.odes_alpha[mu_OV] - ref_alpha[0]) == 0
    assert sp.simplify(red.odes_alpha[mu_QK] - ref_alpha[1]) == 0
    assert red.mapping is None


# The tests of what a built-in task's reduction says (its mapping onto the paper, its observables) read it
# from the task cache, derivations.task_catalog.task_reduction: the engine's reduction as the engine's
# present sources give it (the cache's key is those sources: a change of the engine derives it again,
# and tests/derivations/test_task_catalog.py checks the shipped cache fresh and equal to reduce_task).
# The tests of the derivation itself (the paper's identity, invariance on instances, user-built and
# rescaled tasks, the refusals) call reduce_task.

def test_shared_irrelevant_maps_to_paper():
    red = task_reduction("shared-irrelevant", "CACO")
    assert red.mapping == {eta_QK: eta_QK * (n_c + 1) / n_c}
    paper = task_reduction("paper", "CACO")
    for k in (mu_OV, mu_QK):
        assert sp.simplify(paper.odes[k].subs(red.mapping) - red.odes[k]) == 0
    # the first integral is the paper's with the mapped rate, and is conserved
    assert sp.simplify(paper.first_integral.subs(red.mapping) - red.first_integral) == 0
    # CAFO keeps the mapping (its OV family is the paper's); FACO does not reduce
    assert task_reduction("shared-irrelevant", "CAFO").mapping == red.mapping
    faco = task_reduction("shared-irrelevant", "FACO")
    assert faco.odes is None and "W_K[u_s,h_k]" in faco.note


def test_query_in_context_has_four_observables_and_no_first_integral():
    red = task_reduction("query-in-context", "CACO")
    assert len(red.odes) == 4 and red.first_integral is None and red.mapping is None
    assert "no first integral" in red.note
    # metric diagonal: separate orbits for the query's and the relevant token's entries
    G = red.metric
    assert all(G[i, j] == 0 for i in range(4) for j in range(4) if i != j)
    both = task_reduction("shared-irrelevant+query-in-context", "CACO")
    assert both.metric[0, 1] != 0   # the shared score couples the two score gaps


def test_gradient_flow_in_observables():
    """d obs/dt = -G grad L, checked against the family flow by the chain rule at a random point."""
    red = task_reduction("shared-irrelevant+query-in-context", "CACO")
    rng = random.Random(1)
    point = {c.symbol: sp.Rational(rng.randint(-9, 9), 7) for c in red.coordinates}
    point.update({m: 5, n: 50, b: 50, M: 7, n_c: 3, eta_QK: 2, eta_OV: 1})
    for k, form in red.observables.items():
        chain = sum(sp.diff(form, c.symbol) * red.family_odes[c.symbol] for c in red.coordinates)
        direct = red.odes[k].subs({o: f for o, f in red.observables.items()})
        assert abs(sp.N((chain - direct).subs(point), 30)) < 1e-25


def test_orbits_by_generators_equal_equality_patterns():
    task = get_task("shared-irrelevant+query-in-context")
    assert_orbits_are_patterns(task, "u", n_c)


def test_basis_matrices_follow_instance_layout():
    red = reduce_task("shared-irrelevant", "CACO")
    B = basis_matrices(red, 3, {"u": 2})
    inst = get_task("shared-irrelevant").instance(M=3, values={"n_c": 2})
    mat, U = B["W_QK[q_k,u_s]"]
    assert mat == "W_QK" and len(U) == inst.d and sum(map(sum, U)) == 3 * 2
    q0, u1 = inst.token_names.index("q_0"), inst.token_names.index("u_1")
    assert U[q0][u1] == 1


@pytest.mark.parametrize("task,param", [("shared-irrelevant", "CACO")])
def test_invariance_on_explicit_instance_fast(task, param):
    """M = 2: full symbolic-matrix flow on the family == family flow (30-digit random points)."""
    assert invariance_residual(task, param, 2, {"u": 2} if "shared" in task else None, exact=False) == []


def test_invariance_exact_paper_M2():
    assert invariance_residual("paper", "CACO", 2) == []


def test_invariance_check_can_fail():
    red = reduce_task("paper", "CACO")
    c = red.coordinates[0].symbol
    original = red.family_odes[c]
    red.family_odes[c] = original * 2
    try:
        assert invariance_residual("paper", "CACO", 2, exact=False) != []
    finally:
        red.family_odes[c] = original


def test_invariance_check_can_fail_exact():
    """exact=True: the cheap zero proof does not vouch for a wrong flow; the residual is reported."""
    red = reduce_task("paper", "CACO")
    c = red.coordinates[0].symbol
    original = red.family_odes[c]
    red.family_odes[c] = original * 2
    try:
        res = invariance_residual("paper", "CACO", 2)
        assert res != [] and all(not is_zero_exactly(d) for _, d in res)
    finally:
        red.family_odes[c] = original


def test_invariance_exact_m3_needs_no_simplify(monkeypatch):
    """The M = 3 residuals are proved zero by the exp-as-symbols test alone (simplify never runs)."""
    import derivations.engine.explicit as tr
    reduce_task("shared-irrelevant", "CACO")   # the derivation itself may simplify

    def no_simplify(*args, **kwargs):
        raise AssertionError("sympy.simplify called: the fast zero proof did not decide a residual")
    monkeypatch.setattr(tr.sp, "simplify", no_simplify)
    assert invariance_residual("shared-irrelevant", "CACO", 3, {"u": 2}) == []


def test_invariance_exact_falls_back_to_simplify(monkeypatch):
    """A residual the fast test cannot prove zero is still decided exactly, by simplify."""
    import derivations.engine.explicit as tr
    monkeypatch.setattr(tr, "is_zero_exactly", lambda expr: False)
    assert invariance_residual("paper", "CACO", 2) == []


# ---------------------------------------------------------------- the exact zero test on its own

_x, _y, _z = sp.symbols("x y z", real=True)


@pytest.mark.parametrize("expr", [
    sp.exp(_x + _y) - sp.exp(_x) * sp.exp(_y),
    sp.exp(2 * _x) - sp.exp(_x) ** 2,
    sp.exp(3 * _x / 2) - sp.exp(_x / 2) ** 3,
    1 / (1 + sp.exp(-_x)) - sp.exp(_x) / (sp.exp(_x) + 1),
    sp.exp(_x) / (sp.exp(_x) + sp.exp(_y)) - 1 / (1 + sp.exp(_y - _x)),     # softmax, shifted
    sp.exp(_x * _y + _z) / sp.exp(_z) - sp.exp(_y * _x),
    sp.exp(_y / (1 + sp.exp(_x)) + _z) - sp.exp(_y / (1 + sp.exp(-_x) * sp.exp(2 * _x))) * sp.exp(_z),   # nested
    (sp.exp(_x) - 1) / (sp.exp(_x / 2) - 1) - sp.exp(_x / 2) - 1,
    sp.exp(_x * (_y + 1) - _x * _y - _x) - 1,     # an argument that expands to 0
])
def test_fast_zero_test_proves_identities(expr):
    assert is_zero_exactly(expr)
    rng = random.Random(3)
    for _ in range(3):   # and each identity holds numerically (30 digits, |value| < 1e-25)
        point = {s: sp.Rational(rng.randint(-30, 30), 11) for s in expr.free_symbols}
        assert abs(sp.N(expr.subs(point), 30)) < 1e-25


@pytest.mark.parametrize("expr", [
    sp.exp(_x) - 1 - _x,
    sp.exp(_x * _y) - sp.exp(_x) * sp.exp(_y),
    sp.exp(_x + _y) - sp.exp(_x) - sp.exp(_y),
    sp.exp(2 * _x) - 2 * sp.exp(_x),
    sp.exp(_x) / (sp.exp(_x) + 1) - 1 / (1 + sp.exp(_x)),
    sp.exp(sp.exp(_x)) - sp.exp(_x) ** 2,
])
def test_fast_zero_test_does_not_claim_non_identities(expr):
    assert not is_zero_exactly(expr)


def test_fast_zero_test_never_trusts_floating_point():
    expr = sp.Add(sp.Float(2) * sp.exp(_x), -2 * sp.exp(_x), evaluate=False)
    assert expr.has(sp.Float) and not is_zero_exactly(expr)


def test_fast_zero_test_is_not_complete_but_falls_back_soundly():
    """An identity hidden in a relation between exponents is not proved (False = not proved)."""
    for expr in (sp.exp(_x / (_x + 1)) * sp.exp(1 / (_x + 1)) - sp.E,
                 sp.exp(_y * sp.exp(_x) / (1 + sp.exp(_x))) - sp.exp(_y) * sp.exp(-_y / (1 + sp.exp(_x)))):
        assert not is_zero_exactly(expr)
        assert sp.simplify(expr) == 0


def test_exp_to_symbols_meaning_restores_the_expression():
    expr = sp.exp(_x) + sp.exp(3 * _x / 2) / (1 + sp.exp(_y - 2 * _x)) + sp.exp(_z * sp.exp(_x))
    rational, meaning = exp_to_symbols(expr)
    assert not rational.has(sp.exp)
    assert all(e.is_integer for p in rational.atoms(sp.Pow) for e in [p.exp])
    assert sp.simplify(sp.powsimp(sp.expand(rational.xreplace(meaning) - expr, power_exp=True))) == 0


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(1, 3)), min_size=1, max_size=4),
       st.integers(-2, 2))
@settings(max_examples=40)
def test_fast_zero_test_on_random_sums_of_exponentials(terms, shift):
    """sum_i exp(a_i x + b_i y) / d_i against its product form: zero; plus a perturbation: not claimed."""
    lhs = sum(sp.exp((a * _x + c * _y) / d) for a, c, d in terms)
    rhs = sum(sp.exp(a * _x / d) * sp.exp(c * _y / d) for a, c, d in terms)
    assert is_zero_exactly(lhs - rhs)
    assert not is_zero_exactly(lhs - rhs + shift * sp.exp(_x * _y)) or shift == 0


def test_fast_zero_test_rejects_bad_input():
    with pytest.raises(ValueError, match="expr must be a SymPy expression"):
        is_zero_exactly("exp(x) - exp(x)")
    with pytest.raises(ValueError, match="expr must be a SymPy expression"):
        exp_to_symbols(1.5)
    with pytest.raises(ValueError, match="expr must be a SymPy expression"):
        is_zero_exactly(sp.Eq(_x, _x + 1))


@pytest.mark.slow
@pytest.mark.parametrize("task,param,M_value", [(t, p, Mv) for t in SYMBOLIC for p in PARAMETERIZATIONS
                                                for Mv in (2, 3)])
def test_invariance_exact_all(task, param, M_value):
    assert invariance_residual(task, param, M_value, {"u": 2} if "shared" in task else None) == []


def test_bad_tasks():
    with pytest.raises(ValueError, match="symbolic engine"):
        reduce_task("authors", "CACO")
    with pytest.raises(ValueError, match="unknown task"):
        reduce_task("nope", "CACO")
    with pytest.raises(ValueError, match="parameterization must be one of"):
        reduce_task("paper", "XX")


@pytest.mark.parametrize("param", ["CACO", "FAFO"])
@pytest.mark.parametrize("shared_embedded", [False, True])
def test_a_task_whose_context_never_tells_the_classes_apart_is_refused(param, shared_embedded):
    """No attended token is embedded and of one class (the relevant tokens are zero vectors, the query is not
    attended, the shared token is the same for every class): on the invariant family the loss is constant, so
    there is no observable and nothing to reduce; said in one ValueError (it was an AttributeError in the
    factorized flows, and for CACO with an embedded shared token)."""
    from derivations.engine import Task, TokenGroup
    task = Task("blind", "", (TokenGroup("q", True), TokenGroup("r", True, m, embedded=False),
                              TokenGroup("z", False, n, embedded=shared_embedded)), query="q")
    with pytest.raises(ValueError, match=rf"^task 'blind' \({param}\): nothing to reduce: .*\(no attended token "
                                         "is both embedded and of one class"):
        reduce_task(task, param)


def test_user_built_task_renamed_paper_reproduces_paper():
    """A user-built Task with other names and the paper's structure gives the paper's ODEs."""
    from derivations.engine import Task, TokenGroup
    user = Task("mine", "paper, renamed", (TokenGroup("query", True, 0), TokenGroup("signal", True, m),
                                          TokenGroup("noise", False, n, embedded=False)),
                query="query", relevant=("signal",))
    red, paper = reduce_task(user, "CACO"), reduce_task("paper", "CACO")
    assert red.odes == paper.odes and red.first_integral == paper.first_integral
    assert invariance_residual(user, "CACO", 2, exact=False) == []


def test_user_built_unsupported_constructions_are_rejected():
    from derivations.engine import Task, TokenGroup
    other = Task("t", "", (TokenGroup("q", True), TokenGroup("r", True, m, other_multiplicity=1)), query="q")
    with pytest.raises(ValueError, match="other_multiplicity"):
        reduce_task(other, "CACO")
    fixed = Task("t", "", (TokenGroup("q", True), TokenGroup("r", True, m)), query="q", classes=4)
    with pytest.raises(ValueError, match="needs M symbolic"):
        reduce_task(fixed, "CACO")


@pytest.mark.parametrize("param", ["CACO", "FACO"])
def test_paper_orbit_equals_catalog_orbit(param):
    """Engine orbit (explicit CACO / implicit FACO) == derivations.tasks.paper.first_integral.orbit at random points."""
    from derivations.tasks.paper.first_integral import orbit
    from derivations.symbolic import eta_K, eta_Q, mu_OV_0, mu_QK_0
    mine, ref = reduce_task("paper", param).orbit, orbit(param)
    rng = random.Random(3)
    for _ in range(3):
        point = {m: 5, n: 50, b: 50, M: 20, eta_QK: rng.uniform(0.5, 3), eta_OV: 1, eta_Q: rng.uniform(0.5, 2),
                 eta_K: rng.uniform(0.5, 2), mu_OV: rng.uniform(0.1, 3), mu_OV_0: rng.uniform(0, 0.1),
                 mu_QK_0: rng.uniform(0.01, 0.1)}
        if isinstance(ref, sp.Equality):
            a, c = (mine.lhs - mine.rhs), (ref.lhs - ref.rhs)
            point[mu_QK] = rng.uniform(0.1, 2)
            assert abs(sp.N((a - c).subs(point), 20)) < 1e-12
        else:
            assert abs(sp.N((mine - ref).subs(point), 20)) < 1e-12


@pytest.mark.parametrize("bad", [0, 1, -1, 2.5, "2", None, True])
def test_an_explicit_instance_needs_two_classes_or_more(bad):
    """Never a vacuous ``[]`` (M = 1: nothing to check), an empty basis or a ZeroDivisionError:
    M_value and its range are named."""
    from derivations.engine import basis_matrices, explicit_loss, invariance_residual, reduce_task
    from derivations.tasks import get_task
    with pytest.raises(ValueError, match=r"^M_value: M must be an integer in \[2, "):
        invariance_residual("paper", "CACO", bad)
    with pytest.raises(ValueError, match=r"^M_value: M must be an integer in \[2, "):
        basis_matrices(reduce_task("paper"), bad)
    with pytest.raises(ValueError, match=r"^M_value: M must be an integer in \[2, "):
        explicit_loss(get_task("paper"), bad, {}, {})


def test_factorized_flow_in_observables_at_another_embedding_scale():
    """A factorized circuit's effective rate is in the task's embedding scale (2 b here), not the paper's b:
    the closed FAFO system's d obs/dt equals the family flow's by the chain rule at the (balanced) start."""
    from dataclasses import replace
    from derivations.symbolic.symbols import SYMBOLS
    red = reduce_task(replace(get_task("paper"), name="paper-scaled", embedding_scale=2 * b), "FAFO")
    assert red.odes is not None
    point = {m: 5, n: 50, b: 50, M: 7, SYMBOLS["eta_Q"]: 3, SYMBOLS["eta_K"]: 3, SYMBOLS["eta_O"]: 2,
             SYMBOLS["eta_V"]: 2, sp.Symbol("epsilon", positive=True): sp.Rational(1, 3)}
    point.update({c: v.subs(point) for c, v in red.initial.items()})
    for k, form in red.observables.items():
        chain = sum(sp.diff(form, c.symbol) * red.family_odes[c.symbol] for c in red.coordinates)
        direct = red.odes[k].subs({o: f for o, f in red.observables.items()})
        assert float(direct.subs(point)) == pytest.approx(float(chain.subs(point)), rel=1e-12, abs=0)
