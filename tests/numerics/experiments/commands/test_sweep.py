"""``sweep``'s refusals: where a ``--resume`` refusal's values come from, the float32 rule's text."""
from pathlib import Path

import pytest

from numerics.experiments.__main__ import build_parser, main

_PAPER = Path(__file__).parents[4] / "derivations" / "tasks" / "files" / "paper.toml"
_SWEEP = ["sweep", "--parameterizations", "CAFO", "--ratios", "1", "--seeds", "1", "--target-loss", "2",
          "--max-steps", "100", "--eval-batches", "1", "--workers", "1", "--quiet"]


def _stored_sweep(out, *options):
    """A sweep's directory holding the settings of a sweep started with ``options`` (no run done)."""
    from numerics.experiments.commands.sweep import _settings
    from numerics.experiments.directory import ExperimentDirectory

    settings = _settings(build_parser().parse_args([*_SWEEP, "--output", str(out), *options]))
    out.mkdir()
    with ExperimentDirectory(out, "sweep") as directory:
        directory.write_settings({**settings, "seed_blocks": [settings["seeds"]]})


@pytest.fixture
def task_file(tmp_path):
    """The paper's task with its own defaults n = 20 and b = 1 (own sequence length 5 + 20 + 2 = 27)."""
    file = tmp_path / "pd.toml"
    file.write_text(_PAPER.read_text().replace('name = "paper"', 'name = "pd"') + "\n[defaults]\nn = 20\nb = 1\n")
    return file


@pytest.mark.parametrize("stored, given, says", [
    (["--seq-len", "30"], [], "was run with --seq-len 30, not the sequence length 27 of task 'pd' (no --seq-len: "
                              "its total multiplicity + 2 at M = 20, m = 5, n = 20, set by defaults.n) (--resume"),
    (["--params", "n=30"], [], "was run with --params n=30, not n = 20, set by defaults.n (--resume"),
    (["--params", "n=30"], ["--params", "m=5"], "was run with --params n=30, not m=5 (n = 20, set by defaults.n) "
                                                "(--resume"),
    (["--params", "n=30"], ["--params", "n=20"], "was run with --params n=30, not n=20 (--resume"),
    ([], ["--seq-len", "30"], "was run with --seq-len 27, not 30 (--resume")],
    ids=["own-seq-len", "file-default", "params-and-default", "params", "typed-seq-len"])
def test_a_resume_refusal_names_where_the_command_lines_value_comes_from(stored, given, says, task_file, tmp_path,
                                                                         capsys):
    """A value the user did not type (the task's own sequence length, a task file's default) is named with
    its source, not as ``--seq-len 27`` or ``--params (none)``."""
    out = tmp_path / "out"
    _stored_sweep(out, "--task", str(task_file), *stored)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert main([*_SWEEP, "--task", str(task_file), "--output", str(out), "--resume", *given]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and f"--resume: the sweep in this directory {says}" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_float32_factor_refused_names_each_option_once(tmp_path, capsys):
    """A sweep's run has lr_qk = ratio x lr_ov and no ramp: its QK step's factor is the ratio over the score
    divisor, named as such (it read ``--ratios 3e+38 x --lr-ov x max(1, --qk-ramp) / --lr-ov / 0.1``, with
    --lr-ov twice and --qk-ramp, which sweep has not)."""
    out = tmp_path / "out"
    command = [*_SWEEP[:3], "--ratios", "3e38", *_SWEEP[5:]]
    assert main([*command, "--lr-ov", "1", "--task", "paper", "--params", "b=0.1", "--dtype",
                 "float32", "--output", str(out)]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and not out.exists()
    assert ("at these rates: --ratios 3e+38 / 0.1 (the QK step's factor) must be in [1.1754943508222875e-38, "
            "3.4028234663852886e+38] for the float32 step; got 2.9999999999999994e+39") in err, err


@pytest.mark.parametrize("command", [["fig2", "--parameterization", "CAFO", "--epochs", "1"],
                                     [*_SWEEP, "--no-theory"]], ids=lambda c: c[0])
def test_the_sequence_length_is_named_only_for_a_refusal(command, task_file, tmp_path, monkeypatch):
    """How a message names a task's own sequence length (its counts' values and their keys: the task read
    again) is found only where the memory check refuses, not for every command."""
    from numerics.experiments.commands import fig2, sweep

    def named(*_):
        raise AssertionError("seq_len_name called for no message")
    for module in (fig2, sweep):
        monkeypatch.setattr(module, "seq_len_name", named)
    args = build_parser().parse_args([*command, "--task", str(task_file), "--output", str(tmp_path / "out")])
    getattr(fig2 if command[0] == "fig2" else sweep, "prepare")(args)


def test_a_task_file_is_named_by_its_task_in_a_resume_refusal(task_file, tmp_path, capsys):
    """The stored sweep's task file is named by its task's name, not by the start of its canonical JSON text
    (``--task {"classes":"M","defaults":{"M":20,...``)."""
    out = tmp_path / "out"
    _stored_sweep(out, "--task", str(task_file))
    assert main([*_SWEEP, "--task", "paper", "--output", str(out), "--resume"]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1, err
    assert "the sweep in this directory was run with --task (the file of task 'pd'), not paper (" in err, err
