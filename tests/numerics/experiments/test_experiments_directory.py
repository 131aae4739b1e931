"""numerics.experiments.directory: the one output-directory object of sweep, reproduce, fig2 and fig3.

A damaged, foreign or locked directory is refused in one line (exit 2) before any work, with nothing
in it changed; links are never followed; stored runs are never removed or replaced; leftovers of
killed writes are removed when the work starts again."""
import json
import os
import shutil
from pathlib import Path

import pytest

from numerics.experiments import directory as directory_mod
from numerics.experiments.__main__ import main
from numerics.experiments.directory import ExperimentDirectory

from _figures import skip_figures

TINY_SWEEP = ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "3.5",
              "--max-steps", "40", "--steps-per-epoch", "20", "--eval-batches", "1", "--workers", "1", "--quiet",
              "--no-theory"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny sweep (the same for every test: copy it before changing it)."""
    out = tmp_path_factory.mktemp("finished") / "s"
    with pytest.MonkeyPatch.context() as mp:
        skip_figures(mp)
        assert main([*TINY_SWEEP, "--output", str(out)]) == 0
    return out


def snapshot(root) -> dict:
    """Every entry under ``root`` (links not followed): its kind and bytes or link target."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


def copy(finished, tmp_path) -> Path:
    out = tmp_path / "s"
    shutil.copytree(finished, out, symlinks=True)
    return out


def refused(argv, out, capsys, *fragments):
    """``main(argv)`` exits 2 with one line naming ``fragments``, changing nothing in ``out``."""
    before = snapshot(out)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    assert snapshot(out) == before
    return err


def _settings(out, sealed=True, **changes):
    """Change the stored settings; ``sealed``: with the digest of the changed settings (as if written so)."""
    from numerics.experiments.store import digest
    path = out / directory_mod.SETTINGS_FILE
    data = {**json.loads(path.read_text()), **changes}
    if sealed:
        data["digest"] = digest({k: v for k, v in data.items() if k not in ("format", "digest")})
    path.write_text(json.dumps(data))


def test_a_lock_link_is_never_followed(finished, tmp_path, capsys):
    """Issue 25.1: ``.lock`` a link to a precious file: refused, the file untouched (fresh and --resume)."""
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate")
    out = copy(finished, tmp_path)
    (out / ".lock").unlink()
    (out / ".lock").symlink_to(victim)
    refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys, ".lock", "link")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".lock").symlink_to(victim)
    refused([*TINY_SWEEP, "--output", str(fresh)], fresh, capsys, ".lock", "link")
    refused(["reproduce", "--quick", "--output", str(fresh)], fresh, capsys, ".lock")
    assert victim.read_text() == "do not truncate"


DAMAGE = {
    "lock a directory": (lambda out: ((out / ".lock").unlink(), (out / ".lock").mkdir()), "a directory"),
    "lock a dangling link": (lambda out: ((out / ".lock").unlink(), (out / ".lock").symlink_to(out / "nowhere")),
                             "a dangling link"),
    "runs a file": (lambda out: (shutil.rmtree(out / "runs"), (out / "runs").write_text("x")), "runs"),
    "ratios a number": (lambda out: _settings(out, ratios=5), '"ratios" must be a non-empty list'),
    "parameterizations null": (lambda out: _settings(out, parameterizations=None), '"parameterizations" must'),
    "seed_blocks nested": (lambda out: _settings(out, seed_blocks=[[2]]), '"seed_blocks" must be a list of whole'),
    "seed_blocks huge": (lambda out: _settings(out, seed_blocks=[10 ** 300]), '"seed_blocks" must'),
    "seed_blocks text": (lambda out: _settings(out, seed_blocks=["x"]), '"seed_blocks" must'),
    "seeds huge": (lambda out: _settings(out, seeds=10 ** 300, seed_blocks=[10 ** 300]), "--seeds 1e+300"),
    "seeds text": (lambda out: _settings(out, seeds="1"), '"seeds" must be a whole number'),
    "settings a directory": (lambda out: ((out / "sweep-settings.json").unlink(),
                                          (out / "sweep-settings.json").mkdir()), "sweep-settings.json"),
    "settings of another layout": (lambda out: _settings(out, format="qkov.experiments.sweep.settings/0"),
                                   "another layout"),
    "task text not JSON": (lambda out: _settings(out, task="{bad"), '"task" must be a task name or the stored text'),
    "task parameter twice": (lambda out: _settings(out, task_params=[["M", 4], ["M", 5]]),
                             '"task_params" must be a list of ["name", number] pairs, each name once'),
    "task parameter not finite": (lambda out: _settings(out, task_params=[["M", float("nan")]]),
                                  '"task_params" must be'),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_sweep_directory_is_one_line_and_nothing_changes(damage, finished, tmp_path, capsys,
                                                                   monkeypatch):
    """Issue 25.10 and 25.13: one line in the file's terms (no 300-digit number, no int() message)."""
    from numerics.experiments import sgd
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    out = copy(finished, tmp_path)
    make, fragment = DAMAGE[damage]
    make(out)
    for extra in (["--resume"], ["--resume", "--extend"]):
        err = refused([*TINY_SWEEP, "--output", str(out), *extra], out, capsys, fragment)
        assert len(err) < 400 and "000000000000000000000000000000000000000000" not in err
        assert "invalid literal" not in err


def test_stored_runs_without_readable_settings_are_kept(finished, tmp_path, capsys):
    """Issue 25.2: settings truncated, sweep.json deleted: --resume with other ratios is refused, and no
    stored result is removed; the message does not blame an older qkov. The same without settings."""
    out = copy(finished, tmp_path)
    (out / "sweep-settings.json").write_text("")
    (out / "sweep.json").unlink()
    err = refused([*TINY_SWEEP[:4], "7", *TINY_SWEEP[5:], "--output", str(out), "--resume"], out, capsys,
                  "sweep-settings.json", "cannot be read", "kept")
    assert "older" not in err
    (out / "sweep-settings.json").unlink()
    refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys, "no sweep-settings.json",
            "earlier layout")


def test_leftover_temporary_files_are_removed_by_resume(finished, tmp_path, capsys, no_figures):
    """Issue 25.16: temporary files of killed writes go when the sweep is resumed; the results stay, and so
    do a user's own hidden ``.tmp`` files in the directory (not temporary files of the experiments' writes)."""
    out = copy(finished, tmp_path)
    results = (out / "results.csv").read_bytes()
    for name in (".sweep.png.k1ll3d.tmp", ".results.csv.abc.tmp", ".sweep-settings.json.x.tmp"):
        (out / name).write_text("half")
    users = (".draft.tmp", ".backup.20240101.tmp", ".notes.txt.abcdefgh.tmp")
    for name in users:
        (out / name).write_text("the user's")
    assert main([*TINY_SWEEP, "--output", str(out), "--resume"]) == 0
    assert sorted(p.name for p in out.glob(".*.tmp")) == sorted(users)
    assert (out / "results.csv").read_bytes() == results


def test_leftover_temporary_files_are_removed_by_a_rerun_of_reproduce(tmp_path, monkeypatch, capsys):
    from numerics.experiments import reproduce
    out = tmp_path / "r"
    (out / "runs").mkdir(parents=True)
    (out / ".fig2_heatmaps.pdf.k1ll3d.tmp").write_text("half")
    seen = []
    monkeypatch.setattr(reproduce, "reproduce", lambda d, **k: seen.append(sorted(d.path.glob(".*.tmp")))
                        or {"runs": {}})
    assert main(["reproduce", "--quick", "--output", str(out), "--quiet"]) == 0
    assert seen == [[]] and (out / "runs").is_dir()


#: One seed's stored Figure-2 run (the fields a report reads), for reports written without training.
FIG2_RUN = {"seed": 1234, "steps": 10, "stopped_epoch": None, "loss_log": [3.9], "heatmap": [[4.0] * 5] * 5,
            "final_loss": 3.9, "accuracy": 0.25, "relevant_attention": 0.1, "label_probability": 0.2,
            "separability_n": 1, "separability_sum": 0.5, "separability_sumsq": 0.25, "self_attention": 0.5,
            "other_attention": 0.4, "status": "completed"}


def _reproduction(out, quick=True, dtype="float64"):
    """A reproduction's report of one finished Figure-2 run (``_write_report``, no training)."""
    from numerics.experiments import reproduce
    name, job = next((n, j) for n, j in reproduce.published_jobs(quick=quick, dtype=dtype)
                     if j["experiment"] == "fig2")
    (out / "runs").mkdir(parents=True)
    reproduce._write_report(out, [(name, job)], [{"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]}], None, quick)


@pytest.mark.slow
def test_a_collect_beside_a_reproduction_keeps_its_files_and_the_final_report(tmp_path, monkeypatch):
    """reproduce --collect holds no lock file (it runs while a reproduction works): a reproduction that
    starts while the collect writes its figures removes none of the collect's temporary files as a killed
    write's, and its final report is not replaced by the collect's of one run."""
    import threading

    from derivations.core.atomic_file import atomic_write
    from numerics.experiments import reproduce, runner
    from numerics.experiments.store import ResultStore

    fig3 = {"alpha": [0.5], "final_loss": [1.0], "loss": [[1.0]], "incentive": [[0.1]]}
    monkeypatch.setattr(runner, "run_jobs", lambda func, jobs, **options: [
        fig3 if job["experiment"] == "fig3" else {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]}
        for job in jobs])
    out = tmp_path / "r"
    _, job = next((n, j) for n, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    ResultStore(out / "runs").put(json.loads(json.dumps(job)), {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]})
    done, failed = threading.Event(), []

    def reproduction():
        try:
            with ExperimentDirectory(out, "reproduction", run_bytes=reproduce.run_bytes) as held:
                reproduce.reproduce(held, quick=True, workers=1, progress=False)
        except Exception as exc:          # pragma: no cover - reported below
            failed.append(exc)
        done.set()
    thread = threading.Thread(target=reproduction)

    def figures(report, output):
        if thread.ident is None:          # the collect's figures: the reproduction starts and ends meanwhile
            def write(fh):
                fh.write(b"figure")
                thread.start()
                done.wait(timeout=3)      # (it waits for the collect's write lock)
            atomic_write(output / "fig2_heatmaps.png", write, binary=True)
        return []
    monkeypatch.setattr(reproduce, "make_figures", figures)
    reading = ExperimentDirectory(out, "reproduction", lock=False, run_bytes=reproduce.run_bytes)
    collected = reproduce.collect(reading, quick=True)
    thread.join(60)
    assert not failed and len(collected["runs"]) == 1 and (out / "fig2_heatmaps.png").read_bytes() == b"figure"
    final = json.loads((out / "report.json").read_text())
    assert final["missing"] == [] and final["wall_seconds"] is not None


@pytest.mark.parametrize("report, results, kept", [
    ({"missing": [], "wall_seconds": 5.5}, [{}, {}], 5.5),
    ({"missing": [], "wall_seconds": 0.0}, [{}], 0.0),
    ({"missing": [], "wall_seconds": 5.5}, [{}, None], None),          # a run lost since
    ({"missing": ["CACO"], "wall_seconds": 5.5}, [{}, {}], None),      # the timed reproduction was partial
    ({"wall_seconds": 5.5}, [{}], None),
    ({"missing": [], "wall_seconds": "5.5"}, [{}], None),              # edited values are not believed
    ({"missing": [], "wall_seconds": True}, [{}], None),
    ({"missing": [], "wall_seconds": 5}, [{}], None),
    ({"missing": [], "wall_seconds": -1.0}, [{}], None),
    ({"missing": [], "wall_seconds": float("nan")}, [{}], None),
    ({"missing": [], "wall_seconds": float("inf")}, [{}], None),
    (None, [{}], None), ([], [{}], None), ("{not json", [{}], None), ("absent", [{}], None), ("link", [{}], None)])
def test_collect_keeps_the_wall_time_only_of_a_finished_reproduction_of_these_runs(tmp_path, report, results, kept):
    from numerics.experiments import reproduce
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"missing": [], "wall_seconds": 5.5}))
    if report == "link":          # a link is not followed, even to a good report
        (tmp_path / "report.json").symlink_to(good)
    elif report != "absent":
        (tmp_path / "report.json").write_text(report if isinstance(report, str) else json.dumps(report))
    assert reproduce._timed(ExperimentDirectory(tmp_path, "reproduction", lock=False), results) == kept


def test_a_reproduction_of_other_settings_is_refused_not_replaced(tmp_path, monkeypatch, capsys):
    """A report of another --dtype or --quick is not replaced (by a run or by --collect); the same
    settings run again, an unfinished reproduction (runs, no report) is continued, and a damaged
    report.json is refused in one line."""
    from numerics.experiments import reproduce
    monkeypatch.setattr(reproduce, "make_figures", lambda report, output: [])
    out = tmp_path / "r"
    _reproduction(out)
    refused(["reproduce", "--quick", "--dtype", "float32", "--output", str(out)], out, capsys,
            "holds a reproduction run of other settings (--dtype float64, not --dtype float32)")
    refused(["reproduce", "--output", str(out)], out, capsys, "(--quick, not without --quick)")
    refused(["reproduce", "--quick", "--collect", "--dtype", "float32", "--output", str(out)], out, capsys,
            "--dtype float64")
    seen = []
    monkeypatch.setattr(reproduce, "reproduce", lambda d, **k: seen.append(k["dtype"]) or {"runs": {}})
    assert main(["reproduce", "--quick", "--output", str(out), "--quiet"]) == 0
    unfinished = tmp_path / "u"
    (unfinished / "runs").mkdir(parents=True)
    assert main(["reproduce", "--dtype", "float32", "--output", str(unfinished), "--quiet"]) == 0
    assert seen == ["float64", "float32"]
    (out / "report.json").write_text('{"quick": true}')
    refused(["reproduce", "--quick", "--output", str(out)], out, capsys, "damaged report.json")


def test_a_directory_of_another_kind_is_refused(finished, tmp_path, capsys):
    out = copy(finished, tmp_path)
    refused(["reproduce", "--quick", "--output", str(out)], out, capsys, "holds a sweep")
    refused(["fig2", "--epochs", "1", "--steps-per-epoch", "1", "--output", str(out)], out, capsys,
            "holds a sweep")
    assert ExperimentDirectory(out, "sweep").held_kind() == "sweep"


FIG2 = ["fig2", "--epochs", "1", "--steps-per-epoch", "5", "--eval-batches", "1", "--workers", "1", "--quiet"]


def test_fig2_refuses_to_replace_a_run_of_other_settings(tmp_path, capsys, no_figures):
    """Issue 25.4: the second fig2 with other settings is refused (as sweep does); the same settings
    may write again; the directory is locked while fig2 writes."""
    out = tmp_path / "f"
    assert main([*FIG2, "--output", str(out)]) == 0
    first = (out / "fig2.json").read_bytes()
    refused([*FIG2, "--lr-qk", "0.02", "--output", str(out)], out, capsys, "other settings", "--lr-qk 0.01",
            "not --lr-qk 0.02")
    refused([*FIG2, "--parameterization", "FAFO", "--output", str(out)], out, capsys, "--parameterization CACO")
    refused([*FIG2, "--dtype", "float32", "--output", str(out)], out, capsys,
            "--dtype float64, not --dtype float32")          # float64, not recorded, is named as the default
    assert main([*FIG2, "--output", str(out)]) == 0
    assert (out / "fig2.json").read_bytes() == first
    with ExperimentDirectory(out, "fig2"):
        refused([*FIG2, "--output", str(out)], out, capsys, "in use")


FIG3 = ["fig3", "--epochs", "1", "--steps-per-epoch", "5", "--eval-batches", "1", "--alphas", "0.5", "--workers", "1",
        "--quiet"]


def test_fig3_refuses_to_replace_a_run_of_other_settings_or_kind(finished, tmp_path, capsys, no_figures):
    """fig3 --output is an experiment directory as fig2's: another fig3 run's settings, another kind of
    experiment and a directory in use are refused, nothing changed; the same settings may write again."""
    out = tmp_path / "f3"
    assert main([*FIG3, "--output", str(out)]) == 0
    first = (out / "fig3.json").read_bytes()
    refused([*FIG3, "--lr", "0.05", "--output", str(out)], out, capsys, "other settings", "--lr 0.01",
            "not --lr 0.05")
    refused([*TINY_SWEEP, "--output", str(out)], out, capsys, "holds a fig3 run")
    refused([*FIG2, "--output", str(out)], out, capsys, "holds a fig3 run")
    assert main([*FIG3, "--output", str(out)]) == 0
    assert (out / "fig3.json").read_bytes() == first
    with ExperimentDirectory(out, "fig3"):
        refused([*FIG3, "--output", str(out)], out, capsys, "in use")
    sweep = copy(finished, tmp_path)
    refused([*FIG3, "--output", str(sweep)], sweep, capsys, "holds a sweep")


@pytest.mark.parametrize("argv, figure, settings", [(FIG2, "fig2_CACO.png", "fig2.json"),
                                                    (FIG3, "fig3_collapsed.pdf", "fig3.json"),
                                                    (TINY_SWEEP, "sweep.png", "sweep-settings.json")])
def test_figures_without_their_settings_file_are_not_replaced(argv, figure, settings, tmp_path, capsys):
    """A directory whose settings file is lost but whose figures remain holds results of unknown settings:
    refused, the figures kept."""
    out = tmp_path / "o"
    out.mkdir()
    (out / figure).write_bytes(b"a figure of unknown settings")
    refused([*argv, "--output", str(out)], out, capsys, f"({figure}) but no {settings}")


def test_the_figures_of_every_output_circuit_mark_a_fig3_directory():
    from numerics.experiments.fixed_attention import OUTPUT_CIRCUITS

    assert {f"fig3_{c}.png" for c in OUTPUT_CIRCUITS} <= set(directory_mod.KINDS["fig3"])


def test_resuming_a_task_sweep_with_its_default_parameter_written_out(tmp_path, capsys, no_figures):
    """Issue 25.12: --params m=5 (the paper task's default) is the same setting as leaving m out; a real
    difference names the real option, --params, in its command-line form."""
    base = ["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "1.2",
            "--max-steps", "1", "--workers", "1", "--quiet", "--no-theory", "--task", "paper", "--seq-len", "57"]
    out = tmp_path / "t"
    assert main([*base, "--params", "M=4", "--output", str(out)]) == 0
    results = (out / "results.csv").read_bytes()
    assert main([*base, "--params", "M=4,m=5", "--output", str(out), "--resume"]) == 0
    assert (out / "results.csv").read_bytes() == results
    err = refused([*base, "--params", "M=4,m=3", "--output", str(out), "--resume"], out, capsys,
                  "--params M=4, not M=4,m=3")
    assert "[" not in err and "--task-params" not in err


@pytest.mark.parametrize("text", ["{bad", "{}", '{"defaults": {}, "parameters": [[1]]}'])
def test_a_task_file_sweep_whose_stored_task_text_is_damaged_is_refused(text, tmp_path, capsys, no_figures):
    """The stored text of a task file's task, damaged, is a damaged settings file (one line), not a
    traceback of reading it back."""
    example = Path(__file__).resolve().parents[3] / "docs" / "examples" / "query-copies-file.toml"
    argv = ["sweep", "--task", str(example), "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1",
            "--target-loss", "1", "--max-steps", "1", "--workers", "1", "--quiet", "--no-theory"]
    out = tmp_path / "t"
    assert main([*argv, "--output", str(out)]) == 0
    _settings(out, task=text)
    refused([*argv, "--output", str(out), "--resume"], out, capsys, "damaged sweep-settings.json",
            '"task" must be a task name or the stored text of a task')


def test_a_lock_hard_linked_to_another_file_is_refused_and_the_file_kept(tmp_path):
    """A ``.lock`` that is a hard link (a second name of another file) is not followed by ``O_NOFOLLOW``: taking it
    wrote this process's id over the other file. Refused, the file untouched."""
    victim = tmp_path / "precious.txt"
    victim.write_text("do not truncate")
    out = tmp_path / "out"
    out.mkdir()
    os.link(victim, out / ".lock")
    for kind in ("sweep", "reproduction"):
        with pytest.raises(directory_mod.DirectoryRefused, match=r"\.lock that is not a regular file of one name"):
            ExperimentDirectory(out, kind).begin()
    assert victim.read_text() == "do not truncate" and (out / ".lock").exists()


def test_the_lock_is_created_without_following_and_released(tmp_path):
    with ExperimentDirectory(tmp_path, "sweep") as held:
        with pytest.raises(directory_mod.DirectoryRefused, match="in use"):
            ExperimentDirectory(tmp_path, "sweep")
        held.begin()
        assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"
    ExperimentDirectory(tmp_path, "reproduction").close()           # released


def test_report_json_is_the_same_for_runs_read_back_from_the_store(tmp_path, monkeypatch):
    """Issue 25.17: a run computed now and the same run read back from the store (whose files keep
    their keys sorted) give the same report.json bytes."""
    from numerics.experiments import reproduce
    from numerics.experiments.store import ResultStore
    monkeypatch.setattr(reproduce, "make_figures", lambda report, output: [])
    name, job = next((n, j) for n, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    fresh = {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]}
    store = ResultStore(tmp_path / "runs")
    store.put(job, fresh)
    read_back = store.get(job)
    assert list(read_back["runs"][0]) != list(fresh["runs"][0])            # the store sorts the keys
    texts = []
    for result in (fresh, read_back):
        reproduce._write_report(tmp_path, [(name, job)], [result], None, True)
        texts.append((tmp_path / "report.json").read_bytes())
    assert texts[0] == texts[1]


@pytest.mark.parametrize("option, value", [("--target-loss", "3.5,,"), ("--ratios", "1,,4"),
                                           ("--params", "m=5,,n=3")])
def test_a_list_with_an_empty_item_is_refused_before_any_work(option, value, tmp_path, capsys):
    """Issue 25.18."""
    argv = [*TINY_SWEEP, "--output", str(tmp_path / "out")]
    if option == "--params":
        argv += ["--task", "paper", option, value]
    else:
        argv[argv.index(option) + 1] = value
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty item" in err and option in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("edit, named", [({"lr_ov": 0.02}, "a stored run has --lr-ov 0.01, the settings --lr-ov 0.02"),
                                         ({"ratios": [3.0]}, "a stored run has --ratios 1, the settings --ratios 3"),
                                         ({"parameterizations": ["FAFO"]}, "--parameterizations CACO")])
def test_stored_runs_of_other_settings_than_the_settings_file_are_refused(edit, named, finished, tmp_path, capsys,
                                                                          monkeypatch):
    """sweep-settings.json edited: the stored runs are not runs of its settings, and neither --resume nor
    --resume --extend (given the edited settings) replaces them."""
    from numerics.experiments import sgd
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    out = copy(finished, tmp_path)
    _settings(out, **edit)
    argv = [*TINY_SWEEP, "--output", str(out), "--resume"]
    for option, value in edit.items():
        flag = "--" + option.replace("_", "-")
        value = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    for extra in ([], ["--extend"]):
        refused([*argv, *extra], out, capsys, "not runs of the settings in sweep-settings.json", named)
    argv[argv.index("--ratios") + 1] += ",7"
    refused([*argv, "--extend"], out, capsys, "not runs of the settings in sweep-settings.json", named)


@pytest.mark.parametrize("edit, option, value", [
    ({"parameterizations": ["CACO", "FAFO"]}, "--parameterizations", "CACO,FAFO"),    # a sweep widened ...
    ({"seeds": 2, "seed_blocks": [2]}, "--seeds", "2")])                              # ... without --extend
def test_a_settings_file_changed_after_it_was_written_is_refused(edit, option, value, finished, tmp_path, capsys,
                                                                 monkeypatch, no_figures):
    """sweep-settings.json edited by hand (its digest not rewritten), even into settings that its stored runs
    agree with: --resume (--extend or not) is refused in one line before any work, nothing changed. The
    digest is of the settings, not of the file's text: the same settings written otherwise are continued."""
    from numerics.experiments import sgd
    out = copy(finished, tmp_path)
    argv = [*TINY_SWEEP, "--output", str(out), "--resume"]
    path = out / directory_mod.SETTINGS_FILE
    path.write_text(json.dumps(dict(reversed(json.loads(path.read_text()).items())), indent=3))
    assert main(argv) == 0
    _settings(out, sealed=False, **edit)
    argv[argv.index(option) + 1] = value
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    for extra in ([], ["--extend"]):
        refused([*argv, *extra], out, capsys, "damaged sweep-settings.json", "not those it was written with")


def test_a_stored_run_changed_after_it_was_written_is_refused(finished, tmp_path, capsys, monkeypatch):
    """A stored run's file edited (its digest not rewritten): a sweep's --resume, a reproduction and its
    --collect are refused in one line naming the file, before any work; nothing is replaced."""
    from numerics.experiments import reproduce, sgd
    from numerics.experiments.store import ResultStore
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    out = copy(finished, tmp_path)
    [path] = (out / "runs").glob("*.json")
    record = json.loads(path.read_text())
    record["result"]["rows"][0]["relevant_attention"] = 0.75
    path.write_text(json.dumps(record, indent=1, sort_keys=True))
    refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys, f"runs/{path.name} was changed after")
    repro = tmp_path / "r"
    name, job = next((n, j) for n, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    job = json.loads(json.dumps(job))
    store = ResultStore(repro / "runs")
    store.put(job, {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]})
    record = json.loads(store.path(job).read_text())
    record["result"]["runs"][0]["final_loss"] = 0.5
    store.path(job).write_text(json.dumps(record))
    for extra in (["--collect"], []):
        refused(["reproduce", "--quick", "--output", str(repro), *extra], repro, capsys,
                f"runs/{store.path(job).name} was changed after", "neither read nor replaced")
    reproduce._write_report(repro, [(name, job)], [None], None, True)          # its report.json written
    refused(["reproduce", "--quick", "--output", str(repro)], repro, capsys, f"runs/{store.path(job).name}")


def test_a_stored_run_changed_as_the_work_begins_is_one_line(finished, tmp_path, capsys, monkeypatch):
    """A run file edited after the directory was opened (its check passed), as the work begins: the
    command stops with one line naming the file (exit status 1), the file neither read nor replaced."""
    out = copy(finished, tmp_path)
    [path] = (out / "runs").glob("*.json")
    edited = path.read_text().replace('"steps": 40', '"steps": 39', 1)
    assert edited != path.read_text()
    begin = ExperimentDirectory.begin
    monkeypatch.setattr(ExperimentDirectory, "begin", lambda self: (begin(self), path.write_text(edited)))
    capsys.readouterr()
    assert main([*TINY_SWEEP, "--output", str(out), "--resume"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path.name} was changed after it was written" in err, err
    assert path.read_text() == edited


def test_an_unfinished_reproduction_is_not_reported_or_continued_with_other_settings(tmp_path, monkeypatch,
                                                                                     capsys):
    """Runs of a --quick reproduction, no report yet: --collect and a reproduction without --quick or of
    another --dtype are refused (no report.json that would block it); --quick --collect reports them."""
    from numerics.experiments import reproduce
    from numerics.experiments.store import ResultStore
    monkeypatch.setattr(reproduce, "make_figures", lambda report, output: [])
    monkeypatch.setattr(reproduce, "reproduce", lambda d, **k: pytest.fail("work started"))
    out = tmp_path / "r"
    name, job = next((n, j) for n, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    ResultStore(out / "runs").put(job, {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]})
    for argv, named in ((["--collect"], "(--quick, not without --quick)"), ([], "(--quick, not without --quick)"),
                        (["--quick", "--dtype", "float32", "--collect"], "(--dtype float64, not --dtype float32)")):
        refused(["reproduce", *argv, "--output", str(out)], out, capsys, "unfinished reproduction", named)
    assert main(["reproduce", "--quick", "--collect", "--output", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["quick"] is True and list(report["runs"]) == [name]


def test_a_runs_folder_that_cannot_take_files_is_refused_before_any_work(finished, tmp_path, capsys, monkeypatch):
    """runs/ not writable (chmod 500; as root, who may write anyway, a refused write): refused before
    the training, not after it; the folder is probed as the output directory is."""
    from derivations.core import output
    from numerics.experiments import sgd
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    out = copy(finished, tmp_path)
    for run in (out / "runs").glob("*.json"):
        run.write_text("damaged: to be computed again")
    (out / "runs").chmod(0o500)
    if os.access(out / "runs", os.W_OK):
        real_open = os.open

        def refused_in_runs(path, *args, **kwargs):
            if Path(path).parent.name == "runs":
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr(output.os, "open", refused_in_runs)
    try:
        refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys, f"{out / 'runs'}",
                "cannot take files", "Permission denied")
    finally:
        (out / "runs").chmod(0o700)


def test_a_directory_where_a_result_file_is_written_is_refused_before_any_work(finished, tmp_path, capsys,
                                                                              monkeypatch):
    """results.csv (or a figure) a directory in a sweep continued with --resume: refused in one line before
    the work (the stored runs and the directory untouched), not a failed write once the work is done."""
    from numerics.experiments import sgd
    monkeypatch.setattr(sgd, "_train", lambda *a, **k: pytest.fail("work started"))
    for name in ("results.csv", "sweep.png"):
        out = copy(finished, tmp_path / name)
        (out / name).unlink(missing_ok=True)
        (out / name / "inside").mkdir(parents=True)
        refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys,
                f"has a {name} that is a directory, where a sweep writes that file")


def test_a_failed_write_names_the_file_and_what_is_kept(monkeypatch, capsys, tmp_path):
    """An atomic write whose rename fails names the file it writes (not its temporary file), and the
    line says what is kept and how to go on."""
    import numerics.experiments.__main__ as cli

    def prepare(args):
        def work():
            raise IsADirectoryError(21, "Is a directory", str(tmp_path / ".results.csv.x1.tmp"), None,
                                    str(tmp_path / "results.csv"))
        return work, str
    monkeypatch.setitem(cli.COMMANDS, "sweep", prepare)
    assert main([*TINY_SWEEP, "--output", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"({tmp_path / 'results.csv'}): Is a directory" in err and ".tmp" not in err
    assert f"kept in {tmp_path}/runs" in err and "--resume" in err, err


def test_a_lock_file_created_or_replaced_by_another_process_meanwhile_is_in_use(tmp_path, monkeypatch):
    """.lock created by another process between the look and the open (O_EXCL: EEXIST) is in use, not a
    link; a .lock removed and created again while this run took it is taken once more, and is in use if
    it is replaced again (never two processes holding locks on two files)."""
    import fcntl

    from numerics.experiments import lock as lock_mod
    real_kind, real_flock = lock_mod.entry_kind, fcntl.flock
    (tmp_path / ".lock").write_text("")
    monkeypatch.setattr(lock_mod, "entry_kind", lambda p: None if p.name == ".lock" else real_kind(p))
    with pytest.raises(directory_mod.DirectoryRefused, match="in use .*created its lock file .lock at the same"):
        ExperimentDirectory(tmp_path, "sweep")
    monkeypatch.undo()
    replaced = []

    def flock_then_replaced(fd, operation, times):
        real_flock(fd, operation)
        if len(replaced) < times:                        # a refused run removes it, another creates it
            replaced.append(fd)
            (tmp_path / ".lock").unlink()
            (tmp_path / ".lock").write_text("")
    monkeypatch.setattr(fcntl, "flock", lambda fd, op: flock_then_replaced(fd, op, 2))
    with pytest.raises(directory_mod.DirectoryRefused, match="in use .*replaced while this run took it"):
        ExperimentDirectory(tmp_path, "sweep")
    replaced.clear()
    monkeypatch.setattr(fcntl, "flock", lambda fd, op: flock_then_replaced(fd, op, 1))
    held = ExperimentDirectory(tmp_path, "sweep")
    monkeypatch.undo()
    try:
        assert lock_mod.same_file(held._held.fd, tmp_path / ".lock")
        with pytest.raises(directory_mod.DirectoryRefused, match="is held"):
            ExperimentDirectory(tmp_path, "sweep")
    finally:
        held.close()


@pytest.mark.parametrize("text, fragment", [("null", "damaged fig2.json (without its settings)"),
                                            ('{"settings": {"seeds": [1]}}',
                                             'damaged fig2.json (its settings have no "parameterization")'),
                                            ('{"settings": {"bad": 1}}', "damaged fig2.json (its settings have")])
def test_a_damaged_fig2_json_is_named_damaged(text, fragment, tmp_path, capsys):
    """fig2.json of JSON null is damaged, not lost; settings of the wrong shape are damaged, not "other
    settings (--parameterization None)"."""
    out = tmp_path / "f"
    out.mkdir()
    (out / "fig2.json").write_text(text)
    err = refused([*FIG2, "--output", str(out)], out, capsys, fragment)
    assert "None" not in err and "lost" not in err


def test_a_sweep_settings_file_of_json_null_is_damaged(finished, tmp_path, capsys):
    out = copy(finished, tmp_path)
    (out / "sweep-settings.json").write_text("null")
    err = refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys,
                  "damaged sweep-settings.json (not a JSON object)")
    assert "but no" not in err


def test_a_locked_sweep_directory_is_refused(tmp_path, capsys, no_figures):
    out = tmp_path / "s"
    out.mkdir()
    held = ExperimentDirectory(out, "sweep")
    try:
        assert main([*TINY_SWEEP, "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "in use" in err and not (out / "runs").exists()
        assert main(["reproduce", "--quick", "--output", str(out)]) == 2     # reproduce takes the lock too
        assert "in use" in capsys.readouterr().err
    finally:
        held.close()
    assert main([*TINY_SWEEP, "--output", str(out)]) == 0   # released
    report = tmp_path / "r"
    report.mkdir()
    (report / "report.json").write_text("{}")
    assert main([*TINY_SWEEP, "--output", str(report)]) == 2
    assert "holds a reproduction" in capsys.readouterr().err


def test_a_users_link_named_as_a_temporary_file_is_kept_and_the_lock_records_this_process_alone(tmp_path):
    """begin removes killed writes' temporary files, which are files: a link of that name is the user's;
    the lock file is rewritten to this process id (a longer id written before leaves no digits behind)."""
    target = tmp_path / "mine.txt"
    target.write_text("kept")
    link = tmp_path / ".results.csv.abcdefgh.tmp"
    link.symlink_to(target)
    (tmp_path / ".lock").write_text("12345678901234567890\n")
    with ExperimentDirectory(tmp_path, "sweep"):
        assert (tmp_path / ".lock").read_text() == f"{os.getpid()}\n"
    assert link.is_symlink() and target.read_text() == "kept"


def test_reading_without_the_lock_does_not_refuse_a_directory_in_the_place_of_a_file(tmp_path):
    """Only a run that writes (the lock held) needs results.csv to be a file: read only, it is not refused."""
    (tmp_path / "results.csv").mkdir()
    ExperimentDirectory(tmp_path, "sweep", lock=False).close()
    with pytest.raises(directory_mod.DirectoryRefused, match="results.csv that is a directory"):
        ExperimentDirectory(tmp_path, "sweep")


@pytest.mark.parametrize("experiment", ["fig2", "fig3"])
def test_stored_runs_of_a_reproduction_mark_its_directory(experiment, tmp_path):
    from numerics.experiments import reproduce
    from numerics.experiments.store import ResultStore
    job = next(j for _, j in reproduce.published_jobs(quick=True) if j["experiment"] == experiment)
    ResultStore(tmp_path / "runs").put(job, {"runs": []})
    with pytest.raises(directory_mod.DirectoryRefused, match=r"holds a reproduction \(runs/\), not a sweep"):
        ExperimentDirectory(tmp_path, "sweep")
    ExperimentDirectory(tmp_path, "reproduction").close()


def test_a_reproductions_dtype_is_its_figure_2_runs(tmp_path):
    """A report whose Figure-3 run comes first (no dtype of its own) and whose Figure-2 run is float32."""
    report = {"quick": True, "runs": {"fig3_a": {"experiment": "fig3", "settings": {}},
                                      "fig2_b": {"experiment": "fig2", "settings": {"dtype": "float32"}}}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    assert ExperimentDirectory(tmp_path, "reproduction", lock=False).settings() == {"quick": True,
                                                                                     "dtype": "float32"}


def test_an_unfinished_reproduction_continues_when_its_run_belongs_to_these_settings_among_others(tmp_path):
    """A stored run that settings A and B both run (runs_of): continuing with B is not refused, A's settings
    are not taken for the stored ones; a run that only A runs refuses B."""
    from numerics.experiments.store import ResultStore, job_key
    job = {"experiment": "fig2", "config": {"x": 1}, "seeds": [1]}
    ResultStore(tmp_path / "runs").put(job, {"runs": []})
    a, b = {"quick": True, "dtype": "float64"}, {"quick": False, "dtype": "float64"}
    with ExperimentDirectory(tmp_path, "reproduction") as d:
        d.refuse_other_settings(b, {job_key(job): [a, b]})
        with pytest.raises(directory_mod.DirectoryRefused, match="unfinished reproduction of other settings"):
            d.refuse_other_settings(b, {job_key(job): [a]})


def test_a_sweep_settings_file_up_to_a_mebibyte_is_read(finished, tmp_path):
    """The settings file is read up to 1 MiB (a task file's text is stored in it): padded with JSON
    whitespace to 100 KiB it is read, beyond 1 MiB refused."""
    out = copy(finished, tmp_path)
    path = out / directory_mod.SETTINGS_FILE
    text = path.read_text()
    want = ExperimentDirectory(out, "sweep", lock=False).settings()
    path.write_text(text + " " * (100 << 10))
    assert ExperimentDirectory(out, "sweep", lock=False).settings() == want
    path.write_text(text + " " * (1 << 20))
    with pytest.raises(directory_mod.DirectoryRefused, match="cannot be read"):
        ExperimentDirectory(out, "sweep", lock=False).settings()


def test_stored_settings_with_a_setting_the_run_has_not_are_damaged(tmp_path):
    """A fig2.json whose settings name one the run does not have (an edited file): refused as damaged,
    as one without a setting the run has is."""
    given = {"epochs": 4, "seeds": [1]}
    (tmp_path / "fig2.json").write_text(json.dumps({"settings": {**given, "colour": "red"}}))
    with ExperimentDirectory(tmp_path, "fig2") as d:
        with pytest.raises(directory_mod.DirectoryRefused, match="damaged fig2.json .*an unknown setting .colour."):
            d.refuse_other_settings(given)
        with pytest.raises(directory_mod.DirectoryRefused, match="damaged fig2.json .*no .lr."):
            d.refuse_other_settings({**given, "colour": "red", "lr": 1.0})


def _at_length(root: Path, length: int) -> Path:
    """A directory below ``root`` whose path has ``length`` characters (components of at most 200)."""
    path = root
    while len(str(path)) < length:
        path = path / ("d" * min(200, length - len(str(path)) - 1))
    path.mkdir(parents=True)
    assert len(str(path)) == length
    return path


@pytest.mark.parametrize("runs", [False, True])
def test_a_directory_where_the_stored_runs_cannot_be_named_is_refused_before_any_work(runs, tmp_path, capsys):
    """A sweep's runs are files ``runs/<64 hex digits>.json`` (and their temporary files): an --output whose path
    takes a 64-byte name but is too long for those (the system's path limit) is refused before any run, with
    nothing written, not failed once the first run has trained."""
    import socket
    stored = len("0" * 64 + ".json")                                # a run's file, and its temporary file:
    temporary = len(f".{'0' * 16}~{socket.gethostname()}~{os.getpid()}~") + len("abcd1234.tmp")
    limit = os.pathconf(tmp_path, "PC_PATH_MAX") - 1               # the longest path the system takes
    out = _at_length(tmp_path, limit - len("/runs/") - max(stored, temporary) + 1)
    assert len(str(out)) + 1 + 64 <= limit                          # (a 64-byte name fits in --output)
    if runs:
        (out / "runs").mkdir()
    refused(["sweep", "--parameterizations", "CACO", "--ratios", "1", "--seeds", "1", "--target-loss", "3",
             "--max-steps", "10", "--workers", "1", "--quiet", "--output", str(out)], out, capsys,
            "cannot take files", "File name too long")


@pytest.mark.parametrize("figure", ["fig2_heatmaps.png", "fig3_fixed_attention.pdf"])
def test_a_directory_in_the_place_of_a_report_figure_is_refused_before_any_work(figure, tmp_path, capsys):
    """A reproduction writes its figures beside its report: a directory where one goes is refused before any
    run, as one where its report goes, not met once every run has trained."""
    out = tmp_path / "r"
    (out / figure).mkdir(parents=True)
    refused(["reproduce", "--quick", "--workers", "1", "--quiet", "--output", str(out)], out, capsys,
            f"has a {figure} that is a directory")


_BIG = 10 ** 400        # an integer beyond floats (JSON reads it)


@pytest.mark.parametrize("kind, change", [
    ("fig2", {"epochs": True}), ("fig2", {"lr_qk": "0.01"}), ("fig2", {"task_params": 3.5}),
    ("fig2", {"task_params": [["m", 1, 2]]}), ("fig2", {"seeds": [[1]]}), ("fig2", {"parameterization": _BIG}),
    ("fig2", {"max_steps": _BIG}), ("fig3", {"alphas": ["x"]}), ("fig3", {"alphas": {"a": 1}}),
    ("fig3", {"task_params": "x"}), ("fig3", {"lr": _BIG}), ("fig3", {"seed": [None]})])
def test_tampered_run_settings_are_refused_in_one_line_naming_the_file(kind, change, tmp_path, capsys):
    """A fig2.json / fig3.json whose settings are not a run's (wrong types, strings where numbers go, nested
    junk, numbers beyond floats) is damaged: one line naming the file, never a traceback, nothing changed."""
    from numerics.experiments import sgd
    from numerics.experiments.fixed_attention import Fig3Config

    settings = ({**sgd.Fig2Config(epochs=2).to_dict(), "seeds": [1234]} if kind == "fig2"
                else Fig3Config(epochs=2).to_dict())
    out = tmp_path / "f"
    out.mkdir()
    (out / f"{kind}.json").write_text(json.dumps({"settings": {**settings, **change}}))
    refused([*(FIG2 if kind == "fig2" else FIG3), "--output", str(out)], out, capsys,
            f"has a damaged {kind}.json (its settings")


@pytest.mark.parametrize("change, fragment", [({"lr_ov": _BIG}, '"lr_ov" must be a number > 0'),
                                              ({"target_loss": [3.5, _BIG]}, '"target_loss" must be'),
                                              ({"parameterizations": ["CACO", "CACO"]}, "each once"),
                                              ({"ratios": [1, 1.0]}, "distinct"),
                                              ({"seeds": _BIG, "seed_blocks": [_BIG]}, None)])
def test_tampered_sweep_settings_with_their_digest_are_refused_in_one_line(change, fragment, finished, tmp_path,
                                                                           capsys):
    """Settings written again with their digest: checked as a sweep's (or, where they are one, compared)."""
    out = copy(finished, tmp_path)
    _settings(out, **change)
    for extend in ([], ["--extend"]):
        err = refused([*TINY_SWEEP, "--output", str(out), "--resume", *extend], out, capsys)
        assert ("damaged sweep-settings.json" in err and fragment in err) if fragment else "--seeds 1e+400" in err


def test_a_report_whose_dtype_is_not_a_dtype_is_damaged(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    (out / "report.json").write_text(json.dumps({"quick": True, "runs": {
        "a": {"experiment": "fig2", "settings": {"dtype": [_BIG]}}}}))
    refused(["reproduce", "--quick", "--output", str(out)], out, capsys, "damaged report.json")


@pytest.mark.parametrize("failure", ["full disk", "edited"])
def test_an_exit_1_line_quotes_a_path_that_would_break_it(failure, monkeypatch, capsys, tmp_path):
    """A full disk and a run file edited mid-run name their file in one line even where its path holds a
    line break or a control character: quoted, as the line's folder of runs is."""
    import numerics.experiments.__main__ as cli
    from numerics.experiments.store import STORE_FORMAT, ResultStore, job_key

    folder = tmp_path / "a\nb\x1b[2J"
    file = folder / "runs" / f"{job_key({})}.json"

    def prepare(args):
        def work():
            if failure == "edited":         # a run file whose digest does not match, read as the work begins
                file.parent.mkdir(parents=True)
                file.write_text(json.dumps({"format": STORE_FORMAT, "key": file.stem, "job": {}, "result": {},
                                            "digest": "0"}))
                ResultStore(file.parent, read_only=True).get({})
            raise OSError(28, "No space left on device", str(file))
        return work, str
    monkeypatch.setitem(cli.COMMANDS, "sweep", prepare)
    assert main([*TINY_SWEEP, "--output", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err, err
    assert repr(str(file)) in err and (failure == "edited") == ("was changed after it was written" in err)


def _longest(value, epochs):
    """``value`` (a result file's JSON) at its longest: every float the longest a float is written, every
    loss log a loss per epoch."""
    if isinstance(value, float):
        return -2.2250738585072014e-308
    if isinstance(value, list):
        return [_longest(v, epochs) for v in value]
    if isinstance(value, dict):
        return {k: _longest(v + [0.0] * (epochs - len(v)) if k == "loss_log" else v, epochs)
                for k, v in value.items()}
    return value


@pytest.mark.parametrize("kind", ["fig2", "fig3"])
def test_a_result_file_is_read_up_to_the_size_of_a_result_of_these_settings(kind, tmp_path, capsys, no_figures):
    """fig2.json / fig3.json are read up to what a result of the command's settings can take
    (jobs.output_bytes): the file written, at its longest (every number as long as a float is written, a
    loss per epoch), is within it; one byte more is refused in one line naming the file and the limit."""
    from derivations.core.output import json_text
    from numerics.experiments import jobs

    out = tmp_path / "f"
    argv = [*FIG2, "--seeds", "1234,1235"] if kind == "fig2" else FIG3
    assert main([*argv, "--output", str(out)]) == 0
    data = json.loads((out / f"{kind}.json").read_text())
    config = {k: v for k, v in data["settings"].items() if k != "seeds"}
    job = {"experiment": kind, "config": config, **({"seeds": data["settings"]["seeds"]} if kind == "fig2" else {})}
    limit = jobs.OUTPUT_BASE_BYTES + jobs.output_bytes(job)
    longest = json_text(_longest(data, jobs.job_epochs(job)))
    assert len(longest.encode()) - len(json_text(data["settings"])) <= jobs.output_bytes(job)
    with open(out / f"{kind}.json", "r+b") as f:
        f.truncate(limit + 1)
    refused([*argv, "--output", str(out)], out, capsys, f"has a {kind}.json that cannot be read (larger than "
                                                         f"{limit} bytes)")


def test_a_report_larger_than_the_full_reproductions_is_not_read(tmp_path, capsys):
    """report.json is read up to what the full reproduction's report can take (reproduce.report_bytes, the
    largest): one byte more is refused in one line naming the file and the limit, and --collect's timing
    does not read it either."""
    from numerics.experiments import reproduce

    out = tmp_path / "r"
    out.mkdir()
    limit = reproduce.report_bytes()
    with open(out / "report.json", "wb") as f:
        f.truncate(limit + 1)
    refused(["reproduce", "--quick", "--output", str(out)], out, capsys,
            f"has a report.json that cannot be read (larger than {limit} bytes)")
    assert reproduce._timed(ExperimentDirectory(out, "reproduction", lock=False), [{}]) is None


def _oversized(path, size):
    """``path`` made a (sparse) file of ``size`` bytes."""
    with open(path, "r+b") as f:
        f.truncate(size)


def test_a_sweep_run_file_larger_than_a_run_of_its_settings_is_refused_unread(finished, tmp_path, capsys,
                                                                             monkeypatch):
    """A stored run is read up to what a run of the sweep's settings takes (sweep.run_bytes, from the
    settings file, read first), not 1 GiB: one byte more is refused in one line naming the file, its size
    and the limit, before a byte of it is read, and it is neither recomputed nor replaced."""
    from numerics.experiments import store as store_mod
    from numerics.experiments import sweep

    out = copy(finished, tmp_path)
    [path] = (out / "runs").glob("*.json")
    limit = sweep.run_bytes(ExperimentDirectory(out, "sweep", lock=False).settings())
    assert path.stat().st_size < limit < (8 << 20)
    _oversized(path, limit + 1)
    read = store_mod.read_bounded

    def bounded(file, n, **k):
        assert n <= limit, "a run file was read up to more than a run of the settings takes"
        return read(file, n, **k)
    monkeypatch.setattr(store_mod, "read_bounded", bounded)
    refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys,
            f"runs/{path.name} is {limit + 1} bytes, more than a result stored there takes ({limit} bytes)",
            "neither read nor replaced")


def test_a_sweep_with_damaged_settings_is_refused_before_its_runs_are_read(finished, tmp_path, capsys, monkeypatch):
    """Settings first: a damaged settings file is refused in one line and no stored run is read (their
    bound is of the settings)."""
    from numerics.experiments.store import ResultStore

    out = copy(finished, tmp_path)
    _settings(out, sealed=False, ratios=[2.0])
    monkeypatch.setattr(ResultStore, "items", lambda self: pytest.fail("a stored run was read"))
    refused([*TINY_SWEEP, "--output", str(out), "--resume"], out, capsys, "has a damaged sweep-settings.json")


def test_a_reproduction_run_file_larger_than_its_largest_published_run_is_refused_unread(tmp_path, capsys,
                                                                                        monkeypatch):
    """A reproduction's stored run is read up to its largest published run's (reproduce.run_bytes): one
    byte more is refused in one line, by the reproduction, its --collect and a sweep or a fig3 run given
    its directory, never read nor replaced."""
    from numerics.experiments import reproduce
    from numerics.experiments.store import ResultStore
    monkeypatch.setattr(reproduce, "reproduce", lambda d, **k: pytest.fail("work started"))

    out = tmp_path / "r"
    job = next(j for _, j in reproduce.published_jobs(quick=True) if j["experiment"] == "fig2")
    store = ResultStore(out / "runs")
    store.put(job, {"runs": [dict(FIG2_RUN, seed=s) for s in job["seeds"]]})
    limit = reproduce.run_bytes()
    assert limit < (8 << 20)
    _oversized(store.path(job), limit + 1)
    said = f"runs/{store.path(job).name} is {limit + 1} bytes, more than a result stored there takes ({limit} bytes)"
    for argv in (["reproduce", "--quick"], ["reproduce", "--quick", "--collect"], [*TINY_SWEEP], FIG3):
        refused([*argv, "--output", str(out)], out, capsys, said)


def test_a_run_file_at_its_longest_is_within_its_bound():
    """The bound of a run file holds the longest file a job can write: every number as long as a double is
    written, a loss per epoch, the longest published run (reproduce.run_bytes) and a sweep job of three seeds,
    several ratios and targets (sweep.run_bytes: its rows grow with ratios x targets)."""
    from numerics.experiments import jobs, reproduce, sweep
    from numerics.experiments.store import ResultStore

    def size(job, result):
        with __import__("tempfile").TemporaryDirectory() as folder:
            store = ResultStore(folder)
            store.put(job, _longest(result, 0))
            return store.path(job).stat().st_size
    for _, job in reproduce.published_jobs():
        epochs = jobs.job_epochs(job)
        if job["experiment"] == "fig2":
            run = {**FIG2_RUN, **{k: 0.5 for k in ("self_attention", "other_attention", *jobs.proxies.PROXIES)},
                   "loss_log": [0.5] * (epochs + 1), "stopped_epoch": epochs, "status": "completed"}
            result = {"runs": [dict(run, seed=s) for s in job["seeds"]]}
        else:
            alphas = job["config"]["alphas"]
            result = {"alpha": alphas, "final_loss": [0.5] * len(alphas),
                      "train_loss": [[0.5] * epochs] * len(alphas),
                      **{k: [[0.5] * (epochs + 1)] * len(alphas) for k in ("loss", "loss_shifted", "incentive")}}
        assert jobs.valid_result(job, json.loads(json.dumps(result)))
        assert size(job, result) <= reproduce.run_bytes()
    settings = {"parameterizations": ["CACO", "FAFO"], "ratios": [0.25, 0.5, 1.0, 2.0, 4.0], "seeds": 12,
                "target_loss": [3.5, 3.0, 2.5]}
    [job, *_] = sweep.sweep_jobs(settings["parameterizations"], settings["ratios"], 12, settings["target_loss"])
    assert len(job["seeds"]) == sweep.SEEDS_PER_JOB
    row = {k: 0.5 for k in jobs.SWEEP_ROW_KEYS}
    row.update(parameterization="CACO", steps=10, reached=True, status="completed")
    rows = [dict(row, ratio=r, seed=s, target_loss=t) for r, s in jobs.sweep_runs(job) for t in jobs.sweep_targets(job)]
    assert jobs.valid_result(job, {"rows": rows})
    assert size(job, {"rows": rows}) <= sweep.run_bytes(settings)


@pytest.mark.parametrize("seeds", ["1", "2"])
def test_a_runs_link_another_directory_shares_is_refused_and_nothing_in_it_changes(finished, tmp_path, capsys,
                                                                                 monkeypatch, seeds):
    """``runs`` a link to a directory is followed (the runs kept on another disk). Another experiment directory whose
    ``runs`` links to a finished sweep's runs (the same settings or others) holds runs of settings it does not know:
    refused in one line, nothing changed in the sweep it points into, which resumes from its runs as before."""
    skip_figures(monkeypatch)
    a = copy(finished, tmp_path)
    b = tmp_path / "b"
    b.mkdir()
    (b / "runs").symlink_to(a / "runs", target_is_directory=True)
    argv = [seeds if prev == "--seeds" else arg for prev, arg in zip([None, *TINY_SWEEP], TINY_SWEEP)]
    refused([*argv, "--output", str(b)], a, capsys, "runs", "no sweep-settings.json")
    assert sorted(os.listdir(b)) == ["runs"]
    stored = {p.name: p.read_bytes() for p in (a / "runs").iterdir()}
    assert main([*TINY_SWEEP, "--output", str(a), "--resume"]) == 0
    assert {p.name: p.read_bytes() for p in (a / "runs").iterdir()} == stored
