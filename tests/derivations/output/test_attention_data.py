"""The stored numbers of where attention goes (derivations/output/attention_data.py): read as data,
each stored file the output of the command that docs/attention.md gives for it, a damaged file one
line."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from derivations.output import attention_data as D

ROOT = Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "attention.md").read_text(encoding="utf-8")
SWEEPS = sorted(p.name for p in (D.DATA_DIR / "sweeps").iterdir())
BOUNDARIES = sorted(p.stem for p in (D.DATA_DIR / "boundary").glob("*.json"))


def _option(command: str, name: str) -> str:
    return re.search(rf"--{name} (\S+)", command).group(1)


def _documented(kind: str, name: str) -> str:
    """The one command line of docs/attention.md that writes the stored file ``name`` of ``kind``."""
    pattern = (rf"^python -m numerics\.experiments sweep .*--output out/attention-{re.escape(name)}$" if kind == "sweep"
               else rf"^python -m numerics\.experiments boundary .*> {re.escape(str(D.DATA_DIR.relative_to(ROOT)))}"
                    rf"/boundary/{re.escape(name)}\.json$")
    [command] = re.findall(pattern, PAGE, flags=re.M)
    return command


def _params(text: str) -> dict:
    return {k: float(v) for k, v in (p.split("=") for p in text.split(","))}


@pytest.mark.parametrize("name", SWEEPS)
def test_each_stored_sweep_is_its_documented_command(name):
    command = _documented("sweep", name)
    settings = json.loads((D.DATA_DIR / "sweeps" / name / "sweep.json").read_text())["settings"]
    assert _params(_option(command, "params")) == {k: float(v) for k, v in settings["task_params"]}
    assert [float(r) for r in _option(command, "ratios").split(",")] == settings["ratios"]
    assert float(_option(command, "target-loss")) == settings["target_loss"]
    assert (int(_option(command, "seeds")), _option(command, "init"), float(_option(command, "lr-ov"))) == (
        settings["seeds"], settings["init"], settings["lr_ov"])
    assert _option(command, "parameterizations") == "CACO" and settings["task"] == "query-copies"
    with open(D.DATA_DIR / "sweeps" / name / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(settings["ratios"]) * settings["seeds"]


@pytest.mark.parametrize("name", BOUNDARIES)
def test_each_stored_boundary_is_its_documented_command(name):
    command = _documented("boundary", name)
    settings = json.loads((D.DATA_DIR / "boundary" / f"{name}.json").read_text())["settings"]
    assert _params(_option(command, "params")) == settings["shape"]
    assert [float(v) for v in _option(command, "target-loss").split(",")] == settings["target_losses"]


def test_the_stored_runs_are_read_whole():
    runs = D.sgd_runs()
    assert [run["setting"] for run in runs[:1]] == ["A"] and {run["setting"] for run in runs} == set(SWEEPS)
    for name in SWEEPS:
        with open(D.DATA_DIR / "sweeps" / name / "results.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        mine = [run for run in runs if run["setting"] == name]
        assert [(r["ratio"], r["seed"], r["loss"], r["self_attention"]) for r in mine] == [
            (float(r["ratio"]), int(r["seed"]), float(r["loss"]), float(r["self_attention"])) for r in rows]
    assert all(set(run["task"]) == set(D.SHAPE) for run in runs)
    rows = D.crossover_rows()
    assert {row["setting"] for row in rows} == set(BOUNDARIES)
    assert all((row["crossover_ratio"] is None) == (row["reason"] is not None) for row in rows)


def _copy(tmp_path, sealed=False) -> Path:
    """The stored files copied; without their digests (``sealed`` False) as a user's own outputs, whose
    every field is still checked."""
    shutil.copytree(D.DATA_DIR, tmp_path / "data")
    if not sealed:
        (tmp_path / "data" / D.DIGESTS).unlink()
    return tmp_path / "data"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


DAMAGES = {
    "a share is no number": ("sweeps/A/results.csv", ",0.29495438879265967,", ",abc,", "line 2 relevant_attention"),
    "a share above 1": ("sweeps/A/results.csv", ",0.29495438879265967,", ",1.5,", "not a finite number in [0, 1]"),
    "a column is missing": ("sweeps/A/results.csv", "self_attention,", "selfish,", "no column self_attention"),
    "a cut line": ("sweeps/A/results.csv", "\nCACO,1.137,1236", "\nCACO,1.137", "line 7"),
    "a run without theory": ("sweeps/A/sweep.json", '"seed": 1236', '"seed": 1299',
                             "results.csv: line 4: no theory for ratio 0.01777, seed 1236"),
    "sweep.json is no JSON": ("sweeps/A/sweep.json", "{", "", "not JSON"),
    "another task": ("sweeps/A/sweep.json", '"task": "query-copies"', '"task": "authors"', "not those of a query-copies"),
    "a ratio without its lambda": ("boundary/A.json", '"crossover_lambda": 0.3621231278352996',
                                   '"crossover_lambda": null', "without the other"),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_file_is_one_line(tmp_path, damage):
    name, old, new, message = DAMAGES[damage]
    data = _copy(tmp_path)
    _edit(data / name, old, new)
    read = D.crossover_rows if name.startswith("boundary") else D.sgd_runs
    with pytest.raises(ValueError) as info:
        read(data)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str((data / name).parent)) and message in text


def test_a_large_or_missing_file_is_one_line(tmp_path):
    data = _copy(tmp_path)
    path = data / "sweeps" / "B" / "results.csv"
    path.write_text(path.read_text() + "#" * D.MAX_BYTES)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: \d+ bytes, more than {D.MAX_BYTES}$"):
        D.sgd_runs(data)
    (data / "sweeps" / "B" / "sweep.json").unlink()
    path.write_text("parameterization\n")
    with pytest.raises(ValueError, match="sweep.json: .*No such file"):
        D.sgd_runs(data)
    shutil.rmtree(data / "boundary")
    with pytest.raises(ValueError, match=r"no \*\.json"):
        D.crossover_rows(data)


@pytest.mark.parametrize("directory", [3, ["data"], b"data"])
@pytest.mark.parametrize("reader", ["sgd_runs", "crossover_rows"])
def test_a_directory_that_is_not_a_path_is_named(directory, reader):
    """A value that is not a path (None is the default folder) is named, not pathlib's "expected str, bytes or
    os.PathLike object"."""
    import derivations.output
    with pytest.raises(ValueError, match=r"^directory must be a path \(str or path-like\); got "):
        getattr(derivations.output, reader)(directory)


def test_the_digests_list_every_stored_file():
    """SHA256SUMS lists each stored file once with its SHA-256 (as sha256sum writes it), and nothing else."""
    import hashlib
    lines = (D.DATA_DIR / D.DIGESTS).read_text().splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in lines)
    stored = sorted(str(p.relative_to(D.DATA_DIR)) for p in D.DATA_DIR.rglob("*") if p.is_file()
                    and p.name != D.DIGESTS)
    assert len(listed) == len(lines) and sorted(listed) == stored
    assert all(hashlib.sha256((D.DATA_DIR / name).read_bytes()).hexdigest() == digest
               for name, digest in listed.items())


SEAL_BREAKS = {
    "a share edited within its range": ("sweeps/A/results.csv", lambda p: _edit(p, ",0.29495438879265967,", ",0.25,"),
                                        "changed after it was stored"),
    "a crossover ratio edited": ("boundary/A.json",
                                 lambda p: _edit(p, '"crossover_ratio": 0.14', '"crossover_ratio": 0.15'),
                                 "changed after it was stored"),
    "a theory edited": ("sweeps/B/sweep.json", lambda p: _edit(p, '"at_measured_loss": {', '"at_measured_loss": { '),
                        "changed after it was stored"),
    "a setting lost": ("sweeps/B/results.csv", lambda p: shutil.rmtree(p.parent), "listed in SHA256SUMS but missing"),
    "a file lost": ("sweeps/B/sweep.json", Path.unlink, "No such file"),
    "a boundary lost": ("boundary/R5.json", Path.unlink, "listed in SHA256SUMS but missing"),
    "a setting added": ("sweeps/C/results.csv", None, "not listed in SHA256SUMS"),
    "a boundary added": ("boundary/C.json", None, "not listed in SHA256SUMS"),
}


@pytest.mark.parametrize("damage", SEAL_BREAKS, ids=list(SEAL_BREAKS))
def test_a_stored_file_edited_added_or_lost_is_refused_never_believed(tmp_path, damage):
    """The stored files are sealed by their digests (SHA256SUMS): a number edited within its range, which
    every field check passes, a file lost or added is refused in one line naming it; nothing is read."""
    name, change, message = SEAL_BREAKS[damage]
    data = _copy(tmp_path, sealed=True)
    assert D.sgd_runs(data) == D.sgd_runs() and D.crossover_rows(data) == D.crossover_rows()
    path = data / name
    if change is None:                                         # a copy of a stored setting, under a new name
        twin = data / name.replace("C", "A")
        path.parent.mkdir(exist_ok=True)
        shutil.copy(twin, path)
        if path.name == "results.csv":
            shutil.copy(twin.with_name("sweep.json"), path.with_name("sweep.json"))
    else:
        change(path)
    read = D.crossover_rows if name.startswith("boundary") else D.sgd_runs
    with pytest.raises(ValueError) as info:
        read(data)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text
    (data / D.DIGESTS).unlink()                      # unsealed (a user's outputs): the fields alone decide
    if change is not None and damage.endswith("edited within its range"):
        assert read(data) != read()


def test_the_package_data_must_be_sealed(tmp_path, monkeypatch):
    """The package's own folder without its digests is refused, not read unsealed."""
    data = _copy(tmp_path, sealed=False)
    monkeypatch.setattr(D, "DATA_DIR", data)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(data / D.DIGESTS))}: .*No such file"):
        D.sgd_runs()
