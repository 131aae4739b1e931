"""The crossover ratio and the master curve (numerics/dynamics/crossover.py) against an
independent full-matrix gradient flow written here from the model's definition.

The reference: every entry of W_QK (V x V) and W_OV (M x V) a free parameter, V = M (1 + R)
one-hot tokens scaled by 1/sqrt(b) (the query's token q_k and R relevant types r_{k,i} per
class; the n irrelevant tokens embed as zero), class k's context holding s copies of q_k
(its own position included), m/R copies of each r_{k,i} and n irrelevant tokens; scores
x_q^T W_QK x_j, logits W_OV c, the class-averaged cross-entropy, gradient flow from zero with
rates eta_QK = r, eta_OV = 1, stopped where the loss first reaches L. Nothing of the engine or of
the master flow is used.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from numerics.dynamics import (boundary, crossover_lambda, lambda_of_ratio, master_lambda, master_shares,
                               ratio_of_lambda, task_shape)


class FullFlow:
    """The full-matrix gradient flow of the query-copies model (see the module docstring)."""

    def __init__(self, s, m, n, R, M, b):
        self.s, self.m, self.n, self.R, self.M, self.b = s, m, n, R, M, b
        self.V = M * (1 + R)
        # token index: q_k = k; r_{k,i} = M + k R + i
        self.ctx = []
        for k in range(M):
            idx = [k] + [M + k * R + i for i in range(R)]
            counts = [s] + [m / R] * R
            self.ctx.append((np.array(idx), np.array(counts, float)))

    def unpack(self, w):
        V, M = self.V, self.M
        return w[:V * V].reshape(V, V), w[V * V:].reshape(M, V)

    def parts(self, w, k):
        WQK, WOV = self.unpack(w)
        idx, counts = self.ctx[k]
        sc = WQK[k, idx] / self.b
        top = max(sc.max(), 0.0)
        e = counts * np.exp(sc - top)
        Z = e.sum() + self.n * math.exp(-top)
        a = e / Z
        z = WOV[:, idx] @ a / math.sqrt(self.b)
        p = np.exp(z - z.max())
        p /= p.sum()
        return idx, a, z, p

    def loss(self, w):
        total = 0.0
        for k in range(self.M):
            _idx, _a, z, _p = self.parts(w, k)
            total += np.logaddexp.reduce(z) - z[k]
        return total / self.M

    def rhs(self, w, ratio):
        V, M = self.V, self.M
        gQK, gOV = np.zeros((V, V)), np.zeros((M, V))
        WOV = self.unpack(w)[1]
        for k in range(M):
            idx, a, _z, p = self.parts(w, k)
            dz = p.copy()
            dz[k] -= 1.0
            gOV[:, idx] += np.outer(dz, a) / math.sqrt(self.b)
            g = dz @ WOV[:, idx] / math.sqrt(self.b)          # dL/da_j
            gQK[k, idx] += a * (g - a @ g) / self.b           # softmax; the zero tokens have g = 0
        return -np.concatenate([ratio * gQK.ravel(), gOV.ravel()]) / M

    def shares_at(self, ratio, loss):
        """(self, relevant) attention at the first time the loss reaches ``loss``."""
        event = lambda _t, w: self.loss(w) - loss  # noqa: E731
        event.terminal, event.direction = True, -1
        w0 = np.zeros(self.V * self.V + self.M * self.V)
        run = solve_ivp(lambda _t, w: self.rhs(w, ratio), (0, 1e7), w0, method="LSODA",
                        events=event, rtol=1e-9, atol=1e-11)
        assert run.status == 1, run.message
        _idx, a, _z, _p = self.parts(run.y_events[0][0], 0)
        return a[0], a[1:].sum()

    def crossover(self, loss, lo=1e-3, hi=1e4):
        f = lambda logr: np.subtract(*self.shares_at(math.exp(logr), loss))  # noqa: E731
        return math.exp(brentq(f, math.log(lo), math.log(hi), xtol=1e-10))


SETTINGS = [  # (s, m, n, R, M, b, L), inside the window m/R < s < m
    (2, 4, 6, 4, 3, 2.0, 0.6),
    (3, 4, 5, 2, 4, 1.0, 0.8),
]


@pytest.mark.parametrize("s, m, n, R, M, b, L", SETTINGS)
def test_crossover_ratio_agrees_with_the_full_matrix_flow(s, m, n, R, M, b, L):
    [rec] = boundary(s=s, m=m, n=n, R=R, target_loss=L, M=M, b=b)
    reference = FullFlow(s, m, n, R, M, b).crossover(L)
    assert rec["reason"] is None
    # the two agree to about 1e-9 (both flows integrated at rtol <= 1e-9, both searches to 1e-10 in
    # log r); 1e-7 leaves a margin and still sees a bias of 1e-6 in the shares' difference
    assert rec["crossover_ratio"] == pytest.approx(reference, rel=1e-7)


def test_master_shares_are_the_full_flow_shares_at_equal_lambda():
    """Two (r, L, M, b) with one Lambda: the full flow's shares equal the master curve's."""
    s, m, n, R = 2, 4, 6, 4
    lam = 0.8
    expected = master_shares(lam, s=s, m=m, n=n, R=R)
    for M, b, L in ((3, 2.0, 0.6), (4, 1.0, 0.9)):
        ratio = float(ratio_of_lambda(lam, L, M, b))
        self_share, relevant = FullFlow(s, m, n, R, M, b).shares_at(ratio, L)
        assert self_share == pytest.approx(float(expected["self_attention"]), abs=1e-6)
        assert relevant == pytest.approx(float(expected["relevant_attention"]), abs=1e-6)


@pytest.mark.parametrize("s, m, R, word", [
    (4, 4, 1, "tie at s = m"), (5, 4, 2, "outside the window"), (4, 4, 2, "outside the window"),
    (2, 4, 2, "outside the window"), (1, 4, 2, "outside the window"), (0, 5, 1, "outside the window")])
def test_no_crossover_outside_the_window(s, m, R, word):
    [rec] = boundary(s=s, m=m, n=6, R=R, target_loss=0.5, M=3, b=1.0)
    assert rec["crossover_ratio"] is None and rec["crossover_lambda"] is None
    assert rec["reason"].startswith(word)


@pytest.mark.parametrize("s, m, R, observed", [(5, 4, 1, False), (0, 5, 1, False), (5, 4, 2, True),
                                                 (1, 4, 2, True), (2, 4, 2, False)])
def test_the_reason_says_whether_no_crossover_is_derived(s, m, R, observed):
    """With one relevant type the sign of s - m holds at every ratio, and at s = m/R relevant = R self
    (derived); otherwise only the limits are derived, and the reason says the rest is observed."""
    [rec] = boundary(s=s, m=m, n=6, R=R, target_loss=0.5, M=3, b=1.0)
    assert rec["reason"].endswith("at every ratio; derived at both ends of the ratio range, observed between "
                                  "them)" if observed else "at every ratio)")


@pytest.mark.parametrize("s, m, R", [(1, 4, 4), (2, 10, 5)])
def test_at_the_edge_s_equal_m_over_r_the_symmetric_flow_is_kept(s, m, R):
    """At s = m/R the query's token is one more relevant type; the flow from zero keeps the two equal,
    a state rounding breaks at large Lambda (the self share jumped between 0.0003 and 0.9995 beyond
    Lambda ~ 750). Where the general flow is stable (Lambda <= 30) it agrees with the one a hair off the
    edge (s (1 + 1e-12)) to 1e-9; beyond, the shares stay smooth: relevant = R self, self rising to 1/(R+1)."""
    lam = np.geomspace(1e-3, 30, 7)
    edge = master_shares(lam, s=s, m=m, n=10, R=R)
    off = master_shares(lam, s=s * (1 + 1e-12), m=m, n=10, R=R)
    for key in edge:
        np.testing.assert_allclose(edge[key], off[key], rtol=0, atol=1e-9)
    big = master_shares(np.geomspace(30, 1e5, 12), s=s, m=m, n=10, R=R)
    np.testing.assert_allclose(big["relevant_attention"], R * big["self_attention"], rtol=1e-12)
    assert (np.diff(big["self_attention"]) > 0).all() and (big["self_attention"] < 1 / (R + 1)).all()
    assert big["self_attention"][-1] == pytest.approx(1 / (R + 1), abs=1e-3)


def test_not_reached_within_the_ratio_range():
    [rec] = boundary(s=2, m=4, n=6, R=4, target_loss=0.6, M=3, b=2.0, ratio_range=(1e-4, 1e-3))
    assert rec["crossover_ratio"] is None and rec["reason"].startswith("not reached")


@pytest.mark.parametrize("s, m, R", [(4, 4, 1), (0.5, 4, 4), (1, 4, 4), (5, 4, 2)])
def test_the_sign_outside_the_window_holds_at_every_lambda(s, m, R):
    """Outside the window the sign of (self - relevant) is that of (s - m) (R = 1) or constant."""
    a = master_shares(np.geomspace(1e-3, 1e3, 7), s=s, m=m, n=6, R=R)
    d = a["self_attention"] - a["relevant_attention"]
    if s == m and R == 1:
        assert np.allclose(d, 0, atol=1e-9)
    else:
        assert np.all(np.sign(d) == np.sign(d[0])) and np.all(d != 0)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="R must be"):
        boundary(s=2, m=4, n=6, R=0, target_loss=0.5, M=3, b=1.0)
    with pytest.raises(ValueError, match="loss must be"):
        boundary(s=2, m=4, n=6, R=4, target_loss=2.0, M=3, b=1.0)
    with pytest.raises(ValueError, match="Lambda must be"):
        master_shares(-1.0)


def test_lambda_and_ratio_are_inverse():
    lam = lambda_of_ratio(3.0, 0.4, 20, 50)
    assert float(ratio_of_lambda(lam, 0.4, 20, 50)) == pytest.approx(3.0, rel=1e-14, abs=0)


@settings(max_examples=8)
@given(m=st.floats(2, 20), frac=st.floats(0.05, 0.95), R=st.integers(2, 10), n=st.floats(0, 60))
def test_crossover_is_a_sign_change_inside_the_window(m, frac, R, n):
    """Inside the window Lambda* exists, relevant wins just below it and self just above it."""
    s = m / R + frac * (m - m / R)
    lam, reason = crossover_lambda(s=s, m=m, n=n, R=R, lambda_range=(1e-8, 1e10))
    assert reason is None, reason
    below, above = (master_shares(lam * f, s=s, m=m, n=n, R=R) for f in (0.98, 1.02))
    assert below["relevant_attention"] > below["self_attention"]
    assert above["relevant_attention"] < above["self_attention"]


def _engine_shares(ratio, loss, m, n, M, b):
    """(self, relevant) of the engine's reduced query-in-context flow (its own integration)."""
    from numerics.dynamics import state_at_loss
    st_ = state_at_loss(loss, ratio, task="query-in-context", method="reduced flow", m=m, n=n, M=M, b=b)
    xq, xr = float(st_.coordinates["mu_QK_q"]), float(st_.coordinates["mu_QK"])
    Z = math.exp(xq) + m * math.exp(xr) + n
    return math.exp(xq) / Z, m * math.exp(xr) / Z


_COLLAPSE = dict(m=st.integers(1, 10), n=st.integers(1, 60), lam=st.floats(0.05, 30),
                 L1=st.floats(0.1, 0.6), M1=st.integers(3, 12), b1=st.floats(0.5, 8),
                 L2=st.floats(0.1, 0.6), M2=st.integers(3, 12), b2=st.floats(0.5, 8))


@settings(max_examples=3)
@given(**_COLLAPSE)
def test_lambda_collapse_of_the_engine_flow(m, n, lam, L1, M1, b1, L2, M2, b2):
    """The engine's reduced query-in-context flow at two (r, L, M, b) of one Lambda: the same
    shares, and the master curve's (s = R = 1), to 1e-6."""
    _check_collapse(m, n, lam, L1, M1, b1, L2, M2, b2)


@pytest.mark.slow
@settings(max_examples=40)
@given(**_COLLAPSE)
def test_lambda_collapse_of_the_engine_flow_exhaustive(m, n, lam, L1, M1, b1, L2, M2, b2):
    _check_collapse(m, n, lam, L1, M1, b1, L2, M2, b2)


def _check_collapse(m, n, lam, L1, M1, b1, L2, M2, b2):
    expected = master_shares(lam, s=1, m=m, n=n, R=1)
    for L, M, b in ((L1, M1, b1), (L2, M2, b2)):
        ratio = float(ratio_of_lambda(lam, L, M, b))
        self_share, relevant = _engine_shares(ratio, L, m, n, M, b)
        assert self_share == pytest.approx(float(expected["self_attention"]), abs=1e-6)
        assert relevant == pytest.approx(float(expected["relevant_attention"]), abs=1e-6)


@settings(max_examples=10)
@given(m=st.floats(1, 20), n=st.floats(1, 100), lam=st.floats(1e-3, 1e3), L=st.floats(0.01, 1.0),
       M=st.integers(3, 100), b=st.floats(0.5, 100))
def test_the_paper_closed_form_is_the_master_curve_with_no_self(m, n, lam, L, M, b):
    """The paper's task (s = 0): its closed-form alpha at r = r(Lambda, L, M, b) is the master curve's."""
    from numerics.dynamics import state_at_loss
    ratio = float(ratio_of_lambda(lam, L, M, b))
    alpha = float(state_at_loss(L, ratio, m=m, n=n, M=M, b=b).alpha)
    expected = master_shares(lam, s=0, m=m, n=n, R=1)
    assert float(expected["self_attention"]) == 0.0
    assert alpha == pytest.approx(float(expected["relevant_attention"]), abs=1e-6)


@settings(max_examples=10)
@given(m=st.floats(1, 20), s=st.floats(0.5, 20), n=st.floats(0, 100), lam=st.floats(1e-3, 1e3))
def test_one_relevant_type_never_crosses(m, s, n, lam):
    """R = 1: the sign of (self - relevant) at the stopping loss is the sign of (s - m)."""
    a = master_shares(lam, s=s, m=m, n=n, R=1)
    d = float(a["self_attention"] - a["relevant_attention"])
    assert np.sign(d) == np.sign(s - m) or abs(s - m) < 1e-9


def test_early_growth_ratio_does_not_depend_on_lambda():
    """The score gaps' ratio x_q/x_r early in the master flow is the derived ratio, at every Lambda."""
    from derivations.task_catalog import task_reduction
    from derivations.tasks.crossover import early_growth_ratio, master_flow
    from numerics.dynamics.crossover import _rhs
    m, n = 3.0, 7.0
    flow = master_flow("query-in-context", task_reduction("query-in-context", "CACO"))
    syms = {s.name: s for s in early_growth_ratio(flow).free_symbols}
    derived = float(early_growth_ratio(flow).subs({syms["m"]: m, syms["n"]: n}))
    for lam in (0.01, 1.0, 100.0):
        z = solve_ivp(_rhs(lam, 1.0, m, n, 1.0), (0, 1e-3 / max(1, lam)), np.zeros(4),
                      rtol=1e-12, atol=1e-30).y[:, -1]
        assert z[0] / z[1] == pytest.approx(derived, rel=1e-3)


def test_the_numeric_master_flow_is_the_derived_one():
    """numerics' right-hand side equals the master flow derived from the engine's query-copies
    reduction (derivations.tasks.crossover.master_flow), at random points; every other Lambda above
    DIFFERENCE_MAX, where the gaps Y - U are rearranged."""
    import sympy as sp
    from derivations.task_catalog import task_reduction
    from derivations.tasks.crossover import Lambda, master_flow
    from numerics.dynamics.crossover import _rhs
    flow = master_flow("query-copies", task_reduction("query-copies", "CACO"))
    sym = {name: flow.symbol(name) for name in ("s", "m", "n", "R")}
    order = [flow.x["q"], flow.x["r"], flow.Y["q"], flow.Y["r"]]
    derived = sp.lambdify([Lambda, *sym.values(), *order], [flow.rhs[v] for v in order])
    rng = np.random.default_rng(5)
    for i in range(20):
        lam, s, m, n, R = rng.uniform(0.01, 50), rng.uniform(0.5, 9), rng.uniform(0.5, 20), \
            rng.uniform(0, 60), rng.integers(1, 12)
        lam *= 1e12 if i % 2 else 1.0
        z = rng.normal(size=4) * [3, 3, 1, 1]
        assert np.allclose(_rhs(lam, s, m, n, float(R))(0.0, z), derived(lam, s, m, n, R, *z),
                           rtol=1e-12, atol=0)


def test_task_shape_of_query_copies():
    from numerics.dynamics import task_shape
    assert task_shape("query-copies", s=2, R=5, m=5, n=10, M=4, b=2) == {
        "s": 2.0, "m": 5.0, "n": 10.0, "R": 5.0, "M": 4.0, "b": 2.0}
    assert task_shape("paper")["s"] == 0.0


@pytest.mark.slow
def test_lambda_collapse_of_the_engine_query_copies_flow():
    """The engine's reduced query-copies flow at two (r, L, M, b) of one Lambda: the master curve's
    shares, to 1e-6."""
    from numerics.dynamics import state_at_loss
    s, m, n, R, lam = 2, 5, 10, 5, 0.7
    expected = master_shares(lam, s=s, m=m, n=n, R=R)
    for L, M, b in ((0.2, 4, 2.0), (0.5, 7, 0.5)):
        ratio = float(ratio_of_lambda(lam, L, M, b))
        st_ = state_at_loss(L, ratio, task="query-copies", method="reduced flow", s=s, R=R, m=m, n=n, M=M, b=b)
        xq, xr = float(st_.coordinates["mu_QK_q"]), float(st_.coordinates["mu_QK"])
        Z = s * math.exp(xq) + m * math.exp(xr) + n
        assert s * math.exp(xq) / Z == pytest.approx(float(expected["self_attention"]), abs=1e-6)
        assert m * math.exp(xr) / Z == pytest.approx(float(expected["relevant_attention"]), abs=1e-6)


# ---------------------------------------------------------------- a task by name, file or Task

QC_FILE = ('name = "qc-file"\ndescription = "query-copies as a file"\nquery = "q"\n'
           'query_in_context = true\nrelevant = ["r"]\n[parameters]\ns = 2\nR = 5\n'
           '[[groups]]\nname = "q"\nper_class = true\nmultiplicity = "s - 1"\n'
           '[[groups]]\nname = "r"\nper_class = true\ntypes = "R"\nmultiplicity = "m / R"\n'
           '[[groups]]\nname = "z"\nper_class = false\nembedded = false\nmultiplicity = "n"\n')


def _lambda_by_hand(r, L, M, b):
    """Lambda = r (M - 1) l(L)^2 / (M b), l(L) = log((M - 1)/(e^L - 1)), written out here."""
    return r * (M - 1) * math.log((M - 1) / (math.exp(L) - 1)) ** 2 / (M * b)


def test_master_lambda_of_a_task_is_the_formula():
    from numerics.dynamics import master_lambda
    assert float(master_lambda(3.0, 0.4)) == pytest.approx(_lambda_by_hand(3.0, 0.4, 20, 50), rel=1e-13, abs=0)
    assert float(master_lambda(2.0, 0.3, "query-copies", s=2, R=5, m=5, n=10, M=4, b=2)) == \
        pytest.approx(_lambda_by_hand(2.0, 0.3, 4, 2), rel=1e-13, abs=0)
    # the authors' task: M = 4 classes, unscaled one-hot embeddings (b = 1)
    assert float(master_lambda(2.0, 0.3, "authors")) == pytest.approx(_lambda_by_hand(2.0, 0.3, 4, 1), rel=1e-13, abs=0)
    with pytest.raises(ValueError, match="no parameter 'q'"):
        master_lambda(1.0, 0.3, "query-copies", q=1)
    with pytest.raises(ValueError, match="loss must be"):
        master_lambda(1.0, 2.0, "authors")          # not below log 4


@pytest.mark.parametrize("L, M, b", [(0.1, 20, 50.0), (0.4, 5, 2.0), (0.9, 3, 0.5)])
def test_master_shares_of_the_paper_task_are_its_closed_form_state(L, M, b):
    """The paper's task by name: the engine's state at a loss (closed form) at r = r(Lambda, L, M, b),
    three (L, M, b) of one Lambda, equals master_shares(Lambda, "paper") to 1e-7."""
    from numerics.dynamics import state_at_loss
    lam, m, n = 0.9, 4.0, 30.0
    expected = master_shares(lam, "paper", m=m, n=n, M=M, b=b)
    st_ = state_at_loss(L, float(ratio_of_lambda(lam, L, M, b)), task="paper", m=m, n=n, M=M, b=b)
    assert float(expected["self_attention"]) == float(st_.self_attention) == 0.0
    assert float(st_.relevant_attention) == pytest.approx(float(expected["relevant_attention"]), abs=1e-7)


def test_master_shares_of_a_task_file_and_a_task_are_the_built_in_tasks(tmp_path):
    from derivations.tasks import get_task
    path = tmp_path / "qc.toml"
    path.write_text(QC_FILE)
    lam = [0.2, 3.0]
    by_numbers = master_shares(lam, s=2, m=5, n=10, R=5)
    for task in ("query-copies", str(path), get_task(str(path))):
        got = master_shares(lam, task, s=2, R=5, m=5, n=10, M=4, b=2)
        assert all(np.array_equal(got[k], by_numbers[k]) for k in by_numbers)
    assert boundary(str(path), s=2, R=5, m=5, n=10, M=4, b=2, target_loss=0.2) == \
        boundary(s=2, R=5, m=5, n=10, M=4, b=2, target_loss=0.2)
    with pytest.raises(ValueError, match="not of the query-copies shape"):
        master_shares(1.0, "shared-irrelevant")
    with pytest.raises(ValueError, match="not a number of the shape"):
        master_shares(1.0, n_c=2)


def test_master_shares_of_query_copies_are_the_engine_reduced_flow():
    """query-copies by name: the engine's reduced flow (state_at_loss) at three (L, M, b) of one
    Lambda gives master_shares(Lambda, "query-copies") to 1e-6 (self and relevant)."""
    from numerics.dynamics import state_at_loss
    lam, task = 0.7, dict(s=3, R=2, m=4, n=5)
    for L, M, b in ((0.2, 4, 2.0), (0.5, 7, 0.5), (0.8, 3, 1.0)):
        expected = master_shares(lam, "query-copies", **task, M=M, b=b)
        st_ = state_at_loss(L, float(ratio_of_lambda(lam, L, M, b)), task="query-copies", **task, M=M, b=b)
        for key in ("self_attention", "relevant_attention"):
            assert float(getattr(st_, key)) == pytest.approx(float(expected[key]), abs=1e-6)


_BAD_POSITIVE = [math.nan, math.inf, -1.0, 0.0, None, "1", True]


@pytest.mark.parametrize("call, name", [
    (lambda v: lambda_of_ratio(v, 0.5, 20, 50), "ratio"),
    (lambda v: lambda_of_ratio(1.0, 0.5, 20, v), "b"),
    (lambda v: ratio_of_lambda(v, 0.5, 20, 50), "lam"),
    (lambda v: ratio_of_lambda(1.0, 0.5, 20, v), "b"),
    (lambda v: master_lambda(v, 0.5), "ratio"),
    (lambda v: master_lambda(v, 0.5, "query-copies"), "ratio"),
])
@pytest.mark.parametrize("bad", _BAD_POSITIVE)
def test_lambda_conversions_reject_what_is_not_positive(call, name, bad):
    """Never a silent nan, inf, negative or zero Lambda (or ratio): a ValueError naming the parameter."""
    with pytest.raises(ValueError, match=f"^{name} must be finite numbers > 0"):
        call(bad)


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, "1"])
def test_one_bad_entry_of_an_array_is_a_value_error(bad):
    with pytest.raises(ValueError, match="^ratio must be finite numbers > 0"):
        lambda_of_ratio([1.0, bad], 0.5, 20, 50)


def test_an_infinite_class_count_is_a_value_error():
    with pytest.raises(ValueError, match="^M must be finite and > 1"):
        lambda_of_ratio(1.0, 0.5, math.inf, 50)
    with pytest.raises(ValueError, match="^M must be finite and > 1"):
        ratio_of_lambda(1.0, 0.5, math.inf, 50)


@pytest.mark.parametrize("kw, name", [
    ({"lambda_range": (1.0, 0.5)}, "lambda_range"), ({"lambda_range": (0.0, 1.0)}, "lambda_range"),
    ({"lambda_range": (math.nan, 1.0)}, "lambda_range"), ({"lambda_range": (1.0, math.inf)}, "lambda_range"),
    ({"lambda_range": 5}, "lambda_range"), ({"xtol": -1.0}, "xtol"), ({"xtol": math.nan}, "xtol"),
    ({"xtol": "1"}, "xtol")])
@pytest.mark.parametrize("shape", [{}, {"s": 2, "m": 5, "n": 10, "R": 5}], ids=["outside", "inside"])
def test_crossover_lambda_checks_its_search_before_the_window(kw, name, shape):
    """Outside the window (no search) as inside it: the search's arguments are checked first."""
    with pytest.raises(ValueError, match=f"^{name} must be"):
        crossover_lambda(**shape, **kw)


@pytest.mark.parametrize("kw, match", [({"foo": 1}, "has no parameter 'foo'"), ({"m": -1}, "^m must be"),
                                       ({"n": math.nan}, "^n must be")])
def test_task_shape_checks_the_task_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        task_shape("query-copies", **kw)


@pytest.mark.parametrize("bad", [[], (), float("nan"), float("inf"), -1.0, 0.0, 1e308, "0.5", None, [0.5, None],
                                 True, 1j])
def test_boundary_names_target_loss_and_its_range(bad):
    """boundary's target_loss: one loss or a non-empty sequence of losses, each in (0, log M); anything
    else a ValueError naming target_loss and the range (not NumPy's reduction error nor an array)."""
    with pytest.raises(ValueError, match=r"^target_loss must .*\(0, log M\)"):
        boundary(s=2, m=5, n=10, R=5, M=4, b=2, target_loss=bad)
    with pytest.raises(ValueError, match=r"^M must be a finite number > 1"):
        boundary(s=2, m=5, n=10, R=5, M=float("nan"), b=2, target_loss=0.5)


@pytest.mark.parametrize("call, message", [
    (lambda: lambda_of_ratio(1e308, 0.1, 4, 1), r"^Lambda = ratio \(M - 1\) l\(L\)\^2 / \(M b\) must be a finite "
     r"number > 0 .*; got inf at ratio=1e\+308, loss=0.1, M=4, b=1 "),
    (lambda: lambda_of_ratio([1.0, 1e308], 0.1, 4, 1), r"^Lambda = .*; got inf at ratio=1e\+308,"),
    (lambda: lambda_of_ratio(1.0, 0.1, 4, 1e-320), r"^Lambda = .*; got inf at ratio=1, loss=0.1, M=4, b=1e-320 \("),
    (lambda: ratio_of_lambda(1e308, 0.1, 4, 1), r"^ratio = lam M b / \(\(M - 1\) l\(L\)\^2\) must be a finite "
     r"number > 0 .*; got inf at lam=1e\+308"),
    (lambda: ratio_of_lambda(1e-300, 0.1, 4, 1e-300), r"^ratio = .*; got 0 at lam=1e-300"),
    (lambda: master_lambda(1e308, 0.1), r"^Lambda = .*; got inf at ratio=1e\+308, loss=0.1, M=20, b=50 "),
    (lambda: master_lambda(1.0, 0.1, "query-copies", b=1e-320), r"^Lambda = .*; got inf at ratio=1,"),
])
def test_an_overflow_from_finite_inputs_is_a_value_error_naming_it(call, message):
    """Finite inputs whose Lambda (or ratio) double precision cannot hold: not a silent inf or 0."""
    with np.errstate(all="raise"), pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: master_shares(1e308), "Lambda"), (lambda: master_shares([1.0, 1e20]), "Lambda"),
    (lambda: master_shares(1e15, s=2, m=5, n=10, R=5), "Lambda"),
    (lambda: crossover_lambda(s=2, m=5, n=10, R=5, lambda_range=(1.0, 1e20)), "lambda_range"),
    (lambda: boundary(s=2, m=5, n=10, R=5, M=4, b=1e-12, target_loss=0.5), "ratio_range"),
])
def test_a_lambda_beyond_the_master_flows_range_is_refused_up_front(call, name):
    """Past Lambda ~ 1e16 the master flow took minutes (141 s at 1e16) or LSODA failed (RuntimeError)."""
    with pytest.raises(ValueError, match=rf"^{name} must .*\(0, 1e\+14\] \(the master flow answers in bounded time"):
        call()


def test_the_master_flow_answers_up_to_its_largest_lambda():
    a = master_shares(1e14)
    assert a["relevant_attention"] > 1 - 1e-12


@pytest.mark.parametrize("name", ["s", "m", "n", "R"])
def test_a_boolean_is_not_a_shape_number(name):
    """True was taken as 1."""
    with pytest.raises(ValueError, match=rf"^{name} must be a number in [\[(][01], 1e100\]; got True"):
        master_shares(1.0, **{name: True})


@pytest.mark.parametrize("shape, match", [
    ({"n": 1e308}, r"^n must be a number in \[0, 1e100\]; got 1e\+308"),
    ({"m": 1e-300}, r"^m must be at least 1\.2000000000012e-11 at s = 2, n = 10: m / \(s \+ m \+ n\), "
                    r"the relevant share at the start, must be at least 1e-12 .*; "
                    r"got m = 1e-300, a share of 8\.3+e-302$"),
    ({"n": 1e15}, r"^m must be at least 1000\.000000001 at s = 2, n = 1e\+15: m / \(s \+ m \+ n\)"),
    ({"s": float("nan")}, r"^s must be a number in \[0, 1e100\]"),
    ({"M": float("nan")}, r"^M must be a finite number > 1; got nan$"), ({"M": 1}, r"^M must be"),
    ({"b": -1}, r"^b must be a finite number > 0; got -1$")])
def test_a_shape_the_master_flow_cannot_resolve_is_refused(shape, match):
    """n = 1e308 was an OverflowError, n = 1e15 or m = 1e-300 scipy's event error ("f(a) and f(b) must have
    different signs"): the master flow starts at the relevant share m / (s + m + n), resolved to 1e-14. M and b,
    which the shares do not use, are checked all the same (M = nan and b = -1 were accepted without a word)."""
    with pytest.raises(ValueError, match=match):
        master_shares(1.0, **{"s": 2, "m": 5, "n": 10, "R": 5, **shape})


def test_the_master_flow_answers_at_its_smallest_relevant_start():
    """(s + m + n) / m = 1e12, the bound, answers across Lambda."""
    a = master_shares(np.geomspace(1e-6, 1e14, 5), s=2, m=5, n=5e12 - 7, R=5)
    # three shares of one normalisation: a few roundings
    assert np.allclose(sum(a.values()), 1.0, rtol=1e-15, atol=0) and np.isfinite(a["self_attention"]).all()


def test_the_master_curve_is_accurate_at_its_smallest_relevant_start():
    """At a relevant share of 2e-12 at the start (m = 2e-4, n = 1e8) the master curve of the paper's task is its
    closed-form alpha (Wright omega; tested against mpmath in test_closed_form) to 1e-8 at every Lambda: in
    sigma, LSODA was 5e-5 off at Lambda = 0.1."""
    from numerics.dynamics import state_at_loss
    lams = np.geomspace(1e-6, 1e8, 6)
    got = master_shares(lams, s=0, m=2e-4, n=1e8, R=1)["relevant_attention"]
    alpha = [float(state_at_loss(0.5, float(ratio_of_lambda(lam, 0.5, 20, 50)), m=2e-4, n=1e8, M=20, b=50).alpha)
             for lam in lams]
    np.testing.assert_allclose(got, alpha, rtol=1e-8)


def test_a_relevant_start_just_below_its_bound_is_shown_below_it():
    """m / (s + m + n) = 1 / (1e12 + 1.5), just below the bound 1e-12, was shown as 'must be at least 1e-12; got
    1e-12' (three digits); the number shown reads back below the bound."""
    with pytest.raises(ValueError, match=r"must be at least 1e-12") as err:
        crossover_lambda(s=0.5, m=1, n=1e12, R=4)
    shown = float(str(err.value).rsplit("a share of ", 1)[1])
    assert shown < 1e-12 and shown == pytest.approx(1 / (1e12 + 1.5), rel=1e-14)
    bound = float(str(err.value).split("m must be at least ", 1)[1].split(" ", 1)[0])
    assert bound > 1.0 and bound == pytest.approx(1.0000000000015, rel=1e-14)    # m = 1 reads back below it


def test_a_lambda_just_beyond_its_range_is_shown_beyond_it():
    """A ratio range whose Lambda is 1.0000072e14 at loss 0.2 was refused with 'Lambda up to 1e+14' (six
    digits), the bound it exceeds; the Lambda is shown at 15 digits."""
    with pytest.raises(ValueError, match=r"Lambda up to 100000719468295 at"):
        boundary(s=2, m=5, n=10, R=5, M=4, b=2, target_loss=0.2, ratio_range=(1, 39255003925500.5))


def test_a_crossover_just_outside_the_range_is_shown_apart_from_its_ends():
    """r* = 1.46224173838... at loss 0.6, just above the range's upper end: the reason shows the ends as typed and
    r* at 15 digits (at 6 digits it read '[1.46224, 1.46224]; r* = 1.46224', r* equal to the end it is beyond)."""
    recs = boundary(s=2, m=4, n=6, R=4, target_loss=[0.6, 0.3], M=3, b=2.0, ratio_range=(1.46224, 1.4622417))
    reason = recs[0]["reason"]
    assert reason.startswith("not reached within the ratio range searched ([1.46224, 1.4622417]; r* = "), reason
    assert float(reason.rpartition("r* = ")[2].split()[0]) > 1.4622417
