"""``predict --workers`` and ``--store``: the flows of each (parameterization, ratio) are one job of
:func:`numerics.experiments.runner.run_jobs`, the same bits on two workers, saved as they finish and read back,
not run again, by the same command (an edited stored file refused before any flow)."""
import json

import pytest

from numerics.experiments import predict, theory
from numerics.experiments.__main__ import main

ARGV = ["predict", "--parameterizations", "CACO,FACO", "--ratios", "1,3", "--seeds", "2", "--target-loss", "1,0.5",
        "--json", "--quiet"]


def _flows(monkeypatch) -> list:
    """The flows run in this process from now on: one ``(parameterization, ratio, seed)`` each."""
    ran, real = [], theory.flow_to_losses

    def counted(st, P, r, *args, **kwargs):
        ran.append((P, r, kwargs["seed"]))
        return real(st, P, r, *args, **kwargs)
    monkeypatch.setattr(theory, "flow_to_losses", counted)
    return ran


def _stored(store) -> dict:
    return {p.name: p.read_bytes() for p in store.glob("*.json")}


def test_two_workers_print_the_same_bits_as_one(capsys):
    assert main([*ARGV, "--workers", "1"]) == 0
    one = capsys.readouterr().out
    assert main([*ARGV, "--workers", "2"]) == 0
    assert capsys.readouterr().out == one
    records = json.loads(one)["records"]
    assert len(records) == 2 * 2 * 2 * 2 and {r["seed"] for r in records} == {1234, 1235}


def test_predict_on_two_workers_returns_the_same_records():
    args = (["CACO", "FAFO"], [1.0, 4.0], [1.0], [1234, 1240])
    assert json.dumps(predict.predict(*args, workers=2)) == json.dumps(predict.predict(*args))


def test_a_stored_flow_is_read_back_not_run_again(tmp_path, monkeypatch, capsys):
    """An interrupted predict: the jobs of ratio 1 stored; the same command with ratio 3 too runs only the
    flows of ratio 3, and prints what an uninterrupted predict prints, to the bit; its stored files are kept."""
    assert main(ARGV) == 0
    whole = capsys.readouterr().out
    store = tmp_path / "flows"
    ran = _flows(monkeypatch)
    assert main([*ARGV[:4], "1", *ARGV[5:], "--store", str(store)]) == 0
    capsys.readouterr()
    first = _stored(store)
    assert len(first) == 2 and len(ran) == 3          # CACO and FACO at ratio 1: FACO's start draws nothing
    ran.clear()
    assert main([*ARGV, "--store", str(store)]) == 0
    assert capsys.readouterr().out == whole
    assert sorted(ran) == [("CACO", 3.0, 1234), ("CACO", 3.0, 1235), ("FACO", 3.0, 1234)]
    assert len(_stored(store)) == 4 and all(_stored(store)[name] == data for name, data in first.items())
    ran.clear()
    assert main([*ARGV, "--store", str(store)]) == 0 and not ran
    assert capsys.readouterr().out == whole


def test_an_edited_stored_flow_is_refused_before_any_flow(tmp_path, monkeypatch, capsys):
    store = tmp_path / "flows"
    argv = [*ARGV, "--store", str(store)]
    assert main(argv) == 0
    capsys.readouterr()
    path = sorted(store.glob("*.json"))[0]
    record = json.loads(path.read_text())
    record["result"]["records"][0]["relevant_attention"] = 0.5
    path.write_text(json.dumps(record, indent=1, sort_keys=True))
    edited = _stored(store)
    ran = _flows(monkeypatch)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "changed after it was written" in err and path.name in err, err
    assert not ran and _stored(store) == edited


def test_a_damaged_stored_flow_is_run_again(tmp_path, monkeypatch, capsys):
    """A file cut short (a disk full as it was written by hand, say) is no result: its job runs again."""
    store = tmp_path / "flows"
    argv = [*ARGV, "--store", str(store)]
    assert main(argv) == 0
    whole = capsys.readouterr().out
    path = sorted(store.glob("*.json"))[0]
    path.write_bytes(path.read_bytes()[:100])
    ran = _flows(monkeypatch)
    assert main(argv) == 0 and len(ran) in (1, 2)
    assert capsys.readouterr().out == whole and json.loads(path.read_text())["result"]["records"]


@pytest.mark.parametrize("argv,message", [
    (["--workers", "0"], "--workers must be an integer >= 1"), (["--workers", "2.5"], "--workers must be"),
    (["--store", "FILE"], "--store must name a directory"), (["--store", "FILE/flows"], "--store '")])
def test_bad_workers_or_store_is_one_line_exit_2_before_any_flow(argv, message, tmp_path, monkeypatch, capsys):
    (tmp_path / "FILE").write_text("kept")
    argv = [str(tmp_path / a) if a.startswith("FILE") else a for a in argv]
    ran = _flows(monkeypatch)
    assert main([*ARGV, *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err and "unrecognized" not in err, err
    assert "--output" not in err, err       # (the store's place was named as another option's)
    assert not ran and (tmp_path / "FILE").read_text() == "kept" and sorted(tmp_path.iterdir()) == [tmp_path / "FILE"]


def test_a_job_that_returns_no_dict_raises_what_the_runner_says(monkeypatch):
    """A job whose result is not a dict: predict raises the runner's TypeError naming it (the cause of
    its JobError), not a TypeError about raising None."""
    monkeypatch.setattr(predict, "predict_job", lambda job: [])
    with pytest.raises(TypeError, match="the job function must return a dict, got list"):
        predict.predict(["CACO"], [1.0], [1.0])


def test_a_store_is_locked_while_predict_runs(tmp_path, monkeypatch, capsys):
    """Two predicts on one --store: the store's lock (the experiments' DirectoryLock) is held while the flows run
    and released after; a predict on a store in use is refused (one line, exit 2, no flow run, nothing changed),
    and so is a store whose .lock is a link (never followed: the file it names is untouched)."""
    from numerics.experiments.lock import DirectoryLock

    store, seen, real = tmp_path / "flows", [], theory.flow_to_losses

    def flow(*args, **kwargs):         # a second predict's lock, taken while the first runs
        try:
            DirectoryLock(store, LookupError, "a test").release()
            seen.append("free")
        except LookupError as exc:
            seen.append(str(exc))
        return real(*args, **kwargs)
    monkeypatch.setattr(theory, "flow_to_losses", flow)
    assert main([*ARGV, "--store", str(store)]) == 0
    assert seen and all("is in use by a test (its lock file .lock is held)" in s for s in seen), seen
    stored = _stored(store)
    capsys.readouterr()
    held, ran = DirectoryLock(store, LookupError, "a test"), _flows(monkeypatch)
    try:
        assert main([*ARGV, "--store", str(store)]) == 2
    finally:
        held.release()
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"--store {str(store)!r} is in use by another predict" in err, err
    assert not ran and _stored(store) == stored
    victim, linked = tmp_path / "victim", tmp_path / "linked"
    victim.write_text("kept")
    linked.mkdir()
    (linked / ".lock").symlink_to(victim)
    assert main([*ARGV, "--store", str(linked)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "has a .lock that is a link" in err, err
    assert not ran and victim.read_text() == "kept" and sorted(linked.iterdir()) == [linked / ".lock"]


@pytest.mark.parametrize("experiment", ["sweep", "fig2"])
def test_a_store_of_another_experiments_runs_is_refused(experiment, tmp_path, monkeypatch, capsys):
    """--store naming a sweep's or a reproduction's ``runs``: predict's files there were taken for that experiment's
    runs (a sweep's --resume was refused as 'another job layout'); now refused, one line, exit 2, nothing run or
    written, naming the file and its experiment."""
    from numerics.experiments.store import ResultStore

    runs = tmp_path / "runs"
    ResultStore(runs).put({"experiment": experiment, "seed": 1}, {"loss": 0.5})
    before, ran = _stored(runs), _flows(monkeypatch)
    assert main([*ARGV, "--store", str(runs)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "holds a stored run of another experiment (" in err, err
    assert f".json: {experiment}), not a predict flow" in err, err
    assert not ran and _stored(runs) == before and sorted(p.name for p in runs.iterdir()) == sorted(before)
