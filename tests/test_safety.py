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
