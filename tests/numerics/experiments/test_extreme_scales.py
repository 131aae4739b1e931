"""The SGD model at extreme scales of its numbers: every number it reports is the model's."""
import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from numerics.experiments.cross_entropy import cross_entropy


def _reference(z, target):
    """Loss and gradient of the mean cross-entropy row by row (scipy), layout (..., B, V)."""
    loss = (logsumexp(z, axis=-1) - np.take_along_axis(z, target[..., None], -1)[..., 0]).mean(-1)
    grad = softmax(z, axis=-1)
    np.put_along_axis(grad, target[..., None], np.take_along_axis(grad, target[..., None], -1) - 1, -1)
    return loss, grad / z.shape[-2]


@pytest.mark.parametrize("class_axis", [-1, -2])
@pytest.mark.parametrize("stacked", [False, True])
def test_cross_entropy_of_a_row_far_below_huge_logits_keeps_its_differences(class_axis, stacked):
    """A row of O(1) logits in a run whose largest logit is 1e20 (the trainer's logits reach 1e297
    at b = 1e-300): shifted by the run's maximum, its logits all round to -1e20 (loss log V, a
    uniform gradient); its loss and gradient are those of the row alone (scipy, rtol 1e-12).
    Stacked beside a run that needs no fallback, that run's numbers are the same bit for bit
    as alone."""
    rng = np.random.default_rng(0)
    V = 7
    z = rng.normal(size=(2, 3, V))
    z[0, 0] *= 1e20                              # run 0: row 0 huge, rows 1 and 2 O(1)
    target = np.array([[2, 4, 6], [0, 1, 5]])
    runs = [0, 1] if stacked else [0]
    zs, ts = z[runs], target[runs]
    if not stacked:
        zs, ts = zs[0], ts[0]
    zin = zs.copy() if class_axis == -1 else np.ascontiguousarray(zs.swapaxes(-1, -2))
    loss, g = cross_entropy(zin, ts, None, True, class_axis=class_axis)
    if class_axis == -2:
        g = g.swapaxes(-1, -2)
    ref_loss, ref_grad = _reference(zs, ts)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    np.testing.assert_allclose(g, ref_grad, rtol=1e-12, atol=1e-17)
    if stacked:
        alone = z[1].copy() if class_axis == -1 else np.ascontiguousarray(z[1].T)
        l1, g1 = cross_entropy(alone, target[1], None, True, class_axis=class_axis)
        assert loss[1] == l1 and np.array_equal(g[1], g1 if class_axis == -1 else g1.T)
