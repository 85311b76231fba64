"""JAX names of lax and lax.linalg checked against JAX on the CPU: lax.scaled_dot (products of
block-scaled operands), lax.linalg's algorithm enums and svd/eigh keywords, and the linear-
algebra primitive objects whose parameters are JAX's."""
import ml_dtypes
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")

# (operand dtype, scale dtype, preferred_element_type, dimension_numbers or None, shapes of
# lhs, rhs, lhs_scale (None: no scale), rhs_scale)
SCALED_DOT = {
    "default-3d": (np.float32, np.float32, None, None, (2, 3, 64), (2, 64, 5), (2, 3, 2),
                   (2, 2, 5)),
    "fp8-e8m0-bf16": (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, ml_dtypes.bfloat16,
                      None, (2, 3, 64), (2, 64, 5), (2, 3, 2), (2, 2, 5)),
    "bf16-to-f32": (ml_dtypes.bfloat16, np.float32, np.float32, None, (4, 32), (32, 6),
                    (4, 4), (4, 6)),
    "one-scale": (np.float32, np.float32, None, None, (4, 32), (32, 6), None, (8, 6)),
    "rows-by-rows": (np.float32, np.float32, np.float32, (((1,), (1,)), ((), ())), (4, 32),
                     (6, 32), (4, 2), (6, 16)),
}


@pytest.mark.parametrize("case", SCALED_DOT)
def test_scaled_dot_matches_jax(case, rng):
    values, scales, out, dn, *shapes = SCALED_DOT[case]
    lhs, rhs = (rng.standard_normal(s).astype(values) for s in shapes[:2])
    lhs_s, rhs_s = (None if s is None else rng.uniform(0.5, 2.0, s).astype(scales)
                    for s in shapes[2:])
    kwargs = dict(lhs_scale=lhs_s, rhs_scale=rhs_s, dimension_numbers=dn,
                  preferred_element_type=out)
    got = fnx.lax.scaled_dot(lhs, rhs, **kwargs)
    want = jax.lax.scaled_dot(lhs, rhs, **kwargs)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    want = np.asarray(want, np.float64)
    # float32 sums in another order, rounded once to the output dtype
    ulp = float(ml_dtypes.finfo(got.dtype).eps)
    np.testing.assert_allclose(np.asarray(got, np.float64), want,
                               atol=2 * ulp * np.abs(want).max())


@pytest.mark.parametrize("bad", [
    dict(lhs=(4, 32), rhs=(32, 6), lhs_scale=(4, 3)),        # 32 not a multiple of 3
    dict(lhs=(4, 32), rhs=(32, 6), lhs_scale=(4, 32)),       # blocks of one
    dict(lhs=(4, 32), rhs=(32, 6), rhs_scale=(4, 5)),        # kept dim differs
    dict(lhs=(4, 32), rhs=(16, 6)),                          # contracting sizes differ
    dict(lhs=(32,), rhs=(32,)),                              # vectors
])
def test_scaled_dot_refuses_what_jax_refuses(bad):
    args = {k: np.ones(v, np.float32) for k, v in bad.items()}
    lhs, rhs = args.pop("lhs"), args.pop("rhs")
    with pytest.raises(TypeError):
        jax.lax.scaled_dot(lhs, rhs, **args)
    with pytest.raises(TypeError):
        fnx.lax.scaled_dot(lhs, rhs, **args)


def test_scaled_dot_has_no_derivative_as_in_jax():
    with pytest.raises(NotImplementedError):
        fnx.grad(lambda a: fnx.lax.scaled_dot(a, a.T).astype(np.float32).sum())(jnp.ones((2, 4)))


@pytest.mark.parametrize("name", ["SvdAlgorithm", "EighImplementation", "EigImplementation"])
def test_algorithm_enums_are_jax(name):
    ours, theirs = getattr(fnx.lax.linalg, name), getattr(jax.lax.linalg, name)
    assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in theirs]


def test_svd_and_eigh_keywords(rng):
    x = rng.standard_normal((5, 4))
    for algorithm in fnx.lax.linalg.SvdAlgorithm:
        s = fnx.lax.linalg.svd(x, compute_uv=False, algorithm=algorithm)
        np.testing.assert_allclose(np.asarray(s), np.linalg.svd(x, compute_uv=False),
                                   rtol=1e-12)
    u, s, vh = fnx.lax.linalg.svd(x, full_matrices=False, subset_by_index=(1, 3))
    full = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(np.asarray(s), full[1][1:3], rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(u)), np.abs(full[0][:, 1:3]), atol=1e-12)
    np.testing.assert_allclose(np.abs(np.asarray(vh)), np.abs(full[2][1:3]), atol=1e-12)
    with pytest.raises(ValueError):      # as JAX: a subset needs full_matrices=False
        fnx.lax.linalg.svd(x, subset_by_index=(0, 2))
    a = x.T @ x
    v, w = fnx.lax.linalg.eigh(a, subset_by_index=(2, 4),
                               implementation=fnx.lax.linalg.EighImplementation.QR)
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(a)[2:], rtol=1e-12)
    np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-10)


@pytest.mark.parametrize("name", ["cholesky", "lu", "triangular_solve"])
def test_linalg_primitive_objects_bind_as_jax(name, rng):
    a = rng.standard_normal((4, 4))
    a = a @ a.T + 4 * np.eye(4)
    args = (a, rng.standard_normal((4, 3))) if name == "triangular_solve" else (a,)
    params = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                  unit_diagonal=False) if name == "triangular_solve" else {}
    ours = getattr(fnx.lax.linalg, f"{name}_p").bind(*map(jnp.asarray, args), **params)
    theirs = getattr(jax.lax.linalg, f"{name}_p").bind(*args, **params)
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        if name == "cholesky":
            o, t = np.tril(o), np.tril(t)     # the upper triangle is unspecified
        assert o.dtype == t.dtype
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)
