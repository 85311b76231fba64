"""fnx.experimental.jet: Taylor-mode automatic differentiation (JAX's
``jax.experimental.jet``): the derivatives of a function along a curve through its inputs, to
any order, in one pass.

>>> from fnx.experimental.jet import jet
>>> y, (y1, y2) = jet(jnp.exp, (0.0,), ((1.0, 0.0),))
>>> float(y), float(y1), float(y2)
(1.0, 1.0, 1.0)
"""
from ..core.jet import jet as _jet

__all__ = ["jet"]


def jet(fun, primals, series):
    """``(fun(*primals), series_out)``: each argument moves along ``x(t) = x + x1 t + x2 t**2/2!
    + ...`` given by its ``series`` ``[x1, x2, ...]`` (every series of one length ``K``);
    ``series_out`` holds the output's first ``K`` derivatives in ``t`` at 0, per output leaf.

    >>> y, terms = jet(lambda x: x ** 3, (2.0,), ((1.0, 0.0, 0.0),))
    >>> y, [float(t) for t in terms]       # 3x**2, 6x, 6
    (Array(8., dtype=float32, weak_type=True), [12.0, 12.0, 6.0])
    """
    return _jet(fun, primals, series)
