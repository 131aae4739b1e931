"""The task engine's cache: data only, fresh, round trip, damaged files rebuilt."""
import json

import pytest
import sympy as sp

from derivations import task_catalog as C
from derivations.symbolic import wright_omega
from derivations.symbolic import UnsafeExpression, from_srepr, to_srepr
from derivations.symbolic import M, alpha, b, mu_OV, mu_QK, n


def test_shipped_cache_is_fresh():
    assert C.STORE.read(C.STORE.shipped, C.STORE.key()) is not None, \
        "stale: python -m derivations.task_catalog --rebuild"


@pytest.mark.parametrize("expr", [
    sp.log(1 + (M - 1) * sp.exp(-alpha * mu_OV)) / sp.sqrt(b) + sp.Rational(3, 7) * sp.Ei(mu_QK),
    wright_omega(mu_QK + sp.log(n)) + sp.Float("0.125") * sp.pi,
    sp.Symbol("W_QK[q_k,r_k]", real=True) ** 2 - sp.Symbol("n_c", positive=True, integer=True)])
def test_expression_round_trip(expr):
    tree = json.loads(json.dumps(to_srepr(expr)))
    back = from_srepr(tree)
    pairs = list(zip(sorted(back.free_symbols, key=str), sorted(expr.free_symbols, key=str)))
    assert [s.name for s, _ in pairs] == [t.name for _, t in pairs]
    assert all(s.assumptions0 == t.assumptions0 for s, t in pairs)
    assert sp.simplify(back - expr) == 0


def test_loading_never_evaluates_text():
    with pytest.raises(ValueError, match="non-whitelisted"):
        from_srepr("__import__(Symbol('os'))")
    with pytest.raises(UnsafeExpression, match="cannot store"):
        to_srepr(sp.sin(mu_OV))


def test_crafted_entry_is_rebuilt_not_executed(tmp_path, monkeypatch):
    """A tasks.json entry under the right key holding code is damaged: never run, derived again."""
    marker = tmp_path / "pwned"
    results = _shipped_results()
    results["paper/CACO"]["alpha"] = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    shipped = tmp_path / "tasks.json"
    C.STORE.write(shipped, C.STORE.key(), results)
    _isolate(monkeypatch, shipped)
    calls = []
    monkeypatch.setattr(C, "derive_all", lambda: calls.append(1) or _shipped_results())
    red = C.task_reduction("paper", "CACO")
    assert not marker.exists() and calls == [1] and red.alpha.free_symbols
    assert "__import__" in shipped.read_text()                    # the shipped file is never written
    assert C.STORE.read(C.STORE.user_path(C.STORE.key()), C.STORE.key()) is not None   # the user cache is


def test_cached_equals_derived():
    from derivations.engine import reduce_task
    cached = C.task_reduction("paper", "CACO")
    derived = reduce_task("paper", "CACO")
    assert cached.odes == derived.odes and cached.mapping == derived.mapping
    assert [c.symbol for c in cached.coordinates] == [c.symbol for c in derived.coordinates]
    assert cached.family_odes == derived.family_odes


def test_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    """A damaged shipped file is ignored; the results are derived again into the user cache."""
    shipped = tmp_path / "tasks.json"
    shipped.write_text("{not json")
    _isolate(monkeypatch, shipped)
    calls = []
    monkeypatch.setattr(C, "derive_all", lambda: calls.append(1) or _shipped_results())
    red = C.task_reduction("paper", "CACO")
    assert calls == [1] and red.odes is not None
    assert shipped.read_text() == "{not json"
    assert C.STORE.read(C.STORE.user_path(C.STORE.key()), C.STORE.key()) is not None   # written atomically


def _isolate(monkeypatch, shipped):
    monkeypatch.setattr(C.STORE, "shipped", shipped)
    monkeypatch.setattr(C.STORE, "user_path", lambda key: shipped.parent / "user" / f"tasks-{key}.json")
    monkeypatch.setattr(C.STORE, "memo", None)
    monkeypatch.setattr(C, "_MEMO", {})


def _shipped_results():
    from pathlib import Path
    path = Path(C.__file__).resolve().parent / "_cache" / "tasks.json"
    return json.loads(path.read_text())["results"]



@pytest.mark.parametrize("change", [("types = \"R\"", "types = 100000"), ("\"m / R\"", "\"(m + 1)**16\"")],
                         ids=["1e5 types", "(m+1)**16"])
def test_a_task_too_costly_to_reduce_is_one_line_within_the_time_limit(change, tmp_path):
    """A task file whose numbers or powers keep SymPy busy for hours (100000 types, a multiplicity
    (m + 1)**16): print_dynamics stops at REDUCTION_SECONDS (0.5 s here) with one line, exit 2,
    nothing printed. A subprocess, so that a run past the bound is killed (and fails) at 30 s."""
    import pathlib
    import subprocess
    import sys
    text = (pathlib.Path(C.__file__).parent / "tasks" / "files" / "query-copies.toml").read_text()
    path = tmp_path / "costly.toml"
    path.write_text(text.replace('name = "query-copies"', f'name = "costly-{len(change[1])}"').replace(*change))
    code = ("import sys; import derivations.task_catalog as C; C.REDUCTION_SECONDS = 0.5; "
            "from derivations.print_dynamics import main; "
            f"sys.exit(main(['--task', {str(path)!r}, '--parameterization', 'CACO']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and run.stdout == "" and run.stderr.count("\n") == 1
    assert "did not finish within 0.5 s" in run.stderr and "(CACO)" in run.stderr


def test_a_reduction_shows_the_seconds_it_spends_on_a_terminal(tmp_path, monkeypatch):
    """A task file's reduction runs up to REDUCTION_SECONDS: past its first second (a tenth here) a
    terminal shows '<task> (<parameterization>): reducing' and the seconds spent, not silence."""
    import io
    import pathlib
    import sys

    from derivations.core import time_bound

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    text = (pathlib.Path(C.__file__).parent / "tasks" / "files" / "query-copies.toml").read_text()
    path = tmp_path / "costly.toml"
    path.write_text(text.replace('name = "query-copies"', 'name = "costly-shown"').replace('"m / R"', '"(m + 1)**16"'))
    monkeypatch.setattr(C, "REDUCTION_SECONDS", 0.4)
    monkeypatch.setattr(time_bound, "_TICK", 0.1)
    monkeypatch.setattr(sys, "stderr", Terminal())
    with pytest.raises(ValueError, match=r"did not finish within 0.4 s"):
        C.task_reduction(str(path), "CACO")
    assert "costly-shown (CACO): reducing" in sys.stderr.getvalue()


def test_a_reduction_that_ran_out_of_time_is_refused_at_once_the_second_time(tmp_path, monkeypatch):
    """predict asks for the reduction once per ratio: a task whose reduction ran out of time (a
    multiplicity (m + 1)**16, at a 0.3 s bound here) is refused at once on the next request, in the
    same words, instead of spending the bound again."""
    import pathlib
    import time
    text = (pathlib.Path(C.__file__).parent / "tasks" / "files" / "query-copies.toml").read_text()
    path = tmp_path / "costly.toml"
    path.write_text(text.replace('name = "query-copies"', 'name = "costly-again"').replace('"m / R"', '"(m + 1)**16"'))
    monkeypatch.setattr(C, "REDUCTION_SECONDS", 0.3)
    monkeypatch.setattr(C, "_TIMED_OUT", {})
    with pytest.raises(ValueError, match=r"did not finish within 0.3 s .*too many token groups") as first:
        C.task_reduction(str(path), "CACO")
    start = time.perf_counter()
    with pytest.raises(ValueError) as second:
        C.task_reduction(str(path), "CACO")
    assert time.perf_counter() - start < 0.1 and str(second.value) == str(first.value)
