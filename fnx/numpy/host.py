"""Host-side helpers JAX re-exports from NumPy or wraps thinly: printing, files, parsing and
``einsum_path`` (which plans a contraction from shapes alone)."""
from __future__ import annotations

import numpy as np

from ._core import asarray

__all__ = ["array_repr", "array_str", "printoptions", "get_printoptions", "set_printoptions",
           "save", "savez", "load", "fromfile", "fromiter", "fromstring", "iterable",
           "einsum_path", "ComplexWarning"]

array_repr = np.array_repr
array_str = np.array_str
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
save = np.save
savez = np.savez
iterable = np.iterable
ComplexWarning = np.exceptions.ComplexWarning


def load(file, *args, **kwargs):
    """An array read by ``np.load`` from a ``.npy`` file, as an fnx array (other contents,
    such as ``.npz`` archives, come back as NumPy returns them).

    >>> import io
    >>> buffer = io.BytesIO(); jnp.save(buffer, jnp.arange(3)); _ = buffer.seek(0)
    >>> jnp.load(buffer)
    Array([0, 1, 2], dtype=int32)
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":     # NumPy stores bfloat16 as two opaque bytes
            from ..core.dtypes import bfloat16
            out = out.view(bfloat16)
        try:
            out = asarray(out)
        except TypeError:         # a dtype fnx does not hold stays a NumPy array
            pass
    return out


def fromfile(*args, **kwargs):
    """Not implemented, as in JAX: reading a file is not a pure function (use ``np.fromfile``
    and ``jnp.asarray``)."""
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure "
                              "and thus unsafe for use with JIT and other transformations. "
                              "Use jnp.asarray(np.fromfile(...)) instead.")


def fromiter(*args, **kwargs):
    """Not implemented, as in JAX: consuming an iterator is not a pure function (use
    ``np.fromiter`` and ``jnp.asarray``)."""
    raise NotImplementedError("jnp.fromiter() is not implemented because it may be non-pure "
                              "and thus unsafe for use with JIT and other transformations. "
                              "Use jnp.asarray(np.fromiter(...)) instead.")


def fromstring(string, dtype=float, count=-1, *, sep):
    """A 1-D array parsed from numbers in ``string`` separated by ``sep``.

    >>> jnp.fromstring("1 2 3", dtype=int, sep=" ")
    Array([1, 2, 3], dtype=int32)
    """
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order ``einsum`` would follow, planned from the operands' shapes:
    ``(path, report)`` where path lists the operand positions contracted at each step.

    >>> jnp.einsum_path("ij,jk->ik", jnp.ones((2, 3)), jnp.ones((3, 4)))[0]
    [(0, 1)]
    """
    if optimize in ("auto", True):
        optimize = "greedy"
    shaped = [np.broadcast_to(np.zeros((), np.float32), np.shape(op)) for op in operands]
    path, report = np.einsum_path(subscripts, *shaped, optimize=optimize)
    return [tuple(step) for step in path[1:]], report
