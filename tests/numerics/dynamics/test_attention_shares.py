"""Every attention share of a state at a loss (issue 26 item 4), for every kind of task, and a task
given as a Task object or a task file wherever a name is taken."""
import pathlib

import numpy as np
import pytest

from derivations.tasks import get_task
from numerics.dynamics.state import state_at_loss

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "docs" / "examples" / "query-copies-file.toml"


@pytest.mark.parametrize("task, params, self_share", [
    ("paper", {}, False), ("shared-irrelevant", {"n_c": 3}, False), ("query-in-context", {}, True),
    ("query-copies", {"s": 3, "R": 4}, True),
])
def test_shares_sum_to_one_and_alpha_is_the_relevant_share(task, params, self_share):
    st = state_at_loss([0.1, 0.3], [1.0, 10.0], task=task, **params)
    total = st.relevant_attention + st.self_attention + st.other_attention
    np.testing.assert_allclose(total, 1, rtol=0, atol=1e-12)        # the three shares of one state: 1e-12 decides
    np.testing.assert_allclose(st.relevant_attention, st.alpha, rtol=1e-12)
    assert (np.all(st.self_attention > 0) if self_share else np.all(st.self_attention == 0))
    assert np.all(st.other_attention > 0)


def test_shares_of_the_paper_are_one_minus_alpha_off_the_relevant_tokens():
    st = state_at_loss(0.05, 100.0)
    assert float(st.other_attention) == pytest.approx(1 - float(st.alpha), rel=1e-12, abs=0)



def test_the_paper_s_other_share_keeps_its_digits_where_alpha_is_near_one():
    """At loss 1e-300 and ratio 1e8 the share off the relevant tokens is 2.2e-12: 1/(1 + p) of the 30-digit
    mpmath state to 1e-13 (1 - alpha would keep only about 4 digits of it)."""
    from numerics.dynamics.closed_form import state_at_loss_mpmath
    st = state_at_loss(1e-300, 1e8)
    ref = float(1 / (1 + state_at_loss_mpmath(1e-300, 1e8, dps=30)["p"]))
    assert float(st.other_attention) == pytest.approx(ref, rel=1e-13, abs=0)


def test_query_copies_self_share_is_s_copies_of_the_query_weight():
    """The query's own token has s attended copies: its share is s e^mu_QK_q / Z."""
    st = state_at_loss(0.2, 1.0, task="query-copies", s=2, R=5, M=4, b=2, n=10)
    c = st.coordinates
    weights = 2 * np.exp(c["mu_QK_q"]), 5 * np.exp(c["mu_QK"]), 10.0
    Z = sum(weights)
    assert float(st.self_attention) == pytest.approx(float(weights[0] / Z), rel=1e-12, abs=0)
    assert float(st.relevant_attention) == pytest.approx(float(weights[1] / Z), rel=1e-12, abs=0)


def test_a_task_object_and_a_task_file_answer_as_the_builtin():
    builtin = state_at_loss(0.2, 1.0, task="query-copies", s=2, R=5, M=4, b=2, n=10)
    for task in (get_task(EXAMPLE), str(EXAMPLE)):
        st = state_at_loss(0.2, 1.0, task=task, M=4, b=2, n=10)
        assert st.task == "query-copies-file" and st.method == "reduced flow"
        for key in ("alpha", "relevant_attention", "self_attention", "other_attention"):
            assert float(getattr(st, key)) == pytest.approx(float(getattr(builtin, key)), rel=1e-12, abs=0)
