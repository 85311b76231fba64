"""fnx.ffi: Python targets called through ffi_call (eagerly, under jit and vmap), results
against NumPy; XLA handlers and unknown targets refused by name."""
import ctypes

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import ffi

rng = np.random.default_rng(0)


def _rms_norm(x, *, eps):
    assert isinstance(x, np.ndarray)          # targets operate on NumPy arrays
    scale = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return (x * scale).astype(x.dtype)


ffi.register_ffi_target("test_rms_norm", _rms_norm, platform="cpu")


def rms_norm(x, eps=1e-5, vmap_method="broadcast_all"):
    return ffi.ffi_call("test_rms_norm", jnp.zeros_like(x), vmap_method=vmap_method)(
        x, eps=np.float32(eps))


def _rms_norm_ref(x, eps=1e-5):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def test_ffi_call_eager_and_under_jit():
    x = rng.standard_normal((3, 5))
    np.testing.assert_allclose(rms_norm(x), _rms_norm_ref(x), rtol=1e-12)
    np.testing.assert_allclose(fnx.jit(rms_norm)(x * 2), _rms_norm_ref(x * 2), rtol=1e-12)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_ffi_call_under_vmap(method):
    xs = rng.standard_normal((4, 3, 5))
    got = fnx.vmap(lambda x: rms_norm(x, vmap_method=method))(xs)
    np.testing.assert_allclose(got, np.stack([_rms_norm_ref(x) for x in xs]), rtol=1e-12)


def test_vmap_without_a_method_is_refused():
    with pytest.raises(NotImplementedError, match="vmap_method"):
        fnx.vmap(lambda x: rms_norm(x, vmap_method=None))(jnp.ones((2, 3)))


def test_several_results_keep_the_declared_sequence_type():
    ffi.register_ffi_target("test_moments", lambda x: (x.mean(), x.var()))
    out = fnx.ShapeDtypeStruct((), jnp.float64)
    x = rng.standard_normal(7)
    m, v = ffi.ffi_call("test_moments", (out, out))(x)
    np.testing.assert_allclose([m, v], [x.mean(), x.var()], rtol=1e-12)
    assert isinstance(ffi.ffi_call("test_moments", [out, out])(x), list)
    assert isinstance(ffi.ffi_call("test_moments", (out, out))(x), tuple)


def test_side_effecting_target_runs_even_when_its_result_is_unused():
    calls = []

    def log(x):
        calls.append(np.asarray(x).copy())
        return x

    ffi.register_ffi_target("test_log", log)

    @fnx.jit
    def f(x):
        ffi.ffi_call("test_log", x, has_side_effect=True)(x)
        return x + 1
    f(jnp.arange(3.0))
    assert len(calls) == 1 and np.array_equal(calls[0], [0.0, 1.0, 2.0])


def test_no_derivative():
    with pytest.raises(ValueError, match="JVP"):
        fnx.grad(lambda x: rms_norm(x).sum())(jnp.ones(3))


def test_xla_handlers_and_unknown_targets_are_refused_by_name():
    capsule = ffi.pycapsule(ctypes.CDLL(None).abs)
    assert type(capsule).__name__ == "PyCapsule"
    ffi.register_ffi_target("test_xla_handler", capsule, platform="cpu")
    out = fnx.ShapeDtypeStruct((2,), jnp.float32)
    with pytest.raises(ffi.FfiError, match="PyCapsule"):
        ffi.ffi_call("test_xla_handler", out)(jnp.ones(2))
    with pytest.raises(ffi.FfiError, match="test_nowhere"):
        ffi.ffi_call("test_nowhere", out)(jnp.ones(2))
    with pytest.raises(ffi.FfiError):
        ffi.include_dir()
    with pytest.raises(ffi.FfiError):
        ffi.ffi_lowering("test_xla_handler")(None)


def test_a_python_target_wins_over_an_xla_handler_of_the_same_name():
    ffi.register_ffi_target("test_both", ffi.pycapsule(ctypes.CDLL(None).abs), platform="cuda")
    ffi.register_ffi_target("test_both", lambda x: -x, platform="cpu")
    np.testing.assert_array_equal(
        ffi.ffi_call("test_both", jnp.ones(2))(jnp.asarray([1.0, -2.0])), [-1.0, 2.0])
