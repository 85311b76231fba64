"""fnx.numpy: NumPy's API on fnx arrays, differentiable and batchable.

>>> import fnx.numpy as jnp
>>> jnp.sum(jnp.arange(4.0) ** 2)
Array(14., dtype=float32)
"""
import numpy as _np

from ..core.core import Array as ndarray
from .scalar_types import *  # noqa: F401,F403
from .scalar_types import (bool_, bfloat16, complex64, complex128, float16, float32,  # noqa
                           float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from ..core.dtypes import finfo, iinfo, issubdtype  # noqa: F401
from ._core import canonicalize_axis as _canonicalize_axis
from ._core import (AxisError, array, asarray, astype, broadcast_arrays, broadcast_shapes,
                    broadcast_to, promote_types, result_type, stack)
from .creation import *  # noqa: F401,F403
from .creation import arange, copy, empty, empty_like, eye, full, full_like, identity, linspace, \
    logspace, ones, ones_like, tri, zeros, zeros_like
from .indexing import (argwhere, diag_indices, diag_indices_from, flatnonzero, indices, ix_,
                       nonzero, ravel_multi_index, take, take_along_axis, tril_indices,
                       tril_indices_from, triu_indices, triu_indices_from, unravel_index)
from .products import (convolve, correlate, cross, dot, einsum, inner, kron, matmul, matvec,
                       outer, polyval, tensordot, vander, vdot, vecdot, vecmat)
from .reductions import (all, amax, amin, any, argmax, argmin, average, corrcoef, count_nonzero,
                         cov, cumprod, cumsum, cumulative_prod, cumulative_sum, diff, ediff1d, max,
                         mean, median, min, nanargmax, nanargmin, nancumprod, nancumsum, nanmax,
                         nanmean, nanmedian, nanmin, nanpercentile, nanprod, nanquantile, nanstd,
                         nansum, nanvar, percentile, prod, ptp, quantile, std, sum, trace,
                         trapezoid, var)
from .padding import pad  # noqa: F401
from .windows import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
from .polynomial import *  # noqa: F401,F403
from .setops1d import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .updates import *  # noqa: F401,F403
from .ordering import *  # noqa: F401,F403
from .assembly import *  # noqa: F401,F403
from .functional import *  # noqa: F401,F403
from .calculus import *  # noqa: F401,F403
from .bits import *  # noqa: F401,F403
from .host import *  # noqa: F401,F403
from .histograms import *  # noqa: F401,F403
from .shapes import (append, array_split, atleast_1d, atleast_2d, atleast_3d, column_stack, concat,
                     concatenate, delete, diag, diagonal, dsplit, dstack, expand_dims, flip,
                     fliplr, flipud, hsplit, hstack, insert, matrix_transpose, meshgrid, moveaxis,
                     permute_dims, ravel, repeat, reshape, resize, roll, rot90, split,
                     squeeze, swapaxes, tile, transpose, tril, triu, unstack,
                     vsplit, vstack)
from .sorting import (argsort, bincount, digitize, histogram, histogram_bin_edges, interp, isin,
                      lexsort, searchsorted, sort)
from .setops import unique, unique_all, unique_counts, unique_inverse, unique_values
from .ufuncs import *  # noqa: F401,F403
# the star imports above also bring their modules' own helpers, which are not NumPy's API
del get_aval, concrete_or_error, promote_and_broadcast, promote_dtypes  # noqa: F821
del promote_dtypes_inexact  # noqa: F821
from .ufuncs import abs, absolute, add, divide, equal, exp, log, maximum, minimum  # noqa
from .ufunc_objects import *  # noqa: F401,F403  (add, multiply, ...: with ufunc methods)
from .indexing import where  # noqa: F401  (three arguments, or one: nonzero)
from . import array_methods as _array_methods  # noqa: F401  (installs operators)
from . import linalg  # noqa: E402,F401
from . import fft  # noqa: E402,F401  (jnp.fft, as jax.numpy.fft)
from .vectorize import vectorize  # noqa: E402,F401
from .dlpack import from_dlpack  # noqa: E402,F401
from .array_api import (__array_api_version__, __array_namespace_info__,  # noqa: E402,F401
                        can_cast, isdtype, pow)

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
newaxis = None
bool = bool_  # noqa: A001
integer, floating, inexact, number = _np.integer, _np.floating, _np.inexact, _np.number
complexfloating = _np.complexfloating
signedinteger, unsignedinteger = _np.signedinteger, _np.unsignedinteger


def dtype(obj, align=False, copy=False):
    """``np.dtype`` (``jnp.dtype`` is NumPy's, as in JAX: it canonicalizes nothing).

    >>> jnp.dtype("float32")
    dtype('float32')
    """
    return _np.dtype(obj, align, copy)


def isscalar(x):
    """Whether ``element`` is a scalar: a Python or NumPy number, or a 0-d array.

    >>> jnp.isscalar(1.0), jnp.isscalar(jnp.ones(2))
    (True, False)
    """
    return _np.isscalar(x) or (hasattr(x, "ndim") and x.ndim == 0)


def shape(a):
    """The shape of ``a``.

    >>> jnp.shape(jnp.ones((2, 3)))
    (2, 3)
    """
    return _np.shape(a) if not hasattr(a, "shape") else tuple(a.shape)


def ndim(a):
    """The number of dimensions of ``a``.

    >>> jnp.ndim(jnp.ones((2, 3)))
    2
    """
    return len(shape(a))


def size(a, axis=None):
    """The number of elements of ``a``, or along ``axis`` (an int or a tuple of them).

    >>> jnp.size(jnp.ones((2, 3))), jnp.size(jnp.ones((2, 3)), 1)
    (6, 3)
    """
    dims = shape(a)
    if axis is None:
        return int(_np.prod(dims, dtype=_np.int64))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return int(_np.prod([dims[_canonicalize_axis(i, len(dims), "size")] for i in axes],
                        dtype=_np.int64))

from ..core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line
