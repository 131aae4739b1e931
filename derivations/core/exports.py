"""How a subpackage exports its API without importing every module at once (PEP 562).

A package's ``__init__`` names what it exports in ``__all__`` and where each
name lives; :func:`lazy_exports` gives it the module ``__getattr__`` and
``__dir__`` that import a name's module on first use. ``from package import
name`` works as with eager imports, but a command that needs one module of a
package (``print_dynamics`` looking up a task) does not pay for the others.

Plain Python, as the rest of :mod:`derivations.core`.
"""
import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: dict):
    """``__getattr__`` and ``__dir__`` (PEP 562) of a package that exports the names of
    its modules without importing them.

    ``homes`` maps each module (relative to ``package``: ``".reduce"``,
    ``"..engine.task"``) to the names the package exports from it. A name is
    imported from its module on first access (``from package import name``
    included) and then kept as an attribute of the package, so that importing
    one module of a package (the command line that needs three of them) does
    not import the others. Unknown names raise AttributeError, as usual.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    homes : dict of str to sequence of str
        Module (relative to ``package``) to the names exported from it.

    Returns
    -------
    tuple of callable
        The module-level ``__getattr__(name)`` and ``__dir__()`` of ``package``.

    >>> import derivations.engine as engine
    >>> engine.reduce_task.__module__
    'derivations.engine.reduce'
    """
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
