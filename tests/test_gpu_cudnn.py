"""Convolutions on cuDNN (fnx/cuda/cudnn.py).

On the CPU (no mark): which cuDNN operation (forward, data or weight gradient) and layouts an
equation maps to. On the GPU
(``cuda``): every convolution JAX's ``grad`` makes of a forward convolution (its own forward,
data-gradient and weight-gradient convolutions, with their exact parameters) runs on cuDNN or is
refused, and matches JAX on the CPU in float64, in float32 (with and without TF32) and float16,
eagerly and replayed from a captured CUDA graph.
"""
import numpy as np
import pytest

from fnx.core.convolution import ConvDimensionNumbers
from fnx.cuda import cudnn as C

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

cuda = pytest.mark.cuda

# lhs shape, rhs shape, window strides, padding, rhs dilation, dimension numbers
CASES = [
    ((8, 16, 16, 3), (3, 3, 3, 32), (1, 1), "SAME", (1, 1), ("NHWC", "HWIO", "NHWC")),
    ((4, 16, 16, 8), (3, 3, 8, 16), (2, 2), "SAME", (1, 1), ("NHWC", "HWIO", "NHWC")),
    ((4, 8, 12, 12), (16, 8, 3, 3), (1, 1), "VALID", (2, 2), ("NCHW", "OIHW", "NCHW")),
    ((4, 12, 12, 8), (5, 5, 8, 8), (1, 1), ((1, 2), (2, 1)), (1, 1), ("NHWC", "HWIO", "NHWC")),
    ((4, 20, 6), (3, 6, 10), (1,), "SAME", (1,), ("NWC", "WIO", "NWC")),
    ((2, 6, 6, 6, 4), (3, 3, 3, 4, 8), (1, 1, 1), "SAME", (1, 1, 1),
     ("NDHWC", "DHWIO", "NDHWC")),
    ((8, 16, 16, 16), (16, 3, 3, 16), (1, 1), "SAME", (1, 1), ("NHWC", "OHWI", "NHWC")),
]


def _grad_convolutions(case):
    """``(lhs shape, rhs shape, params)`` of every convolution in JAX's jaxpr of the gradient
    (both operands) of a loss of the case's convolution."""
    xs, ws, strides, padding, rhs_dilation, dn = case

    def loss(x, w):
        y = jax.lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rhs_dilation,
                                         dimension_numbers=dn)
        return jnp.sum(jnp.tanh(y))

    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        jaxpr = jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(np.ones(xs), np.ones(ws))
    found = []
    for e in jaxpr.jaxpr.eqns:
        if e.primitive.name == "conv_general_dilated":
            p = e.params
            found.append((e.invars[0].aval.shape, e.invars[1].aval.shape, dict(
                window_strides=tuple(p["window_strides"]),
                padding=tuple(tuple(q) for q in p["padding"]),
                lhs_dilation=tuple(p["lhs_dilation"]), rhs_dilation=tuple(p["rhs_dilation"]),
                dimension_numbers=ConvDimensionNumbers(
                    *[tuple(s) for s in p["dimension_numbers"]]),
                feature_group_count=p["feature_group_count"],
                batch_group_count=p["batch_group_count"], preferred_element_type=None)))
    assert len(found) == 3, "a forward, a data-gradient and a weight-gradient convolution"
    return found


def _reference(a, b, params):
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu), jax.enable_x64(True):
        return np.asarray(jax.lax.conv_general_dilated(
            a, b, params["window_strides"], params["padding"], params["lhs_dilation"],
            params["rhs_dilation"], jax.lax.ConvDimensionNumbers(*params["dimension_numbers"]),
            params["feature_group_count"], params["batch_group_count"]))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[5][0]}-{c[1]}-s{c[2]}")
def test_each_gradient_convolution_maps_to_one_cudnn_operation(case):
    kinds = []
    for lhs, rhs, params in _grad_convolutions(case):
        m = C.mapping(lhs, rhs, np.float32, params)
        assert m is not None, params
        # only a strided forward's data gradient dilates its input: cuDNN's data gradient
        assert (m.kind == "dgrad") == any(d > 1 for d in params["lhs_dilation"])
        kinds.append(m.kind)
        assert C.out_shape(lhs, rhs, params) == _reference(
            np.ones(lhs), np.ones(rhs), params).shape
        # after the layout transposes every role is channels-first or channels-last
        perms = C.layouts(m)
        moved = C.mapping(*[tuple(np.take(s, p)) if p is not None else s
                            for s, p in zip((lhs, rhs), perms[:2])], np.float32,
                          C.permuted_params(params, perms))
        assert moved is not None and C.layouts(moved) == (None, None, None)
    assert kinds.count("fprop") >= 1 and kinds.count("wgrad") == 1
    assert kinds.count("dgrad") == (max(case[2]) > 1)


def test_float64_grouped_and_dilated_strided_inputs_are_refused():
    params = _grad_convolutions(CASES[0])[0][2]
    assert C.mapping((8, 16, 16, 3), (3, 3, 3, 32), np.float64, params) is None
    assert C.mapping((8, 16, 16, 3), (3, 3, 3, 32), np.float32,
                     dict(params, feature_group_count=3)) is None
    # an input both dilated and strided is no convolution cuDNN computes
    assert C.mapping((8, 16, 16, 3), (3, 3, 3, 32), np.float32,
                     dict(params, lhs_dilation=(2, 2), window_strides=(2, 2))) is None


@cuda
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[5][0]}-{c[1]}-s{c[2]}")
def test_cudnn_convolutions_match_jax(case, rng):
    import cupy as cp
    assert C.available(), "the cuda extra installs cuDNN and its frontend"
    for lhs, rhs, params in _grad_convolutions(case):
        if C.mapping(lhs, rhs, np.float32, params) is None:
            continue
        a, b = rng.standard_normal(lhs), rng.standard_normal(rhs)
        ref = _reference(a, b, params)
        scale = np.abs(ref).max()
        for dtype, precision, tol in ((np.float32, "highest", 2e-5),
                                      (np.float32, "tensorfloat32", 3e-3),
                                      (np.float16, "highest", 3e-3)):
            out = C.conv_general_dilated(cp.asarray(a.astype(dtype)), cp.asarray(b.astype(dtype)),
                                         precision=precision, **params)
            assert out.shape == ref.shape and out.dtype == dtype
            np.testing.assert_allclose(cp.asnumpy(out).astype(np.float64), ref, atol=tol * scale)
        # recorded into a CUDA graph on a prepared stream and replayed
        stream = cp.cuda.Stream(non_blocking=True)
        C.prepare_stream(stream.ptr)
        A, B = cp.asarray(a.astype(np.float32)), cp.asarray(b.astype(np.float32))
        with stream:
            C.conv_general_dilated(A, B, precision="highest", **params)
            stream.begin_capture()
            out = C.conv_general_dilated(A, B, precision="highest", **params)
            graph = stream.end_capture()
            out.fill(0)
            graph.launch(stream)
        stream.synchronize()
        np.testing.assert_allclose(cp.asnumpy(out), ref, atol=2e-5 * scale)


@cuda
def test_a_jitted_conv_net_gradient_runs_on_cudnn_and_matches_the_cpu(gpu, cpu, rng):
    import fnx
    import fnx.numpy as fjnp
    from fnx import lax
    from fnx.cuda.lowering import lower

    def loss(ws, x):
        h = x
        for w in ws:
            h = lax.conv_general_dilated(h, w, (1, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
            h = fjnp.tanh(h)
        return fjnp.sum(h * h)

    ws = [(rng.standard_normal((3, 3, 3, 8)) / 5).astype(np.float32),
          (rng.standard_normal((3, 3, 8, 16)) / 9).astype(np.float32)]
    x = rng.standard_normal((8, 16, 16, 3)).astype(np.float32)
    grad = fnx.grad(loss)
    closed = fnx.make_jaxpr(grad)(ws, x)
    text = lower(closed.jaxpr, closed.consts, gpu).describe()
    assert text.count("conv_general_dilated") >= 4 and "dot_general" not in text, text
    want = [np.asarray(g) for g in fnx.jit(grad)(*fnx.device_put((ws, x), cpu))]
    step = fnx.jit(grad)
    args = fnx.device_put((ws, x), gpu)
    for _ in range(3):          # eager first call, the capturing call, a replay
        got = step(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4, atol=2e-4 * np.abs(w).max())


@cuda
@pytest.mark.parametrize("strides,padding", [((2, 2), "SAME"), ((2, 2), "VALID"),
                                             ((3, 2), ((1, 2), (0, 1)))])
def test_transposed_and_strided_convolutions_run_on_cudnn_with_their_gradients(
        gpu, cpu, rng, strides, padding):
    """``conv_transpose`` (an input-dilated convolution) and the input gradient of a strided
    convolution run as cuDNN's data gradient, and match the CPU; only the transposed
    convolution's weight gradient is an im2col product."""
    import fnx
    import fnx.numpy as fjnp
    from fnx import lax
    from fnx.cuda.lowering import lower
    dn = ("NHWC", "HWIO", "NHWC")

    def loss(w_up, w_down, x):
        up = lax.conv_transpose(x, w_up, strides, padding, dimension_numbers=dn)
        down = lax.conv_general_dilated(fjnp.tanh(up), w_down, strides, "SAME",
                                        dimension_numbers=dn)
        return fjnp.sum(down * down)

    w_up = (rng.standard_normal((3, 3, 8, 16)) / 6).astype(np.float32)
    w_down = (rng.standard_normal((3, 3, 16, 4)) / 9).astype(np.float32)
    x = rng.standard_normal((4, 9, 7, 8)).astype(np.float32)
    grad = fnx.grad(loss, argnums=(0, 1, 2))
    closed = fnx.make_jaxpr(grad)(w_up, w_down, x)
    text = lower(closed.jaxpr, closed.consts, gpu).describe()
    assert text.count("dot_general") == 1 and text.count("conv_general_dilated") == 5, text
    want = [np.asarray(g) for g in fnx.jit(grad)(*fnx.device_put((w_up, w_down, x), cpu))]
    step = fnx.jit(grad)
    args = fnx.device_put((w_up, w_down, x), gpu)
    for _ in range(3):          # eager first call, the capturing call, a replay
        for g, w in zip(step(*args), want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-4, atol=2e-4 * np.abs(w).max())
