"""numerics.experiments.runner: job order and bitwise equality across backends, the result store, errors.

The job functions live in ``tests/_jobs.py`` because worker processes and
Dask workers import them by module name.
"""
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from numerics.experiments.cluster import check_scheduler
from numerics.experiments.runner import JobError, run_jobs
from numerics.experiments.store import STORE_FORMAT, EditedRecord, ResultStore, job_key

from _jobs import counted_job, epoch_job, failing_job, failing_job_with_progress, killed_job, sgd_job

ROOT = Path(__file__).resolve().parents[3]
SGD_JOBS = [{"seed": seed, "steps": 60, "lr": 0.5} for seed in (7, 3, 11, 5)]


@pytest.fixture(scope="module")
def local_results():
    return run_jobs(sgd_job, SGD_JOBS, workers=1, progress=False)


def calls(log):
    return Path(log).read_text().split() if Path(log).exists() else []


# ------------------------------------------------------------------ keys

def test_job_key_is_canonical_and_pinned():
    assert job_key({"a": 1, "b": [0.1, "x"]}) == job_key({"b": [0.1, "x"], "a": 1})
    assert job_key({"a": 1}) != job_key({"a": 1.0})
    # Pinned: the SHA-256 of the canonical text, computed independently.
    import hashlib
    assert job_key({"seed": 1234, "lr": 0.01}) == hashlib.sha256(b'{"lr":0.01,"seed":1234}').hexdigest()


@pytest.mark.parametrize("job", [[1, 2], {"x": float("nan")}, {"x": object()}, {"x": float("inf")}])
def test_job_key_rejects_non_json(job):
    with pytest.raises(ValueError, match="job must be a dict"):
        job_key(job)


# ------------------------------------------------------------------ local backends

def test_results_in_job_order_and_bitwise_equal_for_one_and_two_workers(local_results):
    pooled = run_jobs(sgd_job, SGD_JOBS, workers=2, progress=False)
    assert [r["seed"] for r in local_results] == [j["seed"] for j in SGD_JOBS]
    assert json.dumps(pooled) == json.dumps(local_results)  # every float, bit for bit (repr round-trips)
    assert local_results[0]["losses"][-1] < local_results[0]["losses"][0]  # the job does real work


def test_duplicate_jobs_run_once(tmp_path):
    log = tmp_path / "calls.txt"
    jobs = [{"x": 2, "log": str(log)}, {"x": 3, "log": str(log)}, {"log": str(log), "x": 2}]
    assert run_jobs(counted_job, jobs, workers=1, progress=False) == [
        {"x": 2, "square": 4}, {"x": 3, "square": 9}, {"x": 2, "square": 4}]
    assert sorted(calls(log)) == ["2", "3"]


def test_no_jobs_no_work():
    assert run_jobs(dict, [], workers=2, progress=False) == []


def test_results_are_json_normalised():
    # A tuple comes back as a list whichever backend ran the job: all backends agree with the store.
    assert run_jobs(dict, [{"t": (1, 2)}], workers=1, progress=False) == [{"t": [1, 2]}]


# ------------------------------------------------------------------ store

def test_store_resumes_without_rerunning_and_rebuilds_damaged_files(tmp_path):
    log = tmp_path / "calls.txt"
    store = ResultStore(tmp_path / "store")
    jobs = [{"x": x, "log": str(log)} for x in range(6)]
    first = run_jobs(counted_job, jobs[:4], workers=2, store=store, progress=False)
    assert sorted(calls(log)) == ["0", "1", "2", "3"] and len(store) == 4
    # Damage three files in three ways; a fourth file holds another job's record under this job's name.
    other = store.path(jobs[0]).read_text()
    store.path(jobs[0]).write_text('{"format": "' + STORE_FORMAT + '", "key"')        # truncated
    store.path(jobs[1]).write_text(json.dumps({"format": STORE_FORMAT, "result": 1}))  # wrong shape
    store.path(jobs[2]).write_bytes(b"\xff\xfe garbage")                               # not text
    store.path(jobs[3]).write_text(other)
    assert [store.get(job) for job in jobs[:4]] == [None] * 4 and len(store) == 0
    log.unlink()
    again = run_jobs(counted_job, jobs, workers=2, store=store, progress=False)
    assert sorted(calls(log)) == ["0", "1", "2", "3", "4", "5"]
    assert again[:4] == first and len(store) == 6
    log.unlink()
    assert run_jobs(counted_job, jobs, workers=2, store=store, progress=False) == again
    assert calls(log) == []  # everything stored: nothing rerun
    # Self-describing, data only; no temporary files left behind.
    record = json.loads(store.path(jobs[5]).read_text())
    sealed = json.dumps({"job": jobs[5], "result": {"x": 5, "square": 25}}, sort_keys=True, separators=(",", ":"))
    assert record == {"format": STORE_FORMAT, "key": job_key(jobs[5]), "job": jobs[5],
                      "result": {"x": 5, "square": 25}, "digest": hashlib.sha256(sealed.encode()).hexdigest()}
    assert sorted(p.name for p in store.directory.iterdir()) == sorted(f"{job_key(j)}.json" for j in jobs)
    assert sorted(job["x"] for job, _ in store.items()) == list(range(6))


def test_store_writes_atomically(tmp_path, monkeypatch):
    store = ResultStore(tmp_path)
    job = {"x": 1}
    store.put(job, {"v": 1})

    def crash(*args):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        store.put(job, {"v": 2})
    assert store.get(job) == {"v": 1}  # the old file is untouched, not half-overwritten
    assert [p.name for p in tmp_path.iterdir()] == [f"{job_key(job)}.json"]  # temporary file removed


def test_store_removes_temporary_files_of_dead_writers(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()  # reaped: its process id no longer runs
    host = socket.gethostname()
    dead = tmp_path / f".0123456789abcdef~{host}~{finished.pid}~x.tmp"
    alive = tmp_path / f".0123456789abcdef~{host}~{os.getpid()}~y.tmp"
    other_host = tmp_path / f".0123456789abcdef~not-{host}~{finished.pid}~z.tmp"
    for path in (dead, alive, other_host):
        path.write_text("{")
    ResultStore(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other_host.name])


def test_store_under_a_file_is_an_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="not a directory"):
        ResultStore(tmp_path / "f" / "store")
    with pytest.raises(ValueError, match="store"):
        run_jobs(dict, [{}], workers=1, store=12, progress=False)


def test_a_failing_job_is_named_and_finished_results_are_kept(tmp_path):
    store = ResultStore(tmp_path)
    jobs = [{"x": x} for x in range(5)]
    with pytest.raises(JobError, match=r'job 3 \{"x":3\} failed: ZeroDivisionError: x is 3') as info:
        run_jobs(failing_job, jobs, workers=1, store=store, progress=False)
    assert isinstance(info.value.__cause__, ZeroDivisionError) and info.value.job == {"x": 3}
    assert [store.get(job) for job in jobs] == [{"x": 0}, {"x": 1}, {"x": 2}, None, None]
    with pytest.raises(JobError, match=r'job 1 \{"x":3\} failed: ZeroDivisionError') as info:
        run_jobs(failing_job, [{"x": x} for x in range(2, 8)], workers=2, progress=False)
    assert "x is 3" in str(info.value.__cause__)  # with the worker's traceback chained


def test_a_worker_process_killed_is_a_lost_worker_and_finished_results_are_kept(tmp_path):
    """A worker killed by the kernel (out of memory) breaks the pool: WorkerLost naming the signal, not a
    JobError of one job's, and the jobs that finished before it are stored."""
    from numerics.experiments.pool import WorkerLost

    store = ResultStore(tmp_path)
    jobs = [{"x": 0}, {"x": 1}, {"x": 2}, {"x": 3, "kill": True, "sleep": 1.0}]
    with pytest.raises(WorkerLost, match="ended abruptly, killed by SIGKILL"):
        run_jobs(killed_job, jobs, workers=2, store=store, progress=False)
    assert [store.get(job) for job in jobs] == [{"x": 0}, {"x": 1}, {"x": 2}, None]


@pytest.mark.parametrize("exitcodes, says", [
    ((-signal.SIGTERM, -signal.SIGKILL, None), " 12 ended abruptly, killed by SIGKILL "),   # the pool's SIGTERM: not it
    ((255, -signal.SIGKILL), " 12 ended abruptly, killed by SIGKILL "),     # one that ended after it: not it
    ((0, 3), " 12 ended abruptly, exit status 3 "),
    ((-signal.SIGTERM,), " 11 ended abruptly, killed by SIGTERM "),        # SIGTERM from outside, alone
    ((-77,), " 11 ended abruptly, killed by signal 77 "),
    ((None, 0), " process ended abruptly ")])
def test_a_lost_worker_is_named_by_how_it_ended(exitcodes, says):
    """Which worker the message names: the one a signal killed, else one that ended otherwise than by the
    pool's SIGTERM to the others once broken (pids 11, 12, ... in order), with its signal's name or its exit
    status (seen under load: a worker SIGKILLed, and another that ended with status 255 listed first)."""
    from types import SimpleNamespace

    from numerics.experiments.pool import _lost_worker
    processes = {i: SimpleNamespace(pid=11 + i, exitcode=code) for i, code in enumerate(exitcodes)}
    assert says in _lost_worker(SimpleNamespace(_processes=processes))


def test_a_result_that_is_not_json_is_an_error():
    with pytest.raises(JobError, match="must return a dict") as info:
        run_jobs(list, [{"x": 1}], workers=1, progress=False)
    assert isinstance(info.value.__cause__, TypeError)      # chained, as every JobError's cause
    with pytest.raises(JobError, match="not JSON-serialisable"):
        run_jobs(lambda job: {"x": object()}, [{"x": 1}], workers=1, progress=False)


# ------------------------------------------------------------------ validation and progress

@pytest.mark.parametrize("workers", [0, -2, 1.5, True, "2"])
def test_bad_workers(workers):
    with pytest.raises(ValueError, match=r"workers must be an integer >= 1"):
        run_jobs(dict, [{}], workers=workers, progress=False)


def test_default_workers_are_the_cpus_this_process_may_run_on(monkeypatch):
    """``workers=None`` means the CPUs in this process's affinity mask (one here), not the machine's
    (eight here); ``os.cpu_count()`` only where the system has no affinity call."""
    from numerics.experiments import runner
    monkeypatch.setattr(runner.os, "sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 8)
    assert runner.usable_cpus() == 1 and runner._check_workers(None) == 1
    monkeypatch.delattr(runner.os, "sched_getaffinity")
    assert runner.usable_cpus() == 8


@pytest.mark.parametrize("address", ["localhost:8786", "tcp://host", "http://h:1", "tcp://h:70000", 8786, ""])
def test_bad_scheduler_address(address):
    with pytest.raises(ValueError, match=r"scheduler must be an address like tcp://host:port"):
        run_jobs(dict, [{}], scheduler=address, progress=False)


def test_bad_jobs_are_named_before_any_work(tmp_path):
    log = tmp_path / "calls.txt"
    with pytest.raises(ValueError, match=r"jobs\[1\]"):
        run_jobs(counted_job, [{"x": 1, "log": str(log)}, {"x": float("nan"), "log": str(log)}],
                 workers=1, progress=False)
    assert not log.exists()


def test_progress_bar_only_on_a_terminal(capfd, monkeypatch):
    run_jobs(dict, [{"x": 1}, {"x": 2}], workers=1, progress=True)
    assert capfd.readouterr().err == ""  # stderr is not a terminal under pytest

    class Terminal:
        text = ""

        def write(self, s):
            Terminal.text += s

        def flush(self):
            pass

        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stderr", Terminal())
    run_jobs(dict, [{"x": 1}, {"x": 2}], workers=1, progress=True, desc="demo")
    assert "demo" in Terminal.text and "2/2" in Terminal.text
    Terminal.text = ""
    run_jobs(dict, [{"x": 1}, {"x": 2}], workers=1, progress=False)
    assert Terminal.text == ""


# ------------------------------------------------------------------ Dask

def test_unreachable_scheduler_fails_fast():
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"^cannot reach the Dask scheduler at tcp://127\.0\.0\.1:1: "):
        check_scheduler("tcp://127.0.0.1:1", timeout=5)
    with pytest.raises(ValueError, match=r"tcp://127\.0\.0\.1:1"):
        run_jobs(dict, [{}], scheduler="tcp://127.0.0.1:1", progress=False)
    assert time.monotonic() - start < 20  # (includes importing distributed)


def test_a_silent_listener_is_not_a_scheduler():
    # distributed.Client alone would wait forever for the handshake of a peer that never answers.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        address = "tcp://127.0.0.1:%d" % server.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(ValueError, match="no Dask handshake within 1 s"):
            check_scheduler(address, timeout=1)
        assert time.monotonic() - start < 10  # (includes importing distributed)


def test_dask_local_cluster_gives_the_local_results_bit_for_bit(cluster, local_results, tmp_path):
    assert check_scheduler(cluster.scheduler_address, timeout=10) == {
        "address": cluster.scheduler_address, "workers": 2}
    store = ResultStore(tmp_path)
    remote = run_jobs(sgd_job, SGD_JOBS, scheduler=cluster.scheduler_address, store=store, progress=False)
    assert json.dumps(remote) == json.dumps(local_results)
    assert [store.get(job) for job in SGD_JOBS] == local_results
    with pytest.raises(JobError, match=r'job 1 \{"x":3\} failed: ZeroDivisionError: x is 3'):
        run_jobs(failing_job, [{"x": 2}, {"x": 3}], scheduler=cluster.scheduler_address, progress=False)


# ------------------------------------------------------------------ interruption

def alive(pid):
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def blocked(pid) -> int:
    """The signals process ``pid`` blocks (a bit mask: bit ``n - 1`` for signal ``n``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("SigBlk:")[1].split()[0], 16)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_interrupted_pool_leaves_no_workers_and_keeps_finished_results(tmp_path, signum):
    """Ctrl-C: KeyboardInterrupt promptly; SIGKILL: workers notice their parent died. No orphans; results stay."""
    script = textwrap.dedent(f"""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background shell ignores it)
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}]
        from _jobs import slow_job
        from numerics.experiments.runner import run_jobs
        from numerics.experiments.store import ResultStore
        if __name__ == "__main__":
            jobs = [{{"x": 0, "sleep": 0}}] + [{{"x": x, "sleep": 60, "pids": {str(tmp_path)!r}}} for x in (1, 2, 3)]
            run_jobs(slow_job, jobs, workers=2, store=ResultStore({str(tmp_path / 'store')!r}), progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    # Wait until job 0 is stored and both workers are busy with the long jobs.
    while (len(list(tmp_path.glob("pid-*"))) < 2 or not list((tmp_path / "store").glob("*.json"))) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
    assert len(pids) == 2, "the workers did not start"
    assert not any(blocked(pid) & (1 << (signal.SIGTERM - 1)) for pid in pids), "SIGTERM cannot stop the workers"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=15)
    if signum == signal.SIGINT:
        assert proc.returncode in (1, -signal.SIGINT) and err.rstrip().endswith("KeyboardInterrupt")
    else:
        assert proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, pids)), "worker processes survived"
    assert len(ResultStore(tmp_path / "store")) == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_pool_holds_ctrl_c_and_sigterm_while_it_starts_and_raises_them_after(signum):
    """While the pool starts its processes a Ctrl-C or SIGTERM (which a command turns into KeyboardInterrupt)
    waits, blocked (the new processes inherit it blocked); it is raised once the pool has started."""
    from numerics.experiments.pool import _signals_held

    class Stop(BaseException):
        pass

    def stop(signum, frame):
        raise Stop(signum)
    previous = signal.signal(signum, stop)
    try:
        with pytest.raises(Stop):
            with _signals_held():
                os.kill(os.getpid(), signum)
                time.sleep(0.01)                    # (a handler would run here)
                held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        assert {signal.SIGINT, signal.SIGTERM} <= held
        assert signum not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        signal.signal(signum, previous)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_while_the_pool_starts_its_helper_processes_is_the_parents_alone(tmp_path, signum):
    """The fork server and the resource tracker are new Python processes in the terminal's process group: a
    Ctrl-C, or a SIGTERM to the group (``timeout``, a batch system), while they start (slowed here by a
    sitecustomize) ends the command with its one line, and no helper prints a "Fatal Python error" or a
    traceback of its own, or survives."""
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import os, sys, time
        if any(word in " ".join(sys.orig_argv) for word in ("forkserver", "resource_tracker")):
            open(os.path.join(os.environ["QKOV_HELPERS"], f"helper-{os.getpid()}"), "w").close()
            time.sleep(3)
    """))
    script = textwrap.dedent("""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background shell ignores it)
        from _jobs import slow_job
        from derivations.core.interrupt import exit_on_interrupt
        from numerics.experiments.runner import run_jobs

        @exit_on_interrupt("demo")
        def main(argv=None):
            run_jobs(slow_job, [{"x": x, "sleep": 30} for x in range(2)], workers=2, progress=False)
            return 0
        if __name__ == "__main__":
            sys.exit(main())
    """)
    env = {**os.environ, "QKOV_HELPERS": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("helper-*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(tmp_path.glob("helper-*")), "no helper process started"
    os.killpg(proc.pid, signum)                     # the whole process group, as a terminal or timeout sends it
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == ((130, "demo: interrupted\n") if signum == signal.SIGINT
                                      else (143, "demo: terminated\n")), err
    deadline = time.monotonic() + 20
    while any(alive(int(p.name[7:])) for p in tmp_path.glob("helper-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(int(p.name[7:])) for p in tmp_path.glob("helper-*")), "a helper process survived"


# ------------------------------------------------------------------ issue "Nothing lost": stores and addresses

def test_store_validates_the_body_as_strictly_as_the_envelope(tmp_path):
    def whole(job, result):
        return isinstance(result.get("rows"), list) and len(result["rows"]) == job["n"]
    store = ResultStore(tmp_path, validate=whole)
    job = {"n": 2}
    store.put(job, {"rows": [1, 2]})
    assert store.get(job) == {"rows": [1, 2]}
    for body in ({}, {"rows": "oops"}, {"rows": [1]}):
        store.put(job, body)
        assert store.get(job) is None and len(store) == 0       # damaged: counts as missing
    store.path(job).unlink()
    store.path(job).mkdir()                                     # a directory named like the file
    assert store.get(job) is None and len(store) == 0
    store.put(job, {"rows": [1, 2]})                            # recomputed result replaces it
    assert store.get(job) == {"rows": [1, 2]}
    assert (tmp_path / (store.path(job).name + ".not-a-result")).is_dir()   # kept aside, not deleted


def test_a_fifo_or_an_oversized_file_in_the_store_counts_as_missing_without_blocking(tmp_path, monkeypatch):
    import numerics.experiments.store as store_mod

    store = ResultStore(tmp_path)
    job, other = {"n": 1}, {"n": 2}
    os.mkfifo(store.path(job))                        # opened for reading, a FIFO waits for a writer

    class Blocked(Exception):
        """The store blocked on the FIFO (not an OSError, which the store would swallow)."""

    def hung(signum, frame):
        raise Blocked("the store blocked on a FIFO")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(2)
    try:
        assert store.get(job) is None and job not in store
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    store.put(job, {"rows": [1]})                     # the recomputed result replaces it
    assert store.get(job) == {"rows": [1]}
    store.put(other, {"rows": [2] * 100})
    monkeypatch.setattr(store_mod, "MAX_BYTES", 512)
    assert store.get(other) is None and store.get(job) == {"rows": [1]} and len(store) == 1


@pytest.mark.parametrize("address, match", [("tls://127.0.0.1:8786", "tls:// schedulers are not supported"),
                                            ("tcp://127.0.0.1:8786/", "nothing after the port"),
                                            ("tcp://127.0.0.1:8786/x", "nothing after the port")])
def test_tls_and_paths_are_refused_before_any_connection(address, match):
    start = time.monotonic()
    with pytest.raises(ValueError, match=match):
        check_scheduler(address, timeout=5)
    with pytest.raises(ValueError, match=match):
        run_jobs(dict, [{}], scheduler=address, progress=False)
    assert time.monotonic() - start < 1


@pytest.mark.parametrize("greeting", [b"\x10" + bytes(7) + b"garbage!" * 4, b"HTTP/1.1 400 Bad Request\r\n\r\n",
                                      (40).to_bytes(8, "little") + (99).to_bytes(8, "little")])
def test_a_listener_answering_garbage_is_not_a_scheduler(greeting):
    import threading
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)

        def answer():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(greeting)
                time.sleep(2)
        threading.Thread(target=answer, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(ValueError, match="not the Dask protocol"):
            check_scheduler("tcp://127.0.0.1:%d" % server.getsockname()[1], timeout=1)
        assert time.monotonic() - start < 10


@pytest.mark.parametrize("workers", [1, 2])
def test_the_bar_counts_the_epochs_the_jobs_report_from_any_process(monkeypatch, workers):
    """With ``epochs=``, the bar counts epochs: each job's ``progress(1)`` calls, from worker processes
    through a queue, and a job that trained fewer epochs than its budget (runs stopped early) is counted
    whole when it finishes; the results are those of a run without a bar."""
    import numerics.experiments.runner as runner

    class Bar:
        def __init__(self, total, initial=0, **options):
            self.total, self.n, self.unit, self.updates = total, initial, options.get("unit"), 0

        def update(self, n=1):
            self.n += n
            self.updates += 1

        def close(self):
            bars.append(self)
    bars = []
    monkeypatch.setattr(runner, "progress_bar", Bar)
    monkeypatch.setattr(runner, "isatty", lambda stream: True)
    jobs = [{"x": x, "epochs": 30 if x else 7} for x in range(3)]
    results = run_jobs(epoch_job, jobs, workers=workers, epochs=lambda job: 30)
    assert results == [{"x": x, "reported": True} for x in range(3)]
    [bar] = bars
    assert (bar.total, bar.n, bar.unit) == (90, 90, "epoch")
    if workers == 1:          # in this process every epoch moves the bar (worker processes: a few times a second)
        assert bar.updates >= 30 + 7
    assert run_jobs(epoch_job, jobs, workers=workers, progress=False) == [{"x": x, "reported": False}
                                                                           for x in range(3)]
    # a job that fails with the bar on: named, the pool and its queue closed, nothing hangs
    with pytest.raises(JobError, match="x is 3"):
        run_jobs(failing_job_with_progress, [{"x": 1}, {"x": 3}], workers=workers, epochs=lambda job: 5)
    # epochs= with a job function that cannot report them: refused before any work, on any stream
    monkeypatch.setattr(runner, "isatty", lambda stream: False)
    with pytest.raises(ValueError, match="progress"):
        run_jobs(counted_job, [{"x": 1}], workers=workers, epochs=lambda job: 5)


#: A stored Figure-2 run of one seed of a --quick reproduction's job (10 steps at most).
FIG2_RUN = {"seed": 1234, "steps": 10, "stopped_epoch": None, "loss_log": [3.9], "heatmap": [[4.0] * 5] * 5,
            "final_loss": 3.9, "accuracy": 0.25, "relevant_attention": 0.1, "label_probability": 0.2,
            "separability_n": 1, "separability_sum": 0.5, "separability_sumsq": 0.25, "self_attention": 0.5,
            "other_attention": 0.4, "sufficiency": -0.25, "status": "completed"}


@pytest.mark.parametrize("key, value", [("steps", 10 ** 400), ("steps", 11), ("steps", -1), ("steps", 2.5),
                                        ("relevant_attention", 7.5), ("relevant_attention", float("nan")),
                                        ("accuracy", -0.1), ("final_loss", -1.0), ("final_loss", float("inf")),
                                        ("final_loss", 10 ** 400), ("loss_log", [3.9, float("nan")]),
                                        ("heatmap", [[4.0] * 5] * 4 + [[400.0] * 5]), ("sufficiency", 1.5),
                                        ("stopped_epoch", -1), ("separability_sum", float("inf")),
                                        ("accuracy", 1.5), ("steps", True), ("relevant_attention", 1 + 1e-6)])
def test_a_stored_run_of_numbers_out_of_range_is_damaged(key, value):
    """A stored number must be finite (the writer writes null for one that is not), steps a whole
    number up to the job's schedule, a share, probability or accuracy in [0, 1], a loss >= 0."""
    from numerics.experiments import jobs, reproduce
    job = next(j for _, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    job = json.loads(json.dumps({**job, "seeds": [1234]}))
    assert jobs.valid_result(job, {"runs": [FIG2_RUN]})
    assert jobs.valid_result(job, {"runs": [{**FIG2_RUN, "status": "diverged", "loss_log": [3.9, None],
                                             **dict.fromkeys(jobs.MEASURED)}]})
    assert not jobs.valid_result(job, {"runs": [{**FIG2_RUN, key: value}]})


@pytest.mark.parametrize("status", ["completed", "reached"])
def test_a_stored_run_that_did_not_diverge_without_its_heatmap_is_damaged(status):
    """Only a diverged run is not evaluated (no heatmap): a run that was, stored without its heatmap, is
    recomputed, not pooled into the heatmap of a reproduction's report (which cannot average it)."""
    from numerics.experiments import jobs, reproduce
    job = next(j for _, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    job = json.loads(json.dumps({**job, "seeds": [1234]}))
    assert jobs.valid_result(job, {"runs": [{**FIG2_RUN, "status": status}]})
    assert not jobs.valid_result(job, {"runs": [{**FIG2_RUN, "status": status, "heatmap": None}]})


@pytest.mark.parametrize("edit", [
    lambda text: text.replace('"square": 9', '"square": 10'),                 # a result edited by hand
    lambda text: text.replace('"square": 9', '"square": 1'),                  # a bit flipped ("9" is 0x39, "1" 0x31)
    lambda text: json.dumps({**json.loads(text), "result": {"x": 3, "square": 9, "note": "kept"}}),  # a key added
    lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "digest"}),   # digest removed
    lambda text: text.replace('"x": 3', '"x": 4', 1),                         # its job edited (another job's key)
    lambda text: json.dumps({**json.loads(text), "result": [3, 9]}),          # its result edited into a list
    lambda text: json.dumps({**json.loads(text), "result": None}),            # ... into null
    lambda text: json.dumps({**json.loads(text), "job": [3]}),                # its job edited into a list
    lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "result"}),  # its result removed
    lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "job"})])    # its job removed
def test_a_stored_file_changed_after_it_was_written_is_refused_not_replaced(tmp_path, edit):
    """A well-formed file of the job whose job and result do not match its digest is neither read nor
    replaced: reading it (get, in, len, items, run_jobs before any job, put) raises, naming the file."""
    log = tmp_path / "calls.txt"
    store = ResultStore(tmp_path / "store")
    jobs = [{"x": x, "log": str(log)} for x in (2, 3)]
    run_jobs(counted_job, jobs, workers=1, store=store, progress=False)
    path = store.path(jobs[1])
    edited = edit(path.read_text())
    assert edited != path.read_text() and json.loads(edited)["key"] == job_key(jobs[1])
    path.write_text(edited)
    log.unlink()
    for read in (lambda: store.get(jobs[1]), lambda: jobs[1] in store, lambda: len(store), lambda: list(store.items()),
                 lambda: run_jobs(counted_job, jobs, workers=1, store=store, progress=False),
                 lambda: store.put(jobs[1], {"x": 3, "square": 9})):
        with pytest.raises(EditedRecord, match=f"{path.name} was changed after it was written"):
            read()
    assert path.read_text() == edited and not log.exists() and store.get(jobs[0]) == {"x": 2, "square": 4}


def test_a_stored_file_whose_key_was_edited_is_refused_not_replaced(tmp_path):
    """The key, which the digest does not seal, is its job's in every file the store writes: a file of the
    job whose key was changed is refused as edited, not recomputed over."""
    store = ResultStore(tmp_path / "store")
    job = {"x": 3}
    store.put(job, {"square": 9})
    path = store.path(job)
    edited = json.dumps({**json.loads(path.read_text()), "key": "0" * 64})
    path.write_text(edited)
    for read in (lambda: store.get(job), lambda: len(store), lambda: store.put(job, {"square": 9})):
        with pytest.raises(EditedRecord, match="the key stored in it is not its job's"):
            read()
    assert path.read_text() == edited


def test_a_stored_file_of_the_earlier_format_is_recomputed(tmp_path):
    """A file of the layout without a digest (format tag .../1) is not read: its job runs again and its
    file is replaced by one with a digest."""
    log = tmp_path / "calls.txt"
    store = ResultStore(tmp_path / "store")
    job = {"x": 3, "log": str(log)}
    old = {"format": "qkov.experiments.runner.ResultStore/1", "key": job_key(job), "job": job,
           "result": {"x": 3, "square": 10}}
    store.path(job).write_text(json.dumps(old))
    assert store.get(job) is None and len(store) == 0
    assert run_jobs(counted_job, [job], workers=1, store=store, progress=False) == [{"x": 3, "square": 9}]
    assert calls(log) == ["3"] and json.loads(store.path(job).read_text())["format"] == STORE_FORMAT


def test_the_digest_is_of_the_result_as_read_back():
    """A result with numbers that are not finite, integer keys (read back as strings, in another order)
    or tuples is read back whole: its digest is of the JSON read back, not of the object given."""
    import tempfile
    store = ResultStore(tempfile.mkdtemp())
    job = {"x": 1}
    store.put(job, {"counts": {10: 1, 9: 2}, "pair": (1, 2), "loss": float("nan")})
    got = store.get(job)
    assert got["counts"] == {"10": 1, "9": 2} and got["pair"] == [1, 2] and got["loss"] != got["loss"]


def test_a_share_summed_past_one_by_rounding_is_kept():
    """A share or probability summed over positions may pass 1 by a few ulp (within 1e-9): not damaged."""
    from numerics.experiments import jobs, reproduce
    job = next(j for _, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    job = json.loads(json.dumps({**job, "seeds": [1234]}))
    for key in ("relevant_attention", "accuracy", "label_probability"):
        assert jobs.valid_result(job, {"runs": [{**FIG2_RUN, key: 1 + 4.4e-16}]}), key
        assert jobs.valid_result(job, {"runs": [{**FIG2_RUN, key: -1e-12}]}), key


def test_a_record_of_another_job_under_this_jobs_name_is_not_this_jobs(tmp_path):
    """A whole, self-consistent record of job 1 copied (or renamed) to job 0's file name: it is not job 0's
    result, and the store does not list it under a name that is not its key."""
    store = ResultStore(tmp_path)
    jobs = [{"x": 0}, {"x": 1}]
    store.put(jobs[1], {"x": 1, "square": 1})
    store.path(jobs[0]).write_text(store.path(jobs[1]).read_text())
    assert store.get(jobs[0]) is None and jobs[0] not in store and store.get(jobs[1]) == {"x": 1, "square": 1}
    assert [job for job, _ in store.items()] == [jobs[1]] and len(store) == 1


@pytest.mark.parametrize("key, other", [("ratio", 2.0), ("seed", 1235), ("target_loss", 0.2),
                                        ("parameterization", "FAFO")])
def test_a_stored_sweep_row_of_another_run_is_not_this_jobs(key, other):
    """A sweep row answers one (parameterization, ratio, seed, target) of its job: a row of another is refused."""
    from numerics.experiments import jobs, sgd
    config = sgd.Fig2Config("CACO", lr_qk=0.01, lr_ov=0.01, seq_len=16, batch_size=4, epochs=1,
                            steps_per_epoch=2, stop="none", eval_batches=1, target_loss=0.1, max_steps=2)
    job = {"experiment": "sweep", "ratios": [1.0], "config": config.to_dict(), "seeds": [1234]}
    rows = jobs.sweep_job(job)["rows"]
    assert jobs.valid_result(job, {"rows": rows}) and len(rows) == 1
    assert not jobs.valid_result(job, {"rows": [{**rows[0], key: other}]})


def _fig3_job_and_result():
    """A fig3 job of 2 alphas and 2 epochs and its result, as the store reads it back."""
    from numerics.experiments import fixed_attention, jobs
    config = fixed_attention.Fig3Config(alphas=(0.5, 1.0), epochs=2, steps_per_epoch=1, batch_size=4, seq_len=8,
                                        eval_batches=1)
    job = json.loads(json.dumps({"experiment": "fig3", "config": config.to_dict()}))
    return job, json.loads(json.dumps(jobs.fig3_job(job)))


@pytest.mark.parametrize("key, damage", [
    ("loss", lambda rows: [["x"] * len(rows[0]), rows[1]]),              # a string where a loss belongs
    ("loss", lambda rows: [rows[0][:-1], rows[1]]),                     # an epoch missing
    ("incentive", lambda rows: [rows[0], [*rows[1], 0.0]]),             # an epoch too many
    ("loss_shifted", lambda rows: [rows[0], None]),                     # an alpha's row lost
    ("train_loss", lambda rows: [[10 ** 400] * len(rows[0]), rows[1]]),  # a number no float holds
    ("final_loss", lambda values: ["oops", values[1]]),
    ("final_loss", lambda values: [None, values[1]])])
def test_a_stored_fig3_result_of_the_wrong_shape_or_not_numbers_is_damaged(key, damage):
    """A stored Figure-3 result has a number per alpha and epoch (0..E for the measured losses and the
    incentive, 1..E for the training loss) and a final loss per alpha: one that does not is recomputed,
    not written into a reproduction's report (whose tables format those numbers)."""
    from numerics.experiments import jobs
    job, result = _fig3_job_and_result()
    assert jobs.valid_result(job, result)
    diverged = {**result, "loss": [[result["loss"][0][0], float("nan"), float("nan")], result["loss"][1]],
                "final_loss": [float("nan"), result["final_loss"][1]]}
    assert jobs.valid_result(job, diverged)           # a diverged alpha's losses are stored as NaN
    assert not jobs.valid_result(job, {**result, key: damage(result[key])})


@pytest.mark.parametrize("key", ["loss", "relevant_attention", "label_probability", "accuracy", "self_attention",
                                 "other_attention"])
def test_a_stored_sweep_row_measured_without_a_measurement_is_damaged(key):
    """Only a diverged run is not measured (its measurements null): a row of a run that was, stored with a
    measurement null, is recomputed, not summarised (the means over seeds need every one; the proxies alone
    may be undefined)."""
    from numerics.experiments import jobs, proxies, sgd
    config = sgd.Fig2Config("CACO", lr_qk=0.01, lr_ov=0.01, seq_len=16, batch_size=4, epochs=1,
                            steps_per_epoch=2, stop="none", eval_batches=1, target_loss=0.1, max_steps=2)
    job = {"experiment": "sweep", "ratios": [1.0], "config": config.to_dict(), "seeds": [1234]}
    (row,) = jobs.sweep_job(job)["rows"]
    assert row["status"] == "completed"
    assert jobs.valid_result(job, {"rows": [{**row, **dict.fromkeys(proxies.PROXIES)}]})
    assert jobs.valid_result(job, {"rows": [{**row, "status": "diverged", **dict.fromkeys(jobs._SWEEP_MEASURED)}]})
    assert not jobs.valid_result(job, {"rows": [{**row, key: None}]})
