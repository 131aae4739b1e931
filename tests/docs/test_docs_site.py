"""The documentation site: it builds warning-free and offline, shows what the code is, and renders.

The site is built once per test session (``python -m sphinx -W --keep-going -b html docs``, by
``tests/_docs_build.py``: a failed build shows its warnings and traceback, its whole log is kept)
into a temporary directory, from scratch. The checks:

* the build passes with warnings as errors, and every entry of conf.py's
  ``qkov_known_docstring_issues`` (docstring problems of modules being rewritten, not
  counted as warnings) still produces a warning, so the list cannot go stale;
* every public module of ``derivations`` and ``numerics`` has a reference page, which documents each
  of its public functions and classes, shows no raw markup, describes no value by its type's docstring
  and links the names it imports;
* the equations of the derivation page are the generated LaTeX snippets, not typed ones;
* the command-line reference lists every option of every parser;
* no page loads a script, style, image or font from another host, and the intersphinx
  inventories shipped in ``docs/_inventories`` are valid;
* headless Chromium renders the landing page, the derivation page and an API page: non-blank
  screenshots, the formulas typeset by MathJax (served from the site's own ``_static/mathjax``)
  with no TeX error, and no failed resource load (served by a local HTTP server on 127.0.0.1
  that records every request);
* in the light and in the dark theme, the formulas are text in the colour of the page's text
  (dark on light, light on dark), not images.

One headless Chromium opens every page of the module (``tests/_chromium.py``, over the DevTools protocol).

The examples on the pages, which need no build, are run by ``test_docs.py``.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import importlib
import importlib.util
import inspect
import io
import os
import re
import shutil
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit, unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import qkov_api  # noqa: E402  (the docs' API reference: module discovery)
import qkov_docs  # noqa: E402  (the docs' own extension: snippet reader)
from _chromium import Browser, failed_loads  # noqa: E402
from _docs_build import run_build, sphinx_command  # noqa: E402
from _docs_conf import cli_parser, docs_conf, module_available  # noqa: E402

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


CONF = docs_conf()


# --------------------------------------------------------------------------------------------
# the build (once per session)

class Site:
    def __init__(self, html: Path, seconds: float, log: str):
        self.html, self.seconds, self.log = html, seconds, log

    def page(self, name: str) -> str:
        return (self.html / name).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    if not module_available("sphinx-mathjax-offline"):
        pytest.skip("the site's math needs the package sphinx-mathjax-offline (pip install '.[docs]')")
    out = tmp_path_factory.mktemp("docs-site")
    # alone: -j auto, pages read and written on every core; beside other pytest-xdist workers: one
    # process (-j auto then costs more CPU than it saves)
    jobs = "1" if os.environ.get("PYTEST_XDIST_WORKER") else "auto"
    seconds, cpu, log = run_build(sphinx_command(DOCS, out, jobs), ROOT, out / "sphinx-build.log")
    print(f"\ndocs site built in {seconds:.1f} s ({cpu:.1f} s of CPU)")
    return Site(out / "html", seconds, log)


def test_build_is_warning_free_and_known_issue_list_is_current(site):
    report = (site.html / "known-docstring-issues.txt").read_text(encoding="utf-8")
    counts = dict(re.findall(r"^([\w.]+): (\d+) warning", report, flags=re.M))
    stale = [name for name in CONF["qkov_known_docstring_issues"] if int(counts.get(name, 0)) == 0]
    assert not stale, (f"these docstrings no longer produce warnings; remove them from "
                       f"qkov_known_docstring_issues in docs/conf.py: {stale}")
    assert "WARNING" not in site.log and "ERROR" not in site.log, site.log[-4000:]


# --------------------------------------------------------------------------------------------
# API reference

def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items()
                 if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
                 and getattr(obj, "__module__", None) == module.__name__]
    return [n for n in names
            if inspect.isfunction(getattr(module, n, None)) or inspect.isclass(getattr(module, n, None))]


def _documents(generated: Path, module: str, name: str) -> bool:
    """Whether the page of ``module`` documents ``name`` (the anchor Sphinx gives a documented object)."""
    page = generated / f"{module}.html"
    return page.is_file() and f'id="{module}.{name}"' in page.read_text(encoding="utf-8")


def test_every_public_function_and_class_has_a_reference_entry(site):
    """Each public module has a page, and each public function and class is documented on the page of the
    module that defines it."""
    generated = site.html / "api" / "generated"
    missing, count = [], 0
    for package in CONF["qkov_api_packages"]:
        for name in qkov_api.public_modules(ROOT, package):
            if not (generated / f"{name}.html").is_file():
                missing.append(name)
            module = importlib.import_module(name)
            for obj in _public_names(module):
                count += 1
                value = getattr(module, obj, None)
                if value is None and hasattr(module, "__path__"):
                    value = importlib.import_module(f"{name}.{obj}")   # a submodule in __all__
                if inspect.ismodule(value):
                    continue      # a module: checked as one of the public modules
                home = getattr(value, "__module__", name)
                if hasattr(module, "__path__") and home != name:
                    # a package's API: documented on the page of the module defining it
                    if home.startswith(name + ".") and not _documents(generated, home, obj):
                        missing.append(f"{home}.{obj}")
                elif not _documents(generated, name, obj):
                    missing.append(f"{name}.{obj}")
    assert not missing, f"not documented on its module's page: {missing}"
    assert count >= 50
    api_index = site.page("api/index.html")
    assert "numerics.dynamics.closed_form" in api_index and "derivations.tasks.paper.reduction" in api_index


def test_api_pages_show_no_raw_markup_and_no_type_docstrings(site):
    """Not "Symbol class is used to create symbolic variables." for each of 30 symbols, or "int([x]) -> integer",
    but a value's ``#:`` comment and link; examples after Raises, not exception names (``>>> :obj:`import```)."""
    import sympy
    from html import unescape
    generic = [inspect.cleandoc(t.__doc__).splitlines()[0] for t in (int, float, str, tuple, list, dict, sympy.Symbol)]
    offenders = [(page.name, text) for page in (site.html / "api" / "generated").glob("*.html")
                 for text in generic + [":obj:`", ":class:`"] if text in unescape(page.read_text(encoding="utf-8"))]
    assert not offenders, offenders
    core, probe = (site.page(f"api/generated/derivations.core{n}.html") for n in ("", ".output"))
    assert 'href="derivations.core.vocabulary.html#derivations.core.vocabulary.PARAMETERIZATIONS"' in core
    assert "Examples" in probe


def dead_table_rows(html: str) -> list:
    """The names in the first column of a page's autosummary tables that link to no entry."""
    rows = [row for table in re.findall(r'<table class="autosummary.*?</table>', html, flags=re.S)
            for row in re.findall(r"<tr[^>]*><td><p>(.*?)</p></td>", table, flags=re.S)]
    return [re.sub(r"<.*?>", "", row) for row in rows if "<a " not in row]


def test_every_api_table_row_links_to_its_entry(site):
    """Each name a package's or module's table lists (the symbols m, n, b, M of derivations.symbolic, a
    value of a module's __all__ without a #: comment) links to its entry on its module's page."""
    dead = {page.name: names for page in (site.html / "api" / "generated").glob("*.html")
            if (names := dead_table_rows(page.read_text(encoding="utf-8")))}
    assert dead == {}
    assert dead_table_rows('<table class="autosummary longtable table"><tbody><tr class="row-odd"><td><p><code>m'
                           '</code></p></td><td><p></p></td></tr></tbody></table>') == ["m"]

def test_no_page_shows_an_empty_navigation_column(site):
    """The pages (docs/*.md, no section navigation of their own) hide the theme's primary sidebar on wide
    screens, as the API pages do, instead of an empty "Section Navigation" column."""
    pages = [p.stem for p in DOCS.glob("*.md") if p.name != "README.md"] + ["api/generated/numerics.dynamics"]
    hidden = 'class="bd-sidebar-primary bd-sidebar hide-on-wide"'
    shown = [page for page in pages if hidden not in site.page(f"{page}.html")]
    assert shown == []

def test_reference_pages_show_the_docstrings_and_link_to_numpy(site):
    page = site.page("api/generated/numerics.dynamics.closed_form.html")
    assert 'id="numerics.dynamics.closed_form.state_at_loss"' in page and "Parameters" in page and "Returns" in page
    assert "https://numpy.org/doc/stable/glossary.html#term-array_like" in page
    model = site.page("api/generated/derivations.tasks.paper.model.html")
    assert "derivations.tasks.paper.model.family" in model
    imports = site.page("api/generated/derivations.engine.instance.html")   # names it imports: links
    assert 'href="derivations.engine.task.html#derivations.engine.task.Task"' in imports
    assert "crossover.html#numerics.dynamics.crossover.boundary" in site.page("cli.html")


def test_shipped_inventories_are_valid_and_fresh():
    """intersphinx reads only files shipped in docs/_inventories (the build has no network),
    and each equals what build_inventories.py writes from its tables."""
    from sphinx.util.inventory import InventoryFile
    sys.path.insert(0, str(DOCS / "_inventories"))
    try:
        import build_inventories
    finally:
        sys.path.remove(str(DOCS / "_inventories"))
    assert set(build_inventories.PROJECTS) == set(CONF["intersphinx_mapping"])
    for key, (base, path) in CONF["intersphinx_mapping"].items():
        assert Path(path).parent == DOCS / "_inventories", (key, path)
        data = Path(path).read_bytes()
        project, version, entries = build_inventories.PROJECTS[key]
        assert data == build_inventories.inventory_bytes(project, version, entries), (
            f"{path} is stale: run python docs/_inventories/build_inventories.py")
        inv = InventoryFile.load(io.BytesIO(data), base, lambda a, b: a + b)
        items = [(role, name, item) for role, entries in inv.data.items()
                 for name, item in entries.items()] if hasattr(inv, "data") else \
                [(role, name, item) for role, entries in inv.items() for name, item in entries.items()]
        assert items, f"{path} is empty"
        for role, name, item in items:
            uri = item.uri if hasattr(item, "uri") else item[2]
            assert uri.startswith(base), (key, name, uri)
            assert "$" not in uri, (key, name, uri)


# --------------------------------------------------------------------------------------------
# the derivation page: equations from the generated snippets

def _equation_names(text):
    return re.findall(r"^```\{qkov-equation\}\s+(\S+)", text, flags=re.M)


def test_derivation_equations_are_the_generated_snippets(site):
    theory = (DOCS / "theory.md").read_text(encoding="utf-8")
    names = _equation_names(theory)
    assert len(names) >= 15
    assert "$$" not in theory, "display equations on the derivation page must come from snippets"
    page = site.page("theory.html")
    from html import unescape
    # each display equation's TeX, as sphinx.ext.mathjax writes it for MathJax to typeset
    alts = [unescape(a) for a in re.findall(r'<div class="math[^"]*"[^>]*>(.*?)</div>', page, flags=re.S)]
    snippets = DOCS / CONF["qkov_snippet_dir"]
    for name in names:
        body = qkov_docs.snippet_math(snippets / f"{name}.tex")
        assert any(body.strip() in alt for alt in alts), f"snippet {name} not displayed on theory.html"
        anchor = "equation-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        assert f'id="{anchor}"' in page, f"no numbered equation target for {name}"


# --------------------------------------------------------------------------------------------
# command-line reference

def test_cli_reference_lists_every_option(site):
    page = site.page("cli.html")
    for key, (module, func) in CONF["qkov_cli_parsers"].items():
        if not module_available(module):
            assert module in CONF["qkov_optional_modules"]
            assert f"python -m {module}" in page   # the visible note
            continue
        parser = cli_parser(CONF, key)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue   # sphinx-argparse leaves out -h/--help
            for option in action.option_strings:
                assert option in page, f"{module}: option {option} missing from cli.html"


# --------------------------------------------------------------------------------------------
# offline: nothing loaded from another host

class _Resources(HTMLParser):
    LOADING = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
               "audio": "src", "embed": "src", "object": "data", "input": "src"}

    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "link" and attrs.get("href"):
            self.urls.append((tag, attrs["href"]))
        attr = self.LOADING.get(tag)
        if attr and attrs.get(attr):
            self.urls.append((tag, attrs[attr]))
        if attrs.get("srcset"):
            self.urls.append((tag, attrs["srcset"]))
        if attrs.get("style") and "url(" in attrs["style"]:
            self.urls.append((tag, attrs["style"]))


#: A start tag (quoted attribute values may hold ">") that can load something: one of
#: ``_Resources``' loading tags, or any tag with a ``style`` or ``srcset`` attribute. Every tag
#: ``_Resources`` reports a URL of is one of these (inside a script or a comment too, where the
#: parser sees none: more, never fewer), so a page is parsed by its loading tags alone, not whole.
_ATTRIBUTES = r"""(?:[^>"']|"[^"]*"|'[^']*')*"""
_LOADING_TAG = re.compile(r"<(?:(?:script|img|iframe|source|video|audio|embed|object|input|link)\b" + _ATTRIBUTES
                          + r"""|[a-zA-Z][\w:-]*\s(?:[^>"']|"[^"]*"|'[^']*')*?\b(?:style|srcset)\s*="""
                          + _ATTRIBUTES + ")>", re.IGNORECASE)


def _loaded_urls(html: str) -> list[tuple[str, str]]:
    """``(tag, url)`` of every resource ``html`` loads: its loading tags, each parsed alone."""
    parser = _Resources()
    for tag in _LOADING_TAG.finditer(html):
        parser.feed(tag.group(0))
        parser.reset()                   # a lone <script ...> must not swallow the next tag as script text
    return parser.urls


def _external(url: str) -> bool:
    if url.strip("'\" ").startswith("data:"):
        return False   # inline data (the theme's SVG icons name the SVG namespace URL)
    return bool(re.search(r"(^|[\s(,'\"])(https?:)?//", url))


def test_external_resource_detection():
    page = ('<script src="https://cdn.example.org/x.js"></script><link rel="stylesheet" '
            'href="//fonts.example.org/f.css"><img src="_images/a.png"><a href="https://x.org">'
            '<img src="data:image/svg+xml,%3Csvg xmlns=\'http://www.w3.org/2000/svg\'/%3E">'
            '<script>let a = 1 > 0;</script><div title="a > b" style="background: url(//x.org/b.png)">'
            '<picture><source\n srcset="https://x.org/c.webp 2x"></picture><span srcset="//x.org/d.png">')
    parser = _Resources()
    parser.feed(page)
    external = [url for _tag, url in parser.urls if _external(url)]
    assert external == ["https://cdn.example.org/x.js", "//fonts.example.org/f.css",
                        "background: url(//x.org/b.png)", "https://x.org/c.webp 2x", "//x.org/d.png"]
    assert _loaded_urls(page) == parser.urls       # the loading tags alone: the same URLs


def test_no_page_loads_anything_from_another_host(site):
    offenders = []
    pages = list(site.html.rglob("*.html"))
    assert len(pages) > 50
    for page in pages:
        offenders += [(str(page.relative_to(site.html)), tag, url)
                      for tag, url in _loaded_urls(page.read_text(encoding="utf-8")) if _external(url)]
    for css in site.html.rglob("*.css"):
        for url in re.findall(r"url\(([^)]*)\)", css.read_text(encoding="utf-8", errors="replace")):
            if _external(url.strip("'\" ")):
                offenders.append((str(css.relative_to(site.html)), "css", url))
    assert not offenders, f"resources from other hosts: {offenders[:10]}"


def _shows_path(text, path) -> bool:
    """Whether ``text`` holds ``path`` as a whole name (not the start of a longer one)."""
    return re.search(re.escape(str(path)) + r"(?![\w.-])", text) is not None


def test_the_path_is_found_only_as_a_whole_name():
    assert _shows_path("at /tmp/x/docs", "/tmp/x") and _shows_path("'/tmp/x'", "/tmp/x")
    assert not _shows_path("'/tmp/xdg/qkov'", "/tmp/x") and not _shows_path("/tmp/x.1", "/tmp/x")


def test_no_page_shows_where_the_site_was_built(site):
    """The pages are the same wherever the checkout is: no value or default shows its absolute path (a
    path computed from ``__file__`` is shown by name, its value hidden). The path is a whole name: a checkout
    in ``/tmp/x`` is not found in an example's ``/tmp/xdg``."""
    shown = [str(page.relative_to(site.html)) for page in site.html.rglob("*.html")
             if _shows_path(page.read_text(encoding="utf-8"), ROOT)]
    assert not shown, f"pages showing the checkout's path {ROOT}: {shown[:10]}"


# --------------------------------------------------------------------------------------------
# a real browser

def _chromium():
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list = []

    def log_request(self, code="-", size="-"):
        self.requests.append((self.path, int(code) if str(code).isdigit() else code))

    def log_message(self, *args):
        pass


class _Server:
    """A local HTTP server on 127.0.0.1 that records every request and its status."""

    def __init__(self, root: Path):
        self.requests: list = []
        handler = type("Handler", (_Handler,), {"requests": self.requests})
        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def served_site(site):
    with _Server(site.html) as server:
        yield server


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """One headless Chromium for the module's pages (``tests/_chromium.py``); skipped without one."""
    executable = _chromium()
    if executable is None:
        pytest.skip("headless Chromium not found (Debian: apt-get install chromium)")
    browser = Browser(executable, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.close()


def browser_problems(browser, server, root: Path, page: str, tmp_path: Path, min_math: int,
                     theme: bool = True) -> list[str]:
    """Open ``page`` in the headless Chromium ``browser`` (:class:`_chromium.Browser`); return what is wrong
    with its rendering (empty: fine). The screenshot and the DOM are taken once its formulas are typeset."""
    from PIL import Image, ImageStat
    problems = []
    tmp_path.mkdir(parents=True, exist_ok=True)
    first_request = len(server.requests)
    shot = tmp_path / "page.png"
    png, dom, events = browser.open(f"{server.base}/{page}")
    shot.write_bytes(png)
    with Image.open(shot) as img:
        gray = img.convert("L")
        if img.size != (1280, 1600):
            problems.append(f"screenshot size {img.size}")
        if ImageStat.Stat(gray).stddev[0] < 10 or len(gray.getcolors(1 << 16) or ()) <= 16:
            problems.append("the screenshot is blank")
    if theme and not ("<article" in dom and "bd-article" in dom):
        problems.append("the theme's article did not render")
    math = re.findall(r"<mjx-container\b", dom)
    if len(math) < min_math:
        problems.append(f"{len(math)} formulas typeset by MathJax in the DOM, expected at least {min_math}")
    if "<mjx-merror" in dom:
        problems.append("MathJax reports a TeX error in a formula")

    # every local resource the DOM refers to exists in the build
    parser = _Resources()
    parser.feed(dom)
    page_dir = (root / page).parent
    for _tag, ref in parser.urls:
        parts = urlsplit(ref)
        if parts.scheme in ("data", "blob") or (parts.netloc and not parts.netloc.startswith("127.0.0.1")):
            continue
        path = unquote(parts.path)
        target = root / path.lstrip("/") if path.startswith("/") else page_dir / path
        if path and not target.resolve().exists():
            problems.append(f"DOM refers to a missing file: {ref}")

    # no failed load: the server saw no error status, Chromium logged none
    requests = server.requests[first_request:]
    problems += [f"request failed: {p} ({code})" for p, code in requests
                 if isinstance(code, int) and code >= 400 and not p.endswith("favicon.ico")]
    problems += failed_loads(events)
    if min_math and not any("/_static/mathjax/output/chtml/fonts/" in p for p, _ in requests):
        problems.append("MathJax's fonts were not loaded from the site's _static/mathjax")
    return problems


BROWSER_PAGES = {
    "index.html": 3,                                                  # formulas at least
    "theory.html": 20,
    "experiments.html": 1,
    "tasks.html": 10,
    "attention.html": 10, "proxies.html": 5,                         # the pages of claims (-m slow)
    "api/generated/numerics.dynamics.closed_form.html": 1,
}


#: The pages of the module docstring's claim (landing, derivation, API page); the other two are
#: the same check on more pages (-m slow).
BROWSER_PAGES_DEFAULT = ("index.html", "theory.html",
                         "api/generated/numerics.dynamics.closed_form.html")


@pytest.mark.parametrize("page", [pytest.param(page, marks=() if page in BROWSER_PAGES_DEFAULT else pytest.mark.slow)
                                  for page in BROWSER_PAGES])
def test_pages_render_in_chromium(page, served_site, tmp_path, site, chromium):
    problems = browser_problems(chromium, served_site, site.html, page, tmp_path, BROWSER_PAGES[page])
    assert not problems, f"{page}: {problems}"


def test_browser_check_detects_broken_pages(tmp_path, chromium):
    """The browser check fails on a blank page and on a page with a missing image and style."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "blank.html").write_text("<html><body></body></html>")
    (root / "broken.html").write_text(
        '<html><head><link rel="stylesheet" href="_static/gone.css">'
        '<script defer src="_static/mathjax/gone.js"></script></head><body>'
        + "<h1>Broken</h1><p>text</p>" * 40
        + r'<span class="math">\(a + b\)</span></body></html>')
    with _Server(root) as server:
        blank = browser_problems(chromium, server, root, "blank.html", tmp_path / "a", 0, theme=False)
        broken = browser_problems(chromium, server, root, "broken.html", tmp_path / "b", 1, theme=False)
    assert "the screenshot is blank" in blank
    assert any("gone.css" in p for p in broken) and any("gone.js" in p for p in broken)
    assert any(p.startswith("request failed") for p in broken)
    assert any("typeset by MathJax" in p for p in broken) and any("fonts were not" in p for p in broken)


#: Put first in a page's <head>: the theme's own inline script then reads the colour mode from
#: localStorage, as after a click on its theme switch.
_MODE_SCRIPT = '<script>localStorage.setItem("mode", "{mode}"); localStorage.setItem("theme", "{mode}");</script>'
#: Put last in a page's <body>: once MathJax has typeset the page, the colours the browser computed
#: for the formulas' glyphs, the article's text and the page's background, written into the DOM.
_PROBE_SCRIPT = """<script>
window.addEventListener("load", () => MathJax.startup.promise.then(() => {
  const colour = (el) => getComputedStyle(el).color;
  const glyphs = [...document.querySelectorAll(".bd-article mjx-container mjx-c")];
  const text = document.querySelector(".bd-article p");
  document.body.setAttribute("data-qkov-probe", JSON.stringify({
    theme: document.documentElement.dataset.theme,
    formulas: document.querySelectorAll("mjx-container").length,
    images: document.querySelectorAll("img.math, div.math img").length,
    glyph_colours: [...new Set(glyphs.map(colour))],
    text: colour(text),
    background: getComputedStyle(document.body).backgroundColor}));
}));
</script>"""


def _luminance(css_colour: str) -> float:
    """Relative luminance (0 black, 1 white) of a computed CSS colour ``rgb(r, g, b)``."""
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css_colour)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _themed_copy(site_root: Path, page: str, mode: str, root: Path) -> Path:
    """A served root of links to the built site with a copy of ``page`` in colour mode ``mode``
    (and the colour probe) beside the original, so that its relative links still resolve."""
    root.mkdir(parents=True)
    for entry in site_root.iterdir():
        (root / entry.name).symlink_to(entry)
    html = (site_root / page).read_text(encoding="utf-8")
    html = html.replace("<head>", "<head>" + _MODE_SCRIPT.format(mode=mode), 1)
    html = html.replace("</body>", _PROBE_SCRIPT + "</body>", 1)
    copy = root / f"{Path(page).stem}-{mode}.html"
    copy.write_text(html, encoding="utf-8")
    return copy


@pytest.mark.parametrize("page", ["theory.html", "attention.html"])
@pytest.mark.parametrize("mode", ["light", "dark"])
def test_formulas_are_text_in_the_theme_colour(mode, page, site, tmp_path, chromium):
    """The formulas of the derivation page and of "Where attention goes" are MathJax text whose glyphs in
    the article have the colour of the page's text in both colour modes: dark on a light page, light on a
    dark one (no images; a formula in the page's table of contents has its link's colour)."""
    import html as html_lib
    import json
    copy = _themed_copy(site.html, page, mode, tmp_path / "root")
    with _Server(copy.parent) as server:
        _png, dom, events = chromium.open(f"{server.base}/{copy.name}")
    found = re.search(r'data-qkov-probe="([^"]*)"', dom)
    assert found, f"the page did not finish typesetting its formulas: {failed_loads(events)}"
    probe = json.loads(html_lib.unescape(found.group(1)))
    assert probe["theme"] == mode
    assert probe["formulas"] >= BROWSER_PAGES[page] and probe["images"] == 0
    assert probe["glyph_colours"] == [probe["text"]], probe
    text, background = _luminance(probe["text"]), _luminance(probe["background"])
    assert (text - background if mode == "dark" else background - text) > 0.5, probe
