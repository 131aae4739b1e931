r"""The symmetry group of a task and the orbits of matrix entries under it.

A task's population loss is unchanged when the classes are permuted (acting
together on the class-specific tokens, on the output classes and, for
factorized circuits, on the hidden units) and when the types of a shared group
are permuted among themselves. Gradient flow commutes with these permutations,
so the matrices fixed by the whole group -- the *fixed-point subspace* -- are
an invariant family. Its natural basis is the orbit sums: the 0/1 indicator
matrix of each orbit of entry positions.

Indices
-------
An index of a matrix row or column is ``(role, label)``: ``role`` is
``"tok:<group>"`` (a token of a group), ``"out"`` (an output class) or
``"hid"`` (a hidden unit of a factorized circuit); ``label`` is
``("c", i)`` (class i) or ``("s", group, i)`` (type i of a shared group).

Orbits, for any number of classes
---------------------------------
The group is a product of full symmetric groups (S_M on class labels, S_{n_g}
on each shared group's labels). Two tuples of indices lie in the same orbit
exactly when they have the same roles and the same *equality pattern* of
labels; :func:`canonical` writes that pattern with labels renumbered in order
of first appearance, and the orbit has
``M (M-1) ... (M-c+1) * prod_g n_g (n_g-1) ...`` elements (:func:`orbit_size`),
with c distinct class labels and per shared group that many distinct types.
This holds for symbolic M and n_g.

>>> from derivations.engine.symmetry import canonical, orbit_size, pattern_name
>>> import sympy as sp
>>> i, j = ("tok:q", ("c", 2)), ("tok:r", ("c", 0))
>>> canonical((i, j))
(('tok:q', ('c', 0)), ('tok:r', ('c', 1)))
>>> pattern_name(canonical((i, j)))
'q_k,r_j'
>>> orbit_size(canonical((i, j)), sp.Symbol("M"), {})
M*(M - 1)
"""
from __future__ import annotations

import sympy as sp

__all__ = ["canonical", "orbit_size", "index_name", "pattern_name", "class_sum",
           "CLASS_NAMES", "SHARED_NAMES"]

CLASS_NAMES = "kjilmn"
SHARED_NAMES = "stuvw"


def canonical(indices: tuple) -> tuple:
    """The orbit representative of a tuple of indices: class labels and each
    shared group's labels renumbered 0, 1, ... in order of first appearance.

    Parameters
    ----------
    indices : tuple
        Indices ``(role, label)`` (see Indices above), e.g. the row and column of an entry.

    Returns
    -------
    tuple
        The same roles with renumbered labels: equal for two tuples exactly when they share an orbit.
    """
    classes, shared, types = {}, {}, {}
    out = []
    for role, label in indices:
        if label[0] == "c":
            k = classes.setdefault(label[1], len(classes))
            if len(label) == 3:    # type label[2] of a per-class group of several types
                table = types.setdefault((role, k), {})
                new = ("c", k, table.setdefault(label[2], len(table)))
            else:
                new = ("c", k)
        else:
            g = label[1]
            table = shared.setdefault(g, {})
            new = ("s", g, table.setdefault(label[2], len(table)))
        out.append((role, new))
    return tuple(out)


def orbit_size(pattern: tuple, M, shared_types: dict):
    """Number of index tuples in the orbit of ``pattern`` (canonical), for M
    classes and ``shared_types[g]`` types of group g (shared, or per class of a
    per-class group of several types; symbols allowed).

    Parameters
    ----------
    pattern : tuple
        A canonical tuple of indices (:func:`canonical`).
    M : sympy.Expr or int
        Number of classes.
    shared_types : dict
        Group name -> number of types (int or sympy.Expr).

    Returns
    -------
    sympy.Expr
        The orbit size, factored.
    """
    classes = {lab[1] for _, lab in pattern if lab[0] == "c"}
    out = sp.ff(M, len(classes))
    groups = {}
    for role, lab in pattern:
        if lab[0] == "s":
            groups.setdefault((lab[1], None), set()).add(lab[2])
        elif len(lab) == 3:
            groups.setdefault((role.partition(":")[2], lab[1]), set()).add(lab[2])
    for (g, _), labels in groups.items():
        out *= sp.ff(sp.sympify(shared_types[g]), len(labels))
    return sp.factor(out)


def index_name(index) -> str:
    """``q_k``, ``r_j``, ``o_k``, ``h_j``, ``u_s``: role letter(s) and label letter.

    Parameters
    ----------
    index : tuple
        ``(role, label)`` with canonical labels (class and type numbers small enough to
        have a letter in :data:`CLASS_NAMES` and :data:`SHARED_NAMES`).

    Returns
    -------
    str
    """
    role, label = index
    head = {"out": "o", "hid": "h"}.get(role, role.partition(":")[2])
    letter = CLASS_NAMES[label[1]] if label[0] == "c" else SHARED_NAMES[label[2]]
    if label[0] == "c" and len(label) == 3:
        letter += "'" * label[2]    # r_k: type 0 of class k's types; r_k': another of them
    return f"{head}_{letter}"


def pattern_name(pattern: tuple) -> str:
    """A readable name of an orbit, e.g. ``'q_k,r_k'``.

    Parameters
    ----------
    pattern : tuple
        A canonical tuple of indices (:func:`canonical`).

    Returns
    -------
    str
        The :func:`index_name` of each index, joined by commas.
    """
    return ",".join(index_name(i) for i in pattern)


def class_sum(term, present: tuple, M):
    """``sum over class labels c of term(c)``, for symbolic M.

    ``term(label)`` must depend on the label only through the equality pattern
    with the labels in ``present`` (true for functions of the family's
    entries). The sum is ``sum_{c in present} term(c)`` plus
    ``(M - len(present))`` copies of ``term(fresh)`` with a new label.

    Parameters
    ----------
    term : callable
        ``term(label) -> sympy.Expr`` for a class label (an int).
    present : tuple of int
        The class labels already in use.
    M : sympy.Expr or int
        Number of classes.

    Returns
    -------
    sympy.Expr
    """
    present = tuple(dict.fromkeys(present))
    out = sum((term(c) for c in present), sp.S.Zero)
    fresh = max(present, default=-1) + 1
    return out + (M - len(present)) * term(fresh)
