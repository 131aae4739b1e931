"""Full-matrix task model (numerics.model; numerics.model forwards): agreement with the paper's
model, finite-difference gradients on generic instances, gradient flow with loss events, the
invariant family of every task (structured initialization, projector)."""
import math

import numpy as np
import pytest

from numerics.model import AttentionModel
from numerics.model import FamilyProjector, structured_params, task_basis
from numerics.dynamics import gradient_flow
from derivations.core import PARAMETERIZATIONS
from numerics.model import TaskInstance, TaskModel, instance_of_task, paper_instance


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_paper_instance_matches_attention_model(P):
    # independent implementation: numerics.model.paper works on the M x M blocks only
    am = AttentionModel(P, M=4, m=3.0, n=40.0, b=20.0, eta_QK=2.5, eta_OV=0.7)
    tm = TaskModel(paper_instance(M=4, m=3.0, n=40.0, b=20.0), P, eta_QK=2.5, eta_OV=0.7)
    assert tm.keys == am.keys and tm.n_params == am.n_params
    for seed in range(3):
        v = am.flatten(am.random_params(scale=2.0, seed=seed))
        L1, g1 = am.loss_and_grad_flat(v)
        L2, g2 = tm.loss_and_grad_flat(v)
        assert abs(L1 - L2) <= 1e-12 * abs(L1)
        assert np.max(np.abs(g1 - g2)) <= 1e-12 * np.max(np.abs(g1))
        assert abs(tm.alpha(tm.unflatten(v)) - float(am.attention(am.unflatten(v)).mean())) <= 1e-13
        assert abs(tm.alpha(tm.unflatten(v)) - am.alpha(am.unflatten(v))) <= 1e-13


def _random_instance(rng, query_in_context=True):
    """A generic instance: 7 types (one zero row), 3 kinds, 4 outputs, unequal weights."""
    T, d, K = 7, 5, 3
    E = rng.normal(size=(T, d))
    E[-1] = 0.0
    C = rng.uniform(0.5, 4.0, size=(K, T))
    C[0, 2] = 0.0                                      # a type absent from one context
    q = np.array([0, 1, 0])
    if query_in_context:
        C[np.arange(K), q] += 1.0
    R = np.zeros((K, T), bool)
    R[:, 3:5] = True
    return TaskInstance(E, C, q, np.array([0, 3, 1]), 4, R, score_scale=0.7,
                        weights=np.array([1.0, 2.0, 3.0]), h_QK=3, h_OV=2)


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_gradient_matches_finite_differences(P):
    rng = np.random.default_rng(7)
    model = TaskModel(_random_instance(rng), P)
    v = rng.normal(scale=0.8, size=model.n_params)
    _, g = model.loss_and_grad_flat(v)
    h = 1e-6
    fd = np.empty_like(v)
    for i in range(v.size):       # central differences, error O(h^2) ~ 1e-12 relative
        e = np.zeros_like(v)
        e[i] = h
        fd[i] = (model.loss_and_grad_flat(v + e)[0] - model.loss_and_grad_flat(v - e)[0]) / (2 * h)
    assert np.max(np.abs(fd - g)) <= 1e-8 * max(1.0, np.max(np.abs(g)))



@pytest.mark.parametrize("P", ["CACO", "FAFO"])
def test_loss_and_alpha_weigh_the_kinds(P):
    """Kind weights 1:2:3: loss, alpha and summarize are the weighted means of a plain per-kind
    evaluation (softmax with multiplicities, log-sum-exp), written here from the module docstring."""
    rng = np.random.default_rng(3)
    inst = _random_instance(rng)
    model = TaskModel(inst, P)
    v = rng.normal(scale=0.8, size=model.n_params)
    p = model.unflatten(v)
    W_QK = p["W_Q"] @ p["W_K"].T if P == "FAFO" else p["W_QK"]
    W_OV = p["W_O"] @ p["W_V"] if P == "FAFO" else p["W_OV"]
    ce, al = [], []
    for k in range(3):
        S = 0.7 * inst.embeddings[inst.query[k]] @ W_QK @ inst.embeddings.T
        a = inst.counts[k] * np.exp(S - S.max())
        a /= a.sum()
        z = W_OV @ (a @ inst.embeddings)
        ce.append(math.log(np.exp(z - z.max()).sum()) + z.max() - z[inst.label[k]])
        al.append(a[inst.relevant[k]].sum())
    pi = np.array([1.0, 2.0, 3.0]) / 6
    got = model.summarize(v)
    for value in (model.loss(p), got["loss"]):
        assert value == pytest.approx(pi @ ce, rel=1e-13, abs=0)
    for value in (model.alpha(p), got["alpha"]):
        assert value == pytest.approx(pi @ al, rel=1e-13, abs=0)


def test_attention_uses_multiplicities():
    # two types with counts 3 and 1 and equal scores: attention 3/4 and 1/4
    E = np.eye(2)
    inst = TaskInstance(E, [[3.0, 1.0], [1.0, 3.0]], [0, 1], [0, 1], 2, [True, False])
    model = TaskModel(inst, "CACO")
    a = model.attention(model.init_params("zero"))
    np.testing.assert_allclose(a, [[0.75, 0.25], [0.25, 0.75]], rtol=1e-15)
    assert model.alpha(model.init_params("zero")) == pytest.approx(0.5, rel=1e-15, abs=0)
    assert model.loss(model.init_params("zero")) == pytest.approx(math.log(2), rel=1e-15, abs=0)


def test_flow_target_loss_event_and_descent():
    model = TaskModel(paper_instance(M=3, m=5, n=50, b=5), "CACO", eta_QK=3.0)
    res = gradient_flow(model, model.init_params("zero"), t_span=(0.0, np.inf), target_loss=0.5,
                        loss_thresholds=(0.9,), log_events=True)
    assert res.status == 1
    assert res.target_state["loss"] == pytest.approx(0.5, rel=1e-9)
    assert res.crossings[0]["t"] < res.target_state["t"]
    assert np.all(np.diff(res.loss) <= 1e-15)          # the flow decreases the loss
    assert res.t[-1] == res.target_state["t"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(counts=[[1.0, -1.0]]), "counts"),
    (dict(counts=[[0.0, 0.0]]), "counts must be .* with a positive entry in every row"),
    (dict(weights=[0.0]), "weights must be K=1 finite numbers > 0"),
    (dict(query=[2]), "query"),
    (dict(label=[5]), "label"),
    (dict(n_out=1), "n_out"),
    (dict(score_scale=0.0), "score_scale"),
    (dict(relevant=[True]), "relevant"),
])
def test_instance_rejects_bad_input(kwargs, match):
    base = dict(embeddings=np.eye(2), counts=[[1.0, 1.0]], query=[0], label=[1], n_out=2,
                relevant=[True, False])
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        TaskInstance(**base)


def test_model_rejects_bad_input():
    inst = paper_instance(M=2)
    with pytest.raises(ValueError, match="parameterization"):
        TaskModel(inst, "CAXO")
    with pytest.raises(ValueError, match="eta_QK"):
        TaskModel(inst, "CACO", eta_QK=-1.0)
    with pytest.raises(ValueError, match="finite t1"):      # an infinite span needs a target loss
        gradient_flow(TaskModel(inst), TaskModel(inst).init_params("zero"), t_span=(0, np.inf))


@pytest.mark.parametrize("P", ["CACO", "FAFO"])
def test_engine_paper_instance_is_the_paper_model(P):
    from numerics.model import instance_of_task
    am = AttentionModel(P, M=3, m=2.0, n=30.0, b=7.0)
    tm = TaskModel(instance_of_task("paper", M=3, m=2.0, n=30.0, b=7.0), P)
    v = am.flatten(am.random_params(scale=2.0, seed=11))
    L1, g1 = am.loss_and_grad_flat(v)
    L2, g2 = tm.loss_and_grad_flat(v)
    assert abs(L1 - L2) <= 1e-12 * L1 and np.max(np.abs(g1 - g2)) <= 1e-12 * np.max(np.abs(g1))


def test_docs_task_numerics_examples():
    import doctest
    from pathlib import Path
    path = Path(__file__).resolve().parents[3] / "docs" / "task_numerics.md"
    res = doctest.testfile(str(path), module_relative=False,
                           optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0 and res.attempted >= 8


def _task_model_and_raw(name, P, **values):
    from derivations.tasks import get_task
    from numerics.dynamics import task_parameters
    task = get_task(name)
    vals = task_parameters(name, **({} if task.classes else {"M": 3}), **values)
    Mv = int(vals["M"])
    rest = {k: v for k, v in vals.items() if k != "M"}
    return TaskModel(instance_of_task(name, M=Mv, **rest), P), task.instance(M=Mv, values=rest), vals


def test_family_projector_distance_is_the_largest_and_deviations_are_shares():
    """Two matrices, the first 5 off its family, the second on it: the distance is the first's
    5/sqrt(29) (the largest, not the last); a deviation of 0.5 in a coordinate whose matrix reaches
    norm 4 is the share 0.125 (the rules of FamilyProjector's docstrings, by hand)."""
    U1, U2 = np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([[0.0, 1.0], [0.0, 0.0]])
    proj = FamilyProjector({"a": ("A", U1), "b": ("B", U2)}, ["a", "b"])
    theta, dist = proj({"A": np.array([[2.0, 5.0], [0.0, 0.0]]), "B": 3.0 * U2})
    np.testing.assert_allclose(theta, [2.0, 3.0], rtol=1e-15)
    assert dist == pytest.approx(5 / math.sqrt(29), rel=1e-15, abs=0)
    dev = proj.deviations(np.array([[2.0, 3.0], [4.5, 3.0]]), np.array([[2.0, 3.0], [4.0, 3.0]]))
    assert dev == pytest.approx({"a": 0.125, "b": 0.0}, rel=1e-15, abs=0)


def test_task_basis_of_several_types_per_class():
    """query-copies with R = 2 relevant types per class at M = 3: each basis matrix is the 0/1 indicator
    of its orbit, M R entries for (q_k, r_k), M (M-1) R for (o_k, r_j)."""
    basis = task_basis("query-copies", "CACO", 3, {"R": 2, "s": 2})
    d = instance_of_task("query-copies", M=3, R=2, s=2).d
    sizes = {name: (U.shape, U.sum()) for name, (_, U) in basis.items()}
    assert sizes["W_QK[q_k,r_k]"] == ((d, d), 6.0) and sizes["W_OV[o_k,r_j]"] == ((3, d), 12.0)

@pytest.mark.parametrize("name", ["paper", "shared-irrelevant", "query-in-context", "authors"])
@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_structured_params_is_the_engines_initialization(name, P):
    # structured_params of a task model is the engine's initial_factors (on the instance's
    # numbers); independent source: the rule written here with NumPy on the model's instance
    model, raw, _ = _task_model_and_raw(name, P)
    p = structured_params(model, 0.1)
    inst, eps = model.instance, 0.1
    K = inst.K
    nonzero = inst.embeddings != 0
    column = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), -1)
    ref = {k: np.zeros(shape) for k, shape in model.shapes.items()}
    for k in range(K):
        relevant = [int(column[t]) for t in np.flatnonzero(inst.relevant[k]) if column[t] >= 0]
        if model.qk_factorized:
            ref["W_Q"][column[inst.query[k]], k] = eps
            ref["W_K"][relevant, k] = eps
        if model.ov_factorized:
            ref["W_O"][inst.label, k] = eps * ((np.arange(K) == k) - 1.0 / K)
            ref["W_V"][:K, relevant] = (eps * ((np.arange(K) == k) - 1.0 / K))[:, None]
    assert sorted(p) == sorted(ref)
    for k in model.keys:
        np.testing.assert_array_equal(p[k], ref[k])
    if P != "CACO":
        fac = raw.initial_factors(eps)      # the engine's own instance: the same matrices
        for k in set(model.keys) - {"W_QK", "W_OV"}:
            np.testing.assert_array_equal(p[k], np.asarray(fac[k], dtype=float))


@pytest.mark.parametrize("P", ["CACO", "FAFO"])
def test_family_projector_recovers_coordinates(P):
    model, _, vals = _task_model_and_raw("shared-irrelevant", P)
    basis = task_basis("shared-irrelevant", P, int(vals["M"]), vals)
    names = sorted(basis)
    proj = FamilyProjector(basis, names)
    theta = np.random.default_rng(3).normal(size=len(names))
    params = {k: np.zeros(s) for k, s in model.shapes.items()}
    for th, nm in zip(theta, names):
        mat, U = basis[nm]
        params[mat] = params[mat] + th * U
    got, dist = proj(params)
    np.testing.assert_allclose(got, theta, rtol=0, atol=1e-12)
    assert dist < 1e-14
    off = {k: v + 1e-3 * np.random.default_rng(4).normal(size=v.shape) for k, v in params.items()}
    assert proj(off)[1] > 1e-5                          # off the family: a visible distance
    assert proj.deviations(got[None, :], theta[None, :]) == pytest.approx(
        {nm: 0.0 for nm in names}, abs=1e-12)


def test_one_gradient_flow_for_the_general_and_the_paper_model():
    # the general model on the paper's instance and the paper's sparse model, both from zero,
    # integrated by the one integrator: same trajectory to integration accuracy
    from numerics.dynamics import gradient_flow
    am = AttentionModel("CACO", M=3, m=2.0, n=30.0, b=7.0, eta_QK=3.0)
    tm = TaskModel(paper_instance(M=3, m=2.0, n=30.0, b=7.0), "CACO", eta_QK=3.0)
    grid = np.linspace(0.0, 1000.0, 9)      # the target is reached at t = 925.2
    a = gradient_flow(am, am.init_params("zero"), grid, target_loss=0.4)
    b = gradient_flow(tm, tm.init_params("zero"), grid, target_loss=0.4, keep_states=True)
    assert a.status == b.status == 1 and a.t.size == b.t.size
    np.testing.assert_allclose(b.loss, a.loss, rtol=1e-9)
    np.testing.assert_allclose(b.alpha, a.alpha, rtol=1e-9)
    assert b.target_state["t"] == pytest.approx(a.target_state["t"], rel=1e-9)
    assert b.y.shape == (b.t.size, tm.n_params) and "y" not in a


def test_gradient_flow_is_bounded_by_max_nfev():
    model = TaskModel(paper_instance(M=3, m=5, n=50, b=5), "CACO", eta_QK=3.0)
    res = gradient_flow(model, model.init_params("zero"), t_span=(0.0, np.inf), target_loss=0.01,
                        max_nfev=40, keep_states=True)
    # checked after every step (DOP853: 12 evaluations a step), the records kept
    assert res.status == -1 and not res.success and 40 < res.nfev <= 40 + 12
    assert res.t.size >= 1 and res.y.shape == (res.t.size, model.n_params)
    assert res.target_state is None and res.loss[-1] > 0.01
    assert "max_nfev=40" in res.message


def test_logsumexp_rows_is_scipys_bit_for_bit():
    """TaskModel's log-sum-exp (plain NumPy calls) equals scipy.special.logsumexp(z, axis=-1) exactly:
    random rows of every scale, rows with a repeated maximum, and rows that are not finite (SciPy's own)."""
    from scipy.special import logsumexp

    from numerics.functions.special_functions import logsumexp_rows

    rng = np.random.default_rng(5)
    for shape in [(3,), (4, 50), (6, 3, 5)]:
        for scale in (1e-9, 1.0, 30.0, 800.0):
            z = rng.normal(size=shape) * scale
            z[..., -1] = z.max(axis=-1)                       # a tie at the maximum
            for x in (z, rng.normal(size=shape) * scale):
                assert np.array_equal(logsumexp_rows(x), logsumexp(x, axis=-1)), (shape, scale)
    odd = np.array([[np.inf, 1.0], [-np.inf, -np.inf], [np.nan, 1.0], [-np.inf, 2.0]])
    np.testing.assert_array_equal(logsumexp_rows(odd), logsumexp(odd, axis=-1))


@pytest.mark.parametrize("z", [1.0, [[0.0, 1.0]], np.array([[0, 1, 2]]), np.zeros((2, 0)), np.float64(1.0), None])
def test_logsumexp_rows_refuses_what_is_not_a_float_array_of_rows(z):
    """An integer array's rows were summed in integers (2 for [0, 1, 2], not 2.41), a number was
    AttributeError or IndexError, an empty row NumPy's reduction error."""
    from numerics.functions.special_functions import logsumexp_rows
    with pytest.raises(ValueError, match=r"^z must be a float array of shape \(\.\.\., n\) with n >= 1; got "):
        logsumexp_rows(z)


@pytest.mark.parametrize("name", [[], "x", 1, None])
def test_family_bases_name_their_matrices(name):
    from numerics.model import basis
    with pytest.raises(ValueError, match=r"^name must be one of QK, Q, K, OV, O, V, V1; got "):
        basis(name, 3)


@pytest.mark.parametrize("bad", [[], [3], {}])
def test_an_unhashable_class_count_is_refused_like_any_other(bad):
    from numerics.model import basis
    with pytest.raises(ValueError, match=r"^M must be an integer in \[2, 2000\]"):
        basis("QK", bad)


@pytest.mark.parametrize("model", ["x", None, 3, {}])
def test_structured_params_names_a_model_that_is_not_one(model):
    from numerics.model import structured_params
    with pytest.raises(ValueError, match=r"^model must be a TaskModel or an AttentionModel; got "):
        structured_params(model)


@pytest.mark.parametrize("bad", [0, 1, -1, 2.5, 10**5, "3", None, True])
def test_family_bases_check_the_class_count(bad):
    """Never an empty basis (M < 2), SymPy's matrix error (M < 0) or a SymPy build without end (M huge)."""
    from numerics.model import basis
    with pytest.raises(ValueError, match=r"^M must be an integer in \[2, 2000\]"):
        basis("QK", bad)
    with pytest.raises(ValueError, match=r"^M_value must be an integer in \[2, 2000\]"):
        task_basis("paper", "CACO", bad, {})
