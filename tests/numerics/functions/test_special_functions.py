"""The special functions of the generated code against independent computations (NumPy, mpmath)."""
import itertools
import math

import mpmath
import numpy as np
import pytest

from numerics.functions.special_functions import logaddexp_math

VALUES = [-math.inf, -1e308, -745.0, -1.0, 0.0, 1e-300, 2.5, 700.0, 1e308, math.inf]


def test_logaddexp_math_is_exact_to_an_ulp_and_never_a_silent_nan():
    """log(e^a + e^b) of every pair of VALUES to 1 ulp of mpmath at 400 digits, and where the sum is 0 or inf
    NumPy's logaddexp: both -inf gave nan (-inf - -inf in the shift) where the log is -inf, both inf nan where it
    is inf."""
    for a, b in itertools.product(VALUES, VALUES):
        with np.errstate(over="ignore"):        # NumPy's own a - b overflows at -1e308, 1e308
            got, want = logaddexp_math(a, b), float(np.logaddexp(a, b))
        assert isinstance(got, float) and not math.isnan(got), (a, b, got)
        if math.isinf(want):
            assert got == want, (a, b, got)
            continue
        with mpmath.workdps(400):
            exact = float(mpmath.log(mpmath.exp(mpmath.mpf(a)) + mpmath.exp(mpmath.mpf(b))))
        assert got == pytest.approx(exact, rel=2.3e-16, abs=5e-324), (a, b)
