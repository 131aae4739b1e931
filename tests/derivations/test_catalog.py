"""The derivation cache is data: never executed, damaged files rebuilt, written atomically."""
import os
import json

import pytest
import sympy as sp

from derivations import catalog
from derivations.core.expression_cache import FORMAT, results_digest
from derivations.symbolic import UnsafeExpression, from_srepr


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A catalog whose shipped and user caches live under tmp_path (derivation
    replaced by a cheap stand-in that counts its calls)."""
    shipped = tmp_path / "pkg" / "derived.json"
    monkeypatch.setattr(catalog.STORE, "shipped", shipped)
    monkeypatch.setattr(catalog.STORE, "user_path", lambda key: tmp_path / "user" / f"derived-{key}.json")
    monkeypatch.setattr(catalog.STORE, "memo", None)
    monkeypatch.setattr(catalog.STORE, "warned", False)
    x = sp.Symbol("x", positive=True)
    calls = []

    def derive():
        calls.append(1)
        return {"demo.f": catalog.Result("demo.f", sp.Derivative(x, x), sp.exp(-x) / 2, "=")}
    monkeypatch.setattr(catalog, "derive_all", derive)
    monkeypatch.setattr(catalog, "result_names", lambda: ["demo.f"])      # what a complete file holds
    return shipped, calls


def _key():
    return catalog.STORE.key()


def _file_text(results) -> str:
    """A well-formed cache file of ``results`` (JSON entries) under the current key, with its digest."""
    return json.dumps({"digest": results_digest(results), "format": FORMAT, "key": _key(), "results": results})


def _user_file(tmp_path):
    return tmp_path / "user" / f"derived-{_key()}.json"


def test_crafted_entry_is_not_executed(isolated_cache, tmp_path):
    shipped, calls = isolated_cache
    marker = tmp_path / "pwned"
    evil = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    shipped.parent.mkdir(parents=True)
    shipped.write_text(_file_text({"demo.f": {"lhs": None, "expr": evil, "relation": "="}}))
    recs = catalog.records()
    assert not marker.exists()
    assert calls == [1]                       # treated as damaged: derived again
    assert str(recs["demo.f"].expr) == "exp(-x)/2"
    assert "__import__" in shipped.read_text()                  # the shipped file is never written
    assert "__import__" not in _user_file(tmp_path).read_text()  # the result went to the user cache


@pytest.mark.parametrize("text", ["[]", "{}", '{"key": "K"}', "null", "not json",
                                  '{"format": F, "key": "K", "results": []}',
                                  '{"format": F, "key": "K", "results": {"a": "Integer(1)"}}',
                                  '{"format": F, "key": "K", "results": {"a": {"lhs": null, "expr": "Integer(1)", '
                                  '"relation": "<"}}}',
                                  '{"format": 2, "key": "K", "results": {"demo.f": {"lhs": null, '
                                  '"expr": "Integer(1)", "relation": "="}}}'])
def test_wrong_shape_is_rebuilt(isolated_cache, text, tmp_path):
    shipped, calls = isolated_cache
    shipped.parent.mkdir(parents=True)
    shipped.write_text(text.replace('"K"', json.dumps(_key())).replace(": F,", f": {FORMAT},"))
    recs = catalog.records()
    assert calls == [1] and list(recs) == ["demo.f"]
    assert json.loads(_user_file(tmp_path).read_text())["key"] == _key()


def test_edited_well_formed_cache_is_not_believed(isolated_cache, tmp_path, capsys):
    """Issue 25 item 3: a cache file edited into another well-formed expression (Integer(-1) ->
    Integer(-2)) no longer matches the digest kept with its key: stale for --check, derived again."""
    shipped, calls = isolated_cache
    catalog.STORE.write(shipped, _key(), catalog.derive_all())
    calls.clear()
    assert catalog.STORE.read(shipped, _key()) is not None
    catalog.main(["--check"])
    assert capsys.readouterr().out.startswith("shipped cache is fresh;")
    text = shipped.read_text()
    assert "Integer(-1)" in text
    shipped.write_text(text.replace("Integer(-1)", "Integer(-2)"))
    assert catalog.STORE.read(shipped, _key()) is None
    assert catalog.main(["--check"]) == 1
    assert capsys.readouterr().out.startswith("shipped cache is STALE;")
    assert str(catalog.records()["demo.f"].expr) == "exp(-x)/2" and calls == [1]


@pytest.mark.parametrize("expr", ["Pow(Integer(10), Integer(1000000000000))",
                                  "Pow(Pow(Pow(Integer(10), Integer(1000)), Integer(1000)), Integer(1000))",
                                  "Integer(" + "9" * 400 + ")", "Float('1.0', precision=100000000)",
                                  "Add(" * 300 + "Integer(1)" + ")" * 300,
                                  "Tuple(" + ", ".join(["Integer(1)"] * 17_000) + ")",
                                  # SymPy evaluates a function of a Float at once; reading '1e-1000000' is slow too
                                  "exp(Float('1e100000', precision=10000))", "Float('1e-1000000')",
                                  "exp(Pow(Float('10.0', precision=10000), Integer(30000)))",
                                  "exp(Float('2.5', 1000000))", "exp(exp(Float('1e308', precision=53)))",
                                  "Pow(Integer(99999), Rational(99999, 122743))",
                                  "Pow(Rational(4306, 2151), Rational(2, 1196950))"],
                         ids=["10**10**12", "nested powers", "400 digits", "precision", "depth 300", "51000 nodes",
                              "exp of 1e100000", "Float text", "exp of a Float power", "positional precision",
                              "OverflowError", "root of a large power", "root of a fraction"])
def test_oversized_cache_entry_is_derived_again_quickly(isolated_cache, tmp_path, expr):
    """Issue 25 item 3: the reader bounds integer size, nesting, node count, precision and powers of
    numbers, and the magnitude of every Float (written or computed), so an entry such as
    Pow(Integer(10), Integer(10**12)) or exp(Float('1e100000')) (which SymPy would evaluate for
    minutes) is refused at once and the results are derived again."""
    import time
    shipped, calls = isolated_cache
    shipped.parent.mkdir(parents=True)
    shipped.write_text(_file_text({"demo.f": {"lhs": None, "expr": expr, "relation": "="}}))
    start = time.perf_counter()
    assert str(catalog.records()["demo.f"].expr) == "exp(-x)/2" and calls == [1]
    assert time.perf_counter() - start < 5
    with pytest.raises(UnsafeExpression):
        from_srepr(expr)


def test_round_trip_and_no_second_derivation(isolated_cache, monkeypatch, tmp_path):
    shipped, calls = isolated_cache
    first = catalog.records()
    monkeypatch.setattr(catalog.STORE, "memo", None)
    second = catalog.records()
    assert calls == [1] and first == second
    assert not shipped.parent.exists()                      # nothing written beside the shipped file
    assert [p.name for p in _user_file(tmp_path).parent.iterdir()] == [_user_file(tmp_path).name]  # no temp files


def test_unwritable_cache_warns_once(isolated_cache, tmp_path, monkeypatch, capsys):
    shipped, calls = isolated_cache
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    monkeypatch.setattr(catalog.STORE, "shipped", blocker / "derived.json")
    monkeypatch.setattr(catalog.STORE, "user_path", lambda key: blocker / "user.json")
    for _ in range(2):
        monkeypatch.setattr(catalog.STORE, "memo", None)
        assert list(catalog.records()) == ["demo.f"]
    err = capsys.readouterr().err
    assert err.count("cannot save the derivation cache") == 1 and err.count("\n") == 1


@pytest.mark.parametrize("text", [
    "Symbol('x').__class__", "eval('1')", "Integer(1) + Integer(2)", "[Integer(1)]",
    "Symbol('x', positive=__import__('os'))", "Function('F', x=1)(Integer(1))", "lambda: 1",
    "Symbol(b'x')", "Float('1.0', precision=53.0)", "Integer(1)(2)",
    # an undefined function's name is written into code by lambdify and the code printers
    "Function(\"__import__('os').system('true') or abs\")(Symbol('x'))", "Function('__class__')(Integer(1))",
    "Function('lambda')(Integer(1))", "Function('F G')(Integer(1))"])
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
    from derivations.core import atomic_write_text
    atomic_write_text(path, "hello\n")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_text() == "hello\n" and (path.stat().st_mode & 0o777) == (0o666 & ~umask)
    assert [p.name for p in path.parent.iterdir()] == ["file.txt"]


def test_atomic_write_neither_sets_nor_reads_the_umask(tmp_path, monkeypatch):
    """``os.umask`` (process-wide, racing with other threads) is not called by a write: the file is created
    with mode 0o666, which the kernel masks, so it gets the mode the umask gives."""
    from derivations.core import atomic_file
    mask = os.umask(0o022)
    os.umask(mask)

    def umask(mask):
        raise AssertionError(f"os.umask({mask:#o}) called during a write")

    monkeypatch.setattr(atomic_file.os, "umask", umask)
    atomic_file.atomic_write_text(tmp_path / "file.txt", "hello\n")
    atomic_file.atomic_write(tmp_path / "file.bin", lambda fh: fh.write(b"x"), binary=True, fsync=True)
    for name in ("file.txt", "file.bin"):
        assert ((tmp_path / name).stat().st_mode & 0o777) == (0o666 & ~mask)


def test_cli_output_into_closed_pipe_or_full_device():
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m derivations.catalog | head -n 1"],
                         capture_output=True, text=True, cwd=root, env=env)
    assert out.returncode == 0 and out.stderr == "" and out.stdout.count("\n") == 1
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            res = subprocess.run([sys.executable, "-m", "derivations.catalog", "--check"], stdout=full,
                                 stderr=subprocess.PIPE, text=True, cwd=root, env=env)
        assert res.returncode == 1 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_lazy_results_decode_only_what_is_read_and_rebuild_a_damaged_entry(isolated_cache, monkeypatch,
                                                                          tmp_path):
    """ExpressionStore.lazy checks the file at once, decodes an entry when it is read, and
    falls back to load (which rebuilds the damaged cache) when an entry read is damaged."""
    shipped, calls = isolated_cache
    monkeypatch.setattr(catalog, "result_names", lambda: ["demo.f", "demo.g"])
    x = sp.Symbol("x", positive=True)
    entries = catalog._encode({"demo.f": catalog.Result("demo.f", None, sp.exp(-x) / 2, "=")})
    entries["demo.g"] = {"lhs": None, "expr": "__import__('os')", "relation": "="}
    shipped.parent.mkdir(parents=True)
    shipped.write_text(_file_text(entries))
    decoded = []
    decode = catalog.STORE.decode
    monkeypatch.setattr(catalog.STORE, "decode", lambda e: decoded.extend(e) or decode(e))
    lazy = catalog.STORE.lazy()
    assert sorted(lazy) == ["demo.f", "demo.g"] and decoded == [] and calls == []
    assert str(lazy["demo.f"].expr) == "exp(-x)/2" and decoded == ["demo.f"] and calls == []
    with pytest.raises(KeyError):
        lazy["demo.g"]                                     # damaged: everything derived again
    assert calls == [1] and list(lazy) == ["demo.f"] and "demo.g" not in _user_file(tmp_path).read_text()
    assert catalog.STORE.lazy() is catalog.STORE.memo      # loaded once: the memo from now on


def test_key_is_the_same_with_or_without_sympy_imported(monkeypatch):
    """The SymPy version in the key comes from the loaded module when there is one (cheap)
    and from the distribution otherwise: both must give the same key."""
    import importlib.metadata as md
    import sys

    from derivations.core import expression_cache as ec
    assert ec.sympy_version() == sp.__version__ == md.version("sympy")
    with_sympy = ec.source_key()
    monkeypatch.delitem(sys.modules, "sympy")
    assert ec.sympy_version() == md.version("sympy") and ec.source_key() == with_sympy


def test_one_cache_keyed_on_every_source_module(tmp_path, monkeypatch):
    """Both stores are one implementation, keyed automatically on every module of core, symbolic,
    engine and tasks (no hand-kept list): a new module, or an edit anywhere there, changes both keys."""
    from derivations import task_catalog
    from derivations.core import expression_cache as ec
    files = [p.relative_to(ec.PACKAGE_DIR).as_posix() for p in ec.source_files()]
    assert files == sorted(files)
    for needed in ("core/vocabulary.py", "core/expression_cache.py", "symbolic/symbols.py", "engine/reduce.py",
                   "tasks/paper/model.py", "tasks/variants.py", "tasks/authors.py"):
        assert needed in files
    assert type(catalog.STORE) is type(task_catalog.STORE) is ec.ExpressionStore
    before = (catalog.STORE.key(), task_catalog.STORE.key())
    assert before[0] != before[1]                     # each store's own module is part of its key
    fake = tmp_path / "derivations"
    for package in ec.SOURCE_PACKAGES:
        (fake / package).mkdir(parents=True)
        for path in (ec.PACKAGE_DIR / package).rglob("*.py"):
            target = fake / path.relative_to(ec.PACKAGE_DIR)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    monkeypatch.setattr(ec, "PACKAGE_DIR", fake)
    owner = ec.PACKAGE_DIR / "catalog.py"
    owner.write_bytes(catalog.STORE.owner.read_bytes())
    monkeypatch.setattr(catalog.STORE, "owner", owner)
    key = catalog.STORE.key()
    (fake / "engine" / "new_module.py").write_text("x = 1\n")
    assert catalog.STORE.key() != key
    (fake / "engine" / "new_module.py").unlink()
    assert catalog.STORE.key() == key
    (fake / "core" / "vocabulary.py").write_text((fake / "core" / "vocabulary.py").read_text() + "# edit\n")
    assert catalog.STORE.key() != key


def test_both_commands_share_the_check_and_rebuild_texts(tmp_path, monkeypatch, capsys):
    from derivations import task_catalog
    monkeypatch.setattr(task_catalog.STORE, "shipped", tmp_path / "tasks.json")
    # the demo rebuild below replaces the store's in-memory results: restored after this test, or
    # every later task in this process would miss them and derive its reduction again
    monkeypatch.setattr(task_catalog.STORE, "memo", task_catalog.STORE.memo)
    assert task_catalog.main(["--check"]) == 1
    assert capsys.readouterr().out == ("shipped task cache is STALE: run python -m derivations.task_catalog "
                                       "--rebuild\n")
    monkeypatch.setattr(task_catalog.STORE, "derive", lambda: {"paper/CACO": {"demo": 1}})
    monkeypatch.setattr(task_catalog.STORE, "shape", lambda: {"paper/CACO": {"demo": int}})
    assert task_catalog.main(["--rebuild"]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'tasks.json'} (key {task_catalog.STORE.key()[:12]})\n"
    assert task_catalog.main(["--check"]) == 0
    assert capsys.readouterr().out == "shipped task cache is fresh\n"
    data = json.loads((tmp_path / "tasks.json").read_text())
    assert data == {"format": FORMAT, "key": task_catalog.STORE.key(), "results": {"paper/CACO": {"demo": 1}},
                    "digest": results_digest({"paper/CACO": {"demo": 1}})}


@pytest.mark.parametrize("command", ["catalog", "task_catalog"])
@pytest.mark.parametrize("argv", [["--bogus"], ["--check", "--rebuild"], ["--rebuild", "--check"], ["extra"]])
def test_bad_options_one_line_exit_2_nothing_done(command, argv, tmp_path, monkeypatch, capsys):
    """Issue 25 item 11: an unknown option, or --check with --rebuild, is one line and exit 2,
    before any work (nothing derived, nothing written)."""
    import importlib
    module = importlib.import_module(f"derivations.{command}")
    monkeypatch.setattr(module.STORE, "shipped", tmp_path / "x.json")
    monkeypatch.setattr(module.STORE, "derive", lambda: pytest.fail("derived"))
    assert module.main(argv) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and out.err.startswith(f"derivations.{command}: error: ")
    assert not (tmp_path / "x.json").exists()


def test_source_checkout_is_told_from_an_installation(tmp_path, monkeypatch):
    """A checkout is the folder holding qkov's setup.cfg beside ``derivations``; site-packages has none
    (or another project's)."""
    from derivations.core import version as ec
    assert ec.source_checkout() == ec.PACKAGE_DIR.parent and (ec.PACKAGE_DIR.parent / "setup.cfg").is_file()
    installed = tmp_path / "site-packages" / "derivations"
    installed.mkdir(parents=True)
    monkeypatch.setattr(ec, "PACKAGE_DIR", installed)
    assert ec.source_checkout() is None
    (installed.parent / "setup.cfg").write_text("[metadata]\nname = other\n")
    assert ec.source_checkout() is None
    (installed.parent / "setup.cfg").write_text("[metadata]\nname = qkov\n")
    assert ec.source_checkout() == installed.parent


@pytest.mark.parametrize("command", ["catalog", "task_catalog"])
def test_rebuild_of_an_installed_package_is_refused_nothing_written(command, tmp_path, monkeypatch, capsys):
    """``--rebuild`` rewrites the shipped files of a checkout; an installed package's directory is never
    written: one line, exit 2, nothing derived."""
    import importlib
    from derivations.core import expression_cache as ec, version
    module = importlib.import_module(f"derivations.{command}")
    for where in (ec, version):       # the message's folder, and where source_checkout looks
        monkeypatch.setattr(where, "PACKAGE_DIR", tmp_path / "site-packages" / "derivations")
    monkeypatch.setattr(module.STORE, "shipped", tmp_path / "x.json")
    monkeypatch.setattr(module.STORE, "derive", lambda: pytest.fail("derived"))
    assert module.main(["--rebuild"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1
    assert out.err.startswith(f"derivations.{command}: error: --rebuild rewrites the shipped cache of a source "
                              "checkout; this qkov is installed in ")
    assert not (tmp_path / "x.json").exists()


def test_user_cache_location_follows_xdg(monkeypatch, tmp_path):
    """Derived data goes to $XDG_CACHE_HOME/qkov when that is an absolute path (the XDG rule),
    else ~/.cache/qkov."""
    from derivations.core import expression_cache as ec
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ec.user_cache("derived", "k") == tmp_path / "xdg" / "qkov" / "derived-k.json"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in ("", "relative/dir"):
        monkeypatch.setenv("XDG_CACHE_HOME", unset)
        assert ec.cache_dir() == tmp_path / "home" / ".cache" / "qkov"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert ec.cache_dir() == tmp_path / "home" / ".cache" / "qkov"


def test_a_cache_miss_writes_only_the_user_cache(tmp_path, monkeypatch):
    """Issue 28: on a miss (another key, as for a SymPy version other than the shipped cache's) the
    results go to the user cache only; the shipped file, read with importlib.resources, is untouched."""
    import importlib.resources

    from derivations.core import expression_cache as ec
    store = ec.ExpressionStore("demo", catalog.__file__, lambda: {"a": 1}, dict, dict, prog="demo", what="demo",
                               shape=lambda: {"a": int})
    assert store.shipped == importlib.resources.files("derivations") / "_cache" / "demo.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(ec, "sympy_version", lambda: "0.0-not-the-shipped-one")
    assert store.load() == {"a": 1} and not store.shipped.is_file()
    assert [p.name for p in (tmp_path / "qkov").iterdir()] == [f"demo-{store.key()}.json"]


@pytest.mark.parametrize("kind", ["fifo", "zero", "sparse"])
def test_a_cache_file_that_is_a_fifo_a_device_or_huge_is_rebuilt_at_once(isolated_cache, tmp_path, kind):
    """The user cache replaced by a FIFO without a writer, a link to /dev/zero or a sparse 1 GiB
    file is damaged: derived again at once, never waited on or read whole (run in a thread that a
    failing check unblocks)."""
    import os
    import threading
    shipped, calls = isolated_cache
    user = _user_file(tmp_path)
    user.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(user)
    elif kind == "zero":
        user.symlink_to("/dev/zero")
    else:
        with open(user, "wb") as fh:
            fh.truncate(1 << 30)
    assert catalog.STORE.entries(shipped, _key()) is None
    loaded = []
    worker = threading.Thread(target=lambda: loaded.append(catalog.records()), daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive() and kind == "fifo":
        os.close(os.open(user, os.O_WRONLY | os.O_NONBLOCK))   # unblock the reader of the old code
    assert not worker.is_alive() and calls == [1] and str(loaded[0]["demo.f"].expr) == "exp(-x)/2"
    assert user.is_file() and json.loads(user.read_text())["key"] == _key()


@pytest.mark.parametrize("module", ["catalog", "task_catalog"])
@pytest.mark.parametrize("argv", [["--check"], ["--rebuild"]])
def test_ctrl_c_is_one_line_exit_130(module, argv, monkeypatch, capsys):
    """Ctrl-C while a cache command works ends with one line, exit status 130, no traceback."""
    import importlib
    command = importlib.import_module(f"derivations.{module}")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    for name in ("key", "rebuild", "load"):
        monkeypatch.setattr(command.STORE, name, interrupted)
    monkeypatch.setattr(command, "results", interrupted, raising=False)
    assert command.main(argv) == 130
    out, err = capsys.readouterr()
    assert err == f"derivations.{module}: interrupted\n"


def test_an_edited_built_in_task_file_changes_the_key(tmp_path, monkeypatch):
    """The built-in tasks are task files (derivations/tasks/files/*.toml): an edit of one (here the query's own
    copies of query-in-context, whose reduction it changes) must make the shipped task cache stale, as an edit
    of a module does, not leave its old reduction fresh."""
    import shutil

    from derivations.core import expression_cache as ec
    fake = tmp_path / "derivations"
    for package in ec.SOURCE_PACKAGES:
        shutil.copytree(ec.PACKAGE_DIR / package, fake / package)
    monkeypatch.setattr(ec, "PACKAGE_DIR", fake)
    key = ec.source_key()
    task_file = fake / "tasks" / "files" / "query-in-context.toml"
    task_file.write_text(task_file.read_text().replace("multiplicity = 0", "multiplicity = 2"))
    assert ec.source_key() != key



def _pop(name):
    return lambda results: results.pop(name)


def _set(value, *path):
    def edit(results):
        for key in path[:-1]:
            results = results[key]
        results[path[-1]] = value
    return edit


#: Per store: a forger's edits of its complete results (each file then written with a valid digest); the
#: forms of a shape are tested in tests/derivations/core/test_json_shape.py.
FORGERIES = {
    "derived": {"missing entry": _pop("CACO.dmu_OV_dt_alpha"),
                "ill-typed relation": _set(1, "model.alpha", "relation")},
    "printed": {"missing entry": lambda r: r["text"].pop("CACO.dmu_OV_dt_alpha")},
    "tasks": {"missing entry": _pop("query-in-context/CACO"), "ill-typed note": _set(5, "paper/CAFO", "note"),
              "another task's entry": _set("paper", "query-in-context/CAFO", "task")}}


@pytest.mark.parametrize("stem,forgery", [(stem, name) for stem, edits in FORGERIES.items() for name in edits])
def test_a_forged_cache_lacking_or_mistyping_an_entry_is_rebuilt(stem, forgery, tmp_path, monkeypatch):
    """A user cache forged with a valid digest but an entry missing or of another type (a KeyError, or a
    wrong text believed, in print_dynamics) is damaged, as an edited one is: derived again into the user
    cache."""
    from pathlib import Path

    from derivations import task_catalog
    store = {"derived": catalog.STORE, "printed": catalog.PRINTED, "tasks": task_catalog.STORE}[stem]
    complete = store.load()
    forged = json.loads(Path(str(store.shipped)).read_text())["results"]
    FORGERIES[stem][forgery](forged)
    monkeypatch.setattr(store, "shipped", tmp_path / "shipped.json")
    monkeypatch.setattr(store, "user_path", lambda key: tmp_path / f"{stem}-{key}.json")
    monkeypatch.setattr(store, "memo", None)
    key = store.key()
    user = store.user_path(key)
    user.write_text(json.dumps({"digest": results_digest(forged), "format": FORMAT, "key": key, "results": forged}))
    assert store.entries(user, key) is None
    calls = []
    monkeypatch.setattr(store, "derive", lambda: calls.append(1) or complete)
    assert store.lazy() == complete and calls == [1]
    assert store.entries(user, key) is not None                     # rewritten whole


def test_print_dynamics_rebuilds_a_printed_cache_lacking_a_result(tmp_path, monkeypatch, capsys):
    """The command the forged printed cache broke (a KeyError traceback) prints what it prints with the
    shipped cache."""
    from derivations.print_dynamics import main
    argv = ["--format", "text", "--parameterization", "CACO"]
    assert main(argv) == 0
    expected = capsys.readouterr().out
    store = catalog.PRINTED
    complete = store.load()
    forged = {fmt: {k: v for k, v in texts.items() if k != "CACO.dmu_OV_dt_alpha"} for fmt, texts in complete.items()}
    monkeypatch.setattr(store, "shipped", tmp_path / "shipped.json")
    monkeypatch.setattr(store, "user_path", lambda key: tmp_path / f"printed-{key}.json")
    monkeypatch.setattr(store, "memo", None)
    monkeypatch.setattr(store, "derive", lambda: complete)
    key = store.key()
    store.user_path(key).write_text(json.dumps({"digest": results_digest(forged), "format": FORMAT, "key": key,
                                                "results": forged}))
    assert main(argv) == 0
    assert capsys.readouterr() == (expected, "")
