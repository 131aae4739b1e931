"""Sphinx configuration of the qkov documentation site.

Build (warnings are errors, no network needed)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

See docs/README.md for the fix loop and for what is generated at build time.
"""
import configparser
import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))            # the packages are used from the checkout, not installed
sys.path.insert(0, str(DOCS / "_ext"))

# -- project --------------------------------------------------------------------------------
project = "qkov"
author = "the qkov developers"
copyright = "2026, the qkov developers"
#: The one version: the checkout's setup.cfg, read as the packages are (from the checkout). Not an
#: installed distribution's metadata: that may be another checkout's, and an install or wheel build of
#: this one rewrites its qkov.egg-info, which then reads as no version at all (the build stopped).
_SETUP = configparser.ConfigParser()
_SETUP.read(ROOT / "setup.cfg", encoding="utf-8")
release = version = _SETUP["metadata"]["version"]

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinxarg.ext",
    "qkov_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "generated/*", "figures/*.pdf", "_inventories/*",
                    "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
nitpicky = True                 # a reference with no target is a warning (an error with -W)
smartquotes_action = "qe"       # keep "--option" in help texts (no en dashes)
suppress_warnings = []

# Docstrings with known reST problems that would fail this -W build (none). Their warnings are
# written to <outdir>/known-docstring-issues.txt instead of being counted;
# tests/docs/test_docs_site.py fails while a listed entry does not warn, so remove entries as the
# docstrings are fixed. QKOV_DOCS_STRICT=1 ignores this list.
qkov_known_docstring_issues = []

# -- the command-line programs (one line per command; the function is the argparse parser factory)
qkov_cli_parsers = {
    "print_dynamics": ("derivations.output.dynamics", "build_parser"),
    "verify": ("numerics.verify", "build_parser"),
    "figures": ("numerics.output.figures", "build_parser"),
    "experiments": ("numerics.experiments.__main__", "build_parser"),
    "latex": ("derivations.output.latex", "build_parser"),
    "catalog": ("derivations.catalog", "build_parser"),
    "task_catalog": ("derivations.task_catalog", "build_parser"),
}
# modules of work in progress: while absent, their pages show a note instead of failing the build
qkov_optional_modules = []
qkov_bare_doctest_pages = ["usage"]
qkov_api_packages = ["derivations", "numerics"]
qkov_repository_root = str(ROOT)
qkov_snippet_dir = "generated/snippets"

# -- MyST ----------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# -- autodoc / autosummary / numpydoc ---------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False     # a module's __all__, where it has one, is its public API
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"                # types come from the numpydoc sections
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
numpydoc_xref_ignore = {"optional", "default", "of", "or", "to", "shape", "array_like", "callable",
                        "scalar", "sequence", "iterable", "mapping", "like", "same", "as", "either",
                        "any", "a", "an", "the", "each", "one", "per", "int,", "float,",
                        # the dimensions named in ``shape (K, T)``: classes, token types, ...
                        "K", "T", "M", "N", "B", "V", "d", "n", "n_times", "n_coords", "n_params", "tickets"}
numpydoc_xref_aliases = {
    "Expr": "sympy.core.expr.Expr",
    "sympy.Expr": "sympy.core.expr.Expr",
    "Symbol": "sympy.core.symbol.Symbol",
    "sympy.Symbol": "sympy.core.symbol.Symbol",
    "Matrix": "sympy.matrices.dense.MutableDenseMatrix",
    "sympy.Matrix": "sympy.matrices.dense.MutableDenseMatrix",
    "ndarray": "numpy.ndarray",
    "np.ndarray": "numpy.ndarray",
    "Path": "pathlib.Path",
    "path": "os.PathLike",
    "real": "numbers.Real",
    "number": "numbers.Number",
    "collection": "collections.abc.Collection",
    "hashable": ":term:`python:hashable`",
    "Figure": "matplotlib.figure.Figure",
    "Axes": "matplotlib.axes.Axes",
}
numpydoc_validation_checks = set()         # style is reviewed, not enforced by the build

# -- intersphinx: inventories shipped in docs/_inventories (no network at build time) --------
_INV = DOCS / "_inventories"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", str(_INV / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable/", str(_INV / "numpy.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy/", str(_INV / "scipy.inv")),
    "sympy": ("https://docs.sympy.org/latest/", str(_INV / "sympy.inv")),
    "mpmath": ("https://mpmath.org/doc/current/", str(_INV / "mpmath.inv")),
    "matplotlib": ("https://matplotlib.org/stable/", str(_INV / "matplotlib.inv")),
}
intersphinx_timeout = 1
intersphinx_disabled_reftypes = ["std:doc"]

# -- math: MathJax 3, served from the site's own _static/mathjax (no network) ---------------------
# The MathJax files come from the PyPI package sphinx-mathjax-offline (MathJax 3.2.2, Apache-2.0),
# used as a data package: its static directory is one of html_static_path's folders, so the build
# copies it to _static/mathjax. Its Sphinx extension is not used (it declares no parallel safety).
# MathJax writes the formulas as text in the page's colour, so they follow the light and dark theme.
_MATHJAX_SPEC = importlib.util.find_spec("sphinx-mathjax-offline")
if _MATHJAX_SPEC is None:
    raise RuntimeError("the site's math needs the package sphinx-mathjax-offline: pip install '.[docs]'")
_MATHJAX_STATIC = Path(next(iter(_MATHJAX_SPEC.submodule_search_locations))) / "static"
mathjax_path = "mathjax/tex-chtml.js"
math_numfig = True
math_eqref_format = "({number})"

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "qkov"
html_static_path = ["_static", str(_MATHJAX_STATIC)]
html_css_files = ["qkov.css"]
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
html_theme_options = {
    "logo": {"text": "qkov"},
    "navbar_align": "left",
    "navbar_end": ["theme-switcher"],
    "icon_links": [],
    "show_toc_level": 2,
    "collapse_navigation": True,          # faster page rendering with ~140 API pages
    "navigation_depth": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
    "pygments_light_style": "default",
    "pygments_dark_style": "monokai",
}
# the pages (every top-level document: "*" does not match a "/") have no section navigation to show: an empty
# "Section Navigation" column would take a quarter of the width
html_sidebars = {"*": []}
# the ~140 generated API pages (one per public module) carry no section navigation: drawing the navigation
# tree on each was about 40 % of a build; they are reached from their package's page and the API index
# (breadcrumbs)
html_sidebars["api/generated/*"] = []
html_context = {"default_mode": "light"}

