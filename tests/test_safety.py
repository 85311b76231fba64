"""Data safety: no silent aliasing of the caller's buffers, JAX's rules for out-of-range
indices, donation that loses nothing on failure, jit's argument handling, and the other
corners where fnx used to give a wrong answer without an error."""
import functools

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.core.errors import DeletedArrayError


# ---------------------------------------------------------------------------------------------
# 1. NumPy buffers in and out


def test_numpy_input_is_copied_in(rng):
    buf = rng.standard_normal(5).astype(np.float32)
    first = buf.copy()
    made = [jnp.asarray(buf), jnp.array(buf), fnx.device_put(buf),
            jnp.asarray(buf, dtype=jnp.float32)]
    buf[:] = rng.standard_normal(5).astype(np.float32)     # a data loader reusing its buffer
    for a in made:
        np.testing.assert_array_equal(np.asarray(a), first)


def test_numpy_input_converted_once(rng):
    buf = rng.standard_normal((3, 4))       # float64 in, float32 out (and F-ordered)
    a = jnp.asarray(np.asfortranarray(buf), dtype=jnp.float32)
    assert a.dtype == np.float32 and a._value.flags.c_contiguous
    np.testing.assert_array_equal(np.asarray(a), buf.astype(np.float32))


def test_jit_argument_from_numpy_is_not_aliased(rng):
    buf = rng.standard_normal(4).astype(np.float32)
    first = buf.copy()
    out = fnx.jit(lambda x: x)(buf)
    buf[:] = 0.5
    np.testing.assert_array_equal(np.asarray(out), first)


def test_asarray_of_fnx_array_is_read_only(rng):
    a = jnp.asarray(rng.standard_normal(4).astype(np.float32))
    before = np.array(a)
    view = np.asarray(a)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1.0
    copy = np.array(a)                   # copy=True: the caller's own array
    assert copy.flags.writeable
    copy[0] = 1.0
    np.testing.assert_array_equal(np.asarray(a), before)
    assert np.asarray(a, dtype=np.float64).flags.writeable
    with pytest.raises(ValueError, match="copy"):
        a.__array__(dtype=np.float64, copy=False)


def test_jit_snapshots_closed_over_numpy_constant(rng):
    c = rng.standard_normal(3).astype(np.float32)
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    expected = np.asarray(x) + c
    f = fnx.jit(lambda x: x + c)
    np.testing.assert_allclose(np.asarray(f(x)), expected)
    c[:] = 100.0
    np.testing.assert_allclose(np.asarray(f(x)), expected)
    np.testing.assert_allclose(np.asarray(fnx.jit(lambda x: x * 1.0 + c)(x)), np.asarray(x) + 100)


# ---------------------------------------------------------------------------------------------
# 3. Donation


class _DonatingCpu(type(fnx.devices("cpu")[0])):
    """The CPU backend claiming donation support, as the GPU backend does."""
    name = "cpu_donating"
    supports_donation = True

    def compile(self, jaxpr, consts, donated=()):
        return super().compile(jaxpr, consts)


@pytest.fixture
def donating_cpu():
    from fnx.backends import numpy_backend
    from fnx.core import core
    backend = _DonatingCpu(numpy_backend.impls)
    core.register_backend(backend.name, backend)
    yield backend
    core._backends.pop(backend.name)


def test_donated_argument_survives_a_call_that_raises(donating_cpu, rng):
    from fnx.core.debugging import debug_callback_p
    fail = [True]

    def check(*vals, batched):
        if fail[0]:
            raise RuntimeError("check failed")

    @functools.partial(fnx.jit, donate_argnums=0)
    def step(p):
        debug_callback_p.bind(p, callback=check, batched=False)
        return p * 2.0

    value = rng.standard_normal(3).astype(np.float32)
    p = fnx.device_put(value, donating_cpu)
    for _ in range(2):            # the first call, then the cached fast path
        with pytest.raises(RuntimeError, match="check failed"):
            step(p)
        assert not p.is_deleted()
        np.testing.assert_array_equal(np.asarray(p), value)
    fail[0] = False
    out = step(p)
    np.testing.assert_allclose(np.asarray(out), value * 2)
    assert p.is_deleted()
    with pytest.raises(DeletedArrayError):
        np.asarray(p)


# ---------------------------------------------------------------------------------------------
# 4. jit's arguments


def _scale(x, n):
    assert isinstance(n, int), "n must arrive static"
    return x * n


def test_static_and_donate_argnums_past_the_arguments_raise():
    for kw in ({"static_argnums": 5}, {"static_argnums": -3}, {"donate_argnums": 2}):
        with pytest.raises(ValueError, match="only accepts 2 positional arguments"):
            fnx.jit(_scale, **kw)
    with pytest.raises(ValueError, match="invalid argnames"):
        fnx.jit(_scale, static_argnames="m")
    with pytest.raises(ValueError, match="both static and donated"):
        fnx.jit(_scale, static_argnums=1, donate_argnames="n")
    # with *args, an index past this call's arguments names nothing (as in JAX)
    assert float(fnx.jit(lambda *a: a[0], static_argnums=5)(2.0, 3.0)) == 2.0


def test_static_argument_by_position_or_keyword(rng):
    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    for kw in ({"static_argnums": 1}, {"static_argnums": -1}, {"static_argnames": "n"}):
        f = fnx.jit(_scale, **kw)
        np.testing.assert_allclose(np.asarray(f(x, 3)), np.asarray(x) * 3)
        np.testing.assert_allclose(np.asarray(f(x, n=4)), np.asarray(x) * 4)
        np.testing.assert_allclose(np.asarray(f(x=x, n=5)), np.asarray(x) * 5)


def test_donate_argnames(donating_cpu, rng):
    value = rng.standard_normal(3).astype(np.float32)
    f = fnx.jit(lambda p, g: p - g, donate_argnames="p")
    p, g = (fnx.device_put(value, donating_cpu), fnx.device_put(value, donating_cpu))
    f(g=g, p=p)
    assert p.is_deleted() and not g.is_deleted()
    assert fnx.jit(lambda p, g: p - g, donate_argnames="p").donate_argnums == (0,)


def test_jitted_function_binds_as_method(rng):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Scaler) and other.k == self.k

        @functools.partial(fnx.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

        @fnx.jit
        def twice(self_unused, x):
            return x * 2

    x = jnp.asarray(rng.standard_normal(3).astype(np.float32))
    np.testing.assert_allclose(np.asarray(Scaler(3).apply(x)), np.asarray(x) * 3)
    np.testing.assert_allclose(np.asarray(Scaler(5).apply(x)), np.asarray(x) * 5)
    np.testing.assert_allclose(np.asarray(Scaler.apply(Scaler(2), x)), np.asarray(x) * 2)
    with pytest.raises(TypeError, match="not a valid fnx type"):
        Scaler(2).twice(x)
