"""Host-side helpers JAX re-exports from NumPy or wraps thinly: printing, files, parsing and
``einsum_path`` (which plans a contraction from shapes alone)."""
from __future__ import annotations

import numpy as np

from ._core import asarray

__all__ = ["array_repr", "array_str", "printoptions", "get_printoptions", "set_printoptions",
           "save", "savez", "load", "fromfile", "fromiter", "fromstring", "iterable",
           "einsum_path", "ComplexWarning"]



def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's representation string of ``arr``'s values.

    >>> jnp.array_repr(jnp.arange(3))
    'array([0, 1, 2], dtype=int32)'
    """
    return np.array_repr(np.asarray(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's string of ``a``'s values.

    >>> jnp.array_str(jnp.arange(3))
    '[0 1 2]'
    """
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def printoptions(*args, **kwargs):
    """A context manager setting NumPy's print options, which fnx arrays print with.

    >>> with jnp.printoptions(precision=2):
    ...     print(jnp.array([1.23456]))
    [1.23]
    """
    return np.printoptions(*args, **kwargs)


def get_printoptions():
    """NumPy's current print options, which fnx arrays print with.

    >>> jnp.get_printoptions()["precision"]
    8
    """
    return np.get_printoptions()


def set_printoptions(*args, **kwargs):
    """Set NumPy's print options, which fnx arrays print with (``printoptions`` sets them for
    a block only).

    >>> jnp.set_printoptions(precision=8)
    """
    return np.set_printoptions(*args, **kwargs)


def save(file, arr, allow_pickle=True):
    """Write ``arr`` to a ``.npy`` file (``np.save``).

    >>> import io
    >>> jnp.save(io.BytesIO(), jnp.arange(3))
    """
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds):
    """Write several arrays to an uncompressed ``.npz`` archive (``np.savez``).

    >>> import io
    >>> jnp.savez(io.BytesIO(), x=jnp.arange(3), y=jnp.ones(2))
    """
    np.savez(file, *[np.asarray(a) for a in args],
             **{k: np.asarray(v) for k, v in kwds.items()})


def iterable(y):
    """Whether ``y`` can be iterated over.

    >>> jnp.iterable([1, 2]), jnp.iterable(2.0)
    (True, False)
    """
    return np.iterable(y)


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
    and ``jnp.asarray``).

    >>> try:
    ...     jnp.fromfile("weights.bin")
    ... except NotImplementedError:
    ...     print("use jnp.asarray(np.fromfile(...))")
    use jnp.asarray(np.fromfile(...))
    """
    raise NotImplementedError("jnp.fromfile() is not implemented because it may be non-pure "
                              "and thus unsafe for use with JIT and other transformations. "
                              "Use jnp.asarray(np.fromfile(...)) instead.")


def fromiter(*args, **kwargs):
    """Not implemented, as in JAX: consuming an iterator is not a pure function (use
    ``np.fromiter`` and ``jnp.asarray``).

    >>> jnp.asarray(np.fromiter(range(3), dtype=np.int32))   # what to use instead
    Array([0, 1, 2], dtype=int32)
    """
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
