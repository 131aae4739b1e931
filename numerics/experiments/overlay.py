r"""The theory beside the sweep's runs, like with like, and where the two agree.

:func:`theory_beside_runs` answers every SGD run of a sweep with the
expected-count gradient flow of the sweep's task (:func:`numerics.experiments.predict.predict`)
from **that run's seed's** initial matrices (the sweep's seeds 1234, 1235, ...;
the same initialization), read off

* at the run's **target** loss (where the run's training was checked), and
* at the **loss the run actually measured** on its fresh evaluation batches
  (by then a little lower or higher than the target: the state is taken at the
  first epoch whose mean training loss reaches the target).

One flow per seed answers every target and every measured loss: they are the
flow's loss thresholds.  The flows of one (parameterization, ratio) are one job
(:func:`theory_job`), so a sweep runs them on its workers
(``theory_beside_runs(..., run=...)``). The sweep figure and :func:`agreement` compare each run
with the flow read at its measured loss.

:func:`agreement` reports, per parameterization and target, for each ratio and
attention share (relevant tokens, the query's own token, other positions): the
mean over seeds of SGD and of the theory, their difference, the seed spread
(the larger of the two standard deviations over seeds, SGD's and the theory's)
and whether they agree: :math:`|\text{difference}| \le \text{spread}`
(undetermined, ``None``, with fewer than two seeds).
"""
from __future__ import annotations

import numpy as np

from derivations.core.vocabulary import SHARES

from .proxies import THEORY_PROXIES
from .sweep import number_or_none

__all__ = ["theory_jobs", "theory_job", "theory_beside_runs", "plotted_theory", "agreement",
           "format_agreement"]

_READ = ("reached", "steps", "loss", *SHARES, *THEORY_PROXIES)


def _losses_to_read(rows, targets, floor):
    """The targets and every measured loss the flow can answer (in ``[TARGET_LOSS_MIN, floor)``)."""
    from .theory import TARGET_LOSS_MIN

    measured = {number_or_none(r.get("loss")) for r in rows} - {None}
    return sorted({*targets, *(x for x in measured if TARGET_LOSS_MIN <= x < floor)}, reverse=True)


def _group_records(P, ratio, rows, targets, settings):
    """Predict's records of one (parameterization, ratio): one list per seed and loss read."""
    from . import predict, task_sampling, theory

    seeds = sorted({int(r["seed"]) for r in rows})
    task = {"task": settings.get("task", task_sampling.DEFAULT_TASK), "task_params": settings.get("task_params", ())}
    st = task_sampling.sampled_task(task["task"], task["task_params"])
    _, floor = theory.lowest_initial_loss(st, [P], settings["init"], seeds, seq_len=settings["seq_len"])
    reads = _losses_to_read(rows, targets, floor)
    return predict.predict([P], [ratio], reads, seeds, init=settings["init"], seq_len=settings["seq_len"],
                           lr_ov=settings["lr_ov"], **task)


#: The settings a theory job reads.
_SETTINGS = ("init", "seq_len", "lr_ov", "task", "task_params")


def _groups(rows) -> dict:
    """``{(parameterization, ratio): rows}``, in order of appearance."""
    groups = {}
    for r in rows:
        groups.setdefault((r["parameterization"], float(r["ratio"])), []).append(r)
    return groups


def _job(P, ratio, rows, settings) -> dict:
    return {"experiment": "theory", "parameterization": P, "ratio": ratio,
            "targets": sorted({float(r["target_loss"]) for r in rows}, reverse=True),
            "rows": [{"seed": int(r["seed"]), "loss": number_or_none(r.get("loss"))} for r in rows],
            "settings": {k: settings[k] for k in _SETTINGS if k in settings}}


def theory_jobs(rows, settings) -> list:
    """One JSON job per (parameterization, ratio) of ``rows`` (in order of appearance): its rows'
    seeds and measured losses, its targets and the settings the flow needs (:func:`theory_job`).

    Parameters
    ----------
    rows : list of dict
        Sweep rows (``parameterization``, ``ratio``, ``seed``, ``target_loss``, ``loss``).
    settings : dict
        The sweep's (``init``, ``seq_len``, ``lr_ov``, the task).

    Returns
    -------
    list of dict
    """
    return [_job(P, ratio, g, settings) for (P, ratio), g in _groups(rows).items()]


def theory_job(job: dict) -> dict:
    """The flows of one :func:`theory_jobs` job.

    Parameters
    ----------
    job : dict

    Returns
    -------
    dict
        ``{"records": [...]}`` (predict's records, one per seed and loss read), or
        ``{"error": message}`` where the theory cannot answer.
    """
    try:
        return {"records": _group_records(job["parameterization"], job["ratio"], job["rows"], job["targets"],
                                          job["settings"])}
    except (ValueError, RuntimeError) as exc:    # the measured sweep stands without it
        return {"error": str(exc)}


def theory_beside_runs(rows, settings, *, warn=None, run=None) -> list:
    """One record per SGD row: the flow of the row's seed at its target and at its measured loss.

    Parameters
    ----------
    rows : list of dict
        Rows of the sweep's ``results.csv`` (``parameterization``, ``ratio``,
        ``seed``, ``target_loss``, ``loss``).
    settings : dict
        The sweep's ``init``, ``seq_len``, ``lr_ov``.
    warn : callable, optional
        Called with one line for each (parameterization, ratio) the theory
        cannot answer (e.g. a ratio outside its range); those runs get no record.
    run : callable, optional
        ``run(theory_job, jobs) -> results`` in job order (e.g. a
        :func:`numerics.experiments.runner.run_jobs` on the sweep's workers);
        default: one after the other, here.

    Returns
    -------
    list of dict
        ``parameterization``, ``ratio``, ``seed``, ``target_loss`` and the
        flow at the target (``reached``, ``steps``, ``loss`` and the three
        shares, as :data:`numerics.experiments.predict.RECORD_FIELDS`), then
        ``measured_loss`` (the run's) and ``at_measured_loss``: the flow at
        that loss (the same fields), or None where the run measured nothing or
        a loss the flow never had.
    """
    groups = _groups(rows)                          # in the order of theory_jobs' jobs
    jobs = theory_jobs(rows, settings)
    results = [theory_job(j) for j in jobs] if run is None else run(theory_job, jobs)
    out = []
    for ((P, ratio), g), result in zip(groups.items(), results):
        if "error" in result:
            if warn is not None:
                warn(f"no theory for {P} ratio {ratio:g} ({result['error']})")
            continue
        found = {(rec["seed"], rec["target_loss"]): rec for rec in result["records"]}
        for r in g:
            seed, target = int(r["seed"]), float(r["target_loss"])
            at_target = found[seed, target]
            measured = number_or_none(r.get("loss"))      # None: a diverged run measured nothing
            matched = found.get((seed, measured))
            out.append({"parameterization": P, "ratio": ratio, "seed": seed, "target_loss": target,
                        **{k: at_target[k] for k in _READ}, "measured_loss": measured,
                        "at_measured_loss": None if matched is None else {k: matched[k] for k in _READ}})
    return out


def plotted_theory(records) -> list:
    """The records as the sweep figure draws them: the flow at each run's measured loss.

    Parameters
    ----------
    records : list of dict
        Of :func:`theory_beside_runs`.

    Returns
    -------
    list of dict
        ``parameterization``, ``ratio``, ``seed``, ``target_loss`` and the flow's fields
        at the measured loss (the shares None where there is no reading).
    """
    return [{"parameterization": t["parameterization"], "ratio": t["ratio"], "seed": t["seed"],
             "target_loss": t["target_loss"], **(t["at_measured_loss"] or dict.fromkeys(SHARES))}
            for t in records]


def _sd(values):
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def _compare(pairs):
    """One share at one ratio: SGD and theory means over the paired seeds, difference, spread."""
    sgd = [a for a, _ in pairs]
    th = [b for _, b in pairs]
    if not pairs:
        return {"sgd": None, "theory": None, "difference": None, "spread": None, "agree": None}
    spreads = [s for s in (_sd(sgd), _sd(th)) if s is not None]
    spread = max(spreads) if spreads else None
    diff = float(np.mean(sgd) - np.mean(th))
    return {"sgd": float(np.mean(sgd)), "theory": float(np.mean(th)), "difference": diff,
            "spread": spread, "agree": None if spread is None else bool(abs(diff) <= spread)}


def _ratio_entry(ratio, rows, theory):
    """Every share at one ratio, over the seeds with both an SGD measurement and a theory reading."""
    by_seed = {int(t["seed"]): t["at_measured_loss"] for t in theory if t["at_measured_loss"]}
    kept = [r for r in rows if int(r["seed"]) in by_seed and by_seed[int(r["seed"])]["reached"]
            and number_or_none(r.get("relevant_attention")) is not None]
    entry = {"ratio": ratio, "n": len(kept)}
    for share in SHARES:
        entry[share] = _compare([(float(r[share]), float(by_seed[int(r["seed"])][share])) for r in kept])
    flags = [entry[s]["agree"] for s in SHARES]
    entry["agree"] = None if None in flags else all(flags)
    return entry


def agreement(rows, theory) -> list:
    """Where SGD and the theory (read at each run's measured loss) agree, per parameterization
    and target.

    Parameters
    ----------
    rows : list of dict
        Sweep rows.
    theory : list of dict
        Of :func:`theory_beside_runs`.

    Returns
    -------
    list of dict
        One per (parameterization, target): ``agree`` / ``disagree`` / ``undetermined``
        (the ratios), ``largest_difference`` (share, ratio and difference of the largest
        ``|difference|``) and ``ratios`` (per ratio: ``n`` paired seeds, ``agree``, and per
        share ``sgd``, ``theory``, ``difference``, ``spread``, ``agree``).
    """
    keys = list(dict.fromkeys((r["parameterization"], float(r["target_loss"])) for r in rows))
    out = []
    for P, target in keys:
        mine = [r for r in rows if r["parameterization"] == P and float(r["target_loss"]) == target]
        entries = []
        for ratio in sorted({float(r["ratio"]) for r in mine}):
            at = [t for t in theory if t["parameterization"] == P and t["ratio"] == ratio
                  and t["target_loss"] == target]
            entries.append(_ratio_entry(ratio, [r for r in mine if float(r["ratio"]) == ratio], at))
        diffs = [(abs(e[s]["difference"]), s, e["ratio"], e[s]["difference"]) for e in entries for s in SHARES
                 if e[s]["difference"] is not None]
        largest = max(diffs) if diffs else None
        out.append({"parameterization": P, "target_loss": target, "compared_at": "each run's measured loss",
                    "agree": [e["ratio"] for e in entries if e["agree"] is True],
                    "disagree": [e["ratio"] for e in entries if e["agree"] is False],
                    "undetermined": [e["ratio"] for e in entries if e["agree"] is None],
                    "largest_difference": None if largest is None else
                    {"share": largest[1], "ratio": largest[2], "difference": largest[3]},
                    "ratios": entries})
    return out


def _ratios(values) -> str:
    return ", ".join(f"{v:g}" for v in values) or "none"


def format_agreement(report) -> str:
    """One line per parameterization and target: where SGD and the theory agree, with numbers.

    Parameters
    ----------
    report : list of dict
        Of :func:`agreement`.

    Returns
    -------
    str
    """
    lines = ["SGD vs theory (flow of each seed read at its run's measured loss; agree: |mean difference| "
             "<= seed spread, per share)"]
    for a in report:
        line = (f"{a['parameterization']} loss {a['target_loss']:g}: agree at ratios {_ratios(a['agree'])}; "
                f"differ at {_ratios(a['disagree'])}")
        if a["undetermined"]:
            line += f"; undetermined at {_ratios(a['undetermined'])}"
        big = a["largest_difference"]
        if big is not None:
            entry = next(e for e in a["ratios"] if e["ratio"] == big["ratio"])[big["share"]]
            line += (f"; largest difference {big['difference']:+.3f} ({big['share'].split('_')[0]}, ratio "
                     f"{big['ratio']:g}: SGD {entry['sgd']:.3f}, theory {entry['theory']:.3f}, spread "
                     + ("n/a" if entry["spread"] is None else f"{entry['spread']:.3f}") + ")")
        lines.append(line)
    return "\n".join(lines)
