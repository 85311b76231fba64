"""jax.lax names fnx composes from its primitives (general gather/scatter, tile/stack,
mulhi, ragged_dot, shape tuples, ...) against JAX on CPU with fresh random inputs: values,
and gradients where JAX defines them."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.test_util import assert_close, check_grads

jax = pytest.importorskip("jax")
jl = jax.lax


pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _both(f_fnx, f_jax, *args, grad=True, jax_grad=True):
    """Values agree; where ``grad``, fnx's gradient passes finite differences and (where
    ``jax_grad``) agrees with JAX's for a random projection."""
    out = f_fnx(*map(jnp.asarray, args))
    want = f_jax(*args)
    assert_close(out, np.asarray(want), rtol=1e-12, atol=1e-12)
    if grad:
        check_grads(f_fnx, args, order=1, modes=("rev",))
    if grad and jax_grad:
        w = np.random.default_rng(0).standard_normal(np.shape(want))
        argnums = tuple(range(len(args)))
        g = fnx.grad(lambda *a: (f_fnx(*a) * w).sum(), argnums)(*map(jnp.asarray, args))
        g_want = jax.grad(lambda *a: (f_jax(*a) * w).sum(), argnums)(*args)
        for a, b in zip(g, g_want):
            assert_close(a, np.asarray(b), rtol=1e-12, atol=1e-12)


GATHERS = [  # operand shape, index shape (values in [-1, 5]), dnums, slice sizes, mode
    ((5, 4, 3), (6, 2), ((1, 2), (0,), (0, 1)), (1, 2, 3), "fill"),
    ((5, 4, 3), (6, 2), ((1, 2), (0,), (0, 1)), (1, 2, 3), "clip"),
    ((5, 4), (3, 1), ((1,), (0,), (0,)), (1, 4), "promise_in_bounds"),
    ((5, 4), (2, 3, 1), ((0,), (1,), (1,)), (2, 1), "clip"),
    ((6,), (4, 1), ((), (0,), (0,)), (1,), "fill"),
]


@pytest.mark.parametrize("shape,ishape,dn,sizes,mode", GATHERS)
def test_gather_matches_jax(rng, shape, ishape, dn, sizes, mode):
    x = rng.standard_normal(shape)
    idx = rng.integers(-1, 6, ishape)
    if mode == "promise_in_bounds":
        idx = np.clip(idx, 0, 0)
    out = lax.gather(jnp.asarray(x), jnp.asarray(idx), lax.GatherDimensionNumbers(*dn), sizes,
                     mode=mode)
    want = jl.gather(x, idx, jl.GatherDimensionNumbers(*dn), sizes, mode=mode)
    assert out.shape == want.shape
    np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
    _both(lambda v: lax.gather(v, jnp.asarray(idx), lax.GatherDimensionNumbers(*dn), sizes,
                               mode=mode, fill_value=0.0),
          lambda v: jl.gather(v, idx, jl.GatherDimensionNumbers(*dn), sizes, mode=mode,
                              fill_value=0.0), x)


def test_gather_batching_dims_and_vmap(rng):
    x, idx = rng.standard_normal((3, 5, 2)), rng.integers(0, 5, (3, 4, 1))
    dn = ((2,), (1,), (1,), (0,), (0,))
    f = lambda v: lax.gather(v, jnp.asarray(idx), lax.GatherDimensionNumbers(*dn), (1, 1, 2))
    assert_close(f(jnp.asarray(x)), np.asarray(jl.gather(
        x, idx, jl.GatherDimensionNumbers(*dn), (1, 1, 2))))
    xs = rng.standard_normal((2, 3, 5, 2))
    assert_close(fnx.vmap(f)(jnp.asarray(xs)), np.stack([np.asarray(f(jnp.asarray(v)))
                                                       for v in xs]))
    assert_close(fnx.jit(f)(jnp.asarray(x)), np.asarray(f(jnp.asarray(x))))


SCATTERS = [  # operand shape, index shape, updates shape, dnums, mode
    ((5, 4, 3), (4, 2), (4, 2, 3), ((1, 2), (0,), (0, 1)), "fill"),
    ((5, 4), (3, 1), (3, 4), ((1,), (0,), (0,)), "clip"),
    ((7,), (4, 1), (4,), ((), (0,), (0,)), "fill"),
]


@pytest.mark.parametrize("name", ["scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
                                  "scatter_max"])
@pytest.mark.parametrize("shape,ishape,ushape,dn,mode", SCATTERS)
def test_scatter_family_matches_jax(rng, name, mode, shape, ishape, ushape, dn):
    x, u = rng.standard_normal(shape), rng.standard_normal(ushape)
    idx = rng.integers(-1, 6, ishape)
    if name in ("scatter_min", "scatter_max", "scatter_mul"):
        # distinct in-bounds rows: no ties between updates, whose derivative is a convention
        idx = np.zeros(ishape, int)
        idx[:, 0] = rng.permutation(shape[0])[:ishape[0]]
    f_fnx, f_jax = getattr(lax, name), getattr(jl, name)
    unique = name == "scatter_mul"       # JAX differentiates scatter_mul only then
    _both(lambda a, b: f_fnx(a, jnp.asarray(idx), b, lax.ScatterDimensionNumbers(*dn),
                             mode=mode, unique_indices=unique),
          lambda a, b: f_jax(a, idx, b, jl.ScatterDimensionNumbers(*dn), mode=mode,
                             unique_indices=unique), x, u,
          # JAX's min/max/mul scatter gradients in clip mode are wrong (infinities, the
          # operand credited where an update won); finite differences judge fnx's there
          jax_grad=mode == "fill" or name in ("scatter_add", "scatter_sub"))


def test_scatter_add_repeats_accumulate_and_vmap(rng):
    x, u, idx = rng.standard_normal(4), rng.standard_normal(6), rng.integers(0, 4, (6, 1))
    dn = ((), (0,), (0,))
    f = lambda a, b: lax.scatter_add(a, jnp.asarray(idx), b, lax.ScatterDimensionNumbers(*dn))
    assert_close(f(jnp.asarray(x), jnp.asarray(u)), np.asarray(
        jl.scatter_add(x, idx, u, jl.ScatterDimensionNumbers(*dn))))
    xs, us = rng.standard_normal((3, 4)), rng.standard_normal((3, 6))
    assert_close(fnx.vmap(f)(jnp.asarray(xs), jnp.asarray(us)),
                 np.stack([np.asarray(f(jnp.asarray(a), jnp.asarray(b))) for a, b in zip(xs, us)]))


def test_scatter_apply(rng):
    x, idx = rng.standard_normal((5, 3)), rng.permutation(5)[:3].reshape(3, 1)
    dn = ((1,), (0,), (0,))
    out = lax.scatter_apply(jnp.asarray(x), jnp.asarray(idx), jnp.exp,
                            lax.ScatterDimensionNumbers(*dn), update_shape=(3, 3))
    want = jl.scatter_apply(x, idx, jax.numpy.exp, jl.ScatterDimensionNumbers(*dn),
                            update_shape=(3, 3))
    assert_close(out, np.asarray(want))


def test_dimension_number_types_and_enums():
    assert lax.GatherDimensionNumbers._fields == jl.GatherDimensionNumbers._fields
    assert lax.ScatterDimensionNumbers._fields == jl.ScatterDimensionNumbers._fields
    for ours, theirs in ((lax.GatherScatterMode, jl.GatherScatterMode),
                         (lax.RoundingMethod, jl.RoundingMethod),
                         (lax.RandomAlgorithm, jl.RandomAlgorithm),
                         (lax.AccuracyMode, jl.AccuracyMode)):
        assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in theirs]
    assert [m.name for m in lax.DotAlgorithmPreset] == [m.name for m in jl.DotAlgorithmPreset]
    assert lax.DotAlgorithm._fields == jl.DotAlgorithm._fields
    for s in ("clip", "fill", None, "promise_in_bounds"):
        assert lax.GatherScatterMode.from_any(s).name == jl.GatherScatterMode.from_any(s).name
    with pytest.raises(ValueError):
        lax.GatherScatterMode.from_any("wrap")


def test_tile_stack_unstack_broadcast_like(rng):
    x = rng.standard_normal((2, 3))
    _both(lambda v: lax.tile(v, (2, 3)), lambda v: jl.tile(v, (2, 3)), x)
    _both(lambda a, b: lax.stack([a, b], axis=-1), lambda a, b: jl.stack([a, b], axis=-1),
          x, rng.standard_normal((2, 3)))
    for axis in (0, 1, -1):
        for a, b in zip(lax.unstack(jnp.asarray(x), axis), jl.unstack(x, axis)):
            assert_close(a, np.asarray(b))
    _both(lambda v: lax.broadcast_like(v, jnp.zeros((4, 2, 3))),
          lambda v: jl.broadcast_like(v, np.zeros((4, 2, 3))), x)
    assert lax.empty((2, 3), np.float32).shape == (2, 3)
    assert lax.dtype(np.ones(2, np.float64)) == jl.dtype(np.ones(2, np.float64))
    np.testing.assert_array_equal(lax.shape_as_value((4, 5)), jl.shape_as_value((4, 5)))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16, np.uint8, np.int64])
def test_mulhi_matches_jax(rng, dtype):
    info = np.iinfo(dtype)
    a, b = (rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True) for _ in "ab")
    np.testing.assert_array_equal(np.asarray(lax.mulhi(jnp.asarray(a), jnp.asarray(b))),
                                  np.asarray(jl.mulhi(a, b)))


def test_reduce_xor_matches_jax(rng):
    x = rng.integers(0, 1000, (3, 5, 7)).astype(np.int32)
    for axes in ((0,), (1, 2), (0, 1, 2), ()):
        np.testing.assert_array_equal(np.asarray(lax.reduce_xor(jnp.asarray(x), axes)),
                                      np.asarray(jl.reduce_xor(x, axes)))
    b = rng.random((4, 5)) < 0.5
    np.testing.assert_array_equal(np.asarray(lax.reduce_xor(jnp.asarray(b), (1,))),
                                  np.asarray(jl.reduce_xor(b, (1,))))


@pytest.mark.parametrize("dn", [("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
                                ("NHWC", "OIHW", "NCHW")])
def test_shape_tuples_match_jax(rng, dn):
    assert lax.conv_general_permutations(dn) == jl.conv_general_permutations(dn)
    for _ in range(5):
        n, c, o, h, w, kh, kw = rng.integers(1, 8, 7)
        lhs = dict(zip("NCHW", (n, c, h, w)))
        rhs = dict(zip("OIHW", (o, c, kh, kw)))
        ls, rs = tuple(int(lhs[ch]) for ch in dn[0]), tuple(int(rhs[ch]) for ch in dn[1])
        strides = tuple(int(s) for s in rng.integers(1, 4, 2))
        for pad in ("SAME", "VALID", tuple(tuple(int(p) for p in rng.integers(0, 3, 2))
                                           for _ in range(2))):
            assert lax.conv_transpose_shape_tuple(ls, rs, strides, pad, dn) == tuple(
                jl.conv_transpose_shape_tuple(ls, rs, strides, pad, dn))
        shape, win = tuple(rng.integers(6, 12, 2)), tuple(rng.integers(1, 4, 2))
        pads, bd, wd = ((1, 0), (2, 2)), tuple(rng.integers(1, 3, 2)), tuple(rng.integers(1, 3, 2))
        assert lax.reduce_window_shape_tuple(shape, win, strides, pads, bd, wd) == tuple(
            jl.reduce_window_shape_tuple(shape, win, strides, pads, bd, wd))
    # stax writes an unknown batch as -1, and a window wider than the operand fits nowhere
    for shape, win in (((-1, 6), (1, 2)), ((2, 3), (1, 5)), ((-1, 4), (2, 2))):
        ones, pads = (1, 1), ((0, 0), (0, 0))
        assert lax.reduce_window_shape_tuple(shape, win, ones, pads) == tuple(
            jl.reduce_window_shape_tuple(shape, win, ones, pads, ones, ones))


def test_ragged_dot_matches_jax(rng):
    lhs, rhs = rng.standard_normal((9, 3)), rng.standard_normal((4, 3, 2))
    sizes = np.array([2, 0, 4, 1])          # two rows past the last group give zeros
    _both(lambda a, b: lax.ragged_dot(a, b, jnp.asarray(sizes)),
          lambda a, b: jl.ragged_dot(a, b, sizes), lhs, rhs)
    dn = lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), [0], [0])
    assert_close(lax.ragged_dot_general(jnp.asarray(lhs), jnp.asarray(rhs), jnp.asarray(sizes),
                                        dn), np.asarray(jl.ragged_dot(lhs, rhs, sizes)))


@pytest.mark.parametrize("name", ["approx_max_k", "approx_min_k"])
def test_approx_top_k_is_exact(rng, name):
    x = rng.standard_normal((5, 8))
    for axis in (0, -1):
        got = getattr(lax, name)(jnp.asarray(x), 3, reduction_dimension=axis)
        want = getattr(jl, name)(x, 3, reduction_dimension=axis)
        assert_close(got[0], np.asarray(want[0]))
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))


def test_pbroadcast_pswapaxes_under_vmap(rng):
    v = rng.standard_normal((3, 3, 2))
    for ours, theirs in ((lambda t: lax.pswapaxes(t, "i", 0), lambda t: jl.pswapaxes(t, "i", 0)),
                         (lambda t: lax.pbroadcast(t, "i", 1), lambda t: jl.pbroadcast(t, "i", 1))):
        assert_close(fnx.vmap(ours, axis_name="i")(jnp.asarray(v)),
                     np.asarray(jax.vmap(theirs, axis_name="i")(v)))


def test_tokens_platform_dependent_composite(rng):
    tok = lax.after_all(lax.create_token(), lax.create_token())
    with pytest.raises(TypeError):
        lax.after_all(jnp.ones(2))
    x = rng.standard_normal(4)
    assert_close(lax.platform_dependent(jnp.asarray(x), cpu=jnp.sin, default=jnp.cos), np.sin(x))
    assert_close(lax.platform_dependent(jnp.asarray(x), cuda=jnp.sin, default=jnp.cos), np.cos(x))
    f = lax.composite(lambda v, *, s: s * jnp.tanh(v), name="my.scaled_tanh")
    g = jl.composite(lambda v, *, s: s * jax.numpy.tanh(v), name="my.scaled_tanh")
    # JAX's composite has no derivative rules; fnx's differentiates its decomposition
    _both(lambda v: f(v, s=2.0), lambda v: g(v, s=2.0), x, jax_grad=False)
    assert tok is not None


@pytest.mark.parametrize("dn,shape", [(None, (2, 3, 6, 5)),
                                      (("NHWC", "HWIO", "NHWC"), (2, 6, 5, 3)),
                                      (("NHWC", "OIHW", "NCHW"), (2, 6, 5, 3))])
def test_conv_general_dilated_patches_matches_jax(rng, dn, shape):
    x = rng.standard_normal(shape)
    for pad in ("SAME", ((1, 0), (2, 1))):
        _both(lambda v: lax.conv_general_dilated_patches(v, (2, 3), (1, 2), pad,
                                                         rhs_dilation=(2, 1),
                                                         dimension_numbers=dn),
              lambda v: jl.conv_general_dilated_patches(v, (2, 3), (1, 2), pad,
                                                        rhs_dilation=(2, 1),
                                                        dimension_numbers=dn), x)


def _cube_root(L):
    def cube_root(y):
        f = lambda x: x ** 3 - y                                  # noqa: E731
        newton = lambda f, x0: L.fori_loop(0, 30, lambda i, x: x - f(x) / (3 * x * x), x0)  # noqa
        return L.custom_root(f, 1.0, newton, lambda g, r: r / g(1.0))
    return cube_root


def test_custom_root_derivatives_match_jax(rng):
    y = float(rng.uniform(0.5, 5))
    ours, theirs = _cube_root(lax), _cube_root(jl)
    assert_close(ours(y), y ** (1 / 3), rtol=1e-14)
    for _ in range(3):      # first, second and third derivatives
        ours, theirs = fnx.grad(ours), jax.grad(theirs)
        assert_close(ours(y), float(theirs(y)), rtol=1e-10)


def test_custom_linear_solve_derivatives_match_jax(rng):
    a, b = rng.standard_normal((4, 4)) + 4 * np.eye(4), rng.standard_normal(4)
    w = rng.standard_normal(4)

    def loss(L, solve):
        return lambda m, v: (L.custom_linear_solve(lambda x: m @ x, v, lambda mv, r: solve(m, r),
                                                   lambda mv, r: solve(m.T, r)) * w).sum()
    ours, theirs = loss(lax, jnp.linalg.solve), loss(jl, jax.numpy.linalg.solve)
    assert_close(ours(jnp.asarray(a), jnp.asarray(b)), float(theirs(a, b)), rtol=1e-12)
    for g, g_want in zip(fnx.grad(ours, (0, 1))(jnp.asarray(a), jnp.asarray(b)),
                         jax.grad(theirs, (0, 1))(a, b)):
        assert_close(g, np.asarray(g_want), rtol=1e-10, atol=1e-14)
    assert_close(fnx.hessian(ours, 1)(jnp.asarray(a), jnp.asarray(b)),
                 np.asarray(jax.hessian(theirs, 1)(a, b)), atol=1e-12)
    assert_close(fnx.jacfwd(ours)(jnp.asarray(a), jnp.asarray(b)),
                 np.asarray(jax.grad(theirs)(a, b)), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("dn,shape", [(None, (2, 3, 6, 5)),
                                      (("NHWC", "HWIO", "NHWC"), (2, 6, 5, 3)),
                                      (("NCHW", "OIHW", "NHWC"), (2, 3, 6, 5))])
def test_conv_general_dilated_local_matches_jax(rng, dn, shape):
    x = rng.standard_normal(shape)
    spec = jl.conv_dimension_numbers(shape, (1, 1, 2, 3), dn)
    out_shape = jl.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME",
                                                dimension_numbers=dn).shape
    canonical = (4, out_shape[spec.out_spec[1]]) + tuple(out_shape[d] for d in spec.out_spec[2:])
    w = np.transpose(rng.standard_normal(canonical), np.argsort(spec.rhs_spec))
    _both(lambda v, k: lax.conv_general_dilated_local(v, k, (1, 2), "SAME", (2, 3),
                                                      dimension_numbers=dn),
          lambda v, k: jl.conv_general_dilated_local(v, k, (1, 2), "SAME", (2, 3),
                                                     dimension_numbers=dn), x, w)


def test_scatter_takes_jax_dimension_numbers_and_fnx_axis(rng):
    x, u = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    idx = rng.permutation(np.arange(-1, 6))[:3].reshape(3, 1)      # distinct, some outside
    dn = ((1,), (0,), (0,))
    _both(lambda a, b: lax.scatter(a, jnp.asarray(idx), b, lax.ScatterDimensionNumbers(*dn)),
          lambda a, b: jl.scatter(a, idx, b, jl.ScatterDimensionNumbers(*dn)), x, u)
    # fnx's one-axis form stays
    got = lax.scatter(jnp.zeros(4), jnp.array([1, 1]), jnp.array([2.0, 3.0]), 0, "add")
    assert np.asarray(got).tolist() == [0.0, 5.0, 0.0, 0.0]
