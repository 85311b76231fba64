"""Collectives under vmap(axis_name=...): values against per-device NumPy definitions, JAX's
rules under jvp/grad/jit/control flow, and the unbound-axis error."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.test_util import check_grads


def per_device(fn, xs):
    """vmap(fn, axis_name='i') over the leading axis of xs."""
    return np.asarray(fnx.vmap(fn, axis_name="i")(jnp.asarray(xs)))


def test_reductions_match_numpy(rng):
    xs = rng.standard_normal((5, 3, 2))
    n = len(xs)
    np.testing.assert_allclose(per_device(lambda x: lax.psum(x, "i"), xs),
                               np.broadcast_to(xs.sum(0), xs.shape), rtol=1e-12)
    np.testing.assert_allclose(per_device(lambda x: lax.pmean(x, "i"), xs),
                               np.broadcast_to(xs.mean(0), xs.shape), rtol=1e-12)
    np.testing.assert_allclose(per_device(lambda x: lax.pmax(x, "i"), xs),
                               np.broadcast_to(xs.max(0), xs.shape))
    np.testing.assert_allclose(per_device(lambda x: lax.pmin(x, "i"), xs),
                               np.broadcast_to(xs.min(0), xs.shape))
    # an operand that does not vary over the axis: psum multiplies by the axis size
    c = rng.standard_normal(3)
    np.testing.assert_allclose(per_device(lambda x: lax.psum(jnp.asarray(c), "i"), xs),
                               np.broadcast_to(n * c, (n, 3)), rtol=1e-12)
    np.testing.assert_allclose(per_device(lambda x: x * lax.axis_size("i"), xs), n * xs)


@pytest.mark.parametrize("axis,tiled", [(0, False), (1, False), (2, False), (0, True),
                                        (1, True)])
def test_all_gather_and_psum_scatter(rng, axis, tiled):
    xs = rng.standard_normal((4, 4, 4))
    join = np.concatenate if tiled else np.stack
    gathered = join(list(xs), axis=axis)
    got = per_device(lambda x: lax.all_gather(x, "i", axis=axis, tiled=tiled), xs)
    np.testing.assert_allclose(got, np.broadcast_to(gathered, (4,) + gathered.shape))
    if axis == 2:
        return
    total = xs.sum(0)
    blocks = np.split(total, 4, axis=axis)
    want = np.stack([b if tiled else np.squeeze(b, axis) for b in blocks])
    got = per_device(lambda x: lax.psum_scatter(x, "i", scatter_dimension=axis, tiled=tiled), xs)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_ppermute_and_axis_index(rng):
    xs = rng.standard_normal((4, 3))
    perm = [(0, 2), (2, 1), (1, 0)]          # device 3 receives nothing: zeros
    want = np.zeros_like(xs)
    for s, d in perm:
        want[d] = xs[s]
    np.testing.assert_allclose(per_device(lambda x: lax.ppermute(x, "i", perm), xs), want)
    np.testing.assert_array_equal(per_device(lambda x: lax.axis_index("i"), xs), np.arange(4))
    np.testing.assert_allclose(per_device(lambda x: lax.pshuffle(x, "i", [3, 0, 1, 2]), xs),
                               xs[[3, 0, 1, 2]])


@pytest.mark.parametrize("split,concat", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_all_to_all(rng, split, concat):
    n = 4
    xs = rng.standard_normal((n, 4, 8))
    got = per_device(lambda x: lax.all_to_all(x, "i", split, concat, tiled=True), xs)
    want = np.stack([np.concatenate([np.split(xs[j], n, axis=split)[k] for j in range(n)],
                                    axis=concat) for k in range(n)])
    np.testing.assert_allclose(got, want)
    # untiled: the split axis (of the axis's size) goes, a new one at concat_axis comes
    ys = rng.standard_normal((n, n, 3))
    got = per_device(lambda x: lax.all_to_all(x, "i", 0, concat), ys)
    want = np.stack([np.stack([ys[j][k] for j in range(n)], axis=concat) for k in range(n)])
    np.testing.assert_allclose(got, want)


def test_two_named_axes(rng):
    xs = rng.standard_normal((3, 2, 4))
    f = fnx.vmap(fnx.vmap(lambda x: (lax.psum(x, "i"), lax.psum(x, ("i", "j")),
                                     lax.axis_index(("i", "j"))), axis_name="j"),
                 axis_name="i")
    over_i, over_both, index = f(jnp.asarray(xs))
    np.testing.assert_allclose(over_i, np.broadcast_to(xs.sum(0), xs.shape), rtol=1e-12)
    np.testing.assert_allclose(over_both, np.broadcast_to(xs.sum((0, 1)), xs.shape), rtol=1e-12)
    np.testing.assert_array_equal(index, np.arange(6).reshape(3, 2))


def _program(x):
    """Every collective once, in a differentiable per-device program."""
    y = jnp.sin(x) * lax.pmean(x, "i")
    y = y + lax.ppermute(y, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])
    y = lax.all_gather(y, "i", axis=1, tiled=True)[:, :3] * 0.5
    y = lax.psum_scatter(jnp.concatenate([y] * 4), "i", tiled=True)
    y = lax.all_to_all(y, "i", 0, 1, tiled=True)
    return jnp.sum(y ** 2) + lax.pmax(jnp.sum(x), "i") + lax.axis_index("i") * jnp.sum(x)


def test_gradients_of_collectives(rng):
    xs = rng.standard_normal((4, 4, 3))
    check_grads(lambda xs: fnx.vmap(_program, axis_name="i")(xs), (xs,), order=2,
                modes=("fwd", "rev"))


def test_grad_inside_vmap_transposes_psum_to_psum(rng):
    xs = rng.standard_normal((4, 3))
    g = fnx.vmap(fnx.grad(lambda x: jnp.sum(lax.psum(x * x, "i"))), axis_name="i")(xs)
    np.testing.assert_allclose(g, 4 * 2 * xs, rtol=1e-12)      # JAX gives the same


def test_collectives_inside_jit_and_control_flow(rng):
    xs = rng.standard_normal((4, 3))

    def f(x):
        y = fnx.jit(lambda v: lax.psum(v, "i"))(x)
        y = lax.cond(jnp.sum(x) > 0, lambda v: lax.pmax(v, "i"), lambda v: lax.pmin(v, "i"), y)
        return lax.scan(lambda c, _: (c + lax.all_gather(c, "i").sum(0), None), y,
                        None, length=2)[0]

    def reference(xs):
        y = np.broadcast_to(xs.sum(0), xs.shape)
        c = np.where(xs.sum(1, keepdims=True) > 0, y.max(0), y.min(0))
        for _ in range(2):
            c = c + c.sum(0)
        return c
    np.testing.assert_allclose(fnx.vmap(f, axis_name="i")(xs), reference(xs), rtol=1e-12)
    np.testing.assert_allclose(fnx.jit(fnx.vmap(f, axis_name="i"))(xs), reference(xs),
                               rtol=1e-12)


def test_jit_retraces_for_another_axis_size(rng):
    g = fnx.jit(lambda x: lax.all_gather(x, "i"))
    for n in (2, 3):
        xs = rng.standard_normal((n, 2))
        out = fnx.vmap(g, axis_name="i")(xs)
        assert out.shape == (n, n, 2)


def test_unbound_axis_name_is_a_named_error_at_the_users_line():
    with pytest.raises(fnx.AxisNameError, match="unbound axis name: 'j'") as info:
        fnx.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(jnp.ones(3))
    assert info.value.source.filename == __file__
    with pytest.raises(NameError, match="unbound axis name"):
        lax.axis_index("i")
    with pytest.raises(ValueError, match="distinct"):
        fnx.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 1)]), axis_name="i")(jnp.ones(3))


def test_printed_jaxpr_names_the_collective():
    text = str(fnx.make_jaxpr(fnx.vmap(lambda x: lax.psum(x, "i"), axis_name="i"))(jnp.ones(2)))
    assert "reduce_sum" in text      # vmap turned the psum into a sum over its batch axis
    with fnx.core.collectives.extend_axis_env([("i", 4)]):
        text = str(fnx.make_jaxpr(lambda x: lax.psum(x, "i"))(jnp.ones(2)))
    assert "psum" in text and "axes=('i',)" in text


def test_an_anonymous_vmap_inside_a_named_one(rng):
    xs = rng.standard_normal((3, 4))
    # the inner vmap maps another axis: psum over 'i' sums over the outer one only
    got = fnx.vmap(fnx.vmap(lambda x: lax.psum(x, "i")), axis_name="i")(xs)
    np.testing.assert_allclose(got, np.broadcast_to(xs.sum(0), xs.shape), rtol=1e-12)

    @fnx.custom_vjp
    def f(x):
        return fnx.vmap(lambda v: v * 2.0)(x)
    f.defvjp(lambda x: (f(x), None), lambda _, g: (2.0 * g,))
    got = fnx.vmap(lambda x: lax.psum(f(x), "i"), axis_name="i")(xs)
    np.testing.assert_allclose(got, np.broadcast_to(2 * xs.sum(0), xs.shape), rtol=1e-12)
