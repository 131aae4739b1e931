"""Dynamics of the models: gradient flow and gradient descent of the full-matrix model
(:mod:`numerics.dynamics.training`)."""
from .training import gradient_descent, gradient_flow

__all__ = ["gradient_flow", "gradient_descent"]
