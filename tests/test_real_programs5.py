"""Programs in the style of third-party JAX libraries (Gaussian-process kernels that overload
arithmetic, CARMA models that find polynomial roots under jit, code importing ``jax._src``)
whose outcome once differed from JAX's: each runs with fnx's names and with JAX's on the CPU,
with fresh random inputs, and must give the same values, dtypes and shapes (or raise alike)."""
import jax
import numpy as np
import pytest

import fnx
from test_jax_differences_2 import FNX, JAX, same_as_jax

# with x64 off (the user's default), and JAX run with x64 set as fnx's
pytestmark = [pytest.mark.x32, pytest.mark.usefixtures("jax_x64_as_fnx")]


@pytest.fixture
def rng():
    return np.random.default_rng()


class _Scaled:
    """A kernel-like object: ``amplitude * kernel`` is the kernel's to answer."""

    def __init__(self, scale, side):
        self.scale, self.side = scale, side

    def __rmul__(self, amplitude):
        return _Scaled(amplitude * self.scale, self.side)

    def __radd__(self, offset):
        return _Scaled(offset + self.scale, self.side)

    def __call__(self, x):
        return self.scale * self.side.np.exp(-x ** 2)


def test_array_operators_defer_to_objects_that_answer_them(rng):
    amplitude, offset = rng.uniform(0.5, 2.0, 2).astype(np.float32)
    x = rng.standard_normal(5).astype(np.float32)

    def program(side):
        kernel = side.np.exp(side.np.asarray(amplitude)) * _Scaled(2.0, side)
        kernel = side.np.asarray(offset) + kernel
        return side.m.jit(lambda a, x: (a * _Scaled(1.0, side))(x))(amplitude, x), kernel(x)
    same_as_jax(program)


@pytest.mark.parametrize("operand", [[1.0, 2.0, 3.0], (1.0, 2.0, 3.0), None, object(), "ab"])
@pytest.mark.parametrize("operator", ["add", "radd", "mul", "eq", "ne", "lt"])
def test_array_operators_refuse_what_jax_refuses(operand, operator):
    def program(side):
        out = getattr(side.np.ones(3), f"__{operator}__")(operand)
        # Python turns NotImplemented into its TypeError (or an identity test for == and !=)
        return np.asarray(out is NotImplemented)
    same_as_jax(program)


def test_foreign_arrays_stay_operands(rng):
    a = rng.standard_normal(3).astype(np.float32)
    got = fnx.numpy.asarray(a) * jax.numpy.asarray(a)
    assert isinstance(got, fnx.Array)
    np.testing.assert_allclose(np.asarray(got), a * a, rtol=1e-6)


@pytest.mark.parametrize("leading, trailing", [(0, 0), (1, 0), (0, 1), (2, 1), (0, 2)])
def test_roots_without_stripping_trace_under_jit(rng, leading, trailing):
    # tinygp's CARMA kernel finds its autoregressive roots inside jit
    coefficients = np.concatenate([np.zeros(leading), rng.uniform(0.5, 2.0, 4),
                                   np.zeros(trailing)]).astype(np.float32)

    def program(side):
        found = side.m.jit(lambda p: side.np.roots(p, strip_zeros=False))(coefficients)
        return found.dtype, _in_order(found)
    (got_dtype, got), (want_dtype, want) = program(FNX), program(JAX)
    assert got_dtype == want_dtype
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)   # NaN where JAX has NaN


def _in_order(roots):
    # the order of the roots is the solver's; conjugate pairs sort by their imaginary part
    roots = np.asarray(roots)
    return roots[np.lexsort((roots.imag, roots.real.round(3)))]


def test_roots_without_stripping_of_all_zeros_are_nan():
    same_as_jax(lambda side: side.np.roots(side.np.zeros(3), strip_zeros=False))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_roll_by_a_traced_shift(rng, axis):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    shift = int(rng.integers(-9, 9))
    same_as_jax(lambda side: side.m.jit(lambda x, s: side.np.roll(x, s, axis))(x, shift))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_private_dtypes_module_answers_as_jax(dtype):
    from jax._src import dtypes as jax_dtypes

    from fnx._src import dtypes
    assert dtypes.to_complex_dtype(dtype) == jax_dtypes.to_complex_dtype(dtype)
    assert dtypes.finfo is fnx.dtypes.finfo


@pytest.mark.parametrize("make", [
    lambda o: o.sgd(0.1), lambda o: o.sgd(0.1, 0.9),
    lambda o: o.rmsprop(0.05), lambda o: o.rmsprop(0.05, 0.9, 1e-3, 0.1, False),
    # bias-corrected centred moments start at a variance of zero: eps keeps the step defined
    lambda o: o.rmsprop(0.05, eps=0.5, centered=True, momentum=0.5, bias_correction=True),
    lambda o: o.rmsprop(0.05, eps_in_sqrt=False, centered=True, nesterov=True, momentum=0.5),
    lambda o: o.scale_by_stddev(0.8, 0.5, 0.1, False, True)])
def test_optimizer_states_and_steps_as_optax(rng, make):
    # programs index optax's states (opt_state[0]) and pass its arguments positionally
    import optax
    params = {"w": rng.standard_normal(3).astype(np.float32)}
    grads = [{"w": rng.standard_normal(3).astype(np.float32)} for _ in range(3)]

    def steps(library, np_):
        tx = make(library)
        p = {"w": np_.asarray(params["w"])}
        state = tx.init(p)
        for g in grads:
            updates, state = tx.update({"w": np_.asarray(g["w"])}, state, p)
            p = library.apply_updates(p, updates)
        return p, state
    (got, got_state), (want, want_state) = steps(fnx.optim, fnx.numpy), steps(optax, jax.numpy)
    assert str(fnx.tree.structure(got_state)).replace("fnx.optim._transforms", "") == \
        str(jax.tree.structure(want_state)).replace("optax._src.transform", "")
    np.testing.assert_allclose(np.asarray(got["w"]), np.asarray(want["w"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_tridiagonal_solve_and_its_gradient(rng, batch):
    # the system of a cubic spline or an implicit heat-equation step
    m, n = 6, 2
    dl, du = rng.standard_normal((2, *batch, m)).astype(np.float32)
    d = (rng.standard_normal((*batch, m)) + 4.0).astype(np.float32)
    b = rng.standard_normal((*batch, m, n)).astype(np.float32)

    def program(side):
        solve = side.lax.linalg.tridiagonal_solve
        loss = lambda d, b: (solve(dl, d, du, b) ** 2).sum()
        return solve(dl, d, du, b), side.m.jit(side.m.grad(loss, argnums=(0, 1)))(d, b)
    same_as_jax(program, rtol=1e-4, atol=1e-5)


def test_lu_pivots_to_permutation_as_jax(rng):
    pivots = np.maximum(rng.integers(0, 7, (3, 5)), np.arange(5)).astype(np.int32)
    same_as_jax(lambda side: side.lax.linalg.lu_pivots_to_permutation(pivots, 7))
    same_as_jax(lambda side: side.lax.linalg.lu_pivots_to_permutation(
        side.scipy.linalg.lu_factor(pivots[:, :3].astype(np.float32) + np.eye(3))[1], 3))


@pytest.mark.parametrize("name", ["exp", "sin", "cos"])
def test_funm_as_jax(rng, name):
    a = rng.standard_normal((5, 5)).astype(np.float32) + 3 * np.eye(5, dtype=np.float32)

    def program(side):
        f = getattr(side.np, name)
        jitted = side.m.jit(lambda a: side.scipy.linalg.funm(a, f))
        return jitted(a), side.scipy.linalg.funm(a, f, disp=False)[1]
    same_as_jax(program, rtol=2e-4, atol=2e-4)


def test_funm_of_exp_is_expm_and_rsf2csf_as_jax(rng):
    a = rng.standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(fnx.scipy.linalg.funm(a, fnx.numpy.exp)),
                               np.asarray(jax.scipy.linalg.expm(a)), rtol=1e-4, atol=1e-4)
    same_as_jax(lambda side: side.scipy.linalg.rsf2csf(*side.scipy.linalg.schur(a))[0],
                rtol=1e-4, atol=1e-5)


def test_lax_linalg_eig_and_schur_as_jax(rng):
    a = rng.standard_normal((2, 4, 4)).astype(np.float32)
    same_as_jax(lambda side: side.lax.linalg.eig(a), rtol=1e-4, atol=1e-5)
    same_as_jax(lambda side: side.lax.linalg.eig(a[0], compute_left_eigenvectors=False),
                rtol=1e-4, atol=1e-5)
    same_as_jax(lambda side: side.lax.linalg.schur(a), rtol=1e-4, atol=1e-5)
    same_as_jax(lambda side: side.lax.linalg.schur(a[0], compute_schur_vectors=False),
                rtol=1e-4, atol=1e-5)
    same_as_jax(lambda side: side.m.vmap(lambda m: side.lax.linalg.eig(m)[1])(a),
                rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("symmetrize", [False, True])
def test_symmetric_product_and_cholesky_update_as_jax(rng, symmetrize):
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    c = np.einsum("bij,bkj->bik", a, a)
    same_as_jax(lambda side: side.lax.linalg.symmetric_product(
        a, c, alpha=0.5, beta=-2.0, symmetrize_output=symmetrize), rtol=1e-5, atol=1e-5)
    r = np.linalg.cholesky(c[0] + 3 * np.eye(3)).T.astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    same_as_jax(lambda side: side.m.jit(side.lax.linalg.cholesky_update)(r, w),
                rtol=1e-5, atol=1e-5)


def test_lax_linalg_reductions_to_condensed_forms_as_jax(rng):
    a = rng.standard_normal((2, 4, 4)).astype(np.float32)
    symmetric = a + np.swapaxes(a, -1, -2)
    same_as_jax(lambda side: side.lax.linalg.hessenberg(a), rtol=1e-4, atol=1e-5)
    for lower in (True, False):
        same_as_jax(lambda side: side.lax.linalg.tridiagonal(symmetric, lower=lower),
                    rtol=1e-4, atol=1e-5)


def test_householder_product_of_qr_reflectors_as_jax(rng):
    from jax._src.lax.linalg import geqrf      # the reflectors, as LAPACK stores them
    reflectors, taus = (np.asarray(x) for x in geqrf(rng.standard_normal((2, 5, 3))
                                                      .astype(np.float32)))
    same_as_jax(lambda side: side.lax.linalg.householder_product(reflectors, taus),
                rtol=1e-5, atol=1e-5)
    same_as_jax(lambda side: side.m.jit(side.lax.linalg.householder_product)(
        reflectors, taus[:, :2]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
@pytest.mark.parametrize("mode", ["right", "left"])
def test_qr_multiply_as_jax(rng, shape, mode):
    a = rng.standard_normal(shape).astype(np.float32)
    k = min(shape)
    c = rng.standard_normal((2, shape[0]) if mode == "right" else (k, 2)).astype(np.float32)
    for pivoting, conjugate in [(False, False), (True, True)]:
        same_as_jax(lambda side: side.scipy.linalg.qr_multiply(
            a, c, mode=mode, pivoting=pivoting, conjugate=conjugate), rtol=1e-4, atol=1e-5)
    same_as_jax(lambda side: side.scipy.linalg.qr_multiply(a, c[0] if mode == "right" else
                                                           c[:, 0], mode=mode),
                rtol=1e-4, atol=1e-5)


def test_environment_report_live_arrays_and_monitoring():
    report = fnx.print_environment_info(return_string=True)
    assert f"fnx:    {fnx.version.__version__}" in report and "process_count: 1" in report
    x = fnx.numpy.arange(4.0)
    assert any(a is x for a in fnx.live_arrays())
    x.delete()
    assert not any(a is x for a in fnx.live_arrays())
    assert fnx.copy_to_host_async({"a": fnx.numpy.ones(2)}) is None
    events, durations = [], []

    def on_event(name, **kwargs):
        events.append((name, kwargs))
    fnx.monitoring.register_event_listener(on_event)
    fnx.monitoring.register_event_duration_secs_listener(lambda n, d, **kw: durations.append(d))
    fnx.monitoring.record_event("/fnx/step", step=3)
    fnx.monitoring.record_event_duration_secs("/fnx/step", 0.25)
    fnx.monitoring.unregister_event_listener(on_event)
    fnx.monitoring.record_event("/fnx/unheard")
    fnx.monitoring.clear_event_listeners()
    assert events == [("/fnx/step", {"step": 3})] and durations == [0.25]
    with pytest.raises(AssertionError):      # as jax.monitoring does
        fnx.monitoring.unregister_event_listener(on_event)


def test_complex_normal_draws_as_jax(rng):
    seed = int(rng.integers(2**31))
    same_as_jax(lambda side: side.m.random.normal(side.m.random.PRNGKey(seed), (3, 2),
                                                  np.complex64))
    same_as_jax(lambda side: side.m.vmap(lambda k: side.m.random.normal(k, (2,), "complex64"))(
        side.m.random.split(side.m.random.key(seed), 3)))
    same_as_jax(lambda side: side.m.random.uniform(side.m.random.key(seed), (2,), np.complex64))


def test_aux_values_that_are_not_arrays_pass_through(rng):
    # training loops return metrics dicts with step counts, names and NumPy values as aux
    x = rng.standard_normal(3).astype(np.float32)
    logged = np.ones(2)

    def loss(side):
        def f(w):
            return side.np.sum(w ** 2), {"name": "l2", "step": 3, "np": logged, "w": 2 * w,
                                         "none": None}
        return f

    for transform in ["grad", "value_and_grad", "jacrev"]:
        same_as_jax(lambda side: getattr(side.m, transform)(loss(side), has_aux=True)(x))
    same_as_jax(lambda side: side.m.vjp(loss(side), x, has_aux=True)[2])
    same_as_jax(lambda side: side.m.jvp(loss(side), (x,), (x,), has_aux=True))
    same_as_jax(lambda side: side.m.jit(side.m.grad(
        lambda w: (side.np.sum(w), 3), has_aux=True))(x))


@pytest.mark.parametrize("index", [[0, 1], ([0, 1],), (0, [0, 2]), (slice(None), [2, 0])])
def test_a_list_as_the_whole_index_is_refused_as_in_jax(rng, index):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    same_as_jax(lambda side: side.np.asarray(x)[index])
    same_as_jax(lambda side: side.np.asarray(x).at[index].set(0.0))
