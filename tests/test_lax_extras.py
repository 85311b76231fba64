"""The small jax.lax functions composed from primitives (clamp, top_k, cumlogsumexp, ...)
against NumPy, with grad, vmap and jit for the differentiable ones."""
import math

import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.core.errors import ShapeError
from fnx.test_util import assert_close, check_grads


def _vmap_jit_agree(f, x, rtol=1e-12):
    """vmap over the leading axis equals stacking, and jit equals eager."""
    stacked = np.stack([np.asarray(f(jnp.asarray(xi))) for xi in x])
    assert_close(fnx.vmap(f)(jnp.asarray(x)), stacked, rtol=rtol)
    assert_close(fnx.jit(f)(jnp.asarray(x[0])), stacked[0], rtol=rtol)


# ---------------------------------------------------------------------------------------------
# Elementwise


def test_clamp(rng):
    x = rng.standard_normal((4, 5)) * 3
    x = np.where(np.abs(np.abs(x) - 1) < 1e-2, 0.5, x)    # off the bounds for the gradient
    assert_close(lax.clamp(-1.0, jnp.asarray(x), 1.0), np.clip(x, -1, 1))
    lo, hi = -np.abs(rng.standard_normal((4, 5))), np.abs(rng.standard_normal((4, 5)))
    assert_close(lax.clamp(jnp.asarray(lo), jnp.asarray(x), jnp.asarray(hi)), np.clip(x, lo, hi))
    check_grads(lambda v: lax.clamp(-1.0, v, 1.0), (x,), order=1)
    g = fnx.grad(lambda v: lax.clamp(-1.0, v, 1.0).sum())(jnp.asarray(x))
    assert_close(g, (np.abs(x) < 1).astype(float))
    _vmap_jit_agree(lambda v: lax.clamp(-1.0, v, 1.0), x)
    assert np.asarray(lax.clamp(0, jnp.arange(-2, 3), 1)).tolist() == [0, 0, 0, 1, 1]


def test_reciprocal_exp2_cbrt_erfc(rng):
    x = rng.standard_normal(20) * 2
    pos = np.abs(x) + 0.1
    assert_close(lax.reciprocal(jnp.asarray(pos)), 1 / pos)
    assert_close(lax.exp2(jnp.asarray(x)), np.exp2(x), rtol=1e-14)
    assert_close(lax.cbrt(jnp.asarray(x)), np.cbrt(x), rtol=1e-14)
    erfc = np.vectorize(math.erfc)
    assert_close(lax.erfc(jnp.asarray(x)), erfc(x), rtol=1e-10, atol=1e-15)
    assert np.asarray(lax.exp2(jnp.asarray([3.0, -1.0, 0.0]))).tolist() == [8.0, 0.5, 1.0]
    assert np.asarray(lax.cbrt(jnp.asarray([-8.0, 27.0]))).tolist() == pytest.approx([-2, 3])
    for f, arg in ((lax.reciprocal, pos), (lax.exp2, x), (lax.cbrt, np.where(
            np.abs(x) < 0.1, 0.3, x)), (lax.erfc, x)):
        check_grads(f, (arg,), order=2)
        _vmap_jit_agree(f, arg.reshape(4, 5))
    # float32 in, float32 out
    assert lax.erfc(jnp.ones(2, jnp.float32)).dtype == np.float32
    assert lax.exp2(jnp.ones(2, jnp.float32)).dtype == np.float32


def test_full_like():
    x = jnp.ones((2, 3), jnp.float32)
    y = lax.full_like(x, 7)
    assert y.shape == (2, 3) and y.dtype == np.float32
    assert np.asarray(y).tolist() == [[7.0] * 3] * 2
    z = lax.full_like(x, 2, dtype=jnp.int32, shape=(4,))
    assert z.dtype == np.int32 and np.asarray(z).tolist() == [2, 2, 2, 2]


# ---------------------------------------------------------------------------------------------
# Shapes and indexing


def test_broadcast_broadcast_to_rank_collapse(rng):
    x = rng.standard_normal((3, 4))
    b = lax.broadcast(jnp.asarray(x), (2, 5))
    assert_close(b, np.broadcast_to(x, (2, 5, 3, 4)))
    assert lax.broadcast_to_rank(jnp.asarray(x), 4).shape == (1, 1, 3, 4)
    assert lax.broadcast_to_rank(jnp.asarray(x), 2).shape == (3, 4)
    y = rng.standard_normal((2, 3, 4, 5))
    assert_close(lax.collapse(jnp.asarray(y), 1, 3), y.reshape(2, 12, 5))
    assert_close(lax.collapse(jnp.asarray(y), 1), y.reshape(2, 60))
    assert_close(lax.collapse(jnp.asarray(y), -2), y.reshape(2, 3, 20))
    with pytest.raises(ValueError):
        lax.collapse(jnp.asarray(y), 3, 1)
    # broadcast's transpose sums over the new axes
    g = fnx.grad(lambda v: (lax.broadcast(v, (2, 5)) ** 2).sum())(jnp.asarray(x))
    assert_close(g, 20 * x)


def test_index_in_dim(rng):
    x = rng.standard_normal((3, 4, 5))
    assert_close(lax.index_in_dim(jnp.asarray(x), 2, axis=1), x[:, 2:3])
    assert_close(lax.index_in_dim(jnp.asarray(x), -1, axis=2, keepdims=False), x[:, :, -1])
    assert_close(lax.index_in_dim(jnp.asarray(x), 0), x[0:1])
    with pytest.raises(IndexError):
        lax.index_in_dim(jnp.asarray(x), 3)
    g = fnx.grad(lambda v: lax.index_in_dim(v, 1, 1, False).sum())(jnp.asarray(x))
    expected = np.zeros_like(x)
    expected[:, 1] = 1
    assert_close(g, expected)


def test_index_take(rng):
    x = rng.standard_normal((3, 4, 5))
    i, j = np.array([0, 2, -1, 5]), np.array([1, -2, 4, 0])
    out = lax.index_take(jnp.asarray(x), (jnp.asarray(i), jnp.asarray(j)), (0, 2))
    # wraparound indices, as JAX: the gathered entries first, then the remaining axis
    assert_close(out, x[i % 3][np.arange(4), :, j % 5])
    out1 = lax.index_take(jnp.asarray(x), (jnp.asarray([3, 1]),), (1,))
    assert_close(out1, np.moveaxis(x[:, [3, 1]], 1, 0))
    ct = rng.standard_normal((4, 4))
    g = fnx.grad(lambda v: (lax.index_take(v, (jnp.asarray(i), jnp.asarray(j)), (0, 2))
                            * ct).sum())(jnp.asarray(x))
    expected = np.zeros_like(x)
    np.add.at(expected, (i % 3, slice(None), j % 5), ct)
    assert_close(g, expected)


def test_batch_matmul(rng):
    a, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 5, 6))
    assert_close(lax.batch_matmul(jnp.asarray(a), jnp.asarray(b)), a @ b, rtol=1e-12)
    check_grads(lax.batch_matmul, (a[0], b[0]), order=1)
    with pytest.raises(ValueError):
        lax.batch_matmul(jnp.asarray(a), jnp.asarray(b[0]))
    with pytest.raises(ValueError):
        lax.batch_matmul(jnp.ones(3), jnp.ones(3))
    out = fnx.vmap(lax.batch_matmul)(jnp.asarray(a), jnp.asarray(b))
    assert_close(out, a @ b, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# top_k


def test_top_k_values_and_indices(rng):
    x = rng.standard_normal((4, 7))
    vals, idx = lax.top_k(jnp.asarray(x), 3)
    order = np.argsort(-x, axis=-1, kind="stable")[:, :3]
    assert idx.dtype == np.int32
    assert np.asarray(idx).tolist() == order.tolist()
    assert_close(vals, np.take_along_axis(x, order, -1))
    v0, i0 = lax.top_k(jnp.asarray(x), 0)
    assert v0.shape == i0.shape == (4, 0)
    with pytest.raises(ValueError):
        lax.top_k(jnp.asarray(x), 8)


def test_top_k_ties_and_integers():
    vals, idx = lax.top_k(jnp.asarray([1, 3, 3, 2, 3], dtype=jnp.int32), 4)
    assert np.asarray(vals).tolist() == [3, 3, 3, 2]
    assert np.asarray(idx).tolist() == [1, 2, 4, 3]     # equal values in index order
    lo = np.iinfo(np.int32).min
    vals, idx = lax.top_k(jnp.asarray([lo, 0, lo], dtype=jnp.int32), 3)
    assert np.asarray(vals).tolist() == [0, lo, lo] and np.asarray(idx).tolist() == [1, 0, 2]
    vals, _ = lax.top_k(jnp.asarray([0, 255, 7], dtype=jnp.uint8), 2)
    assert np.asarray(vals).tolist() == [255, 7]


def test_top_k_grad_vmap_jit(rng):
    x = rng.standard_normal((3, 6))
    check_grads(lambda v: lax.top_k(v, 2)[0], (x,), order=2)
    g = fnx.grad(lambda v: (lax.top_k(v, 2)[0] * jnp.asarray([10.0, 1.0])).sum())(
        jnp.asarray(x))
    order = np.argsort(-x, axis=-1)
    expected = np.zeros_like(x)
    expected[np.arange(3), order[:, 0]] = 10.0
    expected[np.arange(3), order[:, 1]] = 1.0
    assert_close(g, expected)
    _vmap_jit_agree(lambda v: lax.top_k(v, 3)[0], x.reshape(3, 2, 3))
    idx = fnx.vmap(lambda v: lax.top_k(v, 2)[1])(jnp.asarray(x))
    assert np.asarray(idx).tolist() == order[:, :2].tolist()


# ---------------------------------------------------------------------------------------------
# Cumulative reductions


def _np_cum(op, x, axis, reverse):
    if reverse:
        return np.flip(op(np.flip(x, axis), axis=axis), axis)
    return op(x, axis=axis)


def _np_cumlogsumexp(x, axis=0):
    return np.logaddexp.accumulate(x, axis=axis)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_ops(axis, reverse, rng):
    x = rng.standard_normal((5, 6)) * 2
    cases = [(lax.cumprod, np.cumprod), (lax.cummax, np.maximum.accumulate),
             (lax.cummin, np.minimum.accumulate), (lax.cumlogsumexp, _np_cumlogsumexp)]
    for f, ref in cases:
        expected = _np_cum(lambda a, axis: ref(a, axis=axis), x, axis, reverse)
        assert_close(f(jnp.asarray(x), axis=axis, reverse=reverse), expected, rtol=1e-12)


def test_cumlogsumexp_extremes_and_grad(rng):
    x = np.array([1000.0, 1000.0, -np.inf, 999.0])
    assert_close(lax.cumlogsumexp(jnp.asarray(x)), np.logaddexp.accumulate(x))
    y = np.array([-np.inf, -np.inf, 0.0])
    assert_close(lax.cumlogsumexp(jnp.asarray(y)), [-np.inf, -np.inf, 0.0])
    z = rng.standard_normal((3, 4))
    check_grads(lambda v: lax.cumlogsumexp(v, axis=1), (z,), order=2)
    check_grads(lambda v: lax.cumlogsumexp(v, axis=0, reverse=True), (z,), order=1)
    # d/dx_j sum_i lse(x[:i+1]) = sum_{i>=j} softmax(x[:i+1])_j
    v = z[0]
    expected = [sum(np.exp(v[j] - np.logaddexp.reduce(v[:i + 1])) for i in range(j, 4))
                for j in range(4)]
    assert_close(fnx.grad(lambda a: lax.cumlogsumexp(a).sum())(jnp.asarray(v)), expected)
    _vmap_jit_agree(lambda a: lax.cumlogsumexp(a, axis=0, reverse=True), z)
    assert np.all(np.isfinite(np.asarray(fnx.grad(lambda a: lax.cumlogsumexp(a)[-1])(
        jnp.asarray(x)))))


def test_cumprod_grad_vmap(rng):
    x = rng.standard_normal((3, 4)) + 2
    check_grads(lambda v: lax.cumprod(v, axis=1), (x,), order=2)
    _vmap_jit_agree(lambda v: lax.cumprod(v, axis=0, reverse=True), x)


def _sequential_scan(fn, xs, reverse=False):
    """The inclusive scan, one element at a time, along axis 0 (the reference)."""
    order = range(len(xs[0]))[::-1] if reverse else range(len(xs[0]))
    out, acc = [None] * len(xs[0]), None
    for i in order:
        item = tuple(x[i] for x in xs)
        acc = item if acc is None else fn(acc, item)
        out[i] = acc
    return tuple(np.stack([o[k] for o in out]) for k in range(len(xs)))


def _linear_recurrence(a, b):
    """Two steps of h_t = a_t h_(t-1) + b_t, as one (decay, input) pair."""
    return a[0] * b[0], b[0] * a[1] + b[1]


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_against_a_sequential_loop(n, reverse):
    rng = np.random.default_rng(n)
    decay, x = rng.uniform(0.5, 1.0, (n, 3)), rng.standard_normal((n, 3))
    expected = _sequential_scan(_linear_recurrence, (decay, x), reverse)
    out = lax.associative_scan(_linear_recurrence, (decay, x), reverse=reverse)
    for o, e in zip(out, expected):
        np.testing.assert_allclose(np.asarray(o), e, rtol=1e-12)
    np.testing.assert_allclose(lax.associative_scan(jnp.add, x, reverse=reverse),
                               _sequential_scan(lambda p, q: (p[0] + q[0],), (x,), reverse)[0],
                               rtol=1e-12)
    np.testing.assert_allclose(lax.associative_scan(jnp.maximum, x.T, axis=1).T,
                               np.maximum.accumulate(x, axis=0))


def test_associative_scan_under_grad_vmap_and_jit():
    rng = np.random.default_rng(3)
    decay, x = rng.uniform(0.5, 1.0, (7, 2)), rng.standard_normal((7, 2))

    def last_state(decay, x):
        return lax.associative_scan(_linear_recurrence, (decay, x))[1][-1]

    check_grads(last_state, (decay, x), order=2)
    batched = fnx.jit(fnx.vmap(last_state, in_axes=(None, 2)))(decay, x[:, :, None] * [1., 2.])
    for k, scale in enumerate([1.0, 2.0]):
        h = np.zeros(2)
        for t in range(7):
            h = decay[t] * h + scale * x[t]
        np.testing.assert_allclose(np.asarray(batched)[k], h, rtol=1e-12)


def test_associative_scan_names_mismatched_lengths():
    with pytest.raises(ShapeError, match=r"one length along axis 0.*\(3,\), \(4,\)"):
        lax.associative_scan(lambda a, b: a, (np.ones(3), np.ones(4)))


# ---------------------------------------------------------------------------------------------
# JAX's remaining lax names (fnx/lax/extras.py), against JAX on the CPU

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("reducer, ref, init", [
    (lax.add, "add", 0.0), (jnp.maximum, "max", -np.inf), (lambda a, b: a * b, "mul", 1.0),
    (lax.min, "min", 0.25)])
def test_reduce_with_monoid_matches_jax(rng, reducer, ref, init):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    want = jax.lax.reduce(x, np.float32(init), getattr(jax.lax, ref), (0, 2))
    assert_close(lax.reduce(x, init, reducer, (0, 2)), want, rtol=1e-6)
    assert_close(fnx.jit(lambda v: lax.reduce(v, init, reducer, (0, 2)))(x), want, rtol=1e-6)
    g = fnx.grad(lambda v: jnp.sum(lax.reduce(v, init, reducer, (1,))))(x)
    g_ref = jax.grad(lambda v: jax.numpy.sum(jax.lax.reduce(v, np.float32(init),
                                                            getattr(jax.lax, ref), (1,))))(x)
    assert_close(g, g_ref, rtol=1e-5)


def _argmax_pairs(np_):
    def larger(a, b):
        (va, ia), (vb, ib) = a, b
        take_a = (va > vb) | ((va == vb) & (ia < ib))
        return np_.where(take_a, va, vb), np_.where(take_a, ia, ib)
    return larger


@pytest.mark.x32
@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1)])
def test_variadic_reduce_matches_jax(rng, dims, jax_x64_as_fnx):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    x[2, 3] = x[2, 5]                                   # a tie: the lower index wins
    index = np.broadcast_to(np.arange(7, dtype=np.int32), (5, 7)) if dims != (0,) else \
        np.broadcast_to(np.arange(5, dtype=np.int32)[:, None], (5, 7))
    inits = (-np.inf, np.int32(0))
    want = jax.lax.reduce((x, index), inits, _argmax_pairs(jax.numpy), dims)
    for got in (lax.reduce((x, index), inits, _argmax_pairs(jnp), dims),
                fnx.jit(lambda x: lax.reduce((x, index), inits, _argmax_pairs(jnp), dims))(x)):
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


@pytest.mark.x32
def test_reduce_with_another_commutative_reducer_matches_jax(rng, jax_x64_as_fnx):
    def f(a, b):                       # associative and commutative, but no monoid fnx knows
        return a * b + a + b
    x = (0.1 * rng.standard_normal((4, 5))).astype(np.float32)
    assert_close(lax.reduce(x, 0.0, f, (1,)), jax.lax.reduce(x, np.float32(0.0), f, (1,)),
                 rtol=1e-5)
    empty = np.zeros((0, 3), np.float32)
    assert_close(lax.reduce(empty, 1.0, f, (0,)), np.ones(3))
    with pytest.raises(TypeError, match="returned"):
        lax.reduce((x, x), (0.0, 0.0), lambda a, b: a[0] + b[0], (0,))


def test_sort_key_val_and_multi_operand_sort(rng):
    k = rng.integers(0, 4, size=(3, 6)).astype(np.int32)
    v = rng.standard_normal((3, 6)).astype(np.float32)
    for got, want in zip(lax.sort_key_val(k, v, dimension=1),
                         jax.lax.sort_key_val(k, v, dimension=1)):
        assert_close(got, want)
    for got, want in zip(lax.sort((k, v), num_keys=1), jax.lax.sort((k, v), num_keys=1)):
        assert_close(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32])
def test_population_count_and_clz_match_jax(rng, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=40, dtype=dtype, endpoint=True)
    x[:3] = [0, info.max, info.min]
    for name in ("population_count", "clz"):
        got = getattr(lax, name)(x)
        assert got.dtype == dtype
        assert_close(got, getattr(jax.lax, name)(x))
        assert_close(fnx.jit(getattr(lax, name))(x), got)


@pytest.mark.parametrize("exponent_bits, mantissa_bits", [(8, 7), (5, 10), (4, 3), (8, 23)])
def test_reduce_precision_matches_jax(rng, exponent_bits, mantissa_bits):
    # normal numbers of the narrow format, and values past its range (inf) and NaN
    x = (rng.standard_normal(200) * 2.0 ** rng.integers(-5, 5, 200)).astype(np.float32)
    x[:3] = [np.nan, 1e30, -1e30]
    want = jax.lax.reduce_precision(x, exponent_bits, mantissa_bits)
    assert_close(lax.reduce_precision(x, exponent_bits, mantissa_bits), want)
    g = fnx.grad(lambda v: lax.reduce_precision(v, exponent_bits, mantissa_bits) * 3.0)(1.3)
    assert_close(g, jax.grad(lambda v: jax.lax.reduce_precision(
        v, exponent_bits, mantissa_bits) * 3.0)(1.3))


def test_shape_helpers_match_jax():
    dn = ("NHWC", "HWIO", "NHWC")
    for lhs, rhs, strides, pad, d in [((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), [(1, 1), (1, 1)],
                                       ("NCHW", "OIHW", "NCHW")),
                                      ((2, 9, 7, 3), (3, 2, 3, 5), (2, 1), "SAME", dn),
                                      ((2, 9, 7, 3), (3, 2, 3, 5), (2, 3), "VALID", dn)]:
        assert lax.conv_general_shape_tuple(lhs, rhs, strides, pad, d) == \
            jax.lax.conv_general_shape_tuple(lhs, rhs, strides, pad, d)
    assert lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 2, 2), (2, 2), [(0, 1), (1, 0)]) == \
        jax.lax.conv_shape_tuple((2, 3, 9, 9), (4, 3, 2, 2), (2, 2), [(0, 1), (1, 0)])
    assert lax.broadcast_shapes((2, 1), (3,), (1, 1, 1)) == \
        jax.lax.broadcast_shapes((2, 1), (3,), (1, 1, 1))
    x = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    for got, want in zip(lax.split(x, (1, 4)), jax.lax.split(x, (1, 4))):
        assert_close(got, want)
    assert lax.optimization_barrier(x) is x
