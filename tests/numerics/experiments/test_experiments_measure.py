"""Input checks of evaluate (numerics/experiments/measure.py)."""
from __future__ import annotations

import numpy as np
import pytest

from numerics.experiments import evaluate, init_params, sampled_task

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
