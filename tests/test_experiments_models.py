"""numerics.experiments.data / models: sampling, position-free equivalence, analytic gradients."""
import numpy as np
import pytest

from numerics.experiments import data, models

V = data.V


def _params(p, rng, scale=1.0):
    """Random parameters large enough that attention and logits are far from uniform."""
    return {k: scale * rng.normal(size=(V, V)) for k in models.param_keys(p)}


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def test_class_distribution_matches_spec():
    p = data.class_probabilities()
    w = data.class_weights()
    assert np.allclose(w.sum(1), 15.5) and np.allclose(p.sum(1), 1)
    for k in range(4):
        assert np.all(p[k, :10] == 1 / 15.5)
        assert np.allclose(p[k, 10 * (k + 1):10 * (k + 2)], np.arange(1, 11) / 10 / 15.5)
    # about 35.5 % of context positions are relevant
    assert np.allclose(p[:, data.RELEVANT].sum(1), 5.5 / 15.5)


def test_fig2_batches_layout_and_mean_counts():
    rng = np.random.default_rng(7)
    b = data.sample_fig2_batches(rng, 400, 50, 64)         # 20000 sequences
    assert np.all(b.counts.sum(-1) == 63)
    assert np.all(b.query == data.QUERY_TOKENS[b.label_class])
    assert np.all(b.target == data.LABEL_TOKENS[b.label_class])
    c = b.counts.reshape(-1, V)
    k = b.label_class.reshape(-1)
    exp = data.expected_counts(64)
    for cls in range(4):
        sel = c[k == cls]
        n = sel.shape[0]
        p = data.class_probabilities()[cls]
        # multinomial variance of the context counts; the query adds a constant 1
        sd = np.sqrt(62 * p * (1 - p) / n)
        z = np.abs(sel.mean(0) - exp[cls])[sd > 0] / sd[sd > 0]
        assert z.max() < 5.5, z.max()
        assert np.all(sel[:, sd == 0] == exp[cls][sd == 0])       # tokens of other classes never appear


def test_fig3_batches_balanced_and_swapped():
    b = data.sample_fig3_batches(np.random.default_rng(1), 3, 128, 64)
    for i in range(3):
        assert np.bincount(b.label_class[i], minlength=4).tolist() == [32] * 4
    assert not np.all(b.label_class[0] == np.sort(b.label_class[0]))     # shuffled
    assert np.all(b.query == data.LABEL_TOKENS[b.label_class])            # last input: label token
    assert np.all(b.target == data.QUERY_TOKENS[b.label_class])           # target: query token
    with pytest.raises(ValueError, match="multiple of 4"):
        data.sample_fig3_batches(np.random.default_rng(1), 1, 30)


# --------------------------------------------------------------------------- #
# per-position reference: explicit token sequences, softmax over positions
# --------------------------------------------------------------------------- #
def _reference(params, tokens, target):
    """Loss, attention per position and gradients, position by position."""
    B, T = tokens.shape
    A = params["W_QK"] if "W_QK" in params else params["W_Q"].T @ params["W_K"]
    WOV = params["W_OV"] if "W_OV" in params else params["W_O"] @ params["W_V"]
    grads = {k: np.zeros((V, V)) for k in params}
    dA = np.zeros((V, V))
    dWOV = np.zeros((V, V))
    losses, attn = [], []
    for b in range(B):
        t = tokens[b]
        q = t[-1]
        X = np.eye(V)[t]                               # (T, V) one-hot positions
        s = X @ A[q] / np.sqrt(V)                      # score of each position
        w = np.exp(s - s.max())
        w /= w.sum()                                   # softmax over positions
        c = w @ X
        z = WOV @ c
        lse = np.log(np.exp(z - z.max()).sum()) + z.max()
        losses.append(lse - z[target[b]])
        attn.append(w)
        gz = np.exp(z - lse)
        gz[target[b]] -= 1
        gz /= B
        dWOV += np.outer(gz, c)
        gc = WOV.T @ gz
        gpos = w * (X @ gc - w @ (X @ gc))            # d loss / d s_j
        for j in range(T):
            dA[q, t[j]] += gpos[j] / np.sqrt(V)
    if "W_QK" in params:
        grads["W_QK"] = dA
    else:
        grads["W_Q"] = params["W_K"] @ dA.T
        grads["W_K"] = params["W_Q"] @ dA
    if "W_OV" in params:
        grads["W_OV"] = dWOV
    else:
        grads["W_O"] = dWOV @ params["W_V"].T
        grads["W_V"] = params["W_O"].T @ dWOV
    return np.mean(losses), np.array(attn), grads


@pytest.mark.parametrize("p", models.PARAMETERIZATIONS)
def test_count_model_equals_per_position_reference(p):
    rng = np.random.default_rng(11)
    params = _params(p, rng, 0.6)
    tokens, target = data.sample_fig2_sequences(rng, 12, 64)
    counts = data.sequences_to_counts(tokens)
    query = tokens[:, -1]
    loss, grads = models.loss_and_grad(params, counts, query, target)
    ref_loss, ref_attn, ref_grads = _reference(params, tokens, target)
    assert abs(loss - ref_loss) <= 1e-12 * max(1, abs(ref_loss))
    f = models.forward(params, counts, query)
    pos_from_counts = np.take_along_axis(f["position_attention"], tokens, axis=-1)
    np.testing.assert_allclose(pos_from_counts, ref_attn, rtol=0, atol=1e-12)
    tok_from_ref = np.zeros((12, V))
    np.add.at(tok_from_ref, (np.arange(12)[:, None], tokens), ref_attn)
    np.testing.assert_allclose(f["attention"], tok_from_ref, rtol=0, atol=1e-12)
    assert ref_attn.std() > 1e-3                       # attention far from uniform: a real test
    for k in params:
        scale = max(1.0, np.abs(ref_grads[k]).max())
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=0, atol=1e-12 * scale)


# --------------------------------------------------------------------------- #
# finite differences
# --------------------------------------------------------------------------- #
def _fd_check(fun, params, grads, rng, n_entries=12, h=1e-5, rtol=1e-6):
    for key, value in params.items():
        idx = [tuple(rng.integers(0, s) for s in value.shape) for _ in range(n_entries)]
        for i in idx:
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[key][i] += h
            minus[key][i] -= h
            fd = (fun(plus) - fun(minus)) / (2 * h)
            an = grads[key][i]
            assert abs(fd - an) <= rtol * max(1e-3, abs(an)) + 1e-9, (key, i, fd, an)


@pytest.mark.parametrize("p", models.PARAMETERIZATIONS)
def test_gradients_match_finite_differences_stacked_and_weighted(p):
    rng = np.random.default_rng(3)
    params = {k: np.stack([v, 0.5 * v]) for k, v in _params(p, rng, 0.5).items()}   # S = 2
    b = data.sample_fig2_batches(rng, 2, 8, 20)                                    # (2, 8, V)
    weights = rng.random((2, 8))
    loss, grads = models.loss_and_grad(params, b.counts, b.query, b.target, weights=weights)
    assert loss.shape == (2,)

    def total(pp):
        return float(models.loss_and_grad(pp, b.counts, b.query, b.target, weights=weights, grad=False)[0].sum())
    _fd_check(total, params, grads, rng)


@pytest.mark.parametrize("p", models.PARAMETERIZATIONS)
def test_real_valued_counts_population_loss(p):
    """Expected counts with class weights: the weighted sum of per-class losses, and FD gradients."""
    rng = np.random.default_rng(5)
    params = _params(p, rng, 0.3)
    counts = data.expected_counts(64)
    w = np.full(4, 0.25)
    loss, grads = models.loss_and_grad(params, counts, data.QUERY_TOKENS, data.LABEL_TOKENS, weights=w)
    per_class = [models.loss_and_grad(params, counts[k:k + 1], data.QUERY_TOKENS[k:k + 1],
                                      data.LABEL_TOKENS[k:k + 1])[0] for k in range(4)]
    assert abs(loss - np.mean(per_class)) < 1e-13
    mean_loss, mean_grads = models.loss_and_grad(params, counts, data.QUERY_TOKENS, data.LABEL_TOKENS)
    assert abs(mean_loss - loss) < 1e-13

    def total(pp):
        return float(models.loss_and_grad(pp, counts, data.QUERY_TOKENS, data.LABEL_TOKENS, weights=w,
                                          grad=False)[0])
    _fd_check(total, params, grads, rng)


def test_attention_is_stable_when_absent_token_dominates():
    params = {"W_QK": np.zeros((V, V)), "W_OV": np.zeros((V, V))}
    params["W_QK"][5, 49] = 1e5                        # absent token with a huge score
    counts = np.zeros((1, V))
    counts[0, [0, 5]] = [3, 1]
    f = models.forward(params, counts, np.array([5]))
    np.testing.assert_allclose(f["attention"][0, [0, 5]], [0.75, 0.25], rtol=1e-15)
    assert np.all(np.isfinite(f["attention"]))


def test_authors_init():
    rng = np.random.default_rng(0)
    p = models.init_params("FAFO", "authors", rng)
    assert np.abs(p["W_Q"]).max() <= 1 / np.sqrt(50) and p["W_Q"].std() > 0.05
    assert np.array_equal(p["W_O"], 1e-6 * np.eye(V))
    assert all(np.array_equal(v, 1e-6 * np.eye(V)) for v in models.init_params("CAFO", "authors").values())
    with pytest.raises(ValueError, match="init"):
        models.init_params("CACO", "zeros", rng)
    with pytest.raises(ValueError, match="parameterization"):
        models.param_keys("CAXO")


# --------------------------------------------------------------------------- #
# Figure 3
# --------------------------------------------------------------------------- #
def test_fixed_attention_context_against_positions():
    rng = np.random.default_rng(2)
    b = data.sample_fig3_batches(rng, 1, 8, 64)
    counts = b.counts[0]
    ctx = models.fixed_attention_context(counts, np.array([0.3, 1.0]))
    assert ctx.shape == (2, 8, V)
    np.testing.assert_allclose(ctx.sum(-1), 1, rtol=1e-14)
    np.testing.assert_allclose(ctx[0][:, data.RELEVANT].sum(-1), 0.3, rtol=1e-14)
    assert np.all(ctx[1][:, ~data.RELEVANT] == 0)
    # per position: each relevant position gets alpha/R, each other one (1-alpha)/(T-R)
    tokens = np.repeat(np.arange(V), counts[0].astype(int))
    R = np.sum(tokens >= 10)
    w = np.where(tokens >= 10, 0.3 / R, 0.7 / (tokens.size - R))
    ref = np.zeros(V)
    np.add.at(ref, tokens, w)
    np.testing.assert_allclose(ctx[0, 0], ref, atol=1e-15)


@pytest.mark.parametrize("circuit", models.OUTPUT_CIRCUITS)
def test_fig3_gradients_finite_differences(circuit):
    rng = np.random.default_rng(4)
    params = models.fig3_init(circuit, rng)
    params = {k: 3 * v for k, v in params.items()}
    b = data.sample_fig3_batches(rng, 1, 16, 30)
    ctx = models.fixed_attention_context(b.counts[0], 0.4)
    loss, grads = models.fig3_loss_and_grad(params, ctx, b.target[0])

    def f(pp):
        return float(models.fig3_loss_and_grad(pp, ctx, b.target[0], grad=False)[0])
    _fd_check(f, params, grads, rng)
