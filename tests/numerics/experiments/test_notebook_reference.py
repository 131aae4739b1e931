"""The experiments against the spec's procedure written plainly (``tests/_notebook_model.py``: explicit
positions, the notebooks' Linear weights, hand gradients checked by central differences), and the
spec's literal numbers: token law, query and label tokens, published runs, ramp, stop rule,
measurements and Figure 3.  The package's own tables are never the reference here."""
import numpy as np
import pytest

import _notebook_model as nb
from derivations.core.vocabulary import PARAMETERIZATIONS
from _stats import chisquare_pvalue
from numerics.experiments import fixed_attention, measure, reproduce, sampler, sgd
from numerics.experiments.task_sampling import AUTHORS

V = nb.V
BOUND = 1 / np.sqrt(V)
_QK = {"Lq", "Lk", "Lqk"}


def _as_package(w):
    """Notebook weights -> the package's matrices: W_Q, W_K are the transposed Linear weights."""
    m = {"W_QK": w.get("Lqk"), "W_OV": w["Lo"], "W_O": w["Lo"], "W_V": w.get("Lv")}
    if "Lq" in w:
        m.update(W_Q=w["Lq"].T, W_K=w["Lk"].T)
    return m


def _central_difference_error(fun, w, grads, rng, h=1e-6, n=5):
    worst = 0.0
    for key, value in w.items():
        for _ in range(n):
            i = tuple(rng.integers(0, s) for s in value.shape)
            plus, minus = ({k: v.copy() for k, v in w.items()} for _ in range(2))
            plus[key][i] += h
            minus[key][i] -= h
            fd = (fun(plus) - fun(minus)) / (2 * h)
            worst = max(worst, abs(fd - grads[key][i]) / max(1e-3, abs(grads[key][i])))
    return worst


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
def test_the_plain_reference_gradients_are_central_differences(P):
    rng = np.random.default_rng(3)
    w = {k: rng.normal(size=(V, V)) * (5.0 if k == "Lqk" else 0.7) for k in nb.linear_names(P)}
    cls = rng.integers(0, 4, 8)
    tokens = nb.sequences(cls, rng.integers(0, 155, (8, 30)))
    loss, g = nb.loss_and_grad(P, w, tokens)
    a = nb.forward(P, w, tokens)[1]["a"]
    assert a.std() > 0.5 * a.mean()                             # attention far from uniform: a real check
    assert _central_difference_error(lambda x: nb.forward(P, x, tokens)[0], w, g, rng) < 1e-5
    _, g = nb.expected_count_loss_and_grad(P, w)                # the mean sequences of the expected-count limit
    assert _central_difference_error(lambda x: nb.expected_count_forward(P, x)[0], w, g, rng) < 1e-5
    for key in w:                   # and at its 3 largest entries (Lqk's gradient lives on the 4 query rows)
        for i in zip(*np.unravel_index(np.argsort(-np.abs(g[key]), axis=None)[:3], g[key].shape)):
            plus, minus = ({k: v.copy() for k, v in w.items()} for _ in range(2))
            plus[key][i] += 1e-6
            minus[key][i] -= 1e-6
            fd = (nb.expected_count_forward(P, plus)[0] - nb.expected_count_forward(P, minus)[0]) / 2e-6
            assert fd == pytest.approx(g[key][i], rel=1e-5), (key, i)
    for circuit in fixed_attention.OUTPUT_CIRCUITS:
        names = ("W", "b") if circuit == "collapsed" else ("W_V", "b_V", "W_O", "b_O")
        w3 = {k: rng.normal(size=(V, V) if k[0] == "W" else (V,)) for k in names}
        swapped = nb.sequences(cls, rng.integers(0, 155, (8, 30)), swapped=True)
        _, g3 = nb.fixed_attention_loss_and_grad(w3, swapped, 0.3)
        f = lambda x: nb.fixed_attention_loss_and_grad(x, swapped, 0.3)[0]       # noqa: E731
        assert _central_difference_error(f, w3, g3, rng) < 1e-5


# every parameterization under the published runs' kinds of settings: row 1 (authors' init, equal rates),
# a faster QK rate with the FAFO ramp, the CACO runs' seq_len 128 with their ramp
SETTINGS = [dict(init="authors"), dict(init="identity", lr_qk=0.2, qk_ramp=40.0),
            dict(init="uniform", lr_qk=0.05, qk_ramp=10.0, seq_len=128)]


@pytest.mark.parametrize("P", PARAMETERIZATIONS)
@pytest.mark.parametrize("settings", SETTINGS, ids=["row1", "fast_ramp40", "seq128_ramp10"])
def test_sgd_is_the_notebook_loop(P, settings):
    """train_fig2 lands where the notebook's loop does: plain SGD on the positional model with the
    Linear weights, per-circuit rates, the QK rate times 1 + (F - 1) step / total_steps (step from 0,
    total_steps = epochs x steps per epoch), batches of 32 fresh sequences per step."""
    K, epochs, seed = 3, 2, 1234
    config = sgd.Fig2Config(P, epochs=epochs, steps_per_epoch=K, stop="none", **settings)
    run = sgd.train_fig2(config, [seed])[0]
    rng = np.random.default_rng(seed)
    uniform = {"FAFO": {"Lq", "Lk"}, "CACO": {"Lqk", "Lo"}}.get(P, set()) if config.init == "authors" else (
        set(nb.linear_names(P)) if config.init == "uniform" else set())
    w = {k: rng.uniform(-BOUND, BOUND, (V, V)) if k in uniform else 1e-6 * np.eye(V) for k in nb.linear_names(P)}
    start = {k: v.copy() for k, v in w.items()}
    T, t, losses = epochs * K, 0, []
    for _ in range(epochs):
        classes = rng.integers(0, 4, size=(K, 32))
        tickets = rng.integers(0, 155, size=(K, 32, config.seq_len - 2), dtype=np.int16)
        for k in range(K):
            loss, g = nb.loss_and_grad(P, w, nb.sequences(classes[k], tickets[k]))
            losses.append(loss)
            rate = {True: config.lr_qk * (1 + (config.qk_ramp - 1) * t / T), False: config.lr_ov}
            w = {key: v - rate[key in _QK] * g[key] for key, v in w.items()}
            t += 1
    want, moved = _as_package(w), _as_package({k: w[k] - start[k] for k in w})
    for key, got in run["params"].items():
        assert np.abs(moved[key]).max() > 0
        # rounding in the updates is relative to their size, not to each entry (some, where updates cancel,
        # are ~1e-68): an absolute tolerance of 1e-9 of the largest movement
        np.testing.assert_allclose(got, want[key], rtol=0, atol=1e-9 * np.abs(moved[key]).max(), err_msg=key)
    np.testing.assert_allclose(run["epoch_loss"], np.reshape(losses, (epochs, K)).mean(1), rtol=1e-13)


def test_sampled_sequences_follow_the_spec():
    """Figure 2: the class uniform, seq_len - 1 input tokens, the query token [5, 6, 7, 8][k] read last
    and the label [1, 2, 3, 4][k] the target, context tokens i.i.d. w / 15.5 (chi-square); Figure 3:
    32 of each class per batch of 128, shuffled, the pair swapped."""
    b = sampler.sample_batches(AUTHORS, np.random.default_rng(99), 250, 64, 64)       # 16000 sequences
    cls, counts = b.label_class.reshape(-1), b.counts.reshape(-1, V)
    assert chisquare_pvalue(np.bincount(cls, minlength=4), np.full(4, cls.size / 4)) > 1e-4
    np.testing.assert_array_equal(b.query.reshape(-1), np.array(nb.QUERY_TOKENS)[cls])
    np.testing.assert_array_equal(b.target.reshape(-1), np.array(nb.LABEL_TOKENS)[cls])
    assert np.all(counts.sum(-1) == 63)
    context = counts.copy()
    context[np.arange(cls.size), b.query.reshape(-1)] -= 1                   # the query is read, counted once
    assert context.min() >= 0
    for k in range(4):
        p = nb.class_weights(k) / 15.5
        obs = context[cls == k].sum(0)
        assert obs[p == 0].sum() == 0
        assert chisquare_pvalue(obs[p > 0], obs.sum() * p[p > 0]) > 1e-4
        assert abs(obs[10:].sum() / obs.sum() - 0.355) < 0.005                # about 35.5 % relevant
    f3 = fixed_attention.sample_fig3_batches(np.random.default_rng(5), 4)
    for j in range(4):
        assert np.bincount(f3.label_class[j], minlength=4).tolist() == [32] * 4
        assert not np.all(np.diff(f3.label_class[j]) >= 0)                       # shuffled
    np.testing.assert_array_equal(f3.query, np.array(nb.LABEL_TOKENS)[f3.label_class])     # last input: label
    np.testing.assert_array_equal(f3.target, np.array(nb.QUERY_TOKENS)[f3.label_class])   # target: query
    assert np.all(f3.counts.sum(-1) == 63)


def _notebook_stop(step_losses, n_batches):
    """The notebooks' loop, transcribed: epochs trained when it breaks, else None."""
    running_loss = 0.0
    for epoch, epoch_losses in enumerate(step_losses):
        for j in range(n_batches):
            running_loss += epoch_losses[j]
        if (running_loss / n_batches) <= 0.001:
            return epoch + 1
        if (epoch + 1) % 100 == 0:
            running_loss = 0.0
    return None


def test_stop_rule_is_the_notebook_loop(monkeypatch):
    """Scripted per-step losses (zero gradients) through train_fig2 against the transcribed loop:
    the same stopping epoch, always the first after a 100-epoch boundary, or none."""
    rng = np.random.default_rng(0)
    K, E = 4, 320
    scripts = [np.where(np.arange(E)[:, None] < drop, 1.0, low * rng.uniform(0.5, 1.5, (E, K)))
               for drop, low in [(0, 1e-4), (130, 9e-4), (150, 1.2e-3), (99, 4e-4), (101, 6e-4), (250, 1e-5)]]
    scripts.append(np.where((np.arange(E) % 100 == 0)[:, None], 2e-3, 1e-5) * np.ones((E, K)))
    seen = set()
    for script in scripts:
        steps = iter(script.reshape(-1))

        def fake(st, params, counts, query, target, **kw):
            return np.full(counts.shape[0], next(steps)), {k: np.zeros_like(v) for k, v in params.items()}
        monkeypatch.setattr(sgd.models, "loss_and_grad", fake)
        run = sgd.train_fig2(sgd.Fig2Config("CACO", epochs=E, steps_per_epoch=K, batch_size=2), [1])[0]
        want = _notebook_stop(script, K)
        assert run["stopped_epoch"] == want
        assert run["steps"] == (want or E) * K and run["status"] == ("reached" if want else "completed")
        seen.add(None if want is None else (want - 1) % 100)
        # the log: the mean of each block of 100 epochs (as the notebooks print; the last one partial)
        trained = script[:want or E]
        blocks = [trained[b:b + 100].mean() for b in range(0, len(trained), 100)]
        np.testing.assert_allclose(run["loss_log"], blocks, rtol=1e-12)
    assert seen == {0, None}


def test_published_runs_are_the_spec_runs():
    """Every published run's settings and seeds, literally as the spec lists them; the measurements
    of each on 200 fresh batches of 32."""
    five = list(range(1234, 1239))
    spec = {
        "FAFO": (dict(epochs=2500, steps_per_epoch=250), [1234]),
        "FACO": (dict(epochs=2500, steps_per_epoch=250), [1234]),
        "CAFO": (dict(epochs=5000, steps_per_epoch=200), five),
        "CACO": (dict(epochs=2500, steps_per_epoch=200), [1234, 1235, 1236]),
        "CACO_fast_qk": (dict(lr_qk=0.05, seq_len=128, epochs=2000, steps_per_epoch=100, stop="none"), five),
        "CACO_ramp": (dict(qk_ramp=10.0, seq_len=128, epochs=2000, steps_per_epoch=100, stop="none"), five),
        "FAFO_fast_qk": (dict(lr_qk=0.2, init="identity", epochs=1000, steps_per_epoch=100), five),
        "FAFO_ramp": (dict(qk_ramp=40.0, init="identity", epochs=2000, steps_per_epoch=100, stop="none"), five),
    }
    jobs = dict(reproduce.published_jobs())
    assert set(jobs) == set(spec) | {"fig3_collapsed", "fig3_factorized"}
    for name, (changes, seeds) in spec.items():
        want = dict(parameterization=name.split("_")[0], lr_qk=0.01, lr_ov=0.01, qk_ramp=1.0, seq_len=64,
                    batch_size=32, stop="authors", init="authors", eval_batches=200, target_loss=None,
                    max_steps=None)
        want.update(changes)
        got = jobs[name]["config"]
        assert {k: got[k] for k in want} == want, name
        assert jobs[name]["seeds"] == seeds, name
    for circuit in fixed_attention.OUTPUT_CIRCUITS:
        got = jobs[f"fig3_{circuit}"]["config"]
        assert {k: got[k] for k in ("alphas", "epochs", "steps_per_epoch", "batch_size", "seq_len", "lr", "seed")} == \
            dict(alphas=[0.2, 0.4, 0.6, 0.8, 1.0], epochs=500, steps_per_epoch=250, batch_size=128, seq_len=64,
                 lr=0.01, seed=1234)


@pytest.mark.parametrize("ramp", [10.0, 40.0])
def test_ramp_multiplier_at_the_first_and_last_steps(ramp):
    """The published ramps (2000 x 100 steps): the QK rate is lr_qk at step 0 and
    lr_qk (1 + (F - 1) 199999 / 200000) at the last step, never F lr_qk."""
    T = 2000 * 100
    first, = sgd.qk_rates(0.01, ramp, 0, T, 1)
    *_, last = sgd.qk_rates(0.01, ramp, T - 100, T, 100)
    assert first == 0.01
    assert last == pytest.approx(0.01 * (1 + (ramp - 1) * (T - 1) / T), rel=1e-15, abs=0)


@pytest.mark.parametrize("P", ["FAFO", "CACO"])
def test_measurements_are_the_notebooks(P):
    """On 200 fresh batches of 32: x = the attention summed over positions holding an id > 9, y = the
    softmax probability of the label, the 2-D histogram (edges 0, .2, ..., 1) in percent of the 6400
    sequences, and the separability (largest attention on a relevant position minus the smallest on a
    common one) -- computed position by position on the same sequences."""
    rng = np.random.default_rng(5)
    w = {"Lq": 0.8 * rng.normal(size=(V, V)), "Lk": 0.8 * rng.normal(size=(V, V)), "Lqk": 6 * rng.normal(size=(V, V)),
         "Lo": 3 * rng.normal(size=(V, V)), "Lv": rng.normal(size=(V, V))}
    w = {k: w[k] for k in nb.linear_names(P)}
    params = {k: v for k, v in _as_package(w).items() if k in sgd.models.param_keys(P)}
    config = sgd.Fig2Config(P)
    assert (config.eval_batches, config.batch_size) == (200, 32)
    e = measure.evaluate(AUTHORS, params, sgd.eval_rng(1234), config.eval_batches, config.batch_size, 64)
    r = sgd.eval_rng(1234)
    classes = r.integers(0, 4, size=(200, 32))
    tickets = r.integers(0, 155, size=(200, 32, 62), dtype=np.int16)
    x, y, sep = [], [], []
    for j in range(200):
        tokens = nb.sequences(classes[j], tickets[j])
        _, f = nb.forward(P, w, tokens)
        rel = tokens[:, :-1] > 9
        prob = np.exp(f["z"] - f["lse"][:, None])[np.arange(32), f["y"]]
        for i in range(32):
            x.append(f["a"][i][rel[i]].sum())
            y.append(prob[i])
            sep.append(f["a"][i][rel[i]].max() - f["a"][i][~rel[i]].min())
    np.testing.assert_allclose(e["relevant_attention"], x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e["label_probability"], y, rtol=1e-12, atol=0)     # some are ~1e-19
    H, _, _ = np.histogram2d(x, y, bins=[np.array([0, .2, .4, .6, .8, 1])] * 2)
    assert (H > 0).sum() >= 4                                            # a real histogram
    s = measure.summarize_one(e)
    np.testing.assert_allclose(s["heatmap"], 100 * H / 6400, rtol=0, atol=1e-12)
    assert s["separability_sum"] / s["separability_n"] == pytest.approx(np.mean(sep), rel=1e-12, abs=0)


@pytest.mark.parametrize("circuit", fixed_attention.OUTPUT_CIRCUITS)
def test_fig3_is_the_notebook_loop(circuit):
    """train_fig3: PyTorch-default init (bias included), SGD 0.01 on balanced swapped batches, the loss
    at alpha and alpha + 0.005 at epoch 0 and after each epoch, the incentive (0 at alpha = 1)."""
    c = fixed_attention.Fig3Config(circuit, alphas=(0.2, 0.6, 1.0), epochs=2, steps_per_epoch=3, eval_batches=2)
    res = fixed_attention.train_fig3(c)
    rng = np.random.default_rng(c.seed)
    names = ("W", "b") if circuit == "collapsed" else ("W_V", "b_V", "W_O", "b_O")
    init = {n: rng.uniform(-BOUND, BOUND, (V, V) if n[0] == "W" else (V,)) for n in names}

    def batches(r, n):
        classes = r.permuted(np.broadcast_to(np.repeat(np.arange(4), 32), (n, 128)), axis=-1)
        tickets = r.integers(0, 155, size=(n, 128, 62), dtype=np.int16)
        return [nb.sequences(classes[j], tickets[j], swapped=True) for j in range(n)]
    train = [batches(rng, 3) for _ in range(2)]
    erng = sgd.eval_rng(c.seed)
    evals = [batches(erng, 2) for _ in range(3)]
    for i, alpha in enumerate(c.alphas):
        w, trained = dict(init), []
        L = {0: [], 1: []}
        for epoch in range(3):
            if epoch:
                for tokens in train[epoch - 1]:
                    loss, g = nb.fixed_attention_loss_and_grad(w, tokens, alpha)
                    w = {k: v - 0.01 * g[k] for k, v in w.items()}
                    trained.append(loss)
            for shift in (0, 1):
                a = min(alpha + 0.005 * shift, 1.0)
                L[shift].append(np.mean([nb.fixed_attention_loss_and_grad(w, t, a)[0] for t in evals[epoch]]))
        np.testing.assert_allclose(res["loss"][i], L[0], rtol=1e-13)
        np.testing.assert_allclose(res["loss_shifted"][i], L[1], rtol=1e-13)
        np.testing.assert_allclose(res["train_loss"][i], np.reshape(trained, (2, 3)).mean(1), rtol=1e-13)
        want = np.zeros(3) if alpha == 1 else (np.array(L[0]) - L[1]) / 0.005
        np.testing.assert_allclose(res["incentive"][i], want, rtol=1e-9, atol=0)
