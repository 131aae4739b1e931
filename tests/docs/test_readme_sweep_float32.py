"""docs/experiments.md's paragraph on the README sweep in float32 (how many of its 180 rows reached their
target at another step, and how far the relevant-token attention and the measured loss moved): the float32
sweep's output is stored in ``tests/data/readme_sweep_float32/`` (the README's command with ``--dtype float32
--no-theory``, as the command wrote it) and set here against the float64 output in ``tests/data/readme_sweep/``;
the slow test retrains one of its jobs in float32."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = " ".join((ROOT / "docs" / "experiments.md").read_text(encoding="utf-8").split())


def _stored(name):
    rows = list(csv.DictReader((ROOT / "tests" / "data" / name / "results.csv").open(newline="")))
    key = ("parameterization", "ratio", "seed", "target_loss")
    return ({tuple(r[k] for k in key): r for r in rows},
            json.loads((ROOT / "tests" / "data" / name / "sweep.json").read_text()))


F64, SWEEP64 = _stored("readme_sweep")
F32, SWEEP32 = _stored("readme_sweep_float32")


def test_the_stored_float32_sweep_is_the_readme_sweep_in_float32():
    assert SWEEP32["settings"] == {**SWEEP64["settings"], "dtype": "float32"}
    assert F32.keys() == F64.keys() and len(F32) == 180


QUOTED = re.compile(r"(\d+) of its 180 rows reached their target one or two epochs \((\d+)-(\d+) steps\) apart "
                    r"\(factorized runs, whose paths drift most\), and over all rows the relevant-token attention moved "
                    r"by at most ([\d.]+) and the measured loss by at most (\d+) % \((\d+) % in a row measured at another "
                    r"step\)")


def test_the_float32_paragraph_is_the_stored_sweeps():
    rows, fewest, most, attention, loss, other = QUOTED.search(PAGE).groups()
    apart = {k: abs(int(F32[k]["steps"]) - int(F64[k]["steps"])) for k in F64 if F32[k]["steps"] != F64[k]["steps"]}
    assert len(apart) == int(rows) and set(apart.values()) == {int(fewest), int(most)} == {100, 200}
    assert {k[0] for k in apart} <= {"CAFO", "FACO", "FAFO"}                       # factorized runs
    assert max(abs(float(F32[k]["relevant_attention"]) - float(F64[k]["relevant_attention"])) for k in F64) \
        <= float(attention)

    def moved(k):
        return abs(float(F32[k]["loss"]) - float(F64[k]["loss"])) / float(F64[k]["loss"])
    assert round(100 * max(moved(k) for k in F64 if k not in apart)) == int(loss)
    assert round(100 * max(moved(k) for k in apart)) == int(other)


@pytest.mark.slow
def test_a_stored_float32_job_is_what_the_sweep_trains():
    """FAFO, seeds 1234-1236, every ratio in float32 (one job of the sweep, where rows reach their target at
    another step than in float64), retrained with the BLAS kernels that stored it
    (``_stored_sweeps.STORED_KERNELS``): the stored rows, to a relative 1e-14."""
    from _stored_sweeps import run_with_stored_kernels
    code = ("import json, sys\nfrom numerics.experiments.commands.sweep import _jobs\n"
            "from numerics.experiments.jobs import sweep_job\n"
            "[job] = [j for j in _jobs(json.loads(sys.argv[1])) if j['config']['parameterization'] == 'FAFO']\n"
            "print(json.dumps(sweep_job(job)['rows']))\n")
    rows = json.loads(run_with_stored_kernels(["-c", code, json.dumps(SWEEP32["settings"])]).splitlines()[-1])
    assert len(rows) == 45
    for row in rows:
        s = F32["FAFO", repr(row["ratio"]), str(row["seed"]), repr(row["target_loss"])]
        assert int(s["steps"]) == row["steps"]
        for key in ("loss", "relevant_attention", "self_attention", "other_attention"):
            assert row[key] == pytest.approx(float(s[key]), rel=1e-14, abs=0), key
