"""nn.scaled_matmul and nn.scaled_dot_general against JAX on the CPU. JAX's block-scaled
product is a GPU kernel (cuDNN) with no CPU lowering, so the oracle is JAX's own code with that
one kernel replaced by the product it documents (float32 einsum of the operands times their
repeated scales): JAX's quantization recipes, reshapes and backward pass run unchanged."""
import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
stablehlo = pytest.importorskip("jax._src.cudnn.scaled_matmul_stablehlo")


def _documented_product(a, b, a_scales, b_scales, preferred_element_type=np.float32):
    k = a.shape[-1]
    ea = jjnp.repeat(a_scales.astype(np.float32), k // a_scales.shape[-1], axis=-1)
    eb = jjnp.repeat(b_scales.astype(np.float32), k // b_scales.shape[-1], axis=-1)
    out = jjnp.einsum("bmk,bnk->bmn", a.astype(np.float32) * ea, b.astype(np.float32) * eb,
                      precision="highest")
    return out.astype(preferred_element_type)


@pytest.fixture
def jax_on_cpu(monkeypatch):
    monkeypatch.setattr(stablehlo, "scaled_matmul_wrapper", _documented_product)


# (values dtype, scales dtype, block size)
OPERANDS = {
    "float32": (np.float32, np.float32, 8),
    "bfloat16": (ml_dtypes.bfloat16, ml_dtypes.bfloat16, 4),
    "mxfp8-e4m3": (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, 32),
    "mxfp8-e5m2": (ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu, 32),
    "nvfp4": (ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, 16),
}


@pytest.mark.parametrize("out_dtype", [np.float32, ml_dtypes.bfloat16])
@pytest.mark.parametrize("operands", OPERANDS)
def test_scaled_matmul_is_the_documented_product(operands, out_dtype, rng):
    values, scale_type, block = OPERANDS[operands]
    b, m, n, k = 2, 3, 5, 2 * block
    a, c = (rng.standard_normal(s).astype(values) for s in ((b, m, k), (b, n, k)))
    a_s, c_s = (rng.uniform(0.25, 4.0, s).astype(scale_type) for s in ((b, m, 2), (b, n, 2)))
    got = fnx.nn.scaled_matmul(a, c, a_s, c_s, preferred_element_type=out_dtype)
    want = np.einsum("bmk,bnk->bmn", a.astype(np.float64) * np.repeat(a_s.astype(np.float64),
                                                                       block, -1),
                     c.astype(np.float64) * np.repeat(c_s.astype(np.float64), block, -1))
    assert got.dtype == np.dtype(out_dtype) and got.shape == (b, m, n)
    ulp = float(ml_dtypes.finfo(out_dtype).eps)
    np.testing.assert_allclose(np.asarray(got, np.float64), want,
                               atol=2 * ulp * np.abs(want).max())


@pytest.mark.parametrize("shapes", [((2, 4), (1, 4, 1), (1, 4, 1), (1, 4, 1)),   # not 3-D
                                    ((1, 2, 4), (1, 3, 8), (1, 2, 1), (1, 3, 1)),  # K differs
                                    ((1, 2, 4), (1, 3, 4), (1, 2, 2), (1, 3, 1)),  # blocks differ
                                    ((1, 2, 4), (1, 3, 4), (1, 3, 1), (1, 3, 1))])  # M differs
def test_scaled_matmul_refuses_what_jax_refuses(shapes):
    args = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(ValueError):
        jax.nn.scaled_matmul(*args)
    with pytest.raises(ValueError):
        fnx.nn.scaled_matmul(*args)


DIMENSION_NUMBERS = {
    "rows-by-rows": ((((1,), (1,)), ((), ())), (32, 64), (32, 64)),
    "batched": ((((2,), (2,)), ((0,), (0,))), (2, 32, 64), (2, 32, 64)),
    "matmul": ((((1,), (0,)), ((), ())), (64, 32), (32, 32)),
    "two-contracting": ((((1, 3), (2, 0)), ((0,), (1,))), (2, 32, 32, 2), (2, 2, 32, 32)),
}


# every layout, recipe and output dtype at least once
COMBINATIONS = [("rows-by-rows", "mxfp8", np.float32), ("rows-by-rows", "nvfp4", np.float16),
                ("batched", "nvfp4", ml_dtypes.bfloat16), ("matmul", "mxfp8", ml_dtypes.bfloat16),
                ("matmul", "nvfp4", np.float32), ("two-contracting", "mxfp8", np.float16)]


@pytest.mark.parametrize("numbers, mode, out_dtype", COMBINATIONS)
def test_scaled_dot_general_matches_jax(numbers, mode, out_dtype, rng, jax_on_cpu):
    dn, lhs_shape, rhs_shape = DIMENSION_NUMBERS[numbers]
    in_dtype = ml_dtypes.bfloat16 if out_dtype == ml_dtypes.bfloat16 else np.float32
    lhs = (3 * rng.standard_normal(lhs_shape)).astype(in_dtype)
    rhs = rng.standard_normal(rhs_shape).astype(in_dtype)
    scale = [np.array([rng.uniform(0.5, 2.0)], np.float32)] if mode == "nvfp4" else []
    ours_cfg = [fnx.nn.get_scaled_dot_general_config(mode, *map(jnp.asarray, scale))] * 3
    jax_cfg = [jax.nn.get_scaled_dot_general_config(mode, *map(jjnp.asarray, scale))] * 3

    def ours(a, b):
        return fnx.nn.scaled_dot_general(a, b, dn, out_dtype, configs=ours_cfg)

    @jax.jit     # one compilation, not one per operation
    def theirs(a, b):
        return jax.nn.scaled_dot_general(a, b, dn, out_dtype, configs=jax_cfg)
    got, pull = fnx.vjp(ours, lhs, rhs)
    want, jax_pull = jax.vjp(theirs, jjnp.asarray(lhs), jjnp.asarray(rhs))
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    # a rounding of the output dtype apart (float32 sums in another order): 1.6 ulps of the
    # largest entry at most over many seeds
    ulp = float(ml_dtypes.finfo(out_dtype).eps)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               atol=4 * ulp * np.abs(np.asarray(want, np.float64)).max())
    g = rng.standard_normal(want.shape).astype(out_dtype)
    for o, t, x in zip(pull(g), jax_pull(jjnp.asarray(g)), (lhs, rhs)):
        # fnx's gradients have the operands' dtype; JAX's come in out_dtype
        assert o.dtype == x.dtype and o.shape == t.shape
        t = np.asarray(t, np.float64)
        np.testing.assert_allclose(np.asarray(o, np.float64), t, atol=4 * ulp * np.abs(t).max())


def test_scaled_dot_general_without_configs_is_dot_general(rng):
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2))
    dn = (((1,), (0,)), ((), ()))
    np.testing.assert_allclose(
        np.asarray(fnx.nn.scaled_dot_general(a, b.astype(np.float32), dn)),
        np.asarray(jax.nn.scaled_dot_general(a, b.astype(np.float32), dn)), rtol=1e-6)


def test_scaled_dot_general_errors():
    x = np.ones((32, 64), np.float32)
    configs = [fnx.nn.get_scaled_dot_general_config("mxfp8")] * 3
    with pytest.raises(TypeError, match="preferred_element_type"):
        fnx.nn.scaled_dot_general(x, x, (((1,), (1,)), ((), ())), np.int32, configs=configs)
    with pytest.raises(ValueError, match="block size"):
        fnx.nn.scaled_dot_general(x[:, :40], x[:, :40], (((1,), (1,)), ((), ())),
                                  configs=configs)
    with pytest.raises(ValueError, match="Unsupported mode"):
        fnx.nn.get_scaled_dot_general_config("fp8")
