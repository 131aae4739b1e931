r"""Every published Figure-2 and Figure-3 run, as one list of jobs, with a report and figures.

:data:`PUBLISHED_RUNS` lists the runs of the authors' notebooks (spec:
``experiments.md``):

===================  ==========================================================================
name                 run
===================  ==========================================================================
``FAFO``             row 1: rates 0.01, 2500 x 250 steps, stop rule, seed 1234, authors' init
``FACO``             row 1: same schedule, seed 1234
``CAFO``             row 1: 5000 x 200 steps, seeds 1234-1238
``CACO``             row 1: 2500 x 200 steps, seeds 1234-1236
``CACO_fast_qk``     QK 0.05, OV 0.01, seq_len 128, 2000 x 100, no stop, seeds 1234-1238
``CACO_ramp``        rates 0.01, QK ramp x10, seq_len 128, 2000 x 100, no stop, seeds 1234-1238
``FAFO_fast_qk``     QK 0.2, OV 0.01, all 1e-6 I, 1000 x 100, stop rule, seeds 1234-1238
``FAFO_ramp``        rates 0.01, QK ramp x40, all 1e-6 I, 2000 x 100, no stop, seeds 1234-1238
``fig3_collapsed``   fixed attention, collapsed output with bias, alphas .2-1, 500 x 250, batch 128
``fig3_factorized``  same, factorized output
===================  ==========================================================================

:func:`reproduce` runs them (longest first, so two workers finish together),
saving each finished run in ``OUTPUT/runs`` (a resumable
:class:`~numerics.experiments.store.ResultStore`), and writes
``OUTPUT/report.json``, ``OUTPUT/report.md``, ``fig2_heatmaps.png/pdf`` and
``fig3_fixed_attention.png/pdf``; :func:`collect` writes the same from the
runs finished so far (``reproduce --collect``).  ``quick=True`` shortens every schedule
(for smoke tests; the numbers are then not the published runs').
"""
from __future__ import annotations

import json
import math
import time

from derivations.core.atomic_file import atomic_write_text
from derivations.core.output import json_text

from . import jobs as jobs_mod
from . import fixed_attention, plots, sgd
from .directory import REPORT_FIGURES

__all__ = ["PUBLISHED_RUNS", "published_jobs", "settings_of_jobs", "reproduce", "collect", "format_report",
           "make_figures", "report_bytes", "run_bytes"]

_SEEDS5 = [1234, 1235, 1236, 1237, 1238]

def _equal_rates(parameterization):
    """The published equal-rate (row-1) run: title, schedule and seeds (:func:`sgd.published_fig2_defaults`)."""
    d = sgd.published_fig2_defaults(parameterization)
    settings = dict(parameterization=parameterization, epochs=d["epochs"], steps_per_epoch=d["steps_per_epoch"])
    return f"{parameterization}, equal rates", settings, d["seeds"]


#: name -> (title, job settings, seeds)
PUBLISHED_RUNS = {
    **{P: _equal_rates(P) for P in ("FAFO", "FACO", "CAFO", "CACO")},
    "CACO_fast_qk": ("CACO, QK 5x faster", dict(parameterization="CACO", lr_qk=0.05, seq_len=128, epochs=2000,
                                                steps_per_epoch=100, stop="none"), _SEEDS5),
    "CACO_ramp": ("CACO, QK ramp to 10x", dict(parameterization="CACO", qk_ramp=10.0, seq_len=128, epochs=2000,
                                               steps_per_epoch=100, stop="none"), _SEEDS5),
    "FAFO_fast_qk": ("FAFO, QK 20x faster", dict(parameterization="FAFO", lr_qk=0.2, init="identity", epochs=1000,
                                                 steps_per_epoch=100), _SEEDS5),
    "FAFO_ramp": ("FAFO, QK ramp to 40x", dict(parameterization="FAFO", qk_ramp=40.0, init="identity", epochs=2000,
                                               steps_per_epoch=100, stop="none"), _SEEDS5),
    "fig3_collapsed": ("Fig. 3, collapsed output", dict(output_circuit="collapsed"), None),
    "fig3_factorized": ("Fig. 3, factorized output", dict(output_circuit="factorized"), None),
}


def _quick(settings, fig3):
    s = dict(settings)
    if fig3:
        s.update(epochs=2, steps_per_epoch=5, eval_batches=1, batch_size=32)
    else:
        s.update(epochs=2, steps_per_epoch=5, eval_batches=2)
    return s


def published_jobs(quick: bool = False, *, shortest_first: bool = False, dtype: str = "float64") -> list:
    """Every published run as a job, longest first (estimated cost), or shortest first.

    Parameters
    ----------
    quick : bool, optional
        Shortened schedules (a smoke test, not the published numbers).
    shortest_first : bool, optional
    dtype : {"float64", "float32"}, optional
        The floating type of the Figure-2 runs' SGD step (Figure 3 is float64).

    Returns
    -------
    list of (str, dict)
        ``(name, job)`` pairs.
    """
    out = []
    for name, (_, settings, seeds) in PUBLISHED_RUNS.items():
        fig3 = seeds is None
        s = _quick(settings, fig3) if quick else settings
        if fig3:
            out.append((name, {"experiment": "fig3", "config": fixed_attention.Fig3Config(**s).to_dict()}))
        else:
            config = sgd.Fig2Config(**s, dtype=dtype).to_dict()
            out.append((name, {"experiment": "fig2", "config": config, "seeds": seeds}))

    def cost(item):
        job = item[1]
        c = job["config"]
        if job["experiment"] == "fig3":
            return c["epochs"] * c["steps_per_epoch"] * 4 * len(c["alphas"]) * 1.5
        width = {"CACO": 1.0, "CAFO": 1.4, "FACO": 1.4, "FAFO": 1.8}[c["parameterization"]]
        n = len(job["seeds"])
        return c["epochs"] * c["steps_per_epoch"] * width * (1 + 0.6 * (n - 1)) * c["seq_len"] / 64 ** 0.5 / 8
    return sorted(out, key=cost, reverse=not shortest_first)


def settings_of_jobs() -> dict:
    """The settings of the reproductions that run each published job, by the job's key.

    Returns
    -------
    dict
        ``{job_key(job): [{"quick": bool, "dtype": str}, ...]}`` over every ``quick`` and ``dtype``
        (a Figure-3 job, float64 whatever the ``dtype``, is run by both dtypes).
    """
    from .store import job_key

    out = {}
    for quick in (False, True):
        for dtype in sgd.DTYPES:
            for _, job in published_jobs(quick, dtype=dtype):
                out.setdefault(job_key(job), []).append({"quick": quick, "dtype": dtype})
    return out


def _dispatch(job, progress=None):
    return (jobs_mod.fig3_job if job["experiment"] == "fig3" else jobs_mod.fig2_job)(job, progress)


def reproduce(output, *, workers=None, scheduler=None, progress=True, quick=False,
              shortest_first=False, dtype="float64", connect_timeout=30.0) -> dict:
    """Run every published run; write the report and the figures to ``output``.

    Runs start longest first, which finishes soonest on several workers;
    ``shortest_first=True`` finishes more runs early (if the run may be
    interrupted: :func:`collect` reports the finished ones).

    Parameters
    ----------
    output : numerics.experiments.directory.ExperimentDirectory
        The reproduction's directory, held (opened, locked and entered) by the caller.
    workers : int, optional
        Local worker processes.
    scheduler : str, optional
        A Dask scheduler's ``tcp://host:port``.
    progress : bool, optional
    quick, shortest_first, dtype
        As in :func:`published_jobs`.
    connect_timeout : float, optional
        With ``scheduler``: seconds to wait for it and for a worker.

    Returns
    -------
    dict
        The report (``report.json``), with the paths of the ``figures``.
    """
    from .runner import run_jobs

    t0 = time.perf_counter()
    named = published_jobs(quick, shortest_first=shortest_first, dtype=dtype)
    results = run_jobs(_dispatch, [j for _, j in named], workers=workers, scheduler=scheduler,
                       store=output.store(validate=jobs_mod.valid_result), progress=progress,
                       desc="reproduce", epochs=jobs_mod.job_epochs, connect_timeout=connect_timeout)
    with output.writing():
        return _write_report(output.path, named, results, t0, quick)


def collect(output, *, quick=False, dtype="float64") -> dict:
    """Report and figures from the runs already finished in ``output/runs`` (no training).

    For a reproduction that was interrupted (or is still running): the report
    lists the finished runs and names the missing ones (``report["missing"]``);
    rerunning :func:`reproduce` with the same ``output`` computes only those.
    The runs are read and the report written under the directory's write lock
    (:meth:`~numerics.experiments.directory.ExperimentDirectory.writing`), which a
    reproduction running beside it takes for its own report. Collected again after a reproduction
    finished, the report keeps that reproduction's wall time (the runs are the ones it timed); a report
    of runs collected otherwise has none.

    Parameters
    ----------
    output : numerics.experiments.directory.ExperimentDirectory
        A reproduction's directory, opened to read (``lock=False``).
    quick, dtype
        As in :func:`published_jobs`.

    Returns
    -------
    dict
        The report, as :func:`reproduce`'s.
    """
    store = output.store(validate=jobs_mod.valid_result, read_only=True)
    named = published_jobs(quick, dtype=dtype)
    with output.writing():
        results = [store.get(json.loads(json.dumps(job))) for _, job in named]
        return _write_report(output.path, named, results, None, quick, _timed(output, results))


def report_bytes() -> int:
    """The most bytes a reproduction's ``report.json`` takes: the full reproduction's
    (:func:`~numerics.experiments.jobs.output_bytes` of every published run), the largest.

    Returns
    -------
    int
    """
    return jobs_mod.OUTPUT_BASE_BYTES + sum(jobs_mod.output_bytes(job) for _, job in published_jobs())


def run_bytes() -> int:
    """The most bytes a run file (``runs/<key>.json``) of a reproduction takes: that of its largest
    published run, of every ``quick`` and ``dtype`` (:func:`~numerics.experiments.jobs.output_bytes`).

    Returns
    -------
    int
    """
    return jobs_mod.OUTPUT_BASE_BYTES + max(jobs_mod.output_bytes(job) for quick in (False, True)
                                            for dtype in sgd.DTYPES for _, job in published_jobs(quick, dtype=dtype))


def _timed(output, results) -> float | None:
    """The wall time of the reproduction whose report ``report.json`` of the directory ``output`` is, where
    that report names no missing run and every run is still stored (the runs collected are the ones it timed);
    else None (also for a report that cannot be read, or a wall time that is not a finite float >= 0)."""
    from .directory import DirectoryRefused

    try:
        previous = output.read_json("report.json", report_bytes())
    except DirectoryRefused:
        return None
    seconds = previous.get("wall_seconds") if isinstance(previous, dict) and previous.get("missing") == [] else None
    complete = all(r is not None for r in results)
    valid = type(seconds) is float and math.isfinite(seconds) and seconds >= 0
    return seconds if complete and valid else None


def _write_report(output, named, results, t0, quick, wall_seconds=None):
    """Write the figures, then ``report.json`` and ``report.md``; ``wall_seconds`` is the time from
    ``t0`` (:func:`time.perf_counter`) to the figures drawn, or where ``t0`` is None (no work timed)
    the given ``wall_seconds``."""
    report = {"quick": quick, "wall_seconds": wall_seconds, "runs": {}, "missing": []}
    for (name, job), res in zip(named, results):
        title = PUBLISHED_RUNS[name][0]
        if res is None:
            report["missing"].append(name)
        elif job["experiment"] == "fig3":
            report["runs"][name] = {"title": title, "experiment": "fig3", "settings": job["config"],
                                    "alpha": res["alpha"], "final_loss": res["final_loss"],
                                    "loss": res["loss"], "incentive": res["incentive"]}
        else:
            runs = [dict(sorted(r.items())) for r in res["runs"]]     # keys in order, as the store keeps them
            report["runs"][name] = {"title": title, "experiment": "fig2", "settings": job["config"],
                                    **jobs_mod.combine_runs(res["runs"]), "runs": runs}
    report["runs"] = {k: report["runs"][k] for k in PUBLISHED_RUNS if k in report["runs"]}
    report["missing"] = [k for k in PUBLISHED_RUNS if k in report["missing"]]
    figures = make_figures(report, output)     # (not a reproduction's mark: runs without a report are continued)
    if t0 is not None:
        report["wall_seconds"] = time.perf_counter() - t0
    atomic_write_text(output / "report.json", json_text(report))
    atomic_write_text(output / "report.md", format_report(report))
    report["figures"] = [str(p) for p in figures]
    return report


def make_figures(report, output) -> list:
    """``fig2_heatmaps`` and ``fig3_fixed_attention`` (PNG + PDF) from a report.

    Parameters
    ----------
    report : dict
        Of :func:`reproduce` or :func:`collect`.
    output : str or path-like

    Returns
    -------
    list of pathlib.Path
        The files written.
    """
    fig2 = []
    for r in report["runs"].values():
        if r["experiment"] == "fig2" and r["heatmap"] is not None:   # (None: every seed diverged)
            n = len(r["runs"])
            fig2.append(dict(title=f"{r['title']} ({n} seed{'s' if n > 1 else ''})", heatmap=r["heatmap"],
                             heatmap_std=r["heatmap_std"], n_seeds=n))
    paths = []
    if fig2:
        paths += plots.save_figure(plots.plot_fig2_heatmaps(fig2, ncols=4), output, REPORT_FIGURES[0])
    fig3 = {r["settings"]["output_circuit"]: r for r in report["runs"].values() if r["experiment"] == "fig3"}
    if fig3:
        paths += plots.save_figure(plots.plot_fig3(fig3), output, REPORT_FIGURES[1])
    return paths


def _fmt(x, spec=".4g"):
    return "-" if x is None or x != x else format(x, spec)


def format_report(report) -> str:
    """Markdown tables: heatmap columns, stop epochs, final losses, accuracy per run; the wall time
    (runs, report and figures) to a tenth of a second below 10 s.

    Parameters
    ----------
    report : dict

    Returns
    -------
    str
    """
    seconds = report["wall_seconds"]
    wall = "-" if seconds is None else f"{seconds:.{1 if seconds < 10 else 0}f} s"
    lines = ["# Reproduction of the published Figure-2 and Figure-3 runs", "",
             f"wall time: {wall}" + (" (quick schedules)" if report["quick"] else ""), ""]
    if report.get("missing"):
        lines += ["Not finished (rerun `reproduce` with the same --output to complete): "
                  + ", ".join(report["missing"]), ""]
    lines += ["## Figure 2", "",
              "Heatmap rows: relevant-token attention bin (0-.2 ... .8-1); columns: label-probability bin; "
              "% of sequences, mean over seeds.", ""]
    for name, r in report["runs"].items():
        if r["experiment"] != "fig2":
            continue
        s = r["settings"]
        lines += [f"### {name}: {r['title']}", "",
                  f"rates QK {s['lr_qk']:g} / OV {s['lr_ov']:g}, ramp x{s['qk_ramp']:g}, seq_len {s['seq_len']}, "
                  f"{s['epochs']} x {s['steps_per_epoch']} steps, stop {s['stop']}, init {s['init']}"
                  + (f", {s['dtype']} step" if "dtype" in s else ""), "",
                  "| attention \\ label prob | 0-.2 | .2-.4 | .4-.6 | .6-.8 | .8-1 |", "|---|---|---|---|---|---|"]
        edges = ["0-.2", ".2-.4", ".4-.6", ".6-.8", ".8-1"]
        heat = r["heatmap"] or [[float("nan")] * 5] * 5      # every seed diverged: no heatmap
        for i, row in enumerate(heat):
            lines.append(f"| {edges[i]} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
        col = [sum(row[j] for row in heat) for j in range(5)]
        att = [sum(row) for row in heat]
        lines += ["", "label-probability marginal: " + ", ".join(f"{v:.1f}" for v in col),
                  "attention marginal: " + ", ".join(f"{v:.1f}" for v in att),
                  f"separability: {_fmt(r['separability']['mean'])} ± {_fmt(r['separability']['std'], '.3g')}", "",
                  "| seed | steps | stopped epoch | final loss | accuracy | relevant attention |",
                  "|---|---|---|---|---|---|"]
        for run in r["runs"]:
            lines.append(f"| {run['seed']} | {run['steps']} | {_fmt(run['stopped_epoch'], 'd')} | "
                         f"{_fmt(run['final_loss'])} | {_fmt(run['accuracy'], '.4f')} | "
                         f"{_fmt(run['relevant_attention'], '.4f')} |")
        lines.append("")
    lines += ["## Figure 3", ""]
    for name, r in report["runs"].items():
        if r["experiment"] != "fig3":
            continue
        lines += [f"### {name}", "", "| alpha | L at epoch 0 | final L | max incentive | final incentive |",
                  "|---|---|---|---|---|"]
        for a, L, inc in zip(r["alpha"], r["loss"], r["incentive"]):
            lines.append(f"| {a:g} | {L[0]:.4f} | {L[-1]:.4f} | {max(inc):.4g} | {inc[-1]:.4g} |")
        lines.append("")
    return "\n".join(lines)
