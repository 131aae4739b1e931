"""The one number parser of the command lines (derivations.core.cli.parse_float) and its users; the
parser's help into a full disk or a closed pipe."""
import errno
import io
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from derivations.core import OneLineParser, UsageError, parse_float, parse_loss, parse_number, parse_params


def test_parse_float_takes_any_float_and_names_the_parameter():
    assert parse_float("ratio", " 2.5 ") == 2.5
    assert math.isinf(parse_float("ratio", "inf")) and math.isnan(parse_float("ratio", "nan"))
    for bad in ("abc", "", None):
        with pytest.raises(UsageError, match=f"^ratio must be a number; got {bad!r}$"):
            parse_float("ratio", bad)
    with pytest.raises(ValueError, match="^m must be a number"):
        parse_float("m", "x", error=ValueError)


@pytest.mark.parametrize("text", ["1_0", "\uff15", "\u0665.5", "1e1_0"])
def test_a_number_float_reads_but_not_in_ascii_digits_is_refused(text):
    """float() reads 1_0 as 10 and other scripts' digits (U+FF15, U+0665) as 5: refused, naming the option."""
    with pytest.raises(UsageError, match=rf"^--params g must be a number in ASCII digits \(as 5, 0.5, 1e-3\); "
                                         rf"got {text!r}$"):
        parse_float("--params g", text)


@pytest.mark.parametrize("text", ["1_0", "\uff15", "\u0665"])
def test_an_integer_int_reads_but_not_in_ascii_digits_is_refused(text):
    """int() reads them too: refused, naming the option."""
    from derivations.core import parse_int
    with pytest.raises(UsageError, match=rf"^--epochs must be an integer >= 1 in ASCII digits; got {text!r}$"):
        parse_int("--epochs", text, 1)


def test_number_and_loss_parsers_report_a_non_number_alike():
    """parse_number and parse_loss read the number with parse_float: the same one line."""
    with pytest.raises(UsageError, match="^eta must be a number; got 'x'$"):
        parse_number("eta", "x")
    with pytest.raises(UsageError, match="^--loss must be a number; got 'x'$"):
        parse_loss("x", 20)
    with pytest.raises(UsageError, match="^eta must be finite; got 'inf'$"):
        parse_number("eta", "inf")


@pytest.mark.parametrize("text", ["0.5,,", "0.5,", ",0.5", "0.5, ,0.4"])
def test_a_list_with_an_empty_item_is_refused(text):
    from derivations.core.cli import parse_list
    with pytest.raises(UsageError, match="^--target-loss must not have an empty item between commas"):
        parse_list("--target-loss", text, float)
    assert parse_list("--target-loss", " 0.5 , 0.4 ", float) == [0.5, 0.4]


@pytest.mark.parametrize("text", ["m=5,,n=3", "m=5,", ",m=5"])
def test_params_with_an_empty_item_are_refused(text):
    from derivations.core.cli import parse_params
    with pytest.raises(UsageError, match="^--params must not have an empty item between commas"):
        parse_params(text)
    assert parse_params("m=5, n=3") == {"m": "5", "n": "3"}


@pytest.mark.parametrize("text", ["=5", "m=5, =3", " = ", "m"])
def test_params_entry_without_a_name_or_an_equals_sign_is_not_name_value(text):
    """``=5`` has no name: it is refused as not name=value, not looked up as a parameter named ''."""
    with pytest.raises(UsageError, match="^--params entries look like name=value; got '"):
        parse_params(text)


@pytest.mark.parametrize("text", ["", "  "])
def test_an_empty_params_is_refused_as_an_empty_list_is(text):
    """Blank ``--params`` is not the defaults (omitting the option gives those), in every command."""
    with pytest.raises(UsageError, match=f"^--params must be name=value pairs, comma-separated .*; got {text!r}$"):
        parse_params(text)


def test_an_interrupted_command_is_one_line_and_exit_130(capsys):
    import signal

    from derivations.core.interrupt import EXIT_INTERRUPTED, exit_on_interrupt

    @exit_on_interrupt("demo", note=lambda argv: f"kept in {argv[0]}")
    def main(argv=None):
        raise KeyboardInterrupt
    handler = signal.getsignal(signal.SIGINT)
    assert main(["out"]) == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "demo: interrupted; kept in out\n"
    assert signal.getsignal(signal.SIGINT) is handler          # Ctrl-C works again afterwards


def test_sigterm_in_a_command_takes_ctrl_cs_path_one_line_and_exit_143(capsys):
    """SIGTERM (``kill``, ``timeout``, Slurm, systemd) while a command runs: its ``finally`` clauses run (workers
    stopped, temporaries removed), one line says what is kept, exit status 128 + 15; the default SIGTERM is back
    afterwards, and a program that set its own SIGTERM handler keeps it (the commands are also stopped for real,
    in tests/numerics/experiments/test_experiments_interrupt.py)."""
    import signal
    import time

    from derivations.core.interrupt import EXIT_TERMINATED, exit_on_interrupt

    cleaned = []

    @exit_on_interrupt("demo", note=lambda argv: f"kept in {argv[0]}")
    def main(argv=None):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(float(argv[1]))              # (the command's handler raises at once)
            return 0
        finally:
            cleaned.append(True)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert main(["out", "5"]) == EXIT_TERMINATED == 143 and cleaned == [True]
    assert capsys.readouterr().err == "demo: terminated; kept in out\n"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

    def own(signum, frame):
        cleaned.append(signum)
    previous = signal.signal(signal.SIGTERM, own)
    try:
        assert main(["out", "0"]) == 0 and cleaned == [True, signal.SIGTERM, True]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_import_interrupted_by_ctrl_c_is_an_interrupt_and_other_errors_are_not(capsys):
    """An extension module interrupted while it loads raises ``ImportError: initialization failed``
    from the ``KeyboardInterrupt`` (SciPy's, 2 of 50 Ctrl-C early in ``numerics.verify``)."""
    from derivations.core.interrupt import exit_on_interrupt

    @exit_on_interrupt("demo")
    def interrupted_import(argv=None):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    @exit_on_interrupt("demo")
    def failed_import(argv=None):
        raise ImportError("no module named x")
    assert interrupted_import([]) == 130 and capsys.readouterr().err == "demo: interrupted\n"
    with pytest.raises(ImportError, match="no module named x"):
        failed_import([])


@pytest.mark.parametrize("module", ["derivations.print_dynamics", "derivations.output.latex",
                                    "numerics.output.figures", "numerics.verify.cli", "numerics.experiments.__main__"])
def test_every_long_command_ends_on_ctrl_c_with_one_line(module, monkeypatch, capsys):
    """Issue 25.9: the commands share exit_on_interrupt (the experiments and verify are also
    interrupted for real, in tests/numerics/experiments/test_experiments_interrupt.py)."""
    import importlib

    mod = importlib.import_module(module)

    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(mod, "build_parser", interrupted)
    assert mod.main([]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted" in err


@pytest.mark.parametrize("module,argv,library,line", [
    ("numerics.experiments", ["fig3", "--epochs", "1"], "numpy", "experiments: interrupted"),
    ("derivations.latex", ["--output", "OUT"], "sympy", "latex: interrupted"),
    ("numerics.verify", ["--quick"], "numpy", "python -m numerics.verify: interrupted"),
    ("numerics.figures", ["--output", "OUT"], "numpy", "python -m numerics.figures: interrupted"),
    ("derivations.print_dynamics", [], "sympy", "print_dynamics: interrupted")])
def test_ctrl_c_while_a_command_loads_numpy_or_sympy_is_one_line(module, argv, library, line, tmp_path):
    """A command loads NumPy or SymPy (a tenth of a second to most of one) inside its guard: a Ctrl-C then
    (here: raised when the library is imported) is one line and exit 130, no traceback, nothing written."""
    root = Path(__file__).resolve().parents[3]
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    script = "\n".join([
        "import runpy, sys",
        "class CtrlC:",
        "    def find_spec(self, name, path=None, target=None):",
        f"        if name == {library!r}:",
        "            raise KeyboardInterrupt",
        "sys.meta_path.insert(0, CtrlC())",
        f"sys.argv = [{module!r}, *{argv!r}]",
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"])
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 130 and done.stderr == line + "\n", done.stderr
    assert not (tmp_path / "out").exists()


def test_a_huge_value_is_echoed_cut_in_the_one_line(capsys):
    """A 100000-character --params name or value, --ratio or --loss: one short line naming the
    option and the range, not the whole value echoed back."""
    from derivations.print_dynamics import main
    huge = "x" * 100_000
    for argv, says in ((["--params", f"{huge}=1"], "(its parameters: M, b, m, n)"), (["--params", f"m={huge}"], "m must be"),
                       (["--ratio", huge], "ratio must be"), (["--loss", huge], "loss must be")):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and len(err) < 400 and says in err
        assert "...(100002 characters)" in err or "...(100000 characters)" in err


class _Stdout(io.StringIO):
    """A stdout whose flush fails as ``error`` does (a full disk, a closed pipe)."""

    def __init__(self, error):
        super().__init__()
        self.error = error

    def flush(self):
        raise self.error


@pytest.mark.parametrize("error, status, line", [
    (OSError(errno.ENOSPC, "No space left on device"), 1, "demo: error: cannot write the output: No space left on device\n"),
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), 0, ""),
])
def test_help_into_a_full_disk_is_one_line_and_into_a_closed_pipe_quiet(monkeypatch, capsys, error, status, line):
    monkeypatch.setattr(sys, "stdout", _Stdout(error))
    with pytest.raises(SystemExit) as stop:
        OneLineParser(prog="demo").parse_args(["--help"])
    assert stop.value.code == status and capsys.readouterr().err == line


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["sub", "--help"]])
def test_help_or_version_into_a_closed_stdout_is_one_line_named_as_the_parser_says(monkeypatch, capsys, argv):
    """A process started without stdout (``>&-``: ``sys.stdout`` is None): one line and exit status 1,
    not an AttributeError; a subcommand's line starts with its parser's ``name`` too."""
    parser = OneLineParser(prog="python -m demo", name="demo")
    parser.add_subparsers(dest="command").add_parser("sub")
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(argv)
    assert (stop.value.code, capsys.readouterr().err) == (1, "demo: error: cannot write the output: stdout is closed\n")


@pytest.mark.parametrize("command", ["derivations.print_dynamics", "derivations.catalog", "derivations.task_catalog",
                                     "derivations.latex", "numerics.verify.__main__", "numerics.figures"])
def test_every_command_with_its_stdout_closed_says_so_in_one_line(monkeypatch, capsys, command):
    """``python -m <command> --help >&-`` (every command of derivations and numerics; the experiments' in
    their own tests): one line on stderr, exit status 1."""
    import importlib

    main = importlib.import_module(command).main
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    err = capsys.readouterr().err
    assert stop.value.code == 1 and err.count("\n") == 1 and err.endswith(": error: cannot write the output: "
                                                                        "stdout is closed\n"), err


def test_output_probe_leaves_nothing_when_its_write_fails(tmp_path, monkeypatch):
    """A full disk fails the probe's write: the directory is refused, and neither the probe file nor
    any file of the user's (one named as a fixed probe would be) is left changed."""
    from derivations.core import output

    target = tmp_path / "out"
    target.mkdir()
    users = target / ("." + "q" * 63)
    users.write_text("mine")

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(output.os, "write", full)
    with pytest.raises(ValueError, match="cannot take files: No space left on device"):
        output.prepare_output_dir(target)
    assert sorted(p.name for p in target.iterdir()) == [users.name]
    assert users.read_text() == "mine"
    monkeypatch.undo()
    assert output.prepare_output_dir(target) == target
    assert sorted(os.listdir(target)) == [users.name]


@pytest.mark.parametrize("argv", [["--params", "m=5", "--params", "n=3"], ["--params=m=5", "--params", "n=3"],
                                  ["--ratio", "2", "--rat=3"]])
def test_an_option_given_twice_is_refused_not_the_first_value_dropped(argv, capsys):
    """argparse keeps an option's last value: ``--params m=5 --params n=3`` ran at the default m. A value
    option given twice (an abbreviation of it included) is one line, exit 2, naming the option and both
    values; a subcommand's option the same."""
    from derivations.print_dynamics import main
    from numerics.experiments.__main__ import main as experiments

    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "is given twice" in err and "give it once" in err
    assert experiments(["predict", "--parameterizations", "CACO", "--ratios", "1", "--ratios", "2"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "experiments: error: --ratios is given twice ('1' and '2'): give it once\n"


def test_an_option_without_its_value_or_stored_explicitly_or_after_a_double_dash():
    """A value option given last, without its value, is argparse's one line (not an IndexError of the
    reading of ``--option -1``); ``action="store"`` given twice is refused as the default action is; after
    ``--`` nothing is read as an option, ``--ratios -1`` included."""
    p = OneLineParser(prog="demo")
    p.add_argument("--ratios")
    p.add_argument("--seeds", action="store")
    p.add_argument("rest", nargs="*")
    with pytest.raises(UsageError, match="^argument --ratios: expected one argument$"):
        p.parse_args(["--ratios"])
    with pytest.raises(UsageError, match=r"^--seeds is given twice \('1' and '2'\): give it once$"):
        p.parse_args(["--seeds", "1", "--seeds", "2"])
    assert p.parse_args(["--seeds", "-1,2"]).seeds == "-1,2" and p.parse_args(["--seeds", "-.5,1"]).seeds == "-.5,1"
    assert p.parse_args(["--", "--ratios", "-1"]).rest == ["--ratios", "-1"]


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_list_is_refused_not_the_default(text):
    from derivations.core.cli import parse_list
    with pytest.raises(UsageError, match="^--ratios must be a non-empty comma-separated list; got "):
        parse_list("--ratios", text, float)


def test_version_is_the_running_codes_not_the_first_installed(tmp_path):
    """A qkov distribution first on sys.path (an older install) does not name the checkout that runs: --version
    reads the running checkout's setup.cfg (the one version); an installed package, its own folder's metadata."""
    import configparser
    from derivations.core import version

    root = Path(__file__).resolve().parents[3]
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(root / "setup.cfg")
    expected = cfg["metadata"]["version"]
    old = tmp_path / "old" / "qkov-0.0.1.dist-info"
    old.mkdir(parents=True)
    (old / "METADATA").write_text("Metadata-Version: 2.1\nName: qkov\nVersion: 0.0.1\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'old'}{os.pathsep}{root}")
    run = subprocess.run([sys.executable, "-m", "derivations.print_dynamics", "--version"], capture_output=True,
                         text=True, timeout=120, env=env, cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, f"qkov {expected}\n", "")
    site = tmp_path / "site-packages"
    (site / "derivations").mkdir(parents=True)
    (site / "qkov-7.1.dist-info").mkdir()
    (site / "qkov-7.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: qkov\nVersion: 7.1\n")
    original = version.PACKAGE_DIR
    try:
        version.PACKAGE_DIR = site / "derivations"
        assert version.running_version() == "7.1"
    finally:
        version.PACKAGE_DIR = original
