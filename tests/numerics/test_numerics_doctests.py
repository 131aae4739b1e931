"""The numerics subpackages export their API (the docstring examples run under pytest's --doctest-modules)."""


def test_subpackages_export_their_api():
    import subprocess
    import sys

    import numerics.dynamics as dynamics
    import numerics.functions as functions
    for package in (dynamics, functions):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
    from numerics.dynamics import closed_form
    assert dynamics.time_to_loss is closed_form.time_to_loss
    assert dynamics.state_at_loss_mpmath is closed_form.state_at_loss_mpmath
    # the closed form's cold path imports neither SymPy nor SciPy's integrators
    code = ("import sys\nfrom numerics.dynamics import state_at_loss\nstate_at_loss(0.5, 10.0)\n"
            "print(sorted(k for k in ('sympy', 'scipy.integrate') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
