"""End to end: ``python -m numerics.experiments`` on local processes and on a Dask cluster.

* ``fig2`` prints and ``sweep`` writes the same bytes with ``--workers 1``,
  ``--workers 2`` and ``--scheduler`` of a real ``distributed.LocalCluster``;
* a sweep on two worker processes killed with SIGKILL after its first stored
  run leaves no worker behind, and ``--resume`` completes it to a
  ``results.csv`` identical to an uninterrupted sweep, without duplicate rows;
* a scheduler address where nothing (or something else) listens, or of another
  protocol: one line on stderr, exit status 2, nothing written, well within 60 s;
* a scheduler lost during the work: one line saying what is kept.

Tiny schedules (a few hundred SGD steps) keep the file to a few seconds of work.
"""
import csv
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from numerics.experiments.__main__ import main

ROOT = Path(__file__).resolve().parents[3]

FIG2 = ["fig2", "--parameterization", "FAFO", "--epochs", "2", "--steps-per-epoch", "10", "--eval-batches", "2",
        "--seeds", "1234,1235,1236", "--json", "--quiet"]
SWEEP = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,3,9", "--seeds", "2", "--target-loss", "0.5",
         "--max-steps", "400", "--steps-per-epoch", "100", "--eval-batches", "1", "--quiet"]


def _square_job(job: dict) -> dict:
    """A toy job: ``{"square": x**2}``."""
    return {"square": job["x"] ** 2}


def cli(*args, env=None, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "numerics.experiments", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


BACKENDS = {"1 worker": ["--workers", "1"], "2 workers": ["--workers", "2"], "dask": None}


def test_fig2_same_bytes_on_every_backend(cluster, capsys):
    printed = {}
    for name, extra in BACKENDS.items():
        extra = extra or ["--scheduler", cluster.scheduler_address]
        assert main([*FIG2, *extra]) == 0, name
        printed[name] = capsys.readouterr().out
    assert printed["2 workers"] == printed["1 worker"]  # the whole JSON: every float bit for bit
    assert printed["dask"] == printed["1 worker"]
    assert '"seed": 1236' in printed["dask"]


def processes_tagged(tag):
    """PIDs of live processes whose environment holds ``tag`` (the CLI, its forkserver and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag in (entry / "environ").read_bytes() and \
                        (entry / "status").read_text().split("State:")[1].split()[0] != "Z":
                    found.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the worker processes")
def test_sweep_same_files_uninterrupted_killed_and_resumed_and_on_dask(cluster, tmp_path, capsys):
    """One reference sweep on 1 worker; the same sweep on 2 workers SIGKILLed after its first stored run then
    resumed, and on the Dask cluster: the same results.csv and sweep.json bytes.

    Slow: three sweeps and a cluster. The default selection keeps one worker killed and resumed
    (``test_sweep_resume_after_kill_equals_uninterrupted``) and the same bytes on every backend
    (``test_fig2_same_bytes_on_every_backend``)."""
    args = SWEEP
    reference = tmp_path / "reference"
    assert main([*args, "--output", str(reference), "--workers", "1"]) == 0

    killed = tmp_path / "killed"
    tag = f"QKOV_SCALEOUT_TEST={uuid.uuid4().hex}"
    proc = cli(*args, "--output", str(killed), "--workers", "2", env=dict([tag.split("=")]))
    deadline = time.monotonic() + 120
    while not list((killed / "runs").glob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, "the sweep finished (or failed) before it could be killed"
    assert len(processes_tagged(tag.encode())) >= 3, "expected the CLI and its two workers"
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    saved = len(list((killed / "runs").glob("*.json")))
    assert 1 <= saved < 4 and not (killed / "results.csv").exists(), f"{saved} runs saved"
    deadline = time.monotonic() + 20
    while processes_tagged(tag.encode()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_tagged(tag.encode()) == [], "worker processes outlived the killed sweep"

    assert main([*args, "--output", str(killed), "--workers", "2", "--resume"]) == 0
    assert (killed / "results.csv").read_bytes() == (reference / "results.csv").read_bytes()
    rows = list(csv.DictReader(open(killed / "results.csv")))
    keys = [(r["parameterization"], r["ratio"], r["seed"]) for r in rows]
    assert len(keys) == len(set(keys)) == 12
    assert len(list((killed / "runs").glob("*.json"))) == 4  # one job per (parameterization, seed)
    assert not list((killed / "runs").glob(".*"))  # no temporary files left over

    dask = tmp_path / "dask"
    assert main([*args, "--output", str(dask), "--scheduler", cluster.scheduler_address]) == 0
    for filename in ("results.csv", "sweep.json"):
        assert (dask / filename).read_bytes() == (reference / filename).read_bytes(), filename


def one_line_exit_2(proc, started, output=None):
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert out == "" and err.count("\n") == 1 and "--scheduler" in err, err
    assert time.monotonic() - started < 60
    if output is not None:
        assert not output.exists()  # before any work
    return err


def test_nothing_listening_at_the_scheduler_address(tmp_path):
    started = time.monotonic()
    err = one_line_exit_2(cli(*SWEEP, "--output", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:1"),
                          started, tmp_path / "out")
    assert "tcp://127.0.0.1:1" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_silent_listener_at_the_scheduler_address(tmp_path):
    """Something listens but never speaks Dask: ``distributed.Client`` alone would wait forever.

    Slow only because the CLI gives a scheduler its full 10 s to answer; the
    same refusal with a 1-second timeout is checked by the runner's tests.
    """
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        address = "tcp://127.0.0.1:%d" % server.getsockname()[1]
        started = time.monotonic()
        err = one_line_exit_2(cli(*SWEEP, "--output", str(tmp_path / "out"), "--scheduler", address),
                              started, tmp_path / "out")
    assert address in err and "no Dask handshake" in err


CLUSTER_SCRIPT = """
import time, distributed
if __name__ == "__main__":
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", protocol="tcp") as c:
        print(c.scheduler_address, flush=True)
        time.sleep(300)
"""


LOST_SWEEP = ["sweep", "--parameterizations", "CACO,FACO", "--ratios", "1,3", "--seeds", "2", "--target-loss",
              "0.5", "--max-steps", "300", "--steps-per-epoch", "100", "--eval-batches", "1", "--quiet", "--no-theory"]


@pytest.mark.slow
def test_a_scheduler_lost_mid_sweep_is_one_line_and_resume_completes_it(tmp_path):
    """Slow: a cluster in another process and three sweeps. The default selection keeps the
    runner's ``SchedulerLost`` when no worker is left and the sweep's one line for it
    (``test_a_scheduler_without_workers_is_one_line_after_connect_timeout``)."""
    pytest.importorskip("distributed")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", CLUSTER_SCRIPT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        address = owner.stdout.readline().strip()
        assert address.startswith("tcp://")
        out = tmp_path / "lost"
        proc = cli(*LOST_SWEEP, "--output", str(out), "--scheduler", address)
        deadline = time.monotonic() + 120
        while not list((out / "runs").glob("*.json")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert proc.poll() is None, "the sweep ended before the scheduler could be lost"
    finally:
        os.killpg(owner.pid, signal.SIGKILL)          # the scheduler and its worker: the process group we started
        owner.wait()
    started = time.monotonic()
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 1 and err.count("\n") == 1, err
    assert "was lost" in err or "cancelled" in err
    assert f"kept in {out}/runs" in err and "--resume" in err and time.monotonic() - started < 60
    saved = len(list((out / "runs").glob("*.json")))
    assert 1 <= saved < 4 and not (out / "results.csv").exists()
    assert main([*LOST_SWEEP, "--output", str(out), "--workers", "1", "--resume"]) == 0
    reference = tmp_path / "reference"
    assert main([*LOST_SWEEP, "--output", str(reference), "--workers", "1"]) == 0
    assert (out / "results.csv").read_bytes() == (reference / "results.csv").read_bytes()


@pytest.mark.slow
def test_a_scheduler_without_workers_is_one_line_after_connect_timeout(tmp_path):
    """Issue 25.15: no worker connected: one line saying so after --connect-timeout seconds, exit 2, nothing
    written; the runner gives up the same way (SchedulerLost) when the workers are gone by the time it sends."""
    distributed = pytest.importorskip("distributed")
    from numerics.experiments.cluster import SchedulerLost
    from numerics.experiments.runner import run_jobs

    with distributed.LocalCluster(n_workers=0, processes=False, host="127.0.0.1", dashboard_address=":0",
                                  protocol="tcp") as empty:
        started = time.monotonic()
        err = one_line_exit_2(cli(*SWEEP, "--output", str(tmp_path / "out"), "--scheduler", empty.scheduler_address,
                                  "--connect-timeout", "1"), started, tmp_path / "out")
        assert "no worker is connected" in err and "--connect-timeout" in err and "Warning" not in err
        t0 = time.monotonic()
        with pytest.raises(SchedulerLost, match="no worker is connected"):
            run_jobs(_square_job, [{"x": 1.0}], scheduler=empty.scheduler_address, progress=False,
                     connect_timeout=1)
        assert time.monotonic() - t0 < 30


@pytest.mark.slow
def test_the_workers_gone_mid_run_is_a_lost_scheduler_after_connect_timeout(tmp_path):
    """Every worker gone while runs are still to do (killed, or the cluster scaled to none): the runner
    gives up with SchedulerLost after --connect-timeout seconds without one, instead of waiting for a
    worker without end and without a word."""
    import threading

    distributed = pytest.importorskip("distributed")
    from _jobs import slow_job
    from numerics.experiments.cluster import SchedulerLost
    from numerics.experiments.runner import run_jobs

    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", protocol="tcp") as cluster:
        raised = []

        def run():
            try:
                run_jobs(slow_job, [{"x": 1, "sleep": 3, "pids": str(tmp_path)}], scheduler=cluster.scheduler_address,
                         progress=False, connect_timeout=2)
            except SchedulerLost as exc:
                raised.append(exc)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("pid-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.scale(0)                                   # the job's worker goes, no other comes
        thread.join(60)
        assert not thread.is_alive(), "the runner waits for a worker without end"
    assert raised and "no worker has been connected" in str(raised[0]) and "for 2 s" in str(raised[0])


@pytest.mark.slow
def test_a_run_whose_every_dask_worker_dies_is_a_lost_worker():
    """Slow: a cluster of worker processes that die. A run that kills every worker that runs it (the
    kernel's out-of-memory kill) is given up by the scheduler: WorkerLost (the command's one line), not
    one job's JobError (a traceback)."""
    distributed = pytest.importorskip("distributed")
    from _jobs import killed_job
    from numerics.experiments.pool import WorkerLost
    from numerics.experiments.runner import run_jobs

    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", protocol="tcp") as cluster:
        with pytest.raises(WorkerLost, match="every worker that ran it died"):
            run_jobs(killed_job, [{"x": 3, "kill": True}], scheduler=cluster.scheduler_address, progress=False,
                     connect_timeout=30)


@pytest.mark.parametrize("address, match", [("tls://127.0.0.1:1", "tls:// schedulers are not supported"),
                                            ("tcp://127.0.0.1:1/", "nothing after the port")])
def test_scheduler_address_refused_up_front(address, match, capsys):
    t0 = time.perf_counter()
    assert main(["fig2", "--epochs", "1", "--scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and match in err and time.perf_counter() - t0 < 5


def test_a_listener_answering_garbage_is_refused_quickly(capsys):
    import socket
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def answer():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"\x10" + bytes(7) + b"garbage!" * 8)
            conn.close()
    threading.Thread(target=answer, daemon=True).start()
    try:
        t0 = time.perf_counter()
        assert main(["fig2", "--epochs", "1", "--scheduler", "tcp://127.0.0.1:%d" % server.getsockname()[1]]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not the Dask protocol" in err and time.perf_counter() - t0 < 15
    finally:
        server.close()


def test_a_lost_scheduler_is_one_line_saying_what_is_kept(monkeypatch, capsys):
    from numerics.experiments import cluster

    def prepare(args):
        def work():
            raise cluster.SchedulerLost("the Dask scheduler at tcp://127.0.0.1:9 was lost")
        return work, str
    import numerics.experiments.__main__ as cli
    monkeypatch.setitem(cli.COMMANDS, "sweep", prepare)
    assert main([*SWEEP, "--output", "OUT"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kept in OUT/runs" in err and "--resume" in err
    monkeypatch.setitem(cli.COMMANDS, "fig2", prepare)
    assert main(["fig2"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fig2 keeps no partial results: rerun" in err


def test_a_lost_worker_process_is_one_line_saying_what_is_kept(monkeypatch, capsys):
    from numerics.experiments.pool import WorkerLost

    def prepare(args):
        def work():
            raise WorkerLost("a local worker process 12 ended abruptly, killed by SIGKILL")
        return work, str
    import numerics.experiments.__main__ as cli
    monkeypatch.setitem(cli.COMMANDS, "sweep", prepare)
    assert main([*SWEEP, "--output", "OUT"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "killed by SIGKILL" in err and "kept in OUT/runs" in err and "--resume" in err


def test_a_scheduler_without_the_distributed_extra_is_one_line_naming_it(monkeypatch, capsys):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else
                        find_spec(name, *a))
    assert main(["fig2", "--epochs", "1", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--scheduler needs the optional dependency distributed" in err
    assert "pip install 'qkov[distributed]'" in err
