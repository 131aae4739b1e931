"""The page "Where attention goes" (docs/attention.md): its table of crossover ratios is what
``numerics.dynamics.boundary`` gives, and its figures exist."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from numerics.dynamics import boundary

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = (DOCS / "attention.md").read_text(encoding="utf-8")
ROWS = re.findall(r"^\| ([\d.]+(?: \| [\d.]+){8}) \|$", PAGE, flags=re.M)


def test_the_table_has_rows():
    assert len(ROWS) == 5


@pytest.mark.parametrize("row", ROWS)
def test_each_row_is_the_boundary_command(row):
    s, R, m, n, M, b, L, lam, ratio = (float(v) for v in row.split(" | "))
    [rec] = boundary(s=s, m=m, n=n, R=R, target_loss=L, M=M, b=b)
    assert rec["crossover_lambda"] == pytest.approx(lam, rel=1e-3)
    assert rec["crossover_ratio"] == pytest.approx(ratio, rel=1e-3)


def test_the_figures_exist():
    for name in re.findall(r"\]\(figures/([^)]+)\)", PAGE):
        assert (DOCS / "figures" / name).is_file(), name
