"""The float32 SGD step (``Fig2Config(dtype="float32")``, ``--dtype float32``): float32 throughout
the step, stack-independent, close to float64, and never mixed with float64 results."""
from dataclasses import replace

import numpy as np
import pytest

from numerics.experiments import models, sampler, settings, sgd, stack, sweep
from numerics.experiments.task_sampling import AUTHORS

V = AUTHORS.T
from numerics.experiments.cross_entropy import cross_entropy

PARAMETERIZATIONS = ("CACO", "CAFO", "FACO", "FAFO")


def _short(p, **kw):
    return sgd.Fig2Config(p, epochs=3, steps_per_epoch=20, stop="none", **kw)


def test_float64_identity_unchanged_and_float32_named():
    assert "dtype" not in sgd.Fig2Config().to_dict()
    assert sgd.Fig2Config(**sgd.Fig2Config().to_dict()) == sgd.Fig2Config()
    d = sgd.Fig2Config(dtype="float32").to_dict()
    assert d["dtype"] == "float32" and sgd.Fig2Config(**d).dtype == "float32"
    with pytest.raises(ValueError, match="dtype"):
        sgd.Fig2Config(dtype="float16")


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_step_is_float32_throughout(p, monkeypatch):
    """Every product of a float32 step has float32 factors (no silent float64 upcast) and the
    loss and gradients are float32."""
    rng = np.random.default_rng(0)
    params = {k: v[None].astype(np.float32) for k, v in models.init_params(AUTHORS, p, "uniform", rng).items()}
    batch = sampler.sample_batches(AUTHORS, rng, 1, 16, 64)
    seen = []
    matmul = np.matmul

    def spy(x, y, *args, **kw):
        seen.append((x.dtype, y.dtype))
        return matmul(x, y, *args, **kw)
    monkeypatch.setattr(np, "matmul", spy)
    loss, grads = models.loss_and_grad(AUTHORS, params, batch.counts.astype(np.uint16), batch.query, batch.target)
    monkeypatch.undo()
    assert seen and all(a == b == np.float32 for a, b in seen)
    assert loss.dtype == np.float32 and all(g.dtype == np.float32 for g in grads.values())


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_float32_training_close_to_float64(p):
    """Same batches, float32 arithmetic: the epoch losses agree to float32 precision (independent
    reference: the float64 run), differ from float64 in the last bits, and the returned
    parameters are float64 (rounded float32 values)."""
    r64 = sgd.train_fig2(_short(p), [1234, 1235])
    r32 = sgd.train_fig2(_short(p, dtype="float32"), [1234, 1235])
    for a, b in zip(r64, r32):
        assert a["steps"] == b["steps"] == 60
        np.testing.assert_allclose(b["epoch_loss"], a["epoch_loss"], rtol=2e-5)
        for k, w in b["params"].items():
            assert w.dtype == np.float64
            assert np.array_equal(w, w.astype(np.float32))            # float32 values
            # float32 rounds each of the 60 updates to ~1.2e-7 of the matrix's largest entries (W_O, W_V, W_Q,
            # W_K are ~1e-6 in size): an absolute tolerance of 1e-5 of that scale, not 1e-5 itself
            np.testing.assert_allclose(w, a["params"][k], rtol=1e-3, atol=1e-5 * np.abs(a["params"][k]).max())
    assert any(a["epoch_loss"] != b["epoch_loss"] for a, b in zip(r64, r32))


@pytest.mark.parametrize("p", ("CACO", "FAFO"))
def test_float32_run_is_the_same_stacked_or_alone(p):
    """A float32 run, like a float64 one, does not depend on the runs stacked with it."""
    c = _short(p, dtype="float32")
    configs = [c, replace(c, lr_qk=0.05), replace(c, lr_qk=0.2, qk_ramp=3.0)]
    stacked = stack.train_stack(configs, [1234, 1235, 1234])
    for cfg, seed, run in zip(configs, [1234, 1235, 1234], stacked):
        alone = sgd.train_fig2(cfg, [seed])[0]
        assert run["epoch_loss"] == alone["epoch_loss"]
        for k in run["params"]:
            assert np.array_equal(run["params"][k], alone["params"][k])


def test_float32_underflow_fallbacks_stay_finite():
    """Scores and logits so far apart that float32 exponentials underflow (1e-30 threshold):
    the per-row fallbacks give finite numbers, equal to float64's within float32 precision."""
    table = np.zeros((1, V))
    table[0, 0] = 1000.0                          # an absent token far above the present ones
    counts = np.zeros((1, 2, V))
    counts[0, :, 5:9] = [[1, 2, 3, 4], [4, 3, 2, 1]]
    slot = np.zeros((1, 2), dtype=np.intp)
    a64 = models._attention(AUTHORS, table, counts, slot)
    a32 = models._attention(AUTHORS, table.astype(np.float32), counts, slot)
    assert a32.dtype == np.float32 and np.all(np.isfinite(a32))
    np.testing.assert_allclose(a32, a64, rtol=1e-6, atol=1e-7)
    z = np.zeros((1, V, 2))
    z[0, 0, 0] = 500.0                            # run-wide maximum far above row 1's logits
    target = np.array([[3, 7]])
    l64, g64 = cross_entropy(z.copy(), target, None, True, class_axis=-2)
    l32, g32 = cross_entropy(z.astype(np.float32), target, None, True, class_axis=-2)
    assert l32.dtype == np.float32 and np.all(np.isfinite(g32))
    np.testing.assert_allclose(l32, l64, rtol=1e-6)
    # entries of exp(-500) ~ 7e-218 are below float32's range: an absolute tolerance of its smallest normal
    np.testing.assert_allclose(g32, g64, rtol=1e-6, atol=np.finfo(np.float32).tiny)


def test_sweep_jobs_and_resume_never_mix_dtypes():
    j64 = sweep.sweep_jobs(["CACO"], [1.0], 1, 1.0)
    j32 = sweep.sweep_jobs(["CACO"], [1.0], 1, 1.0, dtype="float32")
    assert "dtype" not in j64[0]["config"] and j32[0]["config"]["dtype"] == "float32"
    stored = {"ratios": [1.0], "seeds": 1}
    assert settings.settings_difference(stored, {"ratios": [1.0], "seeds": 1}) is None
    assert "--dtype float64, not float32" in settings.settings_difference(stored, {**stored, "dtype": "float32"})
    assert "--dtype float32, not float64" in settings.settings_difference({**stored, "dtype": "float32"}, stored)


def test_reproduce_jobs_name_the_dtype_of_their_figure2_runs():
    from numerics.experiments.reproduce import published_jobs

    for (_, j64), (_, j32) in zip(published_jobs(True), published_jobs(True, dtype="float32")):
        assert "dtype" not in j64["config"]
        assert j32["config"].get("dtype") == ("float32" if j32["experiment"] == "fig2" else None)


def test_fig2_command_dtype(capsys):
    import json

    from numerics.experiments.__main__ import main

    args = ["fig2", "--epochs", "1", "--steps-per-epoch", "5", "--eval-batches", "1", "--seeds", "1234",
            "--workers", "1", "--json", "--quiet"]
    assert main(args + ["--dtype", "float32"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["dtype"] == "float32"
    assert main(args + ["--dtype", "float16"]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "--dtype" in err and not out


def test_report_names_a_float32_step_only():
    from numerics.experiments.reproduce import format_report

    run = {"title": "t", "experiment": "fig2", "heatmap": None, "separability": {"mean": None, "std": None},
           "runs": [], "settings": sgd.Fig2Config().to_dict()}
    report = {"quick": True, "wall_seconds": None, "runs": {"CACO": run}}
    assert "step" not in format_report(report).split("init authors")[1].splitlines()[0]
    run["settings"] = sgd.Fig2Config(dtype="float32").to_dict()
    assert "init authors, float32 step" in format_report(report)


def test_the_reports_wall_time_counts_the_figures_and_shows_tenths(tmp_path, monkeypatch):
    import time

    from numerics.experiments import reproduce
    monkeypatch.setattr(reproduce, "make_figures", lambda report, output: time.sleep(0.25) or [])
    report = reproduce._write_report(tmp_path, [], [], time.perf_counter(), True)
    assert 0.25 <= report["wall_seconds"] < 5
    assert f"wall time: {report['wall_seconds']:.1f} s (quick" in (tmp_path / "report.md").read_text()


def test_a_stack_refuses_runs_of_two_dtypes():
    c = _short("CACO")
    for pair in ([c, replace(c, dtype="float32")], [replace(c, dtype="float32"), c]):
        with pytest.raises(ValueError, match="differ in dtype"):
            stack.train_stack(pair, [1234, 1235])
