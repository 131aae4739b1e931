"""One Sphinx build of the documentation site for the tests: its whole log kept in a file, and a failure
that says why (``tests/docs/test_docs_site.py`` builds the site once per session with it).

A build is bounded by the CPU time it uses, not by the wall clock: on two cores shared with other work
(the other pytest-xdist worker, other sessions) the same build took 33 s alone and 290 s beside a load
average of 8, for about 40 s of CPU either way, and a wall-clock limit of 600 s stopped it on a machine
only a little busier. A build that runs away uses CPU and is stopped at :data:`CPU_LIMIT`; one that waits
forever is stopped at :data:`WALL_LIMIT`."""
from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: CPU seconds a build may use (about 30 are needed); past it the kernel stops it (SIGXCPU).
CPU_LIMIT = 600
#: Wall-clock seconds after which a build is stopped however little CPU it used (it waits for nothing
#: that can come; a build waiting for another build of the same directory to finish waits this long).
WALL_LIMIT = 3600
#: A failed build's message shows its log whole up to this size, else its beginning and its end of this
#: size each: the first warnings (with ``--keep-going`` one cause can give hundreds) and Sphinx's
#: traceback (``-T``) or summary at the end.
REPORT_CHARS = 8000


def sphinx_command(docs: Path, out: Path, jobs: str) -> list[str]:
    """The build the tests make: warnings are errors, all of them reported, a crash with its traceback."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-T", "-j", jobs, "-b", "html", "-q",
            "-d", str(out / "doctrees"), str(docs), str(out / "html")]


def failure_report(cmd, ending: str, seconds: float, cpu: float, log: str, log_path: Path) -> str:
    """The message of a failed build: how it ended, after how long, with how much CPU and on how loaded a
    machine, the command, where its whole log is, how many warning lines it has, and the log (cut in the
    middle when long)."""
    lines = log.splitlines()
    warnings = sum("WARNING" in line or "ERROR" in line for line in lines)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if len(log) > 2 * REPORT_CHARS:
        log = (f"{log[:REPORT_CHARS]}\n[... {len(log) - 2 * REPORT_CHARS} characters left out: "
               f"the whole log is {log_path} ...]\n{log[-REPORT_CHARS:]}")
    return (f"the documentation build {ending} after {seconds:.0f} s ({cpu:.0f} s of CPU; load average "
            f"{load})\ncommand: {' '.join(cmd)}\nlog ({len(lines)} lines, {warnings} with WARNING or ERROR): "
            f"{log_path}\n{log}")


def _ending(returncode: int, cpu_limit: float) -> str:
    if returncode == -signal.SIGXCPU:
        return f"used up its {cpu_limit:g} s of CPU and was stopped"
    if returncode < 0:
        return f"was killed by signal {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def _cpu_of(pid: int) -> float:
    """CPU seconds used by the running process ``pid`` and its waited-for children (0 where unknown)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return 0.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_build(cmd, cwd: Path, log_path: Path, *, cpu_limit: float = CPU_LIMIT,
              timeout: float = WALL_LIMIT) -> tuple[float, float, str]:
    """Run the build ``cmd``; return its seconds, its CPU seconds and its log, also written to ``log_path``.

    A build that fails, uses more than ``cpu_limit`` seconds of CPU, or runs longer than ``timeout`` seconds
    (then it is stopped, with every process it started) fails the calling test or fixture with
    :func:`failure_report`."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")
    start, cpu_before = time.perf_counter(), _children_cpu()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        if hasattr(resource, "prlimit"):         # the processes it forks inherit the limit
            with contextlib.suppress(ProcessLookupError):
                resource.prlimit(proc.pid, resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))
        output, _ = proc.communicate(timeout=timeout)
        cpu = _children_cpu() - cpu_before
        ending = None if proc.returncode == 0 else _ending(proc.returncode, cpu_limit)
    except subprocess.TimeoutExpired:
        cpu = _cpu_of(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        ending = f"did not finish within {timeout:g} s and was stopped"
    finally:
        if proc.poll() is None:          # interrupted (Ctrl-C): no build left running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    seconds = time.perf_counter() - start
    log = output.decode("utf-8", errors="replace")
    log_path.write_text(log, encoding="utf-8")
    if ending is not None:
        pytest.fail(failure_report(cmd, ending, seconds, cpu, log, log_path), pytrace=False)
    return seconds, cpu, log
