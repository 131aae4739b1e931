"""numerics/experiments/measure.py: the input checks of evaluate; the measurements read position by position."""
from __future__ import annotations

import math

import numpy as np
import pytest

from numerics.experiments import evaluate, init_params, measure, proxies, sampled_task

ST = sampled_task("paper", {"M": 3})
P0 = init_params(ST, "CACO", rng=np.random.default_rng(0))


@pytest.mark.parametrize("params, match", [
    ({}, "^params must be a dict of one parameterization's matrices"),
    (None, "^params must be a dict of one parameterization's matrices"),
    ({"W_QK": P0["W_QK"]}, "^params must be a dict of one parameterization's matrices"),
    ({**P0, "W_Q": P0["W_QK"]}, "^params must be a dict of one parameterization's matrices"),
    ({"W_QK": np.zeros((2, 2)), "W_OV": P0["W_OV"]}, r"^params\['W_QK'\] must be finite numbers of shape"),
    ({"W_QK": np.full_like(P0["W_QK"], np.nan), "W_OV": P0["W_OV"]}, r"^params\['W_QK'\] must be finite"),
    ({"W_QK": P0["W_QK"], "W_OV": P0["W_OV"].astype(str)}, r"^params\['W_OV'\] must be finite")])
def test_evaluate_checks_the_matrices(params, match):
    """Never a KeyError, an IndexError from NumPy or silently nan measurements: the matrix is named."""
    with pytest.raises(ValueError, match=match):
        evaluate(ST, params, np.random.default_rng(0), eval_batches=1, batch_size=2, seq_len=8)


@pytest.mark.parametrize("rng", [None, 5, np.random.RandomState(0)])
def test_evaluate_needs_a_generator(rng):
    with pytest.raises(TypeError, match="^rng must be a numpy.random.Generator"):
        evaluate(ST, P0, rng, eval_batches=1, batch_size=2, seq_len=8)


def test_evaluate_of_valid_matrices_measures():
    out = evaluate(ST, P0, np.random.default_rng(0), eval_batches=1, batch_size=2, seq_len=8)
    assert out["relevant_attention"].shape == (2,) and np.all(np.isfinite(out["relevant_attention"]))


def _by_positions(tokens, w, logits, q, y, relevant):
    """The measurements of one explicit sequence read position by position (``tokens`` the attended
    positions, ``w[t]`` the weight of one position of token ``t``): shares summed over positions,
    separability as max over relevant positions minus min over other positions, argmax by a loop."""
    rel = sum(w[t] for t in tokens if relevant[t])
    own = sum(w[t] for t in tokens if t == q and not relevant[t])
    rel_w = [w[t] for t in tokens if relevant[t]]
    oth_w = [w[t] for t in tokens if not relevant[t]]
    sep = max(rel_w) - min(oth_w) if rel_w and oth_w else math.nan
    p = math.exp(logits[y]) / sum(math.exp(z) for z in logits)
    best = max(range(len(logits)), key=lambda i: logits[i])
    return rel, own, 1 - rel - own, sep, p, -math.log(p), best == y


def test_measurements_against_explicit_positions_and_pooled_separability():
    """measure.measurements and attention_shares on hand-made sequences (a relevant query token
    counts as relevant, not self; a sequence without relevant positions has nan separability)
    against a position-by-position reading; combine_summaries' separability is the mean and the
    population standard deviation of every finite separability of all seeds pooled."""
    T = 5
    relevant = np.array([False, True, True, False, False])
    seqs = [([0, 1, 1, 2, 3, 3], 3, 1), ([0, 0, 3, 4, 4], 4, 2), ([1, 2, 2, 0, 1], 1, 0),
            ([0, 2, 4, 4, 3], 3, 4)]
    rng = np.random.default_rng(4)
    counts = np.array([np.bincount(t, minlength=T) for t, _, _ in seqs], dtype=float)
    e = np.exp(rng.normal(size=(4, T)) * 2)
    w = e / (counts * e).sum(-1, keepdims=True)
    logits = rng.normal(size=(4, T)) * 3
    logits[1, 2] = logits[1].max() + 1.0                          # one correct prediction at least
    fwd = {"attention": counts * w, "position_attention": np.where(counts > 0, w, 0.0), "logits": logits,
           "log_probs": logits - np.log(np.exp(logits).sum(-1, keepdims=True))}
    q = np.array([s[1] for s in seqs])
    y = np.array([s[2] for s in seqs])
    got = measure.measurements(fwd, counts, q, y, relevant)
    names = ("relevant_attention", "self_attention", "other_attention", "separability", "label_probability",
             "loss", "correct")
    want = [_by_positions(t, w[i], logits[i], qq, yy, relevant) for i, (t, qq, yy) in enumerate(seqs)]
    for j, name in enumerate(names):
        np.testing.assert_allclose(got[name].astype(float), [r[j] for r in want], rtol=1e-12, atol=0,
                                   equal_nan=True, err_msg=name)
    assert got["correct"].any() and not got["correct"].all()
    assert math.isnan(got["separability"][1]) and got["self_attention"][2] == 0.0   # query 1 is relevant
    halves = [{k: v[s] for k, v in got.items()} for s in (slice(0, 2), slice(2, 4))]
    sums = [measure.summarize_one({**h, **{p: np.full(2, np.nan) for p in proxies.PROXIES}}) for h in halves]
    pooled = got["separability"][np.isfinite(got["separability"])]
    sep = measure.combine_summaries(sums)["separability"]
    assert abs(sep["mean"] - pooled.mean()) < 1e-12 and abs(sep["std"] - pooled.std()) < 1e-12
    assert sums[0]["accuracy"] == got["correct"][:2].mean()


@pytest.mark.parametrize("kw, name", [({"eval_batches": 0}, "eval_batches"), ({"eval_batches": 1.5}, "eval_batches"),
                                      ({"eval_batches": None}, "eval_batches"), ({"batch_size": 0}, "batch_size"),
                                      ({"seq_len": 2}, "seq_len")])
def test_evaluate_names_its_sizes(kw, name):
    """eval_batches=0 was refused as the sampler's ``n_batches``, a name evaluate does not have."""
    kw = {"eval_batches": 1, "batch_size": 2, "seq_len": 8, **kw}
    with pytest.raises(ValueError, match=rf"^{name} must be an integer >= "):
        evaluate(ST, P0, np.random.default_rng(0), **kw)
