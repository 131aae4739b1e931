"""The command line ``python -m numerics.verify`` (one parser; ``--task NAME`` is one of its options)."""
from __future__ import annotations

import time

from derivations.core.cli import (OneLineParser, UsageError, option_named, parse_int, parse_list, parse_number,
                                  parse_params, usage_error)
from derivations.core.interrupt import exit_on_interrupt
from derivations.core.output import emit, json_text, progress_bar
from derivations.core.vocabulary import PARAMETERIZATIONS

from .records import format_table, summarize
from .registry import KINDS, capabilities, suite_kinds
from .run import (DEFAULT_PARAMS, M_MAX, RATIO_RANGE, TARGET_LOSS_MIN, TASK_DEFAULT_M, TASK_M_MAX, ArgumentError,
                  check_ratios, plan_checks, run_plan)

__all__ = ["build_parser", "main", "PROG"]

PROG = "python -m numerics.verify"


def build_parser():
    """The argument parser of ``python -m numerics.verify`` (also used by the docs)."""
    from ..dynamics.bounded_ivp import DEFAULT_MAX_STEPS
    p = OneLineParser(prog=PROG,
                      description="Verify the full attention model against the reduced ODE and the "
                                  "closed forms, or (--task NAME) an engine task's reduced system "
                                  "against its full matrix model (exit 0: all checks pass, 1: a "
                                  "check fails, 2: bad arguments).")
    p.add_argument("--task", metavar="NAME",
                   help="verify a task of derivations.tasks instead (python -m "
                        "derivations.print_dynamics --task list): its reduced system against the "
                        "full matrix model of the same task; --params then takes the task's own "
                        "parameters too")
    p.add_argument("--params", default=None, metavar="m=5,n=50,b=50,M=20",
                   help="model parameters, any subset (default: the paper's setting, M <= "
                        f"{M_MAX}; with --task: the task's defaults, but M = {TASK_DEFAULT_M[False]}, "
                        f"{TASK_DEFAULT_M[True]} with --quick, where the task's default M is the paper's "
                        f"{DEFAULT_PARAMS['M']} (a task file's own [defaults] M is used), M <= {TASK_M_MAX}; "
                        "and the task's own parameters, e.g. n_c=2)")
    p.add_argument("--ratios", default=None, metavar="0.1,1,10",
                   help="distinct learning-rate ratios eta_QK/eta_OV (eta_OV = 1), each in "
                        f"[{RATIO_RANGE[0]:g}, {RATIO_RANGE[1]:g}]; default 0.1,1,10 (quick: 1)")
    p.add_argument("--parameterization", default="all",
                   choices=list(PARAMETERIZATIONS) + ["all"],
                   help="which parameterization to verify (default: all four)")
    p.add_argument("--target-loss", default=None, metavar="L",
                   help=f"compare the flows until the loss reaches L, in [{TARGET_LOSS_MIN['paper']:g}, "
                        f"log M - 0.2) (default 0.01, quick 0.1; with --task: in "
                        f"[{TARGET_LOSS_MIN['task']:g}, log M), default 0.1, quick 0.3)")
    p.add_argument("--kinds", default=None, metavar="K1,K2",
                   help="kinds of check to run, of " + ",".join(KINDS) +
                        " (default: " + ",".join(suite_kinds("paper")) + "; with --task: " +
                        ",".join(suite_kinds("task")) + "); a kind the subject lacks the "
                        "capability for is skipped, saying why, and kinds that check nothing of it "
                        "are refused")
    p.add_argument("--max-steps", default=None, metavar="N",
                   help=f"the full model's solver budget in steps (integer >= 1; default {DEFAULT_MAX_STEPS}): a "
                        "full flow that spends it has compared nothing and is not verifiable (a task's "
                        "full model is stiff toward small m)")
    p.add_argument("--quick", action="store_true",
                   help="fewer, faster checks (ratio 1 unless --ratios is given; with --task: "
                        f"target loss 0.3, M = {TASK_DEFAULT_M[True]} unless given or the task's own default)")
    p.add_argument("--json", action="store_true", help="JSON output")
    return p


# --------------------------------------------------------------------------- #
# parsing
# --------------------------------------------------------------------------- #
def _parse_params(text, task):
    """``--params`` as numbers (a name given twice refused; the names and ranges
    are checked by the run's validation)."""
    items = parse_params(text)
    out = {}
    for key, value in items.items():
        if task is None and key not in DEFAULT_PARAMS:
            raise UsageError(f"--params: expected key=value with key in m,n,b,M; got {key!r}")
        v = parse_number(f"--params {key}", value)
        if key == "M" and task is None and v == int(v) and abs(v) <= 2**53:    # printed as typed
            v = int(v)
        out[key] = v
    return out


def _parse_ratios(text):
    """Comma-separated distinct numbers, none empty (:func:`~derivations.core.cli.parse_list`: a ratio given twice is
    refused, as the experiments' ``--ratios``, not checked twice; their range is checked by check_ratios)."""
    try:
        return check_ratios(parse_list("--ratios", text, lambda t: parse_number("--ratios", t), distinct=True))
    except ValueError as exc:
        raise UsageError(option_named(exc, {"ratios": "--ratios"})) from None


def _parse_kinds(text):
    kinds = parse_list("--kinds", text, distinct=True)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UsageError(f"--kinds: unknown {unknown}; choose from {','.join(KINDS)}")
    return kinds


#: The option of each argument of :func:`~numerics.verify.run.plan_checks` an
#: :class:`~numerics.verify.run.ArgumentError` names.
_OPTIONS = {"task": "--task", "params": "--params", "kinds": "--kinds", "target_loss": "--target-loss"}


def _option_message(exc) -> str:
    """The message of an :class:`ArgumentError` naming the option: the argument's name that starts
    it (``target_loss must be ...``) replaced by the option (``--target-loss must be ...``), else
    the option put before it (``--params: M must be ...``, ``--task: task 'authors' is ...``)."""
    text, option = str(exc), _OPTIONS[exc.argument]
    if text.startswith(f"{exc.argument} must "):
        return option + text[len(exc.argument):]
    return f"{option}: {text}"


def _plan(args):
    """The validated run of the parsed arguments (UsageError/ValueError on bad input)."""
    params = {} if args.params is None else _parse_params(args.params, args.task)
    ratios = None if args.ratios is None else _parse_ratios(args.ratios)
    target = None if args.target_loss is None else parse_number("--target-loss", args.target_loss)
    kinds = None if args.kinds is None else _parse_kinds(args.kinds)
    max_steps = None if args.max_steps is None else parse_int("--max-steps", args.max_steps, 1)
    args.parsed_params = params
    try:
        return plan_checks(args.parameterization, ratios, quick=args.quick, target_loss=target,
                           kinds=kinds, task=args.task, max_steps=max_steps, **params)
    except ArgumentError as exc:
        raise UsageError(_option_message(exc)) from None
    except ValueError as exc:            # a value of the paper's model outside its range
        raise UsageError(option_named(exc, dict.fromkeys(params, "--params"))) from None


def _derive(plan):
    """Derive the task's reduced systems before any work (SymPy; errors are bad input)."""
    if plan.task is None:
        return
    from .task_kinds import task_family
    try:
        for P in plan.parameterizations:
            capabilities(plan.task, P)
            if any(k in suite_kinds("task") for k in plan.kinds):
                _probe(plan, task_family(plan.task, P).system)
    except ValueError as exc:
        raise UsageError(f"--task: {exc}") from None


def _probe(plan, system):
    """Refuse parameter values for which the reduced flow is not finite at the origin."""
    import math

    import numpy as np
    y0 = np.zeros(len(system.coords))
    for r in plan.ratios:
        values = {**plan.settings, "eta_QK": r, "eta_OV": 1.0, "eta_Q": r, "eta_K": r,
                  "eta_O": 1.0, "eta_V": 1.0}
        try:
            with np.errstate(all="ignore"):
                finite = math.isfinite(system.loss_at(y0, values)) and \
                    bool(np.all(np.isfinite(system.rhs_at(y0, values))))
        except (ArithmeticError, ValueError):
            finite = False
        if not finite:
            raise UsageError(f"--params: the reduced flow of {plan.task} is not finite at the "
                             f"initial point with these values (ratio {r:g}); use smaller values")


# --------------------------------------------------------------------------- #
# output
# --------------------------------------------------------------------------- #
def _settings(plan, args):
    """The settings of the JSON summary (the paper's: the parameters as given)."""
    given = {**DEFAULT_PARAMS, **args.parsed_params} if plan.task is None else plan.settings
    out = {**given, "ratios": list(plan.ratios), "parameterization": args.parameterization,
           "quick": args.quick}
    if plan.task is not None:
        out = {"task": plan.task, **out, "target_loss": plan.options["target_loss"]}
    if args.kinds is not None:
        out["kinds"] = list(plan.kinds)
    if plan.options["max_steps"] is not None:
        out["max_steps"] = plan.options["max_steps"]
    return out


def _text(plan, checks, summary, elapsed, setup):
    lines = []
    if plan.task is not None:
        values = ", ".join(f"{k}={v:g}" for k, v in plan.settings.items())
        lines.append(f"task {plan.task}: {values}; target loss {plan.options['target_loss']:g}")
    lines.append(format_table(checks))
    lines += [f"skipped: {s['parameterization']} {s['kind']} ({s['reason']})"
              for s in checks.skipped]
    tail = f"; {elapsed:.1f} s"
    if plan.task is not None:
        tail += f" (+ {setup:.1f} s deriving/lambdifying the reduced systems)"
    lines.append(f"\n{summary['n_pass']} passed, {summary['n_fail']} failed, "
                 f"{summary['n_not_verifiable']} not verifiable, "
                 f"{summary['n_info']} reported{tail}")
    if not checks:
        lines.append("nothing was checked (exit status 1)")
    return "\n".join(lines)


class _Progress:
    """The one progress bar (a tqdm bar on a terminal) over the groups."""

    def __init__(self, total):
        self.bar, self.calls = progress_bar(total, unit="group", leave=False), 0

    def __call__(self, label):
        if self.calls:
            self.bar.update(1)
        self.bar.set_description(label)
        self.calls += 1


@exit_on_interrupt(PROG)
def main(argv=None) -> int:
    """Command-line entry point.

    Parameters
    ----------
    argv : list of str, optional
        Default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status (130 after Ctrl-C, 143 after SIGTERM, one line).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        t_setup = time.perf_counter()
        plan = _plan(args)       # asks the engine what the task has (the kinds that check it)
        _derive(plan)
    except (UsageError, ValueError) as exc:
        return usage_error(parser.prog, exc)
    t0 = time.perf_counter()
    progress = _Progress(len(plan.groups))
    try:
        checks = run_plan(plan, progress=progress)
    finally:
        progress.bar.close()
    elapsed = time.perf_counter() - t0
    summary = summarize(checks, elapsed, _settings(plan, args))
    if plan.task is not None:
        summary["setup_s"] = round(t0 - t_setup, 3)
    if checks.skipped:
        summary["skipped"] = checks.skipped
    if args.json:
        text = json_text({"checks": [c.as_dict() for c in checks], "summary": summary})
    else:
        text = _text(plan, checks, summary, elapsed, t0 - t_setup)
    return emit(text, parser.prog) or (0 if summary["ok"] else 1)
