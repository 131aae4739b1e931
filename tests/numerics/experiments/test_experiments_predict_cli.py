"""The theory's command line: python -m numerics.experiments.predict (and the
python -m numerics.authors_task forward): bad input is one line and exit 2 before any flow."""
import json
import os
import subprocess
import sys

import pytest

from numerics.experiments import predict, theory
from numerics.experiments.task_sampling import AUTHORS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir))


def _no_flow(monkeypatch):
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))


def _uniform_initial_loss():
    return min(theory.initial_loss(AUTHORS, P, "uniform", 1234) for P in ("CACO", "FAFO"))


@pytest.mark.parametrize("argv", [
    ["--target-loss", "0.1,0.1"], ["--target-loss", "0.2,0.1,0.2"], ["--target-loss", "4"],
    ["--target-loss", "1e-20"], ["--target-loss", ""], ["--lr-ov", "1,2"], ["--lr-ov", "0"],
    ["--init-scale", "1,2"], ["--init-scale", "1e300"], ["--init-scale", "1e-300"],
    ["--init", "uniform", "--init-scale", "0.5"],
    ["--init", "authors", "--parameterizations", "CACO", "--init-scale", "0.5"],
    ["--ratios", "1e6"], ["--ratios", "1e12"], ["--ratios", "1e300"], ["--ratios", "1,x"],
    ["--ratios", ""], ["--ratios", "5e-324"], ["--parameterizations", "CAXO"], ["--seeds", "0"],
    ["--seeds", "2.5"], ["--seeds", "100000000"], ["--seq-len", "2"], ["--seq-len", "1e3"],
    ["--init", "gauss"], ["--bogus"]])
def test_bad_input_is_one_line_exit_2_before_any_flow(argv, monkeypatch, capsys):
    _no_flow(monkeypatch)
    assert predict.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("python -m numerics.experiments.predict: error: ")


def test_target_not_below_a_seeds_initial_loss_is_refused(monkeypatch, capsys):
    _no_flow(monkeypatch)
    L0 = _uniform_initial_loss()
    argv = ["--init", "uniform", "--parameterizations", "CACO,FAFO", "--target-loss", repr(L0)]
    assert predict.main(argv) == 2
    err = capsys.readouterr().err
    assert "--target-loss must be below the initial loss" in err and len(err.splitlines()) == 1


def test_json_records_sorted_targets_and_used_init_scale(capsys):
    argv = ["--parameterizations", "FACO", "--ratios", "2", "--target-loss", "0.5,1", "--seeds", "2",
            "--init", "identity", "--json"]
    assert predict.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["target_losses"] == [1.0, 0.5] and out["settings"]["seeds"] == [1234, 1235]
    recs = out["records"]
    assert [(r["seed"], r["target_loss"]) for r in recs] == [(1234, 1.0), (1234, 0.5), (1235, 1.0),
                                                            (1235, 0.5)]
    assert all(list(r) == list(predict.RECORD_FIELDS) and r["reached"] for r in recs)
    one = ["--parameterizations", "FACO", "--ratios", "1", "--target-loss", "0.1", "--init", "identity",
           "--json"]
    assert predict.main(one) == 0
    small = json.loads(capsys.readouterr().out)["records"][0]
    assert predict.main(one + ["--init-scale", "1e-3"]) == 0
    large = json.loads(capsys.readouterr().out)["records"][0]
    assert large["relevant_attention"] > small["relevant_attention"] + 0.05   # the scale is used


def test_table_output(capsys):
    assert predict.main(["--parameterizations", "CACO", "--ratios", "1", "--target-loss", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("CACO") and "1234" in lines[2]


def _run(args, **kwargs):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, **kwargs)


def test_authors_task_forwards_to_predict():
    r = _run(["numerics.authors_task", "--help"])
    assert r.returncode == 0 and "--seeds" in r.stdout and "--target-loss" in r.stdout
    r = _run(["numerics.authors_task", "--lr-ov", "1,2"])
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_is_one_line_exit_1():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "numerics.experiments.predict", "--parameterizations",
                            "CACO", "--ratios", "1", "--target-loss", "1", "--json"], cwd=ROOT,
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "cannot write" in r.stderr
