"""The site's formulas rendered in one LaTeX run (docs/_ext/qkov_math.py) are imgmath's own images.

``qkov_math`` compiles every formula of the site in one document and turns its pages into
PNGs with one ``dvipng`` run, under the names ``sphinx.ext.imgmath`` looks up; imgmath then
renders nothing itself. These tests render formulas of every kind (inline, display, display
without wrapping, several lines) both ways, imgmath alone (its own ``compile_math`` and
``convert_dvi_to_png``, one process pair per formula) and in one batch, and compare the
bytes; and check that a batch holding a LaTeX error renders nothing, leaving every formula to
imgmath (which reports the error as always).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes

from _docs_conf import DOCS, docs_conf

sys.path.insert(0, str(DOCS / "_ext"))
import qkov_math  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("latex") is None or shutil.which("dvipng") is None,
                                reason="the site renders its math with LaTeX and dvipng (Debian: "
                                       "apt-get install texlive-latex-base dvipng)")

_CONF = docs_conf()
#: The imgmath settings of the site (Sphinx's defaults where conf.py sets none).
CONFIG = SimpleNamespace(
    imgmath_image_format=_CONF["imgmath_image_format"], imgmath_latex="latex", imgmath_latex_args=[],
    imgmath_dvipng="dvipng",
    imgmath_dvipng_args=_CONF["imgmath_dvipng_args"], imgmath_use_preview=_CONF["imgmath_use_preview"],
    imgmath_font_size=_CONF["imgmath_font_size"], imgmath_latex_preamble=_CONF["imgmath_latex_preamble"],
    templates_path=_CONF["templates_path"])

NODES = [
    nodes.math(text=r"\mu_{QK}(t)"),
    nodes.math(text=r"\eta_{QK} / \eta_{OV} = \frac{a}{b}"),
    nodes.math_block(text=r"\dot\mu_{QK} = \eta_{QK}\, \mu_{OV} (1 - \alpha)\, e^{-L}"),
    nodes.math_block(text=r"a &= b + c \\ d &= \sum_{v=1}^{V} n_v e^{s_v}"),
    nodes.math_block(text=r"\begin{equation*} W_{QK} = W_Q W_K^\top \end{equation*}", nowrap=True),
]


@pytest.fixture(autouse=True)
def _texinputs(monkeypatch):
    """TeX finds docs/_texinputs, as in the build."""
    monkeypatch.setenv("TEXINPUTS", _CONF["_texinputs"])


def _sources():
    return [qkov_math.imgmath_source(node, CONFIG, DOCS) for node in NODES]


def test_one_batch_gives_imgmath_own_images(tmp_path):
    from sphinx.ext import imgmath

    sources = _sources()
    assert len(set(sources)) == len(sources)
    assert qkov_math.render_batch(sources, tmp_path / "batch", CONFIG) == len(sources)
    for source in sources:
        alone = tmp_path / "alone" / qkov_math.image_name(source)
        alone.parent.mkdir(exist_ok=True)
        dvi = imgmath.compile_math(source, config=CONFIG)
        imgmath.convert_dvi_to_png(dvi, alone, config=CONFIG)
        shutil.rmtree(dvi.parent)                   # imgmath leaves its temporary directory
        batch = tmp_path / "batch" / qkov_math.image_name(source)
        assert batch.read_bytes() == alone.read_bytes(), source


def test_a_latex_error_leaves_every_formula_to_imgmath(tmp_path):
    broken = qkov_math.imgmath_source(nodes.math(text=r"\frac{a}{"), CONFIG, DOCS)
    assert qkov_math.render_batch([*_sources(), broken], tmp_path, CONFIG) == 0
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_documents_of_another_preamble_are_not_batched(tmp_path):
    other = SimpleNamespace(**{**vars(CONFIG), "imgmath_latex_preamble": r"\usepackage{amsmath}"})
    mixed = [_sources()[0], qkov_math.imgmath_source(NODES[1], other, DOCS)]
    assert qkov_math.render_batch(mixed, tmp_path, CONFIG) == 0


def test_image_names_are_imgmath_names(tmp_path):
    """imgmath names an image by the SHA-1 of its document: the name qkov_math writes."""
    from sphinx.ext import imgmath

    source = _sources()[0]
    renderer = SimpleNamespace(builder=SimpleNamespace(outdir=tmp_path, imagedir="_images",
                                                       confdir=DOCS))
    path, _ = imgmath.render_math(renderer, "$" + NODES[0].astext() + "$", config=CONFIG)
    assert Path(path).name == qkov_math.image_name(source)
    assert os.path.isfile(path)
