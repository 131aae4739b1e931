"""Points of the paper's invariant family and their distance from it, for the tests of the
full-matrix model (importable because pytest puts ``tests/`` on ``sys.path`` for its
``conftest.py``, as for ``_jobs``)."""
import math

import numpy as np

from derivations.core.vocabulary import CIRCUITS
from numerics.functions import lambdified as lam
from numerics.model import basis, summarize


def family_params(model, mu_OV, mu_QK, *, a=None, o=None, w=0.0) -> dict:
    r"""Parameters on the family with coordinates ``(mu_OV, mu_QK)``.

    Collapsed circuits: :math:`b\mu_{QK}U_{QK}`, :math:`\sqrt b\mu_{OV}U_{OV}`.
    Factorized: :math:`W_Q = aU_Q`, :math:`W_K = cU_K` with
    :math:`c = b\mu_{QK}/a`; :math:`W_O = oU_O`, :math:`W_V = vU_V + wU_{V1}`
    with :math:`v = \sqrt b\,\mu_{OV}/o`. ``a`` and ``o`` default to the
    balanced choices :math:`\sqrt{b|\mu_{QK}|}`, :math:`\sqrt{\sqrt b|\mu_{OV}|}`
    (or 1 if these vanish).

    Parameters
    ----------
    model : AttentionModel
        The paper's model.
    mu_OV, mu_QK : float
        The family coordinates.
    a, o : float, optional
        Scales of the first factors ``W_Q`` and ``W_O``.
    w : float
        Coefficient of :math:`U_{V1}` in ``W_V``.

    Returns
    -------
    dict
        ``{key: matrix}`` (``model.keys``).
    """
    M = model.M
    magnitude = lam.circuit_magnitudes_fn()(float(mu_OV), float(mu_QK), model.b)
    first = {"QK": a, "OV": o}
    extra = {"V1": float(w)}
    out = {}
    for key, circuit in CIRCUITS.items():
        P = float(magnitude[key])
        trained = circuit.trained(model.parameterization)
        if len(trained) == 1:
            out[circuit.matrix] = P * basis(circuit.basis, M)
            continue
        f = first[key]
        if f is None:
            f = math.sqrt(abs(P)) or 1.0
        coef = (f, P / f)
        for i, (matrix, name, _) in enumerate(trained):
            c = coef[i] if i < 2 else extra[name]
            out[matrix] = out.get(matrix, 0.0) + c * basis(name, M)
    return {k: np.array(out[k], dtype=float) for k in model.keys}


def distance_from_family(model, params) -> float:
    """Relative Frobenius distance of the circuits of ``params`` (no batch axes) from the
    family: the ``distance`` of :func:`numerics.model.summarize`."""
    return float(summarize(model, model.flatten(params))["distance"])
