"""Local Sphinx extension of the qkov documentation site.

Directives
----------
``qkov-equation NAME``
    Displays the equation of the generated LaTeX snippet
    ``docs/generated/snippets/NAME.tex`` (written by ``python -m derivations.latex``),
    so the pages show the derived formulas instead of retyped ones. The snippet's
    ``equation`` environment and ``\\label`` are stripped; the equation is numbered and
    can be referenced as ``{eq}`NAME``` (MyST) or ``:eq:`NAME``` (reST).
``qkov-cli KEY``
    The argparse reference of the command ``KEY`` of ``conf.py``'s ``qkov_cli_parsers``
    table, rendered by sphinx-argparse. A command whose module does not exist yet
    (listed in ``qkov_optional_modules``) is replaced by a visible note instead of
    failing the build; any other problem (a missing parser function, an import
    error inside an existing module) is a build error.
``qkov-requires MODULE``
    A visible note shown only while MODULE cannot be imported.

Build-time generation
---------------------
``api/index.rst`` and the API pages are generated from the packages on disk
(:mod:`qkov_api`). A build holds the lock ``api/.build.lock`` from then until it ends: a second build of
the same source directory waits for it, instead of reading generated pages the first
one is writing or has not written yet.

Pages written as doctest files (bare ``>>>`` blocks run by ``doctest.testfile``,
listed in ``qkov_bare_doctest_pages``) get their example blocks wrapped in ``pycon``
code fences while Sphinx reads them; the files themselves stay plain doctest files.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging as logging_module
import os
import re
import sys
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: builds of one directory are not serialized
    fcntl = None

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.directives.patches import MathDirective
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.logging import WarningStreamHandler, get_node_location

from qkov_api import (DropAutosummaryTocs, drop_type_docstring, examples_heading, numpydoc_template_once,
                      resolve_by_import, write_api_index)

logger = logging.getLogger(__name__)

_BEGIN = re.compile(r"\\begin\{equation\*?\}")
_END = re.compile(r"\\end\{equation\*?\}")
_LABEL = re.compile(r"\\label\{[^}]*\}")


def snippet_math(path: Path) -> str:
    """Return the body of a generated snippet: its math without environment and label."""
    text = path.read_text(encoding="utf-8")
    if not _BEGIN.search(text) or not _END.search(text):
        raise ValueError(f"{path} is not an equation snippet")
    body = _END.split(_BEGIN.split(text, maxsplit=1)[1], maxsplit=1)[0]
    body = _LABEL.sub("", body).strip()
    # sympy.latex writes "lhs =\nrhs"; join so the display wraps as one equation.
    return re.sub(r"\s*\n\s*", " ", body) if "\\begin{aligned}" not in body else body


class EquationSnippet(MathDirective):
    """Display the math of ``docs/generated/snippets/<NAME>.tex``."""

    required_arguments = 1
    optional_arguments = 0
    has_content = False
    option_spec = {"nolabel": directives.flag, "class": directives.class_option}

    def run(self):
        name = self.arguments[0].strip()
        folder = Path(self.env.srcdir) / self.config.qkov_snippet_dir
        path = folder / f"{name}.tex"
        if not path.is_file():
            # sanitized file names (latex.snippet_filename) replace '/' by '_'
            alt = folder / f"{name.replace('/', '_')}.tex"
            path = alt if alt.is_file() else path
        if not path.is_file():
            raise self.error(f"qkov-equation: no generated snippet {path} "
                             "(run: python -m derivations.latex --output docs/generated)")
        self.env.note_dependency(str(path))
        body = snippet_math(path)
        self.arguments = []
        self.content = StringList(body.splitlines(), source=str(path))
        if "nolabel" not in self.options:
            self.options["label"] = name
        if "\\begin{aligned}" in body:
            # the snippet brings its own alignment; do not wrap it in split
            self.options["no-wrap"] = True
            inner = "\n".join(self.content)
            self.content = StringList(
                [r"\begin{equation*}", inner, r"\end{equation*}"], source=str(path))
        return super().run()


def _optional_note(text: str) -> list[nodes.Node]:
    note = nodes.note()
    note += nodes.paragraph(text=text)
    return [note]


class CliReference(SphinxDirective):
    """The argparse reference of one command of ``qkov_cli_parsers``."""

    required_arguments = 1
    has_content = False

    def run(self):
        key = self.arguments[0].strip()
        table = self.config.qkov_cli_parsers
        if key not in table:
            raise self.error(f"qkov-cli: {key!r} is not in conf.py's qkov_cli_parsers")
        module, func = table[key]
        if not _module_exists(module):
            if module in self.config.qkov_optional_modules:
                logger.info("qkov-cli: %s not available; showing a note", module)
                return _optional_note(
                    f"The reference of python -m {module} is generated from its argparse "
                    f"parser ({module}.{func}) once the module is part of the package; "
                    "it is not in this build.")
            raise self.error(f"qkov-cli: module {module} not found")
        try:
            mod = importlib.import_module(module)
        except Exception as exc:  # an existing module that fails to import is an error
            raise self.error(f"qkov-cli: importing {module} failed: {exc!r}") from exc
        if not callable(getattr(mod, func, None)):
            raise self.error(f"qkov-cli: {module} has no parser function {func}() "
                             "(update qkov_cli_parsers in docs/conf.py)")
        self.env.note_dependency(mod.__file__)
        from sphinxarg.ext import ArgParseDirective

        # the program's own name where its parser sets one ("python -m numerics.verify --task
        # NAME"), else the module run with -m (a package's __main__ runs as the package)
        prog = getattr(mod, func)().prog or ""
        if not prog.startswith("python -m "):
            prog = f"python -m {module.removesuffix('.__main__')}"
        options = {"module": module, "func": func, "prog": prog}
        directive = ArgParseDirective("argparse", [], options, [], self.lineno,
                                      self.content_offset, self.block_text, self.state,
                                      self.state_machine)
        return directive.run()


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


class RequiresModule(SphinxDirective):
    """A note shown while a module of another work item is not in the package."""

    required_arguments = 1
    final_argument_whitespace = False
    has_content = True

    def run(self):
        module = self.arguments[0].strip()
        if _module_exists(module):
            return []
        if not self.content:
            return _optional_note(f"{module} is not part of this build yet; this page "
                                  "describes its planned interface.")
        note = nodes.note()
        # the content is parsed in the page's own markup (MyST Markdown or reST)
        self.state.nested_parse(self.content, self.content_offset, note)
        return [note]


# ---------------------------------------------------------------------------------------
# one build of a source directory at a time

#: The lock file of a source directory's build, beside the pages it generates (``api/``, not in git).
LOCK_NAME = ".build.lock"


def lock_source_directory(app, config) -> None:
    """Hold the lock ``api/.build.lock`` of the source directory until the build ends.

    Autosummary writes ``api/generated/*.rst`` into the source directory and then reads them,
    and it looks for the pages named on a page only when it wrote that page itself: two builds
    of one directory at once (the test suite's and one started by hand, or two test sessions)
    read pages the other one is writing or has not written yet, and fail with "stub file not
    found". The second build waits (and says so)."""
    if fcntl is None:
        return
    path = Path(app.srcdir) / "api" / LOCK_NAME
    path.parent.mkdir(exist_ok=True)
    handle = open(path, "a+b")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        # on stderr, so that a quiet (-q) build says why it waits
        print(f"qkov: waiting for another build of {app.srcdir} to finish ({path})", file=sys.stderr, flush=True)
        fcntl.flock(handle, fcntl.LOCK_EX)
    app._qkov_source_lock = handle


def unlock_source_directory(app, exception) -> None:
    """Release the lock taken by :func:`lock_source_directory` (the build has ended)."""
    handle = getattr(app, "_qkov_source_lock", None)
    if handle is not None:
        fcntl.flock(handle, fcntl.LOCK_UN)     # explicitly: a worker forked by -j holds the same file
        handle.close()
        app._qkov_source_lock = None


# ---------------------------------------------------------------------------------------
# bare doctest pages

_FENCE = re.compile(r"^(```|~~~)")


def fence_bare_doctests(text: str) -> str:
    """Wrap blocks of bare ``>>>`` examples (up to the next blank line) in pycon fences."""
    out, in_fence, in_block = [], False, False
    for line in text.splitlines():
        if in_block and not line.strip():
            out.append("```")
            in_block = False
        if not in_block and _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and not in_block and line.startswith(">>>"):
            out.append("```pycon")
            in_block = True
        out.append(line)
    if in_block:
        out.append("```")
    return "\n".join(out) + "\n"


def on_source_read(app, docname, source):
    if docname in app.config.qkov_bare_doctest_pages:
        source[0] = fence_bare_doctests(source[0])


# ---------------------------------------------------------------------------------------
# known docstring problems of other modules: reported, not counted as build warnings

_DOCSTRING_OF = re.compile(r"docstring of ([\w.]+)")


def _record_location(record) -> str:
    loc = getattr(record, "location", None)
    if isinstance(loc, nodes.Node):
        loc = get_node_location(loc)
    elif isinstance(loc, tuple):
        loc = ":".join(str(x) for x in loc if x is not None)
    return str(loc or "")


class _KnownIssueFilter:
    """Drops warnings located in the docstrings listed in ``qkov_known_docstring_issues``."""

    def __init__(self, app):
        self.app = app
        self.seen: dict[str, list[str]] = {}

    def filter(self, record) -> bool:
        allowed = self.app.config.qkov_known_docstring_issues
        if not allowed or os.environ.get("QKOV_DOCS_STRICT"):
            return True
        match = _DOCSTRING_OF.search(_record_location(record))
        if not match:
            return True
        where = match.group(1)
        for name in allowed:
            if where == name:
                self.seen.setdefault(name, []).append(
                    f"{_record_location(record)}: {record.getMessage()}")
                return False
        return True


def _install_known_issue_filter(app) -> None:
    flt = _KnownIssueFilter(app)
    app._qkov_known_issue_filter = flt
    for handler in logging_module.getLogger("sphinx").handlers:
        if isinstance(handler, WarningStreamHandler):
            handler.filters.insert(0, flt)


def _report_known_issues(app, exception) -> None:
    flt = getattr(app, "_qkov_known_issue_filter", None)
    if flt is None or exception is not None:
        return
    lines = []
    for name in app.config.qkov_known_docstring_issues:
        found = flt.seen.get(name, [])
        lines.append(f"{name}: {len(found)} warning(s)")
        lines.extend(f"    {msg}" for msg in found)
    path = Path(app.outdir) / "known-docstring-issues.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    total = sum(len(v) for v in flt.seen.values())
    if total:
        logger.info("qkov: %d warning(s) from known docstring issues not counted "
                    "(conf.py qkov_known_docstring_issues; details in %s)", total, path)


def setup(app):
    app.add_config_value("qkov_snippet_dir", "generated/snippets", "env")
    app.add_config_value("qkov_cli_parsers", {}, "env")
    app.add_config_value("qkov_optional_modules", [], "env")
    app.add_config_value("qkov_bare_doctest_pages", [], "env")
    app.add_config_value("qkov_api_packages", ["derivations", "numerics"], "env")
    app.add_config_value("qkov_repository_root", "..", "env")
    app.add_directive("qkov-equation", EquationSnippet)
    app.add_directive("qkov-cli", CliReference)
    app.add_directive("qkov-requires", RequiresModule)
    app.connect("config-inited", lock_source_directory, priority=100)    # before write_api_index
    app.connect("config-inited", write_api_index)
    app.connect("build-finished", unlock_source_directory)
    app.connect("source-read", on_source_read)
    app.setup_extension("numpydoc")
    numpydoc_template_once()
    app.connect("autodoc-process-docstring", drop_type_docstring, priority=400)   # before numpydoc's
    app.connect("autodoc-process-docstring", examples_heading, priority=400)
    app.connect("missing-reference", resolve_by_import)
    app.add_post_transform(DropAutosummaryTocs)
    app.add_config_value("qkov_known_docstring_issues", [], "env")
    _install_known_issue_filter(app)
    app.connect("build-finished", _report_known_issues)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
