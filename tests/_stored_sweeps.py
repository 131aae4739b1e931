"""Sweeps whose numbers the docs quote, stored in ``tests/data/docs_sweeps/<name>/`` (``results.csv`` and
``sweep.json`` as the page's command wrote them), so that the default suite checks the quoted numbers
against the command's output without training; the slow tests run the command again and compare
(importable because pytest puts ``tests/`` on ``sys.path``)."""
import csv
import json
import math
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "docs_sweeps"
#: The relative difference a run again may show: none where the BLAS kernels are those that stored the
#: output, float64 rounding elsewhere.
RTOL = 1e-14


def stored(name):
    """The stored output of the sweep ``name``: its rows (``csv.DictReader``'s, text) and its sweep.json."""
    rows = list(csv.DictReader((DATA / name / "results.csv").open(newline="")))
    return rows, json.loads((DATA / name / "sweep.json").read_text())


def assert_is_the_command(sweep, args):
    """The stored ``sweep.json``'s settings are those of the command-line arguments ``args`` (``sweep ...``)."""
    from derivations.core.cli import parse_params
    from numerics.experiments.__main__ import build_parser
    parsed = build_parser().parse_args(args)
    settings = sweep["settings"]
    assert settings["parameterizations"] == parsed.parameterizations.split(",")
    assert settings["ratios"] == [float(r) for r in parsed.ratios.split(",")]
    assert settings["seeds"] == int(parsed.seeds)
    assert settings["target_loss"] == [float(v) for v in parsed.target_loss.split(",")]
    assert settings["lr_ov"] == float(parsed.lr_ov)
    assert settings.get("task") == parsed.task
    assert {k: str(v) for k, v in settings.get("task_params") or ()} == parse_params(parsed.params or "")


def assert_close(a, b, where):
    """``a`` and ``b`` (JSON values) are equal, their floats to :data:`RTOL` (NaN equal to NaN); ``where`` names
    the place of a difference."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            assert_close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and not (math.isnan(a) and math.isnan(b)):
        assert math.isclose(a, b, rel_tol=RTOL, abs_tol=0), (where, a, b)
    elif isinstance(a, float) and isinstance(b, float):
        pass                                                          # NaN in both
    else:
        assert a == b, (where, a, b)


def _numbers(text):
    try:
        return float(text) if any(c in text for c in ".en") else int(text)
    except ValueError:
        return text


def assert_run_again_is_stored(name, args, tmp_path):
    """Run ``python -m numerics.experiments`` with ``args`` (its ``--output`` replaced by a folder of
    ``tmp_path``) and compare its results.csv and sweep.json with the stored ones, to :data:`RTOL`."""
    from numerics.experiments.__main__ import main
    args = list(args)
    out = tmp_path / name
    args[args.index("--output") + 1] = str(out)
    assert main(args + ["--quiet"]) == 0
    rows, sweep = stored(name)
    again = list(csv.DictReader((out / "results.csv").open(newline="")))
    assert_close([{k: _numbers(v) for k, v in r.items()} for r in again],
           [{k: _numbers(v) for k, v in r.items()} for r in rows], "results.csv")
    assert_close(json.loads((out / "sweep.json").read_text()), sweep, "sweep.json")
