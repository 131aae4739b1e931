"""The page "Experiments" (docs/experiments.md), "SGD on the engine's tasks": the numbers quoted for
the sweep of the paper's task at M = 4, b = 1 are what that sweep writes."""
from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = (DOCS / "experiments.md").read_text(encoding="utf-8")


def _command():
    """The page's sweep of the paper's task (its one ``--task paper`` sweep)."""
    [line] = [c.replace("\\\n", " ") for c in re.findall(r"python -m numerics\.experiments (sweep --task paper "
                                                           r"(?:\\\n|[^\n])*)", PAGE)]
    return shlex.split(line)


def test_the_paper_sweep_is_what_the_page_quotes(tmp_path):
    from numerics.experiments.__main__ import main

    args = _command()
    out = args.index("--output") + 1
    args[out] = str(tmp_path / "sweep")
    assert main(args + ["--quiet"]) == 0
    written = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
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
            for r in csv.DictReader((tmp_path / "sweep" / "results.csv").open())}
    fractions = [p["at_measured_loss"]["steps"] / rows[p["parameterization"], p["ratio"], p["seed"], p["target_loss"]]
                 for p in written["prediction"]]
    assert len(fractions) == len(rows) == 8
    low, high = re.search(r"flow reaches each run's measured loss after (\d+)-(\d+) %", PAGE).groups()
    assert (round(100 * min(fractions)), round(100 * max(fractions))) == (int(low), int(high))
