"""Fixtures shared by several test modules, the suite's Hypothesis profile, and the hooks that keep a
timeout from being lost in a finalizer (``_timeouts``)."""
import pytest
from hypothesis import HealthCheck, settings

from _timeouts import pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown  # noqa: F401 (hooks)

#: The suite's Hypothesis settings (one place): no per-example deadline (the first example of a test
#: may import SymPy or compile), 25 examples unless a test asks for another count with ``@settings``.
#: ``qkov`` (the default) is derandomized: examples come from a fixed seed, not a new one each run, and no
#: example database is written (Hypothesis also mixes in constants of the project's modules loaded so
#: far, which differ with the tests a worker ran before). ``qkov-explore``
#: (``python -m pytest --hypothesis-profile=qkov-explore``) draws fresh examples and keeps failing ones
#: in ``.hypothesis/``, for looking for new counterexamples.
_COMMON = dict(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("qkov", derandomize=True, database=None, **_COMMON)
settings.register_profile("qkov-explore", **_COMMON)
settings.load_profile("qkov")

#: The longest test files, longest first (seconds on the 2-core machine: 52, 19, 15, 11, 10, 9, 9, 8, 7; the
#: documentation site is built once, then checked): collected first, in this order, so that under
#: ``--dist loadfile`` (with ``--no-loadscope-reorder``, setup.cfg) the workers start on them and
#: share the many short files at the end, instead of one worker starting a long file last and
#: finishing it alone while the other waits.
LONGEST_FIRST = ("test_docs_site.py", "test_experiments_cli.py", "test_task_reduction.py", "test_latex.py",
                 "test_derivations.py", "test_print_dynamics.py", "test_figures.py",
                 "test_experiments_targets.py", "test_experiments_scaleout.py")


#: Seconds a ``-m slow`` test may run before it fails (pytest-timeout; the default suite's bound, 300 s,
#: is ``timeout`` in setup.cfg): the full-length runs take minutes, a hang is still one failure.
SLOW_TIMEOUT = 1800


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))     # stable: else as collected
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))


@pytest.fixture
def no_figures(monkeypatch):
    """The experiments build and write no figures in this test (``tests/_figures.py``)."""
    from _figures import skip_figures
    skip_figures(monkeypatch)


@pytest.fixture
def unsaved_figures(monkeypatch):
    """The experiments build their figures in this test but write none (``tests/_figures.py``)."""
    from _figures import unsaved_figures
    unsaved_figures(monkeypatch)


@pytest.fixture
def sweep_png(monkeypatch):
    """The experiments write one figure in this test, ``sweep.png``; the others are built, not written
    (``tests/_figures.py``)."""
    from _figures import only_figures
    only_figures(monkeypatch, ("sweep",), ("png",))


@pytest.fixture(scope="module")
def cluster():
    """A real Dask ``LocalCluster`` (2 worker processes) for one test module; skipped without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0", protocol="tcp") as local:
        yield local
