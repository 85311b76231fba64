"""Index-expression helpers: ``mgrid``, ``ogrid``, ``r_``, ``c_``, ``s_`` and ``index_exp``.

>>> jnp.r_[jnp.array([1, 2]), 0, 3:5]
Array([1, 2, 0, 3, 4], dtype=int32)
"""
from __future__ import annotations

from ._core import array, asarray, promote_dtypes, stack
from .creation import arange, linspace
from .shapes import concatenate, meshgrid, moveaxis, reshape

__all__ = ["mgrid", "ogrid", "r_", "c_", "s_", "index_exp"]

class IndexExpression:
    """Index expressions written with slice syntax: ``s_[1:3, ::2]`` is
    ``(slice(1, 3), slice(None, None, 2))``; ``index_exp`` always gives a tuple (NumPy's).

    >>> jnp.s_[1:3]
    slice(1, 3, None)
    >>> jnp.index_exp[1:3]
    (slice(1, 3, None),)
    """

    def __init__(self, maketuple: bool):
        self._maketuple = maketuple

    def __getitem__(self, item):
        return (item,) if self._maketuple and not isinstance(item, tuple) else item


s_ = IndexExpression(maketuple=False)
index_exp = IndexExpression(maketuple=True)


def _range(s: slice):
    """The points of one slice: ``arange``, or ``linspace`` when its step is imaginary."""
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        return linspace(start, s.stop, int(abs(step)), endpoint=True)
    return arange(start, s.stop, step)


class _Grid:
    def __init__(self, sparse: bool, name: str):
        self.sparse, self.__name__ = sparse, name

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _range(key)
        axes = promote_dtypes(*[_range(k) for k in key])
        if self.sparse:
            n = len(axes)
            return [reshape(a, (1,) * i + (-1,) + (1,) * (n - i - 1)) for i, a in enumerate(axes)]
        return stack(meshgrid(*axes, indexing="ij"), 0)


mgrid = _Grid(sparse=False, name="mgrid")
mgrid.__doc__ = """A dense multidimensional grid from slices (imaginary steps count points).

>>> jnp.mgrid[0:2, 0:3].shape
(2, 2, 3)
"""
ogrid = _Grid(sparse=True, name="ogrid")
ogrid.__doc__ = """An open (broadcastable) multidimensional grid from slices.

>>> [g.shape for g in jnp.ogrid[0:2, 0:3]]
[(2, 1), (1, 3)]
"""


class _Concatenator:
    """Concatenation along an axis of slices, scalars and arrays, steered by NumPy's
    directive strings (``"r"``, ``"c"`` or ``"axis,ndmin,trans1d"``)."""

    def __init__(self, axis: int, ndmin: int, trans1d: int, name: str):
        self.axis, self.ndmin, self.trans1d, self.__name__ = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if key and isinstance(key[0], str):
            directive, key = key[0], key[1:]
            if directive in ("r", "c"):
                matrix = directive
            else:
                numbers = [int(v) for v in directive.split(",")]
                axis, ndmin, trans1d = (numbers + [ndmin, trans1d][len(numbers) - 1:])[:3]
        pieces = []
        for item in key:
            if isinstance(item, slice):
                piece = _range(item)
            elif isinstance(item, str):
                raise ValueError(f"only the first index may be a directive string, got {item!r}")
            else:
                piece = asarray(item)
            piece = self._lift(piece, ndmin, trans1d)
            pieces.append(piece)
        out = concatenate(promote_dtypes(*pieces), axis=axis)
        if matrix is not None:
            out = array(out, ndmin=2)
            return out.T if matrix == "c" else out
        return out

    @staticmethod
    def _lift(piece, ndmin, trans1d):
        if ndmin <= piece.ndim:
            return array(piece, ndmin=1, copy=False) if piece.ndim == 0 else piece
        k = ndmin - piece.ndim
        lifted = array(piece, ndmin=ndmin, copy=False)   # new axes in front
        if trans1d != -1:
            # the original axes move to start at position trans1d
            trans1d = trans1d % ndmin
            order = list(range(k, ndmin))
            lifted = moveaxis(lifted, list(range(k, ndmin)),
                              list(range(trans1d, trans1d + len(order))))
        return lifted


r_ = _Concatenator(axis=0, ndmin=1, trans1d=-1, name="r_")
r_.__doc__ = """Concatenation of slices, scalars and arrays along the first axis.

>>> jnp.r_[0:3, 5]
Array([0, 1, 2, 5], dtype=int32)
"""
c_ = _Concatenator(axis=-1, ndmin=2, trans1d=0, name="c_")
c_.__doc__ = """Concatenation along the last axis, 1-D pieces becoming columns.

>>> jnp.c_[jnp.array([1, 2]), jnp.array([3, 4])]
Array([[1, 3],
       [2, 4]], dtype=int32)
"""
