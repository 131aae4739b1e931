r"""The LaTeX output of :mod:`derivations.latex`: fresh, compilable, and faithful.

(a) ``docs/generated`` equals a fresh ``python -m derivations.latex`` run, byte for byte.
(b) The document compiles with pdflatex (twice) without errors or undefined
    references (skipped only when ``pdflatex`` is not installed).
(c) Every equation snippet parses back with ``parse_latex(..., backend="lark")``
    to an expression equal to the catalog's (numerically, at random points).

Mappings applied to the snippet text before parsing (:data:`TEXT_MAPPING`),
because the lark grammar of SymPy 1.14 lacks these constructs:

* ``\,`` (the product sign chosen in ``derivations.output.tex.MUL_SYMBOL``) -> ``\cdot``:
  the grammar accepts juxtaposition only in a few contexts;
* subscripts ``_{OV,0}`` (initial values) -> ``_{OVzero}``: the grammar allows
  only letters in a subscript;
* ``\operatorname{Ei}{\left(x\right)}`` -> ``E_{i}\left(x\right)``, parsed as an
  applied undefined function ``E_{i}`` and mapped back to ``sympy.Ei``.

Mappings applied to the parsed expression: the undefined function ``omega``
(from ``\omega\left(z\right)``) -> ``wright_omega``, ``E_{i}`` -> ``Ei``, the
symbol ``e`` -> ``E``, and every parsed symbol to the catalog symbol whose
printed form parses to it. Where the grammar is ambiguous (``f(x)`` as a call
or a product) the parser returns all readings; one must match.

The single matrix result ``factorization.induced_flow`` is compared as its
commutative shadow (matrices -> symbols, ``X^T`` -> ``X**T``, as the parser
reads them): coefficients and factors are checked, factor order is not.
No result is excluded.
"""
import functools
import itertools
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp

from derivations.output import latex as L
from derivations.output.tex import tex
from derivations.catalog import results
from derivations.symbolic import wright_omega

ROOT = Path(__file__).resolve().parents[3]
GENERATED = ROOT / "docs" / "generated"


def _files(base: Path) -> dict:
    return {p.relative_to(base).as_posix(): p.read_bytes() for p in sorted(base.rglob("*.tex"))}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("latex")
    L.main(["--output", str(out)])
    return out


def test_generated_output_is_fresh(fresh):
    committed, new = _files(GENERATED), _files(fresh)
    assert committed, "docs/generated is empty: run python -m derivations.latex --output docs/generated"
    stale = sorted(k for k in committed.keys() | new.keys() if committed.get(k) != new.get(k))
    assert not stale, ("docs/generated is stale (regenerate with "
                       f"`python -m derivations.latex --output docs/generated`): {stale[:10]}")


def test_output_is_deterministic(fresh, tmp_path):
    L.write(tmp_path)
    assert _files(tmp_path) == _files(fresh)


def test_the_document_has_the_attention_section_once(fresh):
    """The section "Where attention goes" (derivations/output/latex_attention.py), once."""
    assert (fresh / L.DOCUMENT_NAME).read_text().count(r"\section{Where attention goes}") == 1


def test_every_result_has_a_snippet_and_a_label(fresh):
    doc = (fresh / L.DOCUMENT_NAME).read_text()
    for name in results():
        assert (fresh / L.SNIPPET_DIR / L.snippet_filename(name)).is_file()
        assert doc.count(r"\label{eq:%s}" % name) == 1, name
    assert r"\input" not in doc
    packages = re.findall(r"\\usepackage(?:\[[^]]*\])?\{([^}]*)\}", doc)
    assert sorted(packages) == ["amsmath", "amssymb", "amsthm"]


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed (apt-get install texlive-latex-base)")
def test_document_compiles(fresh, tmp_path):
    shutil.copy(fresh / L.DOCUMENT_NAME, tmp_path)
    for _ in range(2):  # second run resolves references
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", L.DOCUMENT_NAME],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-3000:]
    log = (tmp_path / "qkov_dynamics.log").read_text(errors="replace")
    assert (tmp_path / "qkov_dynamics.pdf").is_file()
    assert "undefined references" not in log
    assert not re.search(r"Reference `[^']*' on page \d+ undefined", log)
    assert "! " not in log


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed (apt-get install texlive-latex-base)")
def test_letters_that_are_not_ascii_compile(tmp_path):
    """A task file's group names, parameters and description may hold any letter: pdflatex stopped on a group
    named ρ ("Unicode character ρ (U+03C1) not set up for use with LaTeX"). The document declares each such
    character (Greek as its math command, accented Latin by accents, anything else by its code point), in
    text and in math; the built-in document is ASCII and gets no declaration."""
    from derivations.output.tex import declare_unicode
    body = "$W_{ρ} + x_{Ω} + y_{ς} + z_{Α}$, café, ð, 中 and ρ in text, $\\frac{ñ}{2}$"
    doc = "\\documentclass{article}\n\\usepackage{amsmath}\n\\begin{document}\n%s\n\\end{document}\n" % body
    assert declare_unicode(doc.replace(body, "x")) == doc.replace(body, "x")
    (tmp_path / "u.tex").write_text(declare_unicode(doc), encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "u.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "not set up" not in proc.stdout, proc.stdout[-3000:]
    assert r"\DeclareUnicodeCharacter{03C1}{\ensuremath{\rho}}" in declare_unicode(doc)


# ---------------------------------------------------------------- parse back
TEXT_MAPPING = [
    (re.compile(r"\\,"), r" \\cdot "),
    # matrix products print juxtaposed (MatMul ignores mul_symbol), and a
    # negative term as "+ -"
    (re.compile(r"(?<=[A-Z}]) (?=[A-Z]\b)"), r" \\cdot "),
    (re.compile(r"\+ -"), "-"),
    (re.compile(r"_\{([A-Za-z]+),0\}"), r"_{\1zero}"),
    (re.compile(r"\\operatorname\{Ei\}\{(\\left\(.*?\\right\))\}"), r"E_{i}\1"),
]


def _prepare(text: str) -> str:
    for pattern, repl in TEXT_MAPPING:
        text = pattern.sub(repl, text)
    return text


def _parse_all(text: str) -> list:
    """All readings of ``text`` (lark returns a ``_ambig`` tree when ambiguous)."""
    from sympy.parsing.latex import parse_latex
    out, todo = [], [parse_latex(_prepare(text), backend="lark")]
    while todo:
        node = todo.pop()
        if isinstance(node, sp.Basic):
            out.append(node)
        elif getattr(node, "data", None) == "_ambig":
            todo.extend(node.children)
    return out


@functools.lru_cache(maxsize=None)
def _parsed_name(x) -> str:
    (parsed,) = _parse_all(tex(x))
    return str(parsed)


def _symbol_map(expr) -> dict:
    """Parsed symbol name -> catalog symbol, for the free symbols of ``expr``."""
    mapping = {"e": sp.E}
    mapping.update({_parsed_name(x): x for x in expr.free_symbols if isinstance(x, sp.Symbol)})
    return mapping


FUNCTIONS = {"omega": wright_omega, "E_{i}": sp.Ei}


def _normalize(parsed, mapping):
    """Catalog symbols and functions in a parsed expression; ``None`` for a
    reading that applies an unknown function (e.g. ``t(...)``, a product misread)."""
    parsed = parsed.xreplace({s: mapping.get(str(s), s) for s in parsed.free_symbols})
    calls = parsed.atoms(sp.core.function.AppliedUndef)
    if any(type(f).__name__ not in FUNCTIONS for f in calls):
        return None
    return parsed.replace(lambda f: isinstance(f, sp.core.function.AppliedUndef),
                          lambda f: FUNCTIONS[type(f).__name__](*f.args))


def _commutative_shadow(expr):
    """Matrix expression -> commutative scalar expression as the parser reads it."""
    if isinstance(expr, sp.MatrixSymbol):
        return sp.Symbol(expr.name)
    if isinstance(expr, sp.Transpose):
        return _commutative_shadow(expr.arg) ** sp.Symbol("T")
    if isinstance(expr, sp.MatMul):
        return sp.Mul(*map(_commutative_shadow, expr.args))
    if isinstance(expr, sp.MatAdd):
        return sp.Add(*map(_commutative_shadow, expr.args))
    return expr


def _rows(snippet: str):
    """``[(lhs_text or None, expression_text), ...]`` from the snippet layout."""
    body = snippet.splitlines()
    body = body[body.index(next(x for x in body if x.startswith(r"\label"))) + 1:body.index(r"\end{equation}")]
    body = [x for x in body if x not in (r"\begin{aligned}", r"\end{aligned}", "&")]
    rows, cur = [], []
    for line in body + [r"\\"]:
        if line == r"\\":
            rows.append(cur)
            cur = []
        else:
            cur.append(line)
    out = []
    for row in rows:
        assert len(row) in (1, 2), row
        lhs = None
        if len(row) == 2:
            lhs = re.sub(r"\s*&?(=|\\sim)$", "", row[0])
            assert lhs != row[0], row
        out.append((lhs, row[-1]))
    return out


def _value(expr, point):
    v = expr.xreplace(point).rewrite(sp.LambertW)
    return complex(sp.N(v, 20))


def _equal_numerically(a, b, symbols, rng):
    if a == b:
        return True
    for _ in range(2):
        point = {x: (sp.Integer(rng.randint(2, 5)) if x.name == "M" else sp.Float(rng.uniform(0.3, 2.0), 20))
                 for x in symbols}
        va, vb = _value(a, point), _value(b, point)
        if abs(va - vb) > 1e-9 * max(1.0, abs(vb)):
            return False
    return True


#: One snippet of each kind of LaTeX the writer produces (plain quotient, reduced ODE in mu and in
#: alpha, unbalanced factor rates, first integral, orbits with Ei and Wright omega, abbreviations,
#: a matrix flow, an equation, a derivative's sign, a limit, an integrand): the default suite
#: reads these back; every other snippet is the same check on another result (-m slow).
REPRESENTATIVE_SNIPPETS = frozenset({
    "model.loss", "CACO.dmu_OV_dt", "FACO.dmu_QK_dt_alpha", "FAFO.dmu_QK_dt_unbalanced_alpha",
    "CAFO.first_integral", "CAFO.orbit", "FACO.orbit", "CACO.alpha_on_orbit", "factorization.induced_flow",
    "sharpness.state_equation", "sharpness.sign.dmu_QK/dr", "asymptotics.late.loss_times_t_limit",
    "asymptotics.time_integrand", "asymptotics.early.mu_OV_of_t"})


def test_representative_snippets_are_results():
    assert REPRESENTATIVE_SNIPPETS <= set(results())


@pytest.mark.parametrize("name", [pytest.param(name, marks=() if name in REPRESENTATIVE_SNIPPETS
                                               else pytest.mark.slow) for name in sorted(results())])
def test_snippet_parses_back(name, fresh):
    expected = results()[name]
    snippet = (fresh / L.SNIPPET_DIR / L.snippet_filename(name)).read_text()
    rows = _rows(snippet)
    if isinstance(expected, sp.MatrixExpr):
        expected = _commutative_shadow(expected)
    mapping = _symbol_map(expected)
    # every reading of each abbreviation (ambiguous readings are tried in turn)
    abbreviations = []
    for lhs, text in rows[1:]:
        (sym,) = _parse_all(lhs)
        subs = list(dict.fromkeys(e for e in (_normalize(e, mapping) for e in _parse_all(text))
                                  if e is not None))
        abbreviations.append([(sym, sub) for sub in subs])
    if isinstance(expected, sp.Equality):
        expected = expected.lhs - expected.rhs
    rng = random.Random(name)
    symbols = sorted(expected.free_symbols, key=str)
    readings = []
    for reading in _parse_all(rows[0][1]):
        reading = _normalize(reading, mapping)
        if reading is None:
            continue
        for choice in itertools.product(*abbreviations):
            value = reading
            try:  # a misreading may put a relation inside a sum
                for _ in range(len(choice) + 1):
                    value = value.xreplace(dict(choice))
            except TypeError:
                continue
            if isinstance(value, sp.Equality):
                value = value.lhs - value.rhs
            readings.append(value)
    assert readings, f"{name}: no parse"
    assert any(r.free_symbols <= expected.free_symbols and _equal_numerically(r, expected, symbols, rng) for r in readings), (name, readings)


def _bad_outputs(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    snip_file = tmp_path / "has_snippet_file"
    snip_file.mkdir()
    (snip_file / L.SNIPPET_DIR).write_text("x")
    return [("", "must name a directory"), (str(a_file), "cannot take files"),
            (str(a_file / "sub"), "cannot take files"), (str(snip_file), "cannot take files"),
            ("/proc/qkov_out", "cannot take files"), (str(tmp_path / ("a" * 300)), "cannot take files"),
            (str(tmp_path / "/".join(["b" * 200] * 25)), "cannot take files")]


def test_bad_output_one_line_exit_2_nothing_written(tmp_path, capsys, monkeypatch):
    """Checked before any work (derivations.core.output.prepare_output_dir): the
    document is never built for a bad path, and nothing is left behind."""
    from derivations.output import latex as builder

    def no_work():
        raise AssertionError("the document was built for a bad output path")
    monkeypatch.setattr(builder, "document", no_work)
    bad = _bad_outputs(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for out, needle in bad:
        assert L.main(["--output", out]) == 2, out
        err = capsys.readouterr().err
        assert err.startswith("latex: error: --output") and needle in err, (out, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (out, err)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_cli_parser_has_help_on_every_option():
    for action in L.build_parser()._actions:
        assert action.help, action.dest


def test_a_task_that_cannot_be_derived_leaves_no_directory(tmp_path, monkeypatch, capsys):
    """The output directory is created (and probed) before any work; when the document cannot be
    built (a task file whose reduction fails or exceeds its time bound), exit 2 and the directories
    the probe created are gone again: nothing written."""
    from derivations.output import latex

    def fails(tasks=()):
        raise ValueError("task 'x' (CACO): the symbolic reduction did not finish within 60 s")
    monkeypatch.setattr(latex, "document", fails)
    (tmp_path / "kept").mkdir()
    assert latex.main(["--output", str(tmp_path / "kept" / "a" / "b")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir()] == ["kept"] and list((tmp_path / "kept").iterdir()) == []


@pytest.mark.parametrize("bad", [None, 0.0, float("nan"), [], True, b"out"])
def test_write_refuses_an_output_that_is_not_a_path(tmp_path, monkeypatch, bad):
    """``write(None)`` wrote the document into a directory named ``None`` (any object was made a path by
    ``str``): now a ValueError naming output, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="^output must be a directory path"):
        L.write(bad)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["nope", None, []])
def test_a_snippet_of_no_result_names_where_the_results_are_listed(name):
    """"nope" was a KeyError."""
    from derivations.output import snippet
    with pytest.raises(ValueError, match=r"^name must be a result's name in derivations.catalog.records\(\) "
                                         r"\(\d+ results; python -m derivations.catalog lists them\); got "):
        snippet(name)


def test_plain_text_is_escaped_so_that_a_task_description_compiles():
    """A task file's description is free text: ``$``, ``~``, a brace that groups nothing and a control character
    made ``derivations.latex --task PATH`` write a document pdflatex stops on ("Extra }, or forgotten $", "Text line
    contains an invalid character"). Balanced braces still group, as in the built-in ``u_{n_c}``."""
    from derivations.output.tex import escape
    assert escape("costs $5 ~ 10% a->b") == r"costs \$5 \textasciitilde{} 10\% a$\to$b"
    assert escape("a } b { c") == r"a \} b \{ c"
    assert escape("u_{n_c} and {a {b}}") == r"u\_{n\_c} and {a {b}}"
    assert escape("a\x00b\x1b[31m\x7f\nc\\d") == "a b [31m \nc\\textbackslash{}d"


def _task_file(path, name):
    path.write_text(f'name = "{name}"\nquery = "q"\n[[groups]]\nname = "q"\nper_class = true\n[[groups]]\nname = "r"\n'
                    'per_class = true\nmultiplicity = "m"\n[[groups]]\nname = "z"\nper_class = false\nembedded = false\n'
                    'multiplicity = "n"\n')
    return str(path)


def test_a_task_given_twice_has_one_section_and_two_of_one_label_are_refused(tmp_path, monkeypatch, capsys):
    """``--task F --task F`` wrote F's section twice, and tasks named ``p_g`` and ``p-g`` two sections both labelled
    ``sec:task.p-g`` (LaTeX: multiply defined labels; their snippets one file). A task given twice now has one
    section; two of one label are refused before any work, one line, nothing written."""
    from derivations.output import latex
    from derivations.output.latex_sections import section_tasks
    from derivations.tasks import TASKS, get_task

    path = _task_file(tmp_path / "pg.toml", "pg")
    assert [t.name for t in section_tasks([get_task(path), get_task(path), TASKS["paper"]])] == [*TASKS, "pg"]

    def no_work(tasks=()):
        raise AssertionError("the document was built")
    monkeypatch.setattr(latex, "document", no_work)
    argv = ["--output", str(tmp_path / "out"), "--task", _task_file(tmp_path / "a.toml", "p_g"),
            "--task", _task_file(tmp_path / "b.toml", "p-g")]
    assert latex.main(argv) == 2
    assert capsys.readouterr() == ("", "latex: error: --task: tasks 'p_g' and 'p-g' are different tasks whose "
                                       "sections would both be labelled sec:task.p-g: give them distinct names\n")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("in_the_way", [L.DOCUMENT_NAME, f"{L.SNIPPET_DIR}/CACO.alpha_on_orbit.tex"])
def test_a_directory_in_the_place_of_a_file_is_refused_before_a_file_is_written(tmp_path, capsys, in_the_way):
    """A directory named as the document or a snippet (the atomic write cannot replace it) was found by the
    write, after the document was written (exit 1, naming the temporary file): now one line naming --output and
    the file, exit 2, nothing written, the directories made for the run removed again."""
    out = tmp_path / "out"
    (out / in_the_way).mkdir(parents=True)
    assert L.main(["--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"latex: error: --output {str(out)!r} has a {in_the_way} that is a directory, where latex "
                   "writes that file; move it away or choose another directory\n")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == sorted(
        {in_the_way, *(p.as_posix() for p in Path(in_the_way).parents if p != Path("."))})


def test_a_write_that_fails_names_the_file_not_its_temporary(tmp_path, capsys, monkeypatch):
    """An atomic write's rename that fails is one line naming the file it replaces (exit 1)."""
    from derivations.core import atomic_file

    def fails(path, text, **kwargs):
        raise IsADirectoryError(21, "Is a directory", str(path.parent / f".{path.name}.x.tmp"), None, str(path))
    monkeypatch.setattr(atomic_file, "atomic_write_text", fails)
    assert L.main(["--output", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"latex: error: cannot write {tmp_path / L.DOCUMENT_NAME}: Is a directory\n"
