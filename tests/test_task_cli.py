"""print_dynamics --task: the paper unchanged, other tasks, state at loss, bad input."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from derivations.print_dynamics import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "derivations.print_dynamics", *args],
                          capture_output=True, text=True)


def test_task_paper_is_byte_identical_to_default():
    default, paper = run("--format", "text"), run("--format", "text", "--task", "paper")
    assert default.returncode == paper.returncode == 0
    assert default.stdout == paper.stdout and default.stdout


def test_task_list(capsys):
    assert main(["--task", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].split(" ")[0] for line in out] == [
        "paper", "shared-irrelevant", "query-in-context", "shared-irrelevant+query-in-context", "authors"]


@pytest.mark.parametrize("args,message", [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--task", "shared-irrelevant", "--params", "n_c=0"], "n_c must be an integer >= 1"),
    (["--task", "shared-irrelevant", "--params", "n_c=2.5"], "n_c must be an integer >= 1"),
    (["--task", "query-in-context", "--params", "n_c=2"], "has no parameter 'n_c'"),
    (["--task", "paper", "--params", "n_c=2"], "unknown parameter 'n_c'"),
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
    from derivations.symbols import M, b, eta_OV, eta_QK, m, mu_OV, mu_QK, n
    from derivations.task import n_c as n_c_sym
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
