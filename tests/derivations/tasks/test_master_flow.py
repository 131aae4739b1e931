"""The master flow of a task's CACO dynamics and the statements decided on it
(derivations/tasks/crossover.py), checked symbolically and against the engine's own flow."""
from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from derivations.tasks.crossover import (Lambda, early_growth_ratio, exchange_symmetry, master_flow,
                                         no_crossover_identity, window_signs)


@pytest.fixture(scope="module")
def qic():
    return master_flow("query-in-context")


def _sym(flow, name):
    return next(s for e in flow.rhs.values() for s in e.free_symbols if s.name == name)


def test_the_rescaled_flow_holds_only_lambda_and_the_task(qic):
    names = {str(s) for e in qic.rhs.values() for s in e.free_symbols}
    assert names == {"Lambda", "m", "n", "mu_QK", "mu_QK_q", "Y_q", "Y_r"}
    assert (qic.self_group, qic.relevant_group) == ("q", "r")


def test_the_paper_has_no_self_group():
    flow = master_flow("paper")
    assert flow.self_group is None and set(flow.x) == {"r"}
    with pytest.raises(ValueError, match="does not attend to itself"):
        window_signs(flow)


def test_the_margin_stops_at_one(qic):
    """U = sum_g a_g Y_g: at Y_g = 1 for every group the margin is the attended fraction."""
    m, n = _sym(qic, "m"), _sym(qic, "n")
    at = {**{x: 0 for x in qic.x.values()}, **{Y: 1 for Y in qic.Y.values()}}
    assert sp.simplify(qic.margin.subs(at) - (1 + m) / (1 + m + n)) == 0


def test_window_signs_query_in_context(qic):
    m = _sym(qic, "m")
    assert window_signs(qic) == (1 - m, 1 - m)        # s - m and s - m/R at s = R = 1


def test_no_crossover_identity_holds_for_one_relevant_type(qic):
    claim, (A, B, E) = no_crossover_identity(qic)
    assert Lambda in claim.free_symbols


@pytest.fixture(scope="module")
def edge_growth(qic):
    claim, (a, b, e) = no_crossover_identity(qic)
    Yr = next(s for s in claim.free_symbols if s.name == "Y_r")
    return sp.lambdify((a, b, e, Yr), claim.subs(Lambda, 1))


@settings(max_examples=30, deadline=None)
@given(A=st.floats(0, 1), frac=st.floats(0, 1), E=st.floats(0, 10), Y=st.floats(0, 10))
def test_the_identity_is_nonnegative_in_the_region(edge_growth, A, frac, E, Y):
    """A >= B, A + B <= 1, E >= 0, Y_r >= 0: the edge growth is >= 0 (the region is invariant)."""
    B = min(frac * A, 1 - A)
    assert edge_growth(A, B, E, Y) >= -1e-12


def test_exchange_symmetry_at_m_equal_one(qic):
    """query-in-context has s = 1: with m = 1 the self and relevant groups are exchangeable."""
    m = _sym(qic, "m")
    one = type(qic)(qic.task, qic.x, qic.Y, qic.shares, qic.margin,
                    {k: v.subs(m, 1) for k, v in qic.rhs.items()}, qic.self_group, qic.relevant_group)
    assert exchange_symmetry(one, {})
    assert not exchange_symmetry(qic, {})


def test_early_growth_ratio_has_no_lambda(qic):
    ratio = early_growth_ratio(qic)
    assert Lambda not in ratio.free_symbols and ratio.free_symbols <= {_sym(qic, "m"), _sym(qic, "n")}


def test_factorized_circuits_have_no_master_flow():
    from derivations.engine import reduce_task
    from derivations.tasks.crossover import _split
    with pytest.raises(ValueError, match="constant diagonal metric"):
        _split(reduce_task("paper", "FACO"))
