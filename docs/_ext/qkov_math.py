r"""Render every formula of the site in one LaTeX run, before ``sphinx.ext.imgmath`` needs them.

``imgmath`` renders each formula alone: one ``latex`` and one ``dvipng`` process per
formula, about 0.15 s each, so a cold build of the ~430 formulas of this site spent
over a minute starting TeX.  This extension does the same work in bulk (0.4 s for those
~430 formulas) once all pages
are read (``env-updated``):

1. collect, as each page is read (``doctree-read``), the LaTeX source ``imgmath`` will render
   for every math node of the page
   (inline ``$...$``; display math wrapped as ``imgmath`` wraps it), with
   ``sphinx.ext.imgmath.generate_latex_macro``, so each document is the one ``imgmath``
   would compile and its image lands under the name ``imgmath`` looks up (the SHA-1
   of that source);
2. for the formulas whose image is not there yet, compile one document holding every
   formula's page (the shared preamble once, each formula's body on a page of its
   own) with one ``latex`` run and turn every page into a PNG with one ``dvipng`` run, both
   through ``imgmath``'s own functions (``compile_math``, ``convert_dvi_to_png``), so the
   commands and options are imgmath's;
3. move page ``i`` to formula ``i``'s file.  ``imgmath`` then finds every image and
   starts no process.

The images are byte for byte the ones ``imgmath`` makes alone
(``tests/docs/test_docs_math.py`` renders formulas both ways).  Anything unusual
(another image format, the preview package, a LaTeX error in some formula, a page
count that does not match) leaves the formulas to ``imgmath``, which renders them
one by one and reports errors as it always does.
"""
from __future__ import annotations

import re
import shutil
from hashlib import sha1
from pathlib import Path

from docutils import nodes
from sphinx.ext import imgmath
from sphinx.util.math import wrap_displaymath

_BODY = re.compile(r"\A(?P<head>.*?\\begin\{document\}\n)(?P<body>.*)(?P<tail>\n\\end\{document\}\s*)\Z", re.S)


def imgmath_source(node, config, confdir) -> str:
    """The LaTeX document ``imgmath`` compiles for the math node ``node``."""
    if isinstance(node, nodes.math_block):
        text = node.astext()
        math = text if node.get("no-wrap", node.get("nowrap", False)) else wrap_displaymath(text, None, False)
    else:
        math = "$" + node.astext() + "$"
    return imgmath.generate_latex_macro("png", math, config, confdir)


def image_name(source: str) -> str:
    """The file name ``imgmath`` gives the image of ``source``."""
    return sha1(source.encode(), usedforsecurity=False).hexdigest() + ".png"


def render_batch(sources, out_dir: Path, config) -> int:
    """Render the documents ``sources`` (sharing one preamble) into ``out_dir`` under
    :func:`image_name`, with ``imgmath``'s own ``compile_math`` and ``convert_dvi_to_png`` run
    once on a document of one page per source; returns how many were written (0 when anything is
    unusual: the caller's formulas are then left to ``imgmath``)."""
    parts = [_BODY.match(s) for s in sources]
    if not sources or any(p is None for p in parts) or len({p["head"] for p in parts}) != 1:
        return 0
    document = parts[0]["head"] + "\n\\clearpage\n".join(p["body"] for p in parts) + parts[0]["tail"]
    try:
        dvi = imgmath.compile_math(document, config=config)
    except (imgmath.MathExtError, imgmath.InvokeError):
        return 0
    work = dvi.parent                                     # imgmath's temporary directory
    try:
        imgmath.convert_dvi_to_png(dvi, work / "page%d.png", config=config)   # dvipng: one file a page
        pages = sorted(work.glob("page*.png"), key=lambda p: int(p.stem[4:]))
        if len(pages) != len(sources):
            return 0
        out_dir.mkdir(parents=True, exist_ok=True)
        for page, source in zip(pages, sources):
            shutil.move(str(page), out_dir / image_name(source))
        return len(pages)
    except (imgmath.MathExtError, imgmath.InvokeError, OSError):
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _is_math(node) -> bool:
    return isinstance(node, (nodes.math, nodes.math_block))


def _pages(env) -> dict:
    """``{docname: imgmath documents of its formulas}``, kept in the environment (so an incremental
    build keeps those of the pages it does not read again)."""
    return vars(env).setdefault("qkov_math", {})


def _collect(app, doctree):
    """``doctree-read``: note the imgmath documents of the page just read."""
    _pages(app.env)[app.env.docname] = {imgmath_source(n, app.config, app.confdir)
                                        for n in doctree.findall(_is_math)}


def _purge(app, env, docname):
    _pages(env).pop(docname, None)


def _merge(app, env, docnames, other):
    """``env-merge-info``: the pages read by a parallel reader."""
    _pages(env).update((d, s) for d, s in _pages(other).items() if d in docnames)


def _prerender(app, env):
    """``env-updated``: render the formulas of every page whose image is missing."""
    config = app.config
    if (app.builder.format != "html" or config.imgmath_image_format.lower() != "png"
            or config.imgmath_use_preview or config.imgmath_embed):
        return
    out_dir = Path(app.builder.outdir) / app.builder.imagedir / "math"
    sources = set().union(*_pages(env).values())
    render_batch(sorted(s for s in sources if not (out_dir / image_name(s)).is_file()), out_dir, config)


def setup(app):
    app.setup_extension("sphinx.ext.imgmath")
    app.connect("doctree-read", _collect)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-updated", _prerender)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
