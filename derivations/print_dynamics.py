r"""Print the derived QK/OV dynamics: ``python -m derivations.print_dynamics``.

With no arguments it prints, for symbolic parameters, the model, the reduced
ODEs of all four parameterizations, the effective-rate rescaling, the first
integrals and explicit orbits, the fixed-loss sharpness result and the
asymptotics. Everything printed is a derived result from
:func:`derivations.catalog.results` (cached, so the command starts fast).

Options
-------
::

    --parameterization {CACO,CAFO,FACO,FAFO,all}
    --format {pretty,text,latex,json}
    --params m=5,n=50,b=50,M=20     substitute numbers (any subset, each name once;
                                   the rule of derivations.vocabulary)
    --ratio R                      eta_QK/eta_OV with eta_OV = 1 (factor rates equal
                                   their circuit's rate: eta_Q = eta_K = eta_QK, ...)
    --eta-qk X --eta-ov Y          the two rates explicitly
    --loss L                       also print mu_OV, mu_QK, alpha at loss L (CACO from
                                   zero initialization); parameters not given in
                                   --params take the paper's values m=5,n=50,b=50,M=20
                                   and the ratio defaults to 1; the state comes from
                                   numerics.closed_form (imported only for --loss)
    --task NAME                    a built-in task of derivations.task (default paper;
                                   'list' lists them); --params then also takes the
                                   task's own parameters (n_c); see derivations.task_dynamics

Bad input prints one line to stderr and exits with status 2, before any
output. Output into a closed pipe (``| head``) ends quietly; an output that
cannot be written (``> /dev/full``) prints one line and exits with status 1.

Example
-------
>>> import subprocess, sys, json
>>> out = subprocess.run([sys.executable, "-m", "derivations.print_dynamics", "--format", "json",
...                       "--parameterization", "CACO"], capture_output=True, text=True)
>>> sorted(json.loads(out.stdout))
['alpha', 'loss', 'parameterizations', 'symbols']
"""
from __future__ import annotations

import json
import sys

from .cli import (OneLineParser, UsageError, _number, _positive_float, _render,  # noqa: F401
                  assignments, parse_loss, rate_values)
from .cli_output import emit
from .vocabulary import MODEL_PARAMETER_MEANINGS, PAPER_SETTING, PARAMETERIZATIONS, check_classes

SYMBOL_MEANINGS = {
    **MODEL_PARAMETER_MEANINGS,
    "eta_QK": "learning rate of the collapsed QK matrix", "eta_OV": "learning rate of the collapsed OV matrix",
    "eta_Q": "rate of W_Q", "eta_K": "rate of W_K", "eta_O": "rate of W_O", "eta_V": "rate of W_V",
    "mu_OV": "logit gap per unit relevant attention, (z_k - z_j)/alpha",
    "mu_QK": "score of a relevant token minus score of an irrelevant token",
    "mu_OV_0": "initial mu_OV", "mu_QK_0": "initial mu_QK",
}


def build_parser():
    """The command-line parser (also rendered in the docs by sphinx-argparse)."""
    parser = OneLineParser(prog="python -m derivations.print_dynamics",
                     description="Print the derived QK/OV gradient-flow dynamics.")
    parser.add_argument("--parameterization", default="all", choices=[*PARAMETERIZATIONS, "all"],
                        help="which parameterization's reduced ODEs, first integral and orbit to print "
                             "(default: all)")
    parser.add_argument("--format", default="pretty", choices=["pretty", "text", "latex", "json"],
                        help="pretty (2-D Unicode), text (one line per result), latex, or json "
                             "(default: pretty)")
    parser.add_argument("--params", default="",
                        help="substitute model parameters, e.g. m=5,n=50,b=50,M=20 (any subset, "
                             "each name once; m, n, b finite > 0; M an integer in [2, 2**53])")
    parser.add_argument("--ratio", type=str, default=None,
                        help="learning-rate ratio eta_QK/eta_OV with eta_OV = 1 (factor rates equal "
                             "their circuit's rate)")
    parser.add_argument("--eta-qk", type=str, default=None, help="the QK learning rate eta_QK (> 0)")
    parser.add_argument("--eta-ov", type=str, default=None, help="the OV learning rate eta_OV (> 0)")
    parser.add_argument("--loss", type=str, default=None,
                        help="also print the CACO state (mu_OV, mu_QK, alpha) at this loss, from zero "
                             "initialization; unset parameters take the paper's values and the ratio "
                             "defaults to 1 (computed by numerics.closed_form)")
    parser.add_argument("--task", default="paper",
                        help="a built-in task of derivations.task; 'list' lists them; --params "
                             "then also takes the task's own parameters such as n_c (default: paper)")
    return parser


def parse_params(text: str) -> dict:
    """``"m=5,n=50"`` -> ``{"m": 5.0, "n": 50.0}``, validated by the vocabulary's
    rule (:func:`derivations.vocabulary.check_model_parameters`); each name at
    most once."""
    out = {}
    for name, value in assignments(text):
        if name not in PAPER_SETTING:
            raise UsageError(f"--params: unknown parameter {name!r} (valid: {', '.join(PAPER_SETTING)})")
        if name in out:
            raise UsageError(f"--params: {name} given more than once")
        if name == "M":
            try:
                out[name] = check_classes(_number("M", value))
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        else:
            out[name] = _positive_float(name, value)
    return out


def _sections(res, names, subs):
    """(title, [(label, expr)]) for the human-readable formats."""
    def g(key):
        e = res[key]
        return e.subs(subs) if subs else e
    out = [("Model", [("alpha", g("model.alpha")), ("L", g("model.loss_alpha"))])]
    fact = []
    for c in ("QK", "OV"):
        fact += [(f"{c}: conserved quantity C_{c}", res[f"factorization.{c}.conserved"]),
                 (f"{c}: effective rate (balanced)", g(f"factorization.{c}.effective_rate")),
                 (f"{c}: effective rate (unbalanced)", g(f"factorization.{c}.effective_rate_unbalanced"))]
    out.append(("Factorization: implicit learning-rate rescaling (W = A B)",
                [("dW/dt", res["factorization.induced_flow"])] + fact))
    for name in names:
        items = [("dmu_OV/dt", g(f"{name}.dmu_OV_dt_alpha")), ("dmu_QK/dt", g(f"{name}.dmu_QK_dt_alpha")),
                 ("first integral H", g(f"{name}.first_integral")), ("dH/dt", g(f"{name}.dH_dt")),
                 ("line: X(mu_OV)", g(f"{name}.line_X")), ("line: Y(mu_QK)", g(f"{name}.line_Y")),
                 ("line: slope", g(f"{name}.line_slope")), ("orbit mu_QK(mu_OV)", g(f"{name}.orbit"))]
        out.append((f"{name}: reduced ODEs (alpha = m e^mu_QK/(m e^mu_QK + n)), first integral, orbit", items))
    sign_names = ("dF/dp", "dF/dr", "dp/dr", "dalpha/dr", "dmu_QK/dr", "dmu_OV/dr")
    sharp = [("margin s = alpha mu_OV at loss L", g("sharpness.margin")),
             ("state equation F(p; s, r) = 0 (p = alpha/(1-alpha), r = eta_QK/eta_OV)",
              g("sharpness.state_equation"))]
    sharp += [(f"state: {k}", g(f"sharpness.state.{k}")) for k in ("alpha", "mu_QK", "mu_OV")]
    sharp += [(f"sign of {k}", res[f"sharpness.sign_value.{k}"]) for k in sign_names]
    out.append(("Sharpness at fixed loss (CACO, zero initialization, eta_OV = 1)", sharp))
    out.append(("Time course and asymptotics (CACO)", [
        ("early phase: alpha frozen at alpha_0", g("asymptotics.early.alpha_0")),
        ("early phase: t(mu_OV)", g("asymptotics.early.t_of_mu_OV_alpha")),
        ("early phase: mu_OV(t)", g("asymptotics.early.mu_OV_of_t_alpha")),
        ("late: 1 - alpha along the orbit", g("asymptotics.late.one_minus_alpha")),
        ("late: 1 - alpha ~", g("asymptotics.late.one_minus_alpha_leading")),
        ("late: loss ~", g("asymptotics.late.loss_leading"))]))
    return out


def _exact(value):
    """A float as a SymPy number: an Integer when it is a small whole number
    (printed as typed), else a Float (1e23 stays 1.0e+23, not 99999999999999991611392)."""
    import sympy as sp
    if value == int(value) and abs(value) < 2**53:
        return sp.Integer(int(value))
    return sp.Float(value)


def render(args) -> str:
    """The whole output for parsed ``args`` (raises UsageError/ValueError on bad input)."""
    import sympy as sp

    from .catalog import results
    from .symbols import SYMBOLS
    if args.task != "paper":   # other tasks: derivations.task_dynamics (the paper's output stays as it is)
        from .task import get_task
        from .task_dynamics import render_task, task_list
        if args.task == "list":
            return task_list()
        get_task(args.task)
        return render_task(args, args.task)
    params = parse_params(args.params)
    rates = rate_values(args)
    loss_value = None if args.loss is None else parse_loss(args.loss, params.get("M", PAPER_SETTING["M"]))
    subs = {SYMBOLS[k]: (sp.Integer(v) if k == "M" else _exact(v)) for k, v in params.items()}
    subs.update({SYMBOLS[k]: _exact(v) for k, v in rates.items()})
    res = results()
    names = PARAMETERIZATIONS if args.parameterization == "all" else (args.parameterization,)
    state = None
    if loss_value is not None:
        from numerics.closed_form import state_at_loss   # the one root-find (lazy: numerics)
        full = {**PAPER_SETTING, **params}
        ratio = rates.get("eta_QK", 1.0) / rates.get("eta_OV", 1.0)
        st = state_at_loss(loss_value, ratio, **full)
        state = {k: float(getattr(st, k)) for k in ("mu_OV", "mu_QK", "alpha", "loss")}
        state.update(ratio=ratio, **{k: full[k] for k in PAPER_SETTING})
    if args.format == "json":
        def js(e):
            return str(e.subs(subs) if subs else e)
        payload = {
            "symbols": SYMBOL_MEANINGS,
            "alpha": js(res["model.alpha"]),
            "loss": js(res["model.loss"]),
            "parameterizations": {name: {
                "dmu_OV_dt": js(res[f"{name}.dmu_OV_dt"]), "dmu_QK_dt": js(res[f"{name}.dmu_QK_dt"]),
                "first_integral": js(res[f"{name}.first_integral"]), "orbit": js(res[f"{name}.orbit"])}
                for name in names},
        }
        if state is not None:
            payload["state_at_loss"] = {k: state[k] for k in ("mu_OV", "mu_QK", "alpha", "loss")}
        return json.dumps(payload, indent=2)
    lines = ["qkov: query-key / output-value gradient-flow dynamics, derived with SymPy",
             "(Vashisht & Ramaswamy, 'Faster Query-Key Learning Sharpens Attention in Self-Attention Models', ICML 2026)"]
    if subs:
        lines.append("substituted: " + ", ".join(f"{k} = {v}" for k, v in subs.items()))
    for title, items in _sections(res, names, subs):
        lines += ["", f"== {title} ==", ""]
        for label, expr in items:
            text = _render(expr, args.format)
            if "\n" in text:
                lines += [f"{label} =", text, ""]
            else:
                lines.append(f"{label} = {text}")
    if state is not None:
        lines += ["", f"== State at loss L = {state['loss']:g} (CACO, zero init, eta_QK/eta_OV = {state['ratio']:g}, "
                  f"m={state['m']:g}, n={state['n']:g}, b={state['b']:g}, M={state['M']}) ==", ""]
        lines += [f"{k} = {state[k]:.15g}" for k in ("mu_OV", "mu_QK", "alpha")]
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run the CLI; returns the exit status (2: bad input, 1: output could not be written)."""
    try:
        args = build_parser().parse_args(argv)
        text = render(args)
    except (UsageError, ValueError) as exc:
        print(f"print_dynamics: error: {exc}", file=sys.stderr)
        return 2
    return emit(text, "print_dynamics")   # '| head' ends quietly, '> /dev/full' exits 1


if __name__ == "__main__":
    sys.exit(main())
