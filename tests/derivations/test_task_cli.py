"""print_dynamics --task: the paper unchanged, other tasks, state at loss, bad input."""
import json
import math

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from derivations.print_dynamics import main


def test_task_paper_is_byte_identical_to_default(capsys):
    assert main(["--format", "text"]) == 0
    default = capsys.readouterr().out
    assert main(["--format", "text", "--task", "paper"]) == 0
    assert capsys.readouterr().out == default and default


def test_task_list(capsys):
    assert main(["--task", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].split(" ")[0] for line in out] == [
        "paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context", "query-copies",
        "authors"]


def test_task_list_as_json(capsys):
    """--format json lists the tasks as JSON: what the text shows, one object per task."""
    assert main(["--task", "list"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert main(["--task", "list", "--format", "json"]) == 0
    tasks = json.loads(capsys.readouterr().out)
    assert [set(t) for t in tasks] == [{"name", "parameters", "description"}] * len(text)
    for line, t in zip(text, tasks):
        params = f" (parameters: {', '.join(t['parameters'])})" if t["parameters"] else ""
        assert line == f"{t['name']}{params}: {t['description']}"


@pytest.mark.parametrize("args,flag", [(["--loss", "0.1"], "--loss"), (["--params", "m=3"], "--params"),
                                       (["--ratio", "2"], "--ratio"), (["--eta-ov", "2"], "--eta-ov"),
                                       (["--parameterization", "CACO"], "--parameterization")])
def test_task_list_refuses_options_it_would_ignore(capsys, args, flag):
    line = _one_line_error(capsys, ["--task", "list", *args])
    assert line.startswith(f"print_dynamics: error: {flag}: --task list takes only --format")


@pytest.mark.parametrize("args,message", [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--task", "shared-irrelevant", "--params", "n_c=0"], "n_c must be an integer"),
    (["--task", "shared-irrelevant", "--params", "n_c=2.5"], "n_c must be an integer"),
    (["--task", "query-in-context", "--params", "n_c=2"], "has no parameter 'n_c'"),
    (["--task", "paper", "--params", "n_c=2"], "--params: task 'paper' has no parameter 'n_c' (its parameters: M, b, m, n)"),
    (["--task", "shared-irrelevant", "--loss", "9"], "loss must be in (0, log M)"),
    (["--task", "authors", "--loss", "0.5"], "no reduced ODE"),
])
def test_bad_input_one_line_exit_2(capsys, args, message):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_shared_irrelevant_state_at_loss_closed_form_matches_integration(capsys):
    """The closed form (paper's state equation at the mapped ratio) against an
    independent integration of the task's own reduced ODE to the loss level."""
    ratio, L, n_c = 3.0, 0.3, 4
    assert main(["--task", "shared-irrelevant", "--params", f"n_c={n_c}", "--parameterization", "CACO",
                 "--ratio", str(ratio), "--loss", str(L), "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    state = payload["state_at_loss"]
    assert "closed form" in state["method"] and set(state) >= {"alpha", "mu_QK", "mu_OV", "loss"}
    from derivations.symbolic import M, b, eta_OV, eta_QK, m, mu_OV, mu_QK, n
    from derivations.engine import n_c as n_c_sym
    from derivations.task_catalog import task_reduction
    red = task_reduction("shared-irrelevant", "CACO")
    vals = {m: 5, n: 50, b: 50, M: 20, n_c_sym: n_c, eta_QK: ratio, eta_OV: 1}
    f = sp.lambdify((mu_OV, mu_QK), [red.odes[mu_OV].subs(vals), red.odes[mu_QK].subs(vals)], "math")
    loss = sp.lambdify((mu_OV, mu_QK), red.loss.subs(vals), "math")
    alpha = sp.lambdify(mu_QK, red.alpha.subs(vals), "math")
    event = lambda t, y: loss(*y) - L
    event.terminal = True
    sol = solve_ivp(lambda t, y: f(*y), (0, 1e9), [0.0, 0.0], method="DOP853", events=event,
                    rtol=1e-12, atol=1e-14)
    y = sol.y_events[0][0]
    assert state["mu_OV"] == pytest.approx(y[0], rel=1e-7)
    assert state["mu_QK"] == pytest.approx(y[1], rel=1e-7)
    assert state["alpha"] == pytest.approx(alpha(y[1]), rel=1e-7)


def test_task_output_formats(capsys):
    for fmt in ("pretty", "text", "latex"):
        assert main(["--task", "query-in-context", "--parameterization", "CACO", "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "no first integral" in out and "mu_QK_q" in out.replace("\\", "").replace("{", "").replace("}", "")
    assert main(["--task", "shared-irrelevant", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload["parameterizations"]) == {"CACO", "CAFO", "FACO", "FAFO"}
    assert payload["parameterizations"]["CACO"]["mapping"] == {"eta_QK": "eta_QK*(n_c + 1)/n_c"}
    assert payload["parameterizations"]["FACO"]["odes"] is None


@pytest.mark.slow
def test_query_in_context_state_at_loss_numeric(capsys):
    assert main(["--task", "query-in-context", "--ratio", "10", "--loss", "0.5", "--format", "json"]) == 0
    state = json.loads(capsys.readouterr().out)["state_at_loss"]
    assert "numerical" in state["method"] and 0 < state["alpha"] < 1
    assert state["loss"] == pytest.approx(0.5, rel=1e-9)


SYMBOLIC = ["paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context"]


def _one_line_error(capsys, args):
    """``main(args)`` with warnings as errors: exit 2, one line on stderr, nothing on stdout."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main(args)
    captured = capsys.readouterr()
    assert status == 2 and captured.out == "", (args, status, captured)
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


@pytest.mark.parametrize("task,params", [("paper", "m=1,m=2"), ("shared-irrelevant", "n_c=1,n_c=2"),
                                         ("query-in-context", "M=3,M=4"), ("authors", "M=4,M=4"),
                                         ("shared-irrelevant+query-in-context", "n_c=2,b=1,n_c=2")])
def test_duplicate_params_refused_for_every_task(capsys, task, params):
    """Issue 15 item 12: a name given twice is refused for every task (not: the last wins)."""
    line = _one_line_error(capsys, ["--task", task, "--params", params])
    assert "twice" in line and params.split("=")[0] in line


@pytest.mark.parametrize("task", SYMBOLIC)
@pytest.mark.parametrize("params,needle", [("M=1e300", "M must be an integer in [2, 9007199254740992]"),
                                           ("m=1e300", "m must be in ["),
                                           ("b=1e-300", "b must be in [")])
def test_huge_parameters_refused_naming_the_range(capsys, task, params, needle):
    """Issue 15 item 12: M = 1e300 or m = 1e300 at a loss was an OverflowError for some tasks."""
    line = _one_line_error(capsys, ["--task", task, "--params", params, "--ratio", "10", "--loss", "0.1"])
    assert needle in line, line


@pytest.mark.parametrize("task", ["shared-irrelevant", "shared-irrelevant+query-in-context"])
def test_huge_n_c_never_prints_a_rounding_artifact(capsys, task):
    """Issue 15 item 12: n_c = 1e23 printed 99999999999999991611392; now refused (by the
    engine's range) or printed as the float it is."""
    status = main(["--task", task, "--params", "n_c=1e23", "--parameterization", "CACO", "--format", "text"])
    captured = capsys.readouterr()
    assert "99999999999999991611392" not in captured.out + captured.err
    if status == 0:
        assert "n_c = 1.00000000000000E+23" in captured.out
    else:
        assert status == 2 and len(captured.err.strip().splitlines()) == 1 and "n_c" in captured.err


@pytest.mark.parametrize("task", SYMBOLIC)
@pytest.mark.parametrize("ratio", ["1e12", "1e300", "1e-300"])
def test_extreme_ratios_name_the_users_ratio(capsys, task, ratio):
    """Issue 15 item 13: the same behaviour for every task: answered, or one line naming
    the user's ratio (never a mapped one, never np.float64) and the supported range;
    no RuntimeWarning (warnings are errors here)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main(["--task", task, "--ratio", ratio, "--loss", "0.1", "--format", "json"])
    captured = capsys.readouterr()
    if status == 0:
        assert float(ratio) == 1e12 and json.loads(captured.out)["state_at_loss"]["loss"] == 0.1     # the loss asked
        return
    line = captured.err.strip()
    assert status == 2 and captured.out == "" and len(line.splitlines()) == 1, captured
    assert "np.float64" not in line and line.endswith(f"got {float(ratio):.15g}") and "ratio must be" in line
    assert "2000000000000" not in line and "2e+12" not in line   # shared-irrelevant maps r -> 2r


@pytest.mark.parametrize("task", SYMBOLIC)
def test_tiny_loss_answered_or_refused_with_the_range(capsys, task):
    """Issue 15 item 13: --ratio 10 --loss 1e-16 was "math domain error" for the tasks
    that integrate; it is answered as for the paper, or refused naming the range."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        status = main(["--task", task, "--ratio", "10", "--loss", "1e-16", "--format", "json"])
    captured = capsys.readouterr()
    if status == 0:
        state = json.loads(captured.out)["state_at_loss"]
        assert state["loss"] == pytest.approx(1e-16, rel=1e-9, abs=0) and 0.5 < state["alpha"] < 1
    else:
        line = captured.err.strip()
        assert status == 2 and len(line.splitlines()) == 1 and "loss must be in [1e-08, " in line, line
        assert line.endswith("got 1e-16")


def test_integrated_state_at_the_lowest_supported_loss_is_accurate(capsys):
    """The lower end of the integrated range is answered, and the loss reached is the one asked."""
    assert main(["--task", "query-in-context", "--ratio", "10", "--loss", "1e-6", "--format", "json"]) == 0
    state = json.loads(capsys.readouterr().out)["state_at_loss"]
    assert state["loss"] == pytest.approx(1e-6, rel=1e-8, abs=0)


@pytest.mark.parametrize("command", ["print_dynamics", "predict"])
def test_a_parameter_the_task_does_not_use_is_refused_as_the_experiments_refuse_it(command, tmp_path, capsys):
    """A task without irrelevant tokens does not use n: --params n=3 is refused by print_dynamics with the line of
    the experiments' commands (derivations.engine.check_parameter_names), not ignored."""
    from numerics.experiments.__main__ import main as experiments

    file = tmp_path / f"no-n-{command}.toml"
    file.write_text(f'name = "no-n-{command}"\ndescription = "relevant tokens only"\nquery = "q"\nrelevant = ["r"]\n'
                    '[[groups]]\nname = "q"\nper_class = true\nmultiplicity = 0\n'
                    '[[groups]]\nname = "r"\nper_class = true\nmultiplicity = "m"\n')
    args = ["--task", str(file), "--params", "m=2,n=3"]
    status = main(args) if command == "print_dynamics" else experiments(["predict", "--target-loss", "0.5", *args])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.rstrip().endswith(f"task 'no-n-{command}' has no parameter 'n' (its parameters: M, b, m)")
    if command == "print_dynamics":
        assert main(["--task", str(file), "--params", "m=2,b=50,M=20", "--format", "text"]) == 0


@pytest.mark.parametrize("given", ["m=3", "M=4", "M=5"])
def test_authors_task_takes_no_parameter_as_the_experiments(capsys, given):
    """The authors' task has fixed numbers, its 4 classes included (its listed parameters are none): every value,
    M = 4 too, is refused, with the line of the experiments' --params, which refuse M for it."""
    from numerics.experiments.__main__ import main as experiments

    name = given.partition("=")[0]
    fixed = "; its number of classes is fixed, M = 4" if name == "M" else ""
    reason = f"task 'authors' has no parameter '{name}' (its parameters: none{fixed})"
    assert _one_line_error(capsys, ["--task", "authors", "--params", given]).endswith(f"--params: {reason}")
    assert experiments(["predict", "--target-loss", "0.5", "--params", given]) == 2
    assert capsys.readouterr().err.rstrip().endswith(f"--task authors: {reason}")
    assert main(["--task", "authors", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"] == []


@pytest.mark.parametrize("args", [["--ratio", ""], ["--eta-qk", ""], ["--loss", ""], ["--params", "m="]])
def test_empty_values_refused(capsys, args):
    assert "must be" in _one_line_error(capsys, ["--task", "shared-irrelevant", *args])


def _state_json(capsys, task, *rates):
    assert main(["--task", task, "--parameterization", "CACO", "--loss", "0.1", "--format", "json",
                 *rates]) == 0
    return json.loads(capsys.readouterr().out)["state_at_loss"]


@pytest.mark.parametrize("eta_qk,eta_ov", [("20", "10"), (None, "10")])
def test_time_at_both_rates_is_the_flow_time_at_those_rates(capsys, eta_qk, eta_ov):
    """The state depends on the ratio only; the time is the reduced flow's at the rates given
    (it scales as 1/eta_OV), in json and in text."""
    from numerics.dynamics import ReducedSystem
    rates = [*(["--eta-qk", eta_qk] if eta_qk else []), "--eta-ov", eta_ov]
    qk, ov = float(eta_qk or 1), float(eta_ov)
    state = _state_json(capsys, "query-in-context", *rates)
    by_ratio = _state_json(capsys, "query-in-context", "--ratio", repr(qk / ov))
    ref = ReducedSystem("CACO", task="query-in-context", eta_QK=qk, eta_OV=ov).integrate(target_loss=0.1)
    assert state["t"] == pytest.approx(ref.target_state["t"], rel=1e-8)
    assert state["t"] == pytest.approx(by_ratio["t"] / ov, rel=1e-14)
    assert {k: v for k, v in state.items() if k not in ("t", "eta_OV")} == \
        {k: v for k, v in by_ratio.items() if k != "t"}
    assert state["eta_OV"] == ov and "eta_OV" not in by_ratio
    assert main(["--task", "query-in-context", "--parameterization", "CACO", "--loss", "0.1", *rates]) == 0
    out = capsys.readouterr().out
    assert f"eta_OV = {ov:g}) ==" in out
    assert float(out.split("\nt = ")[1].split()[0]) == pytest.approx(state["t"], rel=1e-14)


def test_paper_state_at_both_rates_is_the_state_at_their_ratio(capsys):
    """The paper's closed form has no time: both rates print the state at their ratio, as --ratio does."""
    state = _state_json(capsys, "paper", "--eta-qk", "20", "--eta-ov", "10")
    assert state == _state_json(capsys, "paper", "--ratio", "2") and "t" not in state
