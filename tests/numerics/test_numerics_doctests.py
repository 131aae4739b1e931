"""The numerics subpackages export their API (the docstring examples run under pytest's --doctest-modules)."""


def test_subpackages_export_their_api_and_old_paths_forward():
    import subprocess
    import sys

    import numerics.dynamics as dynamics
    import numerics.functions as functions
    for package in (dynamics, functions):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
    # the documented import paths keep working and give the same objects
    from numerics.closed_form import State, state_at_loss, state_at_loss_mpmath, time_to_loss
    from numerics.dynamics import closed_form
    assert (state_at_loss, time_to_loss, state_at_loss_mpmath) == (
        closed_form.state_at_loss, closed_form.time_to_loss, closed_form.state_at_loss_mpmath)
    assert State is dynamics.StateAtLoss
    from numerics.bounded_ivp import solve_bounded
    from numerics.lambdified import alpha_fn, reduced_rhs
    from numerics.reduced_ode import solve_reduced
    from numerics.reduced_system import ReducedSystem
    from numerics.task_state import (TaskReducedSystem, family_system, reduced_system,
                                     task_parameters, task_reduction, task_state_at_loss)
    from numerics.trajectory import Trajectory
    from numerics.validation import check_times
    assert ReducedSystem is dynamics.ReducedSystem and TaskReducedSystem is dynamics.LambdifiedFlow
    assert all(callable(f) for f in (solve_bounded, solve_reduced, Trajectory, alpha_fn,
                                     reduced_rhs, check_times, family_system, reduced_system,
                                     task_parameters, task_reduction, task_state_at_loss))
    import numerics.lambdified as lam
    assert str(lam.PARAMS[0]) == "m"          # the SymPy-side names, on demand
    # the closed form's cold path imports neither SymPy nor SciPy's integrators
    code = ("import sys\nfrom numerics.closed_form import state_at_loss\nstate_at_loss(0.5, 10.0)\n"
            "print(sorted(k for k in ('sympy', 'scipy.integrate') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
