"""The figures of where attention goes (numerics/output/attention.py)."""
from __future__ import annotations

import numpy as np
import pytest

from numerics.output import attention


def test_authors_counts_are_the_expected_copies():
    """62 context tokens drawn with weights summing to 15.5: the query's token (weight 1) 4 times
    plus its own position, the ten relevant types (weights 0.1..1.0) 22 times in all."""
    assert attention.authors_counts() == pytest.approx({"s": 5.0, "m": 22.0, "R": 10})


def test_phase_diagram_has_the_window_and_the_boundary():
    fig = attention.plot_phase_diagram(quick=True, Rs=(5,))
    ax = fig.axes[0]
    edges = sorted(line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == ":")
    assert edges == pytest.approx([0.2, 1.0])
    [curve] = [line for line in ax.lines if line.get_label() == r"$\Lambda^*$"]
    x, y = curve.get_data()
    assert np.all((x > 0.2) & (x < 1.0)) and np.all(np.isfinite(y)) and np.all(np.diff(y) < 0)


def test_master_curve_markers_fall_on_the_lines():
    fig = attention.plot_master_curve(quick=True)
    for ax in fig.axes:
        lines = [l for l in ax.lines if l.get_linestyle() == "-"]
        for marks in (l for l in ax.lines if l.get_linestyle() == "None"):
            x, y = marks.get_data()
            near = [np.interp(np.log(x), np.log(l.get_xdata()), l.get_ydata()) for l in lines
                    if l.get_color() == marks.get_color()]
            assert np.allclose(near[0], y, atol=5e-3)
