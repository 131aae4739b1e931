r"""The result type of every state-at-loss answer: :class:`StateAtLoss`.

A leaf module (it imports NumPy only), so that every module that answers a
state at a loss (:mod:`~numerics.dynamics.closed_form`,
:class:`~numerics.dynamics.reduced_system.ReducedSystem`,
:func:`~numerics.dynamics.state.state_at_loss`) returns the one type without
importing another.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["StateAtLoss"]


class StateAtLoss(NamedTuple):
    """The state at a loss, and which method found it.

    The fields ``mu_OV, mu_QK, alpha, loss, ratio, p, s`` come first, in this
    order, so that a state unpacks by position as well as by name.

    Attributes
    ----------
    mu_OV, mu_QK, alpha : ndarray
        The paper's coordinates (None for a task without such an observable)
        and the attention on the relevant tokens.
    loss : ndarray
        The loss at the state (closed form: the requested loss; reduced flow:
        the loss evaluated at the located crossing).
    ratio : ndarray
        :math:`\\eta_{QK}/\\eta_{OV}` as given.
    p, s : ndarray or None
        Attention odds :math:`\\alpha/(1-\\alpha)` and margin
        :math:`\\alpha\\mu_{OV}` (closed form only).
    method : str
        ``"closed form"`` or ``"reduced flow"`` (:data:`~numerics.dynamics.state.METHODS`).
    time : ndarray or None
        Time of the crossing (reduced flow).
    coordinates : dict or None
        ``{name: value}`` of the task's reduced coordinates.
    task : str
    mapped_ratio : ndarray or None
        The paper's ratio the closed form was evaluated at, for a task mapped
        onto the paper's equations.
    relevant_attention, self_attention, other_attention : ndarray or None
        Every attention share of the query: on the relevant tokens (``alpha``), on its
        own token (its position and its copies; 0 where the query does not attend to
        itself) and on every other token; they sum to 1 (None where the reduced
        coordinates are no observables).
    """

    mu_OV: np.ndarray
    mu_QK: np.ndarray
    alpha: np.ndarray
    loss: np.ndarray
    ratio: np.ndarray
    p: np.ndarray = None
    s: np.ndarray = None
    method: str = "closed form"
    time: np.ndarray = None
    coordinates: dict = None
    task: str = "paper"
    mapped_ratio: np.ndarray = None
    relevant_attention: np.ndarray = None
    self_attention: np.ndarray = None
    other_attention: np.ndarray = None
