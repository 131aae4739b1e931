"""The check that the symmetry step's orbits are the equality patterns of an explicit instance."""
import itertools

from derivations.engine.explicit import _explicit_indices
from derivations.engine.symmetry import canonical, orbit_size, orbits_by_generators
from derivations.symbolic import M


def assert_orbits_are_patterns(task, group, count_symbol, Mv=3, count=2):
    """For every matrix of ``task``'s instance with ``Mv`` classes and ``count`` types of ``group``:
    the orbits found from the generators are exactly the sets of entries of one equality pattern,
    and each pattern's symbolic orbit size (``count_symbol`` types) counts them."""
    types = {group: count}
    for name, (rows, cols) in _explicit_indices(task, Mv, types).items():
        orbits = orbits_by_generators(rows, cols, Mv, types)
        by_pattern = {}
        for i, j in itertools.product(range(len(rows)), range(len(cols))):
            by_pattern.setdefault(canonical((rows[i], cols[j])), set()).add((i, j))
        assert sorted(map(sorted, orbits)) == sorted(map(sorted, by_pattern.values())), name
        for pat, members in by_pattern.items():
            assert orbit_size(pat, M, {group: count_symbol}).subs({M: Mv, count_symbol: count}) == len(members)
