r"""Figure 4 of the paper: the CACO state at 50 loss thresholds for 5 rate ratios.

Setting: m=5, n=50, b=50, M=20, CACO from zero init, eta_OV = 1,
eta_QK = ratio in {0.01, 0.1, 1, 10, 100}; thresholds log-spaced from 1 down
to 1e-4. Two ways:

(a) baseline -- fixed-step RK4 on the reduced ODE in rescaled time
    tau = t * min(eta_QK, eta_OV), step 10, plain Python loop (scalar
    ``math``-lambdified right-hand side from :mod:`derivations`), recording
    the state at the first step whose loss is below each threshold;
(b) :func:`numerics.dynamics.closed_form.state_at_loss`, vectorized over all 250
    points at once.

Both are compared with the mpmath 50-digit reference
(:func:`numerics.dynamics.closed_form.state_at_loss_mpmath`). Run::

    python benchmarks/stopping_curves.py [--repeats 20]
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from numerics.functions import lambdified as lam  # noqa: E402
from numerics.dynamics.closed_form import state_at_loss, state_at_loss_mpmath  # noqa: E402

PARAMS = dict(m=5, n=50, b=50, M=20)
RATIOS = (0.01, 0.1, 1.0, 10.0, 100.0)
THRESHOLDS = np.logspace(0, -4, 50)
KEYS = ("mu_OV", "mu_QK", "alpha")


def rk4_stopping_states(ratio, thresholds, *, m, n, b, M, step=10.0):
    """Baseline (a): RK4 in tau = t min(eta_QK, eta_OV) with fixed step.

    Returns an array (len(thresholds), 3) of (mu_OV, mu_QK, alpha) at the
    first step whose loss is below each threshold."""
    eta_qk, eta_ov = ratio, 1.0
    scale = min(eta_qk, eta_ov)
    f = lam.reduced_rhs("CACO", True, "math").func
    loss_f = lam.loss_fn("math").func
    alpha_f = lam.alpha_fn("math").func
    # d mu / d tau = (d mu / dt) / scale: rates divided by scale
    pr = (m, n, b, M, eta_qk / scale, eta_ov / scale, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0)
    h = step
    x, y = 0.0, 0.0
    out = np.empty((len(thresholds), 3))
    j = 0
    last = thresholds[-1]
    while True:
        k1x, k1y = f(x, y, *pr)
        k2x, k2y = f(x + 0.5 * h * k1x, y + 0.5 * h * k1y, *pr)
        k3x, k3y = f(x + 0.5 * h * k2x, y + 0.5 * h * k2y, *pr)
        k4x, k4y = f(x + h * k3x, y + h * k3y, *pr)
        x += h / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x)
        y += h / 6.0 * (k1y + 2 * k2y + 2 * k3y + k4y)
        loss = loss_f(x, y, m, n, M)
        while j < len(thresholds) and loss < thresholds[j]:
            out[j] = (x, y, alpha_f(y, m, n))
            j += 1
        if loss < last:
            return out


def reference(ratios, thresholds):
    ref = np.empty((len(thresholds), len(ratios), 3))
    for i, L in enumerate(thresholds):
        for k, r in enumerate(ratios):
            d = state_at_loss_mpmath(L, r, **PARAMS, dps=50)
            ref[i, k] = [float(d[key]) for key in KEYS]
    return ref


def max_rel_err(values, ref):
    return float(np.max(np.abs(values - ref) / np.abs(ref)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20, help="repeats of the closed form (best of)")
    args = ap.parse_args(argv)
    ratios = np.array(RATIOS)

    # warm up the cached lambdified functions (SymPy work is not timed)
    state_at_loss(THRESHOLDS[:, None], ratios[None, :], **PARAMS)
    lam.reduced_rhs("CACO", True, "math"), lam.loss_fn("math"), lam.alpha_fn("math")

    t0 = time.perf_counter()
    rk4 = np.stack([rk4_stopping_states(r, THRESHOLDS, **PARAMS) for r in ratios], axis=1)
    t_rk4 = time.perf_counter() - t0

    best = math.inf
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        st = state_at_loss(THRESHOLDS[:, None], ratios[None, :], **PARAMS)
        best = min(best, time.perf_counter() - t0)
    closed = np.stack([st.mu_OV, st.mu_QK, st.alpha], axis=-1)

    ref = reference(ratios, THRESHOLDS)
    print(f"Figure 4: {len(THRESHOLDS)} thresholds x {len(ratios)} ratios = {THRESHOLDS.size * ratios.size} states")
    print(f"(a) RK4, step 10 in tau, Python loop : {t_rk4:10.3f} s   max rel err {max_rel_err(rk4, ref):.2e}")
    print(f"(b) closed form (best of {args.repeats:3d})       : {best * 1e3:10.3f} ms  max rel err {max_rel_err(closed, ref):.2e}")
    print(f"speed ratio (a)/(b): {t_rk4 / best:,.0f}x")
    for k, r in enumerate(ratios):
        print(f"  ratio {r:6g}: RK4 err {max_rel_err(rk4[:, k], ref[:, k]):.2e}, "
              f"closed-form err {max_rel_err(closed[:, k], ref[:, k]):.2e}")
    return t_rk4, best


if __name__ == "__main__":
    main()
