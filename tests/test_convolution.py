"""lax.conv_general_dilated and its wrappers, and lax.reduce_window: values against float64
NumPy references written from the definitions (loops over output positions), in 1-D, 2-D and
3-D, every layout, padding and dilation form and feature groups; conv_transpose against JAX's
definition and as the gradient of a convolution; derivatives by finite differences; vmap and
jit; max pooling's gradient; and the errors."""
import numpy as np
import pytest

import fnx
from fnx import lax
from fnx.core.errors import DTypeError, ShapeError
from fnx.test_util import check_grads

rng = np.random.default_rng(0)


def _np(x):
    return np.asarray(x, np.float64)


# ---------------------------------------------------------------------------------------------
# NumPy references, in the canonical layout: lhs (N, C, spatial...), rhs (O, I, spatial...)


def dilate_and_pad(x, pads, dilation, fill):
    """x's trailing len(pads) axes with dilation - 1 ``fill`` values between elements, then
    padded by ``pads`` with ``fill`` (negative pads crop)."""
    lead = x.ndim - len(pads)
    sizes = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape[lead:], dilation)]
    out = np.full(x.shape[:lead] + tuple(sizes), fill, np.float64)
    out[(slice(None),) * lead + tuple(slice(None, None, d) for d in dilation)] = x
    out = np.pad(out, [(0, 0)] * lead + [(max(lo, 0), max(hi, 0)) for lo, hi in pads],
                 constant_values=fill)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                 for n, (lo, hi) in zip(out.shape[lead:], pads))
    return out[(slice(None),) * lead + crop]


def conv_ref(lhs, rhs, strides, pads, lhs_dilation, rhs_dilation, groups=1):
    x = dilate_and_pad(_np(lhs), pads, lhs_dilation, 0.0)
    rhs = _np(rhs)
    n, c = x.shape[:2]
    o, cg, *ks = rhs.shape
    span = [(k - 1) * d + 1 for k, d in zip(ks, rhs_dilation)]
    out_sp = [(m - e) // s + 1 for m, e, s in zip(x.shape[2:], span, strides)]
    out = np.zeros((n, o, *out_sp))
    og = o // groups
    for pos in np.ndindex(*out_sp):
        window = x[(slice(None), slice(None)) + tuple(
            slice(p * s, p * s + e, d) for p, s, e, d in zip(pos, strides, span, rhs_dilation))]
        for g in range(groups):
            w = rhs[g * og:(g + 1) * og]
            patch = window[:, g * cg:(g + 1) * cg]
            out[(slice(None), slice(g * og, (g + 1) * og)) + pos] = \
                np.tensordot(patch, w, axes=(range(1, patch.ndim), range(1, w.ndim)))
    return out


def same_pads(sizes, kernel, strides, lower=False):
    """SAME padding written from its definition: output size ceil(n / s)."""
    pads = []
    for n, k, s in zip(sizes, kernel, strides):
        total = max(0, (-(-n // s) - 1) * s + k - n)
        lo, hi = total // 2, total - total // 2
        pads.append((hi, lo) if lower else (lo, hi))
    return pads


def to_layout(x, spec, canonical):
    """A canonical-layout array laid out as the string ``spec`` says."""
    return np.transpose(x, [canonical.index(ch) for ch in spec])


# ---------------------------------------------------------------------------------------------
# conv_general_dilated against the reference

# (lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, groups, layout), all
# canonical (N, C, spatial...), (O, I, spatial...); layout None or three strings.
CASES = {
    "1d-valid-stride": ((2, 3, 9), (4, 3, 3), (2,), "VALID", None, None, 1, None),
    "1d-same-lower-atrous-nhc": ((2, 3, 8), (2, 3, 3), (2,), "SAME_LOWER", None, (2,), 1,
                                 ("NHC", "HIO", "NHC")),
    "2d-same-strides": ((2, 3, 7, 6), (5, 3, 3, 2), (2, 1), "SAME", None, None, 1, None),
    "2d-pairs-nhwc": ((2, 3, 6, 7), (4, 3, 2, 3), (1, 2), ((1, 2), (0, 1)), None, None, 1,
                      ("NHWC", "HWIO", "NHWC")),
    "2d-negative-pads": ((1, 2, 7, 6), (3, 2, 3, 2), (1, 1), ((-1, 1), (2, 0)), None, None, 1,
                         None),
    "2d-lhs-dilation": ((2, 2, 4, 5), (3, 2, 3, 3), (1, 1), ((2, 2), (1, 0)), (2, 3), None, 1,
                        None),
    "2d-same-atrous": ((1, 3, 9, 8), (2, 3, 3, 3), (1, 2), "SAME", None, (2, 3), 1, None),
    "2d-groups": ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), "VALID", None, None, 2, None),
    "2d-depthwise-nhwc": ((2, 3, 7, 5), (6, 1, 3, 3), (2, 1), "SAME", None, None, 3,
                          ("NHWC", "HWIO", "NHWC")),
    "2d-spatial-order": ((1, 2, 6, 5), (3, 2, 3, 2), (2, 1), ((1, 0), (0, 1)), None, None, 1,
                         ("NWHC", "OIHW", "NCWH")),
    "2d-everything": ((2, 4, 5, 4), (4, 2, 2, 3), (2, 1), ((1, -1), (0, 2)), (2, 1), (1, 2), 2,
                      ("NHWC", "OHWI", "NCHW")),
    "3d-same-ndhwc": ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), (1, 2, 2), "SAME", None, (1, 1, 2), 1,
                      ("NDHWC", "DHWIO", "NDHWC")),
    "3d-groups-lhs-dilation": ((2, 4, 3, 3, 2), (2, 2, 2, 2, 1), (1, 1, 1),
                               ((0, 1), (1, 1), (0, 0)), (2, 1, 2), None, 2, None),
}


def _make_case(case):
    """Random operands and the reference result, laid out as the case says."""
    lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, groups, layout = case
    nsp = len(lhs_shape) - 2
    lhs_c, rhs_c = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
    kernel = rhs_shape[2:]
    rd = rhs_dil or (1,) * nsp
    if isinstance(padding, str):
        span = [(k - 1) * d + 1 for k, d in zip(kernel, rd)]
        pads = ([(0, 0)] * nsp if padding == "VALID"
                else same_pads(lhs_shape[2:], span, strides, padding == "SAME_LOWER"))
    else:
        pads = padding
    ref = conv_ref(lhs_c, rhs_c, strides, pads, lhs_dil or (1,) * nsp, rd, groups)
    if layout is None:
        return lhs_c, rhs_c, ref, None
    sp = "".join(ch for ch in layout[1] if ch not in "OI")    # the kernel orders spatial axes
    lhs = to_layout(lhs_c, layout[0], "NC" + sp)
    rhs = to_layout(rhs_c, layout[1], "OI" + sp)
    return lhs, rhs, to_layout(ref, layout[2], "NC" + sp), layout


@pytest.mark.parametrize("name", list(CASES))
def test_conv_general_dilated_matches_reference(name):
    case = CASES[name]
    _, _, strides, padding, lhs_dil, rhs_dil, groups, _ = case
    lhs, rhs, ref, layout = _make_case(case)
    out = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, layout,
                                   feature_group_count=groups)
    assert out.shape == ref.shape
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12, atol=1e-12)
    if layout is not None:
        # the same layout as a ConvDimensionNumbers of axis indices
        dn = lax.conv_dimension_numbers(lhs.shape, rhs.shape, layout)
        out2 = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn,
                                        feature_group_count=groups)
        np.testing.assert_allclose(_np(out2), ref, rtol=1e-12, atol=1e-12)


def test_conv_dimension_numbers():
    dn = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers((1, 2, 3), (4, 2, 3), None) == ((0, 1, 2),) * 3
    # spatial axes follow the kernel string's order
    dn = lax.conv_dimension_numbers((1, 5, 6, 2), (3, 2, 3, 3), ("NWHC", "OIHW", "NCHW"))
    assert dn.lhs_spec == (0, 3, 2, 1) and dn.rhs_spec == (0, 1, 2, 3)
    assert lax.conv_dimension_numbers((1,) * 4, (1,) * 4, dn) is dn


def test_conv_and_conv_with_general_padding():
    x, w = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2))
    np.testing.assert_allclose(_np(lax.conv(x, w, (1, 2), "VALID")),
                               conv_ref(x, w, (1, 2), [(0, 0)] * 2, (1, 1), (1, 1)),
                               rtol=1e-12, atol=1e-12)
    pads = ((1, 0), (2, 1))
    np.testing.assert_allclose(
        _np(lax.conv_with_general_padding(x, w, (2, 1), pads, (2, 1), (1, 2))),
        conv_ref(x, w, (2, 1), pads, (2, 1), (1, 2)), rtol=1e-12, atol=1e-12)


def test_float32_and_preferred_element_type():
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    out = lax.conv(x, w, (1, 1), "SAME")
    assert out.dtype == np.float32
    ref = conv_ref(x, w, (1, 1), same_pads((5, 5), (2, 2), (1, 1)), (1, 1), (1, 1))
    np.testing.assert_allclose(_np(out), ref, rtol=1e-5, atol=1e-5)
    out64 = lax.conv(x, w, (1, 1), "SAME", preferred_element_type=np.float64)
    assert out64.dtype == np.float64


def test_batch_group_count():
    """Output feature group b sees only batch group b (batch elements b * N/G onwards)."""
    x, w = rng.standard_normal((6, 2, 5, 4)), rng.standard_normal((4, 2, 2, 3))
    out = lax.conv_general_dilated(x, w, (1, 2), ((1, 0), (0, 1)), batch_group_count=2)
    pads, one = ((1, 0), (0, 1)), (1, 1)
    ref = np.concatenate([conv_ref(x[:3], w[:2], (1, 2), pads, one, one),
                          conv_ref(x[3:], w[2:], (1, 2), pads, one, one)], axis=1)
    assert out.shape == (3, 4, 5, 2)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12, atol=1e-12)
    check_grads(lambda x, w: lax.conv_general_dilated(x, w, (1, 2), pads, batch_group_count=2),
                (x[:4, :, :3], w), order=1)


def test_batch_groups_give_the_kernel_gradient_of_feature_groups():
    """As in JAX: the kernel gradient of a feature-grouped convolution is a batch-grouped
    convolution of the input (features as batch) with the cotangent (batch as features)."""
    x, w = rng.standard_normal((3, 4, 6, 5)), rng.standard_normal((6, 2, 3, 2))
    out, pullback = fnx.vjp(lambda w: lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                                               feature_group_count=2), w)
    ct = rng.standard_normal(out.shape)
    (grad_w,) = pullback(ct)
    via_batch_groups = lax.conv_general_dilated(
        np.transpose(x, (1, 0, 2, 3)), np.transpose(ct, (1, 0, 2, 3)), (1, 1), "VALID",
        batch_group_count=2)
    np.testing.assert_allclose(_np(grad_w), np.transpose(_np(via_batch_groups), (1, 0, 2, 3)),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# conv_transpose


def conv_transpose_ref(lhs, rhs, strides, padding, transpose_kernel):
    """JAX's definition, NHWC/HWIO: the input dilated by the strides, padded so that the
    result undoes a forward convolution with ``padding``, convolved with stride 1."""
    lhs_c = np.transpose(lhs, (0, 3, 1, 2))
    rhs_c = np.transpose(rhs, (3, 2, 0, 1))                       # OIHW
    if transpose_kernel:
        rhs_c = np.swapaxes(rhs_c[:, :, ::-1, ::-1], 0, 1)
    pads = []
    for k, s in zip(rhs.shape[:2], strides):
        if padding == "SAME":
            total = k + s - 2
            lo = k - 1 if s > k - 1 else int(np.ceil(total / 2))
        else:
            total = k + s - 2 + max(k - s, 0)
            lo = k - 1
        pads.append((lo, total - lo))
    out = conv_ref(lhs_c, rhs_c, (1, 1), pads, strides, (1, 1))
    return np.transpose(out, (0, 2, 3, 1))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides, kernel", [((2, 2), (3, 3)), ((1, 3), (2, 2)), ((3, 1), (2, 4))])
@pytest.mark.parametrize("transpose_kernel", [False, True])
def test_conv_transpose_matches_jax_definition(padding, strides, kernel, transpose_kernel):
    x = rng.standard_normal((2, 4, 3, 3))                         # NHWC
    w = rng.standard_normal(kernel + ((3, 2) if transpose_kernel else (3, 5)))   # HWIO
    if transpose_kernel:
        x = x[..., :2]
    out = lax.conv_transpose(x, w, strides, padding, transpose_kernel=transpose_kernel)
    ref = conv_transpose_ref(x, w, strides, padding, transpose_kernel)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12, atol=1e-12)
    # the output sizes JAX documents: n * s for SAME, n * s + max(k - s, 0) for VALID
    expect = [n * s + (max(k - s, 0) if padding == "VALID" else 0)
              for n, s, k in zip(x.shape[1:3], strides, kernel)]
    assert list(out.shape[1:3]) == expect


@pytest.mark.parametrize("size, padding, consistent", [
    (8, "SAME", False), (9, "VALID", False), (7, ((1, 1), (1, 1)), True),
])
def test_conv_transpose_is_the_gradient_of_conv(size, padding, consistent):
    """The transpose of a strided NHWC/HWIO convolution with respect to its input is
    conv_transpose of the cotangent with transpose_kernel=True."""
    x = rng.standard_normal((2, size, size, 3))
    w = rng.standard_normal((3, 3, 3, 4))
    strides, dn = (2, 2), ("NHWC", "HWIO", "NHWC")
    out, pullback = fnx.vjp(lambda x: lax.conv_general_dilated(x, w, strides, padding,
                                                               dimension_numbers=dn), x)
    ct = rng.standard_normal(out.shape)
    (grad_x,) = pullback(ct)
    t = lax.conv_transpose(ct, w, strides, padding, transpose_kernel=True,
                           use_consistent_padding=consistent)
    assert t.shape == x.shape
    np.testing.assert_allclose(_np(t), _np(grad_x), rtol=1e-12, atol=1e-12)


def test_conv_transpose_explicit_padding_and_layout():
    x = rng.standard_normal((1, 2, 4, 3))                         # NCHW
    w = rng.standard_normal((5, 2, 3, 2))                         # OIHW
    pads = ((2, 1), (0, 1))
    out = lax.conv_transpose(x, w, (2, 1), pads, dimension_numbers=("NCHW", "OIHW", "NCHW"))
    np.testing.assert_allclose(_np(out), conv_ref(x, w, (1, 1), pads, (2, 1), (1, 1)),
                               rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Derivatives and transformations


@pytest.mark.parametrize("name", ["1d-same-lower-atrous-nhc", "2d-everything",
                                  "2d-depthwise-nhwc", "3d-groups-lhs-dilation"])
def test_conv_grads(name):
    lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, groups, _ = CASES[name]
    lhs, rhs, _, layout = _make_case(CASES[name])
    lhs, rhs = lhs[:1], rhs            # one batch element keeps finite differences cheap

    def f(lhs, rhs):
        return lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, layout,
                                        feature_group_count=groups)

    check_grads(f, (lhs, rhs), order=2, modes=("fwd", "rev"))


def test_conv_vmap_and_jit():
    x = rng.standard_normal((3, 2, 2, 6, 5))                      # an extra leading axis
    w = rng.standard_normal((4, 2, 3, 3))
    ws = rng.standard_normal((3, 4, 2, 3, 3))

    def f(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), "SAME", rhs_dilation=(1, 2))

    want = np.stack([_np(f(xi, w)) for xi in x])
    np.testing.assert_allclose(_np(fnx.vmap(f, (0, None))(x, w)), want, rtol=1e-12)
    # the batch axis elsewhere, and a batched kernel
    np.testing.assert_allclose(_np(fnx.vmap(f, (2, None))(np.moveaxis(x, 0, 2), w)), want,
                               rtol=1e-12)
    want_w = np.stack([_np(f(xi, wi)) for xi, wi in zip(x, ws)])
    np.testing.assert_allclose(_np(fnx.vmap(f)(x, ws)), want_w, rtol=1e-12)
    np.testing.assert_allclose(_np(fnx.jit(f)(x[0], w)), _np(f(x[0], w)), rtol=1e-12)
    grad = fnx.jit(fnx.grad(lambda x, w: (f(x, w) ** 2).sum(), argnums=(0, 1)))
    eager = fnx.grad(lambda x, w: (f(x, w) ** 2).sum(), argnums=(0, 1))(x[0], w)
    for a, b in zip(grad(x[0], w), eager):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# reduce_window

_REDUCERS = {"max": (lax.max, np.max, -np.inf), "add": (lax.add, np.sum, 0.0),
             "min": (lax.min, np.min, np.inf), "mul": (lax.mul, np.prod, 1.0)}


def reduce_window_ref(x, init, op, window, strides, pads, base_dilation, window_dilation):
    """init combined with every element of each window; padding and dilation holes are
    filled with the identity, so they add nothing."""
    _, np_op, identity = _REDUCERS[op]
    xp = dilate_and_pad(_np(x), pads, base_dilation, identity)
    span = [(k - 1) * d + 1 for k, d in zip(window, window_dilation)]
    out_shape = [(m - e) // s + 1 for m, e, s in zip(xp.shape, span, strides)]
    out = np.empty(out_shape)
    for pos in np.ndindex(*out_shape):
        win = xp[tuple(slice(p * s, p * s + e, d)
                       for p, s, e, d in zip(pos, strides, span, window_dilation))]
        out[pos] = np_op(np.append(win.ravel(), init))
    return out


RW_CASES = {
    "max-pool-same": ("max", (2, 3, 7, 6), (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None, None),
    "max-valid-dilated-window": ("max", (2, 9, 8), (1, 3, 2), (1, 2, 2), "VALID", None,
                                 (1, 2, 3)),
    "add-pairs": ("add", (3, 7, 5), (2, 3, 2), (1, 2, 1), ((1, 0), (2, 1), (0, 1)), None, None),
    "add-same-lower-base-dilation": ("add", (2, 5, 4), (1, 3, 3), (1, 1, 2), "SAME_LOWER",
                                     (1, 2, 1), None),
    "min-pairs-base-dilation": ("min", (4, 6), (2, 3), (2, 1), ((1, 2), (0, 2)), (2, 1),
                                (1, 2)),
    "mul-valid": ("mul", (5, 6), (2, 2), (1, 2), "VALID", None, None),
    "max-same-both-dilations": ("max", (2, 7, 6), (1, 3, 2), (1, 2, 1), "SAME", (1, 1, 2),
                                (1, 2, 3)),
}


@pytest.mark.parametrize("name", list(RW_CASES))
def test_reduce_window_matches_reference(name):
    op, shape, window, strides, padding, base_dil, win_dil = RW_CASES[name]
    x = rng.standard_normal(shape)
    fn, _, init = _REDUCERS[op]
    nd = len(shape)
    if isinstance(padding, str):
        # as JAX: string padding from the undilated operand and the dilated window
        span = [(k - 1) * d + 1 for k, d in zip(window, win_dil or (1,) * nd)]
        pads = ([(0, 0)] * nd if padding == "VALID"
                else same_pads(shape, span, strides, padding == "SAME_LOWER"))
    else:
        pads = padding
    out = lax.reduce_window(x, init, fn, window, strides, padding, base_dil, win_dil)
    ref = reduce_window_ref(x, init, op, window, strides, pads, base_dil or (1,) * nd,
                            win_dil or (1,) * nd)
    assert out.shape == ref.shape
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12, atol=1e-12)


def test_reduce_window_init_value_and_dtypes():
    x = rng.standard_normal((4, 6))
    # an init value that is not the identity enters every window once
    out = lax.reduce_window(x, 1.5, lax.add, (2, 3), (2, 3), "VALID")
    ref = reduce_window_ref(x, 1.5, "add", (2, 3), (2, 3), [(0, 0)] * 2, (1, 1), (1, 1))
    np.testing.assert_allclose(_np(out), ref, rtol=1e-12)
    # ... also when the init value is only known at run time
    traced = fnx.jit(lambda x, init: lax.reduce_window(x, init, lax.add, (2, 3), (2, 3)))
    np.testing.assert_allclose(_np(traced(x, 1.5)), ref, rtol=1e-12)
    # integers: padding holds the dtype's extreme value, not -inf
    xi = rng.integers(-50, 50, (5, 5)).astype(np.int32)
    out = lax.reduce_window(xi, np.iinfo(np.int32).min, lax.max, (2, 2), (1, 1), "SAME")
    assert out.dtype == np.int32
    ref = reduce_window_ref(xi, -np.inf, "max", (2, 2), (1, 1), [(0, 1), (0, 1)], (1, 1),
                            (1, 1))
    np.testing.assert_array_equal(_np(out), ref)
    # unit strides and VALID padding by default, as in JAX
    np.testing.assert_allclose(_np(lax.reduce_window(x, 0.0, lax.add, (2, 2))),
                               reduce_window_ref(x, 0.0, "add", (2, 2), (1, 1), [(0, 0)] * 2,
                                                 (1, 1), (1, 1)), rtol=1e-12)
    # float32 stays float32 with a Python-float init
    x32 = x.astype(np.float32)
    assert lax.reduce_window(x32, -np.inf, lax.max, (2, 2), (2, 2), "VALID").dtype == np.float32


def test_max_pool_grad_and_avg_pool():
    x = rng.standard_normal((2, 3, 6, 5))

    def max_pool(x):
        return lax.reduce_window(x, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "SAME")

    def avg_pool(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 1, 1), "VALID") / 9.0

    check_grads(max_pool, (x,), order=1)
    check_grads(avg_pool, (x,), order=2)
    # the gradient of a sum of max-pools is 1 at each window's arg-max, 0 elsewhere
    g = _np(fnx.grad(lambda x: max_pool(x).sum())(x))
    xp = np.pad(x, ((0, 0), (0, 0), (0, 0), (0, 1)), constant_values=-np.inf)
    want = np.zeros_like(xp)
    for n, c, i, j in np.ndindex(2, 3, 3, 3):
        win = xp[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        a, b = np.unravel_index(np.argmax(win), win.shape)
        want[n, c, 2 * i + a, 2 * j + b] += 1
    np.testing.assert_array_equal(g, want[..., :5])
    # vmap and jit through pooling
    np.testing.assert_allclose(_np(fnx.vmap(max_pool)(x[:, None])), _np(max_pool(x))[:, None])
    np.testing.assert_allclose(_np(fnx.jit(avg_pool)(x)), _np(avg_pool(x)), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Errors


def test_conv_errors_name_the_shapes():
    x, w = np.ones((2, 3, 5, 5)), np.ones((4, 2, 3, 3))
    with pytest.raises(ShapeError, match=r"needs 3 input features, it has 2 \(lhs shape "
                                         r"\(2, 3, 5, 5\), rhs shape \(4, 2, 3, 3\)"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID")
    with pytest.raises(ShapeError, match="feature_group_count 2 does not divide the 3"):
        lax.conv_general_dilated(x, np.ones((4, 1, 3, 3)), (1, 1), "VALID",
                                 feature_group_count=2)
    with pytest.raises(ShapeError, match="does not divide the 5 rhs output"):
        lax.conv_general_dilated(np.ones((1, 4, 5, 5)), np.ones((5, 2, 3, 3)), (1, 1), "VALID",
                                 feature_group_count=2)
    with pytest.raises(ShapeError,
                       match=r"window of size \(1, 1, 7, 3\).*lhs shape \(2, 3, 5, 5\)"):
        lax.conv_general_dilated(x, np.ones((4, 3, 7, 3)), (1, 1), ((0, 1), (0, 0)))
    with pytest.raises(ShapeError, match="same rank"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3)), (1, 1), "VALID")
    with pytest.raises(DTypeError, match="float64 and float32"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3), np.float32), (1, 1), "VALID")
    with pytest.raises(ShapeError, match="window_strides"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3)), (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3)), (1, 1), "FULL")
    with pytest.raises(ValueError, match="lhs_dilation"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3)), (1, 1), "SAME", lhs_dilation=(2, 2))
    with pytest.raises(ShapeError, match=r"batch_group_count 4 must divide the 2 lhs batch.*"
                                         r"\(2, 3, 5, 5\)"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3)), (1, 1), "VALID", batch_group_count=4)
    with pytest.raises(ValueError, match="cannot both"):
        lax.conv_general_dilated(x, np.ones((4, 3, 3, 3)), (1, 1), "VALID", batch_group_count=2,
                                 feature_group_count=3)


@pytest.mark.parametrize("specs, match", [
    (("NHWC", "HWIO"), "three strings"),
    (("NHW", "HWIO", "NHWC"), "'NHW' has 3 letters"),
    (("NHWW", "HWIO", "NHWC"), "exactly once"),
    (("NHWC", "HWIO", "NHXC"), "same spatial"),
    (("NCHW", "OHWC", "NCHW"), "'I' exactly once"),
])
def test_bad_dimension_numbers(specs, match):
    x, w = np.ones((1, 5, 5, 3)), np.ones((3, 3, 3, 4))
    with pytest.raises(ShapeError, match=match) as info:
        lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=specs)
    assert isinstance(info.value, TypeError)          # JAX raises TypeError here


def test_reduce_window_errors():
    x = np.ones((4, 5))
    with pytest.raises(TypeError, match="lax.add, lax.mul, lax.max or lax.min"):
        lax.reduce_window(x, 0.0, lambda a, b: a + b, (2, 2), (1, 1), "VALID")
    with pytest.raises(ShapeError, match=r"window of size \(5, 2\).*operand shape \(4, 5\)"):
        lax.reduce_window(x, 0.0, lax.add, (5, 2), (1, 1), "VALID")
    with pytest.raises(ShapeError, match="window_strides"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,), "VALID")


# ---------------------------------------------------------------------------------------------
# GPU


@pytest.mark.cuda
def test_conv_and_pooling_on_gpu_match_cpu(gpu):
    lhs, rhs, _, layout = _make_case(CASES["2d-everything"])
    _, _, strides, padding, lhs_dil, rhs_dil, groups, _ = CASES["2d-everything"]

    def f(lhs, rhs):
        y = lax.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, layout,
                                     feature_group_count=groups)
        return lax.reduce_window(y, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 1, 1), "SAME")

    cpu = f(lhs, rhs)
    on_gpu = f(fnx.device_put(lhs, gpu), fnx.device_put(rhs, gpu))
    np.testing.assert_allclose(np.asarray(fnx.device_get(on_gpu)), _np(cpu), rtol=1e-10,
                               atol=1e-10)
    g_cpu = fnx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(lhs, rhs)
    g_gpu = fnx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(
        fnx.device_put(lhs, gpu), fnx.device_put(rhs, gpu))
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(np.asarray(fnx.device_get(a)), _np(b), rtol=1e-10,
                                   atol=1e-10)
