"""The page "Experiments" (docs/experiments.md), "SGD on the engine's tasks": the numbers quoted for
the sweep of the paper's task at M = 4, b = 1 are what that sweep writes, and those quoted for a random
start beside the closed form are what predict gives (the sweep's output stored in
tests/data/docs_sweeps/paper_m4, run again by the slow test)."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from _stored_sweeps import assert_is_the_command, assert_run_again_is_stored, stored

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = (DOCS / "experiments.md").read_text(encoding="utf-8")


def _command():
    """The page's sweep of the paper's task (its one ``--task paper`` sweep)."""
    [line] = [c.replace("\\\n", " ") for c in re.findall(r"python -m numerics\.experiments (sweep --task paper "
                                                           r"(?:\\\n|[^\n])*)", PAGE)]
    return shlex.split(line)


def test_the_stored_sweep_is_the_pages_command():
    assert_is_the_command(stored("paper_m4")[1], _command())


@pytest.mark.slow
def test_the_pages_command_writes_the_stored_sweep(tmp_path):
    assert_run_again_is_stored("paper_m4", _command(), tmp_path)


def test_the_paper_sweep_is_what_the_page_quotes():
    stored_rows, written = stored("paper_m4")
    quoted = re.search(r"\(`sweep.json`'s\s+`agreement`: ([\d.]+) against ([\d.]+) at ratio 1 and target 1.0; "
                       r"([\d.]+) against ([\d.]+) at ratio 10\)", PAGE)
    shares = {}
    for record in written["agreement"]:
        for row in record["ratios"]:
            rel = row["relevant_attention"]
            shares[record["target_loss"], row["ratio"]] = (rel["sgd"], rel["theory"])
            assert abs(rel["difference"]) < 0.01                    # "within 0.01", every ratio and target
    assert [f"{v:.3f}" for v in shares[1.0, 1.0] + shares[1.0, 10.0]] == list(quoted.groups())
    rows = {(r["parameterization"], float(r["ratio"]), int(r["seed"]), float(r["target_loss"])): int(r["steps"])
            for r in stored_rows}
    fractions = [p["at_measured_loss"]["steps"] / rows[p["parameterization"], p["ratio"], p["seed"], p["target_loss"]]
                 for p in written["prediction"]]
    assert len(fractions) == len(rows) == 8
    low, high = re.search(r"flow reaches each run's measured loss after (\d+)-(\d+) %", PAGE).groups()
    assert (round(100 * min(fractions)), round(100 * max(fractions))) == (int(low), int(high))


def test_the_closed_form_beside_a_random_start_is_what_the_page_quotes():
    """shared-irrelevant (M = 4, b = 1, n_c = 5), CACO from the authors' (uniform) start, loss 0.5,
    seeds 1234-1236: the flow's relevant share and the closed form from zero, as quoted."""
    from numerics.experiments.predict import predict

    quoted = re.search(r"puts ([\d.]+)-([\d.]+) of the attention on the relevant tokens\s+at loss 0.5 at ratio 1 "
                       r"and under ([\d.]+) at ratio 10 \(seeds 1234-1236\), where the closed form from zero\s+"
                       r"says ([\d.]+) and ([\d.]+)\.", PAGE)
    recs = predict(["CACO"], [1, 10], [0.5], seeds=3, lr_ov=0.5, task="shared-irrelevant",
                   task_params={"M": 4, "b": 1, "n_c": 5})
    low, high, below, closed_1, closed_10 = quoted.groups()
    at_1 = [r["relevant_attention"] for r in recs if r["ratio"] == 1]
    at_10 = [r["relevant_attention"] for r in recs if r["ratio"] == 10]
    assert (f"{min(at_1):.2f}", f"{max(at_1):.2f}") == (low, high) and max(at_10) < float(below)
    closed = {r["ratio"]: f"{r['closed_form_relevant_attention']:.2f}" for r in recs}
    assert (closed[1], closed[10]) == (closed_1, closed_10)
