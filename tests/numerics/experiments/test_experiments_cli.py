"""python -m numerics.experiments: JSON shapes, sweep CSV and resume after a kill, bad input.

The Dask and multi-process paths of the same commands are tested end to end in
tests/numerics/experiments/test_experiments_scaleout.py (bitwise equality across backends)."""
import csv
import json
import os
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numerics.experiments import jobs
from numerics.experiments.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "numerics.experiments", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=ENV)


FIG2_SHORT = ["--epochs", "2", "--steps-per-epoch", "10", "--eval-batches", "3"]


def test_fig2_json_shape(capsys):
    assert main(["fig2", "--parameterization", "CAFO", *FIG2_SHORT, "--seeds", "1234,1235",
                 "--workers", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {"heatmap", "heatmap_std", "separability", "settings", "runs"}
    assert len(d["heatmap"]) == 5 and all(len(r) == 5 for r in d["heatmap"])
    assert sum(map(sum, d["heatmap"])) == pytest.approx(100, rel=1e-13, abs=0)   # 25 percentages summed
    assert set(d["separability"]) == {"mean", "std"}
    assert [r["seed"] for r in d["runs"]] == [1234, 1235]
    for r in d["runs"]:
        assert {"seed", "steps", "stopped_epoch", "loss_log", "final_loss", "accuracy"} <= set(r)
        shares = r["relevant_attention"] + r["self_attention"] + r["other_attention"]
        assert shares == pytest.approx(1.0, abs=1e-12)      # where the attention goes, per run
        assert r["steps"] == 20 and r["stopped_epoch"] is None and len(r["loss_log"]) == 1
    assert d["settings"]["parameterization"] == "CAFO" and d["settings"]["stop"] == "authors"


def test_fig2_defaults_are_the_published_run():
    from numerics.experiments import sgd
    from numerics.experiments.commands.fig2 import _config
    args = build_parser().parse_args(["fig2", "--parameterization", "CAFO"])
    assert (args.lr_qk, args.lr_ov, args.batch_size, args.stop, args.init, args.task, args.params) == \
        ("0.01", "0.01", "32", "authors", "authors", "authors", None)
    assert args.seq_len is None and _config(args)[0].seq_len == 64      # None: 64, or a task's own length
    assert sgd.published_fig2_defaults("CAFO") == {"epochs": 5000, "steps_per_epoch": 200,
                                                   "seeds": [1234, 1235, 1236, 1237, 1238]}
    assert sgd.published_fig2_defaults("FAFO") == {"epochs": 2500, "steps_per_epoch": 250, "seeds": [1234]}


def test_fig3_json_shape_and_figure(tmp_path, capsys):
    assert main(["fig3", "--alphas", "0.5,1", "--epochs", "2", "--steps-per-epoch", "5", "--eval-batches", "1",
                 "--batch-size", "16", "--workers", "1", "--json", "--output", str(tmp_path)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["alpha"] == [0.5, 1.0]
    assert [len(x) for x in d["loss"]] == [3, 3] and [len(x) for x in d["incentive"]] == [3, 3]
    assert d["incentive"][1] == [0.0, 0.0, 0.0] and len(d["final_loss"]) == 2
    assert (tmp_path / "fig3_collapsed.png").stat().st_size > 1000
    assert (tmp_path / "fig3_collapsed.pdf").read_bytes().startswith(b"%PDF")


SWEEP = ["sweep", "--parameterizations", "CACO,FAFO", "--ratios", "1,4", "--seeds", "2",
         "--target-loss", "3.5", "--max-steps", "300", "--steps-per-epoch", "50", "--eval-batches", "2",
         "--quiet"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """``SWEEP`` with its theory and figures, run once for the module: ``(output directory, printed JSON)``.
    Its figure ``sweep`` is written as PNG and PDF; ``proxies`` is built, not written (its files are
    checked in test_proxies_sweep.py)."""
    import contextlib
    import io
    from _figures import only_figures
    out = tmp_path_factory.mktemp("sweep") / "s"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.MonkeyPatch.context() as mp:
        only_figures(mp, ("sweep",))
        assert main([*SWEEP, "--output", str(out), "--workers", "1", "--json"]) == 0
    return out, json.loads(printed.getvalue())


def test_sweep_csv_json_plot_and_refuses_to_overwrite(swept, capsys):
    out, d = swept
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(jobs.SWEEP_ROW_KEYS)
    keys = [(r["parameterization"], float(r["ratio"]), int(r["seed"])) for r in rows]
    assert keys == [(p, r, s) for p in ("CACO", "FAFO") for r in (1.0, 4.0) for s in (1234, 1235)]
    assert [(s["parameterization"], s["ratio"]) for s in d["summary"]] == \
        [("CACO", 1.0), ("CACO", 4.0), ("FAFO", 1.0), ("FAFO", 4.0)]
    assert set(d["spearman"]) == {"CACO", "FAFO"} and "rho" in d["spearman"]["CACO"]
    assert (out / "sweep.png").stat().st_size > 1000 and (out / "sweep.pdf").exists()
    # a second run without --resume refuses, before any work
    assert main([*SWEEP, "--output", str(out), "--workers", "1"]) == 2
    assert "--resume" in capsys.readouterr().err


def test_the_theory_is_computed_here_when_the_workers_fail_it(swept, tmp_path, capsys, monkeypatch, no_figures):
    """The overlay's flows run on the sweep's workers; if that fails (a lost scheduler, a broken pool),
    they are computed in this process with a warning: the same sweep.json as a sweep where they ran."""
    from numerics.experiments import runner
    from numerics.experiments.cluster import SchedulerLost

    ok, _ = swept                                       # the same sweep, its theory computed on the workers
    real = runner.run_jobs

    def lost_for_the_theory(func, jobs, **options):
        if options.get("desc") == "theory":
            raise SchedulerLost("the Dask scheduler at tcp://x:1 was lost")
        return real(func, jobs, **options)
    monkeypatch.setattr(runner, "run_jobs", lost_for_the_theory)
    capsys.readouterr()
    lost = tmp_path / "lost"
    assert main([*SWEEP, "--output", str(lost), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "computed in this process" in err and "was lost" in err
    assert (lost / "sweep.json").read_bytes() == (ok / "sweep.json").read_bytes()


def test_a_sweep_stored_in_another_job_layout_is_refused_and_kept(swept, tmp_path, capsys, no_figures):
    """A store whose files belong to none of the sweep's jobs (an earlier qkov cut them otherwise) is
    not read: --resume is refused in one line, before any work, and every stored file is kept (a copy
    of the module's finished SWEEP, its runs stored again under other job keys)."""
    import shutil
    from numerics.experiments.store import ResultStore

    out = tmp_path / "s"
    shutil.copytree(swept[0], out)
    args = [*SWEEP, "--output", str(out), "--workers", "1", "--no-theory"]
    store = ResultStore(out / "runs")
    for job, result in list(store.items()):             # the same runs under other job keys
        store.path(job).unlink()
        store.put({**job, "layout": "older"}, result)
    before = {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    capsys.readouterr()
    assert main([*args, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "another job layout" in err and "not read" in err
    assert {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


def test_sweep_resume_after_kill_equals_uninterrupted(tmp_path, no_figures):
    args = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,3,9", "--seeds", "2", "--target-loss",
            "0.5", "--max-steps", "600", "--steps-per-epoch", "100", "--eval-batches", "1", "--workers", "1",
            "--quiet", "--no-theory"]
    ref = tmp_path / "ref"
    assert main([*args, "--output", str(ref)]) == 0
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "numerics.experiments", *args, "--output", str(killed)],
                            cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (killed / "runs").is_dir() and len(list((killed / "runs").glob("*.json"))) >= 1:
            break
        time.sleep(0.02)
    still_running = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_saved = len(list((killed / "runs").glob("*.json")))
    assert still_running and 1 <= n_saved < 4 and not (killed / "results.csv").exists()
    assert main([*args, "--output", str(killed), "--resume"]) == 0
    assert (killed / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()
    assert len(list((killed / "runs").glob("*.json"))) == 4  # one job per (parameterization, seed): 4 jobs at least


def test_reproduce_quick_writes_report_and_figures(tmp_path, capsys, monkeypatch):
    out = tmp_path / "r"
    assert main(["reproduce", "--quick", "--output", str(out), "--workers", "1", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["runs"]) == {"FAFO", "FACO", "CAFO", "CACO", "CACO_fast_qk", "CACO_ramp", "FAFO_fast_qk",
                                   "FAFO_ramp", "fig3_collapsed", "fig3_factorized"}
    assert len(report["runs"]["CAFO"]["runs"]) == 5 and report["runs"]["CACO_fast_qk"]["settings"]["seq_len"] == 128
    for name in ("fig2_heatmaps", "fig3_fixed_attention"):
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.pdf").exists()
    assert "## Figure 2" in (out / "report.md").read_text() and report["missing"] == []
    # --collect rebuilds the same report from the store, with the reproduction's wall time; a lost run is
    # named as missing, and the report then has no wall time (the figures, drawn above, are not drawn again)
    from _figures import skip_figures
    skip_figures(monkeypatch)
    assert main(["reproduce", "--quick", "--collect", "--output", str(out), "--quiet"]) == 0
    again = json.loads((out / "report.json").read_text())
    assert again == report and "wall time: -" not in (out / "report.md").read_text()
    from numerics.experiments import reproduce
    from numerics.experiments.store import ResultStore
    name, job = reproduce.published_jobs(quick=True)[0]
    ResultStore(out / "runs").path(json.loads(json.dumps(job))).unlink()
    assert main(["reproduce", "--quick", "--collect", "--output", str(out), "--quiet"]) == 0
    partial = json.loads((out / "report.json").read_text())
    assert partial["missing"] == [name] and name not in partial["runs"] and partial["wall_seconds"] is None


BAD = [
    (["nope"], "invalid choice"),
    (["fig2", "--parameterization", "CAXO"], "invalid choice"),
    (["fig2", "--lr-qk", "0"], "--lr-qk must be > 0"),
    (["fig2", "--lr-ov", "inf"], "--lr-ov must be finite"),
    (["fig2", "--lr-ov", "abc"], "--lr-ov must be a number"),
    (["fig2", "--seq-len", "2"], "--seq-len"),
    (["fig2", "--epochs", "0"], "--epochs"),
    (["fig2", "--seeds", "12,x"], "--seeds"),
    (["fig2", "--seeds", "1,1"], "distinct"),
    (["fig2", "--workers", "0"], "--workers"),
    (["fig2", "--epochs", "1", "--seeds", "1", "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1e300"],
     "--connect-timeout must be a number of seconds in (0, 86400]"),
    # an option without effect, refused as predict's --init-scale and boundary's --seeds are
    (["fig2", "--epochs", "1", "--seeds", "1", "--connect-timeout", "5"], "--connect-timeout: only with --scheduler"),
    (["fig2", "--epochs", "1", "--seeds", "1", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"],
     "--workers: not with --scheduler"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1", "--workers",
      "1", "--scheduler", "tcp://127.0.0.1:9", "--output", "OUT"], "--workers: not with --scheduler"),
    (["fig2", "--stop", "never"], "invalid choice"),
    (["fig3", "--alphas", "0.5,1.2"], "--alphas must lie in (0, 1]"),
    (["fig3", "--alphas", "0"], "--alphas"),
    (["fig3", "--batch-size", "30"], "multiple of 4"),
    # a subnormal rate, as fig2's: not run with a rate that has lost digits
    (["fig3", "--lr", "1e-320", "--output", "OUT"], "--lr must be in [2.2250738585072014e-308, "
     "1.7976931348623157e+308] for the float64 step; got 1e-320"),
    (["sweep", "--parameterizations", "CACO,XYZ", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "unknown parameterization"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1,-2", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "--ratios must be > 0"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "nan", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "--ratios must be finite"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1,3,1.0", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "--ratios names 1.0 twice"),                  # not run once with the duplicate dropped
    (["sweep", "--parameterizations", "CACO", "--ratios", "1e308", "--lr-ov", "10", "--seeds", "1",
      "--target-loss", "0.1", "--output", "OUT"], "--ratios 1e+308 x --lr-ov must be in "
      "[2.2250738585072014e-308, 1.7976931348623157e+308]"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "-1",
      "--output", "OUT"], "--target-loss"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "two", "--target-loss", "0.1",
      "--output", "OUT"], "--seeds"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1"],
     "--output"),
    (["fig2", "--output", "FILE/sub"], "cannot take files"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "3.5", "--resume",
      "--output", "OUT"], "--resume: '{OUT}' holds no sweep to continue"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "3.5", "--resume",
      "--output", "EMPTY"], "--resume: '{EMPTY}' holds no sweep to continue"),
    # at most 10**9 SGD steps a run (refused before the output is tried, or the target)
    (["fig2", "--epochs", "1" + "0" * 21, "--output", "FILE/sub"], "--epochs must be an integer in [1, 1000000000]"),
    (["fig2", "--epochs", "1000000", "--steps-per-epoch", "1001", "--output", "FILE/sub"], "--epochs x --steps-per"),
    (["fig3", "--epochs", "100000", "--steps-per-epoch", "100000", "--output", "FILE/sub"], "at most 1000000000"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "5",
      "--max-steps", "10000000000", "--output", "OUT"], "--max-steps must be an integer in [1, 1000000000]"),
    (["reproduce", "--output", "FILE"], "cannot take files"),
]


@pytest.mark.parametrize("argv, match", BAD)
def test_bad_input_one_line_exit_2_no_work(argv, match, tmp_path, capsys):
    (tmp_path / "FILE").write_text("x")
    (tmp_path / "EMPTY").mkdir()
    argv = [a.replace("OUT", str(tmp_path / "out")).replace("FILE", str(tmp_path / "FILE")) for a in argv]
    argv = [a.replace("EMPTY", str(tmp_path / "EMPTY")) for a in argv]
    match = match.format(OUT=tmp_path / "out", EMPTY=tmp_path / "EMPTY")
    t0 = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - t0 < 5                 # no training started
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and match in captured.err
    assert not (tmp_path / "out").exists() and not any((tmp_path / "EMPTY").iterdir())


def test_help_loads_no_scipy_sympy_or_matplotlib():
    """The parser reads its ranges from the modules that own them, which load SciPy, SymPy and
    matplotlib only where they compute: ``--help`` starts in the time NumPy takes to load."""
    code = ("import sys, contextlib, io\n"
            "from numerics.experiments.__main__ import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sympy', 'matplotlib'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_unreachable_scheduler_subprocess():
    t0 = time.perf_counter()
    out = run_cli("fig2", "--scheduler", "tcp://127.0.0.1:9", "--epochs", "1")
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert "scheduler" in out.stderr and time.perf_counter() - t0 < 60


def test_every_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == {"fig2", "fig3", "sweep", "reproduce", "predict", "boundary"}
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.dest != "help":
                assert action.help, (name, action.dest)


# ------------------------------------------------------------------ nothing lost (issue "Nothing lost")

def test_diverged_fig2_writes_valid_json_with_nulls_and_exits_3(tmp_path, capsys):
    out = tmp_path / "f2"
    status = main(["fig2", "--seeds", "1", "--lr-qk", "1e200", "--lr-ov", "1e200", *FIG2_SHORT, "--workers", "1",
                   "--json", "--quiet", "--output", str(out)])
    captured = capsys.readouterr()
    assert status == 3
    d = json.loads(captured.out)                      # valid JSON: no NaN tokens
    assert "NaN" not in captured.out and d == json.loads((out / "fig2.json").read_text())
    run, = d["runs"]
    assert run["status"] == "diverged" and run["final_loss"] is None and run["stopped_epoch"] is None
    assert run["self_attention"] is None and run["other_attention"] is None    # the shares, like the rest
    assert d["heatmap"] is None and d["separability"] == {"mean": None, "std": None}
    assert captured.err.count("\n") == 2 and "seed 1 diverged" in captured.err   # the run, no figure
    assert "Traceback" not in captured.err


def test_the_summary_of_a_diverged_fig2_run_says_null_throughout():
    """Every undefined number of the human-readable summary is ``null`` (the stop epoch was Python's None)."""
    from numerics.experiments.commands.fig2 import format_fig2
    run = {"seed": 1, "steps": 4, "stopped_epoch": None, "final_loss": None, "accuracy": None,
           "relevant_attention": None, "status": "diverged"}
    text = format_fig2({"heatmap": None, "separability": {"mean": None, "std": None}, "runs": [run]})
    assert "seed 1: steps 4, stopped epoch null, final loss null" in text and "None" not in text, text


@pytest.mark.parametrize("command", ["fig2", "sweep"])
def test_a_run_that_overflows_on_its_last_step_is_diverged_not_a_traceback(command, tmp_path, capsys,
                                                                          unsaved_figures):
    """The figures are built from the diverged run (no traceback there either), not saved."""
    short = ["--steps-per-epoch", "2", "--eval-batches", "1", "--workers", "1", "--lr-ov", "1e200", "--quiet"]
    args = (["fig2", "--epochs", "1", "--seeds", "1"] if command == "fig2" else
            ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1",
             "--max-steps", "2", "--no-theory", "--output", str(tmp_path / "s")])
    assert main(args + short) == 3                    # the training loss of its one epoch is finite
    err = capsys.readouterr().err
    assert err.count("diverged (non-finite training loss or parameters after 2 steps)") == 1 and "Traceback" not in err
    assert "float32" not in err                       # a float64 run's divergence is SGD's


def test_a_float32_run_that_diverges_says_the_format_may_be_why(capsys):
    """FAFO on the authors' task at the learning-rate ratio 1e37: float32's scores overflow within 10 steps
    (docs/experiments.md, diverged runs), while the same run in float64 trains; the line says so."""
    argv = ["fig2", "--parameterization", "FAFO", "--lr-qk", "1e35", "--epochs", "1", "--steps-per-epoch", "10",
            "--seeds", "1234", "--eval-batches", "1", "--workers", "1", "--quiet"]
    assert main(argv) == 0 and capsys.readouterr().err == ""
    assert main(argv + ["--dtype", "float32"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed 1234 diverged" in err
    assert err.rstrip().endswith("in float32 this may be the format's range (it ends near 3.4e38), not SGD's: "
                                 "--dtype float64 tells"), err


def test_a_diverged_fig3_alpha_is_reported_and_exits_3(capsys, recwarn):
    assert main(["fig3", "--epochs", "2", "--steps-per-epoch", "2", "--eval-batches", "1", "--alphas", "0.5",
                 "--batch-size", "8", "--lr", "1e300", "--output-circuit", "factorized", "--workers", "1"]) == 3
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "fig3 alpha 0.5 diverged" in err and not recwarn.list and "nan" not in out


def test_degenerate_separability_is_null_not_a_crash(capsys):
    assert main(["fig2", "--epochs", "1", "--steps-per-epoch", "1", "--eval-batches", "1", "--batch-size", "1",
                 "--seq-len", "3", "--seeds", "3", "--json", "--workers", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["separability"] == {"mean": None, "std": None} and d["runs"][0]["status"] == "completed"


def test_diverged_sweep_still_writes_csv_json_and_plot(tmp_path, capsys, sweep_png):
    out = tmp_path / "s"
    status = main(["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "2", "--target-loss", "3",
                   "--lr-ov", "1e200", "--max-steps", "20", "--steps-per-epoch", "10", "--eval-batches", "1",
                   "--workers", "1", "--quiet", "--no-theory", "--output", str(out)])
    err = capsys.readouterr().err
    assert status == 3 and err.count("diverged") == 2 and "Traceback" not in err
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert [r["status"] for r in rows] == ["diverged", "diverged"] and rows[0]["loss"] == ""
    summary = json.loads((out / "sweep.json").read_text())["summary"]
    assert summary[0]["relevant_attention_mean"] is None and (out / "sweep.png").exists()


@pytest.mark.parametrize("output, match", [("", "must name a directory"),
                                           ("/proc/qkov-no/sub", "cannot take files")])
def test_output_is_probed_before_any_work(output, match, capsys):
    t0 = time.perf_counter()
    assert main(["fig2", "--epochs", "500", "--steps-per-epoch", "100", "--stop", "none", "--output", output]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and time.perf_counter() - t0 < 5


def _read_only(path):
    """Make the directory ``path`` refuse new entries: mode 500, and for root, who writes anyway, the
    immutable attribute (``chattr +i``, where the file system and the capability allow it). Returns whether
    it now refuses them."""
    path.chmod(0o500)
    if os.access(path, os.W_OK) and shutil.which("chattr"):
        subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    return not os.access(path, os.W_OK)


def _writable_again(path):
    if shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    path.chmod(0o700)


@pytest.mark.parametrize("kind", ["300-character name", "dangling link", "link loop", "read-only"])
def test_output_that_cannot_take_files_leaves_nothing(kind, tmp_path, capsys):
    before = sorted(tmp_path.iterdir())
    if kind == "300-character name":
        target = tmp_path / "new" / ("x" * 300)
    elif kind == "dangling link":
        (tmp_path / "dangling").symlink_to(tmp_path / "missing" / "dir")
        target = tmp_path / "dangling"
    elif kind == "link loop":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        target = tmp_path / "a" / "sub"
    else:
        (tmp_path / "ro").mkdir()
        if not _read_only(tmp_path / "ro"):
            _writable_again(tmp_path / "ro")
            pytest.skip("running as a user who may write anywhere, with no immutable attribute (chattr +i)")
        target = tmp_path / "ro" / "sub"
    before = sorted(tmp_path.iterdir())
    t0 = time.perf_counter()
    try:
        assert main(["fig3", "--epochs", "200", "--output", str(target)]) == 2
    finally:
        if kind == "read-only":
            _writable_again(tmp_path / "ro")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot take files" in err and time.perf_counter() - t0 < 5
    assert sorted(tmp_path.iterdir()) == before and not (tmp_path / "missing").exists()


TINY_SWEEP = ["sweep", "--parameterizations", "CACO", "--target-loss", "3.5", "--max-steps", "40",
              "--steps-per-epoch", "20", "--eval-batches", "1", "--workers", "1", "--quiet", "--no-theory"]


def test_resume_with_other_settings_is_refused_and_extend_keeps_every_row(tmp_path, capsys, no_figures):
    out = tmp_path / "s"
    assert main([*TINY_SWEEP, "--ratios", "1", "--seeds", "1", "--output", str(out)]) == 0
    before = (out / "results.csv").read_text()
    for extra, named in ((["--ratios", "1,4", "--seeds", "1"], "--ratios"), (["--ratios", "1", "--seeds", "2"], "--seeds")):
        assert main([*TINY_SWEEP, *extra, "--output", str(out), "--resume"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and named in err and "--extend" in err
    assert (out / "results.csv").read_text() == before
    assert main([*TINY_SWEEP, "--ratios", "4", "--seeds", "2", "--output", str(out), "--resume", "--extend"]) == 2
    assert "leaves out 1" in capsys.readouterr().err
    assert main([*TINY_SWEEP, "--ratios", "1,4", "--seeds", "2", "--output", str(out), "--resume", "--extend"]) == 0
    extended = (out / "results.csv").read_text()
    assert extended.splitlines()[1] == before.splitlines()[1]          # the stored row kept
    fresh = tmp_path / "fresh"
    assert main([*TINY_SWEEP, "--ratios", "1,4", "--seeds", "2", "--output", str(fresh)]) == 0
    assert extended == (fresh / "results.csv").read_text()             # the same as one sweep of everything
    # --resume with the stored (extended) settings continues without complaint
    assert main([*TINY_SWEEP, "--ratios", "1,4", "--seeds", "2", "--output", str(out), "--resume"]) == 0


def test_target_loss_not_below_the_initial_loss_is_refused(tmp_path, capsys):
    at = TINY_SWEEP.index("--target-loss") + 1
    for target in ("10", "3.92"):
        t0 = time.perf_counter()
        assert main([*TINY_SWEEP[:at], target, *TINY_SWEEP[at + 1:], "--ratios", "1", "--seeds", "1",
                     "--output", str(tmp_path / "s")]) == 2
        err = capsys.readouterr().err
        assert "initial loss 3.91" in err and err.count("\n") == 1 and time.perf_counter() - t0 < 5
    assert not (tmp_path / "s").exists()


def test_a_damaged_run_body_is_recomputed(tmp_path, capsys, no_figures):
    """A body the store's validation rejects, written so (its digest that of the body: not edited since), is
    recomputed."""
    from numerics.experiments.store import digest
    args = [*TINY_SWEEP, "--ratios", "1,2", "--seeds", "1", "--output", str(tmp_path / "s")]
    assert main(args) == 0
    before = (tmp_path / "s" / "results.csv").read_bytes()
    path, = (tmp_path / "s" / "runs").glob("*.json")
    numbers = {"steps of 401 digits": ("steps", 10 ** 400), "steps over --max-steps": ("steps", 41),
               "a share of 7.5": ("relevant_attention", 7.5), "a share NaN": ("relevant_attention", float("nan")),
               "a negative loss": ("loss", -0.5), "a proxy infinite": ("sufficiency", float("inf"))}
    for damage in ("empty result", "rows not a list", "a row deleted", "a directory", *numbers):
        record = json.loads(path.read_text())
        if damage == "a directory":
            path.unlink()
            path.mkdir()
        else:
            if damage in numbers:                  # json writes NaN and Infinity, and reads them back
                record["result"]["rows"][0].update([numbers[damage]])
            else:
                record["result"] = {"empty result": {}, "rows not a list": {"rows": "oops"},
                                    "a row deleted": {"rows": record["result"]["rows"][1:]}}[damage]
            record["digest"] = digest({"job": record["job"], "result": record["result"]})
            path.write_text(json.dumps(record))
        assert main([*args, "--resume"]) == 0, damage
        assert (tmp_path / "s" / "results.csv").read_bytes() == before, damage
        assert path.is_file() and len(json.loads(path.read_text())["result"]["rows"]) == 2, damage
    assert (path.parent / (path.name + ".not-a-result")).is_dir()    # the directory kept aside, not deleted


def test_dev_full_and_a_closed_pipe_end_without_a_traceback():
    args = [sys.executable, "-m", "numerics.experiments", "fig2", *FIG2_SHORT, "--seeds", "1", "--workers", "1"]
    with open("/dev/full", "w") as full:
        r = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "cannot write" in r.stderr
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=ENV, text=True)
    proc.stdout.close()                                # the reader went away (`| true`)
    err = proc.stderr.read()
    assert proc.wait(120) == 0 and "Traceback" not in err and err == ""


@pytest.mark.parametrize("argv", [
    ["fig2", "--seeds", "0-100000000"],
    ["fig2", "--seq-len", "1000000000"],
    ["fig2", "--batch-size", "1000000000"],
    ["fig2", "--eval-batches", "1000000000"],
    ["fig2", "--steps-per-epoch", "1000000", "--seeds", "1"],
    ["fig3", "--batch-size", "1000000000"],
    ["fig3", "--eval-batches", "1000000000"],
    ["fig3", "--seq-len", "9" * 400],         # a size beyond a float's range is named, not an OverflowError
    ["fig2", "--batch-size", "9" * 400],
    ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "1",
     "--seq-len", "1000000000", "--output", "OUT"],
    # a job stacks every ratio of 3 seeds: 30 runs of 20000-step epochs (8 GiB; 10 runs would fit)
    ["sweep", "--parameterizations", "CACO,CAFO,FACO,FAFO", "--ratios", "1,2,3,4,5,6,7,8,9,10", "--seeds", "3",
     "--target-loss",
     "1", "--steps-per-epoch", "20000", "--workers", "1", "--output", "OUT"],
])
def test_huge_sizes_are_refused_with_the_memory_they_need(argv, tmp_path, monkeypatch, capsys):
    from numerics.experiments import memory
    monkeypatch.setattr(memory, "memory_budget", lambda: 4 << 30)      # a machine with 8 GiB
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    t0 = time.perf_counter()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("memory" in err or "at most" in err) and time.perf_counter() - t0 < 5
    assert not (tmp_path / "out").exists()


def test_smaller_messages_name_the_option(tmp_path, capsys, no_figures):
    help_text = build_parser()._subparsers._group_actions[0].choices["fig3"].format_help()
    assert "default 0.2,0.4,0.6,0.8,1" in " ".join(help_text.split())
    assert main(["fig3", "--batch-size", "5"]) == 2
    assert "--batch-size must be a multiple of 4" in capsys.readouterr().err
    assert main([*TINY_SWEEP, "--ratios", "5e-324", "--seeds", "1", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--ratios 5e-324" in err and "--lr-ov" in err and "lr_qk" not in err and "lr_ov" not in err
    sweep_dir = tmp_path / "s"
    assert main([*TINY_SWEEP, "--ratios", "1", "--seeds", "1", "--output", str(sweep_dir)]) == 0
    (sweep_dir / "runs").mkdir(exist_ok=True)
    assert main(["reproduce", "--collect", "--quick", "--output", str(sweep_dir)]) == 2
    assert "holds a sweep" in capsys.readouterr().err and not (sweep_dir / "report.json").exists()


@pytest.mark.parametrize("argv", [
    ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "2", "--workers", "1",
     "--quiet", "--no-theory"],
    ["fig2", *FIG2_SHORT, "--seeds", "1234", "--workers", "1", "--quiet"],
    ["fig3", "--epochs", "2", "--workers", "1", "--quiet"],
    ["reproduce", "--quick", "--workers", "1", "--quiet"],
    ["reproduce", "--quick", "--collect"]])
def test_an_output_without_matplotlib_is_refused_before_any_work(tmp_path, capsys, monkeypatch, argv):
    """A plain ``pip install`` has no matplotlib (the extra qkov[plot]): a command that would draw the figures
    of its --output says so in one line, exit status 2, before any run and with nothing written."""
    out = tmp_path / "out"
    if "--collect" in argv:
        (out / "runs").mkdir(parents=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # (import matplotlib: ImportError)
    assert main([*argv, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matplotlib" in err and "qkov[plot]" in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == (["out", "runs"] if "--collect" in argv else [])


def test_reproduce_without_matplotlib_is_refused_in_a_fresh_interpreter(tmp_path):
    """As above, where nothing of the package was loaded before (the report's modules load the figures')."""
    code = ("import sys; sys.modules['matplotlib'] = None; from numerics.experiments.__main__ import main; "
            f"sys.exit(main(['reproduce', '--quick', '--output', {str(tmp_path / 'out')!r}]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stderr.count("\n")) == (2, 1) and "qkov[plot]" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [[], *([name] for name in ("fig2", "fig3", "sweep", "reproduce", "predict",
                                                                "boundary"))], ids=lambda c: c[0] if c else "top")
def test_a_failed_help_write_is_the_same_line_for_every_command(command, monkeypatch, capsys):
    """--help into a full disk or a closed stdout (>&-: sys.stdout is None): one line named as every other
    line of the experiments' commands, exit status 1, whichever subcommand."""
    import errno

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass
    for stdout, reason in ((Full(), "No space left on device"), (None, "stdout is closed")):
        monkeypatch.setattr(sys, "stdout", stdout)
        with pytest.raises(SystemExit) as stop:
            main([*command, "--help"])
        monkeypatch.undo()
        assert stop.value.code == 1
        assert capsys.readouterr().err == f"experiments: error: cannot write the output: {reason}\n"
