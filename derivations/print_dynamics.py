r"""Print the derived QK/OV dynamics: ``python -m derivations.print_dynamics``.

With no arguments it prints, for symbolic parameters, the model, the reduced
ODEs of all four parameterizations, the effective-rate rescaling, the first
integrals and explicit orbits, the fixed-loss sharpness result and the
asymptotics. Everything printed is a derived result from
:func:`derivations.catalog.results` (cached, so the command starts fast:
without ``--params``, rates or ``--loss`` the printed texts themselves come from the
cache :data:`derivations.catalog.PRINTED`, so no expression is read or printed, no
task is built and SymPy is not imported while that cache is fresh; with them only the
printed results are decoded);
``--task NAME`` prints what the task engine derived for another built-in task.
The text is built by :func:`derivations.output.dynamics.render`, the one
renderer for every task.

Options
-------
::

    --parameterization {CACO,CAFO,FACO,FAFO,all}
    --format {pretty,text,latex,json}
    --params m=5,n=50,b=50,M=20     substitute numbers (any subset, each name once;
                                   the rule of derivations.core.vocabulary)
    --ratio R                      eta_QK/eta_OV with eta_OV = 1 (factor rates equal
                                   their circuit's rate: eta_Q = eta_K = eta_QK, ...)
    --eta-qk X --eta-ov Y          the two rates explicitly
    --loss L                       also print mu_OV, mu_QK, alpha, the attention shares
                                   and Lambda (master_lambda) at loss L (CACO from
                                   zero initialization); parameters not given in
                                   --params take the paper's values m=5,n=50,b=50,M=20
                                   and the ratio defaults to 1; the state depends on the
                                   ratio only, a task's integrated time t is at the rates
                                   given (it scales as 1/eta_OV)
    --task NAME                    a built-in task of derivations.tasks (default paper;
                                   'list' lists them, as JSON with --format json, and
                                   takes no other option); --params then also takes the
                                   task's own parameters (n_c)

The numbers at a loss are the one place where derivations meet numerics: this
entry (and nothing else in :mod:`derivations`) imports :mod:`numerics`, lazily,
only for ``--loss``. The state comes from the paper's state equation
(:func:`numerics.dynamics.closed_form.state_at_loss`) for the paper and for every task
whose reduced ODEs are the paper's at a mapped ratio, else from integrating the
task's reduced ODE (:func:`numerics.dynamics.state_at_loss`, ``method="reduced flow"``). The ratio,
m, n, b and the loss are checked against the range each method is verified
on; the message names the value the user gave.

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

import sys

from .core.cli import UsageError, usage_error
from .core.interrupt import exit_on_interrupt
from .core.output import emit
from .core.vocabulary import SHARES
from .output.dynamics import build_parser, render

__all__ = ["numeric_state", "main"]


def _state_dict(st, ratio, lam) -> dict:
    """The printed state of a :class:`numerics.dynamics.StateAtLoss`: the paper's
    coordinates (closed form) or the task's own (reduced flow), the shares with ``master_lambda``
    (``lam``) beside them, and the method."""
    shares = {k: float(getattr(st, k)) for k in SHARES if getattr(st, k) is not None}
    shares["master_lambda"] = float(lam)
    if st.method == "closed form":
        state = {k: float(getattr(st, k)) for k in ("mu_OV", "mu_QK", "alpha", "loss")}
        state.update(shares)
        mapped = ratio if st.mapped_ratio is None else float(st.mapped_ratio)
        state["method"] = f"closed form: the paper's state equation at the mapped ratio {mapped:.15g}"
        return state
    state = {k: float(v) for k, v in (st.coordinates or {}).items()}
    state.update(alpha=float(st.alpha), **shares, loss=float(st.loss))
    if st.time is not None:
        state["t"] = float(st.time)
    state["method"] = "numerical integration of the reduced ODE (numerics.dynamics.state_at_loss)"
    return state


def numeric_state(task, loss: float, ratio: float, params: dict, eta_OV: float = 1.0) -> dict:
    r"""The state at ``loss`` from zero initialization (CACO, eta_QK = ratio * eta_OV).

    Answered by the one entry :func:`numerics.dynamics.state_at_loss` (imported
    here, lazily: the only import of numerics in :mod:`derivations`): in closed
    form for the paper and for a task that maps onto it (method ``"closed form:
    the paper's state equation at the mapped ratio R'"``), else by integrating
    the task's reduced ODE (``"numerical integration ..."``).

    Parameters
    ----------
    task : derivations.engine.Task
        A built-in task.
    loss : float
        The loss level.
    ratio : float
        eta_QK / eta_OV.
    params : dict
        The task's parameter values given on the command line.
    eta_OV : float, optional
        The OV learning rate (default 1). The state depends on the ratio only;
        the time scales as ``1/eta_OV``.

    Returns
    -------
    dict
        The printed state: coordinates, ``alpha``, the attention shares and beside them
        ``master_lambda`` (:math:`\Lambda = r (M - 1)\ell(L)^2/(M b)` of the task,
        :func:`numerics.dynamics.master_lambda`), ``loss`` (and ``t``, the flow time at
        ``eta_QK = ratio * eta_OV`` and ``eta_OV``), ``method``.

    Raises
    ------
    UsageError
        A value outside the range the answering method is tested on (the
        message names the user's value and the range).
    ValueError
        The state could not be computed (the message says why).
    """
    import warnings

    from numerics.dynamics import master_lambda, state_at_loss

    from .tasks import is_builtin
    name = task.name if is_builtin(task) else task
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:       # the values given; the others are the task's defaults (named by their file's key)
            st = state_at_loss(loss, ratio, task=name, **params)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except (RuntimeError, RuntimeWarning, ArithmeticError) as exc:
            raise ValueError(f"task {task.name!r}: no state at loss {loss!r} for ratio {ratio:.15g}: "
                             f"{exc}") from None
    state = _state_dict(st, ratio, master_lambda(ratio, loss, task=name, **params))
    if "t" in state:
        state["t"] /= eta_OV      # the flow at (ratio * eta_OV, eta_OV) is the eta_OV = 1 flow, time-rescaled
    return state


@exit_on_interrupt("print_dynamics")
def main(argv=None) -> int:
    """Run ``python -m derivations.print_dynamics``.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 ok, 2 bad input, 1 the output could not be written,
        130 Ctrl-C, 143 SIGTERM.
    """
    try:
        args = build_parser().parse_args(argv)
        text = render(args, numeric_state)
    except (UsageError, ValueError) as exc:
        return usage_error("print_dynamics", exc)
    return emit(text, "print_dynamics")   # '| head' ends quietly, '> /dev/full' exits 1


if __name__ == "__main__":
    sys.exit(main())
