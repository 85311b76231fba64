"""Convolutions on cuDNN's graph API (the cuDNN frontend's ``cudnn`` module), inside the
program's CUDA graph.

A ``conv_general_dilated`` equation runs as one cuDNN operation when its operands are in
layouts cuDNN reads: images (and loss gradients) and filters all channels-last (NHWC, KRSC) or
all channels-first (NCHW, KCRS). cuDNN accepts other strides and silently computes garbage, so
:func:`layouts` finds the transposes that bring an equation there; the GPU lowering inserts
them as equations of the program (small arrays: a filter or a filter gradient, fused with their
neighbours), and the eager path makes the copies itself. Which operation:

* forward (``conv_fprop``): image = lhs, filter = rhs, output = out;
* weight gradient (``conv_wgrad``), for the convolution ``grad`` makes of a forward one's
  filter, recognised by its window (the forward output) being larger than its output (the
  filter): image = lhs and loss = rhs with their batch and feature roles swapped, cuDNN's
  stride the equation's rhs dilation and cuDNN's dilation its window strides;
* data gradient (``conv_dgrad``), for a convolution whose input is dilated (the input gradient
  of a strided forward convolution, and ``conv_transpose``): loss = lhs, filter = rhs with its
  feature roles swapped and its window reversed (a small copy), image = the output; cuDNN's
  stride the lhs dilation and its padding what the window leaves of the equation's.

Plans are built once per shapes, layouts, dtype and precision (cuDNN's heuristics' first
choice, no TF32 unless the precision asks for it). Every stream gets its own handle and
workspace before a graph is captured on it, so a replay runs the same kernels on the same
memory. Inputs both dilated and strided, grouped convolutions, float64 and mixed dtypes are
not offered to cuDNN: :func:`supports` says no and they run as im2col.
"""
from __future__ import annotations

import functools
import threading
from typing import NamedTuple

import numpy as np

from ..core import dtypes
from .copies import dense

_IO_TYPES = {np.dtype(np.float32): "FLOAT", np.dtype(np.float16): "HALF",
             np.dtype(dtypes.bfloat16): "BFLOAT16"}


@functools.lru_cache(maxsize=None)
def _frontend():
    """The cuDNN frontend module, or None where it is not installed or cuDNN does not load.

    The frontend imports PyTorch when it can (for its tensor helpers, which fnx, passing
    pointers, never uses): seconds of a first call. Unless the process has imported it already,
    PyTorch is hidden while the frontend loads."""
    import sys
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None     # ``import torch`` raises ImportError meanwhile
    try:
        import cudnn
        cudnn.backend_version()
    except Exception:       # noqa: BLE001  (any failure to load means: no cuDNN here)
        return None
    finally:
        if hide and "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    return cudnn


def available() -> bool:
    """Whether convolutions can run on cuDNN in this process."""
    return _frontend() is not None


# ---------------------------------------------------------------------------------------------
# Which cuDNN operation an equation is, and in which layouts


class Mapping(NamedTuple):
    """A convolution as a cuDNN operation: each role's axes in cuDNN's order, (N, C, spatial)
    for the image, (K, C, spatial) for the filter, (N, K, spatial) for the loss/output image."""
    kind: str           # "fprop", "wgrad" or "dgrad"
    image: tuple        # axes of lhs (the output for dgrad)
    filter: tuple       # axes of rhs (fprop, dgrad) or of the output (wgrad)
    loss: tuple         # axes of the output (fprop), of rhs (wgrad) or of lhs (dgrad)
    stride: tuple
    dilation: tuple
    pre: tuple
    post: tuple


def out_shape(lhs_shape, rhs_shape, params) -> tuple:
    """The convolution's result shape (as its abstract evaluation gives it)."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    shape = [0] * len(lhs_shape)
    shape[out_spec[0]] = lhs_shape[lhs_spec[0]] // params["batch_group_count"]
    shape[out_spec[1]] = rhs_shape[rhs_spec[0]]
    for i, (la, ra, oa) in enumerate(zip(lhs_spec[2:], rhs_spec[2:], out_spec[2:])):
        size = (lhs_shape[la] - 1) * params["lhs_dilation"][i] + 1
        window = (rhs_shape[ra] - 1) * params["rhs_dilation"][i] + 1
        lo, hi = params["padding"][i]
        shape[oa] = max(0, (size + lo + hi - window) // params["window_strides"][i] + 1)
    return tuple(shape)


def mapping(lhs_shape, rhs_shape, dtype, params) -> Mapping | None:
    """How the convolution runs on cuDNN, or None where it does not."""
    dtype = np.dtype(dtype)
    preferred = params.get("preferred_element_type")
    if dtype not in _IO_TYPES or (preferred is not None and np.dtype(preferred) != dtype):
        return None
    if params["feature_group_count"] != 1 or params["batch_group_count"] != 1 \
            or len(lhs_shape) < 3:
        return None
    pre = tuple(int(lo) for lo, _ in params["padding"])
    post = tuple(int(hi) for _, hi in params["padding"])
    lhs_spec, rhs_spec, out_spec = (tuple(s) for s in params["dimension_numbers"])
    shape = out_shape(lhs_shape, rhs_shape, params)
    if 0 in lhs_shape or 0 in rhs_shape or 0 in shape:
        return None
    window = [rhs_shape[a] for a in rhs_spec[2:]]
    result = [shape[a] for a in out_spec[2:]]
    if any(d != 1 for d in params["lhs_dilation"]):
        # (a window larger than the result is a weight gradient, of a transposed convolution:
        # as a data gradient its filter would be the whole image)
        if np.prod(window) > np.prod(result):
            return None
        return _data_gradient(params, pre, post, window, lhs_spec, rhs_spec, out_spec)
    if min(pre + post, default=0) < 0:
        return None
    if np.prod(window) <= np.prod(result):
        return Mapping("fprop", lhs_spec, rhs_spec, out_spec,
                       tuple(params["window_strides"]), tuple(params["rhs_dilation"]), pre, post)
    stride, dilation = tuple(params["rhs_dilation"]), tuple(params["window_strides"])
    image = (lhs_spec[1], lhs_spec[0]) + lhs_spec[2:]
    for i, a in enumerate(lhs_spec[2:]):
        # cuDNN derives the loss size from the image and filter sizes: it must be the window
        span = lhs_shape[a] + pre[i] + post[i] - dilation[i] * (result[i] - 1) - 1
        if span < 0 or span // stride[i] + 1 != window[i]:
            return None
    return Mapping("wgrad", image, (out_spec[1], out_spec[0]) + out_spec[2:],
                   (rhs_spec[1], rhs_spec[0]) + rhs_spec[2:], stride, dilation, pre, post)


def _data_gradient(params, pre, post, window, lhs_spec, rhs_spec, out_spec):
    """The mapping of a convolution over a dilated input as cuDNN's data gradient of the forward
    convolution it transposes: that forward's stride is the lhs dilation, its padding what the
    (dilated) window leaves of this one's, and its filter this one's, reversed."""
    if any(s != 1 for s in params["window_strides"]):
        return None
    dilation = tuple(params["rhs_dilation"])
    extent = [(w - 1) * d for w, d in zip(window, dilation)]
    fwd_pre = tuple(e - lo for e, lo in zip(extent, pre))
    fwd_post = tuple(e - hi for e, hi in zip(extent, post))
    if min(fwd_pre + fwd_post) < 0:
        return None
    return Mapping("dgrad", out_spec, (rhs_spec[1], rhs_spec[0]) + rhs_spec[2:], lhs_spec,
                   tuple(params["lhs_dilation"]), dilation, fwd_pre, fwd_post)


def _channels_last(axes) -> tuple:
    """The permutation of an array whose role axes are ``axes`` that makes it channels-last."""
    return (axes[0],) + tuple(axes[2:]) + (axes[1],)


def layouts(m: Mapping):
    """``(lhs_perm, rhs_perm, out_perm)``: the transposes (None: none) that put every role in
    one cuDNN layout family, channels-first where the image already is, else channels-last."""
    image, (lhs_role, rhs_role, out_role) = m.image, _roles(m)
    family = (lambda axes: tuple(axes)) if tuple(image) == tuple(range(len(image))) \
        else _channels_last
    perms = []
    for axes in (lhs_role, rhs_role, out_role):
        perm = family(axes)
        perms.append(None if perm == tuple(range(len(perm))) else perm)
    return tuple(perms)


def _roles(m: Mapping):
    """The role axes of lhs, rhs and the output."""
    if m.kind == "fprop":
        return m.image, m.filter, m.loss
    if m.kind == "dgrad":
        return m.loss, m.filter, m.image
    return m.image, m.loss, m.filter


def permuted_params(params, perms):
    """The equation's params once its operands and result are transposed by ``perms`` (an
    array ``transpose(x, p)`` has old axis ``a`` at position ``argsort(p)[a]``)."""
    specs = []
    for spec, perm in zip(params["dimension_numbers"], perms):
        if perm is None:
            specs.append(tuple(spec))
        else:
            where = np.argsort(perm)
            specs.append(tuple(int(where[a]) for a in spec))
    return dict(params, dimension_numbers=type(params["dimension_numbers"])(*specs))


def takes(lhs, rhs, params) -> bool:
    """Whether this process runs a convolution of operands (or avals) ``lhs`` and ``rhs`` on
    cuDNN: the one test eager calls, the GPU lowering and :func:`supports` share."""
    return lhs.dtype == rhs.dtype and available() and \
        mapping(lhs.shape, rhs.shape, lhs.dtype, params) is not None


def supports(eqn) -> bool:
    """Whether this process runs equation ``eqn`` (a ``conv_general_dilated``) on cuDNN."""
    return takes(eqn.invars[0].aval, eqn.invars[1].aval, eqn.params)


# ---------------------------------------------------------------------------------------------
# Handles, workspaces and plans


_USED = False                 # whether a convolution has run on cuDNN (see prepare_stream)
_HANDLES: dict = {}
_WORKSPACES: dict = {}        # (device, stream) -> the stream's workspace (grown, never shrunk)
_RETIRED: list = []           # outgrown workspaces: a captured graph may still read them
_PLANS: dict = {}
_LOCK = threading.Lock()


def _device() -> int:
    import cupy as cp
    return cp.cuda.runtime.getDevice()


def _capturing(stream) -> bool:
    try:
        return bool(stream.is_capturing())
    except Exception:       # noqa: BLE001
        return False


def handle_for(stream_ptr: int):
    """The cuDNN handle bound to ``stream_ptr`` on the current device, made the first time the
    stream is used (never while it captures: call :func:`prepare_stream` before)."""
    key = (_device(), stream_ptr)
    h = _HANDLES.get(key)
    if h is None:
        cudnn = _frontend()
        h = cudnn.create_handle()
        cudnn.set_stream(handle=h, stream=stream_ptr)
        _HANDLES[key] = h
    return h


def prepare_stream(stream_ptr: int) -> None:
    """Make ``stream_ptr``'s handle before a graph is captured on it, once this process has
    run a convolution on cuDNN (the first call of a program runs eagerly, so any program with
    one has)."""
    if _USED:
        handle_for(stream_ptr)


def _workspace(stream, size: int):
    key = (_device(), stream.ptr)
    ws = _WORKSPACES.get(key)
    if ws is None or ws.size < size:
        import cupy as cp
        if ws is not None:
            _RETIRED.append(ws)
        ws = _WORKSPACES[key] = cp.empty(max(size, 1), np.uint8)
    return ws


class _Plan(NamedTuple):
    graph: object
    inputs: tuple        # the frontend's tensors, in the order of the operation's inputs
    output: object
    workspace: int


def prepare_plans(eqns) -> None:
    """Build the plans of a program's convolutions (``eqns``, in cuDNN's layouts) on a
    background thread while its kernels compile: cuDNN loads its libraries and kernels with the
    first plans, seconds that would otherwise wait in line in the first call."""
    from .gemm_table import matmul_precision
    todo = []
    for e in eqns:
        lhs, rhs = (v.aval for v in e.invars)
        if not supports(e):
            continue
        m = mapping(lhs.shape, rhs.shape, lhs.dtype, e.params)
        if any(p is not None for p in layouts(m)):
            continue
        shapes = (lhs.shape, rhs.shape, out_shape(lhs.shape, rhs.shape, e.params))
        tf32 = matmul_precision(e.params.get("precision")) == "tensorfloat32"
        todo.append((m, shapes, lhs.dtype, tf32))
    if not todo:
        return
    device = _device()

    def build():
        import cupy as cp
        with cp.cuda.Device(device):
            for args in todo:
                try:
                    _plan(*args)
                except Exception:       # noqa: BLE001  (the call builds it again and raises)
                    pass
    threading.Thread(target=build, name="fnx-cudnn-plans", daemon=True).start()


def _strided(shape, axes):
    """cuDNN's dims and strides (elements) of a row-major array whose role axes are ``axes``."""
    strides = np.cumprod((1,) + tuple(shape[::-1]))[:-1][::-1]
    return [int(shape[a]) for a in axes], [int(strides[a]) for a in axes]


def _plan(m: Mapping, shapes, dtype, tf32: bool) -> _Plan:
    key = (_device(), m, shapes, np.dtype(dtype).name, tf32)
    plan = _PLANS.get(key)
    if plan is None:
        with _LOCK:
            plan = _PLANS.get(key)
            if plan is None:
                plan = _PLANS[key] = _build(m, shapes, dtype, tf32)
    return plan


def _build(m: Mapping, shapes, dtype, tf32: bool) -> _Plan:
    import cupy as cp
    cudnn = _frontend()
    io = getattr(cudnn.data_type, _IO_TYPES[np.dtype(dtype)])
    f32 = cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32,
                      handle=handle_for(cp.cuda.get_current_stream().ptr))
    lhs_shape, rhs_shape, res_shape = shapes
    roles = _roles(m)

    def tensor(shape, axes, name):
        dim, stride = _strided(shape, axes)
        return g.tensor(dim=dim, stride=stride, data_type=io, name=name)

    kw = dict(pre_padding=list(m.pre), post_padding=list(m.post), stride=list(m.stride),
              dilation=list(m.dilation), compute_data_type=f32)
    if m.kind == "fprop":
        inputs = (tensor(lhs_shape, roles[0], "x"), tensor(rhs_shape, roles[1], "w"))
        out = g.conv_fprop(image=inputs[0], weight=inputs[1], **kw)
    elif m.kind == "dgrad":
        inputs = (tensor(lhs_shape, roles[0], "dy"), tensor(rhs_shape, roles[1], "w"))
        out = g.conv_dgrad(loss=inputs[0], filter=inputs[1], **kw)
    else:
        inputs = (tensor(lhs_shape, roles[0], "x"), tensor(rhs_shape, roles[1], "dy"))
        out = g.conv_wgrad(image=inputs[0], loss=inputs[1], **kw)
    dim, stride = _strided(res_shape, roles[2])
    out.set_output(True).set_dim(dim).set_stride(stride).set_data_type(io)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    if not tf32 and np.dtype(dtype) == np.float32:
        g.deselect_numeric_notes([cudnn.numerical_note.TENSOR_CORE])
    g.check_support()
    g.build_plans(cudnn.build_plan_policy.HEURISTICS_CHOICE)
    return _Plan(g, inputs, out, int(g.get_workspace_size()))


# ---------------------------------------------------------------------------------------------
# The impl


def conv_general_dilated(lhs, rhs, *, precision=None, **params):
    """The convolution of CuPy arrays ``lhs`` and ``rhs`` on cuDNN, for an equation
    :func:`supports` (``params`` as the primitive's; ``precision`` as the GPU lowering resolves
    products', ``"tensorfloat32"`` allowing TF32). Operands in other layouts are transposed
    first: a compiled program has done that already, as equations (:func:`layout_rule`)."""
    global _USED
    import cupy as cp
    m = mapping(lhs.shape, rhs.shape, lhs.dtype, params)
    perms = layouts(m)
    if any(p is not None for p in perms):
        lhs_p, rhs_p, out_p = perms
        new = permuted_params(params, perms)
        lhs = lhs if lhs_p is None else dense(lhs.transpose(lhs_p))
        rhs = rhs if rhs_p is None else dense(rhs.transpose(rhs_p))
        out = conv_general_dilated(lhs, rhs, precision=precision, **new)
        return out if out_p is None else dense(out.transpose(np.argsort(out_p)))
    _USED = True
    if m.kind == "dgrad":       # cuDNN reverses the window itself
        window = set(params["dimension_numbers"][1][2:])
        rhs = rhs[tuple(slice(None, None, -1) if a in window else slice(None)
                        for a in range(rhs.ndim))]
    lhs, rhs = dense(lhs), dense(rhs)
    shape = out_shape(lhs.shape, rhs.shape, params)
    plan = _plan(m, (lhs.shape, rhs.shape, shape), lhs.dtype, precision == "tensorfloat32")
    out = cp.empty(shape, lhs.dtype)
    stream = cp.cuda.get_current_stream()
    if _capturing(stream) and (_device(), stream.ptr) not in _HANDLES:
        raise RuntimeError("no cuDNN handle for a capturing stream: "
                           "fnx.cuda.cudnn.prepare_stream must run before capture begins")
    ws = _workspace(stream, plan.workspace)
    plan.graph.execute({plan.inputs[0]: lhs.data.ptr, plan.inputs[1]: rhs.data.ptr,
                        plan.output: out.data.ptr}, ws.data.ptr,
                       handle=handle_for(stream.ptr))
    return out


def layout_rule(lhs, rhs, **params):
    """The equation with its operands and result transposed into cuDNN's layouts, traced
    (for fnx.cuda.decompose): transposes the fusion walk lowers like any other."""
    from ..core import lax
    from ..core.convolution import conv_general_dilated_p
    from ..core.core import get_aval
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    perms = layouts(mapping(lhs_aval.shape, rhs_aval.shape, lhs_aval.dtype, params))
    lhs_p, rhs_p, out_p = perms
    lhs = lhs if lhs_p is None else lax.transpose(lhs, lhs_p)
    rhs = rhs if rhs_p is None else lax.transpose(rhs, rhs_p)
    out = conv_general_dilated_p.bind(lhs, rhs, **permuted_params(params, perms))
    return [out if out_p is None else lax.transpose(out, tuple(int(a) for a in np.argsort(out_p)))]


def needs_layouts(eqn) -> bool:
    """Whether a convolution cuDNN runs needs transposes first (see :func:`layout_rule`)."""
    lhs = eqn.invars[0].aval
    return any(p is not None for p in layouts(
        mapping(lhs.shape, eqn.invars[1].aval.shape, lhs.dtype, eqn.params)))
