"""Special functions that the derivations introduce beyond SymPy's own.

:class:`wright_omega` is the Wright omega function, omega(z) = W(e^z) with W
the principal branch of Lambert W. Orbits of the reduced dynamics come out of
``sympy.solve`` as ``LambertW(x * exp(y))``; for large ``y`` that argument
overflows double precision although the value (about ``y``) is harmless, so
:func:`lambert_to_wright_omega` rewrites them as ``wright_omega(y + log(x))``.
Numeric code maps it to :func:`numerics.functions.special_functions.wright_omega` (a
vectorized iteration, as in :func:`scipy.special.wrightomega`).

>>> import sympy as sp
>>> x, y = sp.symbols("x y", positive=True)
>>> lambert_to_wright_omega(sp.LambertW(x * sp.exp(y)))
wright_omega(y + log(x))
>>> wright_omega(0).rewrite(sp.LambertW)
LambertW(1)
"""
import sympy as sp

__all__ = ["wright_omega", "lambert_to_wright_omega"]


class wright_omega(sp.Function):
    r"""Wright omega function :math:`\omega(z) = W_0(e^z)`, the solution of
    :math:`\omega + \log\omega = z` (for real z)."""

    @classmethod
    def eval(cls, z):
        """Automatic evaluation: omega(oo) = oo and omega(0) = W_0(1); otherwise unevaluated.

        Parameters
        ----------
        z : sympy.Expr
            The argument.

        Returns
        -------
        sympy.Expr or None
            The value, or None to leave ``wright_omega(z)`` unevaluated.
        """
        if z is sp.S.Infinity:
            return sp.S.Infinity
        if z.is_Number and z.is_zero:
            return sp.LambertW(1)

    def fdiff(self, argindex=1):
        r"""The derivative :math:`\omega'(z) = \omega/(1 + \omega)`.

        Parameters
        ----------
        argindex : int, optional
            The argument differentiated by (the only one). Default 1.

        Returns
        -------
        sympy.Expr
        """
        w = self
        return w / (1 + w)

    def _eval_rewrite_as_LambertW(self, z, **kwargs):
        return sp.LambertW(sp.exp(z))

    def _eval_is_positive(self):
        if self.args[0].is_real:
            return True

    def _eval_is_real(self):
        if self.args[0].is_real:
            return True

    def _latex(self, printer, exp=None):
        tex = r"\omega\left(%s\right)" % printer._print(self.args[0])
        return tex if exp is None else r"\omega^{%s}\left(%s\right)" % (exp, printer._print(self.args[0]))


def lambert_to_wright_omega(expr):
    """Replace every ``LambertW(arg)`` by ``wright_omega(log(arg))``, with the
    logarithm expanded so that no ``exp`` of a large argument remains.

    Parameters
    ----------
    expr : sympy.Expr

    Returns
    -------
    sympy.Expr
    """
    def repl(arg):
        return wright_omega(sp.expand_log(sp.log(arg), force=True))
    return expr.replace(sp.LambertW, repl)
