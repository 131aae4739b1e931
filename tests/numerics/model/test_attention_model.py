"""Tests for numerics.model.paper and numerics.dynamics.training."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from derivations.core import PAPER_SETTING as PAPER, PARAMETERIZATIONS
from numerics.model import AttentionModel
from numerics.model import project, structured_params, summarize
from numerics.dynamics import ReducedSystem
from numerics.dynamics import Trajectory
from numerics.dynamics import gradient_descent, gradient_flow
from _family import distance_from_family, family_params


def fd_gradient(model, vec, h=1e-3, chunk=128):
    """Fourth-order central finite differences of the loss in flat coordinates: the losses at
    ``vec +- h e_i`` and ``vec +- 2 h e_i`` of ``chunk`` coordinates at a time, as one batch of
    :meth:`~numerics.model.AttentionModel.loss` (which takes leading batch axes)."""
    n = vec.size
    fd = np.empty_like(vec)
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        e = np.zeros((k, n))
        e[np.arange(k), start + np.arange(k)] = h
        up1, down1, up2, down2 = model.loss(model.unflatten(vec + np.concatenate([e, -e, 2 * e, -2 * e]))).reshape(4, k)
        fd[start:start + k] = (8 * (up1 - down1) - (up2 - down2)) / (12 * h)
    return fd


def assert_grad_matches(model, params, rel=1e-6):
    L, grads = model.loss_and_grad(params)
    assert set(grads) == set(model.keys)
    for k in model.keys:
        assert grads[k].shape == params[k].shape
    assert L == pytest.approx(model.loss(params), rel=1e-14, abs=0)
    g = model.flatten(grads)
    fd = fd_gradient(model, model.flatten(params))
    err = np.linalg.norm(fd - g) / np.linalg.norm(g)
    assert err < rel, (model.parameterization, err)


# --------------------------------------------------------------------------- #
# gradient
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("param", PARAMETERIZATIONS)
@pytest.mark.parametrize(
    "setting",
    [dict(m=2, n=3, b=1.5, M=2), dict(m=1.3, n=7.2, b=0.7, M=3), PAPER],
    ids=["M2", "M3", "paper"],
)
def test_gradient_finite_differences(param, setting):
    model = AttentionModel(param, **setting)
    params = model.random_params(scale=1.0, seed=123)
    assert distance_from_family(model, params) > 0.1  # genuinely off the family
    assert_grad_matches(model, params)


@given(
    param=st.sampled_from(PARAMETERIZATIONS),
    m=st.floats(0.1, 100.0),
    n=st.floats(0.1, 100.0),
    b=st.floats(0.5, 100.0),
    M=st.integers(2, 4),
    scale=st.floats(0.2, 1.5),
    seed=st.integers(0, 2**31 - 1),
)
def test_gradient_property(param, m, n, b, M, scale, seed):
    model = AttentionModel(param, m=m, n=n, b=b, M=M)
    params = model.random_params(scale=scale, seed=seed)
    # finite differences cannot resolve a gradient that vanishes to round-off
    # (saturated softmax / attention); such draws carry no information.
    assume(np.linalg.norm(model.loss_and_grad(params)[1]["W_V" if param[2] == "F" else "W_OV"]) > 1e-7)
    assert_grad_matches(model, params)


def test_gradient_structured_zero_entries():
    """Collapsed circuits only get gradient on the (q_k, r_k) / r-columns."""
    model = AttentionModel("CACO", M=3, m=2, n=3, b=2)
    params = model.random_params(scale=1.0, seed=0)
    _, g = model.loss_and_grad(params)
    M = model.M
    mask = np.zeros((2 * M, 2 * M), bool)
    mask[np.arange(M), M + np.arange(M)] = True
    assert np.all(g["W_QK"][~mask] == 0)
    assert np.all(g["W_OV"][:, :M] == 0)


# --------------------------------------------------------------------------- #
# family / reduced loss
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("param", PARAMETERIZATIONS)
@pytest.mark.parametrize("mu_OV,mu_QK", [(0.0, 0.0), (1.3, -0.7), (25.0, 3.0), (-2.0, 1.0), (400.0, 6.0)])
def test_family_loss_equals_reduced(param, mu_OV, mu_QK):
    model = AttentionModel(param, **PAPER)
    params = family_params(model, mu_OV, mu_QK, w=0.3)
    m, n, M = model.m, model.n, model.M
    alpha = m * math.exp(mu_QK) / (m * math.exp(mu_QK) + n)
    expected = math.log1p((M - 1) * math.exp(-alpha * mu_OV))
    assert model.loss(params) == pytest.approx(expected, rel=1e-12, abs=0)
    assert ReducedSystem(param, **PAPER).loss(mu_OV, mu_QK) == pytest.approx(expected, rel=1e-12, abs=0)
    np.testing.assert_allclose(model.attention(params), alpha, rtol=1e-13)
    pm = project(model, params)
    assert pm == pytest.approx((mu_OV, mu_QK), rel=1e-12, abs=1e-14)
    assert distance_from_family(model, params) < 1e-14


def test_project_is_least_squares():
    model = AttentionModel("CACO", M=4, m=1, n=2, b=3)
    params = model.random_params(scale=1.0, seed=5)
    mu_OV, mu_QK = project(model, params)
    W_QK, W_OV = model.circuits(params)
    M, b = model.M, model.b
    P = np.zeros_like(W_QK)
    P[np.arange(M), M + np.arange(M)] = b
    B = np.zeros_like(W_OV)
    B[:, M:] = math.sqrt(b) * (np.eye(M) - 1 / M)
    assert mu_QK == pytest.approx(np.vdot(W_QK, P) / np.vdot(P, P), rel=1e-13, abs=0)
    assert mu_OV == pytest.approx(np.vdot(W_OV, B) / np.vdot(B, B), rel=1e-13, abs=0)
    d = max(np.linalg.norm(W_QK - mu_QK * P) / np.linalg.norm(W_QK),
            np.linalg.norm(W_OV - mu_OV * B) / np.linalg.norm(W_OV))
    assert distance_from_family(model, params) == pytest.approx(d, rel=1e-12, abs=0)
    # batched evaluation agrees with the loop
    stack = {k: np.stack([params[k], 2 * params[k]]) for k in params}
    bo, bq = project(model, stack)
    # the same projections (above: to 1e-13 of their definition), summed in another order
    assert bo[0] == pytest.approx(mu_OV, rel=1e-13, abs=0) and bq[1] == pytest.approx(2 * mu_QK, rel=1e-13, abs=0)


def test_structured_init_on_family():
    for param in PARAMETERIZATIONS:
        model = AttentionModel(param, **PAPER)
        p = structured_params(model, eps=0.1)
        mu_OV, mu_QK = project(model, p)
        # eps^2 over b or sqrt(b) (0 unfactorized), the projection in doubles: a few roundings
        assert mu_QK == pytest.approx(0.01 / 50 if param[0] == "F" else 0.0, rel=1e-15, abs=0)
        assert mu_OV == pytest.approx(0.01 / math.sqrt(50) if param[2] == "F" else 0.0, rel=1e-15, abs=0)
        assert distance_from_family(model, p) < 1e-15


# --------------------------------------------------------------------------- #
# flow
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_flow_stays_on_family(param):
    model = AttentionModel(param, **PAPER, eta_QK=2.0, eta_O=0.5)
    res = gradient_flow(model, structured_params(model, eps=1e-2),
                        np.geomspace(1.0, 3e5, 60), loss_thresholds=(1.0, 0.1))
    assert isinstance(res, Trajectory) and res.status == 0
    assert np.max(res.distance) < 1e-10
    assert res.loss[-1] < 0.1 and np.all(np.diff(res.loss) <= 1e-12)
    # loss equals the reduced loss along the way
    reduced = ReducedSystem(param, **PAPER)
    np.testing.assert_allclose(res.loss, reduced.loss(res.mu_OV, res.mu_QK), rtol=1e-10)
    assert res.thresholds == (1.0, 0.1)
    for thr, c in zip(res.thresholds, res.crossings):
        assert c["loss"] == pytest.approx(thr, rel=1e-6)
        assert model.loss(c["params"]) == pytest.approx(thr, rel=1e-6)


def test_flow_matches_reduced_ode_caco():
    """On the family (CACO) the reduced dynamics is
    mu_QK' = -eta_QK/(b^2 M) dL/dmu_QK,  mu_OV' = -eta_OV/(b (M-1)) dL/dmu_OV."""
    model = AttentionModel("CACO", m=3, n=10, b=4, M=5, eta_QK=3.0, eta_OV=0.7)
    m, n, b, M = model.m, model.n, model.b, model.M

    def rhs(t, y):
        mo, mq = y
        a = m * math.exp(mq) / (m * math.exp(mq) + n)
        s = (M - 1) * math.exp(-a * mo)
        dL_dx = -s / (1 + s)  # dL/d(alpha mu_OV)
        return [-model.eta_OV / (b * (M - 1)) * dL_dx * a,
                -model.eta_QK / (b * b * M) * dL_dx * mo * a * (1 - a)]

    t = np.linspace(0, 200, 11)
    ref = solve_ivp(rhs, (0, 200), [0.0, 0.0], t_eval=t, rtol=1e-12, atol=1e-14)
    res = gradient_flow(model, structured_params(model), t)
    np.testing.assert_allclose(res.mu_OV, ref.y[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res.mu_QK, ref.y[1], rtol=1e-8, atol=1e-12)


def test_flow_target_loss_terminal_event():
    model = AttentionModel("FAFO", **PAPER)
    res = gradient_flow(model, structured_params(model), np.geomspace(1, 1e6, 100), target_loss=0.5)
    assert res.status == 1
    tc = res.target_state["t"]
    assert res.t[-1] <= tc < 1e6
    assert model.loss(res.params) == pytest.approx(0.5, rel=1e-6)


def test_flow_is_bounded():
    """No run is unbounded: past max_steps the flow stops with status -1 and its records."""
    model = AttentionModel("CACO", **PAPER)
    res = gradient_flow(model, structured_params(model), t_span=(0, 1e9), max_steps=5)
    assert res.status == -1 and res.nsteps == 5 and "max_steps" in res.message
    assert res.t.size == 6 and np.all(np.isfinite(res.loss))


def test_random_init_distance_reported():
    model = AttentionModel("CAFO", M=3, m=2, n=5, b=2)
    res = gradient_flow(model, model.random_params(scale=0.3, seed=1), t_span=(0, 5))
    assert res.status == 0 and res.t[0] == 0 and res.t[-1] == 5
    assert np.all(res.distance > 1e-3)



def test_distance_counts_a_small_circuit_off_the_family():
    """The distance is the larger of the two circuits' relative residuals, and a circuit of norm 1e-9
    counts (it is far above the round-off of its factors' product, 64 eps |W_Q| |W_K| = 3e-14): one
    entry off U_QK's pattern (q_k, r_k) gives distance 1, collapsed or as the product of two factors
    of norm sqrt(2) whose columns cancel."""
    model = AttentionModel("CACO", M=3)
    p = model.init_params("zero")
    p["W_QK"][0, 1] = 1e-9                  # (q_0, q_1)
    assert summarize(model, model.flatten(p))["distance"] == 1.0
    model = AttentionModel("FAFO", M=3)
    p = model.init_params("zero")
    p["W_Q"][0, :2] = 1.0                   # W_QK = e_0 (k_0 + k_1)^T = 1e-9 e_0 e_1^T
    p["W_K"][4, :2] = 1.0, -1.0
    p["W_K"][1, 1] = 1e-9
    assert summarize(model, model.flatten(p))["distance"] == 1.0

# --------------------------------------------------------------------------- #
# gradient descent
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("param", PARAMETERIZATIONS)
def test_descent_first_order_convergence(param):
    model = AttentionModel(param, m=2, n=5, b=2, M=3, eta_QK=1.5, eta_OV=0.8)
    p0 = model.random_params(scale=0.7, seed=3)
    T = 2.0
    flow = gradient_flow(model, p0, [0.0, T], rtol=1e-12, atol=1e-14)
    ref = model.flatten(flow.params)
    errs = []
    for lr in (0.02, 0.01, 0.005):
        gd = gradient_descent(model, p0, lr, round(T / lr), record_every=10)
        assert gd.t[-1] == pytest.approx(T, rel=1e-14, abs=0) and gd.status == 0     # steps x lr in doubles
        errs.append(np.linalg.norm(model.flatten(gd.params) - ref))
    ratios = errs[0] / errs[1], errs[1] / errs[2]
    assert all(1.8 < r < 2.2 for r in ratios), ratios
    assert np.linalg.norm(ref - model.flatten(p0)) > 50 * errs[-1]  # non-trivial motion


def test_descent_records_and_thresholds():
    model = AttentionModel("CACO", M=3, m=2, n=5, b=2, eta_OV=5.0)
    p0 = structured_params(model)
    gd = gradient_descent(model, p0, 0.1, 1000, record_every=7, loss_thresholds=(0.9, 0.5),
                          target_loss=0.2)
    assert gd.status == 1 and gd.loss[-1] <= 0.2 < gd.loss[-2]
    np.testing.assert_array_equal(gd.t, gd.step * 0.1)
    c9, c5 = gd.crossings
    assert c9["t"] < c5["t"] < gd.target_state["t"] == gd.t[-1]
    assert np.max(gd.distance) < 1e-12
    full = gradient_descent(model, p0, 0.1, 20)
    assert list(full.step) == list(range(21)) and full.nfev == 21


# --------------------------------------------------------------------------- #
# flatten / rates
# --------------------------------------------------------------------------- #
def test_flatten_roundtrip_and_rates():
    model = AttentionModel("FAFO", M=3, eta_QK=2.0, eta_K=3.0, eta_OV=0.5, eta_V=0.25)
    assert (model.eta_Q, model.eta_K, model.eta_O, model.eta_V) == (2.0, 3.0, 0.5, 0.25)
    p = model.random_params(seed=0)
    v = model.flatten(p)
    assert v.shape == (model.n_params,) == (6 * 3 + 6 * 3 + 9 + 18,)
    q = model.unflatten(v)
    for k in model.keys:
        np.testing.assert_array_equal(q[k], p[k])
    r = model.unflatten(model.rates_vector())
    for k, eta in (("W_Q", 2.0), ("W_K", 3.0), ("W_O", 0.5), ("W_V", 0.25)):
        assert np.all(r[k] == eta)



def test_init_params_scale_and_batch_rules():
    """The identity start is ``scale`` times the rectangular identity (the authors' 1e-6 I); the
    gradient takes one point: parameters with a batch axis are refused, naming the matrix."""
    model = AttentionModel("FAFO", M=2)
    p = model.init_params("identity", scale=1e-6)
    for k in model.keys:
        np.testing.assert_array_equal(p[k], 1e-6 * np.eye(*model.shapes[k]))
    batched = {k: np.stack([v, v]) for k, v in p.items()}
    assert model.loss(batched).shape == (2,)
    with pytest.raises(ValueError, match=r"params\['W_Q'\] must have shape \(4, 2\)"):
        model.loss_and_grad(batched)


def test_the_full_model_holds_2_to_2000_classes():
    """Both ends of the documented range [2, MAX_CLASSES] are accepted, one beyond either refused."""
    from numerics.model.paper import MAX_CLASSES, check_full_model_classes
    assert MAX_CLASSES == 2000
    assert check_full_model_classes(2) == 2 and check_full_model_classes(2000.0) == 2000
    for bad in (1, 2001):
        with pytest.raises(ValueError, match=r"^M must be an integer in \[2, 2000\] for the full model"):
            check_full_model_classes(bad)

# --------------------------------------------------------------------------- #
# validation
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(m=0), "m"), (dict(m=-1.0), "m"), (dict(n=float("inf")), "n"),
        (dict(b=0.0), "b"), (dict(b=float("nan")), "b"), (dict(M=1), "M"),
        (dict(M=2.5), "M"), (dict(M=True), "M"), (dict(eta_QK=0), "eta_QK"),
        (dict(eta_OV=-1), "eta_OV"), (dict(eta_Q=float("inf")), "eta_Q"),
        (dict(eta_V=0.0), "eta_V"), (dict(m="5"), "m"),
    ],
)
def test_constructor_validation(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        AttentionModel("CACO", **kwargs)


def test_other_validation():
    with pytest.raises(ValueError, match="CACO.*CAFO.*FACO.*FAFO"):
        AttentionModel("XAXO")
    model = AttentionModel("FAFO", M=2)
    with pytest.raises(ValueError, match="eps"):
        structured_params(model, eps=0)
    with pytest.raises(ValueError, match="scale"):
        model.random_params(scale=-1)
    with pytest.raises(ValueError, match="W_O"):
        model.loss({"W_Q": np.zeros((4, 2)), "W_K": np.zeros((4, 2)), "W_V": np.zeros((2, 4))})
    with pytest.raises(ValueError, match="W_Q"):
        model.loss({**structured_params(model), "W_Q": np.zeros((2, 2))})
    p0 = structured_params(model)
    with pytest.raises(ValueError, match="lr"):
        gradient_descent(model, p0, 0.0, 10)
    with pytest.raises(ValueError, match="steps"):
        gradient_descent(model, p0, 0.1, -1)
    with pytest.raises(ValueError, match="record_every"):
        gradient_descent(model, p0, 0.1, 10, record_every=0)
    with pytest.raises(ValueError, match="t_eval"):
        gradient_flow(model, p0, [1.0, 0.5])
    with pytest.raises(ValueError, match="target_loss"):
        gradient_flow(model, p0, [0, 1], target_loss=-1)
    with pytest.raises(ValueError, match="t_eval"):
        gradient_flow(model, p0, [1.0, np.nan])
    with pytest.raises(ValueError, match="params0"):
        gradient_flow(model, model.flatten(p0) * np.nan, [0.0, 1.0])


@pytest.mark.parametrize("lr", [1e300])
def test_descent_divergence_is_a_failure(lr):
    """A step size far too large diverges: status -1 and a message, never a success
    with NaN values (regression: lr=1e300 reported success with a NaN distance)."""
    model = AttentionModel("CACO", **PAPER)
    with np.errstate(all="ignore"):
        gd = gradient_descent(model, structured_params(model), lr, 10)
    assert gd.status == -1 and not gd.success
    assert "non-finite" in gd.message


def test_structured_params_are_the_paper_initialization():
    """The basis-matrix construction (derivations.tasks.paper.model.basis_matrix) gives the
    initialization written out entry by entry in the paper."""
    M, eps = 4, 0.3
    model = AttentionModel("FAFO", M=M)
    p = structured_params(model, eps=eps)
    idx = np.arange(M)
    W_Q, W_K, W_V = np.zeros((2 * M, M)), np.zeros((2 * M, M)), np.zeros((M, 2 * M))
    W_Q[idx, idx] = eps
    W_K[M + idx, idx] = eps
    W_V[idx, M + idx] = eps
    # entries eps or eps (1 - 1/M): the same numbers, or an ulp (5.6e-17 at 0.3) from one more rounding
    for key, want in (("W_Q", W_Q), ("W_K", W_K), ("W_O", eps * (np.eye(M) - 1 / M)), ("W_V", W_V)):
        np.testing.assert_allclose(p[key], want, rtol=2.3e-16, atol=0)
    collapsed = structured_params(AttentionModel("CACO", M=M))
    assert all(not np.any(v) for v in collapsed.values())
