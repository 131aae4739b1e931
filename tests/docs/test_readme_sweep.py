"""The numbers README.md, docs/proxies.md, docs/experiments.md and docs/attention.md quote from the
README's matched-loss sweep of the authors' task are those of its output, stored in ``tests/data/readme_sweep/``
(``results.csv`` and ``sweep.json`` as the command wrote them: the sweep takes about 4 CPU-minutes, so
its output is kept; the slow test retrains one of its jobs and compares)."""
from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "readme_sweep"
SHARES = ("relevant_attention", "self_attention", "other_attention")


def _text(path):
    return " ".join(path.read_text(encoding="utf-8").split())        # line breaks as spaces


README = _text(ROOT / "README.md")
PROXIES_PAGE = _text(ROOT / "docs" / "proxies.md")
EXPERIMENTS_PAGE = _text(ROOT / "docs" / "experiments.md")
SWEEP = json.loads((DATA / "sweep.json").read_text())
ROWS = list(csv.DictReader((DATA / "results.csv").open(newline="")))


def _found(pattern, text):
    match = re.search(pattern, text)
    assert match, pattern
    return match.groups()


def _values(P, ratio, target, key):
    return [float(r[key]) for r in ROWS if (r["parameterization"], float(r["ratio"]), float(r["target_loss"]))
            == (P, ratio, target)]


def _agreement(P, target, ratio):
    [record] = [a for a in SWEEP["agreement"] if (a["parameterization"], a["target_loss"]) == (P, target)]
    [row] = [r for r in record["ratios"] if r["ratio"] == ratio]
    return row


def test_the_stored_sweep_is_the_readme_command():
    from numerics.experiments.__main__ import build_parser
    [line] = [c for c in re.findall(r"python -m numerics\.experiments (sweep [^#]*?) +#", README) if "1,2,5,10,20" in c]
    args = build_parser().parse_args(shlex.split(line.replace("\\ ", "")))      # a continued line
    settings = SWEEP["settings"]
    assert settings["parameterizations"] == args.parameterizations.split(",")
    assert settings["ratios"] == [float(r) for r in args.ratios.split(",")]
    assert settings["seeds"] == int(args.seeds) and settings.get("task") is None
    assert settings["target_loss"] == [float(v) for v in args.target_loss.split(",")]
    assert len(ROWS) == 180 and len(SWEEP["prediction"]) == 180


def test_the_readme_agreement_numbers():
    """The sweep figure's caption: the largest difference of SGD and theory per parameterization, the
    points within the seed spread, the smallest spread of FACO and CAFO, FAFO and CACO at ratio 20."""
    largest = {}
    for record in SWEEP["agreement"]:
        P = record["parameterization"]
        for row in record["ratios"]:
            key = "FAFO at 20" if (P, row["ratio"]) == ("FAFO", 20.0) else P
            largest[key] = max([largest.get(key, 0.0)] + [abs(row[s]["difference"]) for s in SHARES])
    every, caco, cafo, faco = _found(r"differ by at most ([\d.]+) in any share, mean over seeds, at every loss and "
                                     r"ratio of CACO, CAFO and FACO \(CACO ([\d.]+), CAFO ([\d.]+), FACO ([\d.]+)\)",
                                     README)
    assert [f"{largest[P]:.3f}" for P in ("CACO", "CAFO", "FACO")] == [caco, cafo, faco]
    assert f"{max(largest[P] for P in ('CACO', 'CAFO', 'FACO')):.3f}" == every
    [fafo] = _found(r"by at most ([\d.]+) for FAFO up to ratio 10", README)
    assert f"{largest['FAFO']:.3f}" == fafo
    agree, points = _found(r"counts (\d+) of the (\d+) \(parameterization, ratio, loss\) points", README)
    rows = [row for record in SWEEP["agreement"] for row in record["ratios"]]
    assert (sum(row["agree"] is True for row in rows), len(rows)) == (int(agree), int(points))
    [small] = _found(r"nothing at random, is as small as ([\d.]+),", README)
    spreads = [row[s]["spread"] for record in SWEEP["agreement"] if record["parameterization"] in ("FACO", "CAFO")
               for row in record["ratios"] for s in SHARES]
    assert f"{min(spreads):.{len(small) - 2}f}" == small
    fafo = _agreement("FAFO", 0.1, 20.0)
    quoted = _found(r"at loss 0.1: other positions ([\d.]+) in SGD, ([\d.]+) in theory, seed spread ([\d.]+); "
                    r"own token ([\d.]+) against ([\d.]+)\)", README)
    other, own = fafo["other_attention"], fafo["self_attention"]
    assert [f"{v:.2f}" for v in (other["sgd"], other["theory"], other["spread"], own["sgd"], own["theory"])] == \
        list(quoted)
    [caco_self] = _found(r"CACO at ratio 20: ([\d.]+) of the attention on the query's own token at loss 0.1", README)
    assert f"{_agreement('CACO', 0.1, 20.0)['self_attention']['sgd']:.2f}" == caco_self


def test_fafo_accuracy_at_ratio_20():
    by_loss = _found(r"FAFO's accuracy at ratio 20 is ([\d.]+) at loss 0.5, ([\d.]+) at 0.2 and ([\d.]+) at 0.1",
                     PROXIES_PAGE)
    assert [f"{np.mean(_values('FAFO', 20.0, L, 'accuracy')):.3f}" for L in (0.5, 0.2, 0.1)] == list(by_loss)
    assert f"{np.mean(_values('FAFO', 20.0, 0.5, 'accuracy')):.2f}" == _found(r"FAFO's falls, to ([\d.]+) at loss 0.5",
                                                                                README)[0]
    assert _found(r"accuracy stays at 1 except FAFO's \(([\d.]+); ([\d.]+) at loss 0.5\)", EXPERIMENTS_PAGE) == \
        tuple(f"{np.mean(_values('FAFO', 20.0, L, 'accuracy')):.2f}" for L in (0.2, 0.5))


COLUMNS = ("attention_entropy_normalized", "plausibility_auprc", "plausibility_token_f1", "comprehensiveness",
           "sufficiency", "accuracy", "label_probability")
SIGN = {"improves": "+", "worsens": "−", "flat": "="}


def _number(x):
    return f"{x:.3f}".replace("-", "−")


def test_the_proxies_tables_are_the_trends():
    """docs/proxies.md's table at loss 0.2 and its verdicts at the three losses are proxies.trends of the
    stored results.csv (the page's command)."""
    from numerics.experiments import proxies
    trends = {L: proxies.trends(ROWS, L) for L in (0.5, 0.2, 0.1)}
    page = (ROOT / "docs" / "proxies.md").read_text(encoding="utf-8")
    at_02 = re.findall(r"^\| (CACO|CAFO|FACO|FAFO) \| ([^|]*→[^|]*) \|" + r"([^|]*) \|" * 6 + "$", page, flags=re.M)
    verdicts = re.findall(r"^\| (CACO|CAFO|FACO|FAFO) \|((?: [+=−] / [+=−] / [+=−] \|){7})$", page, flags=re.M)
    assert len(at_02) == len(verdicts) == 4
    for P, *cells in at_02:
        for key, cell in zip(COLUMNS, cells, strict=True):
            t = trends[0.2][P][key]
            assert cell.strip() == f"{_number(t['low'])} → {_number(t['high'])} {t['verdict']}", (P, key)
    for P, cells in verdicts:
        printed = [c.strip() for c in cells.strip(" |").split("|")]
        assert printed == [" / ".join(SIGN[trends[L][P][key]["verdict"]] for L in (0.5, 0.2, 0.1))
                           for key in COLUMNS], P


def test_the_proxies_ranges():
    ranges = dict(re.findall(r"(entropy|AUPRC|token F1|comprehensiveness|sufficiency) in \[([−\d.]+, [−\d.]+)\]",
                             PROXIES_PAGE.split("Every one of the 180 rows", 1)[1][:400]))
    keys = {"entropy": "attention_entropy", "AUPRC": "plausibility_auprc", "token F1": "plausibility_token_f1",
            "comprehensiveness": "comprehensiveness", "sufficiency": "sufficiency"}
    assert set(ranges) == set(keys)
    for name, key in keys.items():
        values = [float(r[key]) for r in ROWS if r[key] != ""]
        lo, hi = (_number(v).rstrip("0").rstrip(".") if v == 1 else _number(v) for v in (min(values), max(values)))
        assert ranges[name] == f"{lo}, {hi}", name


def test_the_theory_follows_sgd_for_the_proxies():
    """docs/proxies.md: the largest difference of the means over seeds of SGD and theory, per measure."""
    def largest(Ps, key):
        out = 0.0
        for P in Ps:
            for p in {(q["ratio"], q["target_loss"]) for q in SWEEP["prediction"] if q["parameterization"] == P}:
                theory = [q["at_measured_loss"][key] for q in SWEEP["prediction"]
                          if (q["parameterization"], q["ratio"], q["target_loss"]) == (P, *p)]
                out = max(out, abs(np.mean(_values(P, *p, key)) - np.mean(theory)))
        return f"{out:.3f}"
    quoted = _found(r"within ([\d.]+) \(entropy\), ([\d.]+) \(AUPRC\) and ([\d.]+) \(F1\) for CACO and FACO, ([\d.]+) "
                    r"and ([\d.]+) \(AUPRC, F1\) for CAFO, and ([\d.]+), ([\d.]+) and ([\d.]+) for FAFO", PROXIES_PAGE)
    keys = ("attention_entropy_normalized", "plausibility_auprc", "plausibility_token_f1")
    assert [largest(("CACO", "FACO"), k) for k in keys] + [largest(("CAFO",), k) for k in keys[1:]] + \
        [largest(("FAFO",), k) for k in keys] == list(quoted)


def _mean(P, ratio, target, key, digits=3):
    return f"{np.mean(_values(P, ratio, target, key)):.{digits}f}"


def test_the_proxies_pages_other_quoted_numbers():
    """docs/proxies.md: CAFO's smallest normalized entropy, FACO's and FAFO's AUPRC along the ratios, the
    check of the plausibility result (FACO at loss 0.2, ratios 1 and 20) and FACO's unreached loss-0.1 runs."""
    page = PROXIES_PAGE
    [cafo] = _found(r"\(normalized entropy ≥ ([\d.]+)\)", page)
    smallest = min(np.mean(_values("CAFO", r, L, "attention_entropy_normalized")) for r in (1, 2, 5, 10, 20)
                   for L in (0.5, 0.2, 0.1))
    assert f"{smallest:.3f}" == cafo and smallest >= float(cafo)
    assert [_mean("FACO", r, L, "plausibility_auprc") for r, L in ((1, 0.2), (1, 0.1), (2, 0.2), (5, 0.2), (10, 0.2))] \
        == ["1.000"] * 5
    assert _found(r"rises from ([\d.]+) at ratio 1 to ([\d.]+) at ratios 2-10", page) == (
        _mean("FACO", 1, 0.5, "plausibility_auprc"), _mean("FACO", 2, 0.5, "plausibility_auprc"))
    assert {_mean("FACO", r, 0.5, "plausibility_auprc") for r in (2, 5, 10)} == {"1.000"}
    fafo = _found(r"FAFO's rises up to ratio 5 \(([\d.]+) → ([\d.]+) at loss 0.2\) and then falls to (\d\.\d+)", page)
    assert fafo == tuple(_mean("FAFO", r, 0.2, "plausibility_auprc") for r in (1, 5, 20))
    assert _found(r"normalized ([\d.]+) → ([\d.]+), ([\d.]+) → ([\d.]+) nats", page) == tuple(
        _mean("FACO", r, 0.2, k) for k in ("attention_entropy_normalized", "attention_entropy") for r in (1, 20))
    assert _found(r"its relevant-token share rises \(([\d.]+) → ([\d.]+)\)", page) == tuple(
        _mean("FACO", r, 0.2, "relevant_attention") for r in (1, 20))
    steps = _found(r"the same steps as the sweep: ([\d ]+)-([\d ]+) and ([\d ]+)-([\d ]+)\)", page)
    assert [int(s.replace(" ", "")) for s in steps] == [
        int(f(_values("FACO", r, 0.2, "steps"))) for r in (1, 20) for f in (min, max)]
    per_seed = _found(r"the mean AP of each seed is that of `results.csv` to the last digit \(([\d.]+) at ratio 1; "
                      r"([\d.]+), ([\d.]+), ([\d.]+) at ratio 20\)", page)
    assert per_seed == (f"{np.mean(_values('FACO', 1, 0.2, 'plausibility_auprc')):.6f}",
                        *(f"{v:.6f}" for v in _values("FACO", 20, 0.2, "plausibility_auprc")))
    low, high = _found(r"its three loss-0.1 points are its final states \(measured loss ([\d.]+)-([\d.]+)\)", page)
    unreached = [r for r in ROWS if (r["parameterization"], float(r["ratio"]), float(r["target_loss"]))
                 == ("FACO", 1.0, 0.1)]
    assert {r["reached"] for r in unreached} == {"False"}
    losses = [float(r["loss"]) for r in unreached]
    assert (f"{min(losses):.3f}", f"{max(losses):.3f}") == (low, high)


def test_a_run_compared_at_its_measured_loss():
    """docs/experiments.md: FACO at ratio 10, target 0.5, its measured loss and relevant share against the
    flow's at the target and at the measured loss (means over seeds)."""
    quoted = _found(r"FACO at ratio 10 measures a loss of about ([\d.]+) and a relevant share of ([\d.]+), against "
                    r"the flow's ([\d.]+) at loss 0.5 and ([\d.]+) at ([\d.]+)\)", EXPERIMENTS_PAGE)
    flows = [q for q in SWEEP["prediction"] if (q["parameterization"], q["ratio"], q["target_loss"])
             == ("FACO", 10.0, 0.5)]
    loss = np.mean(_values("FACO", 10.0, 0.5, "loss"))
    assert [f"{loss:.2f}", f"{np.mean(_values('FACO', 10.0, 0.5, 'relevant_attention')):.2f}",
            f"{np.mean([q['relevant_attention'] for q in flows]):.2f}",
            f"{np.mean([q['at_measured_loss']['relevant_attention'] for q in flows]):.2f}", f"{loss:.2f}"] == \
        list(quoted)


@pytest.mark.slow
def test_a_stored_job_is_what_the_sweep_trains():
    """CACO, seeds 1234-1236, every ratio (one job of the sweep, about a minute): the stored rows, to a
    relative 1e-14 (bit for bit where the BLAS kernels are those that stored them)."""
    from numerics.experiments.commands.sweep import _jobs
    from numerics.experiments.jobs import sweep_job
    [job] = [job for job in _jobs(SWEEP["settings"]) if job["config"]["parameterization"] == "CACO"]
    stored = {(r["ratio"], r["seed"], r["target_loss"]): r for r in ROWS if r["parameterization"] == "CACO"}
    rows = sweep_job(job)["rows"]
    assert len(rows) == len(stored) == 45
    for row in rows:
        s = stored[repr(row["ratio"]), str(row["seed"]), repr(row["target_loss"])]
        assert int(s["steps"]) == row["steps"]
        for key in ("loss", *SHARES):
            assert row[key] == pytest.approx(float(s[key]), rel=1e-14, abs=0), key


def test_where_the_query_token_leads():
    """docs/attention.md's opening: where CACO and FAFO give the query's own token more attention than the
    relevant tokens (means over seeds), its share at ratio 20, CACO's at ratio 10 (more than the relevant
    tokens', not most) and the relevant shares of FACO and CAFO at ratio 20, to the two digits quoted."""
    page = _text(ROOT / "docs" / "attention.md")
    low, high = _found(r"CACO and FAFO at the ratio \$\\eta_\{QK\}/\\eta_\{OV\} = 20\$ give the query's \*own\* "
                       r"token more attention than the relevant tokens at every loss, and most of it at losses 0.2 and "
                       r"0.1 \(([\d.]+)-([\d.]+)\); CACO at ratio 10", page)

    def share(P, ratio, L, key):
        return _agreement(P, L, float(ratio))[key]["sgd"]

    def leads(P, ratio, L):
        return share(P, ratio, L, "self_attention") > share(P, ratio, L, "relevant_attention")
    led = {(P, r, L) for P in ("CACO", "FAFO") for r in (1, 2, 5, 10, 20) for L in (0.5, 0.2, 0.1) if leads(P, r, L)}
    at_20 = {(P, 20, L) for P in ("CACO", "FAFO") for L in (0.5, 0.2, 0.1)}
    assert led == at_20 | {("CACO", 10, 0.2), ("CACO", 10, 0.1)}
    shares = [share(P, 20, L, "self_attention") for P in ("CACO", "FAFO") for L in (0.2, 0.1)]
    assert min(shares) > 0.5 and (f"{min(shares):.2f}", f"{max(shares):.2f}") == (low, high)
    own, relevant = _found(r"CACO at ratio 10 gives it more than the relevant tokens from loss 0.2 on "
                           r"\(([\d.]+ and [\d.]+), against ([\d.]+ and [\d.]+)\), not most", page)
    assert own == " and ".join(f"{share('CACO', 10, L, 'self_attention'):.2f}" for L in (0.2, 0.1))
    assert relevant == " and ".join(f"{share('CACO', 10, L, 'relevant_attention'):.2f}" for L in (0.2, 0.1))
    assert max(share("CACO", 10, L, "self_attention") for L in (0.2, 0.1)) < 0.5
    faco, cafo = _found(r"FACO sharpens onto the relevant tokens \(([\d.]+) at ratio 20 and loss 0.1\), "
                        r"CAFO mildly \(([\d.]+)\)", page)
    assert f"{share('FACO', 20, 0.1, 'relevant_attention'):.2f}" == faco
    assert f"{share('CAFO', 20, 0.1, 'relevant_attention'):.2f}" == cafo
    assert share("CAFO", 1, 0.1, "relevant_attention") < float(cafo) < float(faco)


def test_plausibility_falls_as_the_readme_and_experiments_page_say():
    """README: AUPRC worsens from ratio 1 to 20 for all four at every loss, token F1 too but CAFO's at 0.2
    (flat), and at ratio 1 only FACO ranks every relevant token first; docs/experiments.md (at loss 0.2)
    the same, sufficiency worsening for all but CAFO."""
    from numerics.experiments import proxies
    assert "token F1 at every loss but CAFO's at 0.2, flat" in README and "FACO's every one first" in README
    assert "(AUPRC; token F1 for all but CAFO, whose F1 is flat) and sufficiency worsens for CACO, FACO and FAFO" \
        in EXPERIMENTS_PAGE
    trends = {L: proxies.trends(ROWS, L) for L in (0.5, 0.2, 0.1)}
    for P in ("CACO", "CAFO", "FACO", "FAFO"):
        for L in (0.5, 0.2, 0.1):
            assert trends[L][P]["plausibility_auprc"]["verdict"] == "worsens", (P, L)
            f1 = "flat" if (P, L) == ("CAFO", 0.2) else "worsens"
            assert trends[L][P]["plausibility_token_f1"]["verdict"] == f1, (P, L)
        assert trends[0.2][P]["sufficiency"]["verdict"] == ("improves" if P == "CAFO" else "worsens"), P
    at_1 = {P: np.mean(_values(P, 1.0, 0.2, "plausibility_auprc")) for P in ("CACO", "CAFO", "FACO", "FAFO")}
    assert [P for P, v in at_1.items() if v == 1.0] == ["FACO"]


def test_the_steps_of_the_readme_sweeps_stacks():
    """docs/experiments.md: the README sweep's jobs (one stack per parameterization, every seed and ratio) train
    as many steps as their longest run, summed; one stack per (parameterization, seed) would take the sum of
    each seed's longest run (steps to the lowest target, 0.1)."""
    stacks, separate = re.search(r"the README sweep's stacks take ([\d ]+) steps, against ([\d ]+) with one stack "
                                 r"per \(parameterization, seed\)", EXPERIMENTS_PAGE).groups()
    lowest = [r for r in ROWS if float(r["target_loss"]) == 0.1]
    longest = {}
    for r in lowest:
        for key in (r["parameterization"], (r["parameterization"], r["seed"])):
            longest[key] = max(longest.get(key, 0), int(r["steps"]))
    from numerics.experiments.sweep import seeds_per_job
    assert seeds_per_job(4, SWEEP["settings"]["seeds"]) == SWEEP["settings"]["seeds"]   # 4 jobs, one per P
    assert int(stacks.replace(" ", "")) == sum(v for k, v in longest.items() if isinstance(k, str))
    assert int(separate.replace(" ", "")) == sum(v for k, v in longest.items() if isinstance(k, tuple))
