"""Sweeps whose numbers the docs quote, stored in ``tests/data/docs_sweeps/<name>/`` (``results.csv`` and
``sweep.json`` as the page's command wrote them), so that the default suite checks the quoted numbers
against the command's output without training; the slow tests run the command again and compare
(importable because pytest puts ``tests/`` on ``sys.path``)."""
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "docs_sweeps"
#: The relative difference a run again may show: float64 rounding (the run again uses the BLAS kernels that
#: stored the output, :data:`STORED_KERNELS`, and is then bit for bit the same).
RTOL = 1e-14
#: The OpenBLAS kernels (``OPENBLAS_CORETYPE``) the docs' sweeps and the stored reproductions
#: (``tests/data/reproduce``, ``tests/data/readme_sweep_float32``) were computed with. Other kernels round
#: some products differently in their last bit, and a long run carries that further: on an AMD EPYC whose
#: OpenBLAS picks SkylakeX kernels, the first differences found were 2.6e-14 relative (float64: a confidence
#: bound of the paper_m4 sweep, FAFO_fast_qk's attention entropy) and 7.6e-4 (float32: a row's loss).
STORED_KERNELS = "Haswell"


def run_with_stored_kernels(args, timeout=3600):
    """Run ``python args...`` in the checkout with OpenBLAS's :data:`STORED_KERNELS` (the child's BLAS
    is checked to be them); return its stdout. A failure shows the child's stderr."""
    check = ("import threadpoolctl, sys; kinds = {i.get('architecture') for i in threadpoolctl.threadpool_info()"
             " if i.get('internal_api') == 'openblas'}; "
             f"sys.exit(0 if kinds == {{{STORED_KERNELS!r}}} else 'OpenBLAS kernels ' + repr(kinds))")
    env = dict(os.environ, OPENBLAS_CORETYPE=STORED_KERNELS,
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    for argv in (["-c", "import numpy; " + check], list(args)):
        proc = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, (argv[:3], proc.stderr[-4000:])
    return proc.stdout


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
    ``tmp_path``) with the :data:`STORED_KERNELS`, and compare its results.csv and sweep.json with the stored
    ones, to :data:`RTOL`."""
    args = list(args)
    out = tmp_path / name
    args[args.index("--output") + 1] = str(out)
    run_with_stored_kernels(["-m", "numerics.experiments", *args, "--quiet"])
    rows, sweep = stored(name)
    again = list(csv.DictReader((out / "results.csv").open(newline="")))
    assert_close([{k: _numbers(v) for k, v in r.items()} for r in again],
           [{k: _numbers(v) for k, v in r.items()} for r in rows], "results.csv")
    assert_close(json.loads((out / "sweep.json").read_text()), sweep, "sweep.json")
