"""The master flow of a task's CACO dynamics and the statements decided on it
(derivations/tasks/crossover.py), derived from the engine's reduced flows of query-copies
(symbolic s and R), query-in-context and the paper's task."""
from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from derivations.task_catalog import task_reduction
from derivations.tasks.crossover import (Lambda, early_growth_ratio, exchange_symmetry, master_flow,
                                         no_crossover_identity, window_signs)


def flow_of(task):
    """The master flow of a built-in task, from its cached CACO reduction (the cache is checked
    fresh against the engine by tests/derivations/test_task_catalog.py)."""
    return master_flow(task, task_reduction(task, "CACO"))


@pytest.fixture(scope="module")
def qc():
    return flow_of("query-copies")


def test_a_reduction_of_another_task_or_parameterization_is_refused():
    with pytest.raises(ValueError, match="reduction must be the CACO reduction of 'query-copies'"):
        master_flow("query-copies", task_reduction("query-in-context", "CACO"))


@pytest.fixture(scope="module")
def qc1(qc):
    return qc.subs({qc.symbol("R"): 1})


def test_the_rescaled_flow_holds_only_lambda_and_the_task(qc):
    names = {str(s) for e in qc.rhs.values() for s in e.free_symbols}
    assert names == {"Lambda", "m", "n", "s", "R", "mu_QK", "mu_QK_q", "Y_q", "Y_r"}
    assert (qc.self_group, qc.relevant_group) == ("q", "r")


@pytest.mark.slow
def test_query_in_context_is_query_copies_at_one_copy_and_one_type(qc):
    qic = flow_of("query-in-context")
    one = qc.subs({qc.symbol("s"): 1, qc.symbol("R"): 1})
    rename = {qc.symbol("m"): qic.symbol("m"), qc.symbol("n"): qic.symbol("n")}
    for k in qic.rhs:
        key = next(j for j in one.rhs if j.name == k.name)
        assert sp.simplify(one.rhs[key].subs(rename) - qic.rhs[k]) == 0


def test_the_paper_has_no_self_group():
    flow = flow_of("paper")
    assert flow.self_group is None and set(flow.x) == {"r"}
    with pytest.raises(ValueError, match="does not attend to itself"):
        window_signs(flow)


def test_the_margin_stops_at_one(qc):
    s, m, n = qc.symbol("s"), qc.symbol("m"), qc.symbol("n")
    at = {**{x: 0 for x in qc.x.values()}, **{Y: 1 for Y in qc.Y.values()}}
    assert sp.simplify(qc.margin.subs(at) - (s + m) / (s + m + n)) == 0


def test_window_signs(qc):
    s, m, R = qc.symbol("s"), qc.symbol("m"), qc.symbol("R")
    small, large = window_signs(qc)
    assert sp.simplify(small - (s - m)) == 0 and sp.simplify(large - (s - m / R)) == 0


def test_exchange_symmetry_holds_for_one_relevant_type_only(qc, qc1):
    s, m = qc.symbol("s"), qc.symbol("m")
    assert exchange_symmetry(qc1, {s: m, m: s})
    assert not exchange_symmetry(qc, {s: m, m: s})


def test_no_crossover_identity_for_one_relevant_type_only(qc, qc1):
    claim, _ = no_crossover_identity(qc1)
    assert Lambda in claim.free_symbols
    with pytest.raises(ValueError, match="metrics differ"):
        no_crossover_identity(qc)


@pytest.fixture(scope="module")
def edge_growth(qc1):
    claim, (a, b, e) = no_crossover_identity(qc1)
    Yr = next(s for s in claim.free_symbols if s.name == "Y_r")
    return sp.lambdify((a, b, e, Yr), claim.subs(Lambda, 1))


@settings(max_examples=30)
@given(A=st.floats(0, 1), frac=st.floats(0, 1), E=st.floats(0, 10), Y=st.floats(0, 10))
def test_the_identity_is_nonnegative_in_the_region(edge_growth, A, frac, E, Y):
    """A >= B, A + B <= 1, E >= 0, Y_r >= 0: the edge growth is >= 0 (the region is invariant)."""
    B = min(frac * A, 1 - A)
    assert edge_growth(A, B, E, Y) >= -1e-12


def test_early_growth_ratio_has_no_lambda(qc):
    ratio = early_growth_ratio(qc)
    assert Lambda not in ratio.free_symbols
    assert {str(s) for s in ratio.free_symbols} == {"s", "m", "n", "R"}


@pytest.mark.slow
def test_factorized_circuits_have_no_master_flow():
    from derivations.tasks.crossover import _split
    with pytest.raises(ValueError, match="constant diagonal metric"):
        _split(task_reduction("paper", "FACO"))
