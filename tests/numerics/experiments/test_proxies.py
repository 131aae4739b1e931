"""Interpretability proxies (numerics.experiments.proxies) against scikit-learn and a direct
per-position computation on explicit token sequences, their ranges, the worked example, and the
evaluations that record them."""
import functools
import heapq
import math
import zlib

import numpy as np
import pytest

from numerics.experiments import jobs, measure, models, proxies, sampler, sgd, task_sampling
from numerics.experiments.task_sampling import AUTHORS


def average_precision_score(y_true, y_score):
    """scikit-learn's, loaded at the first call (collecting this module does not load scikit-learn)."""
    from sklearn.metrics import average_precision_score as score
    return score(y_true, y_score)


# absolute: the proxies are of scale 1 (AP, F1 in [0, 1], the AOPCs means of differences of probabilities,
# whose rounding is of the probabilities' scale, not the differences', some ~1e-6)
TOL = 1e-12


# --------------------------------------------------------------------------- direct reference
def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def _direct_probability(model, positions, q, label):
    """Label probability of the model read position by position: softmax over the positions'
    scores, context = sum of the attended one-hot embeddings, the output circuit."""
    if not positions:
        return 1.0 / model["n_out"]
    a = _softmax(np.array([model["score"](q, t) for t in positions]))
    c = sum(w * model["embed"](t) for w, t in zip(a, positions))
    return float(_softmax(model["out"](c))[label])


def _direct(model, doc, q, label, relevant):
    """Every proxy of one explicit sequence (context tokens ``doc``, query ``q``), following
    ERASER's reference code literally (heapq on (attention, token) pairs, sklearn's AP)."""
    attended = list(doc) + ([q] if model["query_attended"] else [])
    w = _softmax(np.array([model["score"](q, t) for t in attended]))
    h = float(-(w * np.log(w)).sum())
    ctx_w = w[:len(doc)]
    mask = np.array([relevant[t] for t in doc], dtype=int)
    R = int(mask.sum())
    ap = float(average_precision_score(mask, ctx_w)) if 0 < R < len(doc) else math.nan
    top = [t for _, t in heapq.nlargest(R, zip(ctx_w, doc))]
    tp = sum(bool(relevant[t]) for t in top)
    f1 = (0.0 if tp == 0 else 2 * (tp / R) ** 2 / (2 * tp / R)) if R else math.nan
    own = [q] if model["query_attended"] else []
    full = _direct_probability(model, attended, q, label)
    comp, suff = [], []
    L = len(doc)
    for f in proxies.BINS:
        kept = [t for _, t in heapq.nsmallest(int((1 - f) * L), zip(ctx_w, doc))]
        only = [t for _, t in heapq.nlargest(int(f * L), zip(ctx_w, doc))]
        comp.append(full - _direct_probability(model, kept + own, q, label))
        suff.append(full - _direct_probability(model, only + own, q, label))
    return [h, h / math.log(len(attended)), ap, f1, float(np.mean(comp)), float(np.mean(suff))]


def _authors_model(params):
    A = params["W_QK"] if "W_QK" in params else params["W_Q"] @ params["W_K"].T
    out = (lambda c: params["W_OV"] @ c) if "W_OV" in params else (lambda c: params["W_O"] @ (params["W_V"] @ c))
    return {"score": lambda q, t: A[q, t] / math.sqrt(AUTHORS.T), "embed": lambda t: np.eye(AUTHORS.T)[t],
            "out": out, "n_out": AUTHORS.T, "query_attended": True}


def _task_model(st, params):
    A = params["W_QK"] if "W_QK" in params else params["W_Q"] @ params["W_K"].T
    out = (lambda c: params["W_OV"] @ c) if "W_OV" in params else (lambda c: params["W_O"] @ (params["W_V"] @ c))
    return {"score": lambda q, t: A[q, t] / st.score_divisor if t < st.d else 0.0,
            "embed": lambda t: st.value_multiplier * np.eye(st.T)[t][:st.d], "out": out, "n_out": st.n_out,
            "query_attended": st.query_in_context}


def _coarse(params, rng):
    """Random matrices on a grid of halves (products and sums exact: many exact ties between scores)."""
    return {k: rng.integers(-3, 4, size=v.shape) * 0.5 for k, v in params.items()}


# --------------------------------------------------------------------------- the tasks
def _authors_case(P, rng, n_seq=10, seq_len=24, coarse=False):
    params = models.init_params(AUTHORS, P, "uniform", rng)
    params = _coarse(params, rng) if coarse else {k: 4 * v for k, v in params.items()}
    cls = rng.integers(0, AUTHORS.K, size=n_seq)
    docs = [list(rng.choice(AUTHORS.T, size=seq_len - 2, p=AUTHORS.probabilities[k])) for k in cls]
    q, y = AUTHORS.query[cls], AUTHORS.label[cls]
    counts = np.array([np.bincount(d + [qq], minlength=AUTHORS.T) for d, qq in zip(docs, q)], dtype=float)
    fwd = functools.partial(models.forward, AUTHORS, params)
    got = proxies.measure(fwd(counts, q), counts, q, y, AUTHORS.relevant, fwd)
    model = _authors_model(params)
    want = [_direct(model, d, qq, yy, AUTHORS.relevant) for d, qq, yy in zip(docs, q, y)]
    return got, want


def _task_case(name, P, rng, n_seq=10, seq_len=20, coarse=False):
    st = task_sampling.sampled_task(name, {"M": 3})
    params = models.init_params(st, P, "uniform", rng)
    params = _coarse(params, rng) if coarse else {k: 4 * v for k, v in params.items()}
    cls = rng.integers(0, st.K, size=n_seq)
    docs = [list(rng.choice(st.T, size=seq_len - 2, p=st.probabilities[k])) for k in cls]
    q, y = st.query[cls], st.label[cls]
    own = [[qq] if st.query_in_context else [] for qq in q]
    counts = np.array([np.bincount(d + o, minlength=st.T) for d, o in zip(docs, own)], dtype=float)
    fwd = functools.partial(models.forward, st, params)
    got = proxies.measure(fwd(counts, q), counts, q, y, st.relevant_of(cls), fwd,
                          query_attended=st.query_in_context)
    model = _task_model(st, params)
    want = [_direct(model, d, qq, yy, st.relevant_of(k)) for d, qq, yy, k in zip(docs, q, y, cls)]
    return got, want


CASES = [("authors", P, coarse) for P in ("CACO", "FAFO", "FACO", "CAFO") for coarse in (False, True)] + \
        [(name, P, coarse) for name in ("paper", "query-in-context") for P in ("CACO", "FAFO")
         for coarse in (False, True)]


@pytest.mark.parametrize("task,P,coarse", CASES)
def test_proxies_match_sklearn_and_a_direct_per_position_computation(task, P, coarse):
    """Entropy, AP (sklearn's average_precision_score), top-R F1 and the AOPCs (heapq on
    (attention, token) as ERASER's code) of explicit sequences equal the count computation to
    1e-12, for the authors' task and engine tasks (query attended or not), with random scores
    and with scores on a coarse grid (exact ties between different tokens)."""
    rng = np.random.default_rng(zlib.crc32(f"{task}{P}{coarse}".encode()))
    got, want = _authors_case(P, rng, coarse=coarse) if task == "authors" else \
        _task_case(task, P, rng, coarse=coarse)
    want = np.array(want)
    for j, name in enumerate(proxies.PROXIES):
        np.testing.assert_allclose(got[name], want[:, j], rtol=0, atol=TOL, equal_nan=True, err_msg=name)
    if coarse:      # the grid really made ties between different tokens inside the context
        assert np.isfinite(got["plausibility_auprc"]).any()


def test_ties_follow_sklearn_and_erasers_tie_break():
    """A hand-made vector: sklearn's AP (ties grouped) and heapq's tie break (larger token first)."""
    counts = np.array([[2., 3., 1., 2., 1.]])        # token 4 is the (attended) query
    w = np.array([[0.1, 0.1, 0.2, 0.05, 0.0]])
    w[0, 4] = (1 - (counts[0, :4] * w[0, :4]).sum())
    rel = np.array([True, False, True, True, False])
    ap, f1 = proxies.plausibility(w, counts, np.array([4]), rel)
    doc = [0, 0, 1, 1, 1, 2, 3, 3]
    ctx_w = [w[0, t] for t in doc]
    mask = [int(rel[t]) for t in doc]
    assert abs(ap[0] - average_precision_score(mask, ctx_w)) < TOL
    top = [t for _, t in heapq.nlargest(5, zip(ctx_w, doc))]      # 2, then the tie 1,1,1 before 0,0 -> one 0
    assert top == [2, 1, 1, 1, 0]
    assert abs(f1[0] - 2 / 5) < TOL


def test_worked_example():
    """The docs' worked example (docs/proxies.md), against fractions worked by hand."""
    counts = np.array([3., 1., 2., 1.])
    s = np.array([1., 1., 0.5, 0.])
    w = np.exp(s) / (counts * np.exp(s)).sum()
    rel = np.array([False, True, True, False])
    h, hn = proxies.attention_entropy(w, counts)
    positions = np.repeat(np.arange(4), counts.astype(int))
    wp = w[positions]
    assert abs(h - float(-(wp * np.log(wp)).sum())) < TOL and abs(hn - h / math.log(7)) < TOL
    ap, f1 = proxies.plausibility(w, counts, 3, rel)
    # thresholds e^1 (4 positions, 1 relevant) and e^0.5 (6 positions, 3 relevant)
    assert abs(ap - (1 / 3 * 1 / 4 + 2 / 3 * 3 / 6)) < TOL and abs(ap - 5 / 12) < TOL
    assert abs(f1 - 1 / 3) < TOL
    ctx = proxies.context_counts(counts, 3)
    order, _ = proxies.ranking(w, ctx)
    L = 6
    removed = proxies.top_positions(order, ctx, [L - math.floor((1 - f) * L) for f in proxies.BINS])
    kept = proxies.top_positions(order, ctx, [math.floor(f * L) for f in proxies.BINS])
    assert removed.tolist() == [[0, 1, 0, 0]] * 3 + [[1, 1, 0, 0], [2, 1, 0, 0]]
    assert kept.tolist() == [[0, 0, 0, 0]] * 3 + [[0, 1, 0, 0], [2, 1, 0, 0]]


def test_ranges_and_stacking():
    """Entropy in [0, log positions], AP and F1 in [0, 1], AOPCs in [-1, 1] on trained-like random
    models; a stack of two seeds gives each seed's numbers."""
    rng = np.random.default_rng(3)
    runs = [{k: 6 * v for k, v in models.init_params(AUTHORS, "FAFO", "uniform", rng).items()} for _ in range(2)]
    stacked = {k: np.stack([r[k] for r in runs]) for k in runs[0]}
    b = sampler.sample_batches(AUTHORS, rng, 2, 16, 40)
    counts, q, y = b.counts.reshape(-1, AUTHORS.T), b.query.reshape(-1), b.target.reshape(-1)
    counts2 = np.stack([counts, counts])
    q2, y2 = np.stack([q, q]), np.stack([y, y])
    fwd = functools.partial(models.forward, AUTHORS, stacked)
    got = proxies.measure(fwd(counts2, q2), counts2, q2, y2, AUTHORS.relevant, fwd)
    assert np.all((got["attention_entropy"] >= 0) & (got["attention_entropy"] <= np.log(39) + TOL))
    assert np.all((got["attention_entropy_normalized"] >= 0) & (got["attention_entropy_normalized"] <= 1 + TOL))
    for name in ("plausibility_auprc", "plausibility_token_f1"):
        v = got[name][np.isfinite(got[name])]
        assert v.size and np.all((v >= 0) & (v <= 1))
    for name in ("comprehensiveness", "sufficiency"):
        assert np.all(np.abs(got[name]) <= 1)
    for i in range(2):
        one = {k: v[i] for k, v in stacked.items()}
        f1 = functools.partial(models.forward, AUTHORS, one)
        alone = proxies.measure(f1(counts, q), counts, q, y, AUTHORS.relevant, f1)
        for name in proxies.PROXIES:
            np.testing.assert_allclose(got[name][i], alone[name], rtol=0, atol=TOL, equal_nan=True)


def test_bad_input():
    with pytest.raises(ValueError, match="bins"):
        proxies.faithfulness(lambda c, q, t: None, np.ones((1, 3)), np.ones((1, 3)), [0], [0], bins=[0.0])
    with pytest.raises(ValueError, match="query"):
        proxies.context_counts(np.array([1., 0., 2.]), 1)


def test_evaluations_record_the_proxies():
    """measure.evaluate returns the proxies beside the other measurements (the authors' task and an
    engine task),
    which stay what measurements() gives; the run summary and the sweep row carry their means."""
    rng = np.random.default_rng(5)
    params = models.init_params(AUTHORS, "CACO", "uniform", rng)
    ev = measure.evaluate(AUTHORS, params, np.random.default_rng(1), eval_batches=2, batch_size=8, seq_len=20)
    b = sampler.sample_batches(AUTHORS, np.random.default_rng(1), 2, 8, 20)
    counts, q = b.counts.reshape(-1, AUTHORS.T), b.query.reshape(-1)
    base = measure.measurements(models.forward(AUTHORS, params, counts, q), counts, q, b.target.reshape(-1),
                                AUTHORS.relevant)
    for k, v in base.items():
        np.testing.assert_array_equal(ev[k], v)
    assert set(proxies.PROXIES) <= set(ev)
    s = measure.summarize_one(ev)
    assert all(isinstance(s[k], float) for k in proxies.PROXIES)
    st = task_sampling.sampled_task("paper", {"M": 3})
    tp = models.init_params(st, "CACO", "uniform", rng)
    tev = measure.evaluate(st, tp, np.random.default_rng(2), 2, 8, 20)
    assert set(proxies.PROXIES) <= set(tev) and tev["comprehensiveness"].shape == (16,)


def test_sweep_row_has_the_proxy_columns_after_the_old_ones():
    assert jobs.SWEEP_ROW_KEYS[:13] == ("parameterization", "ratio", "seed", "steps", "reached", "loss",
                                       "relevant_attention", "label_probability", "accuracy", "status",
                                       "self_attention", "other_attention", "target_loss")
    assert jobs.SWEEP_ROW_KEYS[13:] == proxies.PROXIES
    config = sgd.Fig2Config("CACO", lr_qk=0.01, lr_ov=0.01, seq_len=16, batch_size=4, epochs=1,
                            steps_per_epoch=2, stop="none", eval_batches=1, target_loss=0.1, max_steps=2)
    job = {"experiment": "sweep", "ratios": [1.0], "config": config.to_dict(), "seeds": [1234]}
    rows = jobs.sweep_job(job)["rows"]
    assert all(k in rows[0] for k in proxies.PROXIES)
    assert jobs.valid_result(job, {"rows": rows})
    old = [{k: v for k, v in r.items() if k not in proxies.PROXIES} for r in rows]
    assert not jobs.valid_result(job, {"rows": old})          # a row stored before the proxies is recomputed


@pytest.mark.parametrize("name", ["paper", "query-in-context"])
def test_expected_count_proxies_against_explicit_positions(name):
    """The theory's proxies at integer expected counts (an engine task at its own length) are the
    class-weighted per-position entropy and sklearn AP / heapq top-R F1 of those positions."""
    from numerics.experiments import theory

    st = task_sampling.sampled_task(name, {"M": 3})
    model = theory.task_model(st, "CACO", 2.0, seq_len=st.own_seq_len)
    rng = np.random.default_rng(0)
    p = {k: rng.normal(size=np.shape(v)) for k, v in theory.init_matrices(st, model, "identity").items()}
    a = model.attention(p)
    inst = model.instance
    got = proxies.expected_count_proxies(a, inst, query_attended=st.query_in_context)
    rows = []
    for k in range(st.K):
        n = np.round(inst.counts[k]).astype(int)
        assert np.array_equal(n, inst.counts[k])
        tokens = np.repeat(np.arange(st.T), n)
        w = a[k][tokens] / n[tokens]
        doc = list(tokens)
        if st.query_in_context:
            doc.remove(st.query[k])
        ctx_w = [a[k][t] / n[t] for t in doc]
        mask = [int(inst.relevant[k][t]) for t in doc]
        R = sum(mask)
        top = [t for _, t in heapq.nlargest(R, zip(ctx_w, doc))]
        rows.append([-(w * np.log(w)).sum(), -(w * np.log(w)).sum() / math.log(len(tokens)),
                     average_precision_score(mask, ctx_w), sum(inst.relevant[k][t] for t in top) / R])
    want = np.asarray(inst.weights) @ np.array(rows)
    for name_, v in zip(proxies.THEORY_PROXIES, want):
        assert abs(got[name_] - v) < TOL, name_


def test_theory_records_carry_the_proxies():
    from numerics.experiments import predict

    recs = predict.predict(["CACO"], [1.0], [3.0], seeds=1)
    assert all(recs[0][k] is not None and 0 <= recs[0][k] for k in proxies.THEORY_PROXIES)
    assert 0 <= recs[0]["plausibility_auprc"] <= 1 and 0 <= recs[0]["attention_entropy_normalized"] <= 1


def _trend_rows():
    rows = []
    for seed, jitter in ((1, 0.0), (2, 0.002)):
        for ratio, ent, ap, acc in ((1.0, 0.9, 0.8, 0.95), (20.0, 0.5, 0.6, 0.951)):
            rows.append({"parameterization": "FACO", "ratio": ratio, "seed": seed, "target_loss": 0.2,
                         "attention_entropy_normalized": ent + jitter, "plausibility_auprc": ap - jitter,
                         "accuracy": acc, "sufficiency": None})
    return rows


def test_trends_say_which_measures_improve():
    t = proxies.trends(_trend_rows(), 0.2, keys=("attention_entropy_normalized", "plausibility_auprc",
                                                  "accuracy", "sufficiency"))["FACO"]
    assert t["attention_entropy_normalized"]["verdict"] == "improves"      # lower entropy is better
    assert t["plausibility_auprc"]["verdict"] == "worsens"
    assert t["accuracy"]["verdict"] == "flat" and t["sufficiency"]["verdict"] is None
    assert abs(t["plausibility_auprc"]["change"] + 0.2) < TOL
    text = proxies.format_trends({"FACO": t})
    assert "0.799 → 0.599 worsens" in text and "n/a" in text


def test_proxy_figure_has_a_panel_per_measure_and_parameterization():
    from numerics.experiments import proxy_plots

    rows = _trend_rows() + [dict(r, parameterization="CACO") for r in _trend_rows()]
    theory = [{"parameterization": r["parameterization"], "ratio": r["ratio"], "seed": r["seed"],
               "target_loss": 0.2, "plausibility_auprc": 0.5} for r in rows]
    import matplotlib

    before = dict(matplotlib.rcParams)
    fig = proxy_plots.plot_proxies(rows, theory, title="t")
    assert dict(matplotlib.rcParams) == before and type(fig).__name__ == "Figure"    # no global state
    assert len(fig.axes) == len(proxy_plots.PANELS) * 2
    ap_axis = fig.axes[2 * [k for k, _ in proxy_plots.PANELS].index("plausibility_auprc")]
    assert any(line.get_linestyle() == "--" for line in ap_axis.get_lines())


def test_single_class_context_and_class_weights():
    """AP is nan where every context position is relevant (ERASER drops single-class documents),
    while F1 is then 1; expected_count_proxies weights the classes by pi, not equally: two classes
    with pi = (0.9, 0.1) give 0.9 x + 0.1 y of each class's own numbers."""
    from types import SimpleNamespace
    counts = np.array([[2., 0., 1.], [1., 3., 1.]])              # token 2 is the query of both
    w = np.array([[1 / 3, 0.0, 1 / 3], [0.1, 0.2, 0.3]])
    rel = np.array([True, False, False])
    ap, f1 = proxies.plausibility(w, counts, np.array([2, 2]), rel)
    assert math.isnan(ap[0]) and f1[0] == 1.0                    # context: two positions of token 0
    assert abs(ap[1] - average_precision_score([1, 0, 0, 0], [0.1, 0.2, 0.2, 0.2])) < TOL
    a = counts * w
    inst = SimpleNamespace(counts=counts, query=np.array([2, 2]), relevant=np.array([rel, rel]),
                           weights=np.array([0.9, 0.1]))
    got = proxies.expected_count_proxies(a, inst)
    h, hn = proxies.attention_entropy(w, counts)
    assert abs(got["attention_entropy"] - (0.9 * h[0] + 0.1 * h[1])) < TOL
    assert abs(got["plausibility_auprc"] - ap[1]) < TOL          # the one class that defines AP
    assert abs(got["plausibility_token_f1"] - (0.9 * 1.0 + 0.1 * f1[1])) < TOL


def test_trends_call_a_change_within_the_seed_spread_flat():
    """The change must exceed the seeds' spread (the larger sample standard deviation at the two
    ratios), not only min_change: entropy 0.9 +- 0.3 -> 0.7 +- 0.3 (change 0.2, spread 0.42) is flat."""
    rows = [{"parameterization": "CACO", "ratio": r, "seed": s, "target_loss": 0.2,
             "attention_entropy_normalized": m + d}
            for r, m in ((1.0, 0.9), (20.0, 0.7)) for s, d in ((1, -0.3), (2, 0.3))]
    t = proxies.trends(rows, 0.2, keys=("attention_entropy_normalized",))["CACO"]
    assert abs(t["attention_entropy_normalized"]["change"] + 0.2) < TOL
    assert t["attention_entropy_normalized"]["verdict"] == "flat"


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_weight_that_is_not_finite_gives_nan_not_a_number(bad):
    """A sequence with an attended weight that is not finite has no proxy: every one is nan, while the
    other sequence of the batch keeps the values it has alone. The entropy summed a nan weight to 0 (the
    sharpest attention) and the ranking sorted it last (an AP of 0.9 here), silently."""
    counts = np.array([[2., 1., 3., 1.], [2., 1., 3., 1.]])
    rel = np.array([True, False, True, False])
    e = np.exp([0.3, -0.2, 0.1, 0.0])
    good = e / (counts[0] * e).sum()
    w = np.stack([good, good])
    w[1, 2] = bad
    q, y = np.array([3, 3]), np.array([0, 0])

    def label_probability(c, qq, t):          # any model: the count share of the label's token
        return c[..., 0] / np.maximum(c.sum(-1), 1.0)
    h, hn = proxies.attention_entropy(w, counts)
    ap, f1 = proxies.plausibility(w, counts, q, rel)
    comp, suff = proxies.faithfulness(label_probability, w, counts, q, y)
    got = np.array([h, hn, ap, f1, comp, suff])
    assert np.isnan(got[:, 1]).all(), got[:, 1]
    alone = [proxies.attention_entropy(good, counts[0]), proxies.plausibility(good, counts[0], 3, rel),
             proxies.faithfulness(label_probability, good[None], counts[:1], q[:1], y[:1])]
    want = [float(np.ravel(v)[0]) for pair in alone for v in pair]
    assert np.isfinite(want).all()
    np.testing.assert_allclose(got[:, 0], want, rtol=0, atol=TOL)
    # the first sequence against its positions written out (7 attended, token 3 the query)
    positions = np.repeat(np.arange(4), counts[0].astype(int))
    assert abs(h[0] + float((good[positions] * np.log(good[positions])).sum())) < TOL


@pytest.mark.parametrize("counts,match", [
    ([[-1., 3., 1.]], r"counts must be finite numbers >= 0 .*got -1\.0"),       # was: 'at least one position of
    ([[np.nan, 3., 1.]], r"counts must be finite numbers >= 0 .*got nan"),      # each row's query token'; nan
    ([[np.inf, 3., 1.]], r"counts must be finite numbers >= 0 .*got inf"),      # and inf: numbers
    ([[1.5, 0.5, 1.]], r"whole numbers of positions .*got 1\.5"),               # fractions of positions removed
])
def test_counts_that_are_not_positions_are_refused_naming_the_value(counts, match):
    def label_probability(c, q, t):
        return c[..., 0] / np.maximum(c.sum(-1), 1.0)
    with pytest.raises(ValueError, match=match):
        proxies.faithfulness(label_probability, np.full((1, 3), 0.25), np.array(counts), [2], [0])


def test_equal_subnormal_weights_are_one_tie_as_on_explicit_positions():
    """Scores about 730 nats below the top give subnormal weights, where a_v / n_v rounds to a fixed step:
    a relevant and an irrelevant token of equal score but different counts came out a step apart, and the
    ranking followed that rounding (AP 1.0 where the explicit positions, softmax over positions and sklearn,
    give 0.5; F1 1/6 where heapq gives 1). AP and F1 equal the per-position computation to 1e-12 on a grid of
    depths and counts, which has cases whose two weights differ (so the grid tests the tie)."""
    T, q, rel = AUTHORS.T, int(AUTHORS.query[0]), AUTHORS.relevant
    r = np.flatnonzero(rel)
    other = next(t for t in range(T) if not rel[t] and t != q)
    W_OV = models.init_params(AUTHORS, "CACO", "uniform", np.random.default_rng(0))["W_OV"]
    apart = 0
    for deep in np.linspace(728, 744, 400)[::10]:
        W = np.full((T, T), -deep * math.sqrt(T))
        W[q, q], W[q, r[1]] = 0.0, -math.sqrt(T)
        for c1, c2 in ((3, 7), (2, 9), (5, 6), (3, 11)):
            counts = np.zeros(T)
            counts[[q, r[0], other, r[1]]] = (1, c1, c2, 1)
            w = models.forward(AUTHORS, {"W_QK": W, "W_OV": W_OV}, counts[None], np.array([q]))["position_attention"]
            apart += bool(w[0, r[0]] != w[0, other])
            ap, f1 = proxies.plausibility(w, counts[None], np.array([q]), rel)
            doc = [r[0]] * c1 + [other] * c2 + [r[1]]
            s = np.array([W[q, t] for t in doc + [q]]) / math.sqrt(T)
            ctx_w = list(_softmax(s)[:-1])
            mask = [int(rel[t]) for t in doc]
            top = [t for _, t in heapq.nlargest(sum(mask), zip(ctx_w, doc))]
            assert abs(ap[0] - average_precision_score(mask, ctx_w)) < TOL, (deep, c1, c2)
            assert abs(f1[0] - sum(bool(rel[t]) for t in top) / sum(mask)) < TOL, (deep, c1, c2)
    assert apart > 0


@pytest.mark.parametrize("gap", [5, 15, 20, 25, 30, 36, 40, 60])
@pytest.mark.parametrize("n_top", [1, 3])
def test_entropy_near_one_hot_attention_is_accurate_against_mpmath(gap, n_top):
    """The entropy of attention whose top token holds all but e^-gap of the mass, against mpmath (50 digits)
    from the scores, to a relative 1e-13: the top's log w in doubles is rounding there, and the entropy
    (about gap e^-gap with one top position) was off by a relative 3.7e-10 at gap 20 and 2.4e-2 at gap 40."""
    import mpmath as mp
    s = np.array([0.0, -gap, -gap - 1.5, -gap + 0.3])
    n = np.array([n_top, 2.0, 5.0, 1.0])
    e = np.exp(s - s.max())
    h, hn = proxies.attention_entropy(e / (n * e).sum(), n)
    with mp.workdps(50):
        Z = mp.fsum(int(c) * mp.exp(float(x)) for c, x in zip(n, s))
        want = -mp.fsum(int(c) * mp.exp(float(x)) / Z * (float(x) - mp.log(Z)) for c, x in zip(n, s))
        assert abs(float(h) - want) <= 1e-13 * want, (float(h), want)
        assert abs(float(hn) - want / mp.log(n.sum())) <= 1e-13 * want


def test_entropy_of_no_attended_position_and_of_exactly_one_hot_attention():
    """No attended position: entropy 0 (a sum of nothing), normalized nan; exactly one-hot: log of the top's
    positions (0 for one); never -inf or nan from the near-one-hot form."""
    h, hn = proxies.attention_entropy(np.zeros((2, 3)), np.zeros((2, 3)))
    assert (h == 0).all() and np.isnan(hn).all()
    h, hn = proxies.attention_entropy(np.array([[0., 1., 0.], [0.25, 0., 0.]]), np.array([[2., 1., 0.], [4., 0., 3.]]))
    assert h[0] == 0.0 and hn[0] == 0.0
    assert abs(h[1] - math.log(4)) < TOL and abs(hn[1] - math.log(4) / math.log(7)) < TOL


def test_entropy_of_uniform_attention_stays_in_its_range():
    """Uniform attention over N positions (one token per position, or k positions of each of T tokens): the
    entropy is log N, and rounding of the weights (1/N sums to 1 only to ulps) passed it by up to 3.6e-15 and the
    normalized entropy 1 by up to 6.7e-16 (N = 2..199 ones, T = 2..49, k = 1..4); both stay in their ranges, exactly
    at the bound or within 1e-15 below it."""
    cases = [(np.full(N, 1.0 / N), np.ones(N)) for N in range(2, 200)]
    cases += [(np.full(T, 1.0 / (T * k)), np.full(T, float(k))) for T in range(2, 50) for k in range(1, 5)]
    for w, counts in cases:
        h, hn = proxies.attention_entropy(w, counts)
        log_n = math.log(counts.sum())
        assert log_n - 1e-14 <= h <= log_n and 1 - 1e-15 <= hn <= 1, (counts, h - log_n, hn - 1)
    h, hn = proxies.attention_entropy(np.full((3, 7), 1 / 7), np.ones((3, 7)))      # stacked rows alike
    assert np.all(hn <= 1) and np.all(h <= math.log(7))
