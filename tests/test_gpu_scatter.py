"""Scatter on the GPU against float64 NumPy (``np.add.at``), on fresh random inputs, in particular
segment sums of many updates into few segments, which add through per-block copies of the
result in shared memory (fnx.cuda.scatter); out-of-range indices are dropped, as XLA does."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.cuda import scatter

pytestmark = pytest.mark.cuda


def _run(f, args, gpu):
    import cupy as cp
    from fnx.cuda.lowering import lower
    closed = fnx.make_jaxpr(f)(*args)
    exe = lower(closed.jaxpr, closed.consts, gpu)
    return [cp.asnumpy(o) for o in exe(*[cp.asarray(a) for a in args])]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("segments,width,points", [(256, 64, 65536), (256, None, 65536),
                                                     (7, 3, 1000), (3000, 2, 40000)])
def test_segment_sums_match_numpy(gpu, rng, dtype, segments, width, points):
    shape = (points,) if width is None else (points, width)
    data = (rng.standard_normal(shape) * 10).astype(dtype)
    ids = rng.integers(-2, segments + 2, points).astype(np.int32)   # a few out of range
    (got,) = _run(lambda d, i: fnx.ops.segment_sum(d, i, num_segments=segments),
                  [data, ids], gpu)
    want = np.zeros((segments,) + shape[1:], np.float64 if dtype != np.int32 else np.int64)
    keep = (ids >= 0) & (ids < segments)
    np.add.at(want, ids[keep], data[keep])
    assert got.dtype == dtype
    tol = dict(rtol=1e-5, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(got, want.astype(dtype) if dtype == np.int32 else want, **tol)


def test_few_segments_add_through_shared_memory_copies():
    """The choice: many updates into a result that fits in shared memory."""
    (_, name), = scatter.units(np.float32, np.int32, "add", 256 * 64, 65536 * 64)
    assert name == "fnx_scatter_private"
    (_, name), = scatter.units(np.float32, np.int32, "add", 3000 * 200, 40000 * 200)
    assert name == "fnx_scatter"                # too large a result for shared memory
    (_, name), *_ = scatter.units(np.float32, np.int32, "set", 256, 65536)
    assert name == "fnx_scatter"


@pytest.mark.parametrize("post", [3, 4])      # (4 divides a block: one column per thread)
def test_scatter_add_along_a_middle_axis(gpu, rng, post):
    x = rng.standard_normal((5, 16, post)).astype(np.float32)
    upd = rng.standard_normal((5, 4000, post)).astype(np.float32)
    idx = rng.integers(0, 16, 4000).astype(np.int32)
    (got,) = _run(lambda x, u, i: x.at[:, i].add(u), [x, upd, idx], gpu)
    want = x.astype(np.float64)
    np.add.at(want, (slice(None), idx), upd)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


@pytest.fixture
def deterministic():
    with fnx.config.option("gpu_deterministic_ops", True):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("mode", ["add", "mul"])
@pytest.mark.parametrize("segments,width,points", [(256, 64, 65536), (7, None, 5000),
                                                     (3000, 2, 40000)])
def test_deterministic_scatter_is_numpys_sequential_order(gpu, rng, deterministic, dtype, mode,
                                                          segments, width, points):
    """With gpu_deterministic_ops each element combines its updates in index order from its
    own value: bit for bit NumPy's ``ufunc.at`` in the same dtype, jitted and eager alike."""
    shape = (points,) if width is None else (points, width)
    scale = 10 if mode == "add" else 1
    data = (rng.standard_normal(shape) * scale).astype(dtype)
    if mode == "mul":       # factors near 1, so long products stay finite
        data = (1 + rng.standard_normal(shape) * 0.01).astype(dtype) if dtype != np.int32 \
            else rng.integers(-1, 2, shape).astype(dtype)
    x = (rng.standard_normal((segments,) + shape[1:]) * scale).astype(dtype)
    ids = rng.integers(0, segments + 2, points).astype(np.int32)   # a few past the end

    def f(x, d, i):
        return x.at[i].add(d, mode="drop") if mode == "add" else x.at[i].multiply(d, mode="drop")
    keep = (ids >= 0) & (ids < segments)
    want = x.copy()
    (np.add if mode == "add" else np.multiply).at(want, ids[keep], data[keep])
    (got,) = _run(f, [x, data, ids], gpu)
    np.testing.assert_array_equal(got, want)
    eager = f(*[fnx.device_put(a, gpu) for a in (x, data, ids)])
    np.testing.assert_array_equal(np.asarray(eager), want)


def test_deterministic_scatter_repeats_its_bits_under_a_graph(gpu, rng, deterministic):
    """A jitted segment sum replayed from its CUDA graph gives the same bits every call."""
    data = rng.standard_normal((65536, 64)).astype(np.float32)
    ids = rng.integers(0, 256, 65536).astype(np.int32)
    f = fnx.jit(lambda d, i: fnx.ops.segment_sum(d, i, num_segments=256))
    args = [fnx.device_put(a, gpu) for a in (data, ids)]
    first = np.asarray(f(*args))
    for _ in range(4):
        np.testing.assert_array_equal(np.asarray(f(*args)), first)
    assert f.lower(*args).compile().graph is not None
    (_, name), = scatter.units(np.float32, np.int32, "add", 256 * 64, 65536 * 64, True)
    assert name == "fnx_scatter_ordered"
