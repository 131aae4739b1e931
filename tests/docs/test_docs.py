"""The examples on the documentation pages run, and the docs' own extension does what it says.

* ``docs/usage.md`` is a doctest file; the ``pycon`` blocks of the other pages are doctests;
* every ``python -m`` command line on a page parses with the program's own parser, and the
  experiments page's run table starts exactly the published runs, the tasks page lists
  every built-in task, the usage page's table every option of print_dynamics and docs/README.md's
  layout every page;
* ``docs/_ext/qkov_docs.py``: the snippet reader, the pruning of stale API pages and the fencing
  of bare doctests.

None of these needs the site built (``test_docs_site.py`` builds it).
"""
from __future__ import annotations

import doctest
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
USAGE = DOCS / "usage.md"
sys.path.insert(0, str(DOCS / "_ext"))
import qkov_api  # noqa: E402  (the docs' API reference generator)
import qkov_docs  # noqa: E402  (the docs' own extension)
from _docs_conf import cli_parser, docs_conf, module_available  # noqa: E402

CONF = docs_conf()


def test_usage_examples():
    result = doctest.testfile(str(USAGE), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                              verbose=False, raise_on_error=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples in {USAGE} failed"
    assert result.attempted >= 10


# --------------------------------------------------------------------------------------------
# the docs' extension

def test_snippet_directive_rejects_missing_snippets(tmp_path):
    snippet = tmp_path / "x.tex"
    snippet.write_text("\\begin{equation}\n\\label{eq:x}\nL =\nx + 1\n\\end{equation}\n")
    assert qkov_docs.snippet_math(snippet) == "L = x + 1"
    (tmp_path / "bad.tex").write_text("L = x")
    with pytest.raises(ValueError, match="not an equation snippet"):
        qkov_docs.snippet_math(tmp_path / "bad.tex")


def test_stale_api_pages_are_pruned(tmp_path):
    """One page per public module: a page of a private, removed or unknown module, or one of a single name
    (names are documented on their module's page), is deleted."""
    for stem in ("numerics.dynamics.closed_form", "numerics.dynamics.closed_form.state_at_loss",
                 "numerics.dynamics._private", "numerics.no_such_module", "numerics.no_such_module.f"):
        (tmp_path / f"{stem}.rst").write_text("x")
    modules = set(qkov_api.public_modules(ROOT, "numerics"))
    removed = sorted(qkov_api.prune_stale_stubs(tmp_path, modules))
    assert removed == ["numerics.dynamics._private", "numerics.dynamics.closed_form.state_at_loss",
                       "numerics.no_such_module", "numerics.no_such_module.f"]
    assert [p.stem for p in tmp_path.glob("*.rst")] == ["numerics.dynamics.closed_form"]


def test_a_package_page_names_each_value_where_it_is_assigned():
    """A value has no ``__module__`` of its own (a Symbol's is SymPy's, an int's ``builtins``): the package's
    page names it in the module that assigns it, not in one that imports it, so that its row shows that
    module's ``#:`` comment and links to its page."""
    modules = {m for package in CONF["qkov_api_packages"] for m in qkov_api.public_modules(ROOT, package)}
    api = qkov_api.package_api(modules)
    assert "~symbols.m" in api["derivations.symbolic"] and "~symbols.RATES" in api["derivations.symbolic"]
    assert "~style.DPI" in api["numerics.output"]                  # numerics.output.files imports it
    assert "~derivations.core.vocabulary.PARAMETERIZATIONS" in api["numerics.verify"]   # from another package
    assert "~reduced_system.ReducedSystem" in api["numerics.dynamics"] and "model" in api["derivations.tasks.paper"]


def test_a_value_without_documentation_is_not_described_by_its_type():
    from sphinx.util.docstrings import prepare_docstring
    for value in (150, (1, 2), "label", sympy_symbol()):
        lines = prepare_docstring(type(value).__doc__)
        qkov_api.drop_type_docstring(None, "data", "x", value, {}, lines)
        assert lines == [], type(value)
    documented = ["Raster resolution of every figure of the package (dots per inch).", ""]
    qkov_api.drop_type_docstring(None, "data", "DPI", 150, {}, documented)
    assert documented[0].startswith("Raster")
    function_doc = prepare_docstring(len.__doc__)
    qkov_api.drop_type_docstring(None, "function", "len", len, {}, function_doc)
    assert function_doc


def test_examples_after_a_section_get_their_heading():
    """numpydoc reads up to the next heading as one section: examples right after Raises were exception names."""
    lines = ["Summary.", "", ">>> 1 + 1", "2", "", "Parameters", "----------", "x : int",
             "    >>> indented()", "", "Raises", "------", "ValueError", "    If so.", "", ">>> f('')", "Traceback"]
    qkov_api.examples_heading(None, "function", "f", None, {}, lines)
    assert lines[14:19] == ["", "Examples", "--------", ">>> f('')", "Traceback"] and lines[:9] == [
        "Summary.", "", ">>> 1 + 1", "2", "", "Parameters", "----------", "x : int", "    >>> indented()"]
    headed = ["Returns", "-------", "int", "", "Examples", "--------", ">>> f()"]
    qkov_api.examples_heading(None, "function", "f", None, {}, headed)
    assert headed == ["Returns", "-------", "int", "", "Examples", "--------", ">>> f()"]


def test_a_name_not_found_leads_where_it_is_documented():
    """The look-up of ``resolve_by_import``: a package's export at the page of its defining module, a value
    at the documented name of the same object, a bare type name at the one class of that name (none where
    two classes share it; a function of that name is no type)."""
    from types import SimpleNamespace
    documented = {name: SimpleNamespace(objtype=kind) for name, kind in [
        ("derivations.engine.task.Task", "class"), ("derivations.engine.reduce.reduce_task", "function"),
        ("derivations.core.vocabulary.PARAMETERIZATIONS", "data"), ("numerics.a.Twice", "class"),
        ("numerics.b.Twice", "exception"), ("numerics.c.Once", "class"), ("numerics.d.reduce_task", "class")]}
    domain = SimpleNamespace(objects=documented)
    cases = [(("derivations.engine.Task", None), "derivations.engine.task.Task"),      # a package's export
             (("Task", "derivations.engine.instance"), "derivations.engine.task.Task"),   # a module's import
             (("derivations.core.PARAMETERIZATIONS", None), "derivations.core.vocabulary.PARAMETERIZATIONS"),
             (("Task", None), "derivations.engine.task.Task"), (("Once", None), "numerics.c.Once"),
             (("Twice", None), None), (("reduce_task", None), "numerics.d.reduce_task")]
    assert [qkov_api._documented_name(domain, target, module, None) for (target, module), _ in cases] == \
        [home for _, home in cases]
    del documented["numerics.d.reduce_task"]            # the names changed: looked up among the new ones
    assert qkov_api._documented_name(domain, "reduce_task", None, None) is None


def sympy_symbol():
    import sympy
    return sympy.Symbol("x")


def test_fence_bare_doctests():
    text = "intro\n\n>>> 1 + 1\n2\n\nmore\n```bash\n>>> not doctest\n```\n"
    out = qkov_docs.fence_bare_doctests(text)
    assert out.count("```pycon") == 1
    assert "```pycon\n>>> 1 + 1\n2\n```" in out
    assert "```bash\n>>> not doctest\n```" in out


# --------------------------------------------------------------------------------------------
# the examples on the pages run

PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")
PYCON = re.compile(r"^```pycon\n(.*?)^```", flags=re.M | re.S)
# pages with fenced examples; usage.md is a bare doctest file (test_usage_examples)
PYCON_PAGES = [p for p in PAGES if PYCON.search(p.read_text(encoding="utf-8"))]


def test_every_page_with_examples_is_tested():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        if ">>>" in text:
            assert page in PYCON_PAGES or page.stem in CONF["qkov_bare_doctest_pages"], page


@pytest.mark.parametrize("page", PYCON_PAGES, ids=lambda p: p.name)
def test_pycon_examples_run(page):
    text = page.read_text(encoding="utf-8")
    blocks = PYCON.findall(text)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict = {}
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"{page.name}[{i}]", str(page), 0)
        runner.run(test, out=lambda s: None)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) in {page.name} failed"


def test_the_python_blocks_of_the_pages_run():
    """The ``python`` code blocks of README.md and docs/ (imports of the public API) run."""
    blocks = [(page.name, block) for page in [ROOT / "README.md", *PAGES]
              for block in re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), flags=re.M | re.S)]
    assert blocks
    for name, block in blocks:
        exec(compile(block, name, "exec"), {})


def unindented_blocks_in_lists(text: str) -> list:
    """Display math (``$$``) or a code fence written at column 0 after which the text goes on indented, as
    a list item's continuation: Markdown ends the list at the block, so the item's rest falls outside it."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        opener = lines[i]
        if opener == "$$" or opener.startswith("```"):
            close = next((j for j in range(i + 1, len(lines)) if lines[j] == ("$$" if opener == "$$" else "```")),
                         len(lines))
            after = next((line for line in lines[close + 1:] if line.strip()), "")
            if after.startswith("  ") and not after.lstrip().startswith(("- ", "* ", "$$", "```", "|")):
                found.append(f"line {i + 1}: {after.strip()[:40]}")
            i = close
        i += 1
    return found


def test_no_block_breaks_a_list_item():
    assert [(page.name, where) for page in [ROOT / "README.md", *PAGES]
            for where in unindented_blocks_in_lists(page.read_text(encoding="utf-8"))] == []
    assert unindented_blocks_in_lists("* item,\n\n$$\nx\n$$\n\n  more of the item\n") == ["line 3: more of the item"]
    assert unindented_blocks_in_lists("* item,\n\n  $$\n  x\n  $$\n\n  more of the item\n") == []

def _page_commands(page: Path):
    text = page.read_text(encoding="utf-8")
    required = re.findall(r"^```\{qkov-requires\}\s+(\S+)", text, flags=re.M)
    if any(not module_available(m) for m in required):
        return None
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S):
        block = block.replace("\\\n", " ")
        for line in block.splitlines():
            line = line.split("#", 1)[0].split("|", 1)[0].split(">", 1)[0].split("&&")[-1].strip()
            if line.startswith("python -m "):
                commands.append(shlex.split(line)[2:])
    return commands


def _parser_keys() -> dict:
    """The module run with ``python -m`` -> the key of its parser in ``qkov_cli_parsers`` (first one
    wins), by the program name the parser itself gives (``derivations.print_dynamics``'s parser lives in
    ``derivations.output.dynamics``)."""
    by_module = {}
    for key in CONF["qkov_cli_parsers"]:
        by_module.setdefault(cli_parser(CONF, key).prog.removeprefix("python -m "), key)
    return by_module


def test_every_program_has_its_parser_found():
    assert set(_parser_keys()) == {"derivations.print_dynamics", "derivations.latex", "derivations.catalog",
                                   "derivations.task_catalog", "numerics.verify", "numerics.figures",
                                   "numerics.experiments"}


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: p.name)
def test_command_lines_on_pages_parse(page):
    commands = _page_commands(page)
    if commands is None:
        pytest.skip(f"{page.name} describes a module that is not in this build")
    by_module = _parser_keys()
    checked = 0
    for module, *args in commands:
        if module not in by_module or not module_available(module):
            continue   # programs without a parser factory
        parser = cli_parser(CONF, by_module[module])
        try:
            parser.parse_args(args)
        except (Exception, SystemExit) as exc:  # the programs' parsers raise their own errors
            pytest.fail(f"{page.name}: `python -m {module} {shlex.join(args)}` does not parse: {exc}")
        checked += 1
    if page.name in ("cli.md", "usage.md", "README.md"):
        assert checked >= 5


def test_experiments_page_commands_are_the_published_runs():
    """Each row of the experiments page's run table starts exactly the published run."""
    from numerics.experiments.__main__ import COMMANDS, build_parser
    from numerics.experiments.reproduce import published_jobs

    text = (DOCS / "experiments.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)`[^|]*\|[^|]*\| `((?:fig2|fig3) [^`]*)`", text, flags=re.M)
    published = dict(published_jobs())
    assert {name for name, _ in rows} == set(published) - {"FACO", "CAFO", "CACO"}
    rows += [(name, f"fig2 --parameterization {name}") for name in ("FACO", "CAFO", "CACO")]
    for name, command in rows:
        args = build_parser().parse_args(shlex.split(command) + ["--workers", "1"])
        work, _ = COMMANDS[args.command](args)          # validates and configures; runs nothing
        cells = dict(zip(work.__code__.co_freevars, (c.cell_contents for c in work.__closure__)))
        job = published[name]
        assert cells["config"].to_dict() == job["config"], name
        if args.command == "fig2":
            assert cells["seeds"] == job["seeds"], name


def test_tasks_page_lists_every_built_in_task():
    """The page "Tasks" lists each built-in task of derivations.tasks, with its own parameters, once."""
    from derivations.tasks import TASKS, get_task

    text = (DOCS / "tasks.md").read_text(encoding="utf-8")
    section = text.split("## The built-in tasks", 1)[1].split("\n## ", 1)[0]
    terms = re.findall(r"^`([\w+-]+)`(?: \(parameters? ([^)]*)\))?$", section, flags=re.M)
    listed = {name: tuple(re.findall(r"`(\w+)`", params)) for name, params in terms}
    assert len(terms) == len(listed)
    assert listed == {name: tuple(get_task(name).parameters) for name in TASKS}


def test_usage_table_of_print_dynamics_names_every_option():
    """The option table of print_dynamics on docs/usage.md has a row for each option of its parser."""
    text = USAGE.read_text(encoding="utf-8")
    section = text.split("### `python -m derivations.print_dynamics`", 1)[1].split("\n### ", 1)[0]
    in_table = {option for row in re.findall(r"^\| (.*?) \|", section, flags=re.M)
                for option in re.findall(r"--[a-z][\w-]*", row)}
    parser = cli_parser(CONF, "print_dynamics")
    options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")} - {"--help"}
    assert in_table == options


def test_readme_chance_is_uniform_attention_on_the_authors_task():
    """README's Figure-2 caption: the relevant share of uniform attention over the 63 attended positions
    (seq_len 64), from the authors' task's class distributions."""
    import numpy as np

    from numerics.experiments.task_sampling import AUTHORS
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    count, positions, share, _, expected = re.search(
        r"chance (\d+)/(\d+) = ([\d.]+), uniform attention over the (\d+) positions: (\d+) expected relevant", text
    ).groups()
    attended = AUTHORS.own_seq_len - 1
    relevant = (AUTHORS.own_seq_len - 2) * (np.asarray(AUTHORS.probabilities) @ AUTHORS.relevant)
    # 62 x a sum of 50 products of probabilities in doubles: within 1e-14
    assert np.allclose(relevant, int(count), rtol=1e-14, atol=0) and count == expected and int(positions) == attended
    assert f"{int(count) / attended:.3f}" == share


def test_docs_readme_layout_names_every_page():
    """docs/README.md's layout table lists the site's pages: every docs/*.md but itself."""
    row = re.search(r"^\| (.*) \| the pages \|$", (DOCS / "README.md").read_text(encoding="utf-8"), flags=re.M)
    assert set(re.findall(r"`([\w.]+\.md)`", row.group(1))) == {p.name for p in PAGES}


def test_the_invariance_instances_the_pages_name_are_those_tested():
    """README's table and the derivation page say for which M the exact invariance check runs by default
    and under ``-m slow``: the instances of tests/derivations/tasks/test_derivations.py."""
    import importlib.util

    from derivations.core import PARAMETERIZATIONS
    path = ROOT / "tests" / "derivations" / "tasks" / "test_derivations.py"
    spec = importlib.util.spec_from_file_location("_invariance_instances", path)
    tests = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tests)
    fast = sorted({M for M, _ in tests.FAST_INSTANCES})
    slow = sorted({M for M, _ in tests.SLOW_INSTANCES} - set(fast))
    assert {p for _, p in tests.FAST_INSTANCES} == {p for _, p in tests.SLOW_INSTANCES} == set(PARAMETERIZATIONS)
    words = " and ".join(map(str, slow))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"exact SymPy zero for M = {', '.join(map(str, fast))} ({words} under `-m slow`), all four" in readme
    theory = " ".join((DOCS / "theory.md").read_text(encoding="utf-8").split())
    assert f"for M = {', '.join(map(str, fast))} in all four parameterizations in the default test run; " \
           f"M = {' and M = '.join(map(str, slow))}, in all four, are marked `slow`" in theory
    assert f"::test_family_invariant_exactly_on_explicit_instance` (M = {', '.join(map(str, fast))})" in theory
    assert f"Exhaustive variants (explicit instances with M = {words}," in readme


def test_the_api_page_count_docs_readme_gives():
    """docs/README.md's count of API pages (one per public module) is within 10 % of the public modules."""
    modules = [m for package in CONF["qkov_api_packages"] for m in qkov_api.public_modules(ROOT, package)]
    quoted = int(re.search(r"build \(~(\d+) API pages, one per public module\)",
                           " ".join((DOCS / "README.md").read_text(encoding="utf-8").split())).group(1))
    assert abs(quoted - len(modules)) <= 0.1 * len(modules), (quoted, len(modules))
