"""The crossover ratio of the expected-count flow (numerics/experiments/flow_crossover.py): on the
authors' task r* is a sign change of (self - relevant) of the flow itself, checked by running the
flow at r* (1 -+ 1 %); on query-copies from a small start it is the master curve's r*, which the
search does not use."""
from __future__ import annotations

import math

import pytest

from numerics.dynamics import boundary
from numerics.experiments import flow_crossover, theory
from numerics.experiments.task_sampling import AUTHORS


def _self_minus_relevant(P, ratio, target, init, seed=1234):
    [rec] = theory.flow_to_losses(AUTHORS, P, ratio, [target], init=init, seed=seed)["records"]
    assert rec["reached"]
    return rec["self_attention"] - rec["relevant_attention"]


def test_the_authors_crossover_is_a_sign_change_of_the_flow():
    """CACO from the authors' start at L = 0.5: relevant leads 1 % below r*, self 1 % above."""
    [rec] = flow_crossover.flow_boundary(["CACO"], [0.5])
    assert list(rec) == list(flow_crossover.RECORD_FIELDS) and rec["reason"] is None
    r = rec["crossover_ratio"]
    assert theory.RATIO_RANGE[0] < r < theory.RATIO_RANGE[1]
    below, above = (_self_minus_relevant("CACO", r * f, 0.5, "authors") for f in (0.99, 1.01))
    assert below < 0 < above
    # crossover_lambda: Lambda of the authors' task (M = 4 classes, b = 1) at r* and the loss
    assert rec["crossover_lambda"] == pytest.approx(r * 3 * math.log(3 / math.expm1(0.5)) ** 2 / 4, rel=1e-12)


def test_a_start_that_draws_nothing_gives_every_seed_one_search(monkeypatch):
    calls = []
    flow = theory.flow_to_losses
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: calls.append(k["seed"]) or flow(*a, **k))
    recs = flow_crossover.flow_boundary(["CACO"], [0.5, 0.2], seeds=2, init="identity")
    assert [(r["seed"], r["target_loss"]) for r in recs] == [(1234, 0.5), (1234, 0.2), (1235, 0.5), (1235, 0.2)]
    assert set(calls) == {1234} and len(calls) <= 2 + 2 * flow_crossover.MAX_STEPS
    assert recs[0]["crossover_ratio"] == recs[2]["crossover_ratio"]


def test_no_sign_change_in_the_range_is_a_reason():
    [rec] = flow_crossover.flow_boundary(["CACO"], [0.5], init="identity", ratio_range=(0.01, 1.0))
    assert rec["crossover_ratio"] is None and rec["crossover_lambda"] is None
    assert rec["reason"] == "not reached within the ratio range searched (ratio in [0.01, 1])"


def test_query_copies_from_a_small_start_is_the_master_curve():
    """The expected-count full-matrix flow from 1e-6 I (CACO) against the master curve's r* from
    zero (setting A of docs/attention.md): 1e-3 relative."""
    params = dict(s=2, R=5, m=5, n=10, M=4, b=2)
    [rec] = flow_crossover.flow_boundary(["CACO"], [0.2], init="identity", task="query-copies",
                                         task_params=params)
    [master] = boundary("query-copies", target_loss=0.2, **params)
    assert rec["crossover_ratio"] == pytest.approx(master["crossover_ratio"], rel=1e-3)
    assert rec["crossover_lambda"] == pytest.approx(master["crossover_lambda"], rel=1e-3)


def test_bad_input_is_a_value_error_before_any_flow(monkeypatch):
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    with pytest.raises(ValueError, match="ratio must be in"):
        flow_crossover.flow_boundary(["CACO"], [0.5], ratio_range=(1e-5, 1.0))
    with pytest.raises(ValueError, match="ratio_range must be"):
        flow_crossover.flow_boundary(["CACO"], [0.5], ratio_range=(2.0, 1.0))
    with pytest.raises(ValueError, match="below the initial loss"):
        flow_crossover.flow_boundary(["CACO"], [4.0], init="identity")   # above log 50


@pytest.mark.parametrize("seeds, match", [(1.0, r"^seeds must be an integer >= 1 \(the number of seeds\) or a list"),
                                          (None, r"^seeds must be a non-empty list of integers >= 0; got None"),
                                          ([[1]], r"^seeds must be integers >= 0")])
def test_seeds_that_are_neither_a_count_nor_a_list_are_named(seeds, match):
    """seeds=1.0 was "'float' object is not iterable"."""
    with pytest.raises(ValueError, match=match):
        flow_crossover.flow_boundary(["CACO"], [0.5], seeds=seeds)


def test_a_start_that_draws_gives_every_seed_its_own_search(monkeypatch):
    """CACO's authors init draws a new matrix per seed: each seed's flow is searched on its own. A stand-in
    flow whose self - relevant is log(r / r0(seed)) changes sign at r0(seed) exactly (1.5 for seed 1234, 6 for
    1235): each seed's record is its own r0 within the search's tolerance in log r."""
    r0 = {1234: 1.5, 1235: 6.0}
    calls = []

    def flow(st, P, r, targets, **k):
        calls.append(k["seed"])
        d = math.log(r / r0[k["seed"]])
        return {"records": [{"target_loss": t, "reached": True, "self_attention": 0.5 + d / 100,
                             "relevant_attention": 0.5} for t in targets]}
    monkeypatch.setattr(theory, "flow_to_losses", flow)
    recs = flow_crossover.flow_boundary(["CACO"], [0.5], seeds=2)
    assert set(calls) == {1234, 1235}
    for rec in recs:
        assert rec["reason"] is None
        assert math.log(rec["crossover_ratio"] / r0[rec["seed"]]) == pytest.approx(0.0, abs=2 * flow_crossover.XTOL)


def test_a_task_that_never_attends_to_its_query_says_so(monkeypatch):
    """The paper's task attends over the context only and has no copy of the query there: its self
    share is 0 at every ratio. It was searched to the end of the range and reported "not reached";
    the reason names the cause, and no flow is run."""
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow was run"))
    recs = flow_crossover.flow_boundary(["CACO", "FACO"], [0.5, 0.2], seeds=2, init="identity", task="paper",
                                        task_params={"M": 4, "b": 1})
    assert len(recs) == 8 and {(r["crossover_ratio"], r["crossover_lambda"]) for r in recs} == {(None, None)}
    assert {r["reason"] for r in recs} == {"none: task 'paper' never attends to the query's own token (it is not "
                                           "in the context and has no copies there), so the self share is 0 at "
                                           "every ratio"}


@pytest.mark.parametrize("bad", [("a", 2.0), (1.0, 2.0, 3.0), 5.0, (True, 2.0), (0.0, 1.0), (None, 1.0)])
def test_a_ratio_range_that_is_not_two_positive_numbers_is_named(bad, monkeypatch):
    """``float(v) for v in ratio_range`` raised Python's own messages ("could not convert string to float",
    "too many values to unpack", a TypeError for a number) and took True as 1: the message names
    ratio_range and what it must be, before any flow."""
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    with pytest.raises(ValueError, match=r"^ratio_range must be \(low, high\) with 0 < low < high < inf; got "):
        flow_crossover.flow_boundary(["CACO"], [0.5], init="identity", ratio_range=bad)
