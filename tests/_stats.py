"""Statistical helpers shared by the sampler tests (importable because pytest puts ``tests/`` on
``sys.path`` for its ``conftest.py``, as for ``_jobs``)."""
import numpy as np


def chisquare_pvalue(observed, expected, min_expected=5.0):
    """Pearson chi-square p-value; bins with expected < min_expected are pooled into one."""
    from scipy import stats
    observed, expected = np.asarray(observed, float).ravel(), np.asarray(expected, float).ravel()
    small = expected < min_expected
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue
