"""fnx.ops.segment_* against jax.ops.segment_* on the CPU: hypothesis draws the data, the ids
(out-of-range and negative ones included), num_segments, mode, bucket_size and the hints, and
each case runs eagerly, under jit, vmap and grad."""
import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import fnx
import fnx.numpy as jnp

OPS = ["segment_sum", "segment_prod", "segment_max", "segment_min"]
SETTINGS = settings(max_examples=15, deadline=None)


@st.composite
def segment_cases(draw):
    """``(data, ids, kwargs)``: ids in [-3, num_segments + 2], sorted and unique only when the
    hints say so, and in range where ``promise_in_bounds`` promises it."""
    n = draw(st.integers(1, 10))
    num_segments = draw(st.integers(0, 6))
    mode = draw(st.sampled_from([None, "drop", "fill", "clip", "promise_in_bounds"]))
    lo, hi = (0, num_segments - 1) if mode == "promise_in_bounds" else (-3, num_segments + 2)
    if hi < lo:
        mode, lo, hi = None, -3, 2
    ids = np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), np.int32)
    sorted_hint = draw(st.booleans())
    if sorted_hint:
        ids = np.sort(ids)
    unique_hint = draw(st.booleans()) and len(set(ids.tolist())) == n
    dtype = draw(st.sampled_from([np.float32, np.float64, np.int32]))
    rows = draw(st.sampled_from([(), (2,), (2, 3)]))
    seed = draw(st.integers(0, 2 ** 16))
    # small integers: ties for max/min, exact sums and products in every dtype
    data = np.random.default_rng(seed).integers(-3, 4, (n,) + rows).astype(dtype)
    kwargs = dict(num_segments=num_segments, indices_are_sorted=sorted_hint,
                  unique_indices=unique_hint, mode=mode,
                  bucket_size=draw(st.sampled_from([None, 1, 2, 3, 16])))
    return data, ids, kwargs


@pytest.fixture(autouse=True, scope="module")
def _jax_x64():
    """JAX with 64-bit types, as fnx runs in these tests: float64 and int64 data compare."""
    with jax.enable_x64(True):
        yield


def _ref(name, data, ids, **kw):
    # jitted: JAX's op-by-op dispatch compiles every primitive of every new shape
    return np.asarray(jax.jit(lambda d, i: getattr(jax.ops, name)(d, i, **kw))(data, ids))


@pytest.mark.parametrize("name", OPS)
@SETTINGS
@given(case=segment_cases())
def test_segment_ops_match_jax(name, case):
    data, ids, kw = case
    want = _ref(name, data, ids, **kw)
    f = getattr(fnx.ops, name)
    got = f(data, ids, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)
    jitted = fnx.jit(lambda d, i: f(d, i, **kw))(data, ids)
    np.testing.assert_array_equal(np.asarray(jitted), want)
    inferred = dict(kw, num_segments=None)              # max(ids) + 1 segments, as JAX
    if ids.max() < -1:
        with pytest.raises(ValueError, match="non-negative"):
            f(data, ids, **inferred)
    else:
        np.testing.assert_array_equal(np.asarray(f(data, ids, **inferred)),
                                      np.asarray(getattr(jax.ops, name)(data, ids, **inferred)))


@pytest.mark.parametrize("name", OPS)
@SETTINGS
@given(case=segment_cases(), batch=st.integers(1, 3), ids_batched=st.booleans())
def test_segment_ops_under_vmap_match_jax(name, case, batch, ids_batched):
    data, ids, kw = case
    kw = dict(kw, indices_are_sorted=False, unique_indices=False)
    datas = np.stack([data + k for k in range(batch)])
    idss = np.stack([np.roll(ids, k) for k in range(batch)]) if ids_batched else ids
    f = getattr(fnx.ops, name)
    got = fnx.vmap(lambda d, i: f(d, i, **kw), (0, 0 if ids_batched else None))(datas, idss)
    want = np.stack([_ref(name, datas[k], idss[k] if ids_batched else ids, **kw)
                     for k in range(batch)])
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("name", ["segment_sum", "segment_max", "segment_min"])
@SETTINGS
@given(case=segment_cases())
def test_segment_ops_grad_matches_jax(name, case):
    data, ids, kw = case
    assume(kw["num_segments"] > 0)      # JAX's grad fails on an empty result
    # and gives inf where a clipped id's row wins an extremum (fnx: the row's cotangent)
    assume(kw["mode"] != "clip" or name == "segment_sum")
    data = data.astype(np.float64)
    weights = np.random.default_rng(0).standard_normal(
        (kw["num_segments"],) + data.shape[1:])

    def loss(ops, np_):
        def f(d):
            out = getattr(ops, name)(d, ids, **kw)
            return np_.sum(np_.where(np_.isfinite(out), out, 0.0) * weights)
        return f
    want = np.asarray(jax.jit(jax.grad(loss(jax.ops, jnp_ref)))(data))
    got = fnx.grad(loss(fnx.ops, jnp))(data)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_segment_ops_errors_match_jax():
    data = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="non-negative"):        # max(ids) + 1 < 0, as JAX
        fnx.ops.segment_sum(data, np.array([-3, -4, -5], np.int32))
    with pytest.raises(ValueError, match=r"\(2,\) and \(3, 2\)"):
        fnx.ops.segment_sum(data, np.array([0, 1], np.int32), 2)
    with pytest.raises(TypeError, match="integers"):
        fnx.ops.segment_max(data, np.array([0.0, 1.0, 1.0]), 2)
    with pytest.raises(ValueError, match="unknown mode"):
        fnx.ops.segment_min(data, np.array([0, 1, 1], np.int32), 2, mode="wrap")
    with pytest.raises(fnx.ConcretizationTypeError):     # num_segments unknown under jit
        fnx.jit(lambda d, i: fnx.ops.segment_sum(d, i))(data, np.array([0, 1, 1], np.int32))


def test_segment_mode_takes_jax_enum():
    data, ids = np.arange(4.0), np.array([0, 5, -2, 1], np.int32)
    mode = jax.lax.GatherScatterMode.CLIP
    np.testing.assert_array_equal(np.asarray(fnx.ops.segment_sum(data, ids, 3, mode=mode)),
                                  _ref("segment_sum", data, ids, num_segments=3, mode=mode))
