"""require_optional: an optional dependency checked before any work."""
import pytest

from derivations.core.optional import require_optional

#: A module whose initialization an interrupt leaves half made, as a pybind11 extension's: the interrupt is
#: reported as ``ImportError: initialization failed`` in its place.
_EXTENSION = '''
import signal
try:
    signal.raise_signal(signal.SIGINT)
    total = sum(range(100000))
except KeyboardInterrupt as exc:
    raise ImportError("initialization failed") from exc
'''


def test_an_interrupt_while_the_dependency_loads_is_an_interrupt_not_a_usage_error(tmp_path, monkeypatch):
    """Ctrl-C while matplotlib's extensions initialize stopped them (``ImportError: initialization failed``,
    then a crash as Python exited) and was reported as bad input, exit 2: the interrupt is now raised once the
    module has loaded, whole."""
    import sys

    (tmp_path / "half_made_extension.py").write_text(_EXTENSION)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        require_optional("half_made_extension", "plot", "--output")
    assert hasattr(sys.modules["half_made_extension"], "total")
    monkeypatch.delitem(sys.modules, "half_made_extension")
