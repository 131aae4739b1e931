"""Ctrl-C and kill -9 of the commands, run as a user runs them (subprocesses, signals to the process group).

Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends it) ends ``sweep`` (one or two
workers), ``fig2``, ``predict`` and ``numerics.verify`` with one line and exit status 130, keeps the
stored runs, leaves no temporary file, and ``--resume`` continues; a sweep killed with SIGKILL leaves no
"leaked semaphore" warning of the resource tracker. Each run takes several seconds: marked ``slow``."""
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

SWEEP = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,3", "--seeds", "2", "--target-loss", "0.5",
         "--max-steps", "2000", "--steps-per-epoch", "100", "--eval-batches", "1", "--quiet", "--no-theory"]


def start(*args):
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for(condition, process, timeout=120):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def interrupt(process):
    """Ctrl-C as a terminal sends it: SIGINT to the process group. Returns (status, stderr)."""
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def leftovers(out: Path) -> list:
    return [p for p in out.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_in_a_sweep_is_one_line_keeps_the_runs_and_resume_continues(workers, tmp_path):
    out = tmp_path / "s"
    args = ["-m", "numerics.experiments", *SWEEP, "--workers", workers, "--output", str(out)]
    process = start(*args)
    wait_for(lambda: list((out / "runs").glob("*.json")) if (out / "runs").is_dir() else [], process)
    stored = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    status, err = interrupt(process)
    assert status == 130 and err.count("\n") == 1 and "interrupted" in err and "--resume" in err, err
    assert not leftovers(out)
    for name, data in stored.items():
        assert (out / "runs" / name).read_bytes() == data
    resumed = subprocess.run([sys.executable, *args, "--resume"], cwd=ROOT, env=ENV, capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    with open(out / "results.csv") as fh:
        assert len(list(csv.DictReader(fh))) == 8
    for name, data in stored.items():
        assert (out / "runs" / name).read_bytes() == data


COMMANDS = {
    "fig2": ["-m", "numerics.experiments", "fig2", "--epochs", "4000", "--steps-per-epoch", "100", "--workers", "2",
             "--quiet", "--output", "OUT"],
    "predict": ["-m", "numerics.experiments", "predict", "--parameterizations", "CACO,CAFO,FACO,FAFO",
                "--ratios", "1,2,3,4,5,6,7,8", "--target-loss", "0.5,0.1", "--seeds", "20", "--quiet"],
    # every check at nine ratios: about 30 s of work (--quick ends in 2 s, before the interrupt)
    "verify": ["-m", "numerics.verify", "--ratios", "0.01,0.03,0.1,0.3,1,3,10,30,100"],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_is_one_line_and_exit_130(command, tmp_path):
    out = tmp_path / "out"
    process = start(*[str(out) if a == "OUT" else a for a in COMMANDS[command]])
    time.sleep(8)                                   # past the imports, into the work
    assert process.poll() is None, process.communicate()
    status, err = interrupt(process)
    assert status == 130 and err.count("\n") == 1 and "interrupted" in err and "Traceback" not in err, err
    assert not out.exists() or not leftovers(out)


@pytest.mark.slow
def test_a_killed_sweep_leaves_no_leaked_semaphore_warning(tmp_path):
    out = tmp_path / "s"
    process = start("-m", "numerics.experiments", *SWEEP, "--workers", "2", "--output", str(out))
    wait_for(lambda: (out / "runs").is_dir(), process)
    time.sleep(2)                                   # the pool's queues exist
    process.kill()
    _, err = process.communicate(timeout=60)        # (the resource tracker writes to the same stderr)
    assert "leaked semaphore" not in err and "resource_tracker" not in err, err


@pytest.mark.parametrize("command", [["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1",
                                      "--target-loss", "3"], ["reproduce", "--quick"]])
def test_ctrl_c_before_anything_is_kept_says_so(command, tmp_path, monkeypatch, capsys):
    """Ctrl-C while the command still checks its input (waiting for a scheduler, say): the line does not
    send the user to stored runs that do not exist."""
    from numerics.experiments.__main__ import main
    from numerics.experiments.commands import common

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(common, "run_options", interrupted)
    out = tmp_path / "out"
    assert main([*command, "--output", str(out)]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kept nothing yet: rerun the command" in err, err
    assert "--resume" not in err and "are kept" not in err and not out.exists()

