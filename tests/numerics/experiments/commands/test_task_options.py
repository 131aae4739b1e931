"""How the experiments' commands name a task in headers (task_label) and read --seq-len (seq_len_for)
and --params."""
import json
from argparse import Namespace

import pytest

from derivations.core.cli import UsageError
from numerics.experiments.commands.task_options import seq_len_for, task_label


def test_a_task_is_named_with_its_file_only_when_read_from_one(tmp_path):
    file = tmp_path / "q.toml"
    file.write_text("")
    text = json.dumps({"name": "query-copies-file"})
    assert task_label({"task": "paper", "task_params": [["m", 5.0], ["b", 0.5]]}, "paper") == "task paper, m=5, b=0.5"
    assert task_label({"task": "paper"}, None) == "task paper"
    assert task_label({"task": text, "task_params": [["M", 4.0]]}, str(file)) == f"task query-copies-file ({file}), M=4"
    assert task_label({}, None) == "the authors' task"


def test_seq_len_is_an_integer_of_three_at_least():
    assert seq_len_for(None, Namespace(seq_len="3")) == 3
    for text in ("2", "0", "-1", "3.5", "x"):
        with pytest.raises(UsageError, match="^--seq-len must be an integer"):
            seq_len_for(None, Namespace(seq_len=text))


@pytest.mark.parametrize("command", [
    ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "1"],
    ["predict", "--parameterizations", "CACO", "--ratios", "1", "--target-loss", "1"],
    ["fig2", "--parameterization", "CACO"],
    ["boundary", "--target-loss", "1"]], ids=lambda c: c[0])
@pytest.mark.parametrize("blank", ["", " "])
def test_an_empty_params_is_refused_as_an_empty_ratios_is(command, blank, tmp_path, capsys):
    """Not read as the task's defaults (omitting --params gives those): one line, exit 2, nothing written."""
    from numerics.experiments.__main__ import main

    out = tmp_path / "out"
    output = [] if command[0] == "boundary" else ["--output", str(out)]
    assert main([*command, "--task", "paper", "--params", blank, *output]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and f"--params must be name=value pairs" in err
    assert f"got {blank!r}" in err and not out.exists()


_COMMANDS = [["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "0.5"],
             ["predict", "--parameterizations", "CACO", "--ratios", "1", "--target-loss", "0.5"],
             ["fig2", "--parameterization", "CACO"], ["boundary", "--target-loss", "0.5"]]


@pytest.mark.parametrize("command, default, says", [
    *((c, "n = 1e150", "defaults.n: ") for c in _COMMANDS),
    *((c, "M = 100000", "defaults.M, parameters.R: task 'qc-M': M = 100000, R = 1 gives") for c in _COMMANDS[:3]),
    *((c, "m = 1e7", "parameters.R, defaults.m, parameters.s: task 'qc-m' cannot be sampled at M = 20, R = 1, "
                     "m = 10000000, n = 50, s = 1: its ticket table needs 10000050 tickets") for c in _COMMANDS[:3])],
    ids=lambda x: x[0] if isinstance(x, list) else None)
def test_a_default_the_task_file_sets_is_named_by_its_key(command, default, says, tmp_path, capsys):
    """As print_dynamics names it (``<file>: defaults.n: ...``); a value --params gives is not the file's."""
    from pathlib import Path

    from numerics.experiments.__main__ import main

    source = Path(__file__).parents[4] / "derivations" / "tasks" / "files" / "query-copies.toml"
    file = tmp_path / "qc.toml"
    file.write_text(source.read_text().replace('name = "query-copies"', f'name = "qc-{default[0]}"') + f"\n[defaults]\n{default}\n")
    out = tmp_path / "out"
    output = [] if command[0] == "boundary" else ["--output", str(out)]
    assert main([*command, "--task", str(file), *output]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and f"--task {file}: {says}" in err and not out.exists()
    name, value = default.split(" = ")
    assert main([*command, "--task", str(file), "--params", f"{name}={value}", *output]) == 2
    assert "defaults." not in capsys.readouterr().err


@pytest.mark.parametrize("command", _COMMANDS[:3], ids=lambda c: c[0])
@pytest.mark.parametrize("task, params, says", [
    ("shared-irrelevant", "n=1e20", "--params n: task 'shared-irrelevant': multiplicity of group 'u' = n/n_c is "
                                    "1.000E+20, more than 2**53"),
    ("paper", "n=1e7,b=2", "--params n: task 'paper' cannot be sampled at M = 20, m = 5, n = 10000000: its ticket "
                           "table needs 10000005 tickets per class (common denominator 1), more than 1000000"),
    ("shared-irrelevant", "M=4,n_c=1e15", "--params M, n_c: task 'shared-irrelevant': M = 4, n_c = 1000000000000000 "
                                          "gives"),
    ("paper", "n=-1", "n must be a finite number > 0; got -1"),
    ("paper", "n=5,q=1", "task 'paper' has no parameter 'q' (its parameters: M, b, m, n)")])
def test_a_value_params_gives_is_named_where_it_is_refused(command, task, params, says, tmp_path, capsys):
    """A value refused by the engine or the sampler names the --params it came from (the sampler's own message
    named neither --params nor the values); a reason that is the parameter's own check or about names is as it is."""
    from numerics.experiments.__main__ import main

    out = tmp_path / "out"
    assert main([*command, "--task", task, "--params", params, "--output", str(out)]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and not out.exists()
    assert err.startswith(f"experiments: error: --task {task}: {says}"), err


def _paper_file(tmp_path, name, defaults):
    """The paper task as a file, its task named ``name`` (one name, one task, in a process), with ``defaults``."""
    from pathlib import Path

    source = Path(__file__).parents[4] / "derivations" / "tasks" / "files" / "paper.toml"
    file = tmp_path / "p.toml"
    file.write_text(source.read_text().replace('name = "paper"', f'name = "{name}"') + f"\n[defaults]\n{defaults}\n")
    return file


@pytest.mark.parametrize("command", [*_COMMANDS[:3], ["boundary", "--init", "uniform", "--target-loss", "0.5"]],
                         ids=lambda c: c[0])
def test_a_fractional_total_multiplicity_names_the_values_and_their_keys(command, tmp_path, capsys):
    """``--seq-len is required`` names the counts' values and the key (or --params) that set each."""
    from numerics.experiments.__main__ import main

    file = _paper_file(tmp_path, "p-m", "m = 0.3\nn = 50")
    out = tmp_path / "out"
    output = [] if command[0] == "boundary" else ["--output", str(out)]
    for params, keys in (([], "defaults.m, defaults.n"), (["--params", "m=0.7"], "--params m, defaults.n")):
        assert main([*command, "--task", str(file), *params, *output]) == 2
        o, err = capsys.readouterr()
        value = "0.7" if params else "0.3"
        assert o == "" and err.count("\n") == 1 and not out.exists()
        assert err == (f"experiments: error: --seq-len is required for task 'p-m': its total multiplicity is not an "
                       f"integer at M = 20, m = {value}, n = 50, set by {keys}\n")


@pytest.mark.parametrize("command", _COMMANDS[::2], ids=lambda c: c[0])
def test_a_sequence_length_too_big_for_memory_names_the_keys_it_comes_from(command, tmp_path, capsys, monkeypatch):
    """Without --seq-len the memory check names the task's own length and the defaults it comes from,
    not an option never typed; with --seq-len, the option."""
    from numerics.experiments import memory
    from numerics.experiments.__main__ import main

    monkeypatch.setattr(memory, "memory_budget", lambda: 1 << 30)
    file = _paper_file(tmp_path, "p-n", "n = 3e5")
    out = tmp_path / "out"
    assert main([*command, "--task", str(file), "--output", str(out)]) == 2
    o, err = capsys.readouterr()
    assert o == "" and err.count("\n") == 1 and not out.exists() and "--seq-len 300007" not in err
    assert (f"experiments: error: {command[0]} with the sequence length 300007 of task 'p-n' (no --seq-len: its total "
            f"multiplicity + 2 at M = 20, m = 5, n = 300000, set by defaults.n), --batch-size ") in err
    assert main([*command, "--task", str(file), "--seq-len", "300007", "--output", str(out)]) == 2
    assert f"error: {command[0]} with --seq-len 300007, --batch-size" in capsys.readouterr().err


_SWEEP32 = (["sweep", "--parameterizations", "CACO", "--ratios", "1e-39,1", "--lr-ov", "1", "--seeds", "1",
             "--target-loss", "0.5"], "--ratios 1e-39 x --lr-ov must be in [1.1754943508222875e-38, ")
_FIG232 = (["fig2", "--parameterization", "CACO", "--lr-qk", "1e39"], "--lr-qk must be in [1.1754943508222875e-38, ")


@pytest.mark.parametrize("name, command, says", [("lr", *_SWEEP32), ("ov", *_SWEEP32), ("ratios", *_SWEEP32),
                                                 ("lr", *_FIG232), ("qk", *_FIG232)],
                         ids=["sweep-lr", "sweep-ov", "sweep-ratios", "fig2-lr", "fig2-qk"])
def test_a_parameter_named_like_an_options_word_is_not_named_for_its_refusal(name, command, says, tmp_path, capsys):
    """A float32 rate refused names its option alone: a task parameter named as a word of an option
    (``lr`` of --lr-ov, ``qk`` of --lr-qk) is not where the refused value comes from,
    whether the task file's [parameters] or --params sets it."""
    from pathlib import Path

    from numerics.experiments.__main__ import main

    source = Path(__file__).parents[4] / "derivations" / "tasks" / "files" / "paper.toml"
    file = tmp_path / "p.toml"
    file.write_text(source.read_text().replace('name = "paper"', f'name = "p-{name}"')
                    .replace('multiplicity = "n"', f'multiplicity = "{name}"') + f"\n[parameters]\n{name} = 20\n")
    out = tmp_path / "out"
    for params in ([], ["--params", f"{name}=20"]):
        assert main([*command, "--task", str(file), *params, "--dtype", "float32", "--output", str(out)]) == 2
        o, err = capsys.readouterr()
        assert o == "" and err.count("\n") == 1 and err.startswith(f"experiments: error: {says}"), err
        assert not out.exists()
