"""The check that the symmetry step's orbits are the equality patterns of an explicit instance."""
import itertools

from derivations.engine.explicit import _explicit_indices
from derivations.engine.symmetry import canonical, orbit_size
from derivations.symbolic import M


def assert_orbits_are_patterns(task, group, count_symbol, Mv=3, count=2):
    """For every matrix of ``task``'s instance with ``Mv`` classes and ``count`` types of ``group``:
    the orbits found from the generators are exactly the sets of entries of one equality pattern,
    and each pattern's symbolic orbit size (``count_symbol`` types) counts them. Several groups:
    ``group`` a tuple of names, ``count_symbol`` a tuple of their symbols (``count`` types each)."""
    groups, symbols = (group, count_symbol) if isinstance(group, tuple) else ((group,), (count_symbol,))
    types = dict.fromkeys(groups, count)
    for name, (rows, cols) in _explicit_indices(task, Mv, types).items():
        orbits = orbits_by_generators(rows, cols, Mv, types)
        by_pattern = {}
        for i, j in itertools.product(range(len(rows)), range(len(cols))):
            by_pattern.setdefault(canonical((rows[i], cols[j])), set()).add((i, j))
        assert sorted(map(sorted, orbits)) == sorted(map(sorted, by_pattern.values())), name
        for pat, members in by_pattern.items():
            size = orbit_size(pat, M, dict(zip(groups, symbols)))
            assert size.subs({M: Mv, **dict.fromkeys(symbols, count)}) == len(members)


def orbits_by_generators(rows: list, cols: list, M_value: int, shared_types: dict) -> list:
    """Orbits of entry positions (i, j) of a concrete matrix, by closing under
    the generators of the symmetry group (for each symmetric group a
    transposition and an M-cycle), without using :func:`~derivations.engine.symmetry.canonical` (an independent check of it).

    Parameters
    ----------
    rows, cols : list of tuple
        The indices ``(role, label)`` of the rows and of the columns.
    M_value : int
        Number of classes.
    shared_types : dict of str to int
        Group name -> number of types (shared groups and per-class groups of several types).

    Returns
    -------
    list of set
        Each orbit, as a set of (row position, column position).
    """
    def generators(n):
        """An n-cycle and a transposition of range(n): they generate its symmetric group."""
        swap = {i: i for i in range(n)}
        swap[0], swap[1] = 1, 0
        return {i: (i + 1) % n for i in range(n)}, swap

    per_class = {role.partition(":")[2] for role, label in (*rows, *cols) if label[0] == "c" and len(label) == 3}

    def perms():
        for p in generators(M_value):
            yield (p, None)
        for g, n_types in shared_types.items():
            if n_types < 2:
                continue
            for p in generators(n_types):
                if g in per_class:     # the types of one class permuted, the other classes' fixed
                    yield from ((None, (g, p, k)) for k in range(M_value))
                else:
                    yield (None, (g, p))

    def act(index, perm):
        role, label = index
        pc, ps = perm
        if pc is not None:
            return (role, ("c", pc[label[1]], *label[2:])) if label[0] == "c" else index
        g = ps[0]
        if len(ps) == 2 and label[0] == "s" and label[1] == g:
            return role, ("s", g, ps[1][label[2]])
        if len(ps) == 3 and len(label) == 3 and label[0] == "c" and role == "tok:" + g and label[1] == ps[2]:
            return role, ("c", label[1], ps[1][label[2]])
        return index

    row_pos = {x: i for i, x in enumerate(rows)}
    col_pos = {x: i for i, x in enumerate(cols)}
    gens = list(perms())
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in itertools.product(range(len(rows)), range(len(cols))):
        for perm in gens:
            i2, j2 = row_pos[act(rows[i], perm)], col_pos[act(cols[j], perm)]
            a, b = find((i, j)), find((i2, j2))
            if a != b:
                parent[a] = b
    orbits = {}
    for i, j in itertools.product(range(len(rows)), range(len(cols))):
        orbits.setdefault(find((i, j)), set()).add((i, j))
    return list(orbits.values())
