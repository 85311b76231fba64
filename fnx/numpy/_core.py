"""Conversion, promotion and broadcasting shared by all of fnx.numpy."""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ..core.config import config
from ..core.core import Array, Tracer, get_aval, get_backend
from ..core.errors import ArgumentTypeError, ArgumentValueError, ShapeError, TypePromotionError
from ..core.interop import is_foreign_array
from ..core.placement import device_put


def is_array(x) -> bool:
    """Whether ``x`` is an fnx array, or a traced value standing for one.

    >>> jnp.is_array(jnp.ones(2)), jnp.is_array(np.ones(2))
    (True, False)
    """
    return isinstance(x, (Array, Tracer))


def _is_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def asarray(x, dtype=None, order=None, *, copy=None, device=None):
    """Convert ``x`` (array, scalar, nested list, NumPy array, another library's array, an
    object's ``__jax_array__()``) to an fnx array. Arrays that fnx does not own (NumPy's, torch's, JAX's) are always copied in, so
    their owner's later writes change nothing here; ``copy`` changes no result.

    >>> jnp.asarray([1, 2, 3])
    Array([1, 2, 3], dtype=int32)
    """
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"asarray: order={order!r} (fnx arrays are C-ordered)")
    out = _asarray(x, dtype)
    if device is not None and type(out) is Array and out.device is not device:
        out = device_put(out, device)
    return out


def _asarray(x, dtype):
    if x is None:
        raise ArgumentValueError("None is not a valid value for jnp.array")
    if is_array(x):
        return x if dtype is None else astype(x, dtype)
    if hasattr(type(x), "__jax_array__"):   # explicit conversion calls it, as in JAX
        return _asarray(x.__jax_array__(), dtype)
    if _is_scalar(x):
        if dtype is None:
            return lax.convert_element_type_p.bind(x, new_dtype=dtypes.scalar_dtype(x),
                                                   weak_type=not isinstance(x, bool))
        dt = dtypes.canonicalize(dtype, "asarray")
        return lax.convert_element_type_p.bind(lax.exact_scalar(x, dt), new_dtype=dt,
                                               weak_type=False)
    if isinstance(x, (list, tuple)) and _contains_traced(x):
        return _array_of_traced(x, dtype)
    # a NumPy array (or anything else with __array__) may be written to later by its owner: the
    # backend copies it in (to_buffer); a list converted here, or a download, is already ours
    private = isinstance(x, (list, tuple))
    if is_foreign_array(x):     # torch tensors, JAX and CuPy arrays: copied by the backend
        backend = get_backend()
        dt = dtypes.canonicalize(dtype, "asarray") if dtype is not None else get_aval(x).dtype
        buf = backend.to_buffer(x, dt)
        if buf is x:            # a GPU backend takes a CuPy array as it is: keep a copy
            buf = buf.copy()
        return Array(backend.cast(buf, dt), backend)
    else:
        try:
            arr = np.asarray(x)
        except ValueError as e:     # a ragged list
            raise ShapeError(f"asarray: {e}") from None
        if arr.dtype == object:     # Nones or objects that are not numbers, as JAX refuses them
            if any(v is None for v in arr.flat):
                raise ArgumentValueError("None is not a valid value for jnp.array")
            raise ArgumentTypeError(f"Value {x!r} with dtype object is not a valid JAX array "
                                    "type. Only arrays of numeric types are supported by JAX.")
        if isinstance(x, (list, tuple)) and dtype is not None and arr.dtype.kind in "iu" \
                and dtypes.canonicalize(dtype, "asarray").kind in "iu":
            _check_int_range(arr, dtypes.canonicalize(dtype, "asarray"))
        if isinstance(x, (list, tuple)) and dtype is None and _holds_numpy_values(x):
            # NumPy values in a list keep their dtypes, Python numbers beside them are weak:
            # JAX promotes the elements as the operands of one operation
            leaves = _list_leaves(x)
            for leaf in leaves:
                if type(leaf) is int:
                    _check_int_range(np.asarray(leaf), dtypes.default_int)
            arr = np.asarray(x, dtype=result_type(*leaves))
        elif isinstance(x, (list, tuple)) and dtype is None:
            # Python numbers in a list take fnx's defaults, as in JAX
            if arr.dtype.kind == "f":
                arr = arr.astype(dtypes.default_float)
            elif arr.dtype.kind in "iu":
                _check_int_range(arr, dtypes.default_int)
                arr = arr.astype(dtypes.default_int)
            elif arr.dtype.kind == "c":
                arr = arr.astype(dtypes.default_complex)
    dt = dtypes.canonicalize(dtype, "asarray") if dtype is not None else dtypes.canonical(arr.dtype)
    backend = get_backend()
    buf = (backend.from_numpy(np.asarray(arr, dtype=dt, order="C")) if private
           else backend.to_buffer(arr, dt))
    return Array(backend.cast(buf, dt), backend)


def _list_leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for e in x for leaf in _list_leaves(e)]
    return [x]


def _holds_numpy_values(x) -> bool:
    return any(isinstance(leaf, (np.ndarray, np.generic)) for leaf in _list_leaves(x))


def _check_int_range(arr, dtype):
    """JAX's OverflowError for a list holding an integer ``dtype`` cannot hold (the default int
    with x64 off, or the dtype asked for), where a cast would wrap it silently."""
    info = np.iinfo(dtype)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        bad = arr.max() if arr.max() > info.max else arr.min()
        raise OverflowError(f"Python integer {int(bad)} out of bounds for {np.dtype(dtype).name}")


def array(x, dtype=None, copy=True, order=None, ndmin: int = 0, *, device=None):
    """``x`` as an fnx array. A NumPy array is always copied in (``asarray`` too), so writing to
    it later changes nothing here; an fnx array is copied unless ``copy=False``, so donating
    the copy to jit leaves ``x`` intact.

    >>> jnp.array([[1, 2], [3, 4]], dtype=jnp.float32)
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    out = asarray(x, dtype, order, device=device)
    if copy and out is x:
        out = _own_copy(out)
    if ndmin > out.ndim:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _own_copy(x):
    """A concrete array as a new array with its own buffer (what donating it gives up leaves
    ``x`` intact); a traced one as itself."""
    if type(x) is Array and not x.is_deleted():
        out = Array(x._value.copy(), x._backend, x._weak)
        out._sharding = x._sharding      # laid out as x is
        return out
    return x


def _array_of_traced(x, dtype):
    """A list holding traced values as JAX builds it: each element converted to the common
    (strong) dtype, given a leading axis, and all of them concatenated."""
    elems = [asarray(e) for e in x]
    if not elems:
        return asarray(np.zeros(0), dtype)
    dt = dtypes.canonicalize(dtype, "asarray") if dtype is not None else result_type(*elems)
    shape = get_aval(elems[0]).shape
    parts = []
    for e in elems:
        if get_aval(e).shape != shape:
            raise ShapeError(f"jnp.array: elements of a list must have one shape, got "
                             f"{shape} and {get_aval(e).shape}")
        e = lax.convert_element_type(e, dt)
        parts.append(lax.broadcast_in_dim(e, (1,) + shape, tuple(range(1, len(shape) + 1))))
    return lax.concatenate(parts, 0)


def _contains_traced(x) -> bool:
    if isinstance(x, (list, tuple)):
        return any(_contains_traced(e) for e in x)
    return is_array(x)


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (and moved to ``device``); ``copy`` changes no result, fnx
    arrays being immutable.

    >>> jnp.astype(jnp.array([1.7, -1.7]), jnp.int32)
    Array([ 1, -1], dtype=int32)
    """
    x = asarray(x, device=device)
    dt = dtypes.canonicalize(dtype, "astype")
    if x.dtype == dt and not x.weak_type:
        return x
    if dt == dtypes.bool_ and x.dtype != dtypes.bool_:
        return lax.ne(x, lax.full(x.shape, 0, x.dtype))
    return lax.convert_element_type(x, dt)


def result_type(*args):
    """The dtype fnx.numpy promotes ``args`` to (JAX's lattice and weak types: Python scalars
    and the types ``int``, ``float``, ``complex`` are weak; ``None`` is the default float).

    >>> jnp.result_type(jnp.float16, 2.0), jnp.result_type(jnp.int8, jnp.uint8)
    (dtype('float16'), dtype('int16'))
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    dtype, weak = dtypes.lattice_result_type(*(_typed(a) for a in args))
    if weak:
        return {"b": dtypes.bool_, "i": dtypes.default_int, "u": dtypes.default_int,
                "f": dtypes.default_float, "c": dtypes.default_complex}[dtypes.kind(dtype)]
    return dtypes.canonical(dtype)


def promote_types(a, b):
    """The dtype a binary operation on dtypes ``a`` and ``b`` computes in (JAX's lattice; the
    Python types ``int``, ``float``, ``complex`` are weak and never widen the other dtype).

    >>> jnp.promote_types(jnp.float16, float), jnp.promote_types(jnp.int32, jnp.float16)
    (dtype('float16'), dtype('float16'))
    """
    return dtypes.promote_types(a, b)


def _typed(a):
    if a is None:
        return dtypes.default_float, False
    if a is int or a is float or a is complex:
        return dtypes.canonicalize(a), True
    if isinstance(a, (np.dtype, type, str)):
        return dtypes.canonicalize(a, "dtype"), False
    aval = get_aval(a) if not isinstance(a, (list, tuple)) else get_aval(asarray(a))
    return aval.dtype, aval.weak_type


def promote_dtypes(*args):
    """Convert all args to arrays of their common dtype (no broadcasting). Python numbers are
    converted once, straight to that dtype, so ``float64_array * 0.7`` keeps 0.7 exact."""
    if len(args) == 1:
        if hasattr(type(args[0]), "__jax_array__") and not is_array(args[0]):
            get_aval(args[0])    # raises ArrayProtocolError: only asarray converts it
        return [asarray(args[0])]
    avals = [get_aval(a) if not isinstance(a, (list, tuple)) else get_aval(asarray(a))
             for a in args]
    dtype, weak = dtypes.result_type(*((a.dtype, a.weak_type) for a in avals))
    if config.numpy_dtype_promotion == "strict":
        _check_strict(avals, dtype)
    out = []
    for a, aval in zip(args, avals):
        if _is_scalar(a):
            _check_python_int(a)
            out.append(lax.convert_element_type_p.bind(lax.exact_scalar(a, dtype),
                                                       new_dtype=dtype, weak_type=weak))
        else:
            a = asarray(a)
            out.append(a if (aval.dtype == dtype and aval.weak_type == weak)
                       else lax.convert_element_type(a, dtype, weak))
    return out


def _check_python_int(x):
    """JAX's OverflowError for a Python int operand the default int (int32 with x64 off)
    cannot hold, whatever the other operand's dtype, where a cast would wrap it silently."""
    if type(x) is int:
        info = np.iinfo(dtypes.default_int)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python integer {x} out of bounds for "
                                f"{np.dtype(dtypes.default_int).name}")


def _check_strict(avals, dtype):
    """Strict promotion (as JAX's): operands of one dtype, or weak scalars that the strong
    operands' dtype absorbs without changing it."""
    strong = {a.dtype for a in avals if not a.weak_type}
    if len(strong) > 1 or (strong and dtype not in strong):
        names = tuple(str(a.dtype) for a in avals)
        raise TypePromotionError(f"Input dtypes {names} have no implicit dtype promotion path "
                                 "when numpy_dtype_promotion is 'strict'; cast them explicitly "
                                 "or use numpy_dtype_promotion('standard')")


def promote_dtypes_inexact(*args):
    """Like promote_dtypes, then to a float if the common dtype is not inexact (float32 for
    booleans and integers up to 32 bits, float64 for 64-bit ones)."""
    # Python numbers go straight to the float (uint8 data and -3 divide by -3.0, as in JAX)
    numbers = [a if _is_scalar(a) else None for a in args]
    for n in numbers:
        _check_python_int(n)
    arrs = promote_dtypes(*[0 if n is not None and isinstance(n, int) and
                            not isinstance(n, bool) else a for a, n in zip(args, numbers)])
    if dtypes.is_float(arrs[0].dtype):
        return promote_dtypes(*args) if any(n is not None for n in numbers) else arrs
    to = dtypes.to_inexact(arrs[0].dtype)       # int32 -> float32 even with x64, as in JAX
    return [lax.convert_element_type(a, to, a.weak_type) if n is None or not isinstance(n, int)
            or isinstance(n, bool) else
            lax.convert_element_type_p.bind(lax.exact_scalar(n, to), new_dtype=to,
                                            weak_type=a.weak_type)
            for a, n in zip(arrs, numbers)]


def broadcast_shapes(*shapes, op: str = "operands"):
    """The shape that arrays of the given shapes broadcast to.

    >>> jnp.broadcast_shapes((3,), (2, 1))
    (2, 3)
    """
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shown = " ".join(str(tuple(s)) for s in shapes)
        raise ShapeError(f"{op}: operands could not be broadcast together with shapes "
                         f"{shown}") from None


def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` by NumPy's rules.

    >>> jnp.broadcast_to(jnp.array([1, 2]), (2, 2))
    Array([[1, 2],
           [1, 2]], dtype=int32)
    """
    x = asarray(x)
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    nd = len(shape)
    if x.ndim > nd or any(a not in (1, b) for a, b in zip(x.shape[::-1], shape[::-1])):
        raise ShapeError(f"cannot broadcast array of shape {x.shape} to shape {shape}")
    return lax.broadcast_in_dim(x, shape, tuple(range(nd - x.ndim, nd)))


def broadcast_arrays(*args, op: str = "operands"):
    """The arguments broadcast to their common shape.

    >>> [x.shape for x in jnp.broadcast_arrays(jnp.ones(3), jnp.ones((2, 1)))]
    [(2, 3), (2, 3)]
    """
    arrs = [asarray(a) for a in args]
    shape = broadcast_shapes(*(a.shape for a in arrs), op=op)
    return [broadcast_to(a, shape) for a in arrs]


def promote_and_broadcast(*args, op: str = "operands", inexact: bool = False,
                          keep_scalars: bool = False):
    """Promote to a common dtype and broadcast to a common shape. With ``keep_scalars``, 0-d
    operands stay 0-d: elementwise primitives broadcast them without materialising."""
    arrs = promote_dtypes_inexact(*args) if inexact else promote_dtypes(*args)
    shape = broadcast_shapes(*(a.shape for a in arrs), op=op)
    return [a if keep_scalars and a.ndim == 0 else broadcast_to(a, shape) for a in arrs]


def canonicalize_axis(axis: int, ndim: int, op: str = "axis") -> int:
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise AxisError(f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim if ndim else 0


def axis_or_flat(a, axis, op: str):
    """``(a, axis)`` with a canonical axis, or ``(a.ravel(), 0)`` for ``axis=None`` (NumPy's
    convention for sort, argmax, cumsum, take, ...)."""
    if axis is None:
        return lax.reshape(a, (a.size,)), 0
    return a, canonicalize_axis(axis, a.ndim, op)


def canonicalize_axes(axis, ndim: int, op: str = "axis") -> tuple[int, ...]:
    """``axis`` (None for all, an int or a tuple) as a tuple of non-negative axes of an array of
    ``ndim`` axes.

    >>> canonicalize_axes((-1, 0), 3)
    (2, 0)
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = tuple(canonicalize_axis(a, ndim, op) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return out


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays of one shape along a new axis (asarray stacks a list of arrays with it).

    >>> jnp.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    arrs = [asarray(a) for a in arrays]
    shapes = {a.shape for a in arrs}
    if len(shapes) != 1:
        raise ShapeError(f"all input arrays must have the same shape, got "
                         f"{', '.join(str(a.shape) for a in arrs)}")
    ax = canonicalize_axis(axis, arrs[0].ndim + 1, "stack")
    arrs = promote_dtypes(*[lax.expand_dims(a, (ax,)) for a in arrs])
    if dtype is not None:
        arrs = [lax.convert_element_type(a, dtypes.canonicalize(dtype, "stack")) for a in arrs]
    return lax.concatenate(arrs, ax)


from ..core.errors import FnxError  # noqa: E402


class AxisError(FnxError, ValueError, IndexError):
    """An axis argument is out of range for the array's rank.

    >>> try:
    ...     jnp.sum(jnp.ones(3), axis=2)
    ... except jnp.AxisError as e:
    ...     print(type(e).__name__, isinstance(e, IndexError))
    AxisError True
    """
