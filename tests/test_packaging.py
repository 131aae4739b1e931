"""The package as installed: one version, a licence, the test extra's floors, and (slow) an install from
a wheel that writes nothing under its install directory."""
import configparser
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CFG = configparser.ConfigParser()
CFG.read(ROOT / "setup.cfg")


def _floor(extra: str, name: str):
    for line in CFG["options.extras_require"][extra].split("\n"):
        match = re.fullmatch(rf"{re.escape(name)}>=([\d.]+)", line.strip())
        if match:
            return tuple(int(x) for x in match.group(1).split("."))
    return None


def test_one_version_one_licence_one_python():
    from tests._docs_conf import docs_conf
    version = CFG["metadata"]["version"]
    assert docs_conf()["release"] == importlib.metadata.version("qkov") == version
    assert f'"{version}"' not in (ROOT / "docs" / "conf.py").read_text()      # not typed a second time
    assert "Copyright (c) 2026 the qkov developers" in (ROOT / "LICENSE").read_text()
    assert CFG["metadata"]["license"] == "MIT" and CFG["metadata"]["license_files"] == "LICENSE"
    assert CFG["options"]["python_requires"] == ">=3.11"


def test_every_command_prints_the_one_version(capsys):
    """``--version`` of every command (the parsers the docs' command-line reference renders) prints the
    package's version, as installed, through the one output writer."""
    from tests._docs_conf import cli_parser, docs_conf
    conf = docs_conf()
    for key in conf["qkov_cli_parsers"]:
        with pytest.raises(SystemExit) as stop:
            cli_parser(conf, key).parse_args(["--version"])
        assert (stop.value.code, capsys.readouterr()) == (0, (f"qkov {importlib.metadata.version('qkov')}\n", "")), key


def test_the_test_extra_floors_carry_the_pytest_options():
    """addopts' --no-loadscope-reorder exists from pytest-xdist 3.8 on; --doctest-modules output is NumPy 2's;
    scikit-learn's releases before 1.4.2 require NumPy < 2 (their wheels are built against NumPy 1)."""
    addopts = CFG["tool:pytest"]["addopts"]
    if "--no-loadscope-reorder" in addopts:
        assert _floor("test", "pytest-xdist") >= (3, 8)
    assert "--doctest-modules" in addopts
    assert tuple(int(x) for x in re.search(r"numpy>=([\d.]+)", CFG["options"]["install_requires"])
                 .group(1).split(".")) >= (2, 0)
    assert _floor("test", "scikit-learn") >= (1, 4, 2)


def _snapshot(*dirs):
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for d in dirs for p in Path(d).rglob("*"))


def _run(python, *args, env, cwd):
    out = subprocess.run([str(python), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert out.returncode == 0, (args, out.stderr[-2000:])
    return out.stdout


def _source_copy(target: Path) -> Path:
    """The checkout's files as they are now (``git ls-files``: tracked, edits included) copied to ``target``.
    setuptools builds in the source tree: from the checkout itself it leaves ``build/`` and ``qkov.egg-info``
    there, and a ``build/lib`` left from an earlier build puts a module deleted since into the wheel."""
    import shutil
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in filter(None, names.decode().split("\0")):
        if (ROOT / name).is_file():                                  # (a file deleted but not yet committed)
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.mark.slow
def test_installed_wheel_writes_nothing_under_its_install_directory(tmp_path):
    """Issue 28: a wheel installed into a fresh venv whose shipped caches are stale for it (their key
    replaced, as for a SymPy other than the one they were derived with) runs print_dynamics,
    verify --quick and an experiments command; the derived data goes to $XDG_CACHE_HOME/qkov and
    nothing under the install directory changes. About 4 minutes (a wheel build and the derivations)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    top = sorted(p.name for p in ROOT.iterdir())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(_source_copy(tmp_path / "src")),
                    "-w", str(tmp_path / "dist")], check=True, env=env, cwd=tmp_path, capture_output=True)
    assert sorted(p.name for p in ROOT.iterdir()) == top        # no build/ nor qkov.egg-info in the checkout
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    wheel = next((tmp_path / "dist").glob("qkov-*.whl"))
    # --ignore-installed: a qkov of the same version installed in the base environment (pip install .) is
    # visible through --system-site-packages, and pip would keep it instead of installing the wheel
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", str(wheel)],
                   check=True, env=env, capture_output=True)
    site = Path(_run(python, "-c", "import derivations, os; print(os.path.dirname(os.path.dirname("
                     "derivations.__file__)))", env=env, cwd=tmp_path).strip())
    assert site.is_relative_to(tmp_path / "venv"), site          # qkov from the wheel, not the checkout
    for cache in (site / "derivations" / "_cache").glob("*.json"):
        data = json.loads(cache.read_text())
        cache.write_text(json.dumps(dict(data, key="0" * 64), indent=1, sort_keys=True) + "\n")
    installed = (site / "derivations", site / "numerics")
    before = _snapshot(*installed)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    assert "dmu_OV" in _run(python, "-m", "derivations.print_dynamics", env=env, cwd=tmp_path)
    assert " 0 failed" in _run(python, "-m", "numerics.verify", "--quick", env=env, cwd=tmp_path)
    _run(python, "-m", "numerics.experiments", "predict", "--ratios", "1", "--parameterizations", "CACO",
         "--quiet", env=env, cwd=tmp_path)
    assert _snapshot(*installed) == before
    assert not list(site.glob("derivations/_cache/.*tmp"))
    assert {p.name.split("-")[0] for p in (tmp_path / "xdg" / "qkov").iterdir()} >= {"derived", "printed"}


def _release(version: str):
    """A release number as a tuple without trailing zeros (``"2.0.0"`` and ``"2.0"`` are one release)."""
    parts = [int(x) for x in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _direct_floors():
    """``{name: floor}`` of every ``name>=floor`` that setup.cfg declares for the installed package and
    its test extra (the higher floor where both name one), floors as :func:`_release` tuples."""
    lines = CFG["options"]["install_requires"].split("\n") + [
        line for extra in ("test", "docs") for line in CFG["options.extras_require"][extra].split("\n")]
    floors = {}
    for line in lines:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([\d.]+)(,<[\d.]+)?", line.strip())
        if match:
            name, floor = match.group(1), _release(match.group(2))
            floors[name] = max(floors.get(name, floor), floor)
    return floors


def test_every_test_has_a_time_bound(request):
    """setup.cfg's ``timeout`` is pytest-timeout's, a test extra: a hung test fails with its traceback
    and the run goes on (without the plugin the ini key is unknown and getini raises)."""
    assert _floor("test", "pytest-timeout") is not None and request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) == float(CFG["tool:pytest"]["timeout"]) > 0


_LOST_TIMEOUT = """
import gc, time, pytest

class Busy:
    def __del__(self):                      # busy when the timeout fires: its failure cannot be raised here
        t = time.perf_counter()
        while time.perf_counter() - t < 0.3:
            pass

@pytest.mark.timeout(0.1)
def test_hangs():
    busy = Busy(); busy.cycle = busy
    del busy
    gc.collect()
    t = time.perf_counter()
    while time.perf_counter() - t < 20:    # a hang, as far as a 0.1 s bound goes
        pass
"""


def test_a_timeout_a_finalizer_swallows_fails_the_test_all_the_same(tmp_path):
    """pytest-timeout's failure raised inside a finalizer is lost (the test then ran its 20 s and passed);
    the suite's plugin (``tests/_timeouts.py``) fires the handler again and the test fails at once."""
    (tmp_path / "test_lost.py").write_text(_LOST_TIMEOUT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-p", "_timeouts", "-W", "ignore::pytest.PytestUnraisableExceptionWarning",
                          "test_lost.py"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 1 and "1 failed" in out.stdout, out.stdout[-2000:]
    assert re.search(r"Timeout (\(>0\.1s\) from pytest-timeout|>0\.1s)", out.stdout)   # (2.4; 2.3.1, the floor)
    assert float(re.search(r"in ([\d.]+)s", out.stdout).group(1)) < 10


@pytest.mark.slow
@pytest.mark.timeout(4000)
def test_the_default_suite_passes_at_the_declared_floors(tmp_path):
    """Issue 28: the lowest versions setup.cfg declares for the direct dependencies (uv's
    ``--resolution lowest-direct``, the README's floor command) installed into a fresh venv run the
    default suite without a failure. Needs PyPI (uv and the old releases come from there); about
    10 minutes on two idle cores (18 on a loaded machine)."""
    env = {k: v for k, v in os.environ.items()                            # not this session's pytest state
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("PYTEST_")}
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "floor")], check=True)
    python = tmp_path / "floor" / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "uv", env=env, cwd=tmp_path)
    _run(python, "-m", "uv", "pip", "install", "-q", "--python", str(python), "--resolution", "lowest-direct",
         "-e", f"{ROOT}[test]", env=env, cwd=tmp_path)
    floors = _direct_floors()
    installed = json.loads(_run(python, "-c", "import importlib.metadata as m, json, sys; print(json.dumps("
                                "{n: m.version(n) for n in sys.argv[1:]}))", *floors, env=env, cwd=tmp_path))
    assert {name: _release(v) for name, v in installed.items()} == floors    # each direct dependency at its floor
    assert _run(python, "-c", "import numerics; print(numerics.__file__)", env=env,
                cwd=ROOT).startswith(str(ROOT))                         # the suite tests this checkout
    out = subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=3600)
    assert out.returncode == 0, out.stdout[-4000:]
