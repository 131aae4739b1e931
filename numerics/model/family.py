r"""The invariant family of the full-matrix model, for the paper and every task:
structured initialization, projection and distance.

Every task (:mod:`derivations.tasks`): from the structured initialization
(:func:`structured_params`) the flow stays on a linear family
:math:`W = \sum_i \theta_i U_i` of every trained matrix, with the basis
matrices :math:`U_i` of the engine (:func:`task_basis`,
:func:`derivations.engine.basis_matrices`); :class:`FamilyProjector`
gives the least-squares coordinates :math:`\theta` of any parameters and
their relative distance from the family.

The paper's model (:class:`numerics.model.paper.AttentionModel`) also has the
circuit coordinates :math:`(\mu_{OV}, \mu_{QK})` of the paper:

From the structured (or zero) initialization the flow stays on

.. math::

    W_{QK} = b\,\mu_{QK}\,U_{QK}, \qquad W_{OV} = \sqrt{b}\,\mu_{OV}\,U_{OV},

with the basis matrices :math:`U` of :func:`derivations.tasks.paper.model.basis_matrix`
(:math:`U_{QK} = \sum_k e_{q_k}e_{r_k}^\top`,
:math:`U_{OV} = \sum_k (e_k - \mathbf 1/M)e_{r_k}^\top`, and for the factors
:math:`U_Q, U_K, U_O, U_V, U_{V1}`; which factor moves along which basis
matrix is the circuit table :data:`derivations.core.vocabulary.CIRCUITS`). The
basis matrices are evaluated once per M to read-only NumPy arrays and cached,
so SymPy is imported only on the first call for a given M, never on the flow's
hot path.

>>> from numerics.model import AttentionModel, structured_params, project, summarize
>>> model = AttentionModel("FAFO", M=3, b=4.0)
>>> p = structured_params(model, eps=0.1)     # mu_OV = eps^2/sqrt(b), mu_QK = eps^2/b
>>> [round(v, 12) for v in project(model, p)], bool(summarize(model, model.flatten(p))["distance"] < 1e-15)
([0.005, 0.0025], True)
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from derivations.core.vocabulary import CIRCUITS, check_positive

from ..functions import lambdified as lam
from .attention import TaskModel
from .paper import AttentionModel, check_full_model_classes

__all__ = ["basis", "structured_params", "project", "summarize", "FamilyProjector", "task_basis"]


_BASIS_NAMES = ("QK", "Q", "K", "OV", "O", "V", "V1")


def basis(name, M) -> np.ndarray:
    """A basis matrix of the paper's family as a read-only float array.

    :func:`derivations.tasks.paper.model.basis_matrix`, computed once per ``(name, M)``.

    Parameters
    ----------
    name : {"QK", "Q", "K", "OV", "O", "V", "V1"}
    M : int
        Number of classes, in [2, :data:`~numerics.model.paper.MAX_CLASSES`].

    Returns
    -------
    ndarray

    Raises
    ------
    ValueError
        An unknown ``name``, or ``M`` not an integer in [2, MAX_CLASSES].
    """
    if not isinstance(name, str) or name not in _BASIS_NAMES:
        raise ValueError(f"name must be one of {', '.join(_BASIS_NAMES)}; got {name!r}")
    return _basis(name, check_full_model_classes(M))


@lru_cache(maxsize=64)
def _basis(name, M):
    """:func:`basis` of a checked ``(name, M)``, cached."""
    from derivations.tasks.paper.model import basis_matrix   # SymPy: once per (name, M)
    U = np.array(basis_matrix(name, M).tolist(), dtype=float)
    U.flags.writeable = False
    return U


@lru_cache(maxsize=64)
def _integer_basis(name, M):
    """``(M U, ||M U||_F^2)``: M times a basis matrix has integer entries, so
    inner products with it round only once per entry."""
    from derivations.tasks.paper.model import basis_matrix
    MU = np.array((M * basis_matrix(name, int(M))).tolist(), dtype=float)   # exact integers
    MU.flags.writeable = False
    return MU, float(np.vdot(MU, MU))


def _coordinate(model, W, circuit):
    r"""Least-squares coordinate of W along its basis matrix:
    :math:`\langle W, U\rangle/(\text{scale}\,\|U\|^2)`, via the integer matrix M U."""
    MU, n2 = _integer_basis(circuit, model.M)
    inner = (W * MU).sum(axis=(-2, -1))     # pairwise summation
    return inner * (model.M / (_circuit_scale(model, circuit) * n2))


def _circuit_scale(model, circuit):
    r"""Entry scale of a circuit on the family, :math:`W = \text{scale}\cdot\mu\,U`:
    the circuit magnitude derived from the family's mu map
    (:func:`numerics.functions.lambdified.circuit_magnitudes_fn`, linear in mu; :math:`b`
    for QK, :math:`\sqrt b` for OV), evaluated at :math:`\mu = 1`."""
    return float(lam.circuit_magnitudes_fn()(1.0, 1.0, model.b)[circuit])


def structured_params(model, eps=1e-2) -> dict:
    r"""The structured initialization of scale ``eps`` (> 0), a point of the invariant family.

    Collapsed circuits are zero. The paper's model
    (:class:`~numerics.model.paper.AttentionModel`): every factor is ``eps``
    times its basis matrix (:data:`derivations.core.vocabulary.CIRCUITS`), with
    :math:`W_V = \varepsilon(U_V + U_{V1}/M) = \varepsilon\sum_k e_k e_{r_k}^\top`;
    the point lies on the family with :math:`\mu_{QK} = \varepsilon^2/b`,
    :math:`\mu_{OV} = \varepsilon^2/\sqrt b` for factorized circuits, 0 for
    collapsed ones. Any other model (:class:`~numerics.model.attention.TaskModel`
    of a task instance): the engine's factor initialization
    (:meth:`derivations.engine.TaskInstance.initial_factors`), with hidden unit
    :math:`k` for class :math:`k`: :math:`W_Q[q_k, k] = W_K[r, k] = \varepsilon`
    for every relevant token :math:`r` of class :math:`k`,
    :math:`W_O[y_j, k] = \varepsilon(\delta_{jk} - 1/K)`,
    :math:`W_V[h, r] = \varepsilon(\delta_{hk} - 1/K)`.

    Parameters
    ----------
    model : TaskModel
        The paper's :class:`~numerics.model.paper.AttentionModel` or another task's model.
    eps : float
        Scale of the factors (finite, > 0).

    Returns
    -------
    dict
        ``{key: matrix}`` (``model.keys``).

    Raises
    ------
    ValueError
        ``model`` not a :class:`~numerics.model.attention.TaskModel`, or ``eps`` not finite and > 0.
    """
    if not isinstance(model, TaskModel):
        raise ValueError(f"model must be a TaskModel or an AttentionModel; got {type(model).__name__}")
    if not isinstance(model, AttentionModel):
        return _task_structured_params(model, check_positive("eps", eps))
    eps = check_positive("eps", eps)
    M = model.M
    out = {}
    for circuit in CIRCUITS.values():
        trained = circuit.trained(model.parameterization)
        if len(trained) == 1:
            out[circuit.matrix] = np.zeros(model.shapes[circuit.matrix])
            continue
        for matrix, name, _ in trained:    # sum the basis matrices first: exact entries
            out[matrix] = out.get(matrix, 0.0) + basis(name, M) * (1.0 if name != "V1" else 1.0 / M)
    return {k: eps * np.array(out[k], dtype=float) for k in model.keys}


def _task_structured_params(model, eps):
    """The engine's structured initialization on a task instance (see
    :func:`structured_params`): :meth:`derivations.engine.TaskInstance.initial_factors`
    of the instance's numbers, hidden unit ``k`` for class ``k``; zero for
    collapsed circuits."""
    from derivations.engine import TaskInstance as EngineInstance   # the description only
    inst = model.instance
    factors = EngineInstance(
        M=inst.K, token_names=[f"t_{t}" for t in range(inst.T)],
        embeddings=inst.embeddings.tolist(), counts=inst.counts.tolist(),
        query=inst.query.tolist(), label=inst.label.tolist(), relevant=inst.relevant.tolist(),
        d=inst.d, n_out=inst.n_out, h_QK=inst.h_QK, h_OV=inst.h_OV,
        score_scale=inst.score_scale, hidden_of_class=list(range(inst.K))).initial_factors(eps)
    trained = set(model.keys) - {"W_QK", "W_OV"}
    return {k: np.array(factors[k], dtype=float) if k in trained else np.zeros(shape)
            for k, shape in model.shapes.items()}


def _project_circuits(model, W_QK, W_OV):
    return _coordinate(model, W_OV, "OV"), _coordinate(model, W_QK, "QK")


def project(model, params):
    r"""Least-squares coordinates ``(mu_OV, mu_QK)`` on the family: the
    orthogonal (Frobenius) projections of the circuits on :math:`U_{QK}`,
    :math:`U_{OV}`,

    .. math::

        \mu_{QK} = \frac{\langle W_{QK}, U_{QK}\rangle}{b\,\|U_{QK}\|_F^2},\qquad
        \mu_{OV} = \frac{\langle W_{OV}, U_{OV}\rangle}{\sqrt b\,\|U_{OV}\|_F^2}.

    Parameters
    ----------
    model : AttentionModel
        The paper's model.
    params : dict
        ``{key: matrix}``; leading batch axes allowed.

    Returns
    -------
    (float, float) or (ndarray, ndarray)
        ``(mu_OV, mu_QK)``: floats, or arrays over the leading batch axes.
    """
    mu_OV, mu_QK = _project_circuits(model, *model.circuits(params))
    if np.ndim(mu_OV) == 0:
        return float(mu_OV), float(mu_QK)
    return mu_OV, mu_QK


def _roundoff_floors(model, p):
    """Norm below which a factorized circuit counts as zero (round-off of the product)."""
    tol = 64 * np.finfo(float).eps
    fro = lambda A: np.linalg.norm(A, axis=(-2, -1))  # noqa: E731
    fq = tol * fro(p["W_Q"]) * fro(p["W_K"]) if model.qk_factorized else 0.0
    fo = tol * fro(p["W_O"]) * fro(p["W_V"]) if model.ov_factorized else 0.0
    return fq, fo


def _distance_circuits(model, W_QK, W_OV, floor_QK=0.0, floor_OV=0.0):
    M = model.M
    mu_OV, mu_QK = _project_circuits(model, W_QK, W_OV)
    RQ = W_QK - (_circuit_scale(model, "QK") * mu_QK)[..., None, None] * basis("QK", M)
    RO = W_OV - (_circuit_scale(model, "OV") * mu_OV)[..., None, None] * basis("OV", M)

    def rel(res, W, floor):
        nr = np.linalg.norm(res, axis=(-2, -1))
        nw = np.linalg.norm(W, axis=(-2, -1))
        ok = nw > floor
        return np.where(ok, nr / np.where(ok, nw, 1.0), 0.0)

    return np.maximum(rel(RQ, W_QK, floor_QK), rel(RO, W_OV, floor_OV))


def summarize(model, vecs) -> dict:
    """Trajectory summaries for flat states of a model.

    Parameters
    ----------
    model : TaskModel
        The model the states belong to (the paper's
        :class:`~numerics.model.paper.AttentionModel` or any other task's).
    vecs : ndarray
        Flat states, shape ``(..., n_params)``.

    Returns
    -------
    dict
        Arrays over the leading axes: ``loss`` and ``alpha`` (class mean);
        for the paper's model also the family coordinates ``mu_OV``,
        ``mu_QK`` and the ``distance`` from the family.
    """
    if not isinstance(model, AttentionModel):
        return model.summarize(vecs)
    p = model.unflatten(vecs)
    alpha, lk = model.attention_and_class_losses(p)
    W_QK, W_OV = model.circuits(p)
    mu_OV, mu_QK = _project_circuits(model, W_QK, W_OV)
    return {
        "loss": lk.mean(axis=-1),
        "alpha": alpha.mean(axis=-1),
        "mu_OV": mu_OV,
        "mu_QK": mu_QK,
        "distance": _distance_circuits(model, W_QK, W_OV, *_roundoff_floors(model, p)),
    }


# --------------------------------------------------------------------------- #
# every task: the engine's basis and the least-squares projector
# --------------------------------------------------------------------------- #
def task_basis(task_name, parameterization, M_value, values) -> dict:
    """The engine's family basis of a built-in task on a concrete instance.

    Parameters
    ----------
    task_name : str
        A built-in task of :mod:`derivations.tasks`.
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}
    M_value : int
        Number of classes.
    values : dict
        The task's parameter values (``n_c`` etc.; the shared groups' sizes
        are read from them).

    Returns
    -------
    dict
        ``{coordinate name: (matrix name, U ndarray)}``, rows and columns in
        the token order of the task's concrete instance
        (:func:`derivations.engine.basis_matrices`; SymPy, the engine's
        reduction from its cache).

    Raises
    ------
    ValueError
        An unknown task or parameterization, or ``M_value`` not an integer in [2, MAX_CLASSES].
    """
    from derivations.tasks import get_task
    from derivations.engine import basis_matrices
    from derivations.task_catalog import task_reduction
    M_value = check_full_model_classes(M_value, "M_value")
    task = get_task(task_name)
    red = task_reduction(task, parameterization)
    table = task.symbols()
    subs = {table[k]: v for k, v in values.items() if k in table}
    shared = {g.name: int(g.types.subs(subs)) for g in task.groups if not g.per_class or g.types != 1}
    return {nm: (mat, np.array(U, dtype=float))
            for nm, (mat, U) in basis_matrices(red, M_value, shared).items()}


class FamilyProjector:
    r"""Least-squares coordinates of parameters on a family basis, and the residual.

    Parameters
    ----------
    basis : dict
        ``{coordinate name: (matrix name, U ndarray)}`` (:func:`task_basis`):
        every trained matrix is :math:`\sum_i \theta_i U_i` on the family.
    names : sequence of str
        The coordinates, in the order of the returned vector.

    Calling the projector on parameters returns ``(theta, distance)``: the
    least-squares coordinates (pseudo-inverse per matrix) and the largest
    relative Frobenius distance :math:`\|W - \sum_i\theta_i U_i\|_F/\|W\|_F`
    over the trained matrices (0 for a zero matrix).
    """

    def __init__(self, basis, names):
        self.names = tuple(names)
        self.by_matrix = {}
        for i, nm in enumerate(self.names):
            mat, U = basis[nm]
            self.by_matrix.setdefault(mat, []).append((i, U))
        self.solvers = {}
        for mat, items in self.by_matrix.items():
            B = np.stack([U.ravel() for _, U in items], axis=1)          # (entries, n_coords)
            self.solvers[mat] = (B, np.linalg.pinv(B))

    def deviations(self, theta, ref) -> dict:
        r"""Per coordinate: :math:`\max_t |\theta_i - \theta^{ref}_i|\,\|U_i\|_F` over
        :math:`\max_t \|\sum_j \theta^{ref}_j U_j\|_F` (the coordinates of the same matrix):
        the deviation's share of its matrix, so that a coordinate that stays 0 is
        compared on the scale of its matrix rather than on its own.

        Parameters
        ----------
        theta, ref : ndarray, shape (n_times, n_coords)
            Coordinates along a trajectory and a reference, in the order of ``names``.

        Returns
        -------
        dict
            ``{coordinate name: share}``.
        """
        out = {}
        for mat, items in self.by_matrix.items():
            B, _ = self.solvers[mat]
            idx = [i for i, _ in items]
            size = float(np.max(np.linalg.norm(ref[:, idx] @ B.T, axis=1)))
            for col, i in enumerate(idx):
                d = float(np.max(np.abs(theta[:, i] - ref[:, i]))) * float(np.linalg.norm(B[:, col]))
                out[self.names[i]] = d / size if size > 0 else d
        return out

    def __call__(self, params):
        theta = np.zeros(len(self.names))
        dist = 0.0
        for mat, items in self.by_matrix.items():
            B, Bp = self.solvers[mat]
            w = np.asarray(params[mat], dtype=float).ravel()
            c = Bp @ w
            theta[[i for i, _ in items]] = c
            nw = np.linalg.norm(w)
            if nw > 0:
                dist = max(dist, float(np.linalg.norm(w - B @ c) / nw))
        return theta, dist
