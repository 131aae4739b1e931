"""numerics.verify --task: a task's reduced system against its full matrix model."""
import json

import pytest

from numerics import verify
from numerics.task_verify import run_task_checks


QUANTITIES = {"theta", "observables", "loss", "alpha", "distance", "loss at T"}


def test_paper_collapsed_and_factorized_pass():
    checks = run_task_checks("paper", ("CACO", "FAFO"), ratios=(3.0,), M=3, target_loss=0.5)
    assert {c["parameterization"] for c in checks} == {"CACO", "FAFO"}
    assert {c["quantity"] for c in checks} == QUANTITIES
    bad = [c for c in checks if c["status"] != "PASS"]
    assert not bad, bad


def test_query_in_context_passes():
    # four observables (score and logit gaps of r_k and of the query itself)
    checks = run_task_checks("query-in-context", ("CACO",), ratios=(3.0,), M=3, target_loss=0.5)
    assert {c["quantity"] for c in checks} == QUANTITIES
    assert all(c["status"] == "PASS" for c in checks), checks
    obs = [c for c in checks if c["quantity"] == "observables"][0]
    assert set(obs["detail"]) == {"mu_QK", "mu_OV", "mu_QK_q", "mu_OV_q"}


@pytest.mark.slow
@pytest.mark.parametrize("task", ["paper", "shared-irrelevant", "query-in-context",
                                  "shared-irrelevant+query-in-context"])
def test_every_task_every_parameterization(task):
    params = {"n_c": 3} if task.startswith("shared") else {}
    checks = run_task_checks(task, ratios=(0.3, 3.0), M=3, target_loss=0.2, **params)
    assert {c["parameterization"] for c in checks} == {"CACO", "CAFO", "FACO", "FAFO"}
    bad = [c for c in checks if c["status"] != "PASS"]
    assert not bad, bad


def test_check_can_fail():
    # the same comparison with the reduced flow run at the wrong rate must fail
    from numerics import task_verify as tv
    fam = tv.task_family("paper", "CACO")
    orig = fam.system.solve

    def wrong(y0, values, **kw):
        return orig(y0, {**values, "eta_QK": values["eta_QK"] * 1.01}, **kw)
    object.__setattr__(fam.system, "solve", wrong)
    try:
        checks = run_task_checks("paper", ["CACO"], (3.0,), M=3, target_loss=0.5)
    finally:
        object.__delattr__(fam.system, "solve")
    assert any(c["status"] == "FAIL" for c in checks if c["quantity"] == "theta")


def test_cli_json(capsys):
    rc = verify.main(["--task", "paper", "--quick", "--parameterization", "CAFO", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["summary"]["ok"] and out["summary"]["n_fail"] == 0


@pytest.mark.parametrize("argv", [
    ["--task", "nope"], ["--task", "authors"], ["--task", "paper", "--params", "n_c=2"],
    ["--task", "paper", "--params", "M=1.5"], ["--task", "paper", "--ratios", "0"],
    ["--task", "paper", "--target-loss", "5"], ["--task=paper", "--bogus"]])
def test_cli_bad_input(argv, capsys):
    assert verify.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
