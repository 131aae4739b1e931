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


TINY = 2.0 ** -1022                          # float64's smallest normal number


def test_the_embedding_scale_is_refused_where_the_score_divisor_is_not_a_normal_float64():
    """The paper's score divisor is b/gamma (gamma = 1): at b = 2**-1022 it is the smallest normal
    float64, accepted; at the next float below (subnormal: digits lost) and at 1e-320 (b's divisor
    rounds to 0, the scores A x 1/divisor would be nan) the task is refused, naming b and its range."""
    from numerics.experiments.task_sampling import sampled_task
    assert sampled_task("paper", {"b": TINY}).score_divisor == TINY
    for b in (np.nextafter(TINY, 0.0), 1e-308, 1e-320):
        with pytest.raises(ValueError, match=r"embedding_scale = b in \[2\.2250738585072014e-308, "
                                             r"1\.7976931348623157e\+308\]; got b = "):
            sampled_task("paper", {"b": float(b)})


def test_fig2_at_the_smallest_embedding_scale_runs_and_just_below_is_one_line_exit_2(tmp_path, capsys):
    """Just inside (b = 2**-1022): a short CACO run completes with finite losses, its first loss
    ~5e151 (the model's: logits ~ W_OV / sqrt(b)); just outside: one line, exit 2, nothing written."""
    from numerics.experiments.__main__ import main
    from numerics.experiments.sgd import Fig2Config, train_fig2
    cfg = Fig2Config(epochs=1, steps_per_epoch=3, stop="none", seq_len=57, task="paper", task_params=(("b", TINY),))
    run = train_fig2(cfg, [1])[0]
    assert run["status"] == "completed" and np.isfinite(run["epoch_loss"]).all() and run["epoch_loss"][0] > 1e150
    out = tmp_path / "out"
    assert main(["fig2", "--task", "paper", "--params", f"b={float(np.nextafter(TINY, 0.0))!r}", "--epochs", "1",
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "embedding_scale = b in [2.2250738585072014e-308, " in err, err
    assert not out.exists()
