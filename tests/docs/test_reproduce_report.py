"""The numbers README.md's and docs/experiments.md's Figure-2 and Figure-3 captions and the experiments
page's float32 table quote from the authors' reproduction are those of its output, stored in
``tests/data/reproduce/`` as ``python -m numerics.experiments reproduce`` wrote it: ``report.json``
(float64, every published run: about 10 CPU-minutes, so its report is kept) and ``report_float32.json``
(``--dtype float32``, whose Figure-3 runs are the same float64 ones). The slow tests retrain three of
their jobs and compare, and redraw the docs' figures from the stored report."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORT = json.loads((ROOT / "tests" / "data" / "reproduce" / "report.json").read_text())
RUNS = REPORT["runs"]
FIG2 = {name: r for name, r in RUNS.items() if r["experiment"] == "fig2"}
REPORT_FLOAT32 = json.loads((ROOT / "tests" / "data" / "reproduce" / "report_float32.json").read_text())
FIG2_FLOAT32 = {name: r for name, r in REPORT_FLOAT32["runs"].items() if r["experiment"] == "fig2"}
FASTER_QK = ("CACO_fast_qk", "CACO_ramp", "FAFO_fast_qk", "FAFO_ramp")


def _text(path):
    return " ".join(path.read_text(encoding="utf-8").split())        # line breaks as spaces


README = _text(ROOT / "README.md")
EXPERIMENTS_PAGE = _text(ROOT / "docs" / "experiments.md")


def _found(pattern, text):
    match = re.search(pattern, text)
    assert match, pattern
    return match.groups()


def _relevant(name):
    return np.mean([run["relevant_attention"] for run in FIG2[name]["runs"]])


def _fig3(circuit):
    [r] = [r for r in RUNS.values() if r["experiment"] == "fig3" and r["settings"]["output_circuit"] == circuit]
    return {a: (np.asarray(L), np.asarray(inc)) for a, L, inc in zip(r["alpha"], r["loss"], r["incentive"])}


def test_the_stored_report_is_every_published_run():
    """The stored reports are full (not ``--quick``) reproductions of today's published jobs, in each dtype."""
    from numerics.experiments.reproduce import PUBLISHED_RUNS, published_jobs
    for report, dtype in ((REPORT, "float64"), (REPORT_FLOAT32, "float32")):
        runs = report["runs"]
        assert report["quick"] is False and report["missing"] == [] and list(runs) == list(PUBLISHED_RUNS)
        for name, job in published_jobs(dtype=dtype):
            assert runs[name]["settings"] == job["config"], name
            if job["experiment"] == "fig2":
                assert [run["seed"] for run in runs[name]["runs"]] == job["seeds"], name


def test_the_pages_name_the_stored_reports():
    for text in (README, EXPERIMENTS_PAGE):
        assert "stored in `tests/data/reproduce/` and checked by `tests/docs/test_reproduce_report.py`" in text


def test_the_figure_2_captions():
    """Fresh sequences per seed, the label probability, the relevant-token attention at equal rates
    against chance (22/63: ``test_docs.py::test_readme_chance_is_uniform_attention_on_the_authors_task``), and
    where a faster QK rate puts the sequences (README; the page quotes the same)."""
    assert {r["settings"]["eval_batches"] * r["settings"]["batch_size"] for r in FIG2.values()} == {6400}
    assert "% of 6400 fresh sequences per cell" in README and "percent of 6400 fresh sequences" in EXPERIMENTS_PAGE
    [below] = _found(r"label probability at least 0.8 on all but at most (\d+) of a seed's 6400 sequences", README)
    counts = [round(np.sum(np.asarray(run["heatmap"])[:, :4]) * 64) for r in FIG2.values() for run in r["runs"]]
    assert max(counts) == int(below)                                  # (a cell is % of 6400: 1/64 per sequence)
    for text, pattern in ((README, r"than chance \(([\d.]+) and ([\d.]+), mean over seeds; chance 22/63 = ([\d.]+)"),
                          (EXPERIMENTS_PAGE, r"than chance \(([\d.]+) and ([\d.]+) against 22/63 = ([\d.]+)\)")):
        fafo, cafo, chance = _found(pattern, text)
        assert (f"{_relevant('FAFO'):.2f}", f"{_relevant('CAFO'):.2f}", f"{22 / 63:.3f}") == (fafo, cafo, chance)
        assert 22 / 63 < min(_relevant("FAFO"), _relevant("CAFO")) < 22 / 63 + 0.05          # barely more
        [caco] = _found(r"CACO reaches about 0.5 \(([\d.]+)\)", text)
        assert f"{_relevant('CACO'):.2f}" == caco and round(_relevant("CACO"), 1) == 0.5
        low, high = _found(r"a faster or ramped QK rate moves ([\d.]+)-([\d.]+) % of the sequences to attention 0.6-1",
                           text)
        shares = [np.sum(np.asarray(FIG2[name]["heatmap"])[3:]) for name in FASTER_QK]
        assert (f"{min(shares):.0f}", f"{max(shares):.1f}") == (low, high)
        [faco] = _found(r"FACO is sharp already at equal rates \(([\d.]+)", text)
        assert f"{_relevant('FACO'):.2f}" == faco and np.sum(np.asarray(FIG2["FACO"]["heatmap"])[4]) > 90


def test_the_figure_3_caption():
    """The schedule, the incentive before training, its order in alpha, how far it fades by epoch 500
    with each output circuit, and the collapsed output at alpha = 0.2 still learning."""
    for r in RUNS.values():
        if r["experiment"] == "fig3":
            s = r["settings"]
            assert (s["epochs"], s["steps_per_epoch"], s["batch_size"]) == (500, 250, 128)
            assert {len(L) for L in r["loss"]} == {501}                       # before training, then each epoch
    for text in (README, EXPERIMENTS_PAGE):
        assert "(Figure 3, published run: 500 × 250 steps, batch 128)" in text
        assert "The pull towards sharper attention appears only while the output circuit learns" in text
    [start] = _found(r"appears only while the output circuit learns \(below ([\d.]+) before training\)", README)
    faded = _found(r"to at most (\d+) % of its peak with the factorized output, to (\d+)-(\d+) % at alpha 0.4-0.8 "
                   r"with the collapsed one, whose output at alpha = 0.2 is still learning after 500 epochs \(its loss "
                   r"falls by (\d+) % over the last 50 epochs and its incentive peaks at epoch (\d+)\)", README)
    collapsed, factorized = _fig3("collapsed"), _fig3("factorized")
    for runs in (collapsed, factorized):
        assert max(abs(inc[0]) for _, inc in runs.values()) < float(start)
        peaks = [runs[a][1].max() for a in (0.2, 0.4, 0.6, 0.8)]
        assert peaks == sorted(peaks, reverse=True) and not np.any(runs[1.0][1])        # larger at small alpha
    left = {circuit: [runs[a][1][-1] / runs[a][1].max() for a in (0.4, 0.6, 0.8)]
            for circuit, runs in (("collapsed", collapsed), ("factorized", factorized))}
    factorized_02 = factorized[0.2][1][-1] / factorized[0.2][1].max()
    L, inc = collapsed[0.2]
    assert (f"{100 * max(left['factorized'] + [factorized_02]):.0f}", f"{100 * min(left['collapsed']):.0f}",
            f"{100 * max(left['collapsed']):.0f}", f"{100 * (1 - L[-1] / L[-51]):.0f}", str(inc.argmax())) == faded
    assert inc.argmax() > 490 and np.polyfit(np.arange(51), L[-51:], 1)[0] < 0   # (measured: noisy) still falling


def test_the_float32_table():
    """docs/experiments.md's float32 table (``benchmarks/float32_deviation.py``: every published Figure-2 run
    in both dtypes) and the sentences summing it up: the stored float64 and float32 reports, but CPU time."""
    rows = re.findall(r"^\| `(\w+)` \| (\d+) \| ([\d, ]+) \| ([\d.]+) \| ([\d.]+) / ([\d.]+) \| "
                      r"([\de.\-]+?) \(([\de.\-]+)\) \| ([\de.\-]+) \|",
                      (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8"), flags=re.M)
    assert sorted(name for name, *_ in rows) == sorted(FIG2)
    worst = {"heatmap": 0.0, "separability": 0.0, "relevant": 0.0}
    for name, seeds, steps, heat, sep64, sep32, losses, rel, relevant in rows:
        runs, runs32 = FIG2[name]["runs"], FIG2_FLOAT32[name]["runs"]
        assert int(seeds) == len(runs) and [r["steps"] for r in runs] == [r["steps"] for r in runs32], name
        assert [int(s) for s in steps.split(", ")] == sorted({run["steps"] for run in runs}), name
        diff = np.max(np.abs(np.subtract(FIG2[name]["heatmap"], FIG2_FLOAT32[name]["heatmap"])))
        assert f"{diff:.2f}" == heat, name
        separability = [r["separability"]["mean"] for r in (FIG2[name], FIG2_FLOAT32[name])]
        assert [f"{v:.4f}" for v in separability] == [sep64, sep32], name
        final = [run["final_loss"] for run in runs]
        assert (f"{min(final):.3g}" if len(runs) == 1 else f"{min(final):.3g}-{max(final):.3g}") == losses, name
        moved = [abs(b["final_loss"] - a["final_loss"]) / a["final_loss"] for a, b in zip(runs, runs32)]
        assert f"{max(moved):.1e}" == rel, name
        shifted = max(abs(b["relevant_attention"] - a["relevant_attention"]) for a, b in zip(runs, runs32))
        assert f"{shifted:.1e}" == relevant, name
        worst = {"heatmap": max(worst["heatmap"], diff), "separability": max(worst["separability"],
                 abs(separability[0] - separability[1])), "relevant": max(worst["relevant"], shifted)}
    quoted = _found(r"moves no heatmap cell by more than ([\d.]+) percentage points of the 6400 sequences, nor the "
                    r"separability by more than ([\de.\-]+), and changes the final losses by at most ([\d.]+) % "
                    r"\(([\d.]+) % for `FAFO_ramp`, whose final loss is ([\de.\-]+)\) and the relevant-token attention "
                    r"by at most ([\de.\-]+)\.", EXPERIMENTS_PAGE)
    [readme] = _found(r"float32 moves the published heatmap cells by at most ([\d.]+) percentage points", README)
    assert f"{worst['heatmap']:.3f}" == quoted[0] == readme
    assert [f"{math.ceil(worst[k] * 1e4)}e-4" for k in ("separability", "relevant")] == [quoted[1], quoted[5]]
    moved = {name: max(abs(b["final_loss"] - a["final_loss"]) / a["final_loss"]
                       for a, b in zip(FIG2[name]["runs"], FIG2_FLOAT32[name]["runs"])) for name in FIG2}
    ramp = [run["final_loss"] for run in FIG2["FAFO_ramp"]["runs"]]
    assert (f"{100 * max(v for k, v in moved.items() if k != 'FAFO_ramp'):.1f}", f"{100 * moved['FAFO_ramp']:.1f}",
            f"{np.mean(ramp):.0e}".replace("e-0", "e-")) == quoted[2:5]


@pytest.mark.slow
@pytest.mark.parametrize("name, dtype", [("FAFO_fast_qk", "float64"), ("FAFO_fast_qk", "float32"),
                                         ("fig3_collapsed", "float64")])
def test_a_stored_job_is_what_reproduce_trains(name, dtype):
    """The cheapest Figure-2 job (about 20 CPU-s) in both dtypes and the Figure-3 job behind the caption's
    alpha = 0.2 (about 90 CPU-s), retrained with the BLAS kernels that stored them
    (``_stored_sweeps.STORED_KERNELS``): the stored reports' entries, to a relative 1e-14."""
    from _stored_sweeps import assert_close, run_with_stored_kernels
    stored = (REPORT_FLOAT32 if dtype == "float32" else REPORT)["runs"][name]
    code = (f"import json\nfrom numerics.experiments import jobs\n"
            f"from numerics.experiments.reproduce import published_jobs\n"
            f"job = dict(published_jobs(dtype={dtype!r}))[{name!r}]\n"
            f"if job['experiment'] == 'fig2':\n"
            f"    runs = [dict(sorted(r.items())) for r in jobs.fig2_job(json.loads(json.dumps(job)))['runs']]\n"
            f"    print(json.dumps({{'runs': runs, 'combined': jobs.combine_runs(runs)}}))\n"
            f"else:\n"
            f"    print(json.dumps(jobs.fig3_job(job)))\n")
    res = json.loads(run_with_stored_kernels(["-c", code]).splitlines()[-1])
    if "runs" in res:
        assert_close(res["runs"], stored["runs"], name)
        assert_close(res["combined"], {k: stored[k] for k in ("heatmap", "heatmap_std", "separability")}, name)
    else:
        assert_close({k: res[k] for k in ("alpha", "final_loss", "loss", "incentive")},
                     {k: stored[k] for k in ("alpha", "final_loss", "loss", "incentive")}, name)


@pytest.mark.slow
def test_the_docs_figures_are_the_stored_reports(tmp_path):
    """docs/figures/fig2_heatmaps.png and fig3_fixed_attention.png, which the captions describe, are the
    figures ``reproduce`` draws from the stored report, pixel for pixel (about 3 CPU-s: drawing)."""
    import matplotlib.image
    from numerics.experiments.reproduce import make_figures
    make_figures(REPORT, tmp_path)
    for name in ("fig2_heatmaps", "fig3_fixed_attention"):
        assert np.array_equal(matplotlib.image.imread(ROOT / "docs" / "figures" / f"{name}.png"),
                              matplotlib.image.imread(tmp_path / f"{name}.png")), name
