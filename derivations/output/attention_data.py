r"""The stored numbers of "Where attention goes": SGD runs of ``query-copies`` and crossover ratios.

The files below :data:`DATA_DIR` are outputs of the experiments' commands, copied as they are
written (``docs/attention.md`` lists the commands):

* ``sweeps/NAME/results.csv`` and ``sweeps/NAME/sweep.json``: a CACO sweep
  (``python -m numerics.experiments sweep --task query-copies ... --output out/attention-NAME``);
  ``results.csv`` gives each run's measured loss and shares, ``sweep.json`` the task's parameters
  and the theory of each run (``prediction``: the expected-count flow from the run's own start,
  read at the loss the run measured);
* ``boundary/NAME.json``: ``python -m numerics.experiments boundary --task query-copies ... --json``.

:func:`sgd_runs` and :func:`crossover_rows` read them as data: every file at most
:data:`MAX_BYTES`, sealed by its SHA-256 in :data:`DIGESTS` (an edited, added or lost file is refused,
never believed), every field checked (finite numbers, shares in [0, 1], the theory of every run),
and a damaged file is a :class:`ValueError` of one line naming the file and the fault. The figures
(:mod:`numerics.output.attention`) and the LaTeX section
(:mod:`derivations.output.latex_attention`) read them; nothing here computes.

>>> runs = sgd_runs()
>>> sorted({run["setting"] for run in runs})[:2]
['A', 'B']
>>> [round(row["crossover_ratio"], 4) for row in crossover_rows() if row["setting"] == "A"]
[0.1422, 0.4118]
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from pathlib import Path

__all__ = ["DATA_DIR", "DIGESTS", "MAX_BYTES", "MAX_FILES", "SHAPE", "sgd_runs", "crossover_rows"]

#: The stored files (package data: the folder ``data/attention`` beside this module).
#:
#: :meta hide-value:
DATA_DIR = Path(__file__).resolve().parent / "data" / "attention"
#: The digests of the stored files, in ``sha256sum``'s format (``<SHA-256>  <path>``, paths relative to the
#: directory; ``sha256sum boundary/*.json sweeps/*/* > SHA256SUMS`` there writes it): in a directory that
#: has it (:data:`DATA_DIR` must), every file read is listed with its SHA-256 and every file listed is read.
DIGESTS = "SHA256SUMS"
_DIGEST_LINE = re.compile(r"([0-9a-f]{64}) [ *](\S.*)")
#: The largest file read, in bytes, and the most settings read per kind.
MAX_BYTES = 65536
MAX_FILES = 64
#: The parameters of the ``query-copies`` shape each record carries.
SHAPE = ("s", "R", "m", "n", "M", "b")
_SHARES = ("self_attention", "relevant_attention")
_COLUMNS = ("parameterization", "ratio", "seed", "target_loss", "loss", "status") + _SHARES


class _Damaged(ValueError):
    pass


def _bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _Damaged(f"{size} bytes, more than {MAX_BYTES}")
        return path.read_bytes()
    except OSError as exc:
        raise _Damaged(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def _text(path: Path) -> str:
    try:
        return _bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Damaged(str(exc).splitlines()[0]) from None


def _digests(root: Path):
    """``{path relative to root: SHA-256}`` of ``root``'s :data:`DIGESTS`, or None where it has none
    (:data:`DATA_DIR` must have it)."""
    path = root / DIGESTS
    if root != DATA_DIR and not os.path.lexists(path):
        return None
    out = {}
    for i, line in enumerate(_read(path, _text).splitlines(), start=1):
        found = _DIGEST_LINE.fullmatch(line)
        if found is None:
            raise ValueError(f"{path}: line {i} is not '<SHA-256>  <file>'")
        out[found.group(2)] = found.group(1)
    return out


def _sealed(root: Path, paths: list, prefix: str) -> list:
    """``paths``, each checked against ``root``'s :data:`DIGESTS` (where it has them), as are the files it
    lists under ``prefix``: one not read is missing."""
    digests = _digests(root)
    if digests is None:
        return paths
    names = {path.relative_to(root).as_posix(): path for path in paths}
    lost = sorted(n for n in digests if n.startswith(prefix) and n not in names)
    if lost:
        raise ValueError(f"{root / lost[0]}: listed in {DIGESTS} but missing")
    for name, path in names.items():
        if name not in digests:
            raise ValueError(f"{path}: not listed in {DIGESTS}, so not a stored file; remove it, or list its SHA-256")
        if _read(path, lambda p: hashlib.sha256(_bytes(p)).hexdigest()) != digests[name]:
            raise ValueError(f"{path}: changed after it was stored (its SHA-256 is not the one {DIGESTS} lists); "
                             f"restore it, or store its command's output (docs/attention.md) with its SHA-256")
    return paths


def _number(value, what, lo=-math.inf, hi=math.inf) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise _Damaged(f"{what} is {str(value)[:40]!r}, not a number") from None
    if isinstance(value, bool) or not (math.isfinite(x) and lo <= x <= hi):
        raise _Damaged(f"{what} = {str(value)[:40]} is not a finite number in [{lo:g}, {hi:g}]")
    return x


def _shape(mapping, what) -> dict:
    if not isinstance(mapping, dict):
        raise _Damaged(f"{what} is not an object")
    return {k: _number(mapping.get(k), f"{what} {k}", 0.0) for k in SHAPE}


def _json(path: Path):
    try:
        return json.loads(_text(path))
    except json.JSONDecodeError as exc:
        raise _Damaged(f"not JSON ({exc.msg}, line {exc.lineno})") from None


def _natural(path: Path) -> list:
    """Sort key of a stored file: its setting's name with runs of digits as numbers (R2 < R10)."""
    name = path.parent.name if path.name == "results.csv" else path.stem
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _directory(directory) -> Path:
    if directory is None:
        return DATA_DIR
    if not isinstance(directory, (str, os.PathLike)):
        raise ValueError(f"directory must be a path (str or path-like); got {directory!r}")
    return Path(directory)


def _files(directory, pattern) -> list:
    paths = sorted(Path(directory).glob(pattern), key=_natural)
    if not paths:
        raise ValueError(f"{directory}: no {pattern} (the stored numbers of where attention goes)")
    if len(paths) > MAX_FILES:
        raise ValueError(f"{directory}: {len(paths)} files {pattern}, more than {MAX_FILES}")
    return paths


def _read(path: Path, reader):
    try:
        return reader(path)
    except _Damaged as exc:
        raise ValueError(f"{path}: {exc}") from None


def _theory(sweep: dict) -> dict:
    """``(ratio, seed, target_loss) -> {share: theory}`` of a sweep.json's ``prediction``."""
    out = {}
    prediction = sweep.get("prediction")
    for i, p in enumerate(prediction if isinstance(prediction, list) else ()):
        at = p.get("at_measured_loss") if isinstance(p, dict) else None
        if not isinstance(at, dict):
            raise _Damaged(f"prediction {i} has no at_measured_loss")
        key = (_number(p.get("ratio"), f"prediction {i} ratio", 0.0),
               int(_number(p.get("seed"), f"prediction {i} seed")),
               _number(p.get("target_loss"), f"prediction {i} target_loss", 0.0))
        out[key] = {k: _number(at.get(k), f"prediction {i} {k}", 0.0, 1.0) for k in _SHARES}
    return out


def _settings(sweep) -> dict:
    settings = sweep.get("settings") if isinstance(sweep, dict) else None
    if not isinstance(settings, dict) or settings.get("task") != "query-copies":
        raise _Damaged("settings are not those of a query-copies sweep")
    params = settings.get("task_params")
    if not (isinstance(params, list) and all(isinstance(p, list) and len(p) == 2 for p in params)):
        raise _Damaged("settings task_params are not [name, value] pairs")
    return {"task": _shape(dict(params), "task_params"), "init": settings.get("init"),
            "lr_ov": _number(settings.get("lr_ov"), "settings lr_ov", 0.0)}


def _sweep(path: Path) -> tuple:
    sweep = _json(path)
    return _settings(sweep), _theory(sweep)


def _rows(path: Path, theory: dict) -> list:
    try:
        return _csv_rows(csv.DictReader(io.StringIO(_text(path))), theory)
    except csv.Error as exc:
        raise _Damaged(f"not CSV ({exc})") from None


def _csv_rows(reader, theory: dict) -> list:
    missing = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise _Damaged(f"no column {missing[0]}")
    rows = []
    for i, row in enumerate(reader, start=2):
        if row["parameterization"] != "CACO" or row["status"] not in ("reached", "completed"):
            raise _Damaged(f"line {i}: a {row['parameterization']} run with status {row['status']!r}, "
                           "not a CACO run that reached its target or completed")
        key = (_number(row["ratio"], f"line {i} ratio", 0.0), int(_number(row["seed"], f"line {i} seed")),
               _number(row["target_loss"], f"line {i} target_loss", 0.0))
        if key not in theory:
            raise _Damaged(f"line {i}: no theory for ratio {key[0]:g}, seed {key[1]} in sweep.json")
        rows.append({"ratio": key[0], "seed": key[1], "target_loss": key[2], "status": row["status"],
                     "loss": _number(row["loss"], f"line {i} loss", 0.0),
                     **{k: _number(row[k], f"line {i} {k}", 0.0, 1.0) for k in _SHARES},
                     **{f"theory_{k}": v for k, v in theory[key].items()}})
    if not rows:
        raise _Damaged("no runs")
    return rows


def sgd_runs(directory=None) -> list:
    """Every stored SGD run of ``query-copies`` (CACO), setting by setting (folder names sorted,
    numbers within them by value), in the order of each sweep's ``results.csv``.

    Parameters
    ----------
    directory : str or path-like, optional
        Holding ``sweeps/NAME/results.csv`` and ``sweeps/NAME/sweep.json`` (default :data:`DATA_DIR`).

    Returns
    -------
    list of dict
        Per run: ``setting`` (NAME), ``task`` (:data:`SHAPE` values), ``init``, ``lr_ov``, ``ratio``,
        ``seed``, ``target_loss``, ``status``, the measured ``loss``, ``self_attention`` and
        ``relevant_attention``, and the theory's ``theory_self_attention`` and
        ``theory_relevant_attention`` at that loss.

    Raises
    ------
    ValueError
        ``directory`` not a path, or one line naming the damaged, missing, edited or unlisted file (its
        :data:`DIGESTS`) and what is wrong.
    """
    runs, root = [], _directory(directory)
    folders = [path.parent for path in _files(root / "sweeps", "*/results.csv")]
    _sealed(root, [f / name for f in folders for name in ("results.csv", "sweep.json")], "sweeps/")
    for folder in folders:
        settings, theory = _read(folder / "sweep.json", _sweep)
        for row in _read(folder / "results.csv", lambda p: _rows(p, theory)):
            runs.append({"setting": folder.name, **settings, **row})
    return runs


def _boundary(path: Path) -> list:
    data = _json(path)
    settings = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(settings, dict) or settings.get("task") != "query-copies":
        raise _Damaged("settings are not those of a query-copies boundary")
    task = _shape(settings.get("shape"), "shape")
    out = []
    for i, rec in enumerate(data.get("records") or ()):
        if not isinstance(rec, dict) or rec.get("parameterization") != "CACO":
            raise _Damaged(f"record {i} is not a CACO record")
        ratio, lam = rec.get("crossover_ratio"), rec.get("crossover_lambda")
        if (ratio is None) != (lam is None):
            raise _Damaged(f"record {i} has a crossover ratio or lambda without the other")
        out.append({"setting": path.stem, "task": task,
                    "target_loss": _number(rec.get("target_loss"), f"record {i} target_loss", 0.0),
                    "crossover_lambda": None if lam is None else _number(lam, f"record {i} crossover_lambda", 0.0),
                    "crossover_ratio": None if ratio is None else _number(ratio, f"record {i} crossover_ratio", 0.0),
                    "reason": rec.get("reason")})
    if not out:
        raise _Damaged("no records")
    return out


def crossover_rows(directory=None) -> list:
    """The stored crossover records of ``query-copies`` (CACO from zero), file by file (sorted as
    the settings of :func:`sgd_runs`).

    Parameters
    ----------
    directory : str or path-like, optional
        Holding ``boundary/NAME.json`` (default :data:`DATA_DIR`).

    Returns
    -------
    list of dict
        Per record: ``setting`` (NAME), ``task`` (:data:`SHAPE` values), ``target_loss``,
        ``crossover_lambda`` and ``crossover_ratio`` (None where there is none) and ``reason``.

    Raises
    ------
    ValueError
        ``directory`` not a path, or one line naming the damaged, missing, edited or unlisted file (its
        :data:`DIGESTS`) and what is wrong.
    """
    root = _directory(directory)
    paths = _sealed(root, _files(root / "boundary", "*.json"), "boundary/")
    return [row for path in paths for row in _read(path, _boundary)]
