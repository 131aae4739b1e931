"""The bound on the SGD steps of one run (numerics.experiments.stopping.check_total_steps): 10**9 steps,
counted after the max_steps cap."""
import pytest

from numerics.experiments.stopping import MAX_SGD_STEPS, check_total_steps


def test_a_run_of_the_most_steps_is_accepted_and_one_more_step_refused():
    assert MAX_SGD_STEPS == 10 ** 9
    assert check_total_steps(10 ** 9, 1) == 10 ** 9 == check_total_steps(1000, 10 ** 6)
    with pytest.raises(ValueError, match=r"^epochs x steps_per_epoch must be at most 1000000000 SGD steps; "
                                         r"got 1000000001 x 1 = 1000000001$"):
        check_total_steps(10 ** 9 + 1, 1)


def test_max_steps_caps_the_steps_before_they_are_bounded():
    assert check_total_steps(10 ** 6, 10 ** 4, max_steps=10 ** 9) == 10 ** 9
    assert check_total_steps(10, 20, max_steps=10 ** 12) == 200
    with pytest.raises(ValueError, match="= 10000000000$"):
        check_total_steps(10 ** 6, 10 ** 4, max_steps=10 ** 9 + 1)
