"""Complex numbers against JAX on the CPU: values and dtypes, JAX's gradient convention for real
functions of complex inputs (under jit and vmap too), holomorphic grad/jacfwd/jacrev, vjp and
jvp of complex functions, the transposes of the linear complex primitives, and the TypeErrors.

Inputs are fresh random draws on every run; a failure prints the seed that reproduces it."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp
from fnx.core.jaxpr import subjaxprs

jax = pytest.importorskip("jax")
jjnp = jax.numpy
jlax = jax.lax

SEED = int(np.random.SeedSequence().entropy % 2**32)


def _rng(salt):
    return np.random.default_rng([SEED, salt])


def _cplx(rng, *shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _close(got, want, rtol=2e-5, atol=2e-5, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                               err_msg=f"{what} (seed {SEED})")


def _tree_close(got, want, **kw):
    gl, wl = fnx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype,
                                                            np.asarray(w).dtype)
        _close(g, w, **kw)


# ---------------------------------------------------------------------------------------------
# values and dtypes

# (name, fnx function, JAX function) over two complex64 arrays of shape (3, 4)
VALUES = [
    ("real", lambda n, z, w: n.real(z), None),
    ("imag", lambda n, z, w: n.imag(z), None),
    ("conj", lambda n, z, w: n.conj(z), None),
    ("conjugate", lambda n, z, w: n.conjugate(w), None),
    ("abs", lambda n, z, w: n.abs(z), None),
    ("angle", lambda n, z, w: n.angle(z), None),
    ("angle_deg", lambda n, z, w: n.angle(w, deg=True), None),
    ("vdot", lambda n, z, w: n.vdot(z, w), None),
    ("dot", lambda n, z, w: n.dot(z, w.T), None),
    ("norm", lambda n, z, w: n.linalg.norm(z), None),
    ("norm_axis", lambda n, z, w: n.linalg.norm(z, axis=0), None),
    ("norm_fro", lambda n, z, w: n.linalg.norm(z, "fro"), None),
    ("norm_1", lambda n, z, w: n.linalg.norm(z, 1, axis=1), None),
    ("var", lambda n, z, w: n.var(z, axis=1), None),
    ("std", lambda n, z, w: n.std(w), None),
    ("mul_div", lambda n, z, w: z * w / (w + 3.0), None),
    ("exp_log", lambda n, z, w: n.exp(z) + n.log(w), None),
    ("sin_cos_tanh", lambda n, z, w: n.sin(z) * n.cos(w) + n.tanh(z), None),
    ("sqrt", lambda n, z, w: n.sqrt(z), None),
    ("square_pow", lambda n, z, w: n.square(z) + z ** 3, None),
    ("sign", lambda n, z, w: n.sign(z), None),
    ("sum_mean", lambda n, z, w: n.sum(z, 0) + n.mean(w, 1)[:, None].sum(), None),
    ("isfinite", lambda n, z, w: n.isfinite(z / 0.0), None),
    ("isinf", lambda n, z, w: n.isinf(z / 0.0), None),
    ("isnan", lambda n, z, w: n.isnan(z / 0.0), None),
    ("iscomplex_isreal", lambda n, z, w: n.iscomplex(n.real(z) + 0j) ^ n.isreal(w), None),
    ("real_of_real", lambda n, z, w: n.real(n.abs(z)) + n.imag(n.abs(w)), None),
    ("properties", lambda n, z, w: z.real + z.imag * w.conj().real, None),
    ("complex_scalar", lambda n, z, w: n.abs(n.real(z) * (1 + 2j)), None),
]


@pytest.mark.parametrize("name,fn,_", VALUES, ids=[v[0] for v in VALUES])
def test_values_and_dtypes_match_jax(name, fn, _):
    rng = _rng(hash(name) % 1000)
    z, w = _cplx(rng, 3, 4), _cplx(rng, 3, 4)
    with np.errstate(all="ignore"):
        got = fn(jnp, jnp.asarray(z), jnp.asarray(w))
        want = fn(jjnp, jjnp.asarray(z), jjnp.asarray(w))
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    assert got.weak_type == want.weak_type, name
    _close(got, want, rtol=1e-5, atol=1e-5, what=name)
    _close(fnx.jit(lambda a, b: fn(jnp, a, b))(jnp.asarray(z), jnp.asarray(w)), want,
           rtol=1e-5, atol=1e-5, what=f"jit {name}")


def test_lax_complex_functions_match_jax():
    rng = _rng(1)
    x, y = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    z = _cplx(rng, 2, 3)
    pairs = [(lax.complex(x, y), jlax.complex(x, y)), (lax.real(z), jlax.real(z)),
             (lax.imag(z), jlax.imag(z)), (lax.conj(z), jlax.conj(z)),
             (lax.conj(x), jlax.conj(x)), (lax.abs(z), jlax.abs(z)),
             (lax.complex(np.float64(1.5), np.float64(2.0)),
              np.complex128(1.5 + 2j))]
    for got, want in pairs:
        assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
        _close(got, want)
    # lax.complex keeps inf and nan parts as they are (no 1j multiplication)
    got = np.asarray(lax.complex(np.float32(np.inf), np.float32(-np.inf)))
    assert got.real == np.inf and got.imag == -np.inf


@pytest.mark.x32
def test_dtype_promotion_with_x64_off():
    f32, c64 = jnp.ones(2, jnp.float32), jnp.ones(2, jnp.complex64)
    assert jnp.asarray(1j).dtype == jnp.complex64 and jnp.asarray(1j).weak_type
    assert (f32 + c64).dtype == jnp.complex64
    assert (f32 * 1j).dtype == jnp.complex64
    assert (jnp.arange(3) * 1j).dtype == jnp.complex64
    assert (c64 + 1.5).dtype == jnp.complex64
    assert (jnp.ones(2, jnp.float16) + c64).dtype == jnp.complex64
    assert (jnp.ones(2, jnp.bfloat16) * 1j).dtype == jnp.complex64
    assert jnp.imag(c64).dtype == jnp.float32 and jnp.angle(c64).dtype == jnp.float32
    assert jnp.result_type(jnp.float32, jnp.complex64) == jnp.complex64


def test_dtype_promotion():
    f64 = jnp.ones(2, jnp.float64)
    c64, c128 = jnp.ones(2, jnp.complex64), jnp.ones(2, jnp.complex128)
    assert (c64 + c128).dtype == jnp.complex128
    assert (f64 + c64).dtype == jnp.complex128
    assert jnp.abs(c128).dtype == jnp.float64 and jnp.real(c128).dtype == jnp.float64
    assert lax.conj(f64).dtype == jnp.complex128
    assert jnp.iscomplexobj(c64) and jnp.iscomplexobj(1j) and not jnp.iscomplexobj(f64)
    assert jnp.isrealobj(f64) and not jnp.isrealobj(c128)
    with fnx.enable_x64():
        assert jnp.asarray(1j).dtype == jnp.complex128
        assert (jnp.ones(2) * 1j).dtype == jnp.complex128
        x = jnp.ones(3, jnp.complex128)
        assert fnx.grad(lambda z: jnp.abs(z).sum())(x).dtype == jnp.complex128
        assert fnx.jit(lambda z: z * 2)(x).dtype == jnp.complex128


# ---------------------------------------------------------------------------------------------
# JAX's gradient convention for real functions of complex inputs


def test_grad_of_abs_squared_is_twice_the_conjugate():
    g = fnx.grad(lambda z: jnp.abs(z) ** 2)(3 + 4j)
    assert abs(complex(g) - (6 - 8j)) < 1e-5
    assert abs(complex(jax.grad(lambda z: jjnp.abs(z) ** 2)(3 + 4j)) - (6 - 8j)) < 1e-5


# (name, f(numpy module, z, w) -> real scalar)
REAL_FUNCTIONS = [
    ("abs2", lambda n, z, w: n.sum(n.abs(z) ** 2)),
    ("real_z_conj_w", lambda n, z, w: n.sum(n.real(z * n.conj(w)))),
    ("norm", lambda n, z, w: n.linalg.norm(z) + n.linalg.norm(w, axis=1).sum()),
    ("sum_abs", lambda n, z, w: n.sum(n.abs(z * w))),
    ("vdot", lambda n, z, w: n.real(n.vdot(z, w)) + n.imag(n.vdot(w, z))),
    ("angle", lambda n, z, w: n.sum(n.angle(z) * n.abs(w))),
    ("imag_holomorphic", lambda n, z, w: n.sum(n.imag(n.sin(z) * n.exp(w) + z ** 3))),
    ("var", lambda n, z, w: n.var(z) + n.std(w)),
    ("matmul", lambda n, z, w: n.abs(z @ w.T).sum()),
    ("mixed_real", lambda n, z, w: n.sum(n.real(z) * n.imag(w) + n.abs(z / (w + 4.0)))),
    ("conj_chain", lambda n, z, w: n.sum(n.real(n.conj(n.conj(z) * w) * (1 - 2j)))),
]


@pytest.mark.parametrize("name,f", REAL_FUNCTIONS, ids=[r[0] for r in REAL_FUNCTIONS])
def test_grad_of_real_function_matches_jax(name, f):
    rng = _rng(100 + hash(name) % 1000)
    z, w = _cplx(rng, 3, 4), _cplx(rng, 3, 4)
    want = jax.grad(lambda a, b: f(jjnp, a, b), argnums=(0, 1))(z, w)
    fn = lambda a, b: f(jnp, a, b)  # noqa: E731
    for transformed in (fnx.grad(fn, (0, 1)), fnx.jit(fnx.grad(fn, (0, 1))),
                        fnx.grad(fnx.jit(fn), (0, 1))):
        _tree_close(transformed(z, w), want, rtol=1e-4, atol=1e-5)
    value, g = fnx.value_and_grad(fn, (0, 1))(z, w)
    assert value.dtype == np.float32
    _tree_close(g, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,f", REAL_FUNCTIONS[:6], ids=[r[0] for r in REAL_FUNCTIONS[:6]])
def test_per_example_grad_under_vmap_matches_jax(name, f):
    rng = _rng(200 + hash(name) % 1000)
    z, w = _cplx(rng, 5, 3, 4), _cplx(rng, 3, 4)
    want = jax.vmap(jax.grad(lambda a, b: f(jjnp, a, b)), in_axes=(0, None))(z, w)
    got = fnx.vmap(fnx.grad(lambda a, b: f(jnp, a, b)), in_axes=(0, None))(z, w)
    _tree_close(got, want, rtol=1e-4, atol=1e-5)
    got = fnx.jit(fnx.vmap(fnx.grad(lambda a, b: f(jnp, a, b)), in_axes=(0, None)))(z, w)
    _tree_close(got, want, rtol=1e-4, atol=1e-5)


def test_grad_of_real_input_through_complex_stays_real():
    """A real input promoted to complex gets the real part of its complex cotangent."""
    x = _rng(3).standard_normal(4).astype(np.float32)

    def f(n):
        return lambda x: n.sum(n.abs(x * (1 + 2j) + 0.5j) ** 3)
    got, want = fnx.grad(f(jnp))(x), jax.grad(f(jjnp))(x)
    assert got.dtype == np.float32
    _close(got, want, rtol=1e-4)


def test_complex128_grad_matches_jax_with_x64():
    rng = _rng(4)
    z, w = _cplx(rng, 6, dtype=np.complex128), _cplx(rng, 6, dtype=np.complex128)
    with jax.enable_x64(True):
        want = jax.grad(lambda a, b: jjnp.sum(jjnp.abs(a * jjnp.conj(b)) ** 1.5),
                        (0, 1))(z, w)
    got = fnx.grad(lambda a, b: jnp.sum(jnp.abs(a * jnp.conj(b)) ** 1.5), (0, 1))(z, w)
    _tree_close(got, want, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# holomorphic differentiation

HOLOMORPHIC = [
    ("poly", lambda n, z: z ** 3 - 2 * z + 1j),
    ("sin_exp", lambda n, z: n.sin(z) * n.exp(0.5 * z)),
    ("rational", lambda n, z: (z + 2.0) / (z * z + 4.0)),
    ("log_sqrt", lambda n, z: n.log(z + 3.0) + n.sqrt(z + 3.0)),
    ("tanh_cosh", lambda n, z: n.tanh(z) * n.cosh(z)),
]


@pytest.mark.parametrize("name,f", HOLOMORPHIC, ids=[h[0] for h in HOLOMORPHIC])
def test_holomorphic_derivatives_match_jax(name, f):
    rng = _rng(300 + hash(name) % 1000)
    z0 = np.complex64(_cplx(rng, 1)[0] * 0.5)
    zs = _cplx(rng, 4) * 0.5
    g = fnx.grad(lambda z: f(jnp, z), holomorphic=True)(z0)
    _tree_close(g, jax.grad(lambda z: f(jjnp, z), holomorphic=True)(z0), rtol=1e-4)
    _tree_close(fnx.jit(fnx.grad(lambda z: f(jnp, z), holomorphic=True))(z0),
                jax.grad(lambda z: f(jjnp, z), holomorphic=True)(z0), rtol=1e-4)
    want = jax.jacfwd(lambda z: f(jjnp, z), holomorphic=True)(zs)
    _tree_close(fnx.jacfwd(lambda z: f(jnp, z), holomorphic=True)(zs), want, rtol=1e-4)
    _tree_close(fnx.jacrev(lambda z: f(jnp, z), holomorphic=True)(zs), want, rtol=1e-4)
    _tree_close(fnx.vmap(fnx.grad(lambda z: f(jnp, z), holomorphic=True))(zs),
                jax.vmap(jax.grad(lambda z: f(jjnp, z), holomorphic=True))(zs), rtol=1e-4)
    # the holomorphic derivative is f'(z): the finite difference along any direction
    eps = 1e-3
    zd = np.complex128(z0)
    for d in (1.0, 1j):
        fd = (complex(f(np, zd + eps * d)) - complex(f(np, zd - eps * d))) / (2 * eps * d)
        assert abs(complex(g) - fd) < 1e-3 * max(1, abs(fd)), (name, d, complex(g), fd)


def test_holomorphic_hessian_matches_jax():
    z = _cplx(_rng(5), 3) * 0.5

    def f(n):
        return lambda z: n.sum(n.sin(z) * z ** 2)
    _tree_close(fnx.hessian(f(jnp), holomorphic=True)(z),
                jax.hessian(f(jjnp), holomorphic=True)(z), rtol=1e-4, atol=1e-5)


def test_vjp_and_jvp_of_complex_functions_match_jax():
    rng = _rng(6)
    z, w, t, ct = (_cplx(rng, 5) for _ in range(4))

    def f(n):
        return lambda z, w: (n.conj(z) * w + n.abs(z) * z, n.real(z * w))
    out, pull = fnx.vjp(f(jnp), z, w)
    jout, jpull = jax.vjp(f(jjnp), z, w)
    _tree_close(out, jout)
    ct_real = rng.standard_normal(5).astype(np.float32)
    _tree_close(pull((ct, ct_real)), jpull((ct, ct_real)), rtol=1e-4, atol=1e-5)
    _tree_close(fnx.jvp(f(jnp), (z, w), (t, t)), jax.jvp(f(jjnp), (z, w), (t, t)),
                rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# transposes of the linear complex primitives (JAX's bilinear, non-conjugating rules)

LINEAR = [
    ("scale", lambda n, l, z: (2 - 3j) * z, "c"),
    ("conj", lambda n, l, z: l.conj(z), "c"),
    ("real", lambda n, l, z: l.real(z), "c"),
    ("imag", lambda n, l, z: l.imag(z), "c"),
    ("conj_of_real", lambda n, l, z: l.conj(z), "f"),
    ("complex_from_real", lambda n, l, z: l.complex(z, 2 * z), "f"),
    ("dot", lambda n, l, z: n.dot(z, n.arange(4.0) * (1 + 1j)), "c"),
    ("real_to_complex", lambda n, l, z: z * (0.5 - 1j), "f"),
]


@pytest.mark.parametrize("name,f,kind", LINEAR, ids=[x[0] for x in LINEAR])
def test_linear_transpose_matches_jax(name, f, kind, jax_x64_as_fnx):
    rng = _rng(400 + hash(name) % 1000)
    dt = np.complex64 if kind == "c" else np.float32
    x = _cplx(rng, 4) if kind == "c" else rng.standard_normal(4).astype(np.float32)
    out = f(jjnp, jlax, jjnp.asarray(x))
    ct = (_cplx(rng, *out.shape) if np.iscomplexobj(out)
          else rng.standard_normal(out.shape)).astype(out.dtype)   # a VJP takes its own dtype
    want = jax.linear_transpose(lambda v: f(jjnp, jlax, v), jax.ShapeDtypeStruct((4,), dt))(ct)
    got = fnx.linear_transpose(lambda v: f(jnp, lax, v), fnx.ShapeDtypeStruct((4,), dt))(ct)
    _tree_close(got, want, rtol=1e-5, atol=1e-6)
    # and the vjp of the same map, which grad builds on, agrees
    _tree_close(fnx.vjp(lambda v: f(jnp, lax, v), x)[1](ct),
                jax.vjp(lambda v: f(jjnp, jlax, v), x)[1](ct), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# the errors JAX raises


def test_grad_of_complex_output_raises_type_error():
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        fnx.grad(lambda z: z * z)(1 + 1j)
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        fnx.grad(lambda x: x * 1j)(1.0)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        fnx.grad(lambda x: x * 1j, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        fnx.grad(lambda z: jnp.abs(z), holomorphic=True)(1 + 1j)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        fnx.jacfwd(lambda z: z * 2)(jnp.ones(2, jnp.complex64))
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs"):
        fnx.jacfwd(lambda z: jnp.abs(z), holomorphic=True)(jnp.ones(2, jnp.complex64))
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        fnx.jacrev(lambda z: z * 2)(jnp.ones(2, jnp.complex64))
    with pytest.raises(TypeError, match="grad requires real-valued outputs"):
        fnx.grad(lambda x: jnp.sum(x > 0).astype(jnp.int32))(1.0)
    # jacrev of a real function of complex inputs is allowed, as in JAX
    z = _cplx(_rng(7), 3)
    _tree_close(fnx.jacrev(lambda z: jnp.abs(z) ** 2)(z),
                jax.jacrev(lambda z: jjnp.abs(z) ** 2)(z))


# ---------------------------------------------------------------------------------------------
# batching and the GPU backend's eager path (run here on the CPU backend)


def test_vmap_of_complex_primitives_with_unbatched_operands():
    rng = _rng(8)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    got = fnx.vmap(lax.complex, in_axes=(0, None))(x, y)
    _close(got, x + 1j * y)
    got = fnx.vmap(lax.complex, in_axes=(None, 1))(y[:3], x)
    _close(got, y[None, :3] + 1j * x.T)
    z = _cplx(rng, 3, 4)
    _close(fnx.vmap(lambda a: lax.real(a) * lax.imag(a), in_axes=1)(z),
           (z.real * z.imag).T)
    _close(fnx.vmap(lax.complex, in_axes=(0, None))(x[:, 0], np.float32(2.0)),
           x[:, 0] + 2j)


def test_eager_program_of_the_gpu_backend_runs_complex_jaxprs():
    from fnx.backends.eager import EagerProgram, uses_complex
    from fnx.backends.numpy_backend import backend
    rng = _rng(9)
    z, x = _cplx(rng, 3), rng.standard_normal(3).astype(np.float32)

    def f(z, x):
        y = fnx.lax.cond(x[0] > 0, lambda v: v * 2j, lambda v: jnp.conj(v), z)
        return jnp.abs(y) + x, y

    closed = fnx.make_jaxpr(f)(z, x)
    assert uses_complex(closed.jaxpr)
    real_only = fnx.make_jaxpr(lambda x: fnx.lax.cond(x[0] > 0, jnp.sin, jnp.cos, x))(x)
    assert not uses_complex(real_only.jaxpr)
    inner = fnx.make_jaxpr(lambda x: fnx.lax.cond(
        x[0] > 0, lambda v: jnp.abs(v * 1j), lambda v: v, x))(x)
    assert not any(np.iscomplexobj(np.empty(0, v.aval.dtype))
                   for e in inner.jaxpr.eqns for v in (*e.invars, *e.outvars))
    assert any(uses_complex(s) for e in inner.jaxpr.eqns for s in subjaxprs(e))
    assert uses_complex(inner.jaxpr)     # complex only inside a branch
    prog = EagerProgram(closed.jaxpr, closed.consts, backend, "test")
    outs = prog(z, x)
    for got, want in zip(outs, f(z, x)):
        _close(got, want)
    assert "eager" in prog.describe() and prog.graph is None


def test_check_grads_on_complex_functions():
    """fnx.test_util.check_grads with complex inputs and outputs: finite differences in
    complex128, JAX's bilinear pairing of cotangents with tangents, to second order."""
    from fnx.test_util import check_grads
    rng = _rng(10)
    z = _cplx(rng, 4, dtype=np.complex128) * 0.5
    w = _cplx(rng, 4, dtype=np.complex128) * 0.5 + 2.0
    x = rng.standard_normal(4)
    check_grads(lambda z, w: jnp.sin(z) * jnp.conj(w) + jnp.abs(z) * z, (z, w), order=2,
                rng=rng)
    check_grads(lambda z, x: jnp.real(z * x) + jnp.imag(z) ** 2 + jnp.angle(w * z), (z, x),
                order=2, rng=rng)
    check_grads(lambda x: lax.complex(x, x ** 2) / (x * 1j + 3.0), (x,), order=2, rng=rng)


def test_round_and_nan_to_num_of_complex_match_jax():
    z = np.array([1.4 + 2.6j, -0.5 - 1.5j, complex("nan+infj"), complex("-inf-nanj")],
                 np.complex64)
    for name in ("round", "nan_to_num"):
        got, want = getattr(jnp, name)(z), getattr(jjnp, name)(z)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
