"""The authors' Figure-2 task in the expected-count limit (numerics.experiments.theory)."""
import math

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from numerics.experiments import theory
from numerics.experiments.__main__ import main
from numerics.experiments.task_sampling import AUTHORS, theory_instance
from numerics.model import TaskInstance, TaskModel


def test_expected_counts():
    inst = theory_instance(AUTHORS, 64)
    np.testing.assert_allclose(inst.counts.sum(axis=1), 63.0, rtol=1e-14)   # seq_len - 1 positions
    for k in range(4):
        q = 5 + k
        assert inst.counts[k, q] == pytest.approx(62 / 15.5 + 1, rel=1e-14, abs=0)  # common + itself
        np.testing.assert_allclose(inst.counts[k, 10 * (k + 1):10 * (k + 2)],
                                   62 * np.arange(1, 11) / 10 / 15.5, rtol=1e-14)
    assert inst.score_scale == 1 / math.sqrt(50) and inst.n_out == 50


def _per_position_loss(W_QK, W_OV, seqs, queries, labels):
    """Reference: explicit token-id sequences, softmax over positions, 50-way CE."""
    total = 0.0
    for toks, q, y in zip(seqs, queries, labels):
        pos = np.append(toks, q)                     # the query attends to itself
        s = W_QK[q, pos] / math.sqrt(50)
        c = softmax(s) @ np.eye(50)[pos]
        z = W_OV @ c
        total += logsumexp(z) - z[y]
    return total / len(seqs)


@pytest.mark.parametrize("P", ["CACO", "FAFO"])
def test_explicit_counts_match_per_position_reference(P):
    rng = np.random.default_rng(3)
    probs = AUTHORS.probabilities
    cls = rng.integers(0, 4, size=6)
    seqs = [rng.choice(50, size=14, p=probs[k]) for k in cls]
    q, y = AUTHORS.query[cls], AUTHORS.label[cls]
    counts = np.array([np.bincount(np.append(s, qq), minlength=50) for s, qq in zip(seqs, q)])
    ref_inst = theory_instance(AUTHORS, 16)
    inst = TaskInstance(ref_inst.embeddings, counts, q, y, 50, AUTHORS.relevant, score_scale=AUTHORS.score_scale,
                        h_QK=50, h_OV=50)
    model = TaskModel(inst, P, eta_QK=0.03, eta_OV=0.01)
    p = theory.init_matrices(AUTHORS, model, "uniform", seed=5)
    W_QK, W_OV = model.circuits(p)
    ref = _per_position_loss(W_QK, W_OV, seqs, q, y)
    assert model.loss(p) == pytest.approx(ref, rel=1e-13, abs=0)


def test_flow_properties():
    """One flow answers every target; ``lr_ov`` only rescales time (same path, steps as 1/lr_ov)."""
    both = theory.flow_to_losses(AUTHORS, "CACO", 4.0, [1.0, 2.0], init="identity")["records"]
    assert [r["reached"] for r in both] == [True, True]
    row = both[1]
    assert row["loss"] == pytest.approx(1.0, rel=1e-9) and 0 < row["relevant_attention"] < 1
    row2 = theory.flow_to_losses(AUTHORS, "CACO", 4.0, [1.0], init="identity", lr_ov=0.02)["records"][0]
    assert row2["relevant_attention"] == pytest.approx(row["relevant_attention"], rel=1e-7)
    assert row2["steps"] == pytest.approx(row["steps"] / 2, rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ratio=0.0), "ratio"), (dict(target_losses=[5.0]), "target_loss"),
    (dict(init="gauss"), "init"), (dict(seq_len=2), "seq_len"),
    (dict(parameterization="CAXO"), "parameterization")])
def test_flow_rejects_bad_input(kwargs, match):
    args = dict(parameterization="CACO", ratio=1.0, target_losses=[0.5])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        theory.flow_to_losses(AUTHORS, args.pop("parameterization"), args.pop("ratio"), args.pop("target_losses"),
                              **args)


@pytest.mark.parametrize("argv", [["--ratios", "1,x"], ["--parameterizations", "CAXO"],
                                  ["--target-loss", "4"], ["--seq-len", "2"], ["--bogus"]])
def test_cli_bad_input(argv, capsys):
    assert main(["predict", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("P", ["CACO", "FACO", "CAFO", "FAFO"])
def test_engine_authors_task_is_the_same_task(P):
    """derivations.tasks's 'authors' (group-major token order) vs the id-ordered instance here:
    identical losses and gradients after permuting the vocabulary."""
    from numerics.model import TaskModel, instance_of_task
    eng = instance_of_task("authors")
    ids = {"c_0": 0, "c_1": 9}
    ids.update({f"label_{k}": 1 + k for k in range(4)})
    ids.update({f"q_{k}": 5 + k for k in range(4)})
    ids.update({f"r{i}_{k}": 10 * (k + 1) + i for i in range(10) for k in range(4)})
    from derivations.tasks import get_task
    names = get_task("authors").instance().token_names
    perm = np.array([ids[nm] for nm in names])          # engine type t <-> authors id perm[t]
    assert sorted(perm) == list(range(50))
    ours = theory.task_model(AUTHORS, P, 2.0)
    theirs = TaskModel(eng, P, eta_QK=0.02, eta_OV=0.01)
    p = theory.init_matrices(AUTHORS, ours, "uniform", seed=9)
    # engine coordinates: W'[t, u] = W[perm[t], perm[u]] on token axes; hidden axes unchanged
    pe = {}
    for k, W in p.items():
        W = W[perm, :] if k in ("W_QK", "W_Q", "W_K", "W_OV", "W_O") else W
        W = W[:, perm] if k in ("W_QK", "W_OV", "W_V") else W
        pe[k] = W
    L1, g1 = ours.loss_and_grad(p)
    L2, g2 = theirs.loss_and_grad(pe)
    assert L2 == pytest.approx(L1, rel=1e-13, abs=0)
    assert theirs.alpha(pe) == pytest.approx(ours.alpha(p), rel=1e-13, abs=0)
    for k in g1:
        G = g1[k][perm, :] if k in ("W_QK", "W_Q", "W_K", "W_OV", "W_O") else g1[k]
        G = G[:, perm] if k in ("W_QK", "W_OV", "W_V") else G
        np.testing.assert_allclose(g2[k], G, rtol=0, atol=1e-13 * np.max(np.abs(G)))


def test_authors_initializations():
    fafo = theory.task_model(AUTHORS, "FAFO", 1.0)
    p = theory.init_matrices(AUTHORS, fafo, "authors", 1e-6, seed=1)
    assert np.all(np.abs(p["W_Q"]) <= 1 / math.sqrt(50)) and np.std(p["W_Q"]) > 0.05
    np.testing.assert_array_equal(p["W_O"], 1e-6 * np.eye(50))
    caco = theory.task_model(AUTHORS, "CACO", 1.0)
    assert np.std(theory.init_matrices(AUTHORS, caco, "authors")["W_QK"]) > 0.05
    faco = theory.task_model(AUTHORS, "FACO", 1.0)
    np.testing.assert_array_equal(theory.init_matrices(AUTHORS, faco, "authors")["W_K"], 1e-6 * np.eye(50))
