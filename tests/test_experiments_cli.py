"""python -m numerics.experiments: JSON shapes, sweep CSV and resume after a kill, bad input.

The Dask and multi-process paths of the same commands are tested end to end in
tests/test_experiments_scaleout.py (bitwise equality across backends)."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numerics.experiments import sweep as sweep_mod
from numerics.experiments.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
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
    assert sum(map(sum, d["heatmap"])) == pytest.approx(100)
    assert set(d["separability"]) == {"mean", "std"}
    assert [r["seed"] for r in d["runs"]] == [1234, 1235]
    for r in d["runs"]:
        assert {"seed", "steps", "stopped_epoch", "loss_log", "final_loss", "accuracy"} <= set(r)
        assert r["steps"] == 20 and r["stopped_epoch"] is None and len(r["loss_log"]) == 1
    assert d["settings"]["parameterization"] == "CAFO" and d["settings"]["stop"] == "authors"


def test_fig2_defaults_are_the_published_run():
    from numerics.experiments import sgd
    args = build_parser().parse_args(["fig2", "--parameterization", "CAFO"])
    assert (args.lr_qk, args.lr_ov, args.seq_len, args.batch_size, args.stop, args.init) == \
        ("0.01", "0.01", "64", "32", "authors", "authors")
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


SWEEP = ["sweep", "--parameterizations", "CACO,FAFO,CACO", "--ratios", "1,4,1", "--seeds", "2",
         "--target-loss", "3.5", "--max-steps", "300", "--steps-per-epoch", "50", "--eval-batches", "2",
         "--quiet"]


def test_sweep_csv_json_plot_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "s"
    assert main([*SWEEP, "--output", str(out), "--workers", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(sweep_mod.CSV_COLUMNS)
    keys = [(r["parameterization"], float(r["ratio"]), int(r["seed"])) for r in rows]
    assert keys == [(p, r, s) for p in ("CACO", "FAFO") for r in (1.0, 4.0) for s in (1234, 1235)]
    assert [(s["parameterization"], s["ratio"]) for s in d["summary"]] == \
        [("CACO", 1.0), ("CACO", 4.0), ("FAFO", 1.0), ("FAFO", 4.0)]
    assert set(d["spearman"]) == {"CACO", "FAFO"} and "rho" in d["spearman"]["CACO"]
    assert (out / "sweep.png").stat().st_size > 1000 and (out / "sweep.pdf").exists()
    # a second run without --resume refuses, before any work
    assert main([*SWEEP, "--output", str(out), "--workers", "1"]) == 2
    assert "--resume" in capsys.readouterr().err


def test_sweep_resume_after_kill_equals_uninterrupted(tmp_path):
    args = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,3,9", "--seeds", "2", "--target-loss",
            "0.5", "--max-steps", "600", "--steps-per-epoch", "100", "--eval-batches", "1", "--workers", "1",
            "--quiet"]
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
    assert still_running and 1 <= n_saved < 6 and not (killed / "results.csv").exists()
    assert main([*args, "--output", str(killed), "--resume"]) == 0
    assert (killed / "results.csv").read_bytes() == (ref / "results.csv").read_bytes()
    assert len(list((killed / "runs").glob("*.json"))) == 6


def test_reproduce_quick_writes_report_and_figures(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["reproduce", "--quick", "--output", str(out), "--workers", "1", "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["runs"]) == {"FAFO", "FACO", "CAFO", "CACO", "CACO_fast_qk", "CACO_ramp", "FAFO_fast_qk",
                                   "FAFO_ramp", "fig3_collapsed", "fig3_factorized"}
    assert len(report["runs"]["CAFO"]["runs"]) == 5 and report["runs"]["CACO_fast_qk"]["settings"]["seq_len"] == 128
    for name in ("fig2_heatmaps", "fig3_fixed_attention"):
        assert (out / f"{name}.png").stat().st_size > 1000 and (out / f"{name}.pdf").exists()
    assert "## Figure 2" in (out / "report.md").read_text() and report["missing"] == []
    # --collect rebuilds the same report from the store; a lost run is named as missing
    assert main(["reproduce", "--quick", "--collect", "--output", str(out), "--quiet"]) == 0
    again = json.loads((out / "report.json").read_text())
    assert again["runs"] == report["runs"] and again["wall_seconds"] is None
    from numerics.experiments import reproduce
    from numerics.experiments.runner import ResultStore
    name, job = reproduce.published_jobs(quick=True)[0]
    ResultStore(out / "runs").path(json.loads(json.dumps(job))).unlink()
    assert main(["reproduce", "--quick", "--collect", "--output", str(out), "--quiet"]) == 0
    partial = json.loads((out / "report.json").read_text())
    assert partial["missing"] == [name] and name not in partial["runs"]


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
    (["fig2", "--stop", "never"], "invalid choice"),
    (["fig3", "--alphas", "0.5,1.2"], "alpha"),
    (["fig3", "--alphas", "0"], "alpha"),
    (["fig3", "--batch-size", "30"], "multiple of 4"),
    (["sweep", "--parameterizations", "CACO,XYZ", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "unknown parameterization"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1,-2", "--seeds", "1", "--target-loss", "0.1",
      "--output", "OUT"], "ratio"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "-1",
      "--output", "OUT"], "--target-loss"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "two", "--target-loss", "0.1",
      "--output", "OUT"], "--seeds"),
    (["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "0.1"],
     "--output"),
    (["fig2", "--output", "FILE/sub"], "cannot take files"),
    (["reproduce", "--output", "FILE"], "cannot take files"),
]


@pytest.mark.parametrize("argv, match", BAD)
def test_bad_input_one_line_exit_2_no_work(argv, match, tmp_path, capsys):
    (tmp_path / "FILE").write_text("x")
    argv = [a.replace("OUT", str(tmp_path / "out")).replace("FILE", str(tmp_path / "FILE")) for a in argv]
    t0 = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - t0 < 5                 # no training started
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and match in captured.err
    assert not (tmp_path / "out").exists()


def test_unreachable_scheduler_subprocess():
    t0 = time.perf_counter()
    out = run_cli("fig2", "--scheduler", "tcp://127.0.0.1:9", "--epochs", "1")
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert "scheduler" in out.stderr and time.perf_counter() - t0 < 60


def test_every_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == {"fig2", "fig3", "sweep", "reproduce"}
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.dest != "help":
                assert action.help, (name, action.dest)
