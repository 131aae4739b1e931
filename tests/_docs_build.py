"""One Sphinx build of the documentation site for the tests: its whole log kept in a file, and a failure
that says why (``tests/docs/test_docs_site.py`` builds the site once per session with it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: A build still running after this long is stopped and reported with what it wrote so far.
BUILD_TIMEOUT = 600
#: A failed build's message shows its log whole up to this size, else its beginning and its end of this
#: size each: the first warnings (with ``--keep-going`` one cause can give hundreds) and Sphinx's
#: traceback (``-T``) or summary at the end.
REPORT_CHARS = 8000


def sphinx_command(docs: Path, out: Path, jobs: str) -> list[str]:
    """The build the tests make: warnings are errors, all of them reported, a crash with its traceback."""
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-T", "-j", jobs, "-b", "html", "-q",
            "-d", str(out / "doctrees"), str(docs), str(out / "html")]


def failure_report(cmd, ending: str, seconds: float, log: str, log_path: Path) -> str:
    """The message of a failed build: how it ended, after how long and on how loaded a machine, the
    command, where its whole log is, how many warning lines it has, and the log (cut in the middle
    when long)."""
    lines = log.splitlines()
    warnings = sum("WARNING" in line or "ERROR" in line for line in lines)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if len(log) > 2 * REPORT_CHARS:
        log = (f"{log[:REPORT_CHARS]}\n[... {len(log) - 2 * REPORT_CHARS} characters left out: "
               f"the whole log is {log_path} ...]\n{log[-REPORT_CHARS:]}")
    return (f"the documentation build {ending} after {seconds:.0f} s (load average {load})\n"
            f"command: {' '.join(cmd)}\nlog ({len(lines)} lines, {warnings} with WARNING or ERROR): "
            f"{log_path}\n{log}")


def _ending(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by signal {signal.Signals(-returncode).name}"
    return f"exited with status {returncode}"


def run_build(cmd, cwd: Path, log_path: Path, timeout: float = BUILD_TIMEOUT) -> tuple[float, str]:
    """Run the build ``cmd``; return its seconds and log, which is also written to ``log_path``.

    A build that fails, or runs longer than ``timeout`` seconds (then it is stopped, with every process it
    started), fails the calling test or fixture with :func:`failure_report`."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONHASHSEED="0")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        ending = None if proc.returncode == 0 else _ending(proc.returncode)
    except subprocess.TimeoutExpired:
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
        pytest.fail(failure_report(cmd, ending, seconds, log, log_path), pytrace=False)
    return seconds, log
