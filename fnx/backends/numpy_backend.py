"""The CPU backend: every primitive as a NumPy function."""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes, lax
from ..core import convolution, fft as fft_prims
from ..core.core import Array, Device
from ..core.interop import host_view, is_foreign_array
import contextlib

from . import host_comm, numpy_linalg
from .decomposed import decomposed_impl
from .numpy_executable import NumpyExecutable


def _erf(x):
    try:
        from scipy.special import erf
        return erf(x)
    except ImportError:
        return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _integer_pow(x, *, y):
    if y >= 0:
        return np.power(x, y)
    return np.power(x, -y) ** -1 if dtypes.is_float(x.dtype) else np.power(x.astype(float), y)


def _round(x):
    # lax.round rounds half away from zero. x - trunc(x) is exact; |x| + 0.5 is not (it rounds
    # 0.49999997 and odd integers above 2**23 in float32 up)
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):   # inf - inf
        return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _sign(x):
    # XLA's sign of -0.0 is -0.0 (NumPy's is 0.0); NaN stays NaN
    if x.dtype.kind == "f":
        return np.where(x == 0, x, np.sign(x))
    return np.sign(x)


def _div(x, y):
    if x.dtype.kind in "iu":
        # integer division truncates towards zero, as in C and XLA; XLA's x / 0 has every bit
        # set (-1, or the largest unsigned) and its INT_MIN / -1 is INT_MIN
        zero = y == 0
        safe = np.where(zero, np.ones_like(y), y)
        with np.errstate(over="ignore", divide="ignore"):
            q = np.floor_divide(x, safe)
            q = np.where((np.remainder(x, safe) != 0) & ((x < 0) ^ (safe < 0)), q + 1, q)
        return np.where(zero, ~np.zeros_like(x), q).astype(x.dtype)
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":
        # XLA's x % 0 is x
        zero = y == 0
        safe = np.where(zero, np.ones_like(y), y)
        with np.errstate(over="ignore", divide="ignore"):
            # C's remainder from the floored one (CuPy's integer fmod rounds through float64)
            r = np.remainder(x, safe)
            r = np.where((r != 0) & ((r < 0) != (x < 0)), r - safe, r)
        return np.where(zero, x, r).astype(x.dtype)
    return np.fmod(x, y)


def _select_n(which, *cases):
    if len(cases) == 1:
        return cases[0]
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(which.astype(np.intp), cases)


def _iota(*, dtype, shape, dimension):
    idx = np.arange(shape[dimension], dtype=dtype)
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    return np.broadcast_to(idx.reshape(view), shape).copy()


def _broadcast_in_dim(x, *, shape, broadcast_dimensions):
    # a real allocation, as in JAX: a zero-strided view would make jnp.zeros((10**6, 10**6))
    # "succeed" and fail later, far from the line that asked for it
    view = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        view[d] = x.shape[i]
    out = np.empty_like(x, shape=shape)    # (dispatches to CuPy for the GPU's arrays)
    out[...] = x.reshape(view)
    return out


def _slice(x, *, start_indices, limit_indices, strides):
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


def _pad(x, v, *, padding_config, xp=np):
    out_shape = [lo + hi + d + max(0, d - 1) * i for (lo, hi, i), d in zip(padding_config, x.shape)]
    out = xp.full(out_shape, v, dtype=x.dtype)
    idx = tuple(slice(lo, lo + (d - 1) * (i + 1) + 1 if d else lo, i + 1)
                for (lo, _, i), d in zip(padding_config, x.shape))
    out[idx] = x
    return out


def _take(x, idx, *, axis):
    return np.take(x, idx, axis=axis, mode="clip")


_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def scatter_positions(xp, shape, idx, axis, keep=None):
    """Flat positions, shape (pre, len(idx), post), in an array of ``shape`` flattened with one
    spare element at its end, where the updates of a scatter along ``axis`` at ``idx`` land.
    An index outside [0, n) lands on the spare element (the update is dropped, XLA's rule);
    so does every update ``keep`` (a mask over the indices) is False for. Only masks: no
    data-dependent shape, so on a GPU nothing waits for the device."""
    n = shape[axis]
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    post = int(np.prod(shape[axis + 1:], dtype=np.int64))
    size = pre * n * post
    valid = (idx >= 0) & (idx < n)
    if keep is not None:
        valid &= keep
    safe = xp.where(valid, idx, 0).astype(np.int64)
    lin = (xp.arange(pre, dtype=np.int64)[:, None, None] * (n * post)
           + safe[None, :, None] * post + xp.arange(post, dtype=np.int64)[None, None, :])
    return xp.where(valid[None, :, None], lin, size)


def _scatter(x, idx, upd, *, axis, mode):
    out = np.empty(x.size + 1, x.dtype)        # the last element takes dropped updates
    out[:-1] = x.reshape(-1)
    flat_idx = idx.reshape(-1)
    lin = scatter_positions(np, x.shape, flat_idx, axis)
    u = upd.reshape(lin.shape)
    if mode == "set":
        out[lin] = u            # NumPy's fancy assignment keeps the last of repeated positions
    else:
        _UFUNC_AT[mode].at(out, lin, u)
    return out[:-1].reshape(x.shape)


def _reduce(fn):
    # over no axes the result is the operand's values in a buffer of its own: the jit's buffer
    # plan counts every reduction's result as fresh, and may overwrite the operand's
    return lambda x, *, axes: fn(x, axis=axes) if axes else x.copy()


def _reduce_extreme(fn, end):
    """max/min over axes; over no elements the dtype's ``end`` ('min' for max: -inf,
    INT_MIN, False), as XLA's reduction from its identity gives."""
    def impl(x, *, axes):
        if not axes:
            return x.copy()
        if x.size:
            return fn(x, axis=axes)
        if x.dtype.kind in "fc":
            init = -np.inf if end == "min" else np.inf
        elif x.dtype == np.bool_:
            init = end == "max"
        else:
            init = getattr(np.iinfo(x.dtype), end)
        shape = tuple(n for d, n in enumerate(x.shape) if d not in axes)
        return np.full_like(x, init, shape=shape)      # (CuPy's max has no initial=)
    return impl


def _reduce_bits(logical, bitwise):
    """reduce_and/reduce_or: logical for booleans, bitwise for integers (XLA's and/or)."""
    def impl(x, *, axes):
        if not axes:
            return x.copy()
        if x.dtype == np.bool_:
            return logical(x, axis=axes)
        # halving folds (log n whole-array ops): CuPy's bitwise ufuncs have no reduce
        x = np.moveaxis(x, axes, range(-len(axes), 0))
        x = x.reshape(x.shape[:x.ndim - len(axes)] + (-1,))
        identity = np.zeros_like(x, shape=x.shape[:-1] + (1,))
        if bitwise is np.bitwise_and:
            identity = ~identity
        if x.shape[-1] == 0:
            x = identity
        while x.shape[-1] > 1:
            if x.shape[-1] % 2:
                x = np.concatenate([x, identity], axis=-1)
            x = bitwise(x[..., 0::2], x[..., 1::2])
        return x[..., 0]
    return impl


def _dot_general(lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    if preferred_element_type is not None:
        # a wider preferred type is the accumulator (int8 products summed in int32, as XLA)
        pet = np.dtype(preferred_element_type)
        if pet != lhs.dtype and np.promote_types(lhs.dtype, pet) == pet:
            lhs, rhs = lhs.astype(pet), rhs.astype(pet)
    lfree = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    # batch, free, contract layout then one batched matmul
    lt = lhs.transpose(list(lb) + lfree + list(lc))
    rt = rhs.transpose(list(rb) + list(rc) + rfree)
    bshape = lt.shape[:len(lb)]
    m = int(np.prod([lhs.shape[i] for i in lfree], dtype=np.int64))
    n = int(np.prod([rhs.shape[i] for i in rfree], dtype=np.int64))
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    out = np.matmul(lt.reshape(bshape + (m, k)), rt.reshape(bshape + (k, n)))
    out = out.reshape(bshape + tuple(lhs.shape[i] for i in lfree)
                      + tuple(rhs.shape[i] for i in rfree))
    if preferred_element_type is not None:
        out = out.astype(preferred_element_type)
    return out


def _sort_key(k):
    """``k`` as NumPy sorts it correctly: ml_dtypes' floats (bfloat16, float8s) compare in
    float32, since NumPy's sort of them misplaces NaN (and what follows it)."""
    native = k.dtype in (np.float16, np.float32, np.float64)
    return k.astype(np.float32) if dtypes.kind(k.dtype) == "f" and not native else k


def _sort(*operands, dimension, num_keys):
    if num_keys == 1:
        perm = np.argsort(_sort_key(operands[0]), axis=dimension, kind="stable")
    else:
        keys = [np.moveaxis(_sort_key(k), dimension, -1) for k in operands[:num_keys]]
        flat = [k.reshape(-1, k.shape[-1]) for k in keys]
        perm = np.stack([np.lexsort([f[r] for f in reversed(flat)]) for r in range(flat[0].shape[0])])
        perm = np.moveaxis(perm.reshape(keys[0].shape), -1, dimension)
    return [np.take_along_axis(o, perm, axis=dimension) for o in operands]


def _convert_element_type(x, *, new_dtype, weak_type):
    new_dtype = np.dtype(new_dtype)
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = x.real          # a complex value converts through its real part, as in XLA
    if new_dtype.kind in "iu" and dtypes.kind(x.dtype) == "f":
        return _float_to_int(x, new_dtype)
    return x.astype(new_dtype)


def _float_to_int(x, new_dtype):
    """XLA's conversion: truncation toward zero that saturates at the integer type's bounds,
    NaN to 0 (NumPy's cast leaves out-of-range values undefined: +inf became INT_MIN)."""
    xp = numpy_linalg.array_module(x)
    info = np.iinfo(new_dtype)
    out = x.astype(new_dtype)
    # 2**bits and -2**(bits-1) are exact in every float type (or overflow to inf, which no
    # finite value of that type reaches)
    too_big, too_small = x >= float(info.max) + 1.0, x < float(info.min)
    return xp.where(too_big, new_dtype.type(info.max),
                    xp.where(too_small, new_dtype.type(info.min),
                             xp.where(x != x, new_dtype.type(0), out)))


def _complex(x, y):
    """``x + 1j * y`` exactly (multiplying by 1j would turn an infinite ``y`` into NaN)."""
    xp = numpy_linalg.array_module(x, y)
    out = xp.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), lax.complex_dtype(x.dtype))
    out.real = x
    out.imag = y
    return out


def _cumsum(x, *, axis, reverse):
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return np.cumsum(x, axis=axis, dtype=x.dtype)


def _fft(x, *, fft_type, fft_lengths):
    """The ``fft`` primitive on NumPy or CuPy arrays (whichever ``x`` is), in ``x``'s
    precision: single-precision transforms give complex64 / float32, as in JAX."""
    xp = numpy_linalg.array_module(x)
    T = fft_prims.FftType
    axes = tuple(range(x.ndim - len(fft_lengths), x.ndim))
    if fft_type == T.FFT:
        out, dtype = xp.fft.fftn(x, axes=axes), x.dtype
    elif fft_type == T.IFFT:
        out, dtype = xp.fft.ifftn(x, axes=axes), x.dtype
    elif fft_type == T.RFFT:
        out, dtype = xp.fft.rfftn(x, axes=axes), fft_prims.complex_dtype(x.dtype)
    else:
        # a complex inverse over the leading axes, then a real one over the last: only the last
        # axis is read as a half spectrum (cuFFT's multi-axis C2R would assume symmetry on all)
        if len(axes) > 1:
            x = xp.fft.ifftn(x, axes=axes[:-1])
        out, dtype = xp.fft.irfft(x, n=fft_lengths[-1], axis=-1), fft_prims.real_dtype(x.dtype)
    return out.astype(dtype, copy=False)


L = lax
impls = {
    L.neg_p: np.negative, L.sign_p: _sign, L.floor_p: np.floor, L.ceil_p: np.ceil,
    L.round_p: _round, L.is_finite_p: np.isfinite, L.abs_p: np.abs, L.exp_p: np.exp,
    L.log_p: np.log, L.log1p_p: np.log1p, L.expm1_p: np.expm1, L.sqrt_p: np.sqrt,
    L.rsqrt_p: lambda x: 1 / np.sqrt(x), L.sin_p: np.sin, L.cos_p: np.cos, L.tan_p: np.tan,
    L.asin_p: np.arcsin, L.acos_p: np.arccos, L.atan_p: np.arctan, L.sinh_p: np.sinh,
    L.cosh_p: np.cosh, L.tanh_p: np.tanh, L.asinh_p: np.arcsinh, L.acosh_p: np.arccosh,
    L.atanh_p: np.arctanh, L.logistic_p: lambda x: 0.5 * (np.tanh(0.5 * x) + 1),
    L.erf_p: _erf, L.not_p: lambda x: np.logical_not(x) if x.dtype == np.bool_ else ~x,
    L.integer_pow_p: _integer_pow, L.stop_gradient_p: lambda x: x,
    L.add_p: np.add, L.sub_p: np.subtract, L.mul_p: np.multiply, L.div_p: _div,
    L.rem_p: _rem, L.pow_p: np.power, L.max_p: np.maximum, L.min_p: np.minimum,
    L.atan2_p: np.arctan2, L.nextafter_p: np.nextafter, L.and_p: np.bitwise_and,
    L.or_p: np.bitwise_or, L.xor_p: np.bitwise_xor, L.eq_p: np.equal, L.ne_p: np.not_equal,
    L.lt_p: np.less, L.le_p: np.less_equal, L.gt_p: np.greater, L.ge_p: np.greater_equal,
    L.select_n_p: _select_n,
    L.convert_element_type_p: _convert_element_type,
    L.real_p: np.real, L.imag_p: np.imag, L.conj_p: np.conjugate, L.complex_p: _complex,
    L.broadcast_in_dim_p: _broadcast_in_dim,
    L.reshape_p: lambda x, *, new_sizes: x.reshape(new_sizes),
    L.transpose_p: lambda x, *, permutation: np.transpose(x, permutation),
    L.rev_p: lambda x, *, dimensions: np.flip(x, dimensions),
    L.slice_p: _slice, L.pad_p: _pad,
    L.concatenate_p: lambda *xs, dimension: np.concatenate(xs, axis=dimension),
    L.iota_p: _iota, L.take_p: _take, L.scatter_p: _scatter,
    L.reduce_sum_p: _reduce(np.sum), L.reduce_max_p: _reduce_extreme(np.max, "min"),
    L.reduce_min_p: _reduce_extreme(np.min, "max"), L.reduce_prod_p: _reduce(np.prod),
    L.reduce_and_p: _reduce_bits(np.all, np.bitwise_and),
    L.reduce_or_p: _reduce_bits(np.any, np.bitwise_or),
    L.argmax_p: lambda x, *, axis, index_dtype: np.argmax(x, axis=axis).astype(index_dtype),
    L.argmin_p: lambda x, *, axis, index_dtype: np.argmin(x, axis=axis).astype(index_dtype),
    L.cumsum_p: _cumsum, L.dot_general_p: _dot_general, L.sort_p: _sort,
    fft_prims.fft_p: _fft,
}


def _shift(op, over_wide):
    """XLA's shifts: a count outside [0, bit width) gives ``over_wide(x)``."""
    def impl(x, y):
        xp = numpy_linalg.array_module(x, y)
        x, y = xp.asarray(x), xp.asarray(y)
        bits = 8 * x.dtype.itemsize
        counts = y.astype(np.dtype(f"u{x.dtype.itemsize}"))   # negative counts are over-wide
        ok = counts < bits
        if xp is np and counts.ndim == 0 and ok:    # one count in range (PRNG rotations)
            return op(x, counts.astype(x.dtype))
        out = op(x, xp.where(ok, counts, 0).astype(x.dtype))
        return xp.where(ok, out, over_wide(x))
    return impl


def _shift_right_logical(x, y):
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    return np.right_shift(x.view(unsigned), y.astype(unsigned)).view(x.dtype)


def _as_signed(x):
    return x.view(np.dtype(f"i{x.dtype.itemsize}"))


def _shift_right_arithmetic(x, y):
    # the bits shift as a signed integer's, unsigned ones too (XLA's rule)
    return np.right_shift(_as_signed(x), y.astype(_as_signed(x).dtype)).view(x.dtype)


def _sign_fill(x):
    """An over-wide arithmetic shift: every bit a copy of the sign bit."""
    return np.where(_as_signed(x) < 0, -1, 0).astype(_as_signed(x).dtype).view(x.dtype)


def _erf_inv(x):
    try:
        from scipy.special import erfinv
        return erfinv(x)
    except ImportError:
        pass
    # Giles (2010) single-precision approximation on |x|, then Newton steps in float64: on
    # erf(y) = |x| near 0, and on log(erfc(y)) = log(1 - |x|) in the tails, where erf(y) - |x|
    # would cancel and the log keeps the iteration nearly linear
    a = np.abs(np.asarray(x, np.float64))
    inside = a < 1
    a_in = np.where(inside, a, 0.0)
    with np.errstate(divide="ignore"):
        w = -np.log((1.0 - a_in) * (1.0 + a_in))
    y = np.where(w < 5.0, _horner(w - 2.5, _GILES_CENTRAL),
                 _horner(np.sqrt(w) - 3.0, _GILES_TAIL)) * a_in
    tail = a_in >= 0.5
    log_q = np.log(np.where(tail, 1.0 - a_in, 1.0))
    erf_vec, erfc_vec = (np.vectorize(f, otypes=[np.float64]) for f in (math.erf, math.erfc))
    for _ in range(3):
        density = 2 / math.sqrt(math.pi) * np.exp(-np.square(y))
        ec = np.where(tail, erfc_vec(y), 1.0)
        step = np.where(tail, (np.log(ec) - log_q) * ec / -density,
                        (erf_vec(y) - a_in) / density)
        y = y - step
    y = np.where(inside, y, np.where(a == 1, np.inf, np.nan))
    return (np.sign(x) * y).astype(x.dtype)


_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(w, coeffs):
    p = np.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = c + p * w
    return p


impls.update({
    L.shift_left_p: _shift(np.left_shift, np.zeros_like),
    L.shift_right_logical_p: _shift(_shift_right_logical, np.zeros_like),
    L.shift_right_arithmetic_p: _shift(_shift_right_arithmetic, _sign_fill),
    L.bitcast_convert_type_p: lambda x, *, new_dtype: x.view(new_dtype),
    L.erf_inv_p: _erf_inv,
    L.take_along_axis_p: lambda x, idx, *, axis: np.take_along_axis(
        x, np.clip(idx, 0, x.shape[axis] - 1), axis),
})
impls.update(numpy_linalg.impls)
impls.update(host_comm.impls)
# a convolution is im2col: its pads, slices and one product through the impls above
impls[convolution.conv_general_dilated_p] = decomposed_impl(convolution.im2col, impls)


def computed_in_float32(impl):
    """``impl`` run on bfloat16 operands widened to float32 (exactly). Its results stay float32:
    every caller casts a result to its aval's dtype (``Backend.cast``), which rounds once."""
    def run(*args, **params):
        if not any(getattr(a, "dtype", None) == dtypes.bfloat16 for a in args):
            return impl(*args, **params)
        return impl(*[a.astype(np.float32) if getattr(a, "dtype", None) == dtypes.bfloat16
                      else a for a in args], **params)
    return run


# NumPy sums and products of bfloat16 accumulate in bfloat16 (a sum of 10000 ones is 256),
# scatter-adds too; dot_general accumulates in float32 as in JAX; integer_pow and logistic
# would round between steps; SciPy's erf and NumPy's linalg have no bfloat16 loops
COMPUTED_IN_FLOAT32 = frozenset({
    L.reduce_sum_p, L.reduce_prod_p, L.cumsum_p, L.scatter_p, L.dot_general_p,
    L.integer_pow_p, L.logistic_p, L.erf_p, L.erf_inv_p, *numpy_linalg.impls})
impls.update({p: computed_in_float32(impls[p]) for p in COMPUTED_IN_FLOAT32})


_SCALARS = (bool, int, float, complex, np.generic)


class NumpyBackend:
    """The CPU, or one of its virtual devices (``jax_num_cpu_devices``, or XLA's
    ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``): every one runs NumPy in this
    process, and collectives between them exchange values in memory (fnx.backends.host_comm)."""
    name = "cpu"
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0
    supports_donation = False    # NumPy programs return fresh buffers

    def __init__(self, impls, computed_in_float32=frozenset(), device_id: int = 0):
        self.impls = impls
        self.computed_in_float32 = computed_in_float32   # impls that widen bfloat16 operands
        self.id = device_id
        self._virtual: list = [self]

    def devices(self) -> list:
        """This CPU's devices: as many as the options ask for, made when first asked for."""
        n = host_comm.cpu_device_count()
        while len(self._virtual) < n:
            self._virtual.append(NumpyBackend(self.impls, self.computed_in_float32,
                                              len(self._virtual)))
        return self._virtual[:n]

    def communicator(self, devices):
        """Collectives among ``devices`` (CPU devices of this process), in memory."""
        return host_comm.communicator(tuple(d.id for d in devices))

    def scope(self):
        """A context in which this device's work runs (nothing to set on the CPU)."""
        return contextlib.nullcontext()

    def to_buffer(self, x, dtype):
        if type(x) is Array:
            if x._backend is self:
                return x._value
            return np.asarray(x._backend.to_numpy(x._value))
        if isinstance(x, np.ndarray):
            # the caller's array: a private copy (converted on the way, so one copy), as an
            # upload to a device would be, so later writes to it change no fnx array
            return np.array(x, dtype=dtype, order="C")
        if not isinstance(x, _SCALARS) and is_foreign_array(x):
            return np.array(host_view(x), dtype=dtype, order="C")   # torch's, JAX's: a copy
        return np.asarray(x, dtype=dtype)

    def cast(self, buf, dtype):
        if type(buf) is np.ndarray and buf.dtype == dtype:
            return buf
        return np.asarray(buf, dtype=dtype)

    def to_numpy(self, buf):
        return buf

    def from_numpy(self, x):
        return np.asarray(x)

    def synchronize(self, buf):
        pass

    def import_dlpack(self, x, copy):
        """A buffer of CPU DLPack producer ``x``: its memory itself only with ``copy=False``."""
        buf = np.from_dlpack(x)
        return buf if copy is False else np.array(buf, order="C")

    def export_dlpack(self, buf, *, stream=None, max_version=None, dl_device=None, copy=None):
        # fnx arrays are immutable: a consumer of DLPack 1.0 gets fnx's memory flagged
        # read-only; an older one (or NumPy < 2.1, which cannot set the flag) gets a copy
        kwargs = {} if dl_device is None else {"dl_device": dl_device}
        if not copy and max_version is not None and max_version[0] >= 1:
            view = np.asarray(buf).view()
            view.flags.writeable = False
            try:
                return view.__dlpack__(stream=stream, max_version=max_version, **kwargs)
            except TypeError:
                pass
        if copy is False:
            raise BufferError("fnx arrays are immutable, and this DLPack consumer cannot be told "
                              "the memory is read-only: it needs a copy, but copy=False was given")
        mine = np.array(buf, order="C")
        if max_version is None:
            return mine.__dlpack__(stream=stream)
        return mine.__dlpack__(stream=stream, max_version=max_version, **kwargs)

    def dlpack_device(self, buf):
        return tuple(np.asarray(buf).__dlpack_device__())

    def compile(self, jaxpr, consts, donated=()):
        """``executable(*buffers) -> list of buffers`` for ``jaxpr`` on NumPy (nothing is
        donated: ``supports_donation`` is False)."""
        return NumpyExecutable(_calls_spliced(jaxpr), consts, self)

    def __repr__(self):
        return f"CpuDevice(id={self.id})"

    def __str__(self):      # as JAX prints a device: platform and id
        return f"cpu:{self.id}"


def _calls_spliced(jaxpr):
    """``jaxpr`` with its custom-derivative and remat calls spliced in (nothing differentiates
    a compiled program), nested ones too, so they run as flat steps."""
    from ..core.passes import EVALUATION_CALLS, inline_calls
    while True:
        spliced = inline_calls(jaxpr, EVALUATION_CALLS)
        if spliced is jaxpr:
            return jaxpr
        jaxpr = spliced


backend = NumpyBackend(impls, COMPUTED_IN_FLOAT32)


Device.register(NumpyBackend)
