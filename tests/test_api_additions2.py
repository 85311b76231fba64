"""Newer JAX APIs real programs use: user-defined primitives through ``jax.extend`` and
``jax.interpreters``, array refs, and top-level names; each checked against JAX on the CPU."""
import importlib

import numpy as np
import pytest

import fnx

jax = pytest.importorskip("jax")

rng = np.random.default_rng()
pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _lib(name):
    """(top level, numpy, extend.core, interpreters.ad, interpreters.batching, mlir)."""
    return [importlib.import_module(f"{name}{m}") for m in
            ("", ".numpy", ".extend.core", ".interpreters.ad", ".interpreters.batching",
             ".interpreters.mlir")]


def _multiply_add(name):
    """JAX's "how primitives work" example: ``x * y + z`` as a primitive with every rule,
    written once against either library."""
    top, jnp, core, ad, batching, mlir = _lib(name)
    ma_p = core.Primitive(f"multiply_add_{rng.integers(1 << 30)}")

    def multiply_add(x, y, z):
        return ma_p.bind(x, y, z)

    ma_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    ma_p.def_abstract_eval(lambda xs, ys, zs: top.core.ShapedArray(xs.shape, xs.dtype))
    mlir.register_lowering(ma_p, mlir.lower_fun(lambda x, y, z: x * y + z,
                                                multiple_results=False))

    def jvp(primals, tangents):
        x, y, z = primals
        xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
        return multiply_add(x, y, z), multiply_add(xt, y, multiply_add(x, yt, zt))
    ad.primitive_jvps[ma_p] = jvp

    def transpose(ct, x, y, z):
        # linear in x (with y known) or in y (with x known), and in z
        if ad.is_undefined_primal(x):
            ct_x = None if type(ct) is ad.Zero else multiply_add(ct, y, jnp.zeros_like(y))
            return ct_x, None, ct
        ct_y = None if type(ct) is ad.Zero else multiply_add(x, ct, jnp.zeros_like(x))
        return None, ct_y, ct
    ad.primitive_transposes[ma_p] = transpose

    def batch(args, dims):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        args = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
        return multiply_add(*args), 0
    batching.primitive_batchers[ma_p] = batch
    return top, multiply_add


def _programs(name):
    top, ma = _multiply_add(name)
    sq_add = lambda a, b: ma(a, a, b)   # noqa: E731
    return {
        "eager": lambda x, y: ma(x, y, 1.0 + x),
        "jit": top.jit(lambda x, y: ma(x, y, x)),
        "grad": top.grad(lambda x, y: sq_add(x, y).sum(), argnums=(0, 1)),
        "jit_grad": top.jit(top.grad(lambda x, y: (ma(x, y, x) ** 2).sum())),
        "vmap": top.vmap(lambda x, y: ma(x, y, y), in_axes=(0, 1)),
        "vmap_grad": top.vmap(top.grad(lambda x, y: sq_add(x, y).sum()), in_axes=(1, 0)),
        "jvp": lambda x, y: top.jvp(lambda a: ma(a, y, a), (x,), (y,)),
    }


@pytest.mark.parametrize("prog", ["eager", "jit", "grad", "jit_grad", "vmap", "vmap_grad",
                                  "jvp"])
def test_user_primitive_matches_jax(prog):
    x, y = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    got = _programs("fnx")[prog](x, y)
    want = _programs("jax")[prog](x, y)
    for g, w in zip(fnx.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12)


def test_extend_core_jaxprs():
    from fnx.extend import core
    closed = fnx.make_jaxpr(lambda x: (fnx.numpy.sin(x) * 2, x + 1))(1.0)
    assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
    x = rng.standard_normal()
    got = core.jaxpr_as_fun(closed)(x)
    np.testing.assert_allclose([float(v) for v in got], [np.sin(x) * 2, x + 1], rtol=1e-12)
    # the function runs under transformations, as JAX's does
    np.testing.assert_allclose(float(fnx.grad(lambda x: core.jaxpr_as_fun(closed)(x)[0])(x)),
                               2 * np.cos(x), rtol=1e-12)
    core.check_jaxpr(closed)
    assert core.primitives.sin_p is fnx.lax.sin_p
    assert core.concrete_or_error(int, fnx.numpy.array(3)) == 3
    with pytest.raises(fnx.errors.ConcretizationTypeError):
        fnx.jit(lambda x: core.concrete_or_error(int, x, "the size"))(3)


def test_extend_helpers_match_jax():
    from fnx.extend import core, linear_util, random
    import jax.extend as jex
    k, c = rng.integers(0, 2 ** 32, 2, dtype=np.uint32), rng.integers(0, 2 ** 32, 7,
                                                                      dtype=np.uint32)
    np.testing.assert_array_equal(np.asarray(random.threefry_2x32(k, c)),
                                  np.asarray(jex.random.threefry_2x32(k, c)))
    aval = core.ShapedArray((4, 3), np.float32)
    assert core.mapped_aval(4, 0, aval).shape == (3,)
    assert core.unmapped_aval(5, 1, aval).shape == (4, 5, 3)
    assert core.primal_dtype_to_tangent_dtype(np.int32) == \
        jex.core.primal_dtype_to_tangent_dtype(np.int32)
    assert linear_util.wrap_init(lambda a, *, b: a - b, {"b": 2}).call_wrapped(5) == 3
    assert fnx.extend.backend.get_backend().platform == "cpu"


def test_defjvp_deflinear_defvectorized_helpers():
    from fnx.extend.core import Primitive
    from fnx.interpreters import ad, batching
    cube = Primitive("cube_t")
    cube.def_impl(lambda x: x ** 3)
    cube.def_abstract_eval(lambda x: x)
    ad.defjvp(cube, lambda g, x: 3 * x ** 2 * g)
    batching.defvectorized(cube)
    scale = Primitive("scale_t")
    scale.def_impl(lambda x, *, k: k * x)
    scale.def_abstract_eval(lambda x, *, k: x)
    ad.deflinear(scale, lambda ct, *, k: [k * ct])
    batching.defvectorized(scale)
    x = rng.standard_normal(4)
    f = lambda x: scale.bind(cube.bind(x), k=2.5).sum()   # noqa: E731
    np.testing.assert_allclose(np.asarray(fnx.jit(fnx.grad(f))(x)), 7.5 * x ** 2, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fnx.vmap(fnx.grad(f))(x[:, None])),
                               7.5 * x[:, None] ** 2, rtol=1e-12)
    with pytest.raises(fnx.interpreters.mlir.LoweringError, match="def_impl"):
        fnx.interpreters.mlir.register_lowering(Primitive("no_impl"), lambda ctx, x: x)
