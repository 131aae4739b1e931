"""The one expression cache's store: what a load returns does not depend on where the results came from."""
from derivations import catalog
from derivations.core import expression_cache as ec


def test_a_load_lists_the_results_in_one_order_derived_or_read(tmp_path, monkeypatch):
    """A miss (an installed package under another SymPy, a first run) derives the results; the next run
    reads them from the user cache, whose file keeps them sorted by name. Both give the same order, so
    ``python -m derivations.catalog`` lists the results alike on either run (it listed them in the order
    of derivation on the first)."""
    derived = {"model.b": 2, "CACO.a": 1, "asymptotics.c": 3}
    store = ec.ExpressionStore("demo", catalog.__file__, lambda: dict(derived), dict, dict, prog="demo", what="demo",
                               shape=lambda: dict.fromkeys(derived, int))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = store.load()
    store.memo = None
    second = store.load()
    assert store.read(store.user_path(store.key()), store.key()) == second     # read from the file
    assert list(first) == list(second) == sorted(derived)


def test_a_warning_stderr_cannot_take_leaves_stdout_alone(tmp_path, monkeypatch, capsys):
    """The warning that the user cache cannot be saved, with stderr closed at start (``2>&-``: sys.stderr is
    None), is lost: print(file=None) wrote it into stdout, into the middle of print_dynamics' JSON."""
    import sys
    store = ec.ExpressionStore("demo", catalog.__file__, lambda: {"a": 1}, dict, dict, prog="demo", what="demo",
                               shape=lambda: {"a": int})
    (tmp_path / "qkov").write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "stderr", None)
    assert store.load() == {"a": 1}
    assert capsys.readouterr().out == ""


def test_without_a_home_nothing_is_cached_and_the_results_are_derived(monkeypatch, capsys):
    """No ``XDG_CACHE_HOME``, no ``HOME`` and a user without a password entry (``Path.home()`` raises
    RuntimeError): there is no user cache. A miss derives the results and says once that they cannot be
    saved; the lazy path derives too. It ended in a RuntimeError traceback."""
    from pathlib import Path

    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert ec.cache_dir() is None and ec.user_cache("demo", "k") is None
    calls = []
    store = ec.ExpressionStore("demo", catalog.__file__, lambda: calls.append(1) or {"a": 1}, dict, dict,
                               prog="demo", what="demo cache", shape=lambda: {"a": int})
    assert dict(store.lazy()) == {"a": 1} and store.load() == {"a": 1} and calls == [1]
    err = capsys.readouterr().err
    assert err == ("demo: warning: cannot save the demo cache (no user cache directory (set XDG_CACHE_HOME or "
                   "HOME)); results will be derived again next time\n")


def test_the_sympy_version_of_the_key_is_read_without_importing_a_package(monkeypatch):
    """The key's SymPy version, without SymPy imported, is the line of sympy/release.py, read as data:
    neither SymPy nor importlib.metadata (50 ms and more of print_dynamics' cold start) is imported.
    Where that file does not tell, the distribution's metadata does, with the same string."""
    import importlib.metadata as md
    import importlib.util
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    code = ("import sys\nfrom derivations.core.expression_cache import sympy_version\n"
            "before = {m for m in ('sympy', 'importlib.metadata') if m in sys.modules}\n"
            "version = sympy_version()\n"
            "print(version, sorted({m for m in ('sympy', 'importlib.metadata') if m in sys.modules} - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env=dict(os.environ, PYTHONPATH=str(root)))
    assert out.returncode == 0 and out.stdout.split() == [md.version("sympy"), "[]"], out
    monkeypatch.delitem(sys.modules, "sympy", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)     # no release.py to read
    assert ec.sympy_version() == md.version("sympy")
