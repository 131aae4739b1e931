"""The LaTeX section "Where attention goes" (derivations/output/latex_attention.py); that the
document holds it once is checked on the generated document in test_latex.py."""
from __future__ import annotations

import re

from derivations.output.latex_attention import attention_section


def test_the_section_holds_each_derived_statement():
    text = "\n".join(attention_section())
    labels = re.findall(r"\\label\{(eq:attention\.[^}]+)\}", text)
    assert {"eq:attention.Lambda", "eq:attention.edge", "eq:attention.small", "eq:attention.large",
            "eq:attention.early"} <= set(labels)
    assert len(labels) == len(set(labels)) == 9            # Lambda, 4 flow equations, edge, 2 signs, early
    small = text.split(r"\label{eq:attention.small}")[1].split(r"\end{equation}")[0]
    large = text.split(r"\label{eq:attention.large}")[1].split(r"\end{equation}")[0]
    assert "- m + s" in small and r"s - \frac{m}{R}" in large
    assert "invariant under exchanging" in text and "for $R > 1$ it is not" in text


# ------------------------------------------------------- the tables of stored numbers
import pytest  # noqa: E402

from derivations.output.attention_data import crossover_rows, sgd_runs  # noqa: E402
from derivations.output.latex_attention import crossover_table, sgd_table  # noqa: E402

ROWS = crossover_rows()
RUNS = sgd_runs()


def _cells(lines) -> list:
    """The body rows of a generated tabular, as lists of cells."""
    rows = [line[:-len(r" \\")].split(" & ") for line in lines if line.endswith(r" \\")]
    return rows[1:]


def _num(cell):
    return None if cell == "--" else float(cell)


def test_the_crossover_table_is_the_stored_records():
    cells = _cells(crossover_table())
    assert len(cells) == len(ROWS) >= 5
    for row, rec in zip(cells, ROWS):
        want = [rec["task"][k] for k in ("s", "R", "m", "n", "M", "b")] + [
            rec["target_loss"], rec["crossover_lambda"], rec["crossover_ratio"]]
        assert row[0] == rec["setting"].replace("_", r"\_")
        for got, value in zip(row[1:], want):
            assert _num(got) == (None if value is None else pytest.approx(value, rel=5e-4))


@pytest.mark.parametrize("setting", sorted({r["setting"] for r in ROWS}))
def test_the_stored_crossover_ratios_are_the_boundary_function(setting):
    """Independent recomputation: numerics.dynamics.boundary on the stored task and losses."""
    from numerics.dynamics import boundary
    mine = [r for r in ROWS if r["setting"] == setting]
    task = dict(mine[0]["task"])
    M, b = task.pop("M"), task.pop("b")
    records = boundary(target_loss=[r["target_loss"] for r in mine], M=M, b=b, **task)
    for rec, row in zip(records, mine):
        assert rec["target_loss"] == row["target_loss"]
        for key in ("crossover_ratio", "crossover_lambda"):
            assert rec[key] == (None if row[key] is None else pytest.approx(row[key], rel=1e-6))
        assert (rec["reason"] is None) == (row["reason"] is None)


def test_the_sgd_table_is_the_stored_runs_and_the_claim():
    """Every stored run of a setting with a stored crossover (the rows in their stored order), and
    what they show: below r* the relevant share leads, above it the self share; outside the window
    (no r*) one share leads at both ratios; SGD within 0.03 of the theory in both shares."""
    crossover = {(r["setting"], r["target_loss"]): r["crossover_ratio"] for r in ROWS}
    runs = [run for run in RUNS if (run["setting"], run["target_loss"]) in crossover]
    cells = _cells(sgd_table())
    assert len(cells) == len(runs) >= 30
    for row, run in zip(cells, runs):
        r_star = crossover[run["setting"], run["target_loss"]]
        assert row[:4] == [run["setting"], f"{run['ratio']:.4g}", "--" if r_star is None else f"{r_star:.4g}",
                           str(run["seed"])]
        values = [float(c) for c in row[4:]]
        want = [run[k] for k in ("loss", "self_attention", "relevant_attention", "theory_self_attention",
                                 "theory_relevant_attention")]
        assert values == pytest.approx(want, abs=5.1e-4)
        assert abs(run["self_attention"] - run["theory_self_attention"]) < 0.03
        assert abs(run["relevant_attention"] - run["theory_relevant_attention"]) < 0.03
        if r_star is not None:
            assert (run["relevant_attention"] > run["self_attention"]) == (run["ratio"] < r_star)
    for setting in {run["setting"] for run in runs if crossover[run["setting"], run["target_loss"]] is None}:
        assert len({run["relevant_attention"] > run["self_attention"] for run in runs
                    if run["setting"] == setting}) == 1


def test_the_section_has_the_two_tables():
    text = "\n".join(attention_section())
    assert text.count(r"\begin{tabular}") == 2
    assert "\n".join(crossover_table()) in text and "\n".join(sgd_table()) in text


@pytest.mark.parametrize("setting", sorted({r["setting"] for r in RUNS}))
def test_the_stored_theory_is_the_master_curve(setting):
    """Independent recomputation of the theory columns: the master curve from zero
    (numerics.dynamics.master_shares) at the Lambda of each run's ratio and measured loss gives the
    stored theory (each seed's flow from its own start) to 1e-6."""
    import numpy as np

    from numerics.dynamics import lambda_of_ratio, master_shares
    runs = [r for r in RUNS if r["setting"] == setting]
    task = dict(runs[0]["task"])
    M, b = task.pop("M"), task.pop("b")
    lam = lambda_of_ratio([r["ratio"] for r in runs], [r["loss"] for r in runs], M, b)
    curve = master_shares(lam, **task)
    for key in ("self_attention", "relevant_attention"):
        assert np.allclose(curve[key], [r[f"theory_{key}"] for r in runs], atol=1e-6, rtol=0)
