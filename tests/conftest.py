"""Fixtures shared by several test modules."""
import pytest


@pytest.fixture(scope="module")
def cluster():
    """A real Dask ``LocalCluster`` (2 worker processes) for one test module; skipped without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None, protocol="tcp") as local:
        yield local
