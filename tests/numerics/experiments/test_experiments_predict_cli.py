"""The theory's command line, ``python -m numerics.experiments predict``: bad input is one line and
exit 2 before any flow; ``--quiet`` hides the progress bar only; ``--output FILE`` is written
atomically; no floating-point warning reaches the user."""
import json
import os
import subprocess
import sys
import warnings

import pytest

from numerics.experiments import predict, theory
from numerics.experiments.__main__ import main
from numerics.experiments.task_sampling import AUTHORS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir))


def _no_flow(monkeypatch):
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))


def _uniform_initial_loss():
    """The bound the command refuses at: its own lowest initial loss, to the bit."""
    return theory.lowest_initial_loss(AUTHORS, ["CACO", "FAFO"], "uniform", [1234])[1]


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
    assert main(["predict", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "error: " in err


@pytest.mark.parametrize("task", ["paper", "query-in-context"])
def test_a_task_whose_initial_loss_is_not_a_number_is_refused_before_any_flow(task, monkeypatch, capsys):
    """b = 1e-320 (subnormal) overflows the scores: the initial loss is NaN, which every target check passed
    (a prediction of every run not reached, exit 0, or a traceback where another parameterization's loss
    was 0); refused in one line naming b and its range (the score divisor b/gamma a normal float64), as
    the sampled task is built."""
    _no_flow(monkeypatch)
    assert main(["predict", "--task", task, "--params", "b=1e-320"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"experiments: error: --task {task}: --params b: task {task!r} cannot be sampled: "
                                 "its score divisor embedding_scale/gamma must be a normal float64 in "
                                 "[2.2250738585072014e-308, 1.7976931348623157e+308], i.e. embedding_scale = b in "
                                 "[2.2250738585072014e-308, 1.7976931348623157e+308]; got b = 1e-320\n")


def test_target_not_below_a_seeds_initial_loss_is_refused(monkeypatch, capsys):
    _no_flow(monkeypatch)
    L0 = _uniform_initial_loss()
    argv = ["--init", "uniform", "--parameterizations", "CACO,FAFO", "--target-loss", repr(L0)]
    assert main(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert "--target-loss must be below the initial loss" in err and len(err.splitlines()) == 1


def test_json_records_sorted_targets_and_used_init_scale(capsys):
    argv = ["--parameterizations", "FACO", "--ratios", "2", "--target-loss", "0.5,1", "--seeds", "2",
            "--init", "identity", "--json"]
    assert main(["predict", *argv]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["target_losses"] == [1.0, 0.5] and out["settings"]["seeds"] == [1234, 1235]
    recs = out["records"]
    assert [(r["seed"], r["target_loss"]) for r in recs] == [(1234, 1.0), (1234, 0.5), (1235, 1.0),
                                                            (1235, 0.5)]
    assert all(list(r) == list(predict.RECORD_FIELDS) and r["reached"] for r in recs)
    one = ["--parameterizations", "FACO", "--ratios", "1", "--target-loss", "0.1", "--init", "identity",
           "--json"]
    assert main(["predict", *one]) == 0
    small = json.loads(capsys.readouterr().out)["records"][0]
    assert main(["predict", *one, "--init-scale", "1e-3"]) == 0
    large = json.loads(capsys.readouterr().out)["records"][0]
    assert large["relevant_attention"] > small["relevant_attention"] + 0.05   # the scale is used


def test_table_output(capsys, monkeypatch):
    """The table (two head lines, one line per record, the time taken); ``--quiet`` hides the
    progress bar of the jobs only."""
    from derivations.core.output import progress_bar
    from numerics.experiments import runner

    shown = []
    monkeypatch.setattr(runner, "progress_bar", lambda *a, show, **k: shown.append(show) or progress_bar(
        *a, show=False, **k))
    argv = ["predict", "--parameterizations", "CACO", "--ratios", "1", "--target-loss", "1"]
    for quiet in ([], ["--quiet"]):
        assert main(argv + quiet) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 4 and lines[2].startswith("CACO") and "1234" in lines[2], lines
    assert shown == [True, False]


def test_output_file_is_the_json_written_atomically(tmp_path, capsys):
    out = tmp_path / "predict.json"
    argv = ["predict", "--parameterizations", "CACO", "--ratios", "1", "--target-loss", "1", "--json"]
    assert main(argv + ["--output", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(out.read_text()) == json.loads(printed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["predict.json"]      # no temporary file left


def test_an_output_file_of_another_result_is_refused_not_replaced(tmp_path, monkeypatch, capsys):
    """A file that is not the predict result of these settings (another result, any other file) is kept;
    the same settings may write it again."""
    out = tmp_path / "predict.json"
    argv = ["predict", "--parameterizations", "CACO", "--target-loss", "1", "--quiet", "--output", str(out)]
    assert main([*argv, "--ratios", "1"]) == 0
    first = out.read_bytes()
    assert main([*argv, "--ratios", "1"]) == 0 and out.read_bytes() == first
    capsys.readouterr()
    _no_flow(monkeypatch)
    for ratios in ("2", "1"):
        if ratios == "1":
            out.write_text("my notes")
        kept = out.read_bytes()
        assert main([*argv, "--ratios", ratios]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1 and "would replace" in captured.err
        assert out.read_bytes() == kept


def test_an_output_file_written_by_another_while_the_flows_run_is_not_replaced(tmp_path, monkeypatch, capsys):
    """The file checked before the flows is checked again before it is written: another result written there
    meanwhile (a second predict of other settings, the user) is kept, and the line says so (exit 1)."""
    from numerics.experiments import predict

    out = tmp_path / "predict.json"
    real = predict.predict

    def meanwhile(*args, **kwargs):
        out.write_text("another result")
        return real(*args, **kwargs)
    monkeypatch.setattr(predict, "predict", meanwhile)
    argv = ["predict", "--parameterizations", "CACO", "--ratios", "1", "--target-loss", "1", "--quiet",
            "--output", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "now holds something else" in err and str(out) in err, err
    assert out.read_text() == "another result"


@pytest.mark.parametrize("where", ["missing/predict.json", ".", ""])
def test_an_output_that_cannot_be_written_is_refused_before_any_flow(where, tmp_path, monkeypatch, capsys):
    _no_flow(monkeypatch)
    target = str(tmp_path / where) if where else ""
    assert main(["predict", "--ratios", "1", "--output", target]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--output" in err
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("place", ["read-only directory", "full disk", "name too long for the temporary file",
                                   "/proc"])
def test_an_output_in_a_place_that_takes_no_file_is_refused_before_any_flow(place, tmp_path, monkeypatch, capsys):
    """--output's directory is probed with a real write (as long as the atomic write's temporary name) before
    the flows: a read-only directory (as root, who may write there anyway, a refused write), a full disk, a
    name whose temporary file's would be too long, /proc: one line, exit 2, nothing written; not exit 1 after
    all the flows ran."""
    from derivations.core import output

    _no_flow(monkeypatch)
    directory, name = tmp_path / "d", "predict.json"
    directory.mkdir()
    if place == "read-only directory":
        directory.chmod(0o500)
        real_open = os.open

        def refused(path, *args, **kwargs):
            if os.path.dirname(path) == str(directory):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr(output.os, "open", refused)
    elif place == "full disk":
        def full(fd, data):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(output.os, "write", full)
    elif place == "/proc":
        if not os.path.isdir("/proc/self"):
            pytest.skip("no /proc")
        directory = "/proc"
    else:
        name = "y" * (os.pathconf(directory, "PC_NAME_MAX") - 10) + ".json"
    target = os.path.join(directory, name)
    try:
        assert main(["predict", "--ratios", "1", "--output", target]) == 2
    finally:
        if place == "read-only directory":
            (tmp_path / "d").chmod(0o700)
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "cannot take files" in err and "--output" in err, err
    assert not os.listdir(tmp_path / "d")


@pytest.mark.parametrize("kind", ["fifo", "link", "dangling link", "link loop"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_kept(kind, tmp_path, monkeypatch, capsys):
    """A FIFO (as a device such as /dev/full) or a link at --output is refused, not replaced by the
    atomic write's rename."""
    _no_flow(monkeypatch)
    target = tmp_path / "predict.json"
    {"fifo": lambda: os.mkfifo(target), "link": lambda: target.symlink_to(__file__),
     "dangling link": lambda: target.symlink_to(tmp_path / "nowhere"),
     "link loop": lambda: target.symlink_to(target)}[kind]()
    before = os.lstat(target)
    assert main(["predict", "--ratios", "1", "--output", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "--output" in err
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["predict.json"]


def test_a_flow_that_overflows_is_not_reached_without_warnings(capsys):
    """``b = 1e-300``: the flow overflows at once; its target is reported not reached, and no
    NumPy/SciPy RuntimeWarning is shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["predict", "--task", "paper", "--params", "M=2,m=1,n=1,b=1e-300", "--parameterizations",
                     "CACO", "--ratios", "1", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "not reached" in captured.out and "Warning" not in captured.err
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_is_one_line_exit_1():
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "numerics.experiments", "predict", "--parameterizations",
                            "CACO", "--ratios", "1", "--target-loss", "1", "--json"], cwd=ROOT,
                           stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "cannot write" in r.stderr


def test_records_give_master_lambda_beside_the_shares(capsys):
    """Lambda = r (M - 1) l(L)^2 / (M b) of the authors' task (M = 4 classes, b = 1) at the ratio and
    the target, written out here; None at a target not below log 4 (a uniform start's loss is ~3.9)."""
    import math
    argv = ["--parameterizations", "CACO", "--ratios", "2", "--target-loss", "2,0.5", "--init", "uniform",
            "--json"]
    assert main(["predict", *argv]) == 0
    high, low = json.loads(capsys.readouterr().out)["records"]
    assert high["target_loss"] == 2.0 and high["master_lambda"] is None
    assert low["master_lambda"] == pytest.approx(2 * 3 * math.log(3 / math.expm1(0.5)) ** 2 / 4, rel=1e-13, abs=0)
    keys = list(predict.RECORD_FIELDS)
    assert keys[keys.index("other_attention") + 1] == "master_lambda"


def test_the_table_names_a_task_file_and_its_values_and_records_a_scale_only_where_it_acts(capsys):
    """The header names a task file's task (name, file, ``M=4, b=2, n=10``), not its canonical text; the
    engine's column is ``-`` where it has no state (FACO); ``--init uniform`` records no identity scale."""
    task = os.path.join(ROOT, "docs", "examples", "query-copies-file.toml")
    assert main(["predict", "--task", task, "--params", "M=4,b=2,n=10", "--parameterizations", "CACO,FACO",
                 "--ratios", "1", "--quiet"]) == 0
    head, _, caco, faco = capsys.readouterr().out.splitlines()[:4]
    assert head.startswith(f"expected-count flow of task query-copies-file ({task}), M=4, b=2, n=10 (init")
    assert caco.endswith("(reduced flow)") and faco.endswith(" -")
    assert main(["predict", "--parameterizations", "FACO", "--init", "uniform", "--ratios", "1", "--json"]) == 0
    assert "init_scale" not in json.loads(capsys.readouterr().out)["settings"]


def test_an_output_file_is_read_up_to_the_size_of_a_result_of_these_settings(tmp_path, monkeypatch, capsys):
    """An existing --output is read up to what a result of these settings can take (one record per
    parameterization, ratio, seed and target): the result written, every number as long as a float is
    written, is within it; a larger file is refused unread in one line naming it and the limit."""
    import json
    import re

    from numerics.experiments.commands import predict as command

    out = tmp_path / "predict.json"
    argv = ["predict", "--parameterizations", "FACO", "--ratios", "1", "--target-loss", "1,2", "--seeds", "2",
            "--quiet", "--output", str(out)]          # (FACO's start draws nothing: one flow for both seeds)
    assert main(argv) == 0
    text = out.read_text()
    limit = command._output_bytes(json.loads(text)["settings"])
    longest = re.sub(r"-?\d+\.\d+(e-?\d+)?", "-2.2250738585072014e-308", text)
    assert len(longest) + 3000 * len(json.loads(text)["records"]) <= limit      # room for engine messages
    _no_flow(monkeypatch)
    with open(out, "r+b") as f:
        f.truncate(limit + 1)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"is larger ({limit + 1} bytes)" in err and f"({limit} bytes)" in err, err
    assert out.stat().st_size == limit + 1


def test_why_a_flow_did_not_reach_a_target_is_told():
    """A flow stopped at max_nfev before its targets, or whose solver fails at once (b = 1e-300): the records say
    why in their last field, stopped_by, and the table 'budget exhausted', 'solver failed' (both were 'not
    reached' alike);
    a flow that levels off above the target (the one reason a flow of unbounded time stops otherwise) has none."""
    from numerics.experiments.commands.predict import format_table
    from numerics.experiments.predict import RECORD_FIELDS, check_settings, predict
    from numerics.experiments.theory import _unreached

    spent = predict(["CACO"], [1.0], [0.5, 0.2], seeds=1, max_nfev=50)
    assert [(r["reached"], list(r)[-1], r["stopped_by"]) for r in spent] == [(False, "stopped_by", "budget")] * 2
    assert list(spent[0])[:-1] == list(RECORD_FIELDS)
    params = {"M": 2, "m": 1, "n": 1, "b": 1e-300}
    over = predict(["CACO"], [1.0], [0.5], seeds=1, task="paper", task_params=params)
    assert not over[0]["reached"] and list(over[0])[-2:] == ["closed_form_reason", "stopped_by"]
    assert over[0]["stopped_by"] == "solver" and "stopped_by" not in _unreached(0.5, "horizon")
    for records, says in ((spent, "not reached: budget exhausted"), (over, "not reached: the solver failed")):
        settings = check_settings(["CACO"], [1.0], [r["target_loss"] for r in records], 1,
                                  **({} if records is spent else {"task": "paper", "task_params": params}))
        rows = format_table({"settings": settings, "records": records}).splitlines()[2:]
        assert all(says in row for row in rows[:len(records)]), rows
