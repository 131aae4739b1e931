"""The LaTeX section "Where attention goes" (derivations/output/latex_attention.py)."""
from __future__ import annotations

import re

from derivations.output.latex import document
from derivations.output.latex_attention import attention_section


def test_the_section_holds_each_derived_statement():
    text = "\n".join(attention_section())
    labels = re.findall(r"\\label\{(eq:attention\.[^}]+)\}", text)
    assert {"eq:attention.Lambda", "eq:attention.edge", "eq:attention.small", "eq:attention.large",
            "eq:attention.early"} <= set(labels)
    assert len(labels) == len(set(labels)) == 9            # Lambda, 4 flow equations, edge, 2 signs, early
    small = text.split(r"\label{eq:attention.small}")[1].split(r"\end{equation}")[0]
    large = text.split(r"\label{eq:attention.large}")[1].split(r"\end{equation}")[0]
    assert "- m + s" in small and r"s - \frac{m}{R}" in large
    assert "invariant under exchanging" in text and "for $R > 1$ it is not" in text


def test_the_document_has_the_section_once():
    assert document().count(r"\section{Where attention goes}") == 1
