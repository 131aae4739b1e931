"""The print_dynamics CLI: outputs, machine-readable JSON, and bad input."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from derivations.print_dynamics import main
from derivations.symbolic import SYMBOLS

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def run(*args):
    return subprocess.run([sys.executable, "-m", "derivations.print_dynamics", *args],
                          capture_output=True, text=True, timeout=120)


def test_default_prints_every_section(capsys):
    """In this process (the command as a process: its closed-pipe, cold-start and bad-input tests)."""
    assert main([]) == 0
    out = capsys.readouterr().out
    for heading in ("== Model ==", "Factorization", "== CACO", "== CAFO", "== FACO", "== FAFO",
                    "Sharpness at fixed loss", "asymptotics"):
        assert heading in out
    assert "dH/dt = 0" in out


@pytest.mark.parametrize("fmt", ["text", "latex"])
def test_other_formats(fmt, capsys):
    assert main(["--format", fmt, "--parameterization", "FAFO"]) == 0
    text = capsys.readouterr().out
    assert "FAFO" in text and "CACO:" not in text
    if fmt == "latex":
        assert "\\frac" in text


def test_json_parses_with_sympify(capsys):
    assert main(["--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"symbols", "alpha", "loss", "parameterizations"}
    assert set(data["parameterizations"]) == {"CACO", "CAFO", "FACO", "FAFO"}
    for entry in data["parameterizations"].values():
        assert set(entry) == {"dmu_OV_dt", "dmu_QK_dt", "first_integral", "orbit"}
        for text in entry.values():
            expr = sp.sympify(text, locals=SYMBOLS)
            assert expr.free_symbols <= set(SYMBOLS.values()) | {sp.Symbol(n) for n in SYMBOLS}
    alpha = sp.sympify(data["alpha"], locals=SYMBOLS)
    assert sp.simplify(alpha.subs(SYMBOLS["mu_QK"], 0) - SYMBOLS["m"] / (SYMBOLS["m"] + SYMBOLS["n"])) == 0


def test_params_and_ratio_substitute_numbers(capsys):
    assert main(["--format", "json", "--params", "m=5,n=50,b=50,M=20", "--ratio", "10"]) == 0
    data = json.loads(capsys.readouterr().out)
    d = sp.sympify(data["parameterizations"]["CACO"]["dmu_QK_dt"], locals=SYMBOLS)
    assert d.free_symbols == {SYMBOLS["mu_OV"], SYMBOLS["mu_QK"]}


def test_state_at_loss_in_json(capsys):
    assert main(["--format", "json", "--params", "M=20", "--ratio", "10", "--loss", "0.1"]) == 0
    state = json.loads(capsys.readouterr().out)["state_at_loss"]
    # the state reproduces the requested loss through the derived loss and alpha expressions
    from derivations.catalog import results
    values = {SYMBOLS["m"]: 5, SYMBOLS["n"]: 50, SYMBOLS["b"]: 50, SYMBOLS["M"]: 20,
              SYMBOLS["mu_OV"]: state["mu_OV"], SYMBOLS["mu_QK"]: state["mu_QK"]}
    assert abs(float(results()["model.loss"].subs(values)) - 0.1) < 1e-12
    assert abs(float(results()["model.alpha"].subs(values)) - state["alpha"]) < 1e-12


@pytest.mark.parametrize("args,needle", [
    (["--params", "m=-1"], "m must be a finite number > 0"),
    (["--params", "n=0"], "n must be a finite number > 0"),
    (["--params", "b=-2"], "b must be a finite number > 0"),
    (["--params", "M=1"], "M must be an integer in [2, 9007199254740992]"),
    (["--params", "M=2.5"], "M must be an integer in [2, 9007199254740992]"),
    (["--params", "m=nan"], "m must be a finite number > 0"),
    (["--params", "b=inf"], "b must be a finite number > 0"),
    (["--params", "q=3"], "--params: task 'paper' has no parameter 'q' (its parameters: M, b, m, n)"),
    (["--params", "m"], "name=value"),
    (["--ratio", "0"], "ratio must be a finite number > 0"),
    (["--ratio", "-1"], "ratio must be a finite number > 0"),
    (["--ratio", "nan"], "ratio must be a finite number > 0"),
    (["--ratio", "1", "--eta-qk", "2"], "either --ratio"),
    (["--eta-ov", "0"], "eta-ov must be a finite number > 0"),
    (["--loss", "0"], "loss must be in (0, log M)"),
    (["--loss", "-0.1"], "loss must be in (0, log M)"),
    (["--loss", "3.5"], "loss must be in (0, log M)"),
    (["--loss", "0.7", "--params", "M=2"], "loss must be in (0, log M)"),
    (["--loss", "inf"], "loss must be in (0, log M)"),
    (["--loss", "abc"], "loss must be a number"),
    (["--parameterization", "CAXO"], "invalid choice"),
    (["--format", "yaml"], "invalid choice"),
    (["--params", "m=5,m=6"], "--params names m twice"),
    (["--params", "M=20,n=3,M=21"], "--params names M twice"),
    (["--params", "M=1e23"], "M must be an integer in [2, 9007199254740992]"),
    (["--params", "M=" + "1" * 400], "M must be an integer in [2, 9007199254740992]"),
    (["--loss", "0.5", "--ratio", "1e30"], "ratio must be in [1e-12, 1e+12] for the closed-form state"),
    (["--loss", "0.5", "--params", "b=1e308"], "b must be in [1e-08, 1e+08]"),
    (["--params", "m=1_0"], "m must be a number in ASCII digits (as 5, 0.5, 1e-3); got '1_0'"),
    (["--params", "M=\uff15"], "M must be a number in ASCII digits (as 5, 0.5, 1e-3); got '\uff15'"),
    (["--task", "shared-irrelevant", "--params", "n_c=1_0"], "n_c must be an integer >= 1 and <= 2**53"),
    (["--loss", "0.\uff15"], "loss must be a number in ASCII digits"),
])
def test_bad_input_one_line_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_input_as_subprocess_has_no_traceback():
    out = run("--params", "M=1")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


@pytest.mark.parametrize("loss,ratio", [("2.99573227355398", "1e-8"), ("2.99573227355399", "1"),
                                        ("0.01", "10")])
def test_state_at_loss_is_the_closed_form(loss, ratio, capsys):
    """--loss prints what numerics.dynamics.closed_form returns (its old bisection gave a
    negative mu_QK at the first point and was 13 % off at the second)."""
    from numerics.dynamics import state_at_loss_mpmath
    assert main(["--format", "json", "--parameterization", "CACO", "--loss", loss, "--ratio", ratio]) == 0
    state = json.loads(capsys.readouterr().out)["state_at_loss"]
    ref = state_at_loss_mpmath(float(loss), float(ratio), dps=40)
    assert state["mu_QK"] > 0
    for k in ("mu_OV", "mu_QK", "alpha"):
        assert abs(state[k] - float(ref[k])) <= 1e-12 * abs(float(ref[k]))


def test_large_numbers_print_as_given(capsys):
    assert main(["--format", "text", "--parameterization", "CACO", "--params", "M=9007199254740992,b=1e23"]) == 0
    out = capsys.readouterr().out
    assert "M = 9007199254740992" in out and "b = 1.00000000000000E+23" in out and "99999999999999991611392" not in out


def test_closed_pipe_and_full_device_end_without_traceback():
    import subprocess
    cmd = f"{sys.executable} -m derivations.print_dynamics --format text | head -n 1"
    out = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True,
                         cwd=ROOT, env=ENV)
    assert out.stdout.startswith("qkov:") and out.stderr == "" and out.returncode == 0
    import os
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            res = subprocess.run([sys.executable, "-m", "derivations.print_dynamics", "--format", "text"],
                                 stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert res.stderr.count("\n") == 1 and "cannot write the output" in res.stderr


def test_every_option_has_help():
    from derivations.output.dynamics import build_parser
    for action in build_parser()._actions:
        assert action.help, action.dest


def _imports_numerics(tree) -> list:
    """``(line, at module level?)`` of every import of numerics in ``tree``."""
    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            names = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0:
                names = [child.module or ""]
            if any(n == "numerics" or n.startswith("numerics.") for n in names):
                found.append((child.lineno, top))
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)
    visit(tree, True)
    return found


def test_symbolic_code_never_imports_numerics():
    """derivations/ never imports numerics; the one exception is the print_dynamics
    command-line entry, lazily (inside functions), for the numbers at a loss."""
    entry = ROOT / "derivations" / "print_dynamics.py"
    offenders, lazy = [], []
    for path in sorted((ROOT / "derivations").rglob("*.py")):
        for line, top in _imports_numerics(ast.parse(path.read_text(), str(path))):
            if path == entry and not top:
                lazy.append(line)
            else:
                offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert not offenders, offenders
    assert lazy, "the print_dynamics entry answers --loss with numerics (lazily)"
    code = ("import sys, derivations.print_dynamics, derivations.output.dynamics, derivations.latex, "
            "derivations.output.dynamics\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'numerics'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out


@pytest.mark.slow
def test_latex_into_a_closed_pipe_ends_quietly(tmp_path):
    """Slow: a whole document in another process. The command's guard and output writer are the
    ones every command shares (closed pipes in the default selection: print_dynamics, catalog,
    verify, figures, experiments); the document itself is tested in tests/derivations/output."""
    cmd = f"{sys.executable} -m derivations.latex --output {tmp_path / 'a'} | true"
    out = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True,
                         cwd=ROOT, env=ENV)
    assert out.returncode == 0 and out.stderr == "", out


@pytest.mark.slow
def test_latex_into_a_full_device_is_one_line(tmp_path):
    """Slow: a second whole document. The output writer it ends in (derivations.core.output.emit)
    meets a full device in the default selection through print_dynamics, catalog and verify."""
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            res = subprocess.run([sys.executable, "-m", "derivations.latex", "--output", str(tmp_path / "b")],
                                 stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
        assert res.returncode == 1 and "Traceback" not in res.stderr
        assert res.stderr.count("\n") == 1 and "cannot write the output" in res.stderr


#: an engine task in the default suite; the paper's printed cache into a closed pipe is also
#: test_closed_pipe_and_full_device_end_without_traceback, so its case here is -m slow
@pytest.mark.parametrize("task", [pytest.param("paper", marks=pytest.mark.slow),
                                  pytest.param("shared-irrelevant", marks=pytest.mark.slow), "query-in-context"])
def test_print_dynamics_into_a_closed_pipe_ends_quietly(task):
    cmd = f"{sys.executable} -m derivations.print_dynamics --task {task} | true"
    out = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True,
                         cwd=ROOT, env=ENV)
    assert out.returncode == 0 and out.stderr == "", out


def test_printed_cache_is_fresh_and_is_what_the_expressions_print():
    """Without --params or rates the paper's results are printed from the printed-results
    cache: it must be fresh (keyed on the derivations, the catalog and the formats) and
    hold, for every result and format, exactly what printing the cached expression gives."""
    from derivations import catalog
    store = catalog.PRINTED
    assert {store.owner.name, *(p.name for p in store.sources)} == {"catalog.py", "formats.py"}
    shipped = store.read(store.shipped, store.key())
    assert shipped is not None, "derivations/_cache/printed.json is stale: run python -m derivations.catalog --rebuild"
    assert shipped == catalog._print_results()


def test_cold_start_decodes_and_imports_only_what_it_prints():
    """The cold start of the paper's output (issue 18: <= 0.5 s): no expression decoded, no
    derivation module of the engine imported (the catalog module, which holds the printed
    store, is); with --params only the printed results decoded."""
    code = ("import sys, io, contextlib\nfrom derivations.print_dynamics import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): assert main(sys.argv[1:]) == 0\n"
            "loaded = sorted(m for m in ('derivations.symbolic.srepr_reader', 'derivations.catalog', "
            "'derivations.engine.reduce', 'derivations.engine.family', 'derivations.tasks.closed_forms') "
            "if m in sys.modules)\n"
            "from derivations.catalog import STORE\n"
            "print(loaded, STORE.memo is None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=ENV)
    assert out.returncode == 0 and out.stdout.strip() == "['derivations.catalog'] True", out
    out = subprocess.run([sys.executable, "-c", code, "--params", "m=3"], capture_output=True, text=True,
                         cwd=ROOT, env=ENV)
    assert out.returncode == 0 and out.stdout.strip() == (
        "['derivations.catalog', 'derivations.symbolic.srepr_reader'] True"), out


def _lambda_by_hand(r, L, M, b):
    """Lambda = r (M - 1) l(L)^2 / (M b), l(L) = log((M - 1)/(e^L - 1)), written out here."""
    import math
    return r * (M - 1) * math.log((M - 1) / math.expm1(L)) ** 2 / (M * b)


@pytest.mark.parametrize("fmt", ["pretty", "text", "latex", "json"])
def test_master_lambda_beside_the_shares_in_every_format(fmt, capsys):
    argv = ["--format", fmt, "--parameterization", "CACO", "--params", "m=5,n=50,b=40,M=10",
            "--ratio", "3", "--loss", "0.2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        state = json.loads(out)["state_at_loss"]
        assert list(state)[-3:] == ["other_attention", "master_lambda", "loss"]
        value = state["master_lambda"]
    else:
        lines = out.splitlines()
        i = next(k for k, line in enumerate(lines) if line.startswith("master_lambda = "))
        assert lines[i - 1].startswith("other_attention = ")
        value = float(lines[i].split(" = ")[1])
    assert value == pytest.approx(_lambda_by_hand(3.0, 0.2, 10, 40), rel=1e-13, abs=0)


def test_master_lambda_of_a_task_is_at_the_ratio_given(capsys):
    """shared-irrelevant is answered by the paper's closed form at a mapped ratio; its Lambda is the
    task's own, at the ratio given (M = 20, b = 50 by default)."""
    argv = ["--format", "text", "--task", "shared-irrelevant", "--parameterization", "CACO",
            "--ratio", "2", "--loss", "0.1"]
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("master_lambda = "))
    assert float(line.split(" = ")[1]) == pytest.approx(_lambda_by_hand(2.0, 0.1, 20, 50), rel=1e-13, abs=0)


#: The refusal of a subnormal value (which SymPy printed as the double it holds, 9.99988867182683E-321 for 1e-320).
_SUBNORMAL = (" must be a normal double in [2.2250738585072014e-308, 1.7976931348623157e+308] (a subnormal one has "
              "lost digits)")


@pytest.mark.parametrize("params, says", [
    ("m=1e400", "--params m must be a finite number > 0; got '1e400'"),
    ("n=-1e400", "--params n must be a finite number > 0; got '-1e400'"),
    ("M=1e400", "--params M must be an integer in [2, 9007199254740992]; got '1e400'"),
    ("b=1e-400", "--params b must be 0 or at least about 5e-324 in magnitude (the smallest double); got '1e-400'"),
    ("m=1e-300 --loss 2", "--params m must be in [1e-08, 1e+08] for the closed-form state (the range it is "
                          "verified on); got 1e-300"),
    ("m=1e-320", f"--params m{_SUBNORMAL}; got '1e-320'"),
    ("b=1e-320 --loss 2", f"--params b{_SUBNORMAL}; got '1e-320'")])
def test_a_parameter_out_of_range_is_shown_as_typed(params, says, capsys):
    """--params m=1e400 reads as inf, 1e-400 as 0: the one line names --params m, the range and the text typed
    (it said 'got inf' and 'got 0.0'), a subnormal as typed too (it said 'got 9.99988867182683e-321')."""
    assert main(["--params", *params.split()]) == 2
    assert capsys.readouterr() == ("", f"print_dynamics: error: {says}\n")


@pytest.mark.parametrize("args, says", [
    (["--ratio", "0"], "--ratio must be a finite number > 0; got 0.0"),
    (["--eta-ov", "0"], "--eta-ov must be a finite number > 0; got 0.0"),
    (["--ratio", "1e-320"], f"--ratio{_SUBNORMAL}; got 1e-320"),
    (["--eta-qk", "5e-324", "--eta-ov", "1"], f"--eta-qk{_SUBNORMAL}; got 5e-324"),
    (["--eta-ov", "2e-308", "--loss", "0.5"], f"--eta-ov{_SUBNORMAL}; got 2e-308"),
    (["--loss", "0"], "--loss must be in (0, log M) = (0, 2.99573); got '0'"),
    (["--ratio", "1e30", "--loss", "0.5"], "--ratio must be in [1e-12, 1e+12] for the closed-form state (the range "
                                           "it is verified on); got 1e+30"),
    (["--eta-qk", "1e30", "--loss", "0.5"], "--eta-qk, --eta-ov: ratio must be in [1e-12, 1e+12] for the "
                                            "closed-form state (the range it is verified on); got 1e+30"),
    (["--task", "shared-irrelevant", "--params", "n_c=0"], "--params n_c must be an integer >= 1 and <= 2**53 = "
                                                           "9007199254740992; got '0'")])
def test_a_refused_value_is_named_by_its_option(args, says, capsys):
    """The line names the option that gave the value (``--ratio``, ``--params n_c``), not a bare name (``ratio``,
    ``eta-ov``, ``loss``, ``n_c``)."""
    assert main(args) == 2
    assert capsys.readouterr() == ("", f"print_dynamics: error: {says}\n")


def test_an_empty_params_is_refused(capsys):
    """As in the experiments and numerics.verify: omitting --params gives the defaults, '' is refused."""
    assert main(["--params", ""]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("print_dynamics: error: --params must be name=value pairs") and \
        err.count("\n") == 1


def test_a_cache_it_cannot_save_is_reported_under_its_one_name(tmp_path, monkeypatch, capsys):
    """Every line print_dynamics writes starts with 'print_dynamics:', the warning of its printed-results cache
    (derived again, then not saved: the user cache is a file, not a directory) included."""
    from derivations.catalog import PRINTED
    from derivations.output.dynamics import build_parser

    data = PRINTED.load()
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(PRINTED, "memo", None)
    monkeypatch.setattr(PRINTED, "warned", False)
    monkeypatch.setattr(PRINTED, "read", lambda *a: None)
    monkeypatch.setattr(PRINTED, "derive", lambda: data)
    assert main(["--format", "text", "--parameterization", "CACO"]) == 0
    err = capsys.readouterr().err
    assert "cannot save the printed-results cache" in err and build_parser().name == "print_dynamics"
    assert all(line.startswith("print_dynamics: ") for line in err.splitlines()), err


@pytest.mark.parametrize("task, loss, ratio, header", [
    ("paper", "1e-320", "0.123456789", "== State at loss L = 1e-320 (CACO, zero init, eta_QK/eta_OV = 0.123456789, "
                                       "m=5, n=50, b=50, M=20) =="),
    ("query-in-context", "0.123456789", "0.5", "== state_at_loss: L = 0.123456789 (CACO, zero init, "
                                               "eta_QK/eta_OV = 0.5) ==")])
def test_the_state_header_shows_the_numbers_given_as_typed(task, loss, ratio, header, capsys):
    """Not at six digits (1e-320 was shown as 9.99989e-321, 0.123456789 as 0.123457), and the loss given, not the
    loss the integrated flow reached (in the JSON's state, as before)."""
    assert main(["--task", task, "--loss", loss, "--ratio", ratio, "--format", "text", "--parameterization",
                 "CACO"]) == 0
    text = capsys.readouterr().out
    assert header in text.splitlines() and "given_loss" not in text
    assert main(["--task", task, "--loss", loss, "--ratio", ratio, "--format", "json", "--parameterization",
                 "CACO"]) == 0
    assert "given_loss" not in json.loads(capsys.readouterr().out)["state_at_loss"]


def test_a_subnormal_value_of_a_tasks_own_real_parameter_is_refused(tmp_path, capsys):
    """A task file's real parameter (default 0.5) given 1e-320 is refused as m, n and b are (it was substituted as
    9.99988867182683E-321); an integer parameter's value and a normal real one are taken as before."""
    path = tmp_path / "scaled.toml"
    path.write_text('name = "scaled"\nquery = "q"\n[parameters]\ng = 0.5\n[[groups]]\nname = "q"\nper_class = true\n'
                    '[[groups]]\nname = "r"\nper_class = true\nmultiplicity = "m"\n'
                    '[[groups]]\nname = "z"\nper_class = false\nembedded = false\nmultiplicity = "g * n"\n')
    assert main(["--task", str(path), "--params", "g=1e-320"]) == 2
    assert capsys.readouterr() == ("", f"print_dynamics: error: --params g{_SUBNORMAL}; got '1e-320'\n")
    from derivations.output.dynamics import parse_params
    from derivations.tasks import get_task
    assert parse_params("g=2.5e-308,m=3", get_task(str(path))) == {"g": 2.5e-308, "m": 3.0}
