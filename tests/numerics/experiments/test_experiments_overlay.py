"""numerics.experiments.overlay: the theory beside each run (per seed, at the run's measured loss)
and the agreement report (issue 17 items 2, 6, 7)."""
import math

import pytest

from numerics.experiments import overlay, predict
from derivations.core import SHARES

SETTINGS = {"init": "authors", "seq_len": 64, "lr_ov": 0.01}


def _row(P, ratio, seed, target, loss, shares=(0.4, 0.3, 0.3)):
    return {"parameterization": P, "ratio": ratio, "seed": seed, "target_loss": target, "loss": loss,
            **dict(zip(SHARES, shares))}


def test_each_run_is_read_at_its_seed_and_its_measured_loss():
    rows = [_row("CACO", 2.0, 1234, 1.0, 1.07), _row("CACO", 2.0, 1235, 1.0, 0.93),
            _row("CACO", 2.0, 1234, 2.0, 2.02), _row("CACO", 2.0, 1235, 2.0, None)]
    recs = overlay.theory_beside_runs(rows, SETTINGS)
    assert [(t["seed"], t["target_loss"], t["measured_loss"]) for t in recs] == \
        [(1234, 1.0, 1.07), (1235, 1.0, 0.93), (1234, 2.0, 2.02), (1235, 2.0, None)]
    for t in recs:       # the same numbers as predict's own flow of that seed, read at that loss
        want = predict.predict(["CACO"], [2.0], [t["target_loss"]], [t["seed"]])[0]
        assert all(t[k] == pytest.approx(want[k], rel=1e-6) for k in ("steps", *SHARES))
        if t["measured_loss"] is None:
            assert t["at_measured_loss"] is None
            continue
        got = t["at_measured_loss"]
        at = predict.predict(["CACO"], [2.0], [t["measured_loss"]], [t["seed"]])[0]
        assert got["loss"] == pytest.approx(t["measured_loss"], rel=1e-6)
        assert all(got[k] == pytest.approx(at[k], rel=1e-6) for k in ("steps", *SHARES))
    # a lower measured loss is read later on the flow than the target
    assert recs[1]["at_measured_loss"]["steps"] > recs[1]["steps"] > recs[0]["at_measured_loss"]["steps"]
    assert overlay.plotted_theory(recs)[1]["relevant_attention"] == recs[1]["at_measured_loss"]["relevant_attention"]


def test_a_ratio_the_theory_cannot_answer_is_warned_and_left_out():
    said = []
    rows = [_row("FACO", 1e4, 1234, 1.0, 1.0), _row("FACO", 2.0, 1234, 1.0, 1.0)]
    recs = overlay.theory_beside_runs(rows, SETTINGS, warn=said.append)
    assert [t["ratio"] for t in recs] == [2.0] and len(said) == 1 and "FACO ratio 10000" in said[0]


def test_the_flows_on_worker_processes_give_the_same_records():
    """The sweep runs the flows of each (parameterization, ratio) as jobs on its workers; the
    records are bitwise those computed here (JSON keeps every float), warnings included."""
    from numerics.experiments.runner import run_jobs

    rows = [_row("CACO", 2.0, 1234, 1.0, 1.07), _row("CACO", 2.0, 1235, 1.0, 0.93),
            _row("FACO", 1e4, 1234, 1.0, 1.0), _row("CACO", 5.0, 1234, 1.0, None)]
    jobs = overlay.theory_jobs(rows, SETTINGS)
    assert [(j["parameterization"], j["ratio"]) for j in jobs] == [("CACO", 2.0), ("FACO", 1e4), ("CACO", 5.0)]
    here, there = [], []
    want = overlay.theory_beside_runs(rows, SETTINGS, warn=here.append)
    got = overlay.theory_beside_runs(rows, SETTINGS, warn=there.append, run=lambda f, js: run_jobs(
        f, js, workers=2, progress=False))
    assert got == want and there == here and len(here) == 1 and len(got) == 3


def _theory(P, ratio, seed, target, shares, reached=True):
    return {"parameterization": P, "ratio": ratio, "seed": seed, "target_loss": target,
            "at_measured_loss": {"reached": reached, **dict(zip(SHARES, shares))}}


def test_agreement_difference_within_the_seed_spread():
    rows = [_row("CACO", 1.0, 1234, 0.1, 0.1, (0.40, 0.30, 0.30)), _row("CACO", 1.0, 1235, 0.1, 0.1, (0.50, 0.20, 0.30)),
            _row("CACO", 5.0, 1234, 0.1, 0.1, (0.40, 0.30, 0.30)), _row("CACO", 5.0, 1235, 0.1, 0.1, (0.42, 0.28, 0.30))]
    theory = [_theory("CACO", 1.0, 1234, 0.1, (0.44, 0.26, 0.30)), _theory("CACO", 1.0, 1235, 0.1, (0.48, 0.22, 0.30)),
              _theory("CACO", 5.0, 1234, 0.1, (0.80, 0.10, 0.10)), _theory("CACO", 5.0, 1235, 0.1, (0.82, 0.08, 0.10))]
    [rep] = overlay.agreement(rows, theory)
    assert rep["agree"] == [1.0] and rep["disagree"] == [5.0] and rep["undetermined"] == []
    r1 = rep["ratios"][0]["relevant_attention"]
    # by hand: SGD mean 0.45, theory 0.46, spreads sd(0.4, 0.5) = 0.0707 and sd(0.44, 0.48) = 0.0283; in
    # doubles two-digit decimals are an ulp off, which the difference 0.45 - 0.46 magnifies 46 times: 1e-14
    def near(x):
        return pytest.approx(x, rel=1e-14, abs=0)
    assert r1["sgd"] == near(0.45) and r1["theory"] == near(0.46)
    assert r1["difference"] == near(-0.01) and r1["spread"] == near(0.1 / math.sqrt(2))
    assert rep["largest_difference"]["ratio"] == 5.0 and rep["largest_difference"]["difference"] == near(-0.4)
    text = overlay.format_agreement([rep])
    assert "agree at ratios 1; differ at 5" in text and "SGD 0.410, theory 0.810" in text


def test_one_seed_or_an_unreached_flow_is_undetermined():
    rows = [_row("FAFO", 1.0, 1234, 0.1, 0.1), _row("FAFO", 2.0, 1234, 0.1, 0.1), _row("FAFO", 2.0, 1235, 0.1, 0.1)]
    theory = [_theory("FAFO", 1.0, 1234, 0.1, (0.4, 0.3, 0.3)), _theory("FAFO", 2.0, 1234, 0.1, (0.4, 0.3, 0.3)),
              _theory("FAFO", 2.0, 1235, 0.1, (0.4, 0.3, 0.3), reached=False)]
    [rep] = overlay.agreement(rows, theory)
    assert rep["undetermined"] == [1.0, 2.0] and rep["ratios"][1]["n"] == 1


def test_a_ratio_agrees_only_where_every_share_agrees():
    """The rule is per share, and a ratio agrees only if all three do. By hand: SGD (0.40, 0.10, 0.50)
    and (0.50, 0.30, 0.20), theory (0.45, 0.05, 0.50) twice: relevant difference 0 (spread
    sd(0.4, 0.5) = 0.0707) agrees, self 0.20 - 0.05 = 0.15 > sd(0.1, 0.3) = 0.1414 disagrees,
    other 0.35 - 0.50 = -0.15 within sd(0.5, 0.2) = 0.2121 agrees: the ratio disagrees."""
    rows = [_row("CACO", 1.0, 1234, 0.1, 0.1, (0.40, 0.10, 0.50)), _row("CACO", 1.0, 1235, 0.1, 0.1, (0.50, 0.30, 0.20))]
    theory = [_theory("CACO", 1.0, s, 0.1, (0.45, 0.05, 0.50)) for s in (1234, 1235)]
    [rep] = overlay.agreement(rows, theory)
    entry = rep["ratios"][0]
    assert [entry[s]["agree"] for s in SHARES] == [True, False, True]
    assert entry["self_attention"]["difference"] == pytest.approx(0.15, abs=1e-15)
    assert entry["self_attention"]["spread"] == pytest.approx(0.2 / math.sqrt(2), abs=1e-15)
    assert entry["agree"] is False and rep["disagree"] == [1.0] and rep["agree"] == []


def test_each_target_is_compared_with_the_theory_at_that_target():
    """Two targets of one (parameterization, ratio): each target's runs meet only the flow records
    read for that target (the theory at 0.5 is not the theory at 0.1)."""
    rows = [_row("CACO", 1.0, s, t, t, (0.4, 0.3, 0.3)) for t in (0.5, 0.1) for s in (1234, 1235)]
    theory = [_theory("CACO", 1.0, s, 0.5, (0.2, 0.3, 0.5)) for s in (1234, 1235)] + \
             [_theory("CACO", 1.0, s, 0.1, (0.6, 0.3, 0.1)) for s in (1234, 1235)]
    by_target = {rep["target_loss"]: rep["ratios"][0] for rep in overlay.agreement(rows, theory)}
    assert by_target[0.5]["relevant_attention"]["theory"] == pytest.approx(0.2, abs=1e-15)
    assert by_target[0.1]["relevant_attention"]["theory"] == pytest.approx(0.6, abs=1e-15)
    assert by_target[0.5]["n"] == by_target[0.1]["n"] == 2
