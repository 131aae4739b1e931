"""The vocabulary module: one rule for the model parameters, importable without SymPy."""
import re
import subprocess
import sys

import numpy as np
import pytest

from derivations.core import (CIRCUITS, MAX_CLASSES, PAPER_SETTING, PARAMETERIZATIONS,
                              check_circuit, check_model_parameters, check_parameterization,
                              ov_factorized, qk_factorized)


def test_imports_without_sympy_or_numpy():
    code = ("import sys, derivations.core.vocabulary; "
            "print(sorted(k for k in ('sympy', 'numpy') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_paper_setting_is_valid():
    assert check_model_parameters(**PAPER_SETTING) == (5.0, 50.0, 50.0, 20)


@pytest.mark.parametrize("M", [2, 20, 20.0, np.int64(7), MAX_CLASSES])
def test_valid_M(M):
    assert check_model_parameters(1, 1, 1, M)[3] == int(M)


@pytest.mark.parametrize("M", [1, 0, -3, 2.5, 1e23, 10**400, MAX_CLASSES + 1, float("nan"),
                               float("inf"), True, "20", None])
def test_invalid_M_names_the_range(M):
    with pytest.raises(ValueError, match=r"M must be an integer in \[2, 9007199254740992\]"):
        check_model_parameters(1, 1, 1, M)


@pytest.mark.parametrize("name", ["m", "n", "b"])
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 10**400, False, "5"])
def test_invalid_positive(name, value):
    args = dict(PAPER_SETTING, **{name: value})
    with pytest.raises(ValueError, match=f"^{name} must be a finite number > 0"):
        check_model_parameters(**args)


@pytest.mark.parametrize("name", ["m", "n", "b"])
def test_the_paper_parameters_have_a_range(name):
    """m = 1e308 was accepted and failed deep in the flow (derivations.core.vocabulary.MODEL_PARAMETER_RANGE)."""
    from derivations.core.vocabulary import MODEL_PARAMETER_RANGE
    for value in MODEL_PARAMETER_RANGE:
        assert check_model_parameters(**dict(PAPER_SETTING, **{name: value}))[("m", "n", "b").index(name)] == value
    for value in (1e308, 1.0000001e100, 9.999999e-101, 5e-324):
        with pytest.raises(ValueError, match=rf"^{name} must be in \[1e-100, 1e\+100\] .*; got {re.escape(repr(value))}$"):
            check_model_parameters(**dict(PAPER_SETTING, **{name: value}))


def test_parameterizations_and_circuits():
    assert [(qk_factorized(p), ov_factorized(p)) for p in PARAMETERIZATIONS] == [
        (False, False), (False, True), (True, False), (True, True)]
    with pytest.raises(ValueError, match="CACO, CAFO, FACO, FAFO"):
        check_parameterization("caco")
    for name, c in CIRCUITS.items():
        assert check_circuit(name) is c
        assert c.factorized(c.only_factorized)
        assert sum(c.factorized(p) for p in PARAMETERIZATIONS) == 2
    with pytest.raises(ValueError, match="circuit must be"):
        check_circuit("XY")
    assert [t[1] for t in CIRCUITS["OV"].trained("CAFO")] == ["O", "V", "V1"]


@pytest.mark.parametrize("text, number, integer", [
    ("5", True, True), (" -12 ", True, True), ("+0.5", True, False), (".5e-3", True, False), ("5.", True, False),
    ("1E+300", True, False), ("inf", True, False), ("-Infinity", True, False), ("NaN", True, False),
    ("1_0", False, False), ("\uff15", False, False), ("\u0665", False, False), ("5\u00a0", True, True),
    ("0x10", False, False), ("", False, False), ("1e", False, False), ("\u0130nf", False, False), (5, False, False)])
def test_a_number_as_text_is_written_in_ascii_digits(text, number, integer):
    """float() reads 1_0, the full-width 5 (U+FF15) and the Arabic-Indic 5 (U+0665); is_number_text does not."""
    from derivations.core.vocabulary import is_number_text
    assert is_number_text(text) is number and is_number_text(text, integer=True) is integer
