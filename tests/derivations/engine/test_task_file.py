"""Tasks in TOML files (issue 26 items 1, 7): the file's keys are Task's and TokenGroup's; every error
is one line naming the file and the key, exit status 2, nothing written."""
import contextlib
import io
import pathlib

import pytest

from derivations.engine.task_file import load_task, task_from_toml, task_text
from derivations.tasks import get_task
from derivations.tasks.variants import VARIANT_FILES, variant_text

ROOT = pathlib.Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "examples" / "query-copies-file.toml"
BASE = EXAMPLE.read_text()


def test_the_example_file_is_query_copies_with_other_defaults():
    task = load_task(EXAMPLE)
    builtin = get_task("query-copies")
    assert task.parameters == builtin.parameters == ("s", "R")
    assert dict(task.defaults)["s"] == 2 and dict(builtin.defaults)["s"] == 1
    assert task.groups == builtin.groups and task.integer_parameter("R")
    inst = task.instance(M=2, values={"m": 5, "n": 10})
    assert inst.token_names == ["q_0", "q_1", "r_0_0", "r_0_1", "r_0_2", "r_0_3", "r_0_4", "r_1_0", "r_1_1",
                                "r_1_2", "r_1_3", "r_1_4", "z_0"]
    assert inst.counts[0][:7] == [2.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0] and inst.counts[0][-1] == 10.0
    assert sum(inst.relevant[1]) == 5


@pytest.mark.parametrize("name", VARIANT_FILES)
def test_builtin_tasks_are_files_of_the_same_format(name):
    assert task_from_toml(variant_text(name), name) == get_task(name)


@pytest.mark.parametrize("key", ["n_c", "R"])
def test_defaults_set_the_model_parameters_only(key):
    """A task's own parameter (n_c) or an unknown name (R) under [defaults] is refused naming the key,
    never silently dropped (n_c = 3 there once left the task at its [parameters] value 1)."""
    text = variant_text("shared-irrelevant").replace('"shared-irrelevant"', '"own"') + f"\n[defaults]\n{key} = 3\n"
    with pytest.raises(ValueError, match=rf"^f.toml: defaults.{key}: \[defaults\] sets m, n, b, M only"):
        task_from_toml(text, "f.toml")

def _own_default(table, key, value) -> str:
    """shared-irrelevant's text, as task "own", with ``key = value`` in ``[table]``."""
    text = variant_text("shared-irrelevant").replace('"shared-irrelevant"', '"own"')
    if table == "parameters":
        return text.replace("[parameters]", f"[parameters]\n{key} = {value}")
    return text + f"\n[defaults]\n{key} = {value}\n"


@pytest.mark.parametrize("table, key, value", [("parameters", "g", "1e-320"), ("defaults", "b", "1e-320"),
                                                ("defaults", "n", "5e-324"), ("defaults", "m", "2e-308")])
def test_a_subnormal_default_is_refused_naming_the_file_the_key_and_the_normal_range(table, key, value):
    """A real default below the smallest normal double has lost digits (1e-320 is held as 9.99988867182683e-321):
    refused as the same value given with --params is, naming the file, the key and the range; the smallest normal
    double is read, and a negative one refused as not > 0, as before."""
    with pytest.raises(ValueError) as info:
        task_from_toml(_own_default(table, key, value), "f.toml")
    assert str(info.value) == (f"f.toml: {table}.{key}: {key} must be a normal double in [2.2250738585072014e-308, "
                               f"1.7976931348623157e+308] (a subnormal one has lost digits); got {float(value)!r}")
    smallest = task_from_toml(_own_default(table, key, "2.2250738585072014e-308"), "f.toml")
    assert dict(smallest.defaults)[key] == 2.2250738585072014e-308
    with pytest.raises(ValueError, match=rf"^f.toml: {table}.{key}: {key} must be a finite number > 0; got -"):
        task_from_toml(_own_default(table, key, f"-{value}"), "f.toml")


def test_a_text_of_more_than_64_kib_is_refused_by_the_reader_of_text():
    """task_from_toml itself (not only the file reader) holds to MAX_FILE_BYTES: 65536 characters are read,
    one more is refused."""
    pad = 65536 - len(BASE) - 3
    assert task_from_toml("# " + "x" * pad + "\n" + BASE, "f.toml") == load_task(EXAMPLE)
    with pytest.raises(ValueError, match=r"^f.toml: larger than 65536 bytes$"):
        task_from_toml("# " + "x" * (pad + 1) + "\n" + BASE, "f.toml")

def test_a_byte_order_mark_is_not_content(tmp_path):
    """An editor's UTF-8 byte-order mark before the first key: the same task."""
    marked = tmp_path / "marked.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    assert load_task(marked) == load_task(EXAMPLE)


def test_canonical_text_names_the_task_not_the_file(tmp_path):
    copy = tmp_path / "copy.toml"
    copy.write_text("# a comment\n" + BASE.replace('s = 2', 's = 2   # two'))
    assert task_text(load_task(copy)) == task_text(load_task(EXAMPLE))
    changed = tmp_path / "changed.toml"
    changed.write_text(BASE.replace("R = 5", "R = 4"))
    assert task_text(load_task(changed)) != task_text(load_task(EXAMPLE))


CASES = {
    "syntax": (BASE.replace('query = "q"', 'query = "q'), "not TOML"),
    "unknown key": ('colour = "red"\n' + BASE, "unknown key 'colour'"),
    "unknown group key": (BASE.replace('per_class = false', 'per_class = false\nweight = 2'),
                          r"groups\[2\]: unknown key 'weight'"),
    "unknown symbol": (BASE.replace('"m / R"', '"m / K"'), r"groups\[1\]\.multiplicity: .*unknown symbols K"),
    "negative": (BASE.replace('multiplicity = "n"', 'multiplicity = -3'), r"groups\[2\]\.multiplicity: .*>= 0"),
    "infinite": (BASE.replace('multiplicity = "n"', 'multiplicity = inf'),
                 r"groups\[2\]\.multiplicity: must be a finite number; got inf"),
    "not an expression": (BASE.replace('multiplicity = "n"', 'multiplicity = "n +"'),
                          r"groups\[2\]\.multiplicity: .*not an expression"),
    "not a number": (BASE.replace('multiplicity = "n"', 'multiplicity = true'),
                     r"groups\[2\]\.multiplicity: must be a number"),
    "python": (BASE.replace('multiplicity = "n"', "multiplicity = \"__import__('os')\""),
               r"groups\[2\]\.multiplicity: .*not an expression"),
    "parameter domain": (BASE.replace("R = 5", "R = 0"), "parameters.R: R must be an integer >= 1"),
    "types not integer": (BASE.replace("R = 5", "R = 2.5"), r"groups\[1\]\.types: .*positive integer"),
    "missing query": (BASE.replace('query = "q"\n', ""), "query: missing"),
    "unknown relevant group": (BASE.replace('relevant = ["r"]', 'relevant = ["y"]'),
                               r"\.toml: relevant: .*has no token group 'y'"),
    "unknown query group": (BASE.replace('query = "q"', 'query = "y"'), r"\.toml: query: .*has no token group 'y'"),
    "query relevant": (BASE.replace('relevant = ["r"]', 'relevant = ["q"]'), r"\.toml: relevant: .*cannot be relevant"),
    "reserved parameter": (BASE.replace("R = 5", "alpha = 5").replace('"R"', '"alpha"').replace("m / R", "m / alpha"),
                           r"\.toml: parameters\.alpha: .*'alpha' is taken"),
    "huge": ("# " + "x" * 70000 + "\n" + BASE, "larger than"),
    "nested arrays": (BASE + "a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "nested tables": (BASE + "a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n", "nested too deeply"),
    # exponents multiply through nested powers: SymPy's sign analysis of degree 4096 runs for minutes
    "high degree": (BASE.replace('multiplicity = "n"', 'multiplicity = "(((n+1)**16+1)**16+1)**16"'),
                    r"groups\[2\]\.multiplicity: .*degree 4096, above 64"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_task_file_is_one_line_naming_the_file_and_the_key(case, tmp_path):
    from derivations.print_dynamics import main
    text, message = CASES[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_task(path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["--task", str(path), "--loss", "0.2"])
    assert status == 2 and out.getvalue() == ""
    assert err.getvalue().count("\n") == 1 and str(path) in err.getvalue()


def test_latex_with_a_bad_task_file_writes_nothing(tmp_path):
    from derivations.latex import main
    bad = tmp_path / "bad.toml"
    bad.write_text(CASES["unknown symbol"][0])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["--output", str(tmp_path / "out"), "--task", str(bad)]) == 2
    assert not (tmp_path / "out").exists() and "groups[1].multiplicity" in err.getvalue()


def test_the_canonical_text_of_a_root_reads_back():
    """SymPy prints b**(1/2) as sqrt(b), which the reader (no functions) refused: a sweep of a valid task file with
    embedding_scale = "b**(1/2)" stopped with "the stored task: ... got 'sqrt(b)', which is not an expression"."""
    from derivations.engine.task_file import task_from_text
    task = task_from_toml(BASE.replace('multiplicity = "m / R"', 'multiplicity = "m**(3/2) / R**(1/2) + 2**(1/2)"')
                          .replace('query = "q"', 'query = "q"\nembedding_scale = "b**(1/2)"'), "roots.toml")
    assert str(task.embedding_scale) == "sqrt(b)" and "sqrt(R)" in str(task.group("r").multiplicity)
    stored = task_text(task)
    assert '"embedding_scale":"b**(1/2)"' in stored and "sqrt" not in stored
    assert task_from_text(stored) == task


@pytest.mark.parametrize("name", ["paper", "authors", "query-copies", str(EXAMPLE)])
def test_the_canonical_text_reads_back_as_the_same_task(name):
    from derivations.engine.task_file import task_from_text
    from derivations.tasks import task_key
    task = get_task(name)
    assert task_from_text(task_text(task)) == task if name != "authors" else True
    key = task_key(task)
    assert (key == name) if name != str(EXAMPLE) else get_task(key) == task


def test_a_changed_task_file_is_not_resumed():
    from numerics.experiments.settings import settings_difference
    stored = {"task": task_text(load_task(EXAMPLE)), "task_params": [["M", 4]], "ratios": [1.0]}
    changed = task_from_toml(BASE.replace("R = 5", "R = 4"), "changed.toml")
    given = {**stored, "task": task_text(changed)}
    message = settings_difference(stored, given)
    assert message.startswith("--task: the task file differs") and "'query-copies-file'" in message
    assert settings_difference(stored, dict(stored)) is None
    # a changed multiplicity changes the task's own length too: the task is named, not --seq-len (the
    # command's settings list seq_len before the task)
    lengths = settings_difference({"seq_len": 18, **stored}, {"seq_len": 19, **given})
    assert lengths.startswith("--task: the task file differs"), lengths


@pytest.mark.parametrize("text, message", [
    ("s=0", "s must be an integer >= 1"), ("R=2.5", "R must be an integer >= 1"),
    ("R=1e300", "R must be an integer >= 1 and <= 2\\*\\*53"), ("x=1", "has no parameter 'x'"),
])
def test_params_of_a_task_are_checked_by_their_domain(text, message):
    from derivations.core.cli import UsageError
    from derivations.output.dynamics import parse_params
    with pytest.raises(UsageError, match=message):
        parse_params(text, get_task(str(EXAMPLE)))
    assert parse_params("s=3,R=10,m=2", get_task("query-copies")) == {"s": 3, "R": 10, "m": 2.0}


def _special_file(kind, tmp_path):
    """A FIFO without a writer, a link to /dev/zero, a sparse 1 GiB file or a directory."""
    import os
    path = tmp_path / f"{kind}.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        path.symlink_to("/dev/zero")
    elif kind == "sparse":
        with open(path, "wb") as fh:
            fh.truncate(1 << 30)
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize("kind,message", [("fifo", "not a regular file"), ("zero", "not a regular file"),
                                          ("sparse", "larger than 65536 bytes"), ("dir", "Is a directory")])
def test_a_task_file_that_is_no_regular_file_is_refused_at_once(kind, message, tmp_path):
    """A FIFO (no writer), a link to /dev/zero, a sparse 1 GiB file, a directory: one line at once,
    never a hang or a read of the whole file (run in a thread that a failing check unblocks)."""
    import os
    import threading
    path = _special_file(kind, tmp_path)
    outcome = []

    def read():
        try:
            load_task(path)
        except ValueError as exc:
            outcome.append(str(exc))
    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive() and kind == "fifo":
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))   # unblock the reader of the old code
    assert not worker.is_alive() and len(outcome) == 1
    assert outcome[0].startswith(f"{path}: ") and message in outcome[0] and "\n" not in outcome[0]


@pytest.mark.parametrize("name", ["exp", "log", "mu_OV", "mu_QK_q", "alpha", "t", "eta_QK", "lambda", "sum",
                                  "x" * 65, "task", "loss", "ratio", "method"])
def test_a_parameter_named_as_a_function_or_an_engine_symbol_is_refused(name, tmp_path, capsys):
    """A parameter "exp" or "log" shadowed the function in the lambdified flow (print_dynamics --loss
    ended in a TypeError traceback); "mu_OV" was a second symbol of the engine's name (a SyntaxError
    traceback, ambiguous formulas); "task", "loss" or "ratio" met state_at_loss's argument of that name (a
    TypeError traceback), "method" was taken for its method ("method must be one of ..."). Each is refused
    when the file is read: one line, exit 2."""
    from derivations.print_dynamics import main
    text = (BASE.replace('name = "query-copies-file"', 'name = "shadow"').replace("R = 5", f"{name} = 5")
            .replace('"R"', f'"{name}"').replace("m / R", f"m / {name}"))
    path = tmp_path / "shadow.toml"
    path.write_text(text)
    assert main(["--task", str(path), "--loss", "0.5", "--parameterization", "CACO"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"parameters: '{name[:80]}" in err and " is taken" in err


def test_the_docs_name_every_parameter_name_the_engine_keeps():
    """docs/own_task.md lists the engine's own names a parameter may not take: every one of them
    (it left out epsilon, y and K, which are refused as taken)."""
    from derivations.engine.checks import _ENGINE_NAMES, _ENGINE_PREFIXES, _KEYWORD_NAMES
    text = " ".join((ROOT / "docs" / "own_task.md").read_text().split())
    missing = [n for n in sorted(_ENGINE_NAMES | _KEYWORD_NAMES) if f"`{n}`" not in text]
    missing += [p for p in _ENGINE_PREFIXES if f"`{p}*`" not in text]
    assert missing == []
    for name in sorted(_ENGINE_NAMES | _KEYWORD_NAMES):
        with pytest.raises(ValueError, match="is taken"):
            task_from_toml(f'name = "x"\nquery = "q"\n[parameters]\n{name} = 2\n[[groups]]\nname = "q"\n'
                           'per_class = true\n[[groups]]\nname = "r"\nper_class = true\nmultiplicity = "m"\n')


SHARED = (ROOT / "derivations" / "tasks" / "files" / "shared-irrelevant.toml").read_text()


@pytest.mark.parametrize("text,key,value,message", [
    (BASE.replace("query-copies-file", "big-default").replace("[parameters]", "[defaults]\nn = 1e6\n\n[parameters]"),
     "n", 1e6,
     "n must be in [0.001, 1000] for the reduced-flow state of task 'big-default' (the range it is tested on)"
     "; got 1000000"),
    (SHARED.replace('name = "shared-irrelevant"', 'name = "shared-own"') + "\n[defaults]\nm = 1e9\n", "m", 1e9,
     "m must be in [1e-08, 1e+08] for the closed-form state of task 'shared-own' (the range it is tested on)"
     "; got 1000000000")],
    ids=["reduced flow", "closed form"])
def test_a_default_outside_a_methods_range_names_the_file_and_the_key(text, key, value, message, tmp_path, capsys):
    """A [defaults] value that the answering method refuses (the reduced flow's n <= 1000, the closed
    form's m <= 1e8) was named by the task only; now by the file and defaults.<key>, one line, exit 2,
    nothing printed. The same value given with --params is the user's and is named as such."""
    from derivations.print_dynamics import main
    from numerics.dynamics import state_at_loss
    path = tmp_path / "own.toml"
    path.write_text(text)
    assert main(["--task", str(path), "--loss", "0.3", "--ratio", "2"]) == 2
    assert capsys.readouterr() == ("", f"print_dynamics: error: {path}: defaults.{key}: {message}\n")
    with pytest.raises(ValueError) as info:
        state_at_loss(0.3, 2.0, task=str(path))
    assert str(info.value) == f"{path}: defaults.{key}: {message}"
    with pytest.raises(ValueError) as info:
        state_at_loss(0.3, 2.0, task=str(path), **{key: value})
    assert str(info.value) == message
    assert main(["--task", str(path), "--loss", "0.3", "--ratio", "2", "--params", f"{key}=10"]) == 0
    capsys.readouterr()


def test_default_key_names_only_what_a_file_read_sets(tmp_path):
    from derivations.engine.task_file import default_key
    path = tmp_path / "own.toml"
    path.write_text(BASE.replace("[parameters]", "[defaults]\nn = 7\n\n[parameters]"))
    task = load_task(path)
    assert [default_key(task, k) for k in ("n", "s", "m")] == [f"{path}: defaults.n", f"{path}: parameters.s", None]
    assert default_key(get_task("query-copies"), "s") is None
    assert default_key(task_from_toml(path.read_text().replace("n = 7", "n = 8"), "text.toml"), "n") is None


def test_default_key_names_the_file_each_task_was_read_from_even_of_an_equal_task(tmp_path):
    """Two files of the same task: each task read names its own file's key (not the file read last), a task
    equal to them but not read from a file names none, and a task gone takes its entry with it."""
    import gc

    from derivations.engine import task_file
    from derivations.engine.task_file import default_key, task_from_text, task_text

    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(BASE.replace("[parameters]", "[defaults]\nn = 7\n\n[parameters]"))
    second.write_text("# a copy\n" + first.read_text())
    a, b = load_task(first), load_task(second)
    assert a == b and a is not b
    assert (default_key(a, "n"), default_key(b, "n")) == (f"{first}: defaults.n", f"{second}: defaults.n")
    assert default_key(task_from_text(task_text(a)), "n") is None
    gone = id(b)
    assert gone in task_file._FILE_DEFAULTS
    del b
    gc.collect()        # (other tests' tasks may go too: only b's entry is asked for)
    assert gone not in task_file._FILE_DEFAULTS and default_key(a, "n") == f"{first}: defaults.n"


@pytest.mark.parametrize("default, key, shown", [("R = 5.0", "groups[1].types", "got R"),
                                                 ("s = 2.0", "groups[0].multiplicity", "got s - 1")])
def test_a_whole_number_written_as_a_float_says_it_made_a_real_parameter(default, key, shown):
    """``R = 5.0`` declares a positive real (an integer default declares a positive integer), so ``types = "R"``
    and ``multiplicity = "s - 1"`` are refused; the line said only "must be a positive integer ...; got R", naming
    the group, not the default that made R real. It says which default to write as an integer."""
    name = default.split()[0]
    text = BASE.replace(f"{name} = {default.split()[2][0]}\n", default + "\n")
    assert default in text
    with pytest.raises(ValueError) as info:
        task_from_toml(text, "f.toml")
    message = str(info.value)
    assert message.startswith(f"f.toml: {key}: ") and shown in message and "\n" not in message
    assert message.endswith(f"({name} is a positive real: its default {default.split()[2]} is not an integer; "
                            f"write {name} = {default.split()[2][0]} for a positive integer)")


def test_a_file_without_relevant_and_without_a_group_r_is_told_that_relevant_defaults_to_r():
    """``relevant`` defaults to ``["r"]``; a file that names its relevant group otherwise and leaves out
    ``relevant`` was told "groups: task 'x' has no token group 'r'", a key it had not got wrong."""
    text = 'name = "x"\nquery = "q"\n[[groups]]\nname = "q"\nper_class = true\n' \
           '[[groups]]\nname = "sig"\nper_class = true\nmultiplicity = "m"\n'
    with pytest.raises(ValueError, match=r"^f\.toml: relevant: task 'x' has no token group 'r' \(groups: q, sig\); "
                                         r"relevant defaults to \[\"r\"\]: name the relevant groups$"):
        task_from_toml(text, "f.toml")
