r"""Attention tasks as data: what the derivation engine reduces.

A :class:`Task` describes the population of sequences a single attention
layer is trained on, in the form the theory needs (contexts by their token
*counts*, since the model has no positions):

* ``M`` classes (a symbol, or a fixed integer for numeric-only tasks);
* **token groups** (:class:`TokenGroup`). A *per-class* group has one token per
  class (``q_k``, ``r_k``, ...); a class-k context holds ``multiplicity``
  copies of its own token and ``other_multiplicity`` copies of each other
  class's token. A *shared* group has ``types`` tokens common to all classes
  (a symbol such as ``n_c`` or an integer); each class's context holds
  ``multiplicity`` copies of each. A group is embedded one-hot (one embedding
  dimension per token, scaled by ``1/sqrt(embedding_scale)``) or as zero
  vectors (no dimension; such tokens only dilute the softmax);
* the **query**: a per-class group whose class-k token is the query of class k;
  ``query_in_context`` makes the query one of the attended positions (its own
  count +1);
* the **relevant** groups: per-class groups whose total attention is ``alpha``;
* the **outputs**: ``"classes"`` (M outputs, class k labelled k) or
  ``"vocabulary"`` (one output per embedded token; class k labelled by its
  token of the per-class group ``label``);
* ``score_scale`` multiplies every attention score (the authors use
  ``1/sqrt(50)``), ``embedding_scale`` is ``b`` (one-hot / sqrt(b)).

The model (all tasks): score ``s_j = score_scale * x_q^T W_QK x_j`` over the
attended positions (softmax with the counts as multiplicities), context
``c = sum_j a_j x_j``, logits ``z = W_OV c``, loss the class-averaged
cross-entropy. Factorized circuits have ``h_QK = h_OV = M`` hidden units, one
per class (the symmetry permutes them with the classes).

Checked when built
------------------
A :class:`TokenGroup` or :class:`Task` that cannot mean anything is refused
by its constructor with a ``ValueError`` naming the problem
(:mod:`derivations.engine.checks`): groups that are not :class:`TokenGroup`
objects; a description holding control characters other than newlines and tabs; counts that are not finite and ``>= 0`` for every value of the
parameters (``nan``, ``oo``, ``I``, ``m - n``) or are no expression
(``"m+"``); shared ``types`` that are not positive integers; scales that are
not ``> 0``; symbols other than ``m, n, b, M`` and the declared parameters;
a relevant group that is the query or has no copies in its class's context;
``classes`` other than ``M`` or an integer in ``[2, 2**53]``.

>>> TokenGroup("r", per_class=True, multiplicity="m - n")
Traceback (most recent call last):
...
ValueError: group 'r': multiplicity must be a finite expression >= 0 for every value of the parameters; got m - n

What the symbolic engine supports (:func:`Task.check_symbolic`)
---------------------------------------------------------------
``M`` symbolic; outputs ``"classes"``; every per-class group has
``other_multiplicity == 0`` (a context holds only its own class's tokens and
shared tokens); the query group is embedded; at least one relevant group;
``score_scale == 1``. Anything else raises ``ValueError`` naming the problem
(such tasks -- e.g. :data:`derivations.tasks.TASKS` ``["authors"]`` -- are still valid for the
NumPy full-matrix model through :meth:`Task.instance`).

Example
-------
>>> from derivations.tasks import get_task
>>> task = get_task("shared-irrelevant")
>>> [g.name for g in task.groups], task.parameter_names()
(['q', 'r', 'u'], ('n_c',))
>>> inst = task.instance(M=2, values={"m": 5, "n": 50, "b": 50, "n_c": 2})
>>> inst.d, inst.n_out, inst.token_names
(6, 2, ['q_0', 'q_1', 'r_0', 'r_1', 'u_0', 'u_1'])
>>> inst.counts[0]
[0.0, 0.0, 5.0, 0.0, 25.0, 25.0]
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

import sympy as sp

from ..core.vocabulary import PAPER_SETTING
from ..symbolic.symbols import M, b, m, n
from .checks import MAX_INTEGER, _check_parameter_name, _exact_integer as _integer_or_none, check_expression, \
    validate_parameter
from .expressions import placeholder
from .instance import TaskInstance, build_instance

__all__ = ["Task", "TokenGroup", "TASK_PARAMETERS", "MODEL_SYMBOLS", "NAME_PATTERN", "n_c"]


#: Number of shared irrelevant token types of ``shared-irrelevant`` (a positive integer).
n_c = sp.Symbol("n_c", positive=True, integer=True)

#: Task parameters beyond the paper's (name -> symbol).
TASK_PARAMETERS = {"n_c": n_c}
#: The symbols a task may use without declaring them: the paper's m, n, b, M.
MODEL_SYMBOLS = {"m": m, "n": n, "b": b, "M": M}

#: A task's name: a letter, then at most 63 letters, digits or ``_ - + .`` (it is typed as ``--task NAME``
#: and printed on one line).
NAME_PATTERN = r"[A-Za-z][A-Za-z0-9_+.-]{0,63}"


@dataclass(frozen=True)
class TokenGroup:
    """A group of token types (see the module docstring).

    Attributes
    ----------
    name : str
        Short name, used for token labels ``<name>_<index>``.
    per_class : bool
        True: one token per class; False: ``types`` tokens shared by all classes.
    multiplicity : sympy.Expr or number
        Copies in a class's context of its own token (per-class) or of each shared type.
    other_multiplicity : sympy.Expr or number
        Per-class groups: copies of each *other* class's token (0 in the symbolic engine).
    types : sympy.Expr or int
        Number of types: of a shared group, or per class of a per-class group (``R`` relevant
        types per class, exchangeable); a positive integer or a positive-integer parameter.
    embedded : bool
        One-hot (scaled by ``1/sqrt(embedding_scale)``) if True, zero vector otherwise.
    """
    name: str
    per_class: bool
    multiplicity: object = 0
    other_multiplicity: object = 0
    types: object = 1
    embedded: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"TokenGroup name must be an identifier; got {self.name!r}")
        for attr in ("per_class", "embedded"):
            if not isinstance(getattr(self, attr), bool):
                raise ValueError(f"group {self.name!r}: {attr} must be True or False; got {getattr(self, attr)!r}")
        names = dict(MODEL_SYMBOLS)     # other names: placeholders, resolved by the task (Task.parameters)
        for attr in ("multiplicity", "other_multiplicity"):
            object.__setattr__(self, attr, check_expression(f"group {self.name!r}: {attr}", getattr(self, attr),
                                                            "nonnegative", names=names))
        object.__setattr__(self, "types", check_expression(f"group {self.name!r}: types", self.types,
                                                           "positive integer", names=names))
        if not self.per_class and self.other_multiplicity != 0:
            raise ValueError(f"group {self.name!r}: other_multiplicity applies to per-class groups only")


@dataclass(frozen=True)
class Task:
    """An attention task (see the module docstring for the fields' meaning).

    Attributes
    ----------
    name, description : str
    groups : tuple[TokenGroup, ...]
    query : str
        Name of the per-class, embedded group holding the queries.
    query_in_context : bool
    relevant : tuple[str, ...]
        Names of the relevant per-class groups (alpha = their total attention).
    outputs : {"classes", "vocabulary"}
    label : str or None
        With ``outputs="vocabulary"``: the per-class embedded group of label tokens.
    classes : sympy.Expr or int
        The number of classes (the symbol ``M`` or a fixed integer).
    embedding_scale, score_scale : sympy.Expr or number
    parameters : tuple[str, ...]
        Names of the task's own parameters, e.g. ``("n_c",)`` or ``("s", "R")``. A parameter
        whose default is an integer is a positive integer (``>= 1``; it may count types or
        copies); one with another default is a positive real. ``n_c`` needs no default.
    defaults : tuple[tuple[str, float], ...]
        Default values of parameters for numeric use (the paper's setting for m, n, b, M);
        a dict is accepted.
    """
    name: str
    description: str
    groups: tuple
    query: str
    query_in_context: bool = False
    relevant: tuple = ("r",)
    outputs: str = "classes"
    label: object = None
    classes: object = M
    embedding_scale: object = b
    score_scale: object = 1
    parameters: tuple = ()
    defaults: tuple = tuple(PAPER_SETTING.items())

    def __post_init__(self):
        if not isinstance(self.name, str) or not re.fullmatch(NAME_PATTERN, self.name):
            raise ValueError("task name must be a letter, then at most 63 letters, digits or _ - + . ; got "
                             f"{self.name!r}"[:200])
        if not isinstance(self.description, str) or any(unicodedata.category(c) == "Cc" and c not in "\n\t"
                                                        for c in self.description):
            raise ValueError(f"task {self.name!r}: description must be text without control characters other "
                             f"than newlines and tabs (a terminal would act on them); got {self.description!r}"[:300])
        if isinstance(self.defaults, dict):
            object.__setattr__(self, "defaults", tuple(self.defaults.items()))
        for attr in ("groups", "relevant", "parameters", "defaults"):
            value = getattr(self, attr)
            if isinstance(value, str) or not hasattr(value, "__iter__"):
                raise ValueError(f"task {self.name!r}: {attr} must be a tuple; got {value!r}")
            object.__setattr__(self, attr, tuple(value))
        if not isinstance(self.query_in_context, bool):
            raise ValueError(f"task {self.name!r}: query_in_context must be True or False; "
                             f"got {self.query_in_context!r}")
        self._check_groups()
        self._check_parameters()
        self._check_numbers()
        self._check_roles()

    def _check_parameters(self):
        """Own parameters: identifiers, distinct, not the paper's; defaults valid; groups' names resolved."""
        for p in self.parameters:
            _check_parameter_name(self.name, p)
        if len(set(self.parameters)) != len(self.parameters):
            raise ValueError(f"task {self.name!r}: parameters must be distinct; got {self.parameters}")
        for item in self.defaults:
            if not (isinstance(item, tuple) and len(item) == 2 and item[0] in self.symbols()):
                raise ValueError(f"task {self.name!r}: defaults must be (name, value) pairs of its parameters "
                                 f"({', '.join(self.symbols())}); got {item!r}")
            self.validate(*item)
        table = self.symbols()
        resolve = {placeholder(p): table[p] for p in self.parameters}
        groups = []
        for g in self.groups:
            new = {a: sp.sympify(getattr(g, a)).xreplace(resolve) for a in ("multiplicity", "other_multiplicity",
                                                                            "types")}
            groups.append(g if all(new[a] == getattr(g, a) for a in new) else replace(g, **new))
        object.__setattr__(self, "groups", tuple(groups))

    def _check_groups(self):
        if not self.groups:
            raise ValueError(f"task {self.name!r}: at least one token group is needed")
        for g in self.groups:
            if not isinstance(g, TokenGroup):
                raise ValueError(f"task {self.name!r}: groups must be TokenGroup objects; got {g!r}")
        names = [g.name for g in self.groups]
        if len({unicodedata.normalize("NFKC", x) for x in names}) != len(names):
            raise ValueError(f"task {self.name!r}: group names must be distinct, also as Python reads identifiers "
                             f"(NFKC-normalized); got {names}"[:400])

    def _check_numbers(self):
        """Known parameters; scales positive; every symbol known; classes M or an integer in [2, 2**53]."""
        known = self.symbols()
        for attr in ("embedding_scale", "score_scale"):
            object.__setattr__(self, attr, check_expression(f"task {self.name!r}: {attr}", getattr(self, attr),
                                                            "positive", set(known.values()), known))
        for g in self.groups:
            for attr in ("multiplicity", "other_multiplicity", "types"):
                check_expression(f"task {self.name!r}: group {g.name!r}: {attr}", getattr(g, attr),
                                 "positive integer" if attr == "types" else "nonnegative", set(known.values()))
        classes = self.classes
        if not (isinstance(classes, sp.Basic) and classes == M):
            v = None if isinstance(classes, bool) else _integer_or_none(classes)
            if v is None or not 2 <= v <= MAX_INTEGER:
                raise ValueError(f"task {self.name!r}: classes must be the symbol M or an integer in "
                                 f"[2, 2**53]; got {classes!r}")
            classes = sp.Integer(v)
        object.__setattr__(self, "classes", classes)

    def _check_roles(self):
        """The query, the relevant groups and the outputs."""
        if not isinstance(self.query, str):
            raise ValueError(f"task {self.name!r}: query must be a group name; got {self.query!r}")
        q = self.group(self.query)
        if not q.per_class:
            raise ValueError(f"task {self.name!r}: the query group {self.query!r} must be per-class")
        if q.types != 1:
            raise ValueError(f"task {self.name!r}: the query group {self.query!r} has one type per class (types = 1)")
        if not q.embedded:
            raise ValueError(f"task {self.name!r}: the query group {self.query!r} must be embedded "
                             "(a zero query attends uniformly and learns nothing)")
        if not self.relevant:
            raise ValueError(f"task {self.name!r}: at least one relevant group is needed")
        if len(set(self.relevant)) != len(self.relevant):
            raise ValueError(f"task {self.name!r}: relevant groups must be distinct; got {self.relevant}")
        for r_ in self.relevant:
            if not isinstance(r_, str):
                raise ValueError(f"task {self.name!r}: relevant must hold group names; got {r_!r}")
            g = self.group(r_)
            if not g.per_class:
                raise ValueError(f"task {self.name!r}: relevant group {r_!r} must be per-class")
            if r_ == self.query:
                raise ValueError(f"task {self.name!r}: the query group {r_!r} cannot be relevant "
                                 "(relevant tokens are the context tokens the query should attend to)")
            if sp.sympify(self.own_count(g)).is_zero:
                raise ValueError(f"task {self.name!r}: relevant group {r_!r} has no copies in its class's "
                                 "context (multiplicity 0): its attention alpha would be 0 forever")
        if self.outputs not in ("classes", "vocabulary"):
            raise ValueError(f"task {self.name!r}: outputs must be 'classes' or 'vocabulary'; got {self.outputs!r}")
        if self.outputs == "vocabulary":
            if (not isinstance(self.label, str) or not self.group(self.label).per_class
                    or not self.group(self.label).embedded or self.group(self.label).types != 1):
                raise ValueError(f"task {self.name!r}: outputs='vocabulary' needs label = an embedded per-class group")

    # ------------------------------------------------------------ structure
    def group(self, name: str) -> TokenGroup:
        """The group called ``name`` (ValueError if there is none).

        Parameters
        ----------
        name : str

        Returns
        -------
        TokenGroup

        Raises
        ------
        ValueError
            If the task has no group ``name`` (the message lists its groups).
        """
        for g in self.groups:
            if g.name == name:
                return g
        raise ValueError(f"task {self.name!r} has no token group {name!r} "
                         f"(groups: {', '.join(g.name for g in self.groups)})")

    def parameter_names(self) -> tuple:
        """The task's own parameters (beyond m, n, b, M)."""
        return tuple(self.parameters)

    def integer_parameter(self, name: str) -> bool:
        """Whether parameter ``name`` (the task's own, or M) takes positive integers only.

        Parameters
        ----------
        name : str
            A parameter name; ``M`` is an integer, ``m``, ``n``, ``b`` and unknown names are not.

        Returns
        -------
        bool
            For the task's own parameters: an integer default, or (no default) a name
            :data:`TASK_PARAMETERS` declares.
        """
        if name == "M":
            return True
        if name not in self.parameters:
            return False
        default = dict(self.defaults).get(name)
        if default is None:
            return name in TASK_PARAMETERS
        return isinstance(default, (int, sp.Integer)) and not isinstance(default, bool)

    def symbols(self) -> dict:
        """``{name: sympy.Symbol}`` of every parameter: m, n, b, M and the task's own."""
        return {**MODEL_SYMBOLS, **{p: sp.Symbol(p, positive=True, integer=True) if self.integer_parameter(p)
                                    else sp.Symbol(p, positive=True) for p in self.parameters}}

    def validate(self, name: str, value):
        """``value`` of parameter ``name`` checked by its domain (:func:`validate_parameter`):
        ``M`` an integer >= 2; an integer parameter >= 1; others finite > 0.

        Parameters
        ----------
        name : str
        value : int, float, str or sympy.Expr

        Returns
        -------
        sympy.Integer or sympy.Float

        Raises
        ------
        ValueError
            If ``value`` is outside the domain; the message names ``name`` and the range.
        """
        return validate_parameter(name, value, integer=self.integer_parameter(name))

    def own_count(self, group: TokenGroup):
        """Copies of a class's own token of a per-class ``group`` among the attended
        positions (the query's +1 when it is in its own context).

        Parameters
        ----------
        group : TokenGroup

        Returns
        -------
        sympy.Expr
        """
        extra = 1 if (self.query_in_context and group.name == self.query) else 0
        return group.multiplicity + extra

    def free_symbols(self) -> set:
        """Every symbol the task's counts, scales and class number depend on."""
        out = set()
        for g in self.groups:
            for e in (g.multiplicity, g.other_multiplicity, g.types):
                out |= e.free_symbols
        for e in (self.classes, self.embedding_scale, self.score_scale):
            out |= e.free_symbols
        return out

    def why_not_symbolic(self):
        """None when the symbolic engine supports the task, else the first construction it
        does not support (the message of :meth:`check_symbolic`)."""
        if self.classes != M:
            return f"task {self.name!r}: the symbolic engine needs M symbolic; got classes={self.classes}"
        if self.outputs != "classes":
            return f"task {self.name!r}: the symbolic engine supports outputs='classes' only"
        if self.score_scale != 1:
            return f"task {self.name!r}: the symbolic engine supports score_scale = 1 only"
        for g in self.groups:
            if g.per_class and g.other_multiplicity != 0:
                return (f"task {self.name!r}: group {g.name!r} puts other classes' tokens in a "
                        "context (other_multiplicity != 0); the symbolic engine does not support it")
        return None

    def check_symbolic(self) -> "Task":
        """``self``, if the symbolic engine supports the task.

        Raises
        ------
        ValueError
            :meth:`why_not_symbolic`'s reason.
        """
        why = self.why_not_symbolic()
        if why is not None:
            raise ValueError(why)
        return self

    # ------------------------------------------------------------ numbers
    def layout(self, M_value: int, types: dict) -> list:
        """The token types of a concrete instance, in :class:`TaskInstance` order:
        ``[(group, class index or None, type index or None), ...]``, embedded
        types first (their position is their embedding dimension), then the
        zero-embedded ones; within each, groups in order, classes then types in order.
        ``types`` maps a group's name to its number of types (needed for shared groups
        and per-class groups of several types; a per-class group of one type has type
        index None).

        Parameters
        ----------
        M_value : int
            Number of classes.
        types : dict of str to int
            Group name -> number of types, for groups whose ``types`` is a symbol.

        Returns
        -------
        list of tuple
        """
        out = []
        for embedded in (True, False):
            for g in self.groups:
                if g.embedded != embedded:
                    continue
                n_types = int(types.get(g.name, 1) if g.types.free_symbols else g.types)
                if g.per_class and g.types == 1:
                    out += [(g, k, None) for k in range(M_value)]
                elif g.per_class:
                    out += [(g, k, i) for k in range(M_value) for i in range(n_types)]
                else:
                    out += [(g, None, i) for i in range(n_types)]
        return out

    @staticmethod
    def token_name(group: TokenGroup, k, i) -> str:
        """``q_3`` (class 3), ``u_2`` (shared type 2), ``r_3_1`` (class 3, type 1).

        Parameters
        ----------
        group : TokenGroup
        k, i : int or None
            Class index and type index (None where there is none).

        Returns
        -------
        str
        """
        return "_".join(str(x) for x in (group.name, k, i) if x is not None)

    def instance(self, M: int | None = None, values: dict | None = None) -> TaskInstance:
        """The task with numbers: see :class:`TaskInstance` and :mod:`derivations.engine.instance`.

        Parameters
        ----------
        M : int, optional
            Number of classes (default: ``values["M"]`` or the task's default, 20).
        values : dict, optional
            ``{"m": 5, "n": 50, "b": 50, "n_c": 2, ...}``; missing ones take the
            task's defaults.

        Returns
        -------
        TaskInstance

        Raises
        ------
        ValueError
            An unknown name or invalid value; an instance larger than
            :data:`~derivations.engine.instance.MAX_TYPES` token types or
            :data:`~derivations.engine.instance.MAX_ENTRIES` count entries (checked
            before it is built); a count above 2**53.
        """
        return build_instance(self, M, values)
