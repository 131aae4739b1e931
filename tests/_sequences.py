"""Explicit token sequences of the authors' task, position by position (for the tests that check
the count model and the sampler against a per-position reference; importable because pytest
puts ``tests/`` on ``sys.path``, as for ``_stats``)."""
import numpy as np

from numerics.experiments import sampler
from numerics.experiments.task_sampling import AUTHORS

V = AUTHORS.T


def sequences(rng, batch_size, seq_len):
    """Explicit sequences of the authors' task, position by position: ``(tokens, target)``, tokens
    ``(batch_size, seq_len - 1)`` (the context drawn as tickets, then the query), consuming the
    generator like ``sample_batches(AUTHORS, rng, 1, batch_size, seq_len)``."""
    classes, tickets = sampler.draw_tickets(AUTHORS, rng, 1, batch_size, seq_len)
    classes, tickets = classes[0], tickets[0]
    tokens = np.empty((batch_size, seq_len - 1), dtype=np.int64)
    tokens[:, :-1] = AUTHORS.ticket_tokens[classes[:, None], tickets]
    tokens[:, -1] = AUTHORS.query[classes]
    return tokens, AUTHORS.label[classes]


def sequence_counts(tokens):
    """Token-count vectors ``(..., V)`` of token-id sequences ``(..., L)``."""
    flat = tokens.reshape(-1, tokens.shape[-1])
    counts = np.zeros((flat.shape[0], V))
    np.add.at(counts, (np.arange(flat.shape[0])[:, None], flat), 1.0)
    return counts.reshape(tokens.shape[:-1] + (V,))
