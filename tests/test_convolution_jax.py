"""The ``conv_general_dilated`` primitive against JAX on the CPU, one table of cases driving
every check: values, JVP, the gradient of both operands, vmap of either or both operands, and
jit; 1-D to 3-D, NCHW/NHWC/OIHW/HWIO and mixed layouts, strides, SAME/VALID/explicit
(asymmetric, negative) padding, input and kernel dilation, feature and batch groups. Also
preferred_element_type, the printed equation, the jaxpr of a conv net's gradient (convolutions,
no im2col), im2col against the primitive, and the GPU decomposition rule. Inputs are fresh
random draws each run."""
import functools

import ml_dtypes
import numpy as np
import pytest

import fnx
from fnx import lax
from fnx.core.convolution import conv_general_dilated_p, im2col
from fnx.core.jaxpr import subjaxprs

jax = pytest.importorskip("jax")

rng = np.random.default_rng()


pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


# name -> (lhs shape, rhs shape, window_strides, padding, lhs_dilation, rhs_dilation,
#          dimension_numbers, feature_group_count, batch_group_count); shapes in the layout
#          the dimension numbers name (NCH.../OIH... where None)
CASES = {
    "1d-valid-stride": ((2, 3, 9), (4, 3, 3), (2,), "VALID", None, None, None, 1, 1),
    "1d-nwc-same-lower-atrous": ((2, 8, 3), (3, 3, 2), (2,), "SAME_LOWER", None, (2,),
                                 ("NWC", "WIO", "NWC"), 1, 1),
    "2d-nchw-same-strides": ((2, 3, 7, 6), (5, 3, 3, 2), (2, 1), "SAME", None, None, None, 1,
                             1),
    "2d-nhwc-asymmetric-pads": ((2, 6, 7, 3), (2, 3, 3, 4), (1, 2), ((1, 2), (0, 1)), None,
                                None, ("NHWC", "HWIO", "NHWC"), 1, 1),
    "2d-negative-pads": ((1, 2, 7, 6), (3, 2, 3, 2), (1, 1), ((-1, 1), (2, -1)), None, None,
                         None, 1, 1),
    "2d-stride-past-kernel": ((1, 2, 9, 8), (3, 2, 2, 2), (3, 3), "VALID", None, None, None,
                              1, 1),
    "2d-lhs-dilation-strides": ((2, 2, 4, 5), (3, 2, 3, 3), (2, 1), ((2, 2), (1, 0)), (2, 3),
                                None, None, 1, 1),
    "2d-rhs-dilation-same": ((1, 3, 9, 8), (2, 3, 3, 3), (1, 2), "SAME", None, (2, 3), None,
                             1, 1),
    "2d-feature-groups": ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), "VALID", None, None, None, 2, 1),
    "2d-depthwise-nhwc": ((2, 7, 5, 3), (3, 3, 1, 6), (2, 1), "SAME", None, None,
                          ("NHWC", "HWIO", "NHWC"), 3, 1),
    "2d-batch-groups": ((6, 2, 5, 4), (4, 2, 2, 3), (1, 2), ((1, 0), (0, 1)), None, None,
                        None, 1, 2),
    "2d-batch-groups-nhwc": ((4, 5, 5, 3), (3, 3, 3, 6), (2, 1), "SAME", None, None,
                             ("NHWC", "HWIO", "NHWC"), 1, 2),
    "2d-mixed-layouts": ((2, 5, 4, 4), (4, 3, 2, 2), (2, 1), ((1, -1), (0, 2)), (2, 1), (1, 2),
                         ("NHWC", "OHWI", "NCHW"), 2, 1),
    "2d-spatial-order": ((1, 5, 6, 2), (3, 2, 3, 2), (2, 1), ((1, 0), (0, 1)), None, None,
                         ("NWHC", "OIHW", "NCWH"), 1, 1),
    "3d-ndhwc-same": ((1, 5, 4, 6, 2), (2, 3, 2, 2, 3), (1, 2, 2), "SAME", None, (1, 1, 2),
                      ("NDHWC", "DHWIO", "NDHWC"), 1, 1),
    "3d-groups-lhs-dilation": ((2, 4, 3, 3, 2), (2, 2, 2, 2, 1), (1, 1, 1),
                               ((0, 1), (1, 1), (0, 0)), (2, 1, 2), None, None, 2, 1),
}
NAMES = list(CASES)


def _conv(lax_module, name, **overrides):
    """The case's convolution as a function of (lhs, rhs), in fnx's or JAX's lax."""
    _, _, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc = CASES[name]
    params = dict(lhs_dilation=lhs_dil, rhs_dilation=rhs_dil, dimension_numbers=dn,
                  feature_group_count=fgc, batch_group_count=bgc, **overrides)
    return lambda lhs, rhs: lax_module.conv_general_dilated(lhs, rhs, strides, padding,
                                                            **params)


def _operands(name, dtype=np.float64):
    lhs_shape, rhs_shape = CASES[name][:2]
    return (rng.standard_normal(lhs_shape).astype(dtype),
            rng.standard_normal(rhs_shape).astype(dtype))


def _close(ours, theirs, tol=1e-12):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, \
        (ours.shape, ours.dtype, theirs.shape, theirs.dtype)
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol,
                               atol=tol)


def _primitives(jaxpr) -> list:
    """Every equation's primitive name, nested jaxprs (jit, control flow) included."""
    names = []
    for e in jaxpr.eqns:
        names.append(e.primitive.name)
        for sub in subjaxprs(e):
            names += _primitives(sub)
    return names


@functools.lru_cache(maxsize=None)
def _case(name):
    """Fresh operands and a cotangent for case ``name``, with JAX's value and gradients from
    one compiled program (JAX compiles each program it runs, which takes far longer than
    fnx's checks; the JVP and vmap checks stand on the value checked here)."""
    f_jax = _conv(jax.lax, name)
    lhs, rhs = _operands(name)
    ct = rng.standard_normal(jax.eval_shape(f_jax, lhs, rhs).shape)

    def value_and_grads(lhs, rhs, ct):
        loss = lambda a, b: (f_jax(a, b) * ct).sum()     # noqa: E731
        return f_jax(lhs, rhs), jax.grad(loss, argnums=(0, 1))(lhs, rhs)
    return (lhs, rhs, ct), jax.jit(value_and_grads)(lhs, rhs, ct)


@pytest.mark.parametrize("name", NAMES)
def test_values_gradients_and_jit_match_jax(name):
    (lhs, rhs, ct), (want, want_grads) = _case(name)
    f = _conv(lax, name)
    _close(f(lhs, rhs), want)
    grads = fnx.grad(lambda a, b: (f(a, b) * ct).sum(), argnums=(0, 1))(lhs, rhs)
    for ours, theirs in zip(grads, want_grads):
        _close(ours, theirs)
    jitted = fnx.jit(f)
    _close(jitted(lhs, rhs), want)
    assert _primitives(jitted.trace(lhs, rhs).lower().traced.jaxpr) == ["conv_general_dilated"]


@pytest.mark.parametrize("name", NAMES)
def test_jvp_is_bilinear(name):
    (lhs, rhs, _), (want, _) = _case(name)
    t_lhs, t_rhs = _operands(name)
    f = _conv(lax, name)
    out, tangent = fnx.jvp(f, (lhs, rhs), (t_lhs, t_rhs))
    _close(out, want)
    _close(tangent, np.asarray(f(t_lhs, rhs)) + np.asarray(f(lhs, t_rhs)))


@pytest.mark.parametrize("name", NAMES)
def test_vmap_matches_stacked_examples(name):
    """The mapped axis on the lhs, on the rhs and on both, away from the front."""
    f = _conv(lax, name)
    (lhs, rhs), (lhs2, rhs2) = _operands(name), _operands(name)
    for axes in [(1, None), (None, -1), (1, -1)]:
        examples = [(lhs, rhs), (lhs2 if axes[0] is not None else lhs,
                                 rhs2 if axes[1] is not None else rhs)]
        args = [x if a is None else np.stack([e[i] for e in examples], a)
                for i, (x, a) in enumerate(zip((lhs, rhs), axes))]
        want = np.stack([np.asarray(f(*e)) for e in examples])
        _close(fnx.vmap(f, axes)(*args), want)


def test_vmap_over_an_empty_axis():
    f = _conv(lax, "2d-batch-groups")
    lhs, rhs = _operands("2d-batch-groups")
    out = fnx.vmap(f, (0, None))(np.zeros((0,) + lhs.shape), rhs)
    assert out.shape == (0,) + f(lhs, rhs).shape and out.dtype == np.float64


@pytest.mark.parametrize("lhs_shape, rhs_shape, out_shape", [
    ((0, 2, 5, 5), (3, 2, 3, 3), (0, 3, 5, 5)),          # no batch
    ((2, 0, 5, 5), (3, 0, 3, 3), (2, 3, 5, 5)),          # no features: empty sums
    ((2, 2, 5, 5), (0, 2, 3, 3), (2, 0, 5, 5)),          # no kernels
])
def test_empty_operands(lhs_shape, rhs_shape, out_shape):
    """As in JAX: zeros of the shape the sizes give, and zero gradients."""
    lhs, rhs = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
    f = lambda a, b: lax.conv(a, b, (1, 1), "SAME")      # noqa: E731
    out = f(lhs, rhs)
    assert out.shape == out_shape and not np.asarray(out).any()
    for step in (fnx.grad, lambda g, **kw: fnx.jit(fnx.grad(g, **kw))):
        grads = step(lambda a, b: (f(a, b) ** 2).sum(), argnums=(0, 1))(lhs, rhs)
        assert [g.shape for g in grads] == [lhs_shape, rhs_shape]
        assert not any(np.asarray(g).any() for g in grads)


@pytest.mark.parametrize("name", ["2d-mixed-layouts", "2d-batch-groups", "3d-ndhwc-same"])
def test_im2col_is_the_primitive(name):
    """The decomposition every backend falls back to computes what the primitive does."""
    lhs, rhs = _operands(name)
    f = _conv(lax, name)
    (eqn,) = fnx.make_jaxpr(f)(lhs, rhs).jaxpr.eqns
    assert eqn.primitive is conv_general_dilated_p
    decomposed = fnx.make_jaxpr(lambda a, b: im2col(a, b, **eqn.params))(lhs, rhs)
    assert "conv_general_dilated" not in _primitives(decomposed.jaxpr)
    _close(im2col(fnx.numpy.asarray(lhs), fnx.numpy.asarray(rhs), **eqn.params), f(lhs, rhs))


# ---------------------------------------------------------------------------------------------
# dtypes


@pytest.mark.parametrize("dtype, preferred, tol", [
    (np.float32, np.float64, 1e-12),
    (ml_dtypes.bfloat16, np.float32, 1e-5),
    (np.int8, np.int32, 0),
])
def test_preferred_element_type(dtype, preferred, tol):
    name = "2d-nhwc-asymmetric-pads"
    lhs, rhs = (rng.integers(-4, 5, CASES[name][i]).astype(dtype) for i in (0, 1))
    f = _conv(lax, name, preferred_element_type=preferred)
    f_jax = _conv(jax.lax, name, preferred_element_type=preferred)
    _close(f(lhs, rhs), jax.jit(f_jax)(lhs, rhs), tol)
    if dtype == np.int8:
        return
    # the gradient in the operands' dtype, from the cotangent in the preferred one
    grads = fnx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(lhs, rhs)
    want = jax.jit(jax.grad(lambda a, b: f_jax(a, b).sum(), argnums=(0, 1)))(lhs, rhs)
    for ours, theirs in zip(grads, want):
        _close(ours, theirs, tol)


@pytest.mark.x32
def test_default_dtypes_and_weak_type():
    name = "2d-nchw-same-strides"
    lhs, rhs = _operands(name, np.float32)
    out = _conv(lax, name)(lhs, rhs)
    assert out.dtype == np.float32 and not out.aval.weak_type
    with pytest.warns(UserWarning, match="float64"):    # truncated without x64, as in JAX
        wide = _conv(lax, name, preferred_element_type=np.float64)(lhs, rhs)
    assert wide.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# The IR


def test_jaxpr_prints_as_jax():
    lhs, rhs = np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32)
    text = str(fnx.make_jaxpr(lambda a, b: lax.conv(a, b, (2, 1), "SAME"))(lhs, rhs))
    assert text == """\
{ lambda ; a:f32[1,2,5,5] b:f32[3,2,3,3]. let
    c:f32[1,3,3,5] = conv_general_dilated[
      batch_group_count=1
      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), \
out_spec=(0, 1, 2, 3))
      feature_group_count=1
      lhs_dilation=(1, 1)
      padding=((1, 1), (1, 1))
      precision=None
      preferred_element_type=None
      rhs_dilation=(1, 1)
      window_strides=(2, 1)
    ] a b
  in (c,) }"""


def test_grad_of_a_conv_net_is_convolutions():
    """Two layers: two forward convolutions, each kernel's gradient and the first layer's
    output gradient, five convolutions in all, and no im2col (pads, slices, products)."""
    x = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    w1 = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    w2 = rng.standard_normal((3, 3, 4, 5)).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")

    def net(lib):
        def loss(w1, w2, x):
            h = lib.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn)
            h = lib.numpy.maximum(h, 0.0)
            y = lib.lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=dn)
            return (y ** 2).mean()
        return loss

    step = fnx.jit(fnx.grad(net(fnx), argnums=(0, 1)))
    names = _primitives(step.trace(w1, w2, x).lower().traced.jaxpr)
    assert names.count("conv_general_dilated") == 5
    assert not {"pad", "slice", "concatenate", "dot_general"} & set(names), names
    import jax.numpy  # noqa: F401  (net's lib.numpy)
    want = jax.jit(jax.grad(net(jax), argnums=(0, 1)))(w1, w2, x)
    for ours, theirs in zip(step(w1, w2, x), want):
        _close(ours, theirs, 1e-4)


@pytest.mark.parametrize("policy, kept", [("dots_saveable", True), ("nothing_saveable", False),
                                          ("dots_with_no_batch_dims_saveable", False)])
def test_checkpoint_policies_see_convolutions(policy, kept):
    """As in JAX, ``dots_saveable`` keeps a convolution's result for the backward pass."""
    from fnx.ad_checkpoint import checkpoint_policies
    from fnx.core.ad import linearize_flat
    lhs, rhs = _operands("2d-nchw-same-strides")
    conv = _conv(lax, "2d-nchw-same-strides")
    f = fnx.checkpoint(lambda a, b: fnx.numpy.sin(conv(a, b)).sum(),
                       policy=getattr(checkpoint_policies, policy))
    _, lin = linearize_flat(lambda a, b: [f(a, b)], [lhs, rhs])
    y = np.asarray(conv(lhs, rhs))
    assert kept == any(np.shape(c) == y.shape and np.allclose(np.asarray(c), y)
                       for c in lin.consts)


# ---------------------------------------------------------------------------------------------
# The GPU's decomposition rule (backend-neutral: it rewrites equations)


def test_gpu_decomposes_convolutions_without_cudnn(monkeypatch):
    from fnx.core.jaxpr import Jaxpr, eval_jaxpr
    from fnx.cuda import decompose
    monkeypatch.setattr(decompose.cudnn, "available", lambda: False)     # as if absent
    lhs, rhs = _operands("2d-mixed-layouts")
    closed = fnx.make_jaxpr(_conv(lax, "2d-mixed-layouts"))(lhs, rhs)
    (eqn,) = closed.jaxpr.eqns
    applies, _ = decompose.RULES[conv_general_dilated_p]
    assert applies(eqn)
    eqns = decompose.decompose(closed.jaxpr.eqns)
    names = [e.primitive.name for e in eqns]
    assert "conv_general_dilated" not in names and "dot_general" in names
    j = closed.jaxpr
    (out,) = eval_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts, lhs, rhs)
    _close(out, _conv(lax, "2d-mixed-layouts")(lhs, rhs))


# ---------------------------------------------------------------------------------------------
# GPU


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["2d-mixed-layouts", "2d-batch-groups", "2d-depthwise-nhwc",
                                  "3d-ndhwc-same"])
def test_gpu_matches_cpu_eager_and_jitted(name, gpu):
    """Eager (CuPy im2col), and compiled (cuDNN where it takes the convolution, im2col where
    it does not), forward and both gradients."""
    lhs, rhs = _operands(name)
    f = _conv(lax, name)
    grad = fnx.grad(lambda a, b: (f(a, b) ** 2).sum(), argnums=(0, 1))
    on_gpu = [fnx.device_put(a, gpu) for a in (lhs, rhs)]
    for fn, want in [(f, [f(lhs, rhs)]), (grad, grad(lhs, rhs))]:
        for run in (fn, fnx.jit(fn)):
            got = run(*on_gpu)
            for ours, theirs in zip(got if isinstance(got, tuple) else [got], want):
                _close(fnx.device_get(ours), theirs, 1e-10)
