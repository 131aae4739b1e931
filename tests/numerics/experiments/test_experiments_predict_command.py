"""``python -m numerics.experiments predict``: the theory's command wired into the experiments CLI.

The subcommand prints exactly what the standalone ``python -m numerics.experiments.predict``
prints (and ``python -m numerics.authors_task``, which forwards); bad input is one line on
stderr and exit 2 before any flow."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from numerics.experiments import predict, theory
from numerics.experiments.__main__ import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[3]
ARGV = ["--parameterizations", "FACO", "--ratios", "2", "--target-loss", "0.5,1", "--seeds", "2",
        "--init", "identity", "--json"]


def test_predict_is_a_subcommand(monkeypatch):
    monkeypatch.setattr(predict, "command", lambda args: ("work", args.ratios))
    assert COMMANDS["predict"](build_parser().parse_args(["predict", "--ratios", "3"])) == ("work", "3")
    args = build_parser().parse_args(["predict", "--ratios", "1,5"])
    assert args.command == "predict" and args.ratios == "1,5" and args.json is False


def test_subcommand_prints_what_the_standalone_command_prints(capsys):
    assert main(["predict", *ARGV]) == 0
    sub = capsys.readouterr().out
    assert predict.main(ARGV) == 0
    alone = capsys.readouterr().out
    assert sub == alone
    recs = json.loads(sub)["records"]
    assert [(r["seed"], r["target_loss"]) for r in recs] == [(1234, 1.0), (1234, 0.5), (1235, 1.0),
                                                            (1235, 0.5)]


def test_authors_task_forward_still_runs():
    run = lambda *m: subprocess.run([sys.executable, "-m", *m, *ARGV], capture_output=True, text=True,
                                    cwd=ROOT, timeout=120)
    old, new = run("numerics.authors_task"), run("numerics.experiments", "predict")
    assert old.returncode == new.returncode == 0
    assert old.stdout == new.stdout


@pytest.mark.parametrize("argv", [["--target-loss", "0.1,0.1"], ["--target-loss", "4"], ["--ratios", "0"],
                                  ["--parameterizations", "CAXO"], ["--seeds", "0"], ["--bogus"]])
def test_bad_input_is_one_line_exit_2_before_any_flow(argv, monkeypatch, capsys):
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    assert main(["predict", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "error:" in err
