"""The derivation cache is data: never executed, damaged files rebuilt, written atomically."""
import json

import pytest
import sympy as sp

from derivations import catalog
from derivations.srepr_reader import UnsafeExpression, from_srepr


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A catalog whose shipped and user caches live under tmp_path (derivation
    replaced by a cheap stand-in that counts its calls)."""
    shipped = tmp_path / "pkg" / "derived.json"
    monkeypatch.setattr(catalog, "SHIPPED_CACHE", shipped)
    monkeypatch.setattr(catalog, "_user_cache", lambda key: tmp_path / "user" / f"derived-{key}.json")
    monkeypatch.setattr(catalog, "_RECORDS", None)
    monkeypatch.setattr(catalog, "_WARNED", False)
    x = sp.Symbol("x", positive=True)
    calls = []

    def derive():
        calls.append(1)
        return {"demo.f": catalog.Result("demo.f", sp.Derivative(x, x), sp.exp(-x) / 2, "=")}
    monkeypatch.setattr(catalog, "derive_all", derive)
    return shipped, calls


def _key():
    return catalog.cache_key()


def test_crafted_entry_is_not_executed(isolated_cache, tmp_path):
    shipped, calls = isolated_cache
    marker = tmp_path / "pwned"
    evil = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    shipped.parent.mkdir(parents=True)
    shipped.write_text(json.dumps({"key": _key(), "results": {
        "demo.f": {"lhs": None, "expr": evil, "relation": "="}}}))
    recs = catalog.records()
    assert not marker.exists()
    assert calls == [1]                       # treated as damaged: derived again
    assert str(recs["demo.f"].expr) == "exp(-x)/2"
    assert "__import__" not in shipped.read_text()   # and rewritten


@pytest.mark.parametrize("text", ["[]", "{}", '{"key": "K"}', "null", "not json",
                                  '{"key": "K", "results": []}', '{"key": "K", "results": {"a": "Integer(1)"}}',
                                  '{"key": "K", "results": {"a": {"lhs": null, "expr": "Integer(1)", "relation": "<"}}}'])
def test_wrong_shape_is_rebuilt(isolated_cache, text):
    shipped, calls = isolated_cache
    shipped.parent.mkdir(parents=True)
    shipped.write_text(text.replace('"K"', json.dumps(_key())))
    recs = catalog.records()
    assert calls == [1] and list(recs) == ["demo.f"]
    assert json.loads(shipped.read_text())["key"] == _key()


def test_round_trip_and_no_second_derivation(isolated_cache, monkeypatch):
    shipped, calls = isolated_cache
    first = catalog.records()
    monkeypatch.setattr(catalog, "_RECORDS", None)
    second = catalog.records()
    assert calls == [1] and first == second
    assert [p.name for p in shipped.parent.iterdir()] == ["derived.json"]   # no temp files left


def test_unwritable_cache_warns_once(isolated_cache, tmp_path, monkeypatch, capsys):
    shipped, calls = isolated_cache
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    monkeypatch.setattr(catalog, "SHIPPED_CACHE", blocker / "derived.json")
    monkeypatch.setattr(catalog, "_user_cache", lambda key: blocker / "user.json")
    for _ in range(2):
        monkeypatch.setattr(catalog, "_RECORDS", None)
        assert list(catalog.records()) == ["demo.f"]
    err = capsys.readouterr().err
    assert err.count("cannot save the derivation cache") == 1 and err.count("\n") == 1


@pytest.mark.parametrize("text", [
    "Symbol('x').__class__", "eval('1')", "Integer(1) + Integer(2)", "[Integer(1)]",
    "Symbol('x', positive=__import__('os'))", "Function('F', x=1)(Integer(1))", "lambda: 1",
    "Symbol(b'x')", "Float('1.0', precision=53.0)", "Integer(1)(2)" ])
def test_reader_rejects_anything_outside_the_whitelist(text):
    with pytest.raises(UnsafeExpression):
        from_srepr(text)


def test_reader_round_trips_every_shipped_result():
    for rec in catalog.records().values():
        assert from_srepr(sp.srepr(rec.expr)) == rec.expr
        if rec.lhs is not None:
            assert from_srepr(sp.srepr(rec.lhs)) == rec.lhs


def test_atomic_write_has_ordinary_permissions(tmp_path):
    import os
    path = tmp_path / "sub" / "file.txt"
    from derivations.atomic_file import atomic_write_text
    atomic_write_text(path, "hello\n")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_text() == "hello\n" and (path.stat().st_mode & 0o777) == (0o666 & ~umask)
    assert [p.name for p in path.parent.iterdir()] == ["file.txt"]


def test_cli_output_into_closed_pipe_or_full_device():
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m derivations.catalog | head -n 1"],
                         capture_output=True, text=True, cwd=root, env=env)
    assert out.returncode == 0 and out.stderr == "" and out.stdout.count("\n") == 1
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            res = subprocess.run([sys.executable, "-m", "derivations.catalog", "--check"], stdout=full,
                                 stderr=subprocess.PIPE, text=True, cwd=root, env=env)
        assert res.returncode == 1 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
