"""The page "Where attention goes" (docs/attention.md): its table of crossover ratios is what
``numerics.dynamics.boundary`` gives, and its figures exist."""
from __future__ import annotations

import json
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


SGD_ROWS = re.findall(r"^\| ([AB]) \| ([\d.]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
                      PAGE, flags=re.M)
SGD_SETTINGS = {"A": dict(s=2, m=5, n=10, R=5, M=4, b=2), "B": dict(s=3, m=4, n=5, R=2, M=4, b=1)}


def test_the_sgd_table_is_the_theory_and_the_claim():
    """The theory columns are the master curve at each run's ratio and loss; SGD is within 0.03 of
    them, with more attention on the relevant tokens below r* and less above it."""
    from numerics.dynamics import lambda_of_ratio, master_shares
    assert len(SGD_ROWS) == 12
    for name, ratio, _seed, loss, sgd_self, sgd_rel, th_self, th_rel in SGD_ROWS:
        task = dict(SGD_SETTINGS[name])
        M, b = task.pop("M"), task.pop("b")
        a = master_shares(lambda_of_ratio(float(ratio), float(loss), M, b), **task)
        assert float(a["self_attention"]) == pytest.approx(float(th_self), abs=6e-4)
        assert float(a["relevant_attention"]) == pytest.approx(float(th_rel), abs=6e-4)
        assert abs(float(sgd_self) - float(th_self)) < 0.03 and abs(float(sgd_rel) - float(th_rel)) < 0.03
        [rec] = boundary(target_loss=0.2 if name == "A" else 0.8, M=M, b=b, **task)
        below = float(ratio) < rec["crossover_ratio"]
        assert (float(sgd_rel) > float(sgd_self)) == below


def test_the_sgd_table_is_the_stored_runs():
    """Each SGD row of the page is a stored run (derivations.output.attention_data): its loss and
    SGD shares as printed, and the stored theory (each seed's own start) the master curve from zero
    that the page prints (to 1e-6 before rounding: both are the same state for these starts)."""
    from numerics.dynamics import lambda_of_ratio, master_shares
    from derivations.output.attention_data import sgd_runs
    stored = {(r["setting"], r["ratio"], r["seed"]): r for r in sgd_runs()}
    for name, ratio, seed, loss, sgd_self, sgd_rel, th_self, th_rel in SGD_ROWS:
        run = stored[name, float(ratio), int(seed)]
        assert f"{run['loss']:.4f}" == loss
        assert (f"{run['self_attention']:.3f}", f"{run['relevant_attention']:.3f}") == (sgd_self, sgd_rel)
        task = dict(run["task"])
        M, b = task.pop("M"), task.pop("b")
        a = master_shares(lambda_of_ratio(run["ratio"], run["loss"], M, b), **task)
        for key, printed in (("self_attention", th_self), ("relevant_attention", th_rel)):
            assert run[f"theory_{key}"] == pytest.approx(float(a[key]), abs=1e-6)
            assert f"{run[f'theory_{key}']:.3f}" == printed


AUTHORS_ROWS = re.findall(r"^\| (CACO|CACO, `--init identity`|FACO|CAFO|FAFO) \| (\d+|all) \| ([^|]*) \| ([^|]*) \|$",
                          PAGE, flags=re.M)


def test_the_authors_table_rows():
    assert len(AUTHORS_ROWS) == 7


def test_the_authors_identity_row_is_the_boundary_command():
    """The row of CACO from 1e-6 I is numerics.experiments.flow_crossover.flow_boundary's r* at both
    losses (4 significant digits)."""
    from numerics.experiments.flow_crossover import flow_boundary
    [row] = [r for r in AUTHORS_ROWS if "identity" in r[0]]
    recs = flow_boundary(["CACO"], [0.5, 0.1], init="identity")
    for rec, quoted in zip(recs, row[2:]):
        assert rec["crossover_ratio"] == pytest.approx(float(quoted), rel=1e-3)


def _quoted_ratios(row):
    """A row's r* at L = 0.5 and 0.1 as numbers, None where the page says there is none or did not run."""
    return [None if cell.startswith(("none", "not run")) else float(cell) for cell in row[2:]]


@pytest.mark.parametrize("parameterization",
                         ["CACO", *(pytest.param(p, marks=pytest.mark.slow) for p in ("FACO", "CAFO"))])
def test_the_authors_table_is_the_boundary_command(parameterization):
    """Every seed's row of CACO (seeds 1234-1236), FACO and CAFO ("all": one answer for every seed, and
    none where the page says none) is flow_boundary's r* from the authors' start at both losses, and
    CACO's Lambda* of seed 1234 is the one quoted beside the table (4 significant digits). The FACO and CAFO
    rows are the same check on two more rows of the table (-m slow)."""
    from numerics.experiments.flow_crossover import flow_boundary
    recs = flow_boundary([parameterization], [0.5, 0.1], seeds=3)
    rows = [r for r in AUTHORS_ROWS if r[0] == parameterization]
    for seed in (1234, 1235, 1236):
        [row] = [r for r in rows if r[1] in (str(seed), "all")]
        found = [rec["crossover_ratio"] for rec in recs if rec["seed"] == seed]
        for value, quoted in zip(found, _quoted_ratios(row), strict=True):
            assert (value is None) == (quoted is None), (row, found)
            if quoted is not None:
                assert value == pytest.approx(quoted, rel=1e-3), row
    if parameterization == "CACO":
        lam = re.search(r"\(([\d.]+) at \$L = 0.5\$, ([\d.]+) at \$L = 0.1\$ for seed\s+1234\)", PAGE).groups()
        found = [rec["crossover_lambda"] for rec in recs if rec["seed"] == 1234]
        assert found == pytest.approx([float(v) for v in lam], rel=1e-3)


@pytest.mark.slow
def test_the_authors_fafo_row_is_the_boundary_command():
    """FAFO, seed 1234, L = 0.1 (about 75 s of flows near ratio 50)."""
    from numerics.experiments.flow_crossover import flow_boundary
    [row] = [r for r in AUTHORS_ROWS if r[0] == "FAFO"]
    [rec] = flow_boundary(["FAFO"], [0.1])
    assert rec["crossover_ratio"] == pytest.approx(_quoted_ratios(row)[1], rel=1e-3)


def test_the_quoted_print_dynamics_state_is_on_the_master_curve():
    """The print_dynamics line quoted on the page: the shares are master_shares at its Lambda."""
    from numerics.dynamics import master_shares
    quoted = {k: float(v) for k, v in re.findall(r"`(self_attention|relevant_attention|master_lambda) = ([\d.]+)`", PAGE)}
    a = master_shares(quoted["master_lambda"], "query-copies", s=2, R=5, m=5, n=10)
    assert float(a["self_attention"]) == pytest.approx(quoted["self_attention"], abs=1e-10)
    assert float(a["relevant_attention"]) == pytest.approx(quoted["relevant_attention"], abs=1e-10)


def test_the_quoted_print_dynamics_state_is_what_the_command_prints(capsys):
    """The quoted numbers are the command's output now (to the 12 digits quoted)."""
    from derivations.print_dynamics import main
    quoted = {k: float(v) for k, v in re.findall(r"`(self_attention|relevant_attention|master_lambda) = ([\d.]+)`", PAGE)}
    assert main(["--task", "query-copies", "--params", "s=2,R=5,m=5,n=10,M=4,b=2", "--parameterization", "CACO",
                 "--loss", "0.5", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    flat = {}
    stack = [printed]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            flat.update({k: v for k, v in node.items() if k in quoted})
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert set(flat) == set(quoted)
    for key, value in quoted.items():
        assert float(flat[key]) == pytest.approx(value, abs=1e-11), key


def _set(name, text):
    """The numbers of ``$name \\in \\{...\\}$`` on the page."""
    found = re.search(re.escape(name) + r" \\in \\\{([^}]*)\\\}", text)
    return [float(v) for v in found.group(1).split(",")]


@pytest.mark.slow
def test_the_scan_outside_the_window():
    """The page's scan outside the window (R > 1): master_shares at its values of Lambda for its shapes,
    and no sign change of (self - relevant) in any of them (a few minutes)."""
    import itertools

    import numpy as np

    from numerics.dynamics import master_shares
    text = " ".join(PAGE.split())
    count, low, high = re.search(r"The scan: `master_shares` at (\d+) values of \$\\Lambda\$ in \$\[10\^\{(-?\d+)\}, "
                                 r"10\^\{?(\d+)\}?\]\$", text).groups()
    lam = np.logspace(int(low), int(high), int(count))
    below, beyond = _set("s/(m/R)", text), _set("s/m", text)
    shapes = [(R, m, n, f * m / R) for R, m, n in itertools.product(_set("R", text), _set("m", text), _set("n", text))
              for f in below] + \
             [(R, m, n, f * m) for R, m, n in itertools.product(_set("R", text), _set("m", text), _set("n", text))
              for f in beyond]
    assert f"({len(shapes)} shapes)" in text
    for R, m, n, s in shapes:
        a = master_shares(lam, s=s, m=m, n=n, R=int(R))
        d = np.asarray(a["self_attention"] - a["relevant_attention"], dtype=float)
        assert np.all(np.sign(d) == np.sign(d[0])) and np.all(d != 0), (R, m, n, s)


def test_the_brute_force_scan_agrees_with_the_table_to_the_digits_quoted():
    """The independent scan's r* of the table's first four rows are numerics.dynamics.boundary's, to the
    digits the page gives them."""
    text = " ".join(PAGE.split())
    first, second, third, fourth = re.search(r"bisection\) gives ([\d.]+), ([\d.]+) and ([\d.]+) for the first three "
                                             r"rows above, ([\d.]+) for the fourth", text).groups()
    for quoted, row in zip((first, second, third, fourth), ROWS[:4], strict=True):
        s, R, m, n, M, b, L, _lam, _ratio = (float(v) for v in row.split(" | "))
        [rec] = boundary(s=s, m=m, n=n, R=R, target_loss=L, M=M, b=b)
        assert f"{rec['crossover_ratio']:.{len(quoted) - 2}f}" == quoted, row

