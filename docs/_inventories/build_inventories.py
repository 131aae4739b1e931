"""Write the intersphinx inventories shipped with the documentation (no network needed).

The build machine has no network, so ``docs/conf.py`` points intersphinx at the small
``objects.inv`` files in this folder instead of downloading the projects' inventories.
Each lists the names our pages and docstrings refer to, with their address in the
project's real online documentation (the links in the built site go there).

Regenerate after editing the tables below::

    python docs/_inventories/build_inventories.py

The build is nitpicky: a name the docs refer to but no inventory knows is a
``py:... reference target not found`` warning, which fails it (see docs/README.md).
"""
from __future__ import annotations

import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (role, uri relative to the project's base URL[, display name]); in the file a
# "#<name>" anchor is written as "#$", as Sphinx does
PYTHON = {
    "bool": ("py:class", "library/functions.html#bool"),
    "int": ("py:class", "library/functions.html#int"),
    "float": ("py:class", "library/functions.html#float"),
    "complex": ("py:class", "library/functions.html#complex"),
    "str": ("py:class", "library/stdtypes.html#str"),
    "bytes": ("py:class", "library/stdtypes.html#bytes"),
    "dict": ("py:class", "library/stdtypes.html#dict"),
    "list": ("py:class", "library/stdtypes.html#list"),
    "tuple": ("py:class", "library/stdtypes.html#tuple"),
    "set": ("py:class", "library/stdtypes.html#set"),
    "frozenset": ("py:class", "library/stdtypes.html#frozenset"),
    "object": ("py:class", "library/functions.html#object"),
    "callable": ("py:function", "library/functions.html#callable"),
    "None": ("py:data", "library/constants.html#None"),
    "True": ("py:data", "library/constants.html#True"),
    "False": ("py:data", "library/constants.html#False"),
    "Exception": ("py:exception", "library/exceptions.html#Exception"),
    "ValueError": ("py:exception", "library/exceptions.html#ValueError"),
    "TypeError": ("py:exception", "library/exceptions.html#TypeError"),
    "ArithmeticError": ("py:exception", "library/exceptions.html#ArithmeticError"),
    "pathlib.Path": ("py:class", "library/pathlib.html#pathlib.Path"),
    "argparse.ArgumentParser": ("py:class", "library/argparse.html#argparse.ArgumentParser"),
    "argparse.Namespace": ("py:class", "library/argparse.html#argparse.Namespace"),
    "typing.NamedTuple": ("py:class", "library/typing.html#typing.NamedTuple"),
    "dataclasses.dataclass": ("py:function", "library/dataclasses.html#dataclasses.dataclass"),
    "collections.abc.Callable": ("py:class", "library/collections.abc.html#collections.abc.Callable"),
    "collections.abc.Sequence": ("py:class", "library/collections.abc.html#collections.abc.Sequence"),
    "collections.abc.Mapping": ("py:class", "library/collections.abc.html#collections.abc.Mapping"),
    "collections.abc.Collection": ("py:class", "library/collections.abc.html#$"),
    "numbers.Number": ("py:class", "library/numbers.html#$"),
    "numbers.Real": ("py:class", "library/numbers.html#$"),
    "doctest": ("py:module", "library/doctest.html#module-doctest"),
    "math": ("py:module", "library/math.html#module-math"),
    "functools.lru_cache": ("py:function", "library/functools.html#functools.lru_cache"),
    # numpydoc's type cross-references (bool, sequence) point at these labels and terms
    "bltin-boolean-values": ("std:label", "library/stdtypes.html#$", "Boolean Values"),
    "sequence": ("std:term", "glossary.html#term-sequence", "sequence"),
    "iterable": ("std:term", "glossary.html#term-iterable", "iterable"),
    "mapping": ("std:term", "glossary.html#term-mapping", "mapping"),
    "json": ("py:module", "library/json.html#module-json"),
    "json.loads": ("py:function", "library/json.html#$"),
    "hashable": ("std:term", "glossary.html#term-hashable", "hashable"),
    "os.PathLike": ("py:class", "library/os.html#$"),
    "os.replace": ("py:function", "library/os.html#$"),
    "importlib.resources": ("py:module", "library/importlib.resources.html#module-importlib.resources"),
    "importlib.resources.abc.Traversable": ("py:class", "library/importlib.resources.abc.html#$"),
    "argparse.Action": ("py:class", "library/argparse.html#$"),
    "argparse.ArgumentParser.add_subparsers": ("py:method", "library/argparse.html#$"),
    "argparse.ArgumentParser.parse_known_args": ("py:method", "library/argparse.html#$"),
    "random.Random": ("py:class", "library/random.html#$"),
    "ast.parse": ("py:function", "library/ast.html#$"),
    "types.SimpleNamespace": ("py:class", "library/types.html#$"),
    "multiprocessing": ("py:module", "library/multiprocessing.html#module-multiprocessing"),
    "csv.DictReader": ("py:class", "library/csv.html#$"),
    "warnings.filterwarnings": ("py:function", "library/warnings.html#$"),
}

NUMPY = {
    "numpy": ("py:module", "reference/index.html#module-numpy"),
    "array_like": ("std:term", "glossary.html#term-array_like", "array_like"),
    "array": ("std:term", "glossary.html#term-array", "array"),
    "numpy.ndarray": ("py:class", "reference/generated/numpy.ndarray.html#$"),
    "numpy.float64": ("py:class", "reference/arrays.scalars.html#$"),
    "numpy.random.Generator": ("py:class", "reference/random/generator.html#$"),
    "numpy.random.default_rng": ("py:function", "reference/random/generator.html#$"),
    "numpy.broadcast_arrays": ("py:function", "reference/generated/numpy.broadcast_arrays.html#$"),
    "numpy.log1p": ("py:data", "reference/generated/numpy.log1p.html#$"),
    "numpy.expm1": ("py:data", "reference/generated/numpy.expm1.html#$"),
    "numpy.logaddexp": ("py:data", "reference/generated/numpy.logaddexp.html#$"),
    "numpy.asarray": ("py:function", "reference/generated/numpy.asarray.html#$"),
    "numpy.linalg.lstsq": ("py:function", "reference/generated/numpy.linalg.lstsq.html#$"),
    "numpy.bincount": ("py:function", "reference/generated/numpy.bincount.html#$"),
    "numpy.dtype": ("py:class", "reference/generated/numpy.dtype.html#$"),
}

SCIPY = {
    "scipy.integrate.solve_ivp": ("py:function", "reference/generated/scipy.integrate.solve_ivp.html#$"),
    "scipy.integrate.quad": ("py:function", "reference/generated/scipy.integrate.quad.html#$"),
    "scipy.integrate.OdeSolution": ("py:class", "reference/generated/scipy.integrate.OdeSolution.html#$"),
    "scipy.optimize.OptimizeResult": ("py:class", "reference/generated/scipy.optimize.OptimizeResult.html#$"),
    # where the class is defined (how autodoc names a base class)
    "scipy.optimize._optimize.OptimizeResult": (
        "py:class", "reference/generated/scipy.optimize.OptimizeResult.html#scipy.optimize.OptimizeResult"),
    "scipy.optimize.brentq": ("py:function", "reference/generated/scipy.optimize.brentq.html#$"),
    "scipy.special.wrightomega": ("py:function", "reference/generated/scipy.special.wrightomega.html#$"),
    "scipy.special.lambertw": ("py:function", "reference/generated/scipy.special.lambertw.html#$"),
    "scipy.special.expi": ("py:data", "reference/generated/scipy.special.expi.html#$"),
    "scipy.special.logsumexp": ("py:function", "reference/generated/scipy.special.logsumexp.html#$"),
    "scipy.special": ("py:module", "reference/special.html#module-scipy.special"),
}

SYMPY = {
    "sympy": ("py:module", "index.html#module-sympy"),
    "sympy.core.expr.Expr": ("py:class", "modules/core.html#$"),
    "sympy.core.basic.Basic": ("py:class", "modules/core.html#$"),
    "sympy.core.symbol.Symbol": ("py:class", "modules/core.html#$"),
    "sympy.core.function.Function": ("py:class", "modules/core.html#$"),
    "sympy.core.relational.Equality": ("py:class", "modules/core.html#$"),
    "sympy.core.relational.Eq": ("py:class", "modules/core.html#sympy.core.relational.Equality"),
    "sympy.Eq": ("py:class", "modules/core.html#sympy.core.relational.Equality"),
    "sympy.latex": ("py:function", "modules/printing.html#sympy.printing.latex.latex"),
    "sympy.separatevars": ("py:function", "modules/simplify/simplify.html#sympy.simplify.simplify.separatevars"),
    "sympy.lambdify": ("py:function", "modules/utilities/lambdify.html#sympy.utilities.lambdify.lambdify"),
    "sympy.srepr": ("py:function", "modules/printing.html#sympy.printing.repr.srepr"),
    "sympy.sympify": ("py:function", "modules/core.html#sympy.core.sympify.sympify"),
    "sympy.core.function.diff": ("py:function", "modules/core.html#$"),
    "sympy.core.sympify.sympify": ("py:function", "modules/core.html#$"),
    "sympy.matrices.dense.MutableDenseMatrix": ("py:class", "modules/matrices/dense.html#$"),
    "sympy.matrices.immutable.ImmutableDenseMatrix": ("py:class", "modules/matrices/immutable.html#$"),
    "sympy.simplify.simplify.simplify": ("py:function", "modules/simplify/simplify.html#$"),
    "sympy.utilities.lambdify.lambdify": ("py:function", "modules/utilities/lambdify.html#$"),
    "sympy.printing.latex.latex": ("py:function", "modules/printing.html#$"),
    "sympy.printing.repr.srepr": ("py:function", "modules/printing.html#$"),
    "sympy.functions.elementary.exponential.LambertW": ("py:class", "modules/functions/elementary.html#$"),
    "sympy.functions.special.error_functions.Ei": ("py:class", "modules/functions/special.html#$"),
    "sympy.integrals.integrals.integrate": ("py:function", "modules/integrals/integrals.html#$"),
    "sympy.solvers.solvers.solve": ("py:function", "modules/solvers/solvers.html#$"),
    # the names as SymPy exports them (sympy.X), at the address of the defining module's entry
    "sympy.Basic": ("py:class", "modules/core.html#sympy.core.basic.Basic"),
    "sympy.Expr": ("py:class", "modules/core.html#sympy.core.expr.Expr"),
    "sympy.UnevaluatedExpr": ("py:class", "modules/core.html#sympy.core.expr.UnevaluatedExpr"),
    "sympy.Dummy": ("py:class", "modules/core.html#sympy.core.symbol.Dummy"),
    "sympy.Integer": ("py:class", "modules/core.html#sympy.core.numbers.Integer"),
    "sympy.Rational": ("py:class", "modules/core.html#sympy.core.numbers.Rational"),
    "sympy.Float": ("py:class", "modules/core.html#sympy.core.numbers.Float"),
    "sympy.Matrix": ("py:class", "modules/matrices/dense.html#sympy.matrices.dense.MutableDenseMatrix"),
    "sympy.Integral": ("py:class", "modules/integrals/integrals.html#sympy.integrals.integrals.Integral"),
    "sympy.expand": ("py:function", "modules/core.html#sympy.core.function.expand"),
    "sympy.simplify": ("py:function", "modules/simplify/simplify.html#sympy.simplify.simplify.simplify"),
    "sympy.powsimp": ("py:function", "modules/simplify/simplify.html#sympy.simplify.powsimp.powsimp"),
    "sympy.together": ("py:function", "modules/polys/reference.html#sympy.polys.rationaltools.together"),
    "sympy.cancel": ("py:function", "modules/polys/reference.html#sympy.polys.polytools.cancel"),
    "sympy.printing.pycode.MpmathPrinter": ("py:class", "modules/printing.html#$"),
}

MPMATH = {
    "mpmath": ("py:module", "index.html"),
    "mpmath.findroot": ("py:function", "calculus/optimization.html#mpmath.findroot"),
    "mpmath.lambertw": ("py:function", "functions/powers.html#mpmath.lambertw"),
    "mpmath.quad": ("py:function", "calculus/integration.html#mpmath.quad"),
    "mpmath.mpf": ("py:class", "basics.html"),
}

MATPLOTLIB = {
    "matplotlib.figure.Figure": ("py:class", "api/_as_gen/matplotlib.figure.Figure.html#$"),
    "matplotlib.axes.Axes": ("py:class", "api/_as_gen/matplotlib.axes.Axes.html#$"),
    "matplotlib.figure.Figure.subplots": ("py:method", "api/_as_gen/matplotlib.figure.Figure.html#$"),
    "matplotlib.rc_context": ("py:function", "api/matplotlib_configuration_api.html#$"),
}

PROJECTS = {
    "python": ("Python", "3", PYTHON),
    "numpy": ("NumPy", "stable", NUMPY),
    "scipy": ("SciPy", "stable", SCIPY),
    "sympy": ("SymPy", "latest", SYMPY),
    "mpmath": ("mpmath", "current", MPMATH),
    "matplotlib": ("Matplotlib", "stable", MATPLOTLIB),
}


def inventory_bytes(project: str, version: str, entries: dict) -> bytes:
    """The bytes of a Sphinx version-2 inventory listing ``entries``."""
    header = ("# Sphinx inventory version 2\n"
              f"# Project: {project}\n"
              f"# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n").encode()
    lines = []
    for name in sorted(entries):
        role, uri, *display = entries[name]
        if uri.endswith("#$"):
            uri = uri[:-1] + name
        if uri.endswith("#" + name):
            uri = uri[: -len(name)] + "$"
        priority = "-1" if role.startswith("std:") else "0" if role == "py:module" else "1"
        lines.append(f"{name} {role} {priority} {uri} {display[0] if display else '-'}\n")
    return header + zlib.compress("".join(lines).encode(), 9)


def main() -> None:
    for key, (project, version, entries) in PROJECTS.items():
        path = HERE / f"{key}.inv"
        data = inventory_bytes(project, version, entries)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        print(f"{path.name}: {len(entries)} names")


if __name__ == "__main__":
    main()
