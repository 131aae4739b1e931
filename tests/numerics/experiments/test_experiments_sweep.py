"""numerics.experiments.sweep: jobs, summary statistics, Spearman correlation, CSV round trip."""
import math

import numpy as np
import pytest

from _results_csv import read_csv
from numerics.experiments import jobs, sweep
from numerics.experiments.proxies import PROXIES


def _rows():
    rows = []
    for p, slope in (("CACO", 0.1), ("FAFO", -0.05)):
        for r in (1.0, 2.0, 5.0):
            for s, noise in zip((1234, 1235, 1236), (-0.01, 0.0, 0.02)):
                rows.append({"parameterization": p, "ratio": r, "seed": s, "steps": 100, "reached": s != 1236,
                             "loss": 0.1, "relevant_attention": 0.4 + slope * math.log(r) + noise,
                             "label_probability": 0.9, "accuracy": 1.0,
                             "status": "reached" if s != 1236 else "completed",
                             "self_attention": 0.3, "other_attention": 0.3 - slope * math.log(r) - noise,
                             "target_loss": 0.1})
    return rows


def test_jobs_dedupe_and_rates():
    jobs = sweep.sweep_jobs(["CACO", "CACO", "FAFO"], [1, 2, 1], 3, 0.1, max_steps=250, steps_per_epoch=100,
                            lr_ov=0.02)
    # one job per parameterization and block of seeds, every ratio stacked: the config is ratio 1's;
    # blocks of 2 here, so that the sweep has 4 jobs (blocks of 3 would give 2)
    assert [(j["config"]["parameterization"], j["seeds"], j["ratios"]) for j in jobs] == \
        [(p, s, [1.0, 2.0]) for p in ("CACO", "FAFO") for s in ([1234, 1235], [1236])]
    blocks = lambda P, n: [j["seeds"] for j in sweep.sweep_jobs(P, [1], n, 0.1)]   # noqa: E731
    assert blocks(["CACO"], 10) == [[1234, 1235, 1236], [1237, 1238, 1239], [1240, 1241, 1242], [1243]]
    assert blocks(["CACO"], 3) == [[1234], [1235], [1236]]                   # not one job for two workers
    assert blocks(["CACO", "CAFO", "FACO", "FAFO"], 3) == [[1234, 1235, 1236]] * 4   # the README sweep
    # extending 10 seeds to 11 keeps the jobs of the full blocks (their stored runs are reused)
    assert blocks(["CACO"], 11)[:3] == blocks(["CACO"], 10)[:3]
    j = jobs[0]
    assert j["config"]["lr_qk"] == 0.02 and j["config"]["lr_ov"] == 0.02
    # the partition does not depend on how the seeds were extended (resume with any history)
    assert sweep.sweep_jobs(["CACO", "FAFO"], [1, 2], 3, 0.1, max_steps=250, steps_per_epoch=100, lr_ov=0.02,
                            seed_blocks=[2, 1]) == jobs
    assert j["config"]["epochs"] == 3 and j["config"]["max_steps"] == 250 and j["config"]["target_loss"] == 0.1
    with pytest.raises(ValueError, match="ratio"):
        sweep.sweep_jobs(["CACO"], [0], 1, 0.1)
    with pytest.raises(ValueError, match="target_loss"):
        sweep.sweep_jobs(["CACO"], [1], 1, -0.1)


def test_summary_interval_and_spearman():
    rows = _rows()
    summ = sweep.summarize(rows)
    first = summ[0]
    att = np.array([0.39, 0.40, 0.42])
    # independent source: the tabulated t quantile t(0.975; 2 degrees of freedom) = 4.3027
    # (e.g. Abramowitz & Stegun, table 26.10), standard deviation by hand: sqrt(((-1/75)^2 + ...)/2)
    sd = np.sqrt(((0.39 - 0.40333333) ** 2 + (0.40 - 0.40333333) ** 2 + (0.42 - 0.40333333) ** 2) / 2)
    half = 4.3027 * sd / np.sqrt(3)
    assert first["relevant_attention_mean"] == pytest.approx(att.mean(), abs=1e-15)
    assert first["relevant_attention_ci95"] == pytest.approx([att.mean() - half, att.mean() + half], abs=2e-5)
    assert first["reached"] == 2 and first["n"] == 3
    # every other mean is that of its own column (the rows hold 0.9, 1.0, 0.1, 100, 0.3 there)
    assert (first["label_probability_mean"], first["accuracy_mean"], first["loss_mean"], first["steps_mean"],
            first["self_attention_mean"]) == pytest.approx((0.9, 1.0, 0.1, 100.0, 0.3), abs=1e-15)
    assert first["other_attention_mean"] == pytest.approx(0.7 - att.mean(), abs=1e-15)
    sp = sweep.spearman(rows)
    assert sp["CACO"]["rho"] > 0.8 and sp["FAFO"]["rho"] < -0.8 and sp["CACO"]["n"] == 9
    assert sweep.spearman([dict(r, ratio=1.0) for r in rows])["CACO"]["rho"] is None   # undefined, not NaN


def test_spearman_is_the_rank_correlation():
    """Ratios 1, 2, 4, 8 (one run each): attention 0.1, 0.2, 0.25, 0.9 rises with every ratio, so the rank
    correlation is exactly 1 (Pearson's is 0.966); 0.2, 0.1, 0.25, 0.9 swaps two ranks:
    1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60 = 0.8, and with n - 2 = 2 degrees of freedom the
    two-sided p of t = rho sqrt(2 / (1 - rho^2)) is 1 - t / sqrt(2 + t^2) = 1 - rho = 0.2."""
    def rows(values):
        return [{"parameterization": "CACO", "ratio": r, "relevant_attention": v}
                for r, v in zip((1.0, 2.0, 4.0, 8.0), values)]
    assert sweep.spearman(rows((0.1, 0.2, 0.25, 0.9)))["CACO"]["rho"] == pytest.approx(1.0, abs=1e-12)
    swapped = sweep.spearman(rows((0.2, 0.1, 0.25, 0.9)))["CACO"]
    assert swapped["rho"] == pytest.approx(0.8, abs=1e-12) and swapped["pvalue"] == pytest.approx(0.2, abs=1e-9)
    assert swapped["n"] == 4


@pytest.mark.parametrize("df, quantile", [(1, 12.706), (4, 2.776), (9, 2.262), (29, 2.045)])
def test_interval_matches_tabulated_t_quantiles(df, quantile):
    """The 95 % interval of n = df + 1 values half-widths t(0.975; df) * s / sqrt(n), with t from the
    printed table (3 decimals) and values whose s is known: 0, 1, ..., n - 1 have s^2 = n (n + 1) / 12."""
    n = df + 1
    mean, (low, high) = sweep._mean_ci(list(range(n)))
    half = quantile * np.sqrt(n * (n + 1) / 12) / np.sqrt(n)
    assert mean == (n - 1) / 2 and (high - low) / 2 == pytest.approx(half, rel=5e-4)
    assert sweep._mean_ci([0.3]) == (0.3, [None, None])
    assert sweep._mean_ci([0.3, 0.3, 0.3]) == (0.3, [0.3, 0.3])          # no NaN from a zero scale


def test_interval_covers_the_mean_95_percent_of_the_time():
    """Simulation: 4000 normal samples of 5; the interval holds the true mean in 95 % of them (binomial
    standard error 0.0034: the window [0.94, 0.96] is three of them)."""
    rng = np.random.default_rng(20260101)
    samples = rng.normal(1.5, 2.0, size=(4000, 5))
    cover = np.mean([low <= 1.5 <= high for low, high in (sweep._mean_ci(s)[1] for s in samples)])
    assert 0.94 <= cover <= 0.96


def test_csv_round_trip(tmp_path):
    rows = _rows()
    path = sweep.write_csv(rows, tmp_path / "results.csv")
    assert path.read_text().splitlines()[0] == ",".join(jobs.SWEEP_ROW_KEYS)
    assert read_csv(path) == [{**r, **dict.fromkeys(PROXIES)} for r in rows]    # (no proxies given)
    assert not list(tmp_path.glob(".*tmp"))


def test_the_printed_table_clips_a_share_interval_and_rounds_rho():
    """sweep.json keeps the t-interval and rho as computed; the table shows them as a share and a number."""
    from numerics.experiments.commands.sweep import format_sweep
    rows = [{**r, "relevant_attention": v} for r, v in zip(_rows()[:2], (0.93, 0.999))]
    summary = sweep.summarize(rows)
    assert summary[0]["relevant_attention_ci95"][1] > 1
    text = format_sweep({"summary": summary, "spearman": {"CACO": {"rho": 0.9999999999999999, "pvalue": None}}})
    assert ", 1.000]" in text and "rho = 1, p = null" in text


@pytest.mark.parametrize("bad", [True, "0.01", None, [], float("nan"), -0.01, 0.0, float("inf")])
def test_sweep_jobs_names_lr_ov(bad):
    """A bad lr_ov is refused as lr_ov (it was a TypeError from ``ratio * lr_ov``, or named lr_qk)."""
    with pytest.raises(ValueError, match="^lr_ov must be a finite number > 0"):
        sweep.sweep_jobs(["CACO"], [1.0], 1, 0.5, lr_ov=bad)
