"""How a number of bytes is shown in the memory messages (numerics.experiments.memory.shown_size): the largest
binary unit up to PiB that the size reaches, the number in it with one decimal (three significant digits from
1e9 on), a size in bytes as a whole number. The expected unit and value are computed here by exact integer
division (fractions), apart from the function's decimal arithmetic."""
import re
from fractions import Fraction

import pytest

from numerics.experiments.memory import shown_size

UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def expected(n):
    """(unit, exact value in it): the largest unit 1024**k (k <= 5) not above n."""
    k = 0
    while k < 5 and n >= 1024 ** (k + 1):
        k += 1
    return UNITS[k], Fraction(n) / 1024 ** k


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 1025, 1536, 1024 ** 2 - 1, 1024 ** 2, 3 * 1024 ** 3,
                               1024 ** 5 - 1, 1024 ** 5, 5000 * 1024 ** 5, 999_999_999 * 1024 ** 5,
                               2 * 10 ** 9 * 1024 ** 5, 10 ** 400, 2.5 * 1024 ** 4, 1e300])
def test_a_size_is_shown_in_the_largest_unit_it_reaches(n):
    text = shown_size(n)
    number, unit = text.split(" ")
    want_unit, value = expected(int(n))
    assert unit == want_unit, text
    if unit == "bytes":
        assert number == str(int(n)), text
    elif value < 10 ** 9:
        assert re.fullmatch(r"\d+\.\d", number) and abs(Fraction(number) - value) <= Fraction(1, 20), text
    else:
        mantissa, exponent = re.fullmatch(r"(\d\.\d\d)e\+(\d+)", number).groups()
        assert abs(Fraction(mantissa) * 10 ** int(exponent) - value) <= Fraction(5, 1000) * 10 ** int(exponent), text


@pytest.mark.parametrize("task, params, parameterization", [("authors", (), "CACO"), ("authors", (), "FAFO"),
                                                            ("query-in-context", (("M", 4),), "CAFO")])
def test_the_estimate_bounds_what_an_evaluation_holds(task, params, parameterization):
    """fig2_bytes is an upper bound on the memory the evaluation of a run holds at once (as tracemalloc, which
    NumPy reports its arrays to, measures it): the interpretability proxies' faithfulness variants of every
    sequence included, so that sizes the machine cannot hold are refused before any work, not killed by it."""
    import tracemalloc

    import numpy as np

    from numerics.experiments import measure, sgd
    from numerics.experiments.memory import fig2_bytes
    config = sgd.Fig2Config(parameterization, epochs=1, steps_per_epoch=1, eval_batches=40, task=task,
                            task_params=params)
    (run,) = sgd.train_fig2(config, [1234])
    tracemalloc.start()
    try:
        measure.evaluate(config.sampled_task, run["params"], np.random.default_rng(0), config.eval_batches,
                         config.batch_size, config.seq_len)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= fig2_bytes(config, 1)
