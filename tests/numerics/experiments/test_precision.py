"""The learning rates a float32 or float64 SGD step can hold (numerics.experiments.precision.check_rates): each
rate, the largest QK rate and the QK step's factor are normal numbers of the dtype, the range's ends included.
The ends are the dtype's smallest normal and largest finite number, written out (IEEE 754 binary32 and binary64:
2**-126, (2 - 2**-23) 2**127, 2**-1022, (2 - 2**-52) 2**1023)."""
import pytest

from numerics.experiments.precision import check_rates

TINY32, MAX32 = 2.0 ** -126, (2 - 2 ** -23) * 2.0 ** 127
TINY64, MAX64 = 2.0 ** -1022, (2 - 2 ** -52) * 2.0 ** 1023
DIVISOR = 7.07


@pytest.mark.parametrize("dtype, tiny, most", [("float32", TINY32, MAX32), ("float64", TINY64, MAX64)])
def test_the_ends_of_the_range_are_accepted_and_beyond_them_refused(dtype, tiny, most):
    check_rates(1.0, tiny, 1.0, 1.0, dtype)          # lr_ov the smallest normal; factor 1/tiny, finite
    check_rates(most, 1.0, 1.0, DIVISOR, dtype)      # lr_qk the largest; factor most / 7.07
    check_rates(1.0, 1.0, 1.0, 1.0, dtype)
    with pytest.raises(ValueError, match=f"^lr_ov must be in .* for the {dtype} step; got "):
        check_rates(1.0, tiny / 2, 1.0, 1.0, dtype)
    with pytest.raises(ValueError, match=f"^lr_qk must be in .* for the {dtype} step; got "):
        check_rates(most * 2, 1.0, 1.0, DIVISOR, dtype)


def test_the_qk_ramp_raises_the_largest_qk_rate():
    """lr_qk x qk_ramp = 1e30 x 1e9 = 1e39 > 3.4e38: refused in float32 though lr_qk alone fits; a ramp
    below 1 does not lower it (max(1, qk_ramp))."""
    with pytest.raises(ValueError, match=r"^lr_qk x max\(1, qk_ramp\) must be in .*; got 1.0*1e\+39$"):
        check_rates(1e30, 1e30, 1e9, 1.0, "float32")
    with pytest.raises(ValueError, match=r"^lr_qk must be in "):
        check_rates(1e-39, 1.0, 1e3, 1.0, "float32")        # lr_qk itself is checked, not only the ramped rate
    check_rates(1e30, 1e30, 1e-9, 1.0, "float32")


def test_the_qk_steps_factor_counts_the_score_divisor():
    """lr_qk / (lr_ov x score_divisor) = 2e-38 / 7.07 = 2.83e-39, below float32's 1.18e-38, though 2e-38 and
    1 are normal: refused, named as the QK step's factor; with the divisor 1 it is 2e-38, accepted."""
    with pytest.raises(ValueError, match=r"^lr_qk x max\(1, qk_ramp\) / lr_ov / 7\.07 \(the QK step's factor\)"):
        check_rates(2e-38, 1.0, 1.0, DIVISOR, "float32")
    check_rates(2e-38, 1.0, 1.0, 1.0, "float32")
    with pytest.raises(ValueError, match=r"^ratio 1e\+36 / 0\.001 \(the QK step's factor\) must be in"):
        check_rates(1e36, 1.0, 1.0, 1e-3, "float32", ratio=1e36)          # 1e39: overflows


def test_a_factor_whose_denominator_underflows_to_zero_is_refused_as_too_large():
    """lr_ov x score_divisor = 1e-30 x 1e-300 = 1e-330 rounds to 0 in float64: the QK step's factor is
    1 / 1e-330 = 1e330, beyond float64's 1.8e308, refused as such (was a ZeroDivisionError)."""
    with pytest.raises(ValueError, match=r"^lr_qk x max\(1, qk_ramp\) / lr_ov / 1e-300 \(the QK step's factor\) "
                                         r"must be in \[2\.2250738585072014e-308, 1\.7976931348623157e\+308\] "
                                         r"for the float64 step; got inf$"):
        check_rates(1.0, 1e-30, 1.0, 1e-300, "float64")


def test_fig2_with_rates_whose_factor_underflows_is_one_line_exit_2(tmp_path, capsys):
    """``fig2 --task paper --params b=1e-300 --lr-ov 1e-30`` (the paper's score divisor is b): one line, exit 2,
    nothing written; it was a ZeroDivisionError traceback, exit 1."""
    from numerics.experiments.__main__ import main
    out = tmp_path / "out"
    assert main(["fig2", "--task", "paper", "--params", "b=1e-300", "--lr-ov", "1e-30", "--epochs", "1",
                 "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the QK step's factor" in err and "got inf" in err, err
    assert not out.exists()


def test_a_factor_refused_is_named_as_the_embedding_scale_and_its_range_at_these_rates():
    """With the divisor's expression (b, gamma 2: divisor b/2 = 1e-39), the factor 1 / 1e-39 = 1e39 beyond
    3.4e38 is named as b = 2e-39 and b's range at these rates, [2 / 3.4e38, 2 / 1.18e-38], each end shown in full
    (the shortest text that reads back as it)."""
    with pytest.raises(ValueError, match=r"^b = 2e-39 must be in \[5\.877472104436075e-39, 1\.7014118346046923e\+38\] "
                                         r"at these rates: "
                                         r"lr_qk x max\(1, qk_ramp\) / lr_ov / 1e-39 \(the QK step's factor\)"):
        check_rates(1.0, 1.0, 1.0, 1e-39, "float32", divisor=lambda: ("b", 2.0))
    check_rates(1.0, 1.0, 1.0, 5.88e-39 / 2, "float32", divisor=lambda: ("b", 2.0))


@pytest.mark.parametrize("command", [["fig2"], ["sweep", "--parameterizations", "CACO", "--ratios", "1,10",
                                                "--seeds", "1", "--target-loss", "0.5"]], ids=lambda c: c[0])
def test_a_float32_run_refused_for_its_b_names_the_params_or_the_file_key(command, tmp_path, capsys):
    """``--dtype float32`` with b = 2e-39 (the paper's score divisor is b): the line names --params b, or the task
    file's defaults.b, and b's range at these rates; it named only "the QK step's factor"."""
    from pathlib import Path

    from numerics.experiments.__main__ import main
    source = Path(__file__).parents[3] / "derivations" / "tasks" / "files" / "paper.toml"
    file = tmp_path / "pb.toml"
    file.write_text(source.read_text().replace('name = "paper"', 'name = "pb"') + "\n[defaults]\nb = 2e-39\n")
    out = tmp_path / "out"
    for task, says in ((["--task", "paper", "--params", "b=2e-39"], "--params b: "), (["--task", str(file)],
                                                                                    "defaults.b: ")):
        assert main([*command, *task, "--dtype", "float32", "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and not out.exists(), err
        assert err.startswith(f"experiments: error: {says}b = 2e-39 must be in [2.938736052218037e-39, "), err
