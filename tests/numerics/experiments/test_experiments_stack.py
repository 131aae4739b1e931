"""Runs of their own rates in one stack (numerics.experiments.stack): bitwise the runs trained alone."""
from dataclasses import replace

import numpy as np
import pytest

from numerics.experiments import jobs, sgd, stack, sweep
from numerics.experiments.task_sampling import AUTHORS

V = AUTHORS.T

# a target the fast runs reach early, the slow ones later or not at all (max_steps), and one that diverges
BASE = dict(epochs=12, steps_per_epoch=10, stop="none", target_loss=3.6, max_steps=115)
# (the second diverges at once: it leaves the middle of the stack after the first epoch)
RATES = [dict(lr_qk=0.01, lr_ov=0.01), dict(lr_qk=1e200, lr_ov=1e200), dict(lr_qk=2.0, lr_ov=1.0),
         dict(lr_qk=0.5, lr_ov=2.0, qk_ramp=4.0), dict(lr_qk=8.0, lr_ov=4.0), dict(lr_qk=1e3, lr_ov=1e3)]
SEEDS = [1234, 1235, 1234, 1236, 1234, 1237]


def _same(a, b):
    for key in ("epoch_loss", "loss_log"):                      # exact, nan where nan (a diverged run)
        assert np.array_equal(a[key], b[key], equal_nan=True) and len(a[key]) == len(b[key])
    assert (a["steps"], a["status"], a["stopped_epoch"], a["seed"]) == (b["steps"], b["status"], b["stopped_epoch"],
                                                                       b["seed"])
    assert a["params"].keys() == b["params"].keys()
    for k in a["params"]:
        assert a["params"][k].shape == (V, V) and np.array_equal(a["params"][k], b["params"][k], equal_nan=True)
    assert a.get("marks", {}).keys() == b.get("marks", {}).keys()
    for loss, m in a.get("marks", {}).items():
        assert m["steps"] == b["marks"][loss]["steps"]
        assert all(np.array_equal(m["params"][k], b["marks"][loss]["params"][k]) for k in m["params"])


@pytest.mark.parametrize("parameterization", ["CACO", "CAFO", "FACO", "FAFO"])
def test_stack_is_bitwise_each_run_alone_with_runs_leaving_at_different_steps(parameterization):
    base = sgd.Fig2Config(parameterization=parameterization, **BASE)
    configs = [replace(base, **r) for r in RATES]
    stacked = stack.train_stack(configs, SEEDS, record_losses=[3.8])
    alone = [sgd.train_fig2(c, [s], record_losses=[3.8])[0] for c, s in zip(configs, SEEDS)]
    for a, b in zip(stacked, alone):
        _same(a, b)
    steps = [r["steps"] for r in stacked]
    assert len(set(steps)) >= 3, steps                         # the runs left the stack at different steps
    assert {r["status"] for r in stacked} >= {"reached", "completed", "diverged"}


def test_stack_order_does_not_matter():
    base = sgd.Fig2Config(parameterization="CAFO", **BASE)
    configs = [replace(base, **r) for r in RATES]
    forward = stack.train_stack(configs, SEEDS)
    backward = stack.train_stack(configs[::-1], SEEDS[::-1])
    for a, b in zip(forward, backward[::-1]):
        _same(a, b)


def test_stack_refuses_runs_of_other_shapes_and_twice_the_same_run():
    c = sgd.Fig2Config(**BASE)
    with pytest.raises(ValueError, match="seq_len"):
        stack.train_stack([c, replace(c, seq_len=32)], [1, 2])
    with pytest.raises(ValueError, match="twice"):
        stack.train_stack([c, replace(c)], [1, 1])
    with pytest.raises(ValueError, match="equal length"):
        stack.train_stack([c], [1, 2])
    with pytest.raises(ValueError, match="seeds"):
        stack.train_stack([c], [-1])


def test_sweep_job_of_every_ratio_equals_one_job_per_ratio():
    """The stacked job's rows are the rows of one job per ratio."""
    new = sweep.sweep_jobs(["CACO"], [0.1, 10, 100], 2, [3.5, 2.5], max_steps=200, steps_per_epoch=20,
                           eval_batches=2, lr_ov=1.0)
    assert len(new) == 2 and [j["seeds"] for j in new] == [[1234], [1235]]
    assert all(j["ratios"] == [0.1, 10.0, 100.0] and j["config"]["lr_qk"] == j["config"]["lr_ov"] for j in new)
    rows = [row for j in new for row in jobs.sweep_job(j)["rows"]]
    assert all(jobs.valid_result(j, jobs.sweep_job(j)) for j in new[:1])
    per_ratio = [{"experiment": "sweep", "ratios": [r], "config": new[0]["config"], "seeds": [1234, 1235],
                  "target_losses": [3.5, 2.5]} for r in (0.1, 10.0, 100.0)]
    per_ratio_rows = [row for j in per_ratio for row in jobs.sweep_job(j)["rows"]]
    key = lambda row: (row["ratio"], row["seed"], -row["target_loss"])   # noqa: E731
    assert sorted(rows, key=key) == sorted(per_ratio_rows, key=key)
    assert len({row["steps"] for row in rows}) >= 3, [(r["ratio"], r["seed"], r["steps"]) for r in rows]
