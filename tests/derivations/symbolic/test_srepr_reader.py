"""The size bounds of the cache reader (derivations.symbolic.srepr_reader.from_srepr) at their edges: a Float's
binary exponent within +-1024 (the double range: 1e308 and 2.5e-308 are read, 1e309 and 1e-310 refused,
whatever its precision), and a power of numbers by the bits of the base's numerator or denominator, whichever
is larger (3**600 has 951 bits: (1/3**600)**200 is 190200 bits, above 100000)."""
import pytest
import sympy as sp

from derivations.symbolic.srepr_reader import LIMITS, UnsafeExpression, from_srepr


@pytest.mark.parametrize("text", ["1e308", "-1e308", "1e-300", "2.5e-308", "1.0e-307", "123.5"])
@pytest.mark.parametrize("precision", [53, 200])
def test_a_float_within_the_double_range_is_read(text, precision):
    assert from_srepr(f"Float('{text}', precision={precision})") == sp.Float(text, precision=precision)


@pytest.mark.parametrize("text", ["1e309", "-1e309", "1e-310", "1e-400", "1e400"])
def test_a_float_beyond_the_double_range_is_refused(text):
    assert LIMITS["float_exponent"] == 1024
    with pytest.raises(UnsafeExpression, match=r"beyond 2\*\*\(\+-1024\) in magnitude"):
        from_srepr(f"Float('{text}', precision=53)")


def test_a_power_is_bounded_by_the_base_denominators_bits_too():
    assert (3 ** 600).bit_length() == 951 and 951 * 200 > LIMITS["power_bits"] >= 951 * 100
    with pytest.raises(UnsafeExpression, match="power of numbers too large"):
        from_srepr(f"Pow(Rational(1, {3 ** 600}), Integer(200))")
    assert from_srepr(f"Pow(Rational(1, {3 ** 600}), Integer(100))") == sp.Rational(1, 3 ** 60000)


def test_a_power_of_one_is_not_bounded():
    """1 to any power is 1 (no bits to compute): read, whatever the exponent."""
    assert from_srepr("Pow(Integer(1), Integer(10000000))") == 1
    assert from_srepr("Pow(Integer(1), Rational(1, 10000000))") == 1


# ---------------------------------------------------------------- the plain reader and the ast reader

def _outcome(text):
    try:
        value = from_srepr(text)
    except UnsafeExpression as exc:
        return "refused", str(exc)
    return type(value).__name__, sp.srepr(value) if isinstance(value, sp.Basic) else repr(value)


@pytest.fixture
def by_ast(monkeypatch):
    """``_outcome`` with every text read by :func:`ast.parse` (the plain reader declines all)."""
    from derivations.symbolic import srepr_reader

    def decline(text):
        raise srepr_reader._NotPlain

    def outcome(text):
        with monkeypatch.context() as patch:
            patch.setattr(srepr_reader, "_plain_steps", decline)
            return _outcome(text)
    return outcome


#: Leaves of one kind each (a call, a call with assumptions, a negated integer, a singleton, an applied and an
#: unapplied undefined function, a string, an integer) and the syntax-tree nodes each adds (ast: a Call is
#: itself, its Name and the Name's Load; ``-1`` a UnaryOp, its USub and the Constant; a keyword and its value).
LEAVES = {"Integer(1)": 4, "Symbol('x', real=True)": 6, "Integer(-1)": 6, "oo": 2, "Function('F')(oo)": 7,
          "Function('F')": 4, "'x'": 1, "-1": 3, "1": 1}

#: Texts at the edges of Python's syntax and of the reader's layout: read, or refused with the same message,
#: by the plain reader and by ast.
QUIRKS = ["Function('F')(Symbol('x'))", "Function('F')", "Function('F')()", "Tuple()", "Integer(-0)",
          "Integer(- 5)", "Symbol('x', positive=True, real=False)", "Float('1.5', precision=53)",
          "Float('1e400', precision=53)", "Pow(Integer(10), Integer(1000000000000))", "Symbol('x',positive=True)",
          "Symbol('x', positive=True, positive=False)", "Symbol('x', positive=True, 'y')", "Symbol ('x')",
          "Add(Integer(1), Integer(2),)", "Integer(1) ", " Integer(1)", "Symbol('a\\x00')", "Symbol('\x00')",
          "Symbol('\ud800')", "Symbol('\u00e9')", 'Symbol("x")', "Symbol('')", "oo", "Mul(pi, E, I)",
          "Integer(" + "9" * 320 + ")", "Integer(" + "9" * 305 + ")", "Integer(" + "9" * 200 + ")", "Integer(007)",
          "Integer(0x10)", "Integer(1_000)", "Integer(1e5)", "Integer(1.5)", "Symbol(True)", "Symbol('x', True)",
          "Symbol(None)", "Function('_F')(Symbol('x'))", "Function('if')(Symbol('x'))", "Function(F)(oo)",
          "Function('F')(Symbol('x'))(Symbol('y'))", "Symbol('x')(Symbol('y'))", "Integer(1), Integer(2)",
          "(Integer(1))", "Float('1.5', precision=-1)", "Float('1.5', precision=True)", "Symbol('x', real=1)",
          "Integer(1)\n", "Integer(\n1)", "Integer(\t1)", "Integer(1)Integer(2)", "", "Integer(1) # c",
          "Symbol(u'x')", "Symbol(b'x')", "Symbol('x' 'y')", "Integer(--1)", "Integer(-Integer(1))", "lambda: 1",
          "Integer(1) if oo else oo", "Symbol('x', lambda=True)", "Symbol('x', **{})", "Add(*[])", "Symbol.x",
          "Integer(1)[0]", "Integer(1)=1", "Integer(1=1)", "oo()", "Symbol('x', real=True"]


def _syntax_refused(text) -> bool:
    """Whether :func:`_check_size` refuses the syntax tree of ``text``."""
    import ast
    from derivations.symbolic.srepr_reader import _check_size
    try:
        _check_size(ast.parse(text, mode="eval"))
    except UnsafeExpression:
        return True
    return False


@pytest.mark.parametrize("leaf", LEAVES)
def test_the_plain_reader_counts_depth_and_nodes_as_ast_does(leaf, monkeypatch):
    """At the edges of the depth and node bounds (made small here), the plain reader reads exactly the texts
    whose syntax tree is within them (it leaves the others to ast, which refuses them)."""
    from derivations.symbolic.srepr_reader import _NotPlain, _plain_steps
    monkeypatch.setitem(LIMITS, "depth", 30)
    monkeypatch.setitem(LIMITS, "nodes", 300)
    most = (LIMITS["nodes"] - 4) // LEAVES[leaf]          # Expression, and the Tuple call
    texts = ["Add(" * depth + leaf + ")" * depth for depth in range(20, 32)] + \
        ["Tuple(" + ", ".join([leaf] * count) + ")" for count in (most - 1, most, most + 1)]
    refused = [_syntax_refused(text) for text in texts]
    assert True in refused[:12] and False in refused[:12] and refused[12:] == [False, False, True]
    for text, no in zip(texts, refused):
        try:
            _plain_steps(text)
            read = True
        except _NotPlain:
            read = False
        assert read != no, (leaf, text[:60])


def _mutations(texts, count, seed=0):
    import random
    rng, pieces = random.Random(seed), [" ", "(", ")", ",", "=", "-", "'", '"', "\\", "\n", "0", "9", "_", "a",
                                        "True", "None", ".", "e", "oo", "precision=5", "real=True", "Integer("]
    for _ in range(count):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(pieces) + text[at:] if rng.random() < 0.5 else \
                text[:at] + text[at + rng.randint(1, 4):]
        yield text


def test_the_plain_reader_reads_and_refuses_as_ast_does(by_ast):
    """The quirks of Python's syntax, and damaged texts of the derivation cache: the same expression, or
    the same refusal, with or without the plain reader."""
    texts = [t for t in _shipped_texts() if len(t) < 600]
    for text in QUIRKS + list(_mutations(texts, 300)):
        assert _outcome(text) == by_ast(text), repr(text[:200])


def _shipped_texts():
    """The srepr texts of the shipped derivation cache and task cache."""
    import json
    from derivations.catalog import STORE as derived
    from derivations.task_catalog import STORE as tasks
    texts = []

    def walk(x):
        if isinstance(x, str) and x.endswith(")") and x[:1].isupper():
            texts.append(x)
        elif isinstance(x, (dict, list)):
            for v in (x.values() if isinstance(x, dict) else x):
                walk(v)
    for store in (derived, tasks):
        walk(json.loads(store.shipped.read_text(encoding="utf-8")))
    return texts


def test_the_plain_reader_reads_the_shipped_caches_as_ast_does(by_ast):
    """A sample of the texts of the shipped caches: the plain reader (no ast.parse) reads each, to the same
    expression as the ast reader."""
    import random
    from derivations.symbolic.srepr_reader import _plain_steps
    read = 0
    for text in random.Random(0).sample(_shipped_texts(), 40):
        if by_ast(text)[0] == "refused":
            continue                     # printed text of an expression, not its srepr
        _plain_steps(text)               # read without ast
        assert _outcome(text) == by_ast(text), text[:200]
        read += 1
    assert read >= 20


@pytest.mark.parametrize("text", ["Tuple({code})", "exp({code})", "Abs({code})", "Function('F')({code})",
                                  "Mul(Integer(2), Tuple({code}))", "Integer({code})"])
def test_text_is_read_only_as_a_name_or_digits(text):
    """A constructor other than those of TAKE_TEXT would ``sympify`` a text argument, which evaluates it as
    Python: refused before the call, and the code never runs."""
    import sys
    code = "\"__import__('sys').modules.__setitem__('qkov_evaluated', 1)\""
    with pytest.raises(UnsafeExpression, match="text argument of .* not allowed"):
        from_srepr(text.format(code=code))
    assert "qkov_evaluated" not in sys.modules
