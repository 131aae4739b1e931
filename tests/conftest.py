"""Fixtures shared by several test modules."""
import pytest

#: The longest test file (the documentation site is built once, then checked: more than a third
#: of the suite's time on one worker): collected first, so that under ``--dist loadfile`` (with
#: ``--no-loadscope-reorder``, setup.cfg) one worker starts on it at once while the other shares
#: the rest, instead of starting it last and finishing it alone.
LONGEST_FIRST = ("test_docs_site.py",)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)     # stable: else as collected


@pytest.fixture(scope="module")
def cluster():
    """A real Dask ``LocalCluster`` (2 worker processes) for one test module; skipped without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, protocol="tcp") as local:
        yield local
