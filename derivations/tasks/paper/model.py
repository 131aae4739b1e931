r"""The paper's single-layer attention model, as SymPy expressions.

Two views of the same model:

1. **Explicit instances** (:mod:`derivations.tasks.paper.explicit`): for a concrete number of classes
   ``M`` (2, 3, 4, ...), every trained matrix is a SymPy ``Matrix`` of independent symbols and the
   population loss is built literally from the definitions below. These are used to *check* the
   reduction exactly.
2. **The invariant family for symbolic M** (:func:`family`): the matrices that
   the flow visits from the paper's initializations, written with a few scalar
   coordinates per circuit. The reduced dynamics are derived on it.

The model
---------
M classes, embedding dimension d = 2M, tokens q_k (index k) and r_k (index
M + k) embedded as :math:`x = e/\sqrt{b}`; irrelevant tokens embed to 0. A
class-k sequence has m copies of r_k and n irrelevant tokens, then q_k, which
attends over the m + n context positions:

.. math::

    s_j = x(q_k)^\top W_{QK} x_j,\quad a = \mathrm{softmax}(s),\quad
    c = \sum_j a_j x_j,\quad z = W_{OV} c,\quad
    L = \frac1M \sum_k \mathrm{CE}(z^{(k)}, k).

The softmax over positions is taken with multiplicities (m relevant, n
irrelevant positions), so m and n may be any positive reals.

Example
-------
>>> from derivations.tasks.paper.model import family
>>> from derivations.symbolic.symbols import mu_OV, mu_QK
>>> fam = family("CACO")
>>> fam.alpha_of(mu_QK)
m*exp(mu_QK)/(m*exp(mu_QK) + n)
>>> fam.reduced_loss()
-alpha*mu_OV + log(M + exp(alpha*mu_OV) - 1)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

from ...core.vocabulary import CIRCUITS, check_parameterization
from ...symbolic.forms import canonical
from ...symbolic.symbols import SYMBOLS, M, alpha, b, m, mu_OV, mu_QK, n

__all__ = ["class_loss", "theta_QK", "theta_OV", "a_Q", "c_K", "o_O", "v_V", "w_V", "basis_matrix", "Family",
           "family", "mu_QK_of_alpha", "dalpha_dmu"]

# --------------------------------------------------------------------------
# The model's forward pass, shared by both views
# --------------------------------------------------------------------------

def class_loss(W_QK, W_OV, x_query, x_relevant, x_irrelevant, k, attention=None):
    """Cross-entropy of one class-k sequence, from the definitions.

    Parameters
    ----------
    W_QK, W_OV : sympy.Matrix
    x_query, x_relevant, x_irrelevant : sympy.Matrix
        Column embeddings of the query, a relevant and an irrelevant token.
    k : int
        The class (index of the correct logit).
    attention : sympy.Symbol, optional
        Kept for the softmax output in logits and loss, so that the chain rule can be taken through it.

    Returns
    -------
    loss, alpha_k, logits, score_gap : sympy.Expr, sympy.Expr, sympy.Matrix, sympy.Expr
        alpha_k (the attention on the relevant tokens) is the softmax expression; score_gap = s_rel - s_irr.
    """
    s_rel = (x_query.T * W_QK * x_relevant)[0, 0]
    s_irr = (x_query.T * W_QK * x_irrelevant)[0, 0]
    Z = m * sp.exp(s_rel) + n * sp.exp(s_irr)
    a_rel, a_irr = sp.exp(s_rel) / Z, sp.exp(s_irr) / Z   # per position
    alpha_k = m * a_rel
    if attention is not None:
        a_rel, a_irr = attention / m, (1 - attention) / n
    context = m * a_rel * x_relevant + n * a_irr * x_irrelevant
    z = W_OV * context
    loss = sp.log(sum(sp.exp(zi) for zi in z)) - z[k]
    return loss, alpha_k, z, s_rel - s_irr


# --------------------------------------------------------------------------
# The invariant family, for symbolic M
# --------------------------------------------------------------------------

# Family coordinates: one scalar per basis matrix.
theta_QK, theta_OV = sp.symbols("theta_QK theta_OV", real=True)  # collapsed circuits
a_Q, c_K = sp.symbols("a_Q c_K", real=True)                      # W_Q = a_Q U_Q, W_K = c_K U_K
o_O, v_V, w_V = sp.symbols("o_O v_V w_V", real=True)             # W_O = o_O U_O, W_V = v_V U_V + w_V U_1


def basis_matrix(name: str, M_value: int):
    """The basis matrix ``U`` of a family coordinate, for concrete M.

    ======  ==========================================  =================
    name    U                                           ||U||_F^2
    ======  ==========================================  =================
    QK      sum_k e_{q_k} e_{r_k}^T   (d x d)           M
    Q       sum_k e_{q_k} e_k^T       (d x M)           M
    K       sum_k e_{r_k} e_k^T       (d x M)           M
    OV, V   sum_k (e_k - 1/M) e_{r_k}^T   (M x d)       M - 1
    O       I - 1 1^T / M             (M x M)           M - 1
    V1      sum_k 1 e_{r_k}^T         (M x d)           M^2
    ======  ==========================================  =================

    Parameters
    ----------
    name : {"QK", "Q", "K", "OV", "V", "O", "V1"}
        A name of the table; ValueError otherwise.
    M_value : int

    Returns
    -------
    sympy.Matrix

    Raises
    ------
    ValueError
        An unknown ``name``.
    """
    Mv, d = M_value, 2 * M_value
    if name == "QK":
        return sp.Matrix(d, d, lambda i, j: 1 if (i < Mv and j == Mv + i) else 0)
    if name == "Q":
        return sp.Matrix(d, Mv, lambda i, j: 1 if i == j else 0)
    if name == "K":
        return sp.Matrix(d, Mv, lambda i, j: 1 if i == Mv + j else 0)
    if name in ("OV", "V"):
        return sp.Matrix(Mv, d, lambda i, j: ((1 if j == Mv + i else 0) - sp.Rational(1, Mv)) if j >= Mv else 0)
    if name == "O":
        return sp.eye(Mv) - sp.ones(Mv, Mv) / Mv
    if name == "V1":
        return sp.Matrix(Mv, d, lambda i, j: 1 if j >= Mv else 0)
    raise ValueError(f"unknown basis matrix {name!r}")


def _basis_norm2_symbolic(name):
    """||U||_F^2 for symbolic M: M copies (one per class) of a block of (value, count) entries."""
    per_class = {
        "QK": [(1, 1)], "Q": [(1, 1)], "K": [(1, 1)],
        "OV": [(1 - 1 / M, 1), (-1 / M, M - 1)],
        "V": [(1 - 1 / M, 1), (-1 / M, M - 1)],
        "O": [(1 - 1 / M, 1), (-1 / M, M - 1)],
        "V1": [(1, M)],
    }[name]
    return sp.factor(sp.simplify(M * sum(count * value**2 for value, count in per_class)))


@dataclass(frozen=True)
class Family:
    r"""The invariant family of one parameterization, for symbolic M.

    Attributes
    ----------
    parameterization : str
    coordinates : dict[Symbol, tuple[str, str, Symbol]]
        family coordinate -> (trained matrix, basis matrix name, learning rate).
    norm2 : dict[Symbol, Expr]
        ||U||_F^2 of each coordinate's basis matrix (symbolic M).
    qk_entry : Expr
        W_QK[q_k, r_k] on the family (all other entries that the loss sees are 0).
    ov_column : tuple[Expr, Expr]
        (W_OV[k, r_k], W_OV[j, r_k]) for j != k.
    products : dict[str, Expr]
        ``{"QK": ..., "OV": ...}``: each circuit's amplitude on its basis matrix (the coordinate
        itself for a collapsed circuit, the product of the factor coordinates for a factorized one).

    Notes
    -----
    The flow (:meth:`flow`), the flow of mu (:meth:`mu_flow`), the map coordinates -> mu (:meth:`mu`)
    and its inverse (:meth:`coordinates_of_mu`) are derived once per parameterization and cached.
    """
    parameterization: str
    coordinates: dict
    norm2: dict
    qk_entry: sp.Expr
    ov_column: tuple
    products: dict

    def _class_quantities(self, qk_entry, ov_column, attention=None):
        """One class's (loss, alpha, z_k, z_j, score gap) for symbolic M (classes are exchangeable
        on the family; the M - 1 logits other than z_k equal z_j)."""
        x_q, x_r, x_0 = (sp.Matrix([[1 / sp.sqrt(b)], [0]]), sp.Matrix([[0], [1 / sp.sqrt(b)]]),
                         sp.zeros(2, 1))
        W_QK = sp.Matrix([[0, qk_entry], [0, 0]])           # rows (q_k, r_k), columns (q_k, r_k)
        W_OV = sp.Matrix([[0, ov_column[0]], [0, ov_column[1]]])  # rows (k, j)
        _, a, z, gap = class_loss(W_QK, W_OV, x_q, x_r, x_0, 0, attention=attention)
        z_k, z_j = z
        loss = sp.log(sp.exp(z_k) + (M - 1) * sp.exp(z_j)) - z_k
        return loss, a, z_k, z_j, gap

    def loss(self):
        """The population loss on the family, in family coordinates."""
        return self._class_quantities(self.qk_entry, self.ov_column)[0]

    def loss_in_alpha(self):
        """The population loss on the family with the attention kept as the symbol ``alpha``: a function
        of alpha and the OV coordinates only (alpha depends on the QK coordinates through :meth:`alpha_of`)."""
        return self._class_quantities(self.qk_entry, self.ov_column, attention=alpha)[0]

    def attention(self):
        """alpha in family coordinates (the softmax of :func:`class_loss`)."""
        return self._class_quantities(self.qk_entry, self.ov_column)[1]

    def mu(self):
        """``(mu_OV, mu_QK)`` as functions of the family coordinates, from
        their definitions: mu_QK = s_rel - s_irr, mu_OV = (z_k - z_j)/alpha."""
        return _mu_map(self.parameterization)

    def coordinates_of_mu(self) -> dict:
        """The inverse of :meth:`mu`, ``{coordinate: expression in mu}``, solved by SymPy. Only the collapsed
        family (CACO) has one coordinate per mu; for the others use :func:`family` ``("CACO")`` and
        ``products``."""
        return _coordinates_of_mu(self.parameterization)

    def alpha_of(self, score_gap=mu_QK):
        """Attention on the m relevant tokens at a score gap, alpha = m e^mu / (m e^mu + n):
        :meth:`attention` with the QK coordinate solved from :meth:`mu` (the same for every family).

        Parameters
        ----------
        score_gap : sympy.Expr, default mu_QK

        Returns
        -------
        sympy.Expr
        """
        return _alpha_in_mu().subs(mu_QK, score_gap)

    def reduced_loss(self):
        """The loss in mu_OV with ``alpha`` kept as a symbol, L = log(e^{alpha mu_OV} + M - 1) - alpha mu_OV:
        :meth:`loss_in_alpha` with the coordinates solved from :meth:`mu`."""
        return _reduced_loss()

    def flow(self) -> dict:
        r"""Gradient flow on the family: ``{theta_i: dtheta_i/dt}``.

        If ``grad_W L = sum_i g_i U_i`` on the family (checked exactly on explicit instances by
        :func:`derivations.tasks.paper.reduction.invariance_residual`), the chain rule gives
        ``dL/dtheta_i = g_i ||U_i||^2``, hence
        :math:`\dot\theta_i = -\eta_i/\lVert U_i\rVert_F^2\,\partial L/\partial\theta_i`.
        The loss is differentiated with the attention kept as the symbol alpha and the chain rule taken
        through alpha(mu_QK) and mu_QK of the coordinates (:meth:`mu`), so the result is written in alpha
        and the family coordinates."""
        return _family_flow(self.parameterization)

    def mu_flow(self, in_mu: bool = False):
        """``(dmu_OV/dt, dmu_QK/dt)`` by the chain rule through :meth:`mu`, in family coordinates and
        alpha.

        Parameters
        ----------
        in_mu : bool, default False
            Replace the coordinates by :meth:`coordinates_of_mu` (collapsed family only, else ValueError).

        Returns
        -------
        (sympy.Expr, sympy.Expr)
        """
        if not in_mu:
            return _family_mu_flow(self.parameterization)
        return _family_mu_flow_in_mu(self.parameterization)


@lru_cache(maxsize=None)
def _mu_map(parameterization):
    fam = family(parameterization)
    _, a, z_k, z_j, gap = fam._class_quantities(fam.qk_entry, fam.ov_column)
    return sp.simplify((z_k - z_j) / a), sp.simplify(gap)


@lru_cache(maxsize=None)
def _coordinates_of_mu(parameterization):
    fam = family(parameterization)
    if len(fam.coordinates) != 2:
        raise ValueError(f"the {parameterization} family has {len(fam.coordinates)} coordinates; "
                         "only the collapsed family (CACO) is solved for mu")
    mu_ov_of, mu_qk_of = fam.mu()
    return sp.solve([sp.Eq(mu_ov_of, mu_OV), sp.Eq(mu_qk_of, mu_QK)], list(fam.coordinates), dict=True)[0]


@lru_cache(maxsize=None)
def _alpha_in_mu():
    fam = family("CACO")
    return fam.attention().subs(fam.coordinates_of_mu())


@lru_cache(maxsize=None)
def _reduced_loss():
    fam = family("CACO")
    return sp.expand_log(sp.simplify(fam.loss_in_alpha().subs(fam.coordinates_of_mu())), force=True)


@lru_cache(maxsize=None)
def mu_QK_of_alpha():
    """The inverse of alpha(mu_QK) (:meth:`Family.alpha_of`), solved by SymPy:
    mu_QK = log(n alpha / (m (1 - alpha)))."""
    sol = sp.solve(sp.Eq(_alpha_in_mu(), alpha), mu_QK)
    return sp.expand_log(sp.simplify(sol[0]), force=True)


@lru_cache(maxsize=None)
def dalpha_dmu():
    """d alpha / d mu_QK written in alpha, alpha (1 - alpha): the derivative of
    alpha(mu_QK) at mu_QK = :func:`mu_QK_of_alpha`."""
    return sp.factor(sp.simplify(sp.diff(_alpha_in_mu(), mu_QK).subs(mu_QK, mu_QK_of_alpha())),
                     deep=True)


@lru_cache(maxsize=None)
def _family_flow(parameterization):
    fam = family(parameterization)
    loss = fam.loss_in_alpha()
    score_gap = fam.mu()[1]
    flow = {}
    for c, (_, _, rate) in fam.coordinates.items():
        grad = sp.diff(loss, c) + sp.diff(loss, alpha) * dalpha_dmu() * sp.diff(score_gap, c)
        flow[c] = canonical(-rate / fam.norm2[c] * grad)
    return flow


@lru_cache(maxsize=None)
def _family_mu_flow(parameterization):
    fam = family(parameterization)
    flow = fam.flow()
    return tuple(canonical(sum(sp.diff(mu, c) * flow[c] for c in flow)) for mu in fam.mu())


@lru_cache(maxsize=None)
def _family_mu_flow_in_mu(parameterization):
    sol = _coordinates_of_mu(parameterization)
    return tuple(canonical(e.subs(sol)) for e in _family_mu_flow(parameterization))


_FAMILY_COORDINATES = {           # (trained matrix, basis) -> family coordinate
    ("W_QK", "QK"): theta_QK, ("W_Q", "Q"): a_Q, ("W_K", "K"): c_K,
    ("W_OV", "OV"): theta_OV, ("W_O", "O"): o_O, ("W_V", "V"): v_V, ("W_V", "V1"): w_V,
}


@lru_cache(maxsize=None)
def family(parameterization: str = "CACO") -> Family:
    """The invariant family of ``parameterization`` (see :class:`Family`).

    Collapsed QK: W_QK = theta_QK U_QK. Factorized QK: W_Q = a_Q U_Q, W_K = c_K U_K, so
    W_QK = a_Q c_K U_QK. Collapsed OV: W_OV = theta_OV U_OV. Factorized OV: W_O = o_O U_O,
    W_V = v_V U_V + w_V U_1, so W_OV = o_O v_V U_OV (U_O U_1 = 0). The trained matrices, their bases and
    rates come from :data:`derivations.core.vocabulary.CIRCUITS`; the explicit-instance tests confirm
    these products entry by entry.

    Parameters
    ----------
    parameterization : {"CACO", "CAFO", "FACO", "FAFO"}, default "CACO"
        ValueError for any other value.

    Returns
    -------
    Family
    """
    check_parameterization(parameterization)
    coords, products = {}, {}
    for circuit in CIRCUITS.values():
        trained = circuit.trained(parameterization)
        product = sp.S.One
        for mat, basis, rate in trained:
            c = _FAMILY_COORDINATES[mat, basis]
            coords[c] = (mat, basis, SYMBOLS[rate])
            if basis in (circuit.basis, *circuit.factor_bases):
                product *= c
        products[circuit.name] = product
    norm2 = {c: _basis_norm2_symbolic(basis) for c, (_, basis, _) in coords.items()}
    ov = products["OV"]
    return Family(parameterization, coords, norm2, products["QK"], (ov * (1 - 1 / M), -ov / M),
                  products)
