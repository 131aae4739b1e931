"""numerics.experiments.sgd: stacking independence, stop rules, ramp, Figure 3; jobs and backends."""
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from derivations.core.vocabulary import PARAMETERIZATIONS
from numerics.experiments import fixed_attention, jobs, measure, models, sgd, stopping
from numerics.experiments.runner import run_jobs


def _short(p, **kw):
    base = dict(parameterization=p, epochs=3, steps_per_epoch=15, stop="none", init="uniform", eval_batches=3,
                lr_qk=0.5, lr_ov=0.5)
    base.update(kw)
    return sgd.Fig2Config(**base)


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_stacked_seeds_equal_single_seed_runs_bitwise(p):
    config = _short(p)
    both = sgd.train_fig2(config, [1234, 1235])
    for i, seed in enumerate([1234, 1235]):
        alone = sgd.train_fig2(config, [seed])[0]
        assert both[i]["epoch_loss"] == alone["epoch_loss"]
        for k in alone["params"]:
            assert np.array_equal(both[i]["params"][k], alone["params"][k]), (p, seed, k)
    assert both[0]["epoch_loss"] != both[1]["epoch_loss"]          # the seeds differ
    assert both[0]["epoch_loss"][-1] < both[0]["epoch_loss"][0]    # and training learns


def test_seed_that_stops_early_leaves_the_others_unchanged():
    """A target loss stops one seed mid-run; the remaining seed's numbers equal its solo run."""
    config = _short("CACO", epochs=6, lr_qk=2.0, lr_ov=2.0)
    free = sgd.train_fig2(config, [1234, 1235])
    target = (free[0]["epoch_loss"][2] + free[1]["epoch_loss"][2]) / 2   # between the two seeds
    cfg = replace(config, target_loss=target)
    both = sgd.train_fig2(cfg, [1234, 1235])
    assert [r["stopped_epoch"] for r in both] == [3, 4]             # seed 1234 leaves the stack first
    for i, seed in enumerate([1234, 1235]):
        alone = sgd.train_fig2(cfg, [seed])[0]
        assert both[i]["epoch_loss"] == alone["epoch_loss"]
        assert both[i]["steps"] == alone["steps"] == len(alone["epoch_loss"]) * 15
        for k in alone["params"]:
            assert np.array_equal(both[i]["params"][k], alone["params"][k])


def test_a_diverging_seed_stops_alone_and_the_others_are_unchanged(monkeypatch):
    """A non-finite loss in one stacked seed stops that seed (status "diverged"); the other seeds train on,
    their numbers bitwise equal to their solo runs, and the job reports the diverged run with null measurements."""
    config = _short("CAFO", epochs=4)
    solo = {seed: sgd.train_fig2(config, [seed])[0] for seed in (1235, 1236)}
    original = models.loss_and_grad
    calls = []

    def poisoned(params, *args, **kwargs):
        loss, steps = original(params, *args, **kwargs)
        calls.append(1)
        if len(calls) == 20:                          # epoch 2, step 5: seed 1234 (first in the stack) blows up
            loss = np.array(loss, dtype=float)
            loss[0] = np.inf
            for d in steps.values():
                d[0] = np.nan
        return loss, steps
    monkeypatch.setattr(models, "loss_and_grad", poisoned)
    runs = sgd.train_fig2(config, [1234, 1235, 1236])
    assert [r["status"] for r in runs] == ["diverged", "completed", "completed"]
    assert runs[0]["steps"] == 30 and runs[0]["stopped_epoch"] is None and len(runs[0]["epoch_loss"]) == 2
    for r in runs[1:]:
        alone = solo[r["seed"]]
        assert r["epoch_loss"] == alone["epoch_loss"] and r["steps"] == alone["steps"] == 60
        for k in alone["params"]:
            assert np.array_equal(r["params"][k], alone["params"][k])
    summary = jobs.fig2_run_summary(config, runs[0])
    assert summary["status"] == "diverged" and summary["final_loss"] is None and summary["heatmap"] is None
    kept = jobs.combine_runs([summary, jobs.fig2_run_summary(config, runs[1])])
    assert kept["heatmap"] == measure.combine_summaries([jobs.fig2_run_summary(config, runs[1])])["heatmap"]


@pytest.mark.parametrize("dtype", sgd.DTYPES)
def test_parameters_not_finite_after_the_last_step_make_the_run_diverged(monkeypatch, dtype):
    """The last update of one stacked run overflows while its training losses stay finite: that run
    is "diverged" (not "completed" or "reached") and keeps no mark there; the other run is its solo
    run; the job measures nothing of it instead of failing."""
    config = _short("CACO", epochs=3, dtype=dtype)
    free = sgd.train_fig2(config, [1234, 1235])
    last = free[0]["epoch_loss"][-1]                     # reached first in the last epoch
    solo = sgd.train_fig2(replace(config, target_loss=last), [1235], record_losses=[last])[0]
    original = models.loss_and_grad
    calls = []

    def poisoned(params, *args, **kwargs):
        loss, steps = original(params, *args, **kwargs)
        calls.append(1)
        if len(calls) % 45 == 0:                      # the last step: seed 1234's update overflows
            for d in steps.values():
                d[0] = np.inf
        return loss, steps
    monkeypatch.setattr(models, "loss_and_grad", poisoned)
    completed = sgd.train_fig2(config, [1234, 1235], record_losses=[last])
    reached = sgd.train_fig2(replace(config, target_loss=last), [1234, 1235], record_losses=[last])
    for runs in (completed, reached):
        assert runs[0]["status"] == "diverged" and runs[0]["stopped_epoch"] is None and runs[0]["marks"] == {}
        assert runs[0]["epoch_loss"] == free[0]["epoch_loss"] and runs[0]["steps"] == 45
        assert jobs.fig2_run_summary(config, runs[0])["final_loss"] is None
    assert reached[1]["epoch_loss"] == solo["epoch_loss"] and reached[1]["status"] == solo["status"]
    assert all(np.array_equal(reached[1]["params"][k], solo["params"][k]) for k in solo["params"])


def test_authors_stop_rule_scripted_sequence():
    """Running sum reset only every 100 epochs: a low epoch inside a block does not stop training."""
    K = 10
    rule = stopping.AuthorsStopRule(n_runs=2, steps_per_epoch=K)
    # run 0: mean loss 1 until epoch 149, then 1e-4. Fires only at epoch 200 (first after a boundary).
    # run 1: mean loss 5e-4 from epoch 100 on: fires at epoch 100 itself (sum/K = 5e-4).
    fired = {0: None, 1: None}
    for epoch in range(300):
        m0 = 1.0 if epoch < 150 else 1e-4
        m1 = 1.0 if epoch < 100 else 5e-4
        stop = rule.update(epoch, np.array([m0 * K, m1 * K]))
        for r in (0, 1):
            if stop[r] and fired[r] is None:
                fired[r] = epoch
    assert fired == {0: 200, 1: 100}
    # exactly at the threshold fires; just above does not
    rule = stopping.AuthorsStopRule(n_runs=2, steps_per_epoch=K)
    assert rule.update(0, np.array([1e-3 * K, 1.0000001e-3 * K])).tolist() == [True, False]
    # inside a block the running sum remembers earlier epochs: 0.002 then 0.0001 -> 0.0021 > 0.001
    rule = stopping.AuthorsStopRule(n_runs=1, steps_per_epoch=K)
    assert not rule.update(0, [0.002 * K])[0]
    assert not rule.update(1, [0.0001 * K])[0]


def test_train_fig2_applies_authors_rule_and_logs(monkeypatch):
    """train_fig2 with a scripted loss (zero gradients): stop epoch, steps and loss log."""
    script = {}

    def fake(st, params, counts, query, target, **kw):
        step = script["step"]
        script["step"] += 1
        epoch = step // 4
        loss = np.full(counts.shape[0], 1.0 if epoch < 130 else 2e-4)
        return loss, {k: np.zeros_like(v) for k, v in params.items()}
    script["step"] = 0
    monkeypatch.setattr(sgd.models, "loss_and_grad", fake)
    cfg = sgd.Fig2Config("CACO", epochs=500, steps_per_epoch=4, stop="authors", batch_size=2)
    run = sgd.train_fig2(cfg, [1])[0]
    assert run["stopped_epoch"] == 201 and run["steps"] == 201 * 4
    assert run["loss_log"] == pytest.approx([1.0, 0.3 * 1.0 + 0.7 * 2e-4, 2e-4], rel=1e-12, abs=0)
    assert len(run["epoch_loss"]) == 201


def test_qk_ramp_and_per_circuit_rates(monkeypatch):
    """Unit gradients: each parameter moves by the sum of its circuit's rates over the steps.
    (The trainer asks loss_and_grad for rate x gradient, ``_rates=(lr_qk, lr_ov)`` of the step.)"""
    def fake(st, params, counts, query, target, _rates, **kw):
        lr = {"QK": _rates[0], "OV": _rates[1]}
        circuit = {"W_QK": "QK", "W_Q": "QK", "W_K": "QK", "W_OV": "OV", "W_O": "OV", "W_V": "OV"}
        return np.zeros(counts.shape[0]), {k: np.full_like(v, lr[circuit[k]]) for k, v in params.items()}
    monkeypatch.setattr(sgd.models, "loss_and_grad", fake)
    cfg = sgd.Fig2Config("FAFO", lr_qk=0.2, lr_ov=0.01, qk_ramp=40.0, epochs=3, steps_per_epoch=5,
                         stop="none", init="identity", batch_size=2)
    run = sgd.train_fig2(cfg, [1])[0]
    T = 15
    qk = sum(0.2 * (1 + 39 * t / T) for t in range(T))
    for k in ("W_Q", "W_K"):
        np.testing.assert_allclose(1e-6 * np.eye(50) - run["params"][k], qk, rtol=1e-12)
    for k in ("W_O", "W_V"):
        np.testing.assert_allclose(1e-6 * np.eye(50) - run["params"][k], 0.01 * T, rtol=1e-12)


def test_max_steps_truncates_last_epoch():
    cfg = _short("CACO", epochs=5, max_steps=37)
    run = sgd.train_fig2(cfg, [3])[0]
    assert run["steps"] == 37 and len(run["epoch_loss"]) == 3


def test_fig3_alpha_alone_equals_stacked_bitwise():
    cfg = fixed_attention.Fig3Config("factorized", epochs=2, steps_per_epoch=6, eval_batches=2, batch_size=16)
    full = fixed_attention.train_fig3(cfg)
    one = fixed_attention.train_fig3(fixed_attention.Fig3Config("factorized", alphas=(0.6,), epochs=2, steps_per_epoch=6,
                                        eval_batches=2, batch_size=16))
    i = full["alpha"].index(0.6)
    assert full["loss"][i] == one["loss"][0] and full["incentive"][i] == one["incentive"][0]
    assert np.shape(full["loss"]) == (5, 3)
    assert all(v == 0 for v in full["incentive"][-1])              # alpha = 1


def _reference_fig3_loss_and_grad(W, b, counts, target, alpha):
    """The collapsed Figure-3 model, one sequence at a time: context c_v = alpha n_v / R on the relevant
    types, (1 - alpha) n_v / (N - R) on the others (R relevant of N positions), z = W c + b, the mean
    cross-entropy and its gradients (softmax - one-hot) c^T / B, (softmax - one-hot) / B."""
    from numerics.experiments.task_sampling import AUTHORS
    loss, gW, gb = 0.0, np.zeros_like(W), np.zeros_like(b)
    for n, y in zip(counts, target):
        R, N = n[AUTHORS.relevant].sum(), n.sum()
        c = np.where(AUTHORS.relevant, alpha * n / R, (1 - alpha) * n / (N - R)) if R else n / N
        z = W @ c + b
        p = np.exp(z - z.max())
        p /= p.sum()
        loss -= np.log(p[y])
        p[y] -= 1.0
        gW += np.outer(p, c)
        gb += p
    B = len(target)
    return loss / B, gW / B, gb / B


def test_fig3_training_and_incentive_against_a_plain_loop():
    """train_fig3 (collapsed, stacked alphas) against plain SGD of each alpha alone, written here: the same
    initial draw and batches (default_rng(seed): init, then one epoch of batches at a time; eval_rng(seed)
    for the measurements), W <- W - lr grad; loss at alpha and alpha + 0.005 on the same fresh batches,
    incentive (L(alpha) - L(alpha + 0.005)) / 0.005 (0 at alpha = 1), train_loss the epoch's mean."""
    cfg = fixed_attention.Fig3Config("collapsed", alphas=(0.3, 1.0), epochs=2, steps_per_epoch=3, batch_size=8,
                                     seq_len=16, lr=0.5, eval_batches=2, seed=7)
    got = fixed_attention.train_fig3(cfg)
    for i, alpha in enumerate(cfg.alphas):
        rng, erng = np.random.default_rng(cfg.seed), sgd.eval_rng(cfg.seed)
        p0 = fixed_attention.fig3_init("collapsed", rng)
        W, b = p0["W"].copy(), p0["b"].copy()

        def measure_at(a, eb):
            return _reference_fig3_loss_and_grad(W, b, eb.counts.reshape(-1, 50), eb.target.reshape(-1), a)[0]
        losses, shifted, train = [], [], []
        for epoch in range(cfg.epochs + 1):
            eb = fixed_attention.sample_fig3_batches(erng, cfg.eval_batches, cfg.batch_size, cfg.seq_len)
            losses.append(measure_at(alpha, eb))
            shifted.append(measure_at(min(alpha + fixed_attention.ALPHA_STEP, 1.0), eb))
            if epoch == cfg.epochs:
                break
            tb = fixed_attention.sample_fig3_batches(rng, cfg.steps_per_epoch, cfg.batch_size, cfg.seq_len)
            step_losses = []
            for k in range(cfg.steps_per_epoch):
                L, gW, gb = _reference_fig3_loss_and_grad(W, b, tb.counts[k], tb.target[k], alpha)
                step_losses.append(L)
                W, b = W - cfg.lr * gW, b - cfg.lr * gb
            train.append(np.mean(step_losses))
        np.testing.assert_allclose(got["loss"][i], losses, rtol=1e-12)
        np.testing.assert_allclose(got["loss_shifted"][i], shifted, rtol=1e-12)
        np.testing.assert_allclose(got["train_loss"][i], train, rtol=1e-12)
        want = np.zeros(3) if alpha == 1.0 else (np.array(losses) - shifted) / fixed_attention.ALPHA_STEP
        # a difference quotient: error eps |L| / ALPHA_STEP ~ 1e-13 on values >= 1.5e-3 (relative ~1e-10)
        np.testing.assert_allclose(got["incentive"][i], want, rtol=1e-8, atol=0)
        assert got["final_loss"][i] == got["loss"][i][-1]


def test_the_incentive_of_a_diverged_alpha_1_is_not_a_number():
    """The incentive is 0 at alpha = 1 (no sharper attention) where its loss is measured; where the alpha
    diverged (its losses NaN), it is not a number either, as every other alpha's, not a 0 beside a null loss."""
    cfg = fixed_attention.Fig3Config("factorized", alphas=(0.5, 1.0), epochs=2, steps_per_epoch=2, batch_size=8,
                                     eval_batches=1, lr=1e300)
    got = fixed_attention.train_fig3(cfg)
    assert [d["alpha"] for d in fixed_attention.diverged_alphas(got, cfg.steps_per_epoch)] == [0.5, 1.0]
    for loss, incentive in zip(got["loss"], got["incentive"]):
        assert np.isfinite(loss[0]) and np.isfinite(incentive[0]) and np.isnan(loss[1:]).all()
        assert np.isnan(incentive[1:]).all()
    assert got["incentive"][1][0] == 0.0

def test_fig2_job_same_results_on_any_worker_count():
    cfg = _short("FACO", epochs=2, steps_per_epoch=8)
    seeds = [1234, 1235, 1236]
    one = run_jobs(jobs.fig2_job, [{"experiment": "fig2", "config": cfg.to_dict(), "seeds": seeds}],
                   workers=1, progress=False)
    split = run_jobs(jobs.fig2_job, [{"experiment": "fig2", "config": cfg.to_dict(), "seeds": g}
                                     for g in jobs.split_seeds(seeds, 2)], workers=2, progress=False)
    runs_one = one[0]["runs"]
    runs_split = [r for res in split for r in res["runs"]]
    assert json.dumps(runs_one) == json.dumps(runs_split)


def test_heatmap_summary_of_seeds():
    per_seed = [{"heatmap": np.eye(5).tolist(), "separability_n": 2, "separability_sum": 1.0,
                 "separability_sumsq": 0.5},
                {"heatmap": (3 * np.eye(5)).tolist(), "separability_n": 2, "separability_sum": 1.0,
                 "separability_sumsq": 0.5}]
    s = measure.combine_summaries(per_seed)
    # the mean and standard deviation of 0 and 0, 1 and 3: exact in doubles
    assert np.array_equal(s["heatmap"], 2 * np.eye(5)) and np.array_equal(s["heatmap_std"], np.eye(5))
    assert s["separability"] == {"mean": 0.5, "std": 0.0}
    h = measure.heatmap(np.array([0.0, 0.2, 0.99, 1.0]), np.array([0.5, 0.5, 1.0, 0.1]))
    assert h.sum() == 100 and h[1, 2] == 25 and h[4, 4] == 25 and h[4, 0] == 25


@pytest.mark.parametrize("bad", [[np.nan], [-1.0], [0.0], [np.inf], ["a"], [None], "0.5", 0.5])
def test_record_losses_are_losses_above_zero(bad):
    """Never a loss silently not recorded (nan, negative) nor float's message: record_losses is named."""
    cfg = sgd.Fig2Config("CACO", epochs=1, steps_per_epoch=1, batch_size=2, eval_batches=1)
    with pytest.raises(ValueError, match="^record_losses must be"):
        sgd.train_fig2(cfg, [1], record_losses=bad)


@pytest.mark.parametrize("rates, name", [
    (dict(lr_qk=1e10, lr_ov=1e-300), "lr_qk x max(1, qk_ramp) / lr_ov"),        # the QK step's factor overflows
    (dict(lr_qk=1.0, lr_ov=1e-307, qk_ramp=1000.0), "lr_qk x max(1, qk_ramp) / lr_ov"),
    (dict(lr_qk=1.0, lr_ov=1e-310), "lr_ov"),                                   # subnormal
    (dict(lr_qk=1e-50, lr_ov=1e-50, dtype="float32"), "lr_ov"),                 # 0 in float32: 0/0
    (dict(lr_qk=1e39, lr_ov=1.0, dtype="float32"), "lr_qk"),                    # inf in float32
])
def test_rates_the_step_cannot_hold_are_refused(rates, name):
    """A rate, or the factor lr_qk / lr_ov by which the step scales the OV step's gradient into the QK
    step, that rounds to 0 or overflows in the step's dtype is refused, naming it and the range, rather
    than the run reported diverged (its step NaN) by no fault of SGD."""
    with pytest.raises(ValueError, match=rf"^{re.escape(name)} .*must be in \["):
        sgd.Fig2Config("CACO", epochs=1, steps_per_epoch=1, **rates)


def _plain_sgd(config, seed):
    """The SGD of train_fig2 written plainly: one generator draws the initial matrices, then each
    epoch's batches (sampler.sample_batches); every step subtracts rate x the full gradient of
    models.loss_and_grad (no hot path, no sparse rows, no folded rates); the QK rate of step t is
    lr_qk (1 + (F - 1) t / (epochs x steps_per_epoch)), the notebooks' ramp over the scheduled steps
    even when max_steps ends the run sooner."""
    from numerics.experiments import sampler
    st = config.sampled_task
    rng = np.random.default_rng(seed)
    params = models.init_params(st, config.parameterization, config.init, rng)
    scheduled, total, t = config.epochs * config.steps_per_epoch, config.total_steps, 0
    qk, gaps = {"W_QK", "W_Q", "W_K"}, 0
    while t < total:
        k_this = min(config.steps_per_epoch, total - t)
        b = sampler.sample_batches(st, rng, k_this, config.batch_size, config.seq_len)
        ids = np.unique(b.query)
        gaps += bool(ids[-1] - ids[0] + 1 != ids.size)          # an epoch whose queries skip an id
        for k in range(k_this):
            _, g = models.loss_and_grad(st, params, b.counts[k], b.query[k], b.target[k])
            lr_qk = config.lr_qk * (1.0 + (config.qk_ramp - 1.0) * t / scheduled)
            params = {key: v - (lr_qk if key in qk else config.lr_ov) * g[key] for key, v in params.items()}
            t += 1
    return params, gaps


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_trainer_is_plain_sgd_with_its_ramp(p):
    """train_fig2 (stacked, sparse query rows, rates folded into the backward pass) lands where a
    plain SGD loop does, to 1e-10: with batches of one sequence the queries of an epoch are often
    not consecutive ids (the trainer's index-array path), and max_steps cuts the ramp short."""
    config = sgd.Fig2Config(p, lr_qk=0.3, lr_ov=0.2, qk_ramp=5.0, seq_len=12, batch_size=1, epochs=6,
                            steps_per_epoch=3, max_steps=16, stop="none", init="uniform", eval_batches=1)
    runs = sgd.train_fig2(config, [7, 8])
    skipped = 0
    for run in runs:
        want, gaps = _plain_sgd(config, run["seed"])
        skipped += gaps
        assert run["steps"] == 16
        for key, v in want.items():
            np.testing.assert_allclose(run["params"][key], v, rtol=1e-10, atol=0, err_msg=key)
            assert np.abs(v - models.init_params(config.sampled_task, p, "uniform",
                                                 np.random.default_rng(run["seed"]))[key]).max() > 1e-5
    assert skipped                                     # the index-array path really ran


@pytest.mark.parametrize("seeds", [None, 1.0, 3, "ab", {1: 2}])
def test_train_fig2_names_seeds_that_are_not_a_list(seeds):
    """seeds=None was "'NoneType' object is not iterable"."""
    with pytest.raises(ValueError, match=r"^seeds must be"):
        sgd.train_fig2(_short("CACO"), seeds=seeds)
