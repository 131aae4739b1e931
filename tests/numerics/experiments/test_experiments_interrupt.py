"""Ctrl-C, SIGTERM and kill -9 of the commands, run as a user runs them (subprocesses, real signals).

Ctrl-C (SIGINT to the whole foreground process group, as a terminal sends it) and SIGTERM (to the process
group, as ``timeout``, Slurm and systemd send it, or to the process alone, as ``kill`` does) end ``sweep``
(one or two workers), ``fig2``, ``predict``, ``numerics.verify`` and ``derivations.latex`` with one line and
exit status 130 or 143, keep the stored runs, leave no temporary file and no process behind, and
``--resume`` (predict: the same command, with its ``--store``) continues; a sweep killed with SIGKILL leaves
no "leaked semaphore" warning of the resource tracker. Each run takes several seconds: marked ``slow``."""
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


#: how a command is stopped -> (signal, sent to the whole process group, exit status, word of the one line)
STOPS = {"ctrl-c": (signal.SIGINT, True, 130, "interrupted"),       # a terminal's Ctrl-C
         "timeout": (signal.SIGTERM, True, 143, "terminated"),      # timeout, Slurm, systemd
         "kill": (signal.SIGTERM, False, 143, "terminated")}        # kill PID


def stop(process, how="ctrl-c"):
    """Stop ``process`` as ``how`` (:data:`STOPS`) does; wait until its process group is gone (workers, fork
    server, resource tracker). Returns (status, stderr)."""
    signum, group, _, _ = STOPS[how]
    (os.killpg if group else os.kill)(process.pid, signum)
    _, err = process.communicate(timeout=60)
    deadline = time.monotonic() + 20
    while group_alive(process.pid):
        assert time.monotonic() < deadline, f"processes of the stopped command survive: {group_alive(process.pid)}"
        time.sleep(0.1)
    return process.returncode, err


def group_alive(pgid) -> list:
    """The running processes (not zombies) of process group ``pgid``."""
    alive = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if entry.name.isdigit() and fields[0] != "Z" and int(fields[2]) == pgid:
            alive.append(int(entry.name))
    return alive


def leftovers(out: Path) -> list:
    return [p for p in out.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.slow
@pytest.mark.parametrize("workers,how", [("1", "ctrl-c"), ("2", "ctrl-c"), ("1", "timeout"), ("2", "timeout"),
                                         ("2", "kill")])
def test_ctrl_c_or_sigterm_in_a_sweep_is_one_line_keeps_the_runs_and_resume_continues(workers, how, tmp_path):
    out = tmp_path / "s"
    args = ["-m", "numerics.experiments", *SWEEP, "--workers", workers, "--output", str(out)]
    process = start(*args)
    wait_for(lambda: list((out / "runs").glob("*.json")) if (out / "runs").is_dir() else [], process)
    stored = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    status, err = stop(process, how)
    _, _, code, word = STOPS[how]
    assert status == code and err.count("\n") == 1 and f"experiments: {word}; " in err and "--resume" in err, err
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


PREDICT = ["-m", "numerics.experiments", "predict", "--parameterizations", "CACO,FAFO", "--ratios", "1,2,3,4,5,6,7,8",
           "--target-loss", "0.5,0.1", "--seeds", "5", "--json", "--quiet"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_in_predict_keeps_its_finished_flows_and_the_same_command_completes_them(workers, tmp_path):
    """``predict --store``: Ctrl-C keeps the flows finished (one line saying where), and the same command runs
    only the others and prints what an uninterrupted predict prints, to the bit."""
    store = tmp_path / "flows"
    args = [*PREDICT, "--workers", workers, "--store", str(store)]
    process = start(*args)
    wait_for(lambda: list(store.glob("*.json")) if store.is_dir() else [], process)
    status, err = stop(process)
    stored = {p.name: p.read_bytes() for p in store.glob("*.json")}
    assert status == 130 and err.count("\n") == 1 and f"kept in {store}: rerun the same command" in err, err
    assert 0 < len(stored) < 16 and not leftovers(store)
    resumed, whole = (subprocess.run([sys.executable, *argv], cwd=ROOT, env=ENV, capture_output=True, text=True,
                                     timeout=600) for argv in (args, PREDICT))
    assert resumed.returncode == whole.returncode == 0 and resumed.stdout == whole.stdout, resumed.stderr
    assert len(list(store.glob("*.json"))) == 16
    for name, data in stored.items():
        assert (store / name).read_bytes() == data


COMMANDS = {
    "fig2": ["-m", "numerics.experiments", "fig2", "--epochs", "4000", "--steps-per-epoch", "100", "--workers", "2",
             "--quiet", "--output", "OUT"],
    "predict": ["-m", "numerics.experiments", "predict", "--parameterizations", "CACO,CAFO,FACO,FAFO",
                "--ratios", "1,2,3,4,5,6,7,8", "--target-loss", "0.5,0.1", "--seeds", "20", "--quiet"],
    # every check at nine ratios: about 30 s of work (--quick ends in 2 s, before the interrupt)
    "verify": ["-m", "numerics.verify", "--ratios", "0.01,0.03,0.1,0.3,1,3,10,30,100"],
}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "timeout"])
@pytest.mark.parametrize("command", COMMANDS)
def test_ctrl_c_or_sigterm_is_one_line_and_exit_130_or_143(command, how, tmp_path):
    out = tmp_path / "out"
    process = start(*[str(out) if a == "OUT" else a for a in COMMANDS[command]])
    time.sleep(8)                                   # past the imports, into the work
    assert process.poll() is None, process.communicate()
    status, err = stop(process, how)
    _, _, code, word = STOPS[how]
    assert status == code and err.count("\n") == 1 and f": {word}" in err and "Traceback" not in err, err
    assert not out.exists() or not leftovers(out)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["timeout", "kill"])
def test_sigterm_in_derivations_latex_is_one_line_and_leaves_nothing(how, tmp_path):
    """``derivations.latex`` stopped while it derives (a few seconds): one line, exit 143, the output
    directory it created removed again."""
    out = tmp_path / "out"
    process = start("-m", "derivations.latex", "--output", str(out))
    time.sleep(2)                                   # SymPy loaded or loading, the results not all derived
    assert process.poll() is None, process.communicate()
    status, err = stop(process, how)
    assert status == 143 and err == "latex: terminated\n", err
    assert not out.exists()


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



def test_ctrl_c_in_reproduce_collect_does_not_say_it_completes_runs(tmp_path, monkeypatch, capsys):
    """``reproduce --collect`` trains nothing: stopped while it writes the report, its line sends the user to
    write the report again, not to complete runs by rerunning it."""
    from numerics.experiments import reproduce
    from numerics.experiments.__main__ import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    (tmp_path / "out" / "runs").mkdir(parents=True)
    monkeypatch.setattr(reproduce, "collect", interrupted)
    assert main(["reproduce", "--collect", "--output", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rerun the same command to write their report" in err, err


@pytest.mark.parametrize("name", ["line\nbreak", "tab\there", "carriage\rreturn"])
def test_the_line_of_ctrl_c_is_one_line_whatever_the_output_is_named(name, tmp_path, monkeypatch, capsys):
    """The line says where the finished runs are kept: an --output whose name holds a line break (or another
    character that is not printable) is shown quoted, so the line stays one line."""
    from numerics.experiments.__main__ import main
    from numerics.experiments.commands import common

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(common, "run_options", interrupted)
    out = tmp_path / name
    out.mkdir()
    (out / "sweep-settings.json").write_text("{}")       # a sweep was begun there: its runs are kept
    assert main(["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "3",
                 "--output", str(out)]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n") and "\r" not in err and "\t" not in err, repr(err)
    assert f"kept in {str(out / 'runs')!r}: rerun the same command with --resume" in err, err
