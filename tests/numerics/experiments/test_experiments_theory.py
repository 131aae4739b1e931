"""The theory beside SGD (numerics.experiments.theory / predict / measure.attention_shares):
like-with-like initial matrices, where the attention goes, several targets per flow."""
import math

import numpy as np
import pytest

from derivations.core.vocabulary import PARAMETERIZATIONS, SHARES
from numerics.experiments import measure, models, predict, sgd, task_sampling as ts, theory
from numerics.experiments.proxies import PROXIES
from numerics.experiments.task_sampling import AUTHORS
import _notebook_model as nb
from _sequences import sequence_counts as _sequence_counts, sequences as _sequences

V = AUTHORS.T

V = V


class _Captured(Exception):
    pass


def _sgd_initial_params(P, init, seed, monkeypatch):
    """The matrices sgd.train_fig2 starts seed ``seed`` from, caught on their way in."""
    built = []
    real = models.init_params

    def spy(*args, **kwargs):
        built.append(real(*args, **kwargs))
        raise _Captured

    monkeypatch.setattr(models, "init_params", spy)
    cfg = sgd.Fig2Config(parameterization=P, init=init, epochs=1, steps_per_epoch=1, batch_size=2,
                         seq_len=5, stop="none", eval_batches=1)
    with pytest.raises(_Captured):
        sgd.train_fig2(cfg, [seed])
    monkeypatch.setattr(models, "init_params", real)
    return built[0]


def _sgd_circuits(p):
    """The SGD model's circuits as its per-position reference reads them (score A[q, v])."""
    A = p["W_QK"] if "W_QK" in p else p["W_Q"] @ p["W_K"].T
    OV = p["W_OV"] if "W_OV" in p else p["W_O"] @ p["W_V"]
    return A, OV


@pytest.mark.parametrize("init", models.INITS)
@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_theory_starts_where_sgd_starts(P, init, monkeypatch):
    for seed in (1234, 1236):
        sgd_p = _sgd_initial_params(P, init, seed, monkeypatch)
        model = theory.task_model(AUTHORS, P, 2.0)
        th_p = theory.init_matrices(AUTHORS, model, init, seed=seed)
        A, OV = _sgd_circuits(sgd_p)
        W_QK, W_OV = model.circuits(th_p)
        # the 1e-6 I starts give entries of 1e-12 (products) and exact zeros: relative, atol=0
        np.testing.assert_allclose(W_QK, A, rtol=1e-14, atol=0)
        np.testing.assert_allclose(W_OV, OV, rtol=1e-14, atol=0)
        if "uniform" in models.init_kinds(P, init).values():
            assert np.abs(A).max() > 1e-3            # a real random draw, not 1e-6 I
        # and the two models agree on what the matrices do: attention on the expected counts
        counts = ts.expected_counts(AUTHORS, 64)
        a_sgd = models.forward(AUTHORS, sgd_p, counts, AUTHORS.query)["attention"]
        np.testing.assert_allclose(model.attention(th_p), a_sgd, rtol=1e-14, atol=0)


def _reference_shares(params, tokens):
    """Shares from explicit token sequences: a softmax over positions (the query is the last)."""
    A, _ = _sgd_circuits(params)
    out = []
    for t in tokens:
        q = t[-1]
        s = A[q, t] / math.sqrt(V)
        w = np.exp(s - s.max())
        w /= w.sum()
        rel = w[AUTHORS.relevant[t]].sum()
        own = w[t == q].sum()                         # the query position and its copies
        out.append((rel, own, w.sum() - rel - own))
    return np.array(out)


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_shares_against_per_position_reference(P):
    rng = np.random.default_rng(21)
    params = {k: 0.6 * rng.normal(size=(V, V)) for k in models.param_keys(P)}
    tokens, _ = _sequences(np.random.default_rng(8), 24, 64)
    ev = measure.evaluate(AUTHORS, params, np.random.default_rng(8), eval_batches=1, batch_size=24)
    ref = _reference_shares(params, tokens)
    got = np.stack([ev[k] for k in SHARES], axis=1)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), 1.0, rtol=0, atol=1e-12)
    assert got[:, 1].std() > 1e-3 and got.min() > 0     # every share is there and varies
    # the relevant share is the one evaluate_fig2 always reported, bit for bit
    counts = _sequence_counts(tokens)
    a = models.forward(AUTHORS, params, counts, tokens[:, -1])["attention"]
    assert np.array_equal(ev["relevant_attention"], a[:, AUTHORS.relevant].sum(-1))
    s = measure.summarize_one(ev)
    assert s["self_attention"] == float(ev["self_attention"].mean())
    assert list(s)[-2 - len(PROXIES):] == ["self_attention", "other_attention", *PROXIES]


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_theory_shares_are_the_sgd_models_on_expected_counts(P):
    rng = np.random.default_rng(4)
    sgd_p = {k: 0.8 * rng.normal(size=(V, V)) for k in models.param_keys(P)}
    model = theory.task_model(AUTHORS, P, 1.0)
    got = theory.attention_shares(model, sgd_p)
    a = models.forward(AUTHORS, sgd_p, ts.expected_counts(AUTHORS, 64), AUTHORS.query)["attention"]
    want = measure.attention_shares(a, AUTHORS.query, AUTHORS.relevant)
    for k in SHARES:
        assert got[k] == pytest.approx(want[k].mean(), abs=1e-13)
    assert sum(got.values()) == pytest.approx(1.0, abs=1e-13)


def test_one_flow_answers_every_target():
    both = theory.flow_to_losses(AUTHORS, "CACO", 4.0, [0.2, 1.0])["records"]
    assert [r["target_loss"] for r in both] == [1.0, 0.2]          # sorted high to low
    for rec in both:
        alone = theory.flow_to_losses(AUTHORS, "CACO", 4.0, [rec["target_loss"]])["records"][0]
        assert rec["loss"] == pytest.approx(rec["target_loss"], rel=1e-8)
        for k in ("steps", *SHARES):
            assert rec[k] == pytest.approx(alone[k], rel=1e-9)
    # lr_ov only converts flow time to steps
    half = theory.flow_to_losses(AUTHORS, "CACO", 4.0, [0.2, 1.0], lr_ov=0.02)["records"]
    for a, b in zip(both, half):
        assert b["steps"] == pytest.approx(a["steps"] / 2, rel=1e-14)
        assert b["relevant_attention"] == a["relevant_attention"]


def test_predict_records_and_shared_flows(monkeypatch):
    calls = []
    real = theory.flow_to_losses
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: calls.append(k["seed"]) or real(*a, **k))
    recs = predict.predict(["FACO", "CACO"], [2.0], [0.5, 1.0], seeds=2)
    assert [tuple(r) for r in recs] == [predict.RECORD_FIELDS] * 8
    assert [(r["parameterization"], r["seed"], r["target_loss"]) for r in recs] == [
        ("FACO", 1234, 1.0), ("FACO", 1234, 0.5), ("FACO", 1235, 1.0), ("FACO", 1235, 0.5),
        ("CACO", 1234, 1.0), ("CACO", 1234, 0.5), ("CACO", 1235, 1.0), ("CACO", 1235, 0.5)]
    # FACO's authors init is 1e-6 I for every seed: one flow; CACO draws: one flow per seed
    assert calls == [1234, 1234, 1235]
    assert recs[0]["steps"] == recs[2]["steps"] and recs[4]["steps"] != recs[6]["steps"]
    for r in recs:
        assert r["reached"] and abs(sum(r[k] for k in SHARES) - 1) < 1e-12


def _notebook_flow_shares(P, init, seed, ratio, target):
    """The three shares where the expected-count flow first reaches ``target``, computed apart from the
    package: the plain notebook model on the four mean sequences (``_notebook_model``, gradients by hand)
    from the seed's own initial weights, dW/dt = -eta grad L with eta = ``ratio`` on the QK weights and 1
    on the OV weights, integrated by scipy's DOP853 at rtol 1e-10 to the terminal event L = ``target``.
    Returns ``(shares, t)``."""
    from scipy.integrate import solve_ivp
    w0 = nb.initial_weights(P, init, seed)
    names, size = list(w0), nb.V ** 2
    rate = np.concatenate([np.full(size, ratio if k in ("Lq", "Lk", "Lqk") else 1.0) for k in names])

    def unflat(y):
        return {k: y[i * size:(i + 1) * size].reshape(nb.V, nb.V) for i, k in enumerate(names)}

    def rhs(t, y):
        g = nb.expected_count_loss_and_grad(P, unflat(y))[1]
        return -rate * np.concatenate([g[k].ravel() for k in names])

    def reached(t, y):
        return nb.expected_count_forward(P, unflat(y))[0] - target
    reached.terminal, reached.direction = True, -1
    sol = solve_ivp(rhs, (0.0, 1e9), np.concatenate([w0[k].ravel() for k in names]), method="DOP853",
                    rtol=1e-10, atol=1e-14, events=reached)
    relevant = [list(range(10 * (k + 1), 10 * (k + 2))) for k in range(4)]
    return nb.expected_count_shares(P, unflat(sol.y_events[0][0]), relevant), float(sol.t_events[0][0])


def _agree_with_the_notebook_flow(rec, P, init, ratio):
    """``rec`` (a predict record, lr_ov 0.01) against :func:`_notebook_flow_shares`: the shares within 1e-6
    (the two flows agree to about 1e-8), the steps (flow time / lr_ov) within 1e-6 relative."""
    want, t = _notebook_flow_shares(P, init, rec["seed"], ratio, rec["target_loss"])
    for k in SHARES:
        assert rec[k] == pytest.approx(want[k], abs=1e-6), (P, rec["seed"], k)
    assert rec["steps"] == pytest.approx(t / 0.01, rel=1e-6)


def test_like_with_like_shares_are_the_notebook_flows():
    """FAFO, authors' init, seed 1234, r = 10, loss 0.1 (relevant 0.439; 0.400 were the factors read
    untransposed), and CACO, r = 20, seeds 1234-1236 (relevant 0.11 to 0.31: the seed's draw matters):
    each seed's flow starts from that seed's own weights."""
    fafo = predict.predict(["FAFO"], [10.0], [0.1], seeds=1)[0]
    _agree_with_the_notebook_flow(fafo, "FAFO", "authors", 10.0)
    for rec in predict.predict(["CACO"], [20.0], [0.1], seeds=3):
        _agree_with_the_notebook_flow(rec, "CACO", "authors", 20.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ratios=[1e6]), "ratio must be in"), (dict(target_losses=[0.1, 0.1]), "twice"),
    (dict(target_losses=[1e-20]), "target_loss"), (dict(target_losses=[5.0]), "initial loss"),
    (dict(init="uniform", init_scale=0.1), "no effect"), (dict(init_scale=1e300), "init_scale"),
    (dict(seeds=0), "seeds"), (dict(lr_ov=0.0), "lr_ov"), (dict(seq_len=2), "seq_len"),
    (dict(parameterizations=["CAXO"]), "parameterization"), (dict(init="gauss"), "init")])
def test_predict_refuses_before_any_flow(kwargs, match, monkeypatch):
    monkeypatch.setattr(theory, "flow_to_losses", lambda *a, **k: pytest.fail("a flow ran"))
    args = dict(parameterizations=["CACO", "FACO"], ratios=[1.0], target_losses=[0.5])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        predict.predict(**args)


def test_decomposition_shares_are_the_notebook_flows():
    """CACO from 1e-6 I, loss 0.1: at r = 20 the query attends mostly to its own token (0.75; relevant 0.11,
    other 0.14), at r = 1 the relevant tokens lead (0.43; self 0.09, other 0.48)."""
    for rec, ratio in zip(predict.predict(["CACO"], [1.0, 20.0], [0.1], init="identity"), (1.0, 20.0)):
        _agree_with_the_notebook_flow(rec, "CACO", "identity", ratio)


def test_predict_takes_seed_lists_and_numpy_integers():
    assert [r["seed"] for r in predict.predict(["CACO"], [1.0], [1.0], seeds=np.int64(2))] == [1234, 1235]
    assert [r["seed"] for r in predict.predict(["CACO"], [1.0], [1.0], seeds=np.array([7, 9]))] == [7, 9]
    with pytest.raises(ValueError, match="seeds"):
        predict.predict(["CACO"], [1.0], [1.0], seeds=[-1])


@pytest.mark.parametrize("bad", [-1, 1.5, "1", None, True])
def test_a_seed_is_an_integer_at_least_zero(bad):
    """Never NumPy's seed message: the seed and its range are named."""
    from numerics.experiments import flow_to_losses, sampled_task
    st = sampled_task("paper", {"M": 3})
    with pytest.raises(ValueError, match="^seed must be an integer >= 0"):
        flow_to_losses(st, "CACO", 1.0, [0.9], seed=bad)
    with pytest.raises(ValueError, match="^seed must be an integer >= 0"):
        theory.lowest_initial_loss(st, ["CACO"], "authors", [bad])


def test_the_expected_count_model_has_the_rates_it_is_given():
    """eta_QK = ratio x lr_ov and eta_OV = lr_ov, for each factor of a circuit (flow time in SGD steps of lr_ov)."""
    model = theory.task_model(AUTHORS, "FAFO", 4.0, lr_ov=0.01)
    assert model.eta_QK == pytest.approx(0.04, rel=1e-15, abs=0) and model.eta_OV == 0.01
    rates = model.rates()
    assert rates["W_Q"] == rates["W_K"] == model.eta_QK and rates["W_O"] == rates["W_V"] == 0.01


def test_lowest_initial_loss_is_the_first_lowest_run_of_the_initial_losses():
    """The first run of the lowest initial loss, that loss to 1e-14 of the plain notebook model's on the
    mean sequences at the seed's own initial weights (``_notebook_model``, from the spec); a seed that draws
    nothing stands for all seeds; the progress counts every run."""
    seeds = [1234, 1235, 1240, 7]
    for params in (["FACO", "CACO", "FAFO"], ["CAFO", "FACO"]):
        losses = {(p, s): nb.expected_count_forward(p, nb.initial_weights(p, "authors", s))[0]
                  for p in params for s in seeds}
        lowest = min(losses.items(), key=lambda kv: kv[1])
        done = []
        run, loss = theory.lowest_initial_loss(AUTHORS, params, "authors", seeds, progress=done.append)
        assert run == lowest[0] and loss == pytest.approx(lowest[1], rel=1e-14, abs=0)
        assert sum(done) == len(params) * len(seeds)
    assert theory.lowest_initial_loss(AUTHORS, ["FACO"], "authors", seeds[::-1])[0] == ("FACO", 7)
    # stop_at: the first run of a loss at most it (none: the lowest, as without it)
    first = nb.expected_count_forward("CAFO", nb.initial_weights("CAFO", "authors", 1234))[0]
    assert theory.lowest_initial_loss(AUTHORS, ["CAFO", "FACO"], "authors", seeds, stop_at=first)[0] == ("CAFO", 1234)
    assert (theory.lowest_initial_loss(AUTHORS, ["CAFO", "FACO"], "authors", seeds, stop_at=0.0)
            == theory.lowest_initial_loss(AUTHORS, ["CAFO", "FACO"], "authors", seeds))
    with pytest.raises(ValueError, match="seeds must not be empty"):
        theory.lowest_initial_loss(AUTHORS, ["CACO"], "authors", [])
