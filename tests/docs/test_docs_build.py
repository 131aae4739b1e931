"""The site's build itself, without building the site: one build of a source directory at a time, the
checkout's own version, a failed build of the tests that says why (``tests/_docs_build.py``), and the
site's settings refusing a cross-reference with no target (a small probe site)."""
from __future__ import annotations

import configparser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
from _docs_build import run_build  # noqa: E402
from _docs_conf import docs_conf  # noqa: E402


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _checkout_copy(tmp_path: Path) -> Path:
    """A checkout whose docs/ is a copy (without generated API pages) and whose packages are the real ones."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("derivations", "numerics", "setup.cfg"):
        (root / name).symlink_to(ROOT / name)
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns("api", "_build", "__pycache__"))
    return root


@pytest.mark.slow
def test_a_second_build_of_one_docs_directory_waits_for_the_first(tmp_path):
    """A build holds its source directory's lock until it ends; a second build waits for it before it writes
    (or reads) the generated API pages. Two cold builds of one directory side by side failed: one read the
    pages the other was writing and stopped with hundreds of 'stub file not found' warnings."""
    fcntl = pytest.importorskip("fcntl")
    docs = _checkout_copy(tmp_path) / "docs"
    index = docs / "api" / "index.rst"
    index.parent.mkdir()
    log = tmp_path / "build.log"
    with open(docs / "api" / ".build.lock", "a+b") as held:       # the lock docs/_ext/qkov_docs.py takes
        fcntl.flock(held, fcntl.LOCK_EX)                     # the first build, still running
        with open(log, "wb") as out:
            build = subprocess.Popen([sys.executable, "-m", "sphinx", "-q", "-b", "dummy", "-j", "1", str(docs),
                                      str(tmp_path / "out")], cwd=docs.parent, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while "waiting for another build" not in log.read_text() and not index.exists():
                assert build.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            assert not index.exists(), "the second build wrote the API pages while the first was running"
            time.sleep(1)
            assert build.poll() is None and not index.exists()
            fcntl.flock(held, fcntl.LOCK_UN)                  # the first build ends: the second goes on
            while not index.exists():
                assert build.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        finally:
            build.kill()
            build.wait()


@pytest.mark.parametrize("installed", [None, importlib.metadata.PackageNotFoundError("qkov"), "9.9.9"],
                         ids=["rewritten", "not-installed", "another-checkout"])
def test_the_site_shows_the_version_of_its_checkout(installed, monkeypatch):
    """conf.py takes the version from the checkout's setup.cfg, whatever distribution is installed: while an
    install or a wheel build of the checkout rewrites its qkov.egg-info, the metadata reads as no version
    (the build then stopped with a TypeError); before an install there is none; the installed one may be
    another checkout's."""
    def version(name):
        if isinstance(installed, Exception):
            raise installed
        return installed
    monkeypatch.setattr(importlib.metadata, "version", version)
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    conf = docs_conf()
    assert conf["release"] == conf["version"] == setup["metadata"]["version"]


def test_a_failed_build_says_why(tmp_path):
    """The message shows how the build ended, its first warnings and its end, and where its whole log is (the
    log's last 6000 characters alone lost the first of hundreds of warnings, the cause)."""
    script = ("import sys\nprint('index.md:1: WARNING: the first cause')\n"
              "for i in range(2000): print(f'api/x{i}.rst:1: WARNING: one more')\n"
              "sys.exit('Traceback: the end of the log')")
    with pytest.raises(pytest.fail.Exception) as failed:
        run_build([sys.executable, "-c", script], tmp_path, tmp_path / "build.log")
    message = str(failed.value)
    assert message.startswith("the documentation build exited with status 1 after ")
    assert "WARNING: the first cause" in message and "Traceback: the end of the log" in message
    assert "2002 lines, 2001 with WARNING or ERROR" in message and str(tmp_path / "build.log") in message
    assert len(message) < 20_000 and (tmp_path / "build.log").read_text().count("one more") == 2000


@pytest.mark.slow
def test_a_build_waiting_too_long_is_stopped_with_what_it_wrote(tmp_path):
    """A build past its wall-clock limit is stopped with every process it started, and reported with its
    output."""
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "print('pid', child.pid, 'WARNING: started', flush=True)\ntime.sleep(60)")
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as failed:
        run_build([sys.executable, "-c", script], tmp_path, tmp_path / "build.log", timeout=3)
    message = str(failed.value)
    assert time.monotonic() - start < 30
    assert message.startswith("the documentation build did not finish within 3 s and was stopped after ")
    assert "WARNING: started" in message
    child = int(message.split("pid ")[1].split()[0])
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "a process the build started survived it"


@pytest.mark.slow
def test_a_build_is_bounded_by_its_cpu_time_not_by_the_clock(tmp_path):
    """A build that runs away is stopped once it has used its CPU time, however long the wall-clock limit
    (beside other work, a build that needs 40 s of CPU took 290 s: a 600 s wall-clock limit was the
    bound that stopped sound builds on a busy machine)."""
    if not hasattr(pytest.importorskip("resource"), "prlimit"):
        pytest.skip("no resource.prlimit here (Linux has it): the CPU limit is not set")
    script = "print('WARNING: spinning', flush=True)\nwhile True: pass"
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception) as failed:
        run_build([sys.executable, "-c", script], tmp_path, tmp_path / "build.log", cpu_limit=2, timeout=90)
    message = str(failed.value)
    assert message.startswith("the documentation build used up its 2 s of CPU and was stopped after "), message
    assert "WARNING: spinning" in message and time.monotonic() - start < 90


#: A module documented by the probe site: type words the site links, and mistakes it must refuse.
_PROBE_MODULE = '''
def good(a, b, c, d):
    """A function whose references all resolve.

    Parameters
    ----------
    a : dict of str to real
    b : str, path or None
    c : ndarray, shape (K, T)
    d : collection of hashable
        See :class:`os.PathLike` and :func:`sympy.simplify`.

    Returns
    -------
    number
    """


def prose(x):
    """A type line that is prose, and a private name as a reference (:data:`_PRIVATE`).

    Parameters
    ----------
    x : the values, in order
    """
'''


def test_a_reference_with_no_target_fails_the_site_build(tmp_path):
    """With the site's settings (nitpicky, numpydoc's linked types, its aliases and ignored words, the shipped
    inventories), the type words and library names of the site's docstrings resolve, and a prose type line or a
    private name is a warning, so an error with ``-W`` (one small build, a few seconds)."""
    conf = docs_conf()
    keys = ["nitpicky", "numpydoc_xref_param_type", "numpydoc_xref_ignore", "numpydoc_xref_aliases",
            "numpydoc_show_class_members", "intersphinx_mapping", "intersphinx_disabled_reftypes",
            "autodoc_typehints"]
    src = tmp_path / "src"
    src.mkdir()
    (src / "probe_module.py").write_text(_PROBE_MODULE)
    settings = "".join(f"{key} = {conf[key]!r}\n" for key in keys)
    (src / "conf.py").write_text("import sys\nsys.path.insert(0, %r)\n" % str(src)
                                 + "extensions = ['sphinx.ext.autodoc', 'sphinx.ext.intersphinx', 'numpydoc']\n"
                                 + settings)
    (src / "index.rst").write_text("Probe\n=====\n\n.. automodule:: probe_module\n   :members:\n")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    missing = sorted(re.search(r"reference target not found: (\S+)", w).group(1) for w in warnings
                     if "reference target not found" in w)
    assert missing == ["_PRIVATE", "in", "order", "values"], proc.stderr
    assert all("docstring of probe_module.prose" in w for w in warnings), proc.stderr
