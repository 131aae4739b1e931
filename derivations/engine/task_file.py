r"""Tasks in TOML files: :func:`~derivations.engine.task_file.load_task` reads one,
:func:`~derivations.engine.task_file.task_text` writes one.

A task file's keys are the keyword arguments of :class:`~derivations.engine.task.Task`;
``[[groups]]`` tables hold those of :class:`~derivations.engine.task.TokenGroup`;
``[parameters]`` declares the task's own parameters with their defaults (an integer
default makes a positive-integer parameter, another number a positive real);
``[defaults]`` may change the defaults of the paper's ``m``, ``n``, ``b``, ``M``.
Counts, types and scales are numbers or text read by the safe arithmetic reader
(:func:`~derivations.engine.expressions.parse_expression`): the file is data, never code.

>>> task = task_from_toml('''
... name = "two-relevant-types"
... query = "q"
... [parameters]
... R = 2
... [[groups]]
... name = "q"
... per_class = true
... [[groups]]
... name = "r"
... per_class = true
... types = "R"
... multiplicity = "m / R"
... [[groups]]
... name = "z"
... per_class = false
... embedded = false
... multiplicity = "n"
... ''', "example.toml")
>>> task.parameters, task.group("r").multiplicity
(('R',), m/R)
>>> task_from_toml('name = "x"\nquery = "q"\ncolour = 1', "bad.toml")
Traceback (most recent call last):
...
ValueError: bad.toml: unknown key 'colour' (valid: name, description, query, query_in_context, relevant, outputs, label, classes, embedding_scale, score_scale, parameters, defaults, groups)
"""
from __future__ import annotations

import json
import math
import os
import re

__all__ = ["MAX_FILE_BYTES", "TASK_KEYS", "GROUP_KEYS", "load_task", "task_from_toml", "task_from_mapping",
           "task_text", "task_from_text", "default_key"]

#: Largest task file read (bytes).
MAX_FILE_BYTES = 64 * 1024
#: The keys of a task file and of its ``[[groups]]`` tables.
TASK_KEYS = ("name", "description", "query", "query_in_context", "relevant", "outputs", "label", "classes",
             "embedding_scale", "score_scale", "parameters", "defaults", "groups")
GROUP_KEYS = ("name", "per_class", "multiplicity", "other_multiplicity", "types", "embedded")
_EXPRESSIONS = ("multiplicity", "other_multiplicity", "types", "classes", "embedding_scale", "score_scale")
_MAX_ITEMS = 64
#: The defaults each task read by :func:`load_task` in this process takes from its file, by the task
#: object (not by equality: an equal task read from another file has its own source):
#: ``{id(task): (weak reference to the task, {name: "<path>: defaults.<name>" or "<path>: parameters.<name>"})}``;
#: an entry goes with its task.
_FILE_DEFAULTS = {}


def _value(source, key, value):
    """A TOML value of an expression key: text as it is, a finite number as its exact text."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{source}: {key}: must be a number or an expression in quotes; got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{source}: {key}: must be a finite number; got {value!r}")
        return repr(value)
    return value


def _expect(source, key, value, kind):
    ok = {"text": isinstance(value, str), "bool": isinstance(value, bool),
          "list": isinstance(value, list) and all(isinstance(v, str) for v in value) and len(value) <= _MAX_ITEMS,
          "table": isinstance(value, dict) and len(value) <= _MAX_ITEMS,
          "tables": isinstance(value, list) and all(isinstance(v, dict) for v in value)
          and len(value) <= _MAX_ITEMS}[kind]
    if not ok:
        described = {"text": "text in quotes", "bool": "true or false", "list": "a list of names in quotes",
                     "table": "a table", "tables": "[[groups]] tables"}[kind]
        raise ValueError(f"{source}: {key}: must be {described}; got {value!r}"[:300])
    return value


_KINDS = {"name": "text", "description": "text", "query": "text", "query_in_context": "bool", "relevant": "list",
          "outputs": "text", "label": "text", "per_class": "bool", "embedded": "bool"}


def _group(source, i, table):
    from .task import TokenGroup
    where = f"groups[{i}]"
    unknown = [k for k in table if k not in GROUP_KEYS]
    if unknown:
        raise ValueError(f"{source}: {where}: unknown key {unknown[0]!r} (valid: {', '.join(GROUP_KEYS)})")
    if "name" not in table or "per_class" not in table:
        raise ValueError(f"{source}: {where}: needs the keys name and per_class")
    kw = {k: (_value(source, f"{where}.{k}", v) if k in _EXPRESSIONS else
              _expect(source, f"{where}.{k}", v, _KINDS[k])) for k, v in table.items()}
    try:
        return TokenGroup(**kw)
    except ValueError as exc:
        key = next((k for k in GROUP_KEYS[1:] if f": {k}" in str(exc)), "name")
        raise ValueError(f"{source}: {where}.{key}: {exc}") from None


def _parameters(source, data):
    params = _expect(source, "parameters", data.get("parameters", {}), "table")
    defaults = _expect(source, "defaults", data.get("defaults", {}), "table")
    from ..core.vocabulary import PAPER_SETTING, check_positive
    for key, table in (("parameters", params), ("defaults", defaults)):
        for name, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{source}: {key}.{name}: must be a number (its default); got {value!r}")
            try:                    # a subnormal real has lost digits (its sign and range: checked by the Task)
                if isinstance(value, float) and value > 0:
                    check_positive(name, value, normal=True)
            except ValueError as exc:
                raise ValueError(f"{source}: {key}.{name}: {exc}") from None
    bad = [k for k in defaults if k not in PAPER_SETTING]
    if bad:
        raise ValueError(f"{source}: defaults.{bad[0]}: [defaults] sets m, n, b, M only (declare the task's own "
                    "parameters in [parameters])")
    return tuple(params), tuple({**PAPER_SETTING, **defaults, **params}.items())


def _failed_key(exc, data, names):
    """The key of the file a Task's error message is about."""
    text = str(exc)
    group = re.search(r"group '([A-Za-z_][A-Za-z0-9_]*)': (\w+)", text)
    if group and group.group(1) in names:
        return f"groups[{names.index(group.group(1))}].{group.group(2)}"
    missing = re.search(r"has no token group '([^']*)'", text)        # named by query or relevant
    if missing and missing.group(1) == data.get("query"):
        return "query"
    if (missing and missing.group(1) in (data.get("relevant") or ())) or "cannot be relevant" in text:
        return "relevant"
    taken = re.search(r"parameters: '([^']*)' is taken", text)
    if taken and taken.group(1) in data.get("parameters", {}):
        return f"parameters.{taken.group(1)}"
    head = re.match(r"(\w+) must be", text)
    if head and head.group(1) in data.get("parameters", {}):
        return f"parameters.{head.group(1)}"
    if head and head.group(1) in data.get("defaults", {}):
        return f"defaults.{head.group(1)}"
    return next((k for k in TASK_KEYS if re.search(rf"\b{k}\b", text.split(":", 1)[-1])), "groups")


def task_from_mapping(data: dict, source: str = "<task>"):
    """The :class:`~derivations.engine.task.Task` of a parsed task file (see the module docstring).

    Parameters
    ----------
    data : dict
        The parsed file (TOML tables as dicts).
    source : str, optional
        Names the file in messages (default ``"<task>"``).

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        One line ``"<source>: <key>: <what is wrong>"``.
    """
    from .task import Task
    unknown = [k for k in data if k not in TASK_KEYS]
    if unknown:
        raise ValueError(f"{source}: unknown key {unknown[0]!r} (valid: {', '.join(TASK_KEYS)})")
    for key in ("name", "query", "groups"):
        if key not in data:
            raise ValueError(f"{source}: {key}: missing (a task file needs name, query and [[groups]])")
    tables = _expect(source, "groups", data["groups"], "tables")
    groups = tuple(_group(source, i, t) for i, t in enumerate(tables))
    parameters, defaults = _parameters(source, data)
    kw = {k: (_value(source, k, v) if k in _EXPRESSIONS else _expect(source, k, v, _KINDS[k]))
          for k, v in data.items() if k not in ("groups", "parameters", "defaults")}
    kw.setdefault("description", "")
    if kw.get("classes") == "M":
        from ..symbolic.symbols import M
        kw["classes"] = M
    try:
        return Task(groups=groups, parameters=parameters, defaults=defaults, **kw)
    except ValueError as exc:
        key = _failed_key(exc, data, [g.name for g in groups])
        if key == "groups" and "relevant" not in data and f"has no token group {Task.relevant[0]!r}" in str(exc):
            raise ValueError(f"{source}: relevant: {exc}; relevant defaults to {json.dumps(list(Task.relevant))}: "
                             "name the relevant groups") from None
        raise ValueError(f"{source}: {key}: {exc}{_real_hint(exc, data)}") from None


def _real_hint(exc, data) -> str:
    """Where a task's error is about an expression in a parameter whose default is a whole number written as a
    float (``R = 5.0``, which declares a positive real), the hint to write it as an integer; else ``""``."""
    _, found, got = str(exc).rpartition("; got ")
    if not found:
        return ""
    for name, value in data.get("parameters", {}).items():
        if isinstance(value, float) and value.is_integer() and re.search(rf"\b{re.escape(name)}\b", got):
            return (f" ({name} is a positive real: its default {value!r} is not an integer; write {name} = "
                    f"{int(value)} for a positive integer)")
    return ""


def task_from_toml(text: str, source: str = "<task>"):
    """The task of TOML ``text`` (:func:`task_from_mapping`); ``source`` names it in errors.

    Parameters
    ----------
    text : str
        The TOML text, at most :data:`MAX_FILE_BYTES` characters.
    source : str, optional
        Names the file in messages (default ``"<task>"``).

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        One line ``"<source>: ..."``: too large, not TOML, nested too deeply, or not a valid task
        (:func:`task_from_mapping`).
    """
    return task_from_mapping(_toml(text, source), source)


def _toml(text, source):
    """The tables of TOML ``text`` (one-line ValueError naming ``source``)."""
    import tomllib
    if len(text) > MAX_FILE_BYTES:
        raise ValueError(f"{source}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: not TOML: {exc}") from None
    except RecursionError:          # tomllib reads nested arrays and tables recursively
        raise ValueError(f"{source}: arrays or tables nested too deeply to be a task") from None


def load_task(path):
    """The task of the TOML file at ``path`` (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        One line naming the file and the key: unreadable or not a regular file (a
        directory, a FIFO, a device: refused at once), too large, not TOML, an
        unknown key, a bad value, an unknown symbol, a parameter outside its domain.
    """
    from ..core.atomic_file import read_bounded
    path = os.fspath(path)
    try:
        raw = read_bounded(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the task file ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    try:
        text = raw.decode("utf-8-sig")          # a byte-order mark, as some editors write, is not content
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    data = _toml(text, path)
    task = task_from_mapping(data, path)
    _remember_defaults(task, {name: f"{path}: {table}.{name}" for table in ("defaults", "parameters")
                              for name in data.get(table, {})})
    return task


def _remember_defaults(task, keys) -> None:
    """Record ``keys`` (:data:`_FILE_DEFAULTS`) for the task object ``task``, until it is gone."""
    import weakref

    ident = id(task)
    _FILE_DEFAULTS[ident] = (weakref.ref(task, lambda _, ident=ident: _FILE_DEFAULTS.pop(ident, None)), keys)


def default_key(task, name):
    """Where the task file ``task`` was read from sets the default of parameter ``name``, as its
    errors name a key: ``"<path>: defaults.<name>"`` (or ``parameters.<name>``), so that a
    numeric method that refuses the value names the file's key rather than the task.

    Parameters
    ----------
    task : Task
    name : str

    Returns
    -------
    str or None
        None where the file :func:`load_task` read ``task`` from does not set it, or ``task`` was not
        read by :func:`load_task` in this process (the paper's default, a built-in task, a task built
        in code or read from its canonical text, even if equal to one read from a file).
    """
    ref, keys = _FILE_DEFAULTS.get(id(task), (None, {}))
    return keys.get(name) if ref is not None and ref() is task else None


def _expression_text(expr) -> str:
    """``expr`` as SymPy's ``str`` prints it, but a power with the exponent written out (``b**(1/2)``, not
    ``sqrt(b)``), so that the task file's reader (:func:`~derivations.engine.expressions.parse_expression`),
    which knows no functions, reads it back."""
    from sympy.printing.str import StrPrinter

    class _Printer(StrPrinter):
        def _print_Pow(self, expr, rational=False):
            return super()._print_Pow(expr, rational=True)
    return _Printer().doprint(expr)


def task_text(task) -> str:
    """The canonical text of ``task``: the same task gives the same text, whatever file or code
    built it (JSON with sorted keys; expressions as SymPy prints them, a square root as a power). Used in run
    identities.

    Parameters
    ----------
    task : Task

    Returns
    -------
    str
        One line of JSON, read back by :func:`task_from_text`.
    """
    data = {"name": task.name, "description": task.description, "query": task.query,
            "query_in_context": task.query_in_context, "relevant": list(task.relevant), "outputs": task.outputs,
            "label": task.label, "classes": str(task.classes),
            "embedding_scale": _expression_text(task.embedding_scale),
            "score_scale": _expression_text(task.score_scale), "parameters": list(task.parameters),
            "defaults": {k: int(v) if task.integer_parameter(k) else float(v) for k, v in task.defaults},
            "groups": [{"name": g.name, "per_class": g.per_class, "multiplicity": _expression_text(g.multiplicity),
                        "other_multiplicity": _expression_text(g.other_multiplicity),
                        "types": _expression_text(g.types), "embedded": g.embedded} for g in task.groups]}
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def task_from_text(text: str):
    """The task of its canonical text (:func:`task_text`), as stored in a sweep's settings.

    Parameters
    ----------
    text : str

    Returns
    -------
    Task

    Raises
    ------
    ValueError
        Not a canonical task text (one line).
    """
    if not isinstance(text, str) or len(text) > MAX_FILE_BYTES:
        raise ValueError("a canonical task text must be a JSON text of at most 64 KiB")
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("the canonical task text is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("defaults"), dict):
        raise ValueError("the canonical task text is not an object with defaults")
    params = data.get("parameters")
    if not isinstance(params, list):
        raise ValueError("the canonical task text has no list of parameters")
    data = dict(data)
    defaults = data.pop("defaults")
    data["parameters"] = {p: defaults.get(p) for p in params}
    data["defaults"] = {k: v for k, v in defaults.items() if k not in params}
    if data.get("label") is None:
        data.pop("label", None)
    return task_from_mapping(data, "the stored task")
