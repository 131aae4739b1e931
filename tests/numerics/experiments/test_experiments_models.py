"""numerics.experiments.task_sampling / models: sampling, position-free equivalence, analytic gradients."""
import numpy as np
import pytest

from derivations.core.vocabulary import PARAMETERIZATIONS
from numerics.experiments import fixed_attention, models, sampler, task_sampling as ts
from numerics.experiments.cross_entropy import target_index
from numerics.experiments.task_sampling import AUTHORS

V = AUTHORS.T
from _stats import chisquare_pvalue as _chisquare_pvalue
from _sequences import sequence_counts as _sequence_counts, sequences as _sequences

V = V


def _params(p, rng, scale=1.0):
    """Random parameters large enough that attention and logits are far from uniform."""
    return {k: scale * rng.normal(size=(V, V)) for k in models.param_keys(p)}


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def test_class_distribution_matches_spec():
    p = AUTHORS.probabilities
    # sums of 50 probabilities in doubles, each rounding at most 1.1e-16 relative: within 1e-14
    assert np.allclose(p.sum(1), 1, rtol=1e-14, atol=0)
    for k in range(4):
        assert np.all(p[k, :10] == 1 / 15.5)
        assert np.allclose(p[k, 10 * (k + 1):10 * (k + 2)], np.arange(1, 11) / 10 / 15.5, rtol=1e-15, atol=0)
    # about 35.5 % of context positions are relevant
    assert np.allclose(p[:, AUTHORS.relevant].sum(1), 5.5 / 15.5, rtol=1e-14, atol=0)


def test_fig2_batches_layout_and_mean_counts():
    rng = np.random.default_rng(7)
    b = sampler.sample_batches(AUTHORS, rng, 400, 50, 64)         # 20000 sequences
    assert np.all(b.counts.sum(-1) == 63)
    assert np.all(b.query == AUTHORS.query[b.label_class])
    assert np.all(b.target == AUTHORS.label[b.label_class])
    c = b.counts.reshape(-1, V)
    k = b.label_class.reshape(-1)
    exp = ts.expected_counts(AUTHORS, 64)
    for cls in range(4):
        sel = c[k == cls]
        n = sel.shape[0]
        p = AUTHORS.probabilities[cls]
        # multinomial variance of the context counts; the query adds a constant 1
        sd = np.sqrt(62 * p * (1 - p) / n)
        z = np.abs(sel.mean(0) - exp[cls])[sd > 0] / sd[sd > 0]
        assert z.max() < 5.5, z.max()
        assert np.all(sel[:, sd == 0] == exp[cls][sd == 0])       # tokens of other classes never appear


def _pair_outcomes(counts, cls_probs):
    """Observed and exact probabilities of the unordered context pairs (seq_len 4: two tokens)."""
    rows = np.arange(counts.shape[0])
    first = np.argmax(counts > 0, axis=1)
    rest = counts.copy()
    rest[rows, first] -= 1
    second = np.argmax(rest > 0, axis=1)                    # first <= second
    hist = np.bincount(first * V + second, minlength=V * V)
    support = np.flatnonzero(cls_probs > 0)
    obs, exp = [], []
    for ii, i in enumerate(support):
        for j in support[ii:]:
            obs.append(hist[i * V + j])
            exp.append(cls_probs[i] ** 2 if i == j else 2 * cls_probs[i] * cls_probs[j])
    # a sum of products of probabilities in doubles (at most V^2), each rounding 1.1e-16 relative
    assert np.isclose(sum(exp), 1.0, rtol=V * V * 2.3e-16, atol=0) and sum(obs) == counts.shape[0]
    return np.array(obs), np.array(exp)


def test_ticket_sampler_matches_exact_multinomial_probabilities():
    """Chi-square against the exact multinomial law: the joint law of a two-token context
    (every unordered pair), the pooled token counts and one token's per-sequence count at
    seq_len 64 (Binomial(62, p)); and the same statistic rejects a slightly wrong law."""
    from scipy import stats
    probs = AUTHORS.probabilities
    b = sampler.sample_batches(AUTHORS, np.random.default_rng(2024), 4, 30000, 4)     # 2 context tokens
    ctx = b.counts.reshape(-1, V).copy()
    ctx[np.arange(ctx.shape[0]), b.query.reshape(-1)] -= 1
    k = b.label_class.reshape(-1)
    for cls in range(4):
        obs, exp = _pair_outcomes(ctx[k == cls], probs[cls])
        assert _chisquare_pvalue(obs, exp * obs.sum()) > 1e-4
        # power: a law with the relevant weights 0.1..1.0 tilted by +-20 % is rejected
        wrong = probs[cls].copy()
        wrong[AUTHORS.relevant & (wrong > 0)] *= np.linspace(0.8, 1.2, 10)
        wrong /= wrong.sum()
        _, exp_wrong = _pair_outcomes(ctx[k == cls][:1], wrong)
        assert _chisquare_pvalue(obs, exp_wrong * obs.sum()) < 1e-6
    b = sampler.sample_batches(AUTHORS, np.random.default_rng(7), 100, 100, 64)      # 10000 sequences
    ctx = b.counts.reshape(-1, V).copy()
    ctx[np.arange(ctx.shape[0]), b.query.reshape(-1)] -= 1
    k = b.label_class.reshape(-1)
    for cls in range(4):
        sel = ctx[k == cls]
        assert _chisquare_pvalue(sel.sum(0), 62 * sel.shape[0] * probs[cls]) > 1e-4
        n0 = sel[:, 0].astype(int)                         # common token 0 ~ Binomial(62, 1/15.5)
        obs = np.bincount(n0, minlength=63)[:63]
        exp = stats.binom.pmf(np.arange(63), 62, probs[cls, 0]) * sel.shape[0]
        assert _chisquare_pvalue(obs, exp) > 1e-4


def test_ticket_table_is_the_class_distribution_exactly():
    for cls in range(4):
        tickets = np.bincount(AUTHORS.ticket_tokens[cls], minlength=V)      # tickets of each token
        np.testing.assert_array_equal(tickets, np.rint(155 * AUTHORS.probabilities[cls]))
        np.testing.assert_allclose(tickets / AUTHORS.tickets, AUTHORS.probabilities[cls], rtol=1e-15)


def test_batches_are_the_counts_of_the_explicit_sequences_and_stack_per_stream():
    """Same generator state: sample_fig2_batches counts == sequences_to_counts of the
    explicit sequences drawn position by position; counts of stacked streams == each alone."""
    b = sampler.sample_batches(AUTHORS, np.random.default_rng(5), 1, 40, 64)
    tokens, target = _sequences(np.random.default_rng(5), 40, 64)
    np.testing.assert_array_equal(b.counts[0], _sequence_counts(tokens))
    np.testing.assert_array_equal(b.target[0], target)
    assert np.all(tokens[:, -1] == b.query[0])
    draws = [sampler.draw_tickets(AUTHORS, np.random.default_rng(s), 3, 8, 20) for s in (1, 2, 3)]
    stacked = sampler.batch_from_tickets(AUTHORS, np.stack([d[0] for d in draws], 1), np.stack([d[1] for d in draws], 1))
    for j, s in enumerate((1, 2, 3)):
        alone = sampler.sample_batches(AUTHORS, np.random.default_rng(s), 3, 8, 20)
        np.testing.assert_array_equal(stacked.counts[:, j], alone.counts)
        np.testing.assert_array_equal(stacked.target[:, j], alone.target)


def test_counts_from_tickets_rejects_bad_tickets_and_classes():
    tickets = np.zeros((2, 5), dtype=np.int16)
    with pytest.raises(ValueError, match=r"tickets must lie in \[0, 155\)"):
        sampler.counts_from_tickets(AUTHORS, np.array([0, 1]), tickets + 155, np.array([5, 6]))
    with pytest.raises(ValueError, match=r"classes must lie in \[0, 4\)"):
        sampler.counts_from_tickets(AUTHORS, np.array([0, 4]), tickets, np.array([5, 6]))


def test_uint16_counts_give_the_same_numbers():
    """The trainer keeps counts as uint16: the same counts, and the same loss and gradients bit
    for bit (an exact integer times a float64 is the same product); dtypes that cannot hold the
    counts are refused."""
    classes, tickets = sampler.draw_tickets(AUTHORS, np.random.default_rng(3), 2, 16, 40)
    query = AUTHORS.query[classes]
    ref = sampler.counts_from_tickets(AUTHORS, classes, tickets, query)
    small = sampler.counts_from_tickets(AUTHORS, classes, tickets, query, out=np.empty(ref.shape, dtype=np.uint16))
    np.testing.assert_array_equal(small, ref)
    with pytest.raises(ValueError, match="holds counts up to 39"):
        sampler.counts_from_tickets(AUTHORS, classes, tickets, query, out=np.empty(ref.shape, dtype=np.uint8))
    runs = [_params("CAFO", np.random.default_rng(s), 0.5) for s in (1, 2)]
    params = {k: np.stack([r[k] for r in runs]) for k in runs[0]}
    target = AUTHORS.label[classes]
    qids = np.unique(query)
    hot = (qids, models.query_onehot_t(query, qids), models._query_slots(query, qids),
           target_index(target, -2, V))
    out = [models.loss_and_grad(AUTHORS, params, c, query, target, _query_set=hot, _sparse_qk=True, _rates=(0.1, 0.2))
           for c in (ref, small)]
    np.testing.assert_array_equal(out[0][0], out[1][0])
    for key in params:
        np.testing.assert_array_equal(out[0][1][key], out[1][1][key])


def test_fig3_batches_balanced_and_swapped():
    b = fixed_attention.sample_fig3_batches(np.random.default_rng(1), 3, 128, 64)
    for i in range(3):
        assert np.bincount(b.label_class[i], minlength=4).tolist() == [32] * 4
    assert not np.all(b.label_class[0] == np.sort(b.label_class[0]))     # shuffled
    assert np.all(b.query == AUTHORS.label[b.label_class])            # last input: label token
    assert np.all(b.target == AUTHORS.query[b.label_class])           # target: query token
    with pytest.raises(ValueError, match="multiple of 4"):
        fixed_attention.sample_fig3_batches(np.random.default_rng(1), 1, 30)


# --------------------------------------------------------------------------- #
# per-position reference: explicit token sequences, softmax over positions
# --------------------------------------------------------------------------- #
def _reference(params, tokens, target):
    """Loss, attention per position and gradients, position by position."""
    B, T = tokens.shape
    A = params["W_QK"] if "W_QK" in params else params["W_Q"] @ params["W_K"].T
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
        grads["W_Q"] = dA @ params["W_K"]
        grads["W_K"] = dA.T @ params["W_Q"]
    if "W_OV" in params:
        grads["W_OV"] = dWOV
    else:
        grads["W_O"] = dWOV @ params["W_V"].T
        grads["W_V"] = params["W_O"].T @ dWOV
    return np.mean(losses), np.array(attn), grads


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_count_model_equals_per_position_reference(p):
    rng = np.random.default_rng(11)
    params = _params(p, rng, 0.6)
    tokens, target = _sequences(rng, 12, 64)
    counts = _sequence_counts(tokens)
    query = tokens[:, -1]
    loss, grads = models.loss_and_grad(AUTHORS, params, counts, query, target)
    ref_loss, ref_attn, ref_grads = _reference(params, tokens, target)
    assert abs(loss - ref_loss) <= 1e-12 * max(1, abs(ref_loss))
    f = models.forward(AUTHORS, params, counts, query)
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


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_gradients_match_finite_differences_stacked_and_weighted(p):
    rng = np.random.default_rng(3)
    params = {k: np.stack([v, 0.5 * v]) for k, v in _params(p, rng, 0.5).items()}   # S = 2
    b = sampler.sample_batches(AUTHORS, rng, 2, 8, 20)                                    # (2, 8, V)
    weights = rng.random((2, 8))
    loss, grads = models.loss_and_grad(AUTHORS, params, b.counts, b.query, b.target, weights=weights)
    assert loss.shape == (2,)

    def total(pp):
        return float(models.loss_and_grad(AUTHORS, pp, b.counts, b.query, b.target, weights=weights, grad=False)[0].sum())
    _fd_check(total, params, grads, rng)


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_real_valued_counts_population_loss(p):
    """Expected counts with class weights: the weighted sum of per-class losses, and FD gradients."""
    rng = np.random.default_rng(5)
    params = _params(p, rng, 0.3)
    counts = ts.expected_counts(AUTHORS, 64)
    w = np.full(4, 0.25)
    loss, grads = models.loss_and_grad(AUTHORS, params, counts, AUTHORS.query, AUTHORS.label, weights=w)
    per_class = [models.loss_and_grad(AUTHORS, params, counts[k:k + 1], AUTHORS.query[k:k + 1],
                                      AUTHORS.label[k:k + 1])[0] for k in range(4)]
    assert abs(loss - np.mean(per_class)) < 1e-13
    mean_loss, mean_grads = models.loss_and_grad(AUTHORS, params, counts, AUTHORS.query, AUTHORS.label)
    assert abs(mean_loss - loss) < 1e-13

    def total(pp):
        return float(models.loss_and_grad(AUTHORS, pp, counts, AUTHORS.query, AUTHORS.label, weights=w,
                                          grad=False)[0])
    _fd_check(total, params, grads, rng)


def test_attention_is_stable_when_absent_token_dominates():
    params = {"W_QK": np.zeros((V, V)), "W_OV": np.zeros((V, V))}
    params["W_QK"][5, 49] = 1e5                        # absent token with a huge score
    counts = np.zeros((1, V))
    counts[0, [0, 5]] = [3, 1]
    f = models.forward(AUTHORS, params, counts, np.array([5]))
    np.testing.assert_allclose(f["attention"][0, [0, 5]], [0.75, 0.25], rtol=1e-15)
    assert np.all(np.isfinite(f["attention"]))


def test_authors_init():
    rng = np.random.default_rng(0)
    p = models.init_params(AUTHORS, "FAFO", "authors", rng)
    assert np.abs(p["W_Q"]).max() <= 1 / np.sqrt(50) and p["W_Q"].std() > 0.05
    assert np.array_equal(p["W_O"], 1e-6 * np.eye(V))
    assert all(np.array_equal(v, 1e-6 * np.eye(V)) for v in models.init_params(AUTHORS, "CAFO", "authors").values())
    with pytest.raises(ValueError, match="init"):
        models.init_params(AUTHORS, "CACO", "zeros", rng)
    with pytest.raises(ValueError, match="parameterization"):
        models.param_keys("CAXO")


def test_factors_are_the_transposed_linear_weights_and_their_layout_changes_no_bit():
    """W_QK = W_Q W_K^T: W_Q and W_K are the transposes of the notebooks' Linear weights, drawn
    in that order from the seed's stream; the model's numbers do not depend on whether they are
    stored as those transposed views or as C-contiguous copies (every product reads W_Q^T, W_K^T
    as C-ordered factors), stacked or not."""
    bound = 1 / np.sqrt(V)
    draws = np.random.default_rng(7)
    p = models.init_params(AUTHORS, "FAFO", "authors", np.random.default_rng(7))
    assert np.array_equal(p["W_Q"].T, draws.uniform(-bound, bound, (V, V)))
    assert np.array_equal(p["W_K"].T, draws.uniform(-bound, bound, (V, V)))
    rng = np.random.default_rng(8)
    for stack in (None, 3):
        shape = (V, V) if stack is None else (stack, V, V)
        p = {k: 0.3 * rng.normal(size=shape) for k in models.param_keys("FAFO")}
        p["W_Q"], p["W_K"] = p["W_Q"].swapaxes(-1, -2), p["W_K"].swapaxes(-1, -2)   # views
        c = {k: np.ascontiguousarray(v) for k, v in p.items()}
        b = sampler.sample_batches(AUTHORS, np.random.default_rng(9), 1, 16, 64)
        counts, q, y = b.counts[0], b.query[0], b.target[0]
        if stack is not None:
            counts, q, y = (np.broadcast_to(x, (stack,) + x.shape) for x in (counts, q, y))
        (l1, g1), (l2, g2) = (models.loss_and_grad(AUTHORS, x, counts, q, y) for x in (p, c))
        assert np.array_equal(l1, l2) and all(np.array_equal(g1[k], g2[k]) for k in g1)
        A = np.matmul(c["W_Q"], c["W_K"].swapaxes(-1, -2))
        a = models.forward(AUTHORS, c, counts, q)["attention"]
        s = np.take_along_axis(A, q[..., None], -2) / np.sqrt(V)    # rows A[q, :] of each sequence
        w = counts * np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(a, w / w.sum(-1, keepdims=True), rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- #
# Figure 3
# --------------------------------------------------------------------------- #
def test_fixed_attention_context_against_positions():
    rng = np.random.default_rng(2)
    b = fixed_attention.sample_fig3_batches(rng, 1, 8, 64)
    counts = b.counts[0]
    ctx = fixed_attention.fixed_attention_context(counts, np.array([0.3, 1.0]))
    assert ctx.shape == (2, 8, V)
    np.testing.assert_allclose(ctx.sum(-1), 1, rtol=1e-14)
    np.testing.assert_allclose(ctx[0][:, AUTHORS.relevant].sum(-1), 0.3, rtol=1e-14)
    assert np.all(ctx[1][:, ~AUTHORS.relevant] == 0)
    # per position: each relevant position gets alpha/R, each other one (1-alpha)/(T-R)
    tokens = np.repeat(np.arange(V), counts[0].astype(int))
    R = np.sum(tokens >= 10)
    w = np.where(tokens >= 10, 0.3 / R, 0.7 / (tokens.size - R))
    ref = np.zeros(V)
    np.add.at(ref, tokens, w)
    np.testing.assert_allclose(ctx[0, 0], ref, rtol=0, atol=1e-15)     # shares below 1 summed in doubles


@pytest.mark.parametrize("circuit", fixed_attention.OUTPUT_CIRCUITS)
def test_fig3_gradients_finite_differences(circuit):
    rng = np.random.default_rng(4)
    params = fixed_attention.fig3_init(circuit, rng)
    params = {k: 3 * v for k, v in params.items()}
    b = fixed_attention.sample_fig3_batches(rng, 1, 16, 30)
    ctx = fixed_attention.fixed_attention_context(b.counts[0], 0.4)
    loss, grads = fixed_attention.fig3_loss_and_grad(params, ctx, b.target[0])

    def f(pp):
        return float(fixed_attention.fig3_loss_and_grad(pp, ctx, b.target[0], grad=False)[0])
    _fd_check(f, params, grads, rng)


@pytest.mark.parametrize("p", PARAMETERIZATIONS)
def test_trainer_hot_path_is_rate_times_gradient(p):
    """The trainer's private path (precomputed query set, sparse query-side block, rates folded
    in) returns lr_QK x / lr_OV x the public gradients, and nothing outside the sparse block."""
    rng = np.random.default_rng(11)
    params = {k: np.stack([v, -0.7 * v]) for k, v in _params(p, rng, 0.5).items()}   # S = 2
    b = sampler.sample_batches(AUTHORS, rng, 2, 16, 30)
    loss, grads = models.loss_and_grad(AUTHORS, params, b.counts, b.query, b.target)
    qids = np.unique(b.query)
    hot = (qids, models.query_onehot_t(b.query, qids), models._query_slots(b.query, qids),
           target_index(b.target, -2, V))
    lr_qk, lr_ov = 0.37, 0.011
    hot_loss, steps = models.loss_and_grad(AUTHORS, params, b.counts, b.query, b.target, _query_set=hot,
                                           _sparse_qk=True, _rates=(lr_qk, lr_ov))
    np.testing.assert_allclose(hot_loss, loss, rtol=1e-13)
    for key, g in grads.items():
        lr = lr_qk if key in ("W_QK", "W_Q", "W_K") else lr_ov
        if key in ("W_QK", "W_Q"):
            full = g[..., qids, :]
            assert not np.any(np.delete(g, qids, axis=-2))
        else:
            full = g
        np.testing.assert_allclose(steps[key], lr * full, rtol=1e-12, atol=1e-18 * lr)


@pytest.mark.parametrize("class_axis", [-1, -2])
@pytest.mark.parametrize("n_classes", [V, 7])
def test_cross_entropy_rows_far_below_the_run_maximum(class_axis, n_classes):
    """One constant shift per run, and a per-row shift for a run with a row that underflows
    (2000 below the rest); a row 640 below needs no fallback.  In both layouts, and for the
    authors' V = 50 classes as for a task's 7 outputs (the class count read from the logits),
    losses and gradients stay finite and match log-sum-exp row by row (scipy), to 1e-12."""
    from scipy.special import logsumexp, softmax
    rng = np.random.default_rng(4)
    z = rng.normal(size=(2, 3, n_classes))
    z[1, 2] -= 2000.0                           # run 1, row 2: all logits 2000 below the rest
    z[0, 1] += 640.0                            # run 0: rows 0 and 2 lie 640 below row 1
    target = np.array([[0, 3, n_classes - 1], [1, 2, n_classes - 10 if n_classes == V else 5]])
    zin = z.copy() if class_axis == -1 else np.ascontiguousarray(z.swapaxes(-1, -2))
    loss, gz = models._cross_entropy(zin, target, None, True, class_axis=class_axis)
    if class_axis == -2:
        gz = gz.swapaxes(-1, -2)
    ref = (logsumexp(z, axis=-1) - np.take_along_axis(z, target[..., None], -1)[..., 0]).mean(-1)
    np.testing.assert_allclose(loss, ref, rtol=1e-12)
    expect = softmax(z, axis=-1)
    np.put_along_axis(expect, target[..., None], np.take_along_axis(expect, target[..., None], -1) - 1, -1)
    np.testing.assert_allclose(gz, expect / 3, rtol=1e-10, atol=1e-15)
    assert np.all(np.isfinite(gz))


@pytest.mark.parametrize("rng", [None, 5, np.random.RandomState(0)])
def test_sample_batches_needs_a_generator(rng):
    """Never an AttributeError from deep inside the sampler: rng is named."""
    with pytest.raises(TypeError, match="^rng must be a numpy.random.Generator"):
        sampler.sample_batches(AUTHORS, rng, 1, 2, 8)


@pytest.mark.parametrize("config", [None, {}, "fig3"])
def test_train_fig3_needs_a_config(config):
    with pytest.raises(ValueError, match="^config must be a Fig3Config"):
        fixed_attention.train_fig3(config)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1e-6, 0.0, "1e-6", None, True])
def test_init_params_refuses_an_identity_scale_that_is_not_positive(bad):
    """Never a silent NaN (or negative, infinite) initial matrix: a ValueError naming identity_scale."""
    with pytest.raises(ValueError, match="^identity_scale must be a finite number > 0"):
        models.init_params(AUTHORS, "CAFO", "identity", identity_scale=bad)
