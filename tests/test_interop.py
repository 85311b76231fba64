"""Other libraries' arrays: DLPack both ways (NumPy, JAX on the CPU, torch where installed),
arrays of other libraries accepted by fnx functions, and the array API namespace."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp


class DLPackOnly:
    """A producer that speaks only DLPack (no __array__), as some libraries' tensors do."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayLike:
    """A NumPy-like that speaks only ``__array__`` (as pandas and xarray objects do)."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


# ---------------------------------------------------------------------------------------------
# from_dlpack: JAX's signature; fnx copies unless copy=False


@pytest.mark.parametrize("make", [lambda a: a, DLPackOnly], ids=["numpy", "dlpack-only"])
def test_from_dlpack_copies_by_default(rng, make):
    buf = rng.standard_normal((3, 4))
    first = buf.copy()
    x, y = fnx.dlpack.from_dlpack(make(buf)), jnp.from_dlpack(make(buf), copy=True)
    buf[:] = 0.0                     # the exporter writes to its memory later
    for a in (x, y):
        assert a.dtype == np.float64 and a.shape == (3, 4)
        np.testing.assert_array_equal(np.asarray(a), first)


def test_from_dlpack_copy_false_shares_memory(rng):
    buf = rng.standard_normal(5)
    x = jnp.from_dlpack(buf, copy=False)
    buf[0] = 123.0                   # shared, as JAX shares: the caller promised not to write
    assert float(x[0]) == 123.0


def test_from_dlpack_strided_and_integer(rng):
    buf = rng.integers(-9, 9, (4, 6)).astype(np.int16)[:, ::2]
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(buf)), buf)
    np.testing.assert_array_equal(np.asarray(jnp.from_dlpack(buf, copy=False)), buf)


@pytest.mark.x32
def test_from_dlpack_canonicalizes_without_x64():
    x = jnp.from_dlpack(np.arange(3, dtype=np.int64))
    assert x.dtype == np.int32                 # as JAX: 64-bit values become 32-bit
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2])


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        jnp.from_dlpack([1.0, 2.0])
    with pytest.raises(ValueError, match="copy=False"):
        jnp.from_dlpack(np.ones(2), device="gpu" if _has_gpu() else _Elsewhere(), copy=False)


class _Elsewhere:
    """A device that is not the producer's (stands in for a GPU on a machine without one)."""
    name = "elsewhere"


def _has_gpu():
    try:
        fnx.devices("gpu")
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# Array.__dlpack__: fnx's memory, read-only to consumers that can be told


def test_numpy_reads_fnx_array_read_only(rng):
    x = jnp.asarray(rng.standard_normal((2, 3)))
    h = np.from_dlpack(x)
    np.testing.assert_array_equal(h, np.asarray(x))
    assert not h.flags.writeable
    with pytest.raises(ValueError):
        h[0, 0] = 1.0
    assert x.__dlpack_device__() == (1, 0)


def test_legacy_dlpack_consumer_gets_a_copy(rng):
    x = jnp.asarray(rng.standard_normal(4))
    mine = np.asarray(x).ctypes.data
    assert np.from_dlpack(x).ctypes.data == mine          # DLPack 1.0: shared, read-only
    legacy = np.from_dlpack(_LegacyCapsule(x))            # a consumer from before DLPack 1.0
    assert legacy.ctypes.data != mine                     # cannot be told: a copy of its own
    np.testing.assert_array_equal(legacy, np.asarray(x))
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)


class _LegacyCapsule:
    def __init__(self, x):
        self._x = x

    def __dlpack__(self, **kwargs):
        return self._x.__dlpack__()                   # no max_version: the old protocol

    def __dlpack_device__(self):
        return self._x.__dlpack_device__()


def test_scalar_and_jit_results_export(rng):
    s = jnp.float32(2.5) * 2
    np.testing.assert_array_equal(np.from_dlpack(s), 5.0)
    out = fnx.jit(lambda a: a @ a.T)(jnp.asarray(rng.standard_normal((3, 2))))
    np.testing.assert_allclose(np.from_dlpack(out), np.asarray(out))


def test_jax_round_trip(rng):
    jax = pytest.importorskip("jax")
    buf = rng.standard_normal((3, 2)).astype(np.float32)
    x = jnp.asarray(buf)
    j = jax.numpy.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(j), buf)
    back = jnp.from_dlpack(jax.numpy.asarray(buf) * 2)
    np.testing.assert_array_equal(np.asarray(back), buf * 2)


def test_torch_round_trip(rng):
    torch = pytest.importorskip("torch")
    buf = rng.standard_normal((3, 2)).astype(np.float32)
    t = torch.from_numpy(buf.copy())
    x = jnp.from_dlpack(t)
    t.mul_(0.0)                                       # torch writes in place later
    np.testing.assert_array_equal(np.asarray(x), buf)
    back = torch.from_dlpack(jnp.asarray(buf) + 1)
    np.testing.assert_array_equal(back.numpy(), buf + 1)
    y = jnp.sin(torch.from_numpy(buf.copy()))         # a tensor into an fnx function
    np.testing.assert_allclose(np.asarray(y), np.sin(buf), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Other libraries' arrays as arguments


@pytest.mark.parametrize("wrap", [ArrayLike, DLPackOnly], ids=["__array__", "dlpack-only"])
def test_foreign_arrays_in_fnx_functions(rng, wrap):
    a = rng.standard_normal((3, 4))
    w = rng.standard_normal((4, 2))
    ref = np.tanh(a @ w)
    np.testing.assert_allclose(np.asarray(jnp.tanh(jnp.asarray(wrap(a)) @ w)), ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jnp.tanh(jnp.matmul(wrap(a), wrap(w)))), ref,
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.jit(lambda p, q: jnp.tanh(p @ q))(wrap(a), w)),
                               ref, rtol=1e-12)
    g = fnx.grad(lambda p: jnp.sum(jnp.sin(p)))(wrap(a))
    np.testing.assert_allclose(np.asarray(g), np.cos(a), rtol=1e-12)
    assert fnx.vmap(jnp.sum)(wrap(a)).shape == (3,)


def test_foreign_argument_is_copied_in(rng):
    a = rng.standard_normal(6)
    first = a.copy()
    views = [jnp.asarray(ArrayLike(a)), jnp.reshape(ArrayLike(a), (2, 3)),
             fnx.jit(lambda v: v)(ArrayLike(a))]
    a[:] = 0.0
    for v in views:
        np.testing.assert_array_equal(np.asarray(v).ravel(), first)


def test_jax_arrays_as_arguments(rng):
    jax = pytest.importorskip("jax")
    a = rng.standard_normal((4, 3))
    ja = jax.numpy.asarray(a)                         # float32: JAX's x64 is off
    assert jnp.exp(ja).dtype == np.float32
    np.testing.assert_allclose(np.asarray(jnp.exp(ja) + ja), np.exp(a) + a, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fnx.jit(lambda x: x.T @ x)(ja)), a.T @ a, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# The array API standard


def _mean_center(x):
    """A function written against the array API standard only."""
    xp = x.__array_namespace__()
    m = xp.mean(x, axis=0, keepdims=True)
    return xp.permute_dims(xp.astype(x - m, xp.float32), (1, 0))


def test_array_namespace_runs_standard_code(rng):
    a = rng.standard_normal((5, 3))
    x = jnp.asarray(a)
    assert x.__array_namespace__() is jnp
    assert x.__array_namespace__(api_version="2023.12") is jnp
    with pytest.raises(ValueError, match="array API versions"):
        x.__array_namespace__(api_version="2099.1")
    out = _mean_center(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), (a - a.mean(0)).T, rtol=1e-6)
    assert jnp.__array_api_version__ == "2024.12"


def test_standard_names(rng):
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal((2, 3))
    x, y = jnp.asarray(a), jnp.asarray(b)
    xp = x.__array_namespace__()
    np.testing.assert_allclose(np.asarray(xp.vecdot(x, y)), (a * b).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(xp.matrix_transpose(x)), a.T)
    np.testing.assert_allclose(np.asarray(xp.concat([x, y], axis=1)), np.concatenate([a, b], 1))
    np.testing.assert_allclose(np.asarray(xp.pow(xp.abs(x), y)), np.abs(a) ** b, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(xp.acos(xp.clip(x, -1, 1))),
                               np.arccos(np.clip(a, -1, 1)), rtol=1e-12)
    i = jnp.asarray(rng.integers(0, 64, 5)).astype(jnp.int32)
    np.testing.assert_array_equal(np.asarray(xp.bitwise_left_shift(i, 2)), np.asarray(i) << 2)
    np.testing.assert_array_equal(np.asarray(xp.bitwise_invert(i)), ~np.asarray(i))
    assert x.device == fnx.devices()[0] and x.to_device(x.device).shape == (2, 3)


def test_isdtype_and_can_cast():
    assert jnp.isdtype(jnp.float32, "real floating")
    assert jnp.isdtype(jnp.bfloat16, "real floating")
    assert jnp.isdtype(jnp.uint8, ("integral", "bool"))
    assert not jnp.isdtype(jnp.complex64, "real floating")
    assert jnp.isdtype(jnp.int16, "numeric") and not jnp.isdtype(jnp.bool_, "numeric")
    assert jnp.isdtype(jnp.float32, jnp.float32) and not jnp.isdtype(jnp.float32, jnp.float64)
    with pytest.raises(ValueError, match="kind"):
        jnp.isdtype(jnp.float32, "floaty")
    for src, dst in [(np.int8, np.int32), (np.float32, np.int32), (np.uint8, np.int8),
                     (jnp.bfloat16, np.float32), (np.float32, jnp.bfloat16)]:
        assert jnp.can_cast(src, dst) == np.can_cast(src, dst)
    assert jnp.can_cast(jnp.ones(2, jnp.int8), jnp.int16)


def test_namespace_info():
    info = jnp.__array_namespace_info__()
    assert info.default_device() == fnx.devices()[0]
    assert info.default_dtypes()["integral"] == jnp.asarray(1).dtype
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}   # x64 is on here
    assert fnx.devices()[0] in info.devices()


@pytest.mark.parametrize("size", [None, 2, 6])
def test_unique_family_matches_jax(rng, size):
    jax = pytest.importorskip("jax")
    a = rng.integers(0, 4, (3, 4)).astype(np.int32)
    a[0, 0] = 7
    for name in ["unique_all", "unique_counts", "unique_inverse", "unique_values"]:
        got = getattr(jnp, name)(jnp.asarray(a), size=size)
        want = getattr(jax.numpy, name)(jax.numpy.asarray(a), size=size)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    got = jnp.unique(jnp.asarray(a), return_index=True, return_inverse=True,
                     return_counts=True, size=size, fill_value=-1)
    want = jax.numpy.unique(jax.numpy.asarray(a), return_index=True, return_inverse=True,
                            return_counts=True, size=size, fill_value=-1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_unique_under_jit_and_nans(rng):
    v = jnp.asarray(np.array([2.0, np.nan, 1.0, np.nan, 2.0]))
    np.testing.assert_array_equal(np.asarray(jnp.unique(v)), [1.0, 2.0, np.nan])  # equal_nan
    np.testing.assert_array_equal(np.asarray(jnp.unique_values(v)), [1.0, 2.0, np.nan, np.nan])
    c = fnx.jit(lambda t: jnp.unique_counts(t, size=4))(v)
    np.testing.assert_array_equal(np.asarray(c.counts), [1, 2, 1, 1])
    with pytest.raises(fnx.ConcretizationTypeError):
        fnx.jit(jnp.unique_values)(v)


# ---------------------------------------------------------------------------------------------
# GPU arrays: the CUDA array interface and DLPack on the device


@pytest.mark.cuda
def test_cuda_array_interface_of_gpu_arrays(rng):
    import cupy as cp
    a = rng.standard_normal((3, 5)).astype(np.float32)
    x = fnx.jit(lambda v: v * 2)(jnp.asarray(a))       # a result of a compiled program
    assert x.device.platform == "gpu"
    cai = x.__cuda_array_interface__
    assert cai["shape"] == (3, 5) and np.dtype(cai["typestr"]) == np.float32
    assert cai["data"][1] is True and cai["version"] == 3     # read-only, as JAX marks it
    assert cai["data"][0] == x._value.data.ptr                # fnx's memory, no copy
    np.testing.assert_array_equal(cp.asnumpy(cp.asarray(x)), a * 2)
    with pytest.raises(AttributeError):
        fnx.device_put(x, fnx.devices("cpu")[0]).__cuda_array_interface__


@pytest.mark.cuda
def test_gpu_dlpack_both_ways(rng):
    import cupy as cp
    a = rng.standard_normal((4, 3)).astype(np.float32)
    c = cp.asarray(a)
    x = jnp.from_dlpack(c)                              # a copy on the device
    assert x.device.platform == "gpu" and x.__dlpack_device__()[0] == 2
    c *= 0
    np.testing.assert_array_equal(np.asarray(x), a)
    shared = jnp.from_dlpack(c, copy=False)
    assert shared._value.data.ptr == c.data.ptr
    back = cp.from_dlpack(x + 1)
    np.testing.assert_allclose(cp.asnumpy(back), a + 1)
    y = jnp.sin(cp.asarray(a))                          # a CuPy array into an fnx function
    np.testing.assert_allclose(np.asarray(y), np.sin(a), rtol=1e-6)
    host = jnp.from_dlpack(cp.asarray(a), device=fnx.devices("cpu")[0])
    assert host.device.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(host), a)
