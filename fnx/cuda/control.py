"""Control flow inside the program's CUDA graph: scan, while_loop, cond and switch.

Every body (a scan's step, a loop's condition and body, each branch) is lowered like any program,
into a program of its own (fused kernels, capture-safe library calls, nested control flow), and
runs on the stream of the step that holds it:

- ``scan`` is unrolled where that makes few launches: its steps launch one after another, each
  reading its slice of the scanned operands in place (a view, no copy) and copying its outputs
  into its slice of the stacked results; the carry passes from step to step without copies. A
  longer scan is one WHILE node (below) stepping a counter on the device, whose body copies its
  rows in and out.
- ``while_loop``, ``cond`` and ``switch`` become CUDA conditional graph nodes when captured. A
  WHILE node repeats the body, copies the new carry into the loop's fixed carry buffers and runs
  the condition, whose one-thread kernel sets the node's handle on the device; ``cond`` and
  ``switch`` are one IF node per branch, each set by comparing the device's index with its
  branch. Nothing is read on the host. Run eagerly (a first call), the predicate or the index
  is read on the host instead, and the same bodies run.
"""
from __future__ import annotations

import numpy as np

from ..core import control_flow
from ..core.jaxpr import Jaxpr, Var
from .compile import compile_together, kernel as compiled
from .copies import copy_into, dense_copy
from .decompose import CALLS
from .elementwise import C_TYPES

# NVRTC knows cudaGraphSetConditional as a builtin; its header needs the toolkit's crt headers,
# which the CUDA wheels leave out, so the kernel declares it itself
_SET_CONDITION = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
extern "C" __global__ void fnx_set_condition(cudaGraphConditionalHandle handle,
                                             const {T}* value, long long branch, long long n) {{
    long long v = (long long)*value;
    if (branch >= 0) {{      // the node of branch ``branch`` of ``n`` runs when v selects it
        v = v < 0 ? 0 : (v >= n ? n - 1 : v);
        v = v == branch;
    }}
    cudaGraphSetConditional(handle, v != 0);
}}
"""


def _condition_unit(dtype):
    """``(source, name)`` of the kernel setting a conditional handle from a ``dtype`` scalar."""
    return _SET_CONDITION.format(T=C_TYPES[np.dtype(dtype).name]), "fnx_set_condition"


def _set_condition(handle, value, branch=-1, n=0):
    """Launch the kernel that sets conditional ``handle`` from device scalar ``value``: its
    truth, or (``branch >= 0``) whether the clamped index selects ``branch`` of ``n``."""
    compiled(*_condition_unit(value.dtype))((1,), (1,), (
        np.uint64(handle), value, np.int64(branch), np.int64(n)))


def _ok(result):
    """The values a ``cuda.bindings.driver`` call returned, raising on its error code."""
    err, *values = result
    if int(err):
        raise RuntimeError(f"CUDA driver call failed: {err!r}")
    return values[0] if len(values) == 1 else values


def _conditional_body(stream, kind: str, value, branch=-1, n=0):
    """Append a conditional node of ``kind`` ("if" or "while") to the graph ``stream`` is
    capturing, its handle set from device scalar ``value`` by a kernel launched right before
    it; returns ``(handle, the node's body graph)``."""
    from cuda.bindings import driver as cu
    hstream = cu.CUstream(stream.ptr)
    graph = _ok(cu.cuStreamGetCaptureInfo(hstream))[2]
    ctx = _ok(cu.cuCtxGetCurrent())
    handle = _ok(cu.cuGraphConditionalHandleCreate(graph, ctx, 0,
                                                   cu.CU_GRAPH_COND_ASSIGN_DEFAULT))
    _set_condition(int(handle), value, branch, n)
    info = _ok(cu.cuStreamGetCaptureInfo(hstream))     # the node follows that kernel
    deps, n_deps = info[3], info[-1]
    params = cu.CUgraphNodeParams()
    params.type = cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_CONDITIONAL
    params.conditional.handle = handle
    params.conditional.type = (cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_WHILE
                               if kind == "while" else
                               cu.CUgraphConditionalNodeType.CU_GRAPH_COND_TYPE_IF)
    params.conditional.size = 1
    params.conditional.ctx = ctx
    # CUDA 13's bindings take edge data beside the dependencies; 12's do not
    try:
        node = _ok(cu.cuGraphAddNode(graph, deps, n_deps, params))
    except TypeError:
        node = _ok(cu.cuGraphAddNode(graph, deps, None, n_deps, params))
    flag = cu.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES
    try:
        _ok(cu.cuStreamUpdateCaptureDependencies(hstream, [node], 1, flag))
    except TypeError:
        _ok(cu.cuStreamUpdateCaptureDependencies(hstream, [node], None, 1, flag))
    return int(handle), params.conditional.phGraph_out[0]


_BODY_STREAMS: dict = {}       # (device, depth) -> stream


def body_stream(device: int, depth: int):
    """The stream bodies at nesting ``depth`` are captured on, with its cuBLAS handle and
    workspace made when it is (at lowering, outside any capture)."""
    stream = _BODY_STREAMS.get((device, depth))
    if stream is None:
        import cupy as cp
        from .streams import prepare_libraries
        with cp.cuda.Device(device):
            stream = _BODY_STREAMS[device, depth] = cp.cuda.Stream(non_blocking=True)
        prepare_libraries(stream.ptr)
    return stream


def prepare_body_streams():
    """Library handles for the body streams, made before a capture begins (cuSOLVER's and
    cuDNN's exist once the process has used them: fnx.cuda.streams.prepare_libraries)."""
    from .streams import prepare_libraries
    for stream in _BODY_STREAMS.values():
        prepare_libraries(stream.ptr)


class _Capturing:
    """Run launches into ``body`` (a conditional node's graph) on the body stream."""

    def __init__(self, stream, body):
        self.stream, self.body = stream, body

    def __enter__(self):
        from cuda.bindings import driver as cu
        self.stream.__enter__()
        _ok(cu.cuStreamBeginCaptureToGraph(
            cu.CUstream(self.stream.ptr), self.body, None, None, 0,
            cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED))
        return self

    def __exit__(self, *exc):
        from cuda.bindings import driver as cu
        try:
            _ok(cu.cuStreamEndCapture(cu.CUstream(self.stream.ptr)))
        finally:
            self.stream.__exit__(*exc)


def on_device(x):
    """``x``, a host scalar (a literal operand) made a device scalar by a fill kernel, which a
    graph can capture (a copy from the host it cannot)."""
    import cupy as cp
    if isinstance(x, cp.ndarray):
        return x
    x = np.asarray(x)
    return cp.full(x.shape, x[()] if x.ndim == 0 else x, x.dtype)


class Body:
    """A jaxpr lowered for the GPU, run on one stream: ``body(*buffers) -> list of buffers``
    (``outputs_into``: as fnx.cuda.lowering.lower's). ``program(jaxpr, depth, outputs_into)``
    lowers it: the program holding the control flow passes it in, being the one that knows
    how."""

    def __init__(self, jaxpr, program, depth, outputs_into=None):
        self.exe = program(jaxpr, depth, outputs_into)

    def __call__(self, *bufs):
        return self.exe.run(*map(on_device, bufs), sched=self.exe.single)[0]

    def describe(self, title):
        return [title] + ["  " + line for line in self.exe.describe().splitlines()]


def _capturing():
    import cupy as cp
    return cp.cuda.get_current_stream().is_capturing()


# a scan whose unrolled launches would number more than this is one WHILE node instead
UNROLL_LAUNCHES = 2048

_SCAN_KERNELS = r"""
typedef __device_builtin__ unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __cudart_builtin__ void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

// row ``*step`` of a stacked operand to or from a body's fixed buffer, a word at a time
extern "C" __global__ void fnx_scan_row(const unsigned int* src, unsigned int* dst,
                                        const long long* step, long long words, int to_stack) {
  long long at = *step * words;
  for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < words;
       w += (long long)gridDim.x * blockDim.x) {
    if (to_stack) dst[at + w] = src[w]; else dst[w] = src[at + w];
  }
}

// the next step, and whether the loop goes on
extern "C" __global__ void fnx_scan_next(long long* step, cudaGraphConditionalHandle handle,
                                         long long delta, long long length) {
  long long next = *step + delta;
  *step = next;
  cudaGraphSetConditional(handle, next >= 0 && next < length);
}
"""


def _scan_kernel(name):
    return compiled(_SCAN_KERNELS, name)


def _copy_back(fixed, new):
    """The body's new carry into the loop's fixed buffers; a carry the body passes on to
    another position is copied aside first, so it is read before it is overwritten."""
    held = {f.data.ptr for f in fixed}
    new = [dense_copy(n) if n.data.ptr in held and n.data.ptr != f.data.ptr else n
           for f, n in zip(fixed, new)]
    for f, n in zip(fixed, new):
        copy_into(f, n)


class Scan:
    """``scan_p``: unrolled (the body's launches once per step, each step reading its slices
    of the scanned operands in place) where that makes at most ``UNROLL_LAUNCHES`` launches;
    otherwise, once captured, one WHILE node whose body copies its row of each scanned operand
    into a fixed buffer, runs, writes its row of each stacked result and steps a device
    counter."""

    def __init__(self, eqn, program, depth):
        p = eqn.params
        self.nc, self.nk, self.length, self.reverse = (p["num_consts"], p["num_carry"],
                                                       p["length"], p["reverse"])
        # the step takes the rows its stacked results go into as arguments, and its kernels
        # write them there (no copy a step), where a result is a value the step makes
        jaxpr = p["jaxpr"]
        outs, n_in = jaxpr.outvars, len(jaxpr.invars)
        rows = [Var(v.aval) for v in outs[self.nk:]]
        into = {self.nk + k: n_in + k for k, v in enumerate(outs[self.nk:])
                if isinstance(v, Var) and v not in jaxpr.invars and outs.count(v) == 1}
        self.body = Body(Jaxpr(jaxpr.constvars, jaxpr.invars + rows, outs, jaxpr.eqns), program,
                         depth + 1, outputs_into=into)
        self.bodies = [self.body]
        self.y_avals = [v.aval for v in eqn.outvars[self.nk:]]
        self.x_avals = [v.aval for v in p["jaxpr"].invars[self.nc + self.nk:]]
        row_bytes = [np.dtype(a.dtype).itemsize * int(np.prod(shape, dtype=np.int64))
                     for a, shape in [(a, a.shape) for a in self.x_avals]
                     + [(a, a.shape[1:]) for a in self.y_avals]]
        self.unrolled = self.length * max(1, self.body.exe.num_launches) <= UNROLL_LAUNCHES \
            or any(b % 4 for b in row_bytes)     # (the loop copies rows a word at a time)
        if not self.unrolled:
            self.stream = body_stream(_device(), depth + 1)
            compile_together([(_SCAN_KERNELS, "fnx_scan_row"), (_SCAN_KERNELS, "fnx_scan_next")])
        self.label = (f"scan[length={self.length}{', reverse' if self.reverse else ''}, "
                      + ("unrolled" if self.unrolled else "one CUDA conditional WHILE node once "
                         "captured") + f"]: {self.body.exe.num_launches} launches a step")

    def __call__(self, *args):
        import cupy as cp
        args = [on_device(a) for a in args]
        consts, carry = args[:self.nc], args[self.nc:self.nc + self.nk]
        xs = args[self.nc + self.nk:]
        if not self.length:
            return carry + [cp.empty(a.shape, a.dtype) for a in self.y_avals]
        if self.unrolled or not _capturing():
            return self._unrolled(consts, carry, xs)
        return self._looped(consts, carry, xs)

    def _unrolled(self, consts, carry, xs):
        import cupy as cp
        ys = [cp.empty(a.shape, a.dtype) for a in self.y_avals]
        steps = range(self.length - 1, -1, -1) if self.reverse else range(self.length)
        for i in steps:
            outs = self.body(*consts, *carry, *[x[i] for x in xs], *[y[i] for y in ys])
            carry = outs[:self.nk]
            for y, out in zip(ys, outs[self.nk:]):
                copy_into(y[i], out)
        return carry + ys

    def _looped(self, consts, carry, xs):
        import cupy as cp
        fixed = [cp.empty_like(c) for c in carry]
        for f, c in zip(fixed, carry):
            copy_into(f, c)
        rows = [cp.empty(a.shape, a.dtype) for a in self.x_avals]
        ys = [cp.empty(a.shape, a.dtype) for a in self.y_avals]
        y_rows = [cp.empty(a.shape[1:], a.dtype) for a in self.y_avals]
        step = cp.full((), self.length - 1 if self.reverse else 0, np.int64)
        handle, graph = _conditional_body(cp.cuda.get_current_stream(), "while",
                                          cp.full((), True, np.bool_))
        row_kernel = _scan_kernel("fnx_scan_row")

        def move(src, dst, words, to_stack):
            blocks = int(min(-(-words // 256), 1024))
            row_kernel((blocks,), (256,), (src, dst, step, np.int64(words), np.int32(to_stack)))
        with _Capturing(self.stream, graph):
            for x, row in zip(xs, rows):
                move(x, row, row.nbytes // 4, 0)
            outs = self.body(*consts, *fixed, *rows, *y_rows)
            for y, out in zip(ys, outs[self.nk:]):
                move(out, y, out.nbytes // 4, 1)
            _copy_back(fixed, outs[:self.nk])
            _scan_kernel("fnx_scan_next")((1,), (1,), (
                step, np.uint64(handle), np.int64(-1 if self.reverse else 1),
                np.int64(self.length)))
        return fixed + ys

    def describe(self):
        return self.body.describe(self.label)


class While:
    """``while_p``: a WHILE conditional node once captured; a host loop when run eagerly."""

    def __init__(self, eqn, program, depth):
        p = eqn.params
        self.cond = Body(p["cond_jaxpr"], program, depth + 1)
        self.body = Body(p["body_jaxpr"], program, depth + 1)
        self.bodies = [self.cond, self.body]
        self.ncc, self.nbc = p["cond_nconsts"], p["body_nconsts"]
        self.stream = body_stream(_device(), depth + 1)
        compile_together([_condition_unit(np.bool_)])

    def __call__(self, *args):
        args = [on_device(a) for a in args]
        cc, bc = args[:self.ncc], args[self.ncc:self.ncc + self.nbc]
        carry = args[self.ncc + self.nbc:]
        if not _capturing():
            while bool(self.cond(*cc, *carry)[0].get()):
                carry = self.body(*bc, *carry)
            return carry
        import cupy as cp
        fixed = [cp.empty_like(c) for c in carry]      # the addresses every iteration reads
        for f, c in zip(fixed, carry):
            copy_into(f, c)
        stream = cp.cuda.get_current_stream()
        handle, graph = _conditional_body(stream, "while", self.cond(*cc, *fixed)[0])
        with _Capturing(self.stream, graph):
            _copy_back(fixed, self.body(*bc, *fixed))
            _set_condition(handle, self.cond(*cc, *fixed)[0])
        return fixed

    def describe(self):
        return (["while_loop (a CUDA conditional WHILE node once captured):"]
                + ["  " + ln for ln in self.cond.describe("cond:")]
                + ["  " + ln for ln in self.body.describe("body:")])


class Cond:
    """``cond_p``: one IF conditional node per branch once captured; run eagerly, the branch
    the host reads off the index."""

    def __init__(self, eqn, program, depth):
        self.branches = self.bodies = [Body(b, program, depth + 1)
                                       for b in eqn.params["branches"]]
        self.out_avals = [v.aval for v in eqn.outvars]
        self.stream = body_stream(_device(), depth + 1)
        compile_together([_condition_unit(eqn.invars[0].aval.dtype)])

    def __call__(self, index, *ops):
        n = len(self.branches)
        if not _capturing():
            i = min(max(int(index), 0), n - 1)
            return self.branches[i](*ops)
        import cupy as cp
        outs = [cp.empty(a.shape, a.dtype) for a in self.out_avals]
        stream = cp.cuda.get_current_stream()
        index = on_device(index)
        for k, branch in enumerate(self.branches):
            _, graph = _conditional_body(stream, "if", index, branch=k, n=n)
            with _Capturing(self.stream, graph):
                for o, r in zip(outs, branch(*ops)):
                    copy_into(o, r)
        return outs

    def describe(self):
        lines = [f"cond over {len(self.branches)} branches (one CUDA conditional IF node "
                 "each once captured):"]
        for k, b in enumerate(self.branches):
            lines += ["  " + ln for ln in b.describe(f"branch {k}:")]
        return lines


def _device():
    import cupy as cp
    return cp.cuda.Device().id


class Call:
    """A higher-order primitive that only calls its jaxpr (``custom_jvp_call``, ``remat``, ...)
    where its equations cannot be spliced into the program (fnx.cuda.decompose)."""

    def __init__(self, eqn, program, depth):
        self.body = Body(eqn.params[CALLS[eqn.primitive.name]], program, depth + 1)
        self.bodies = [self.body]

    def __call__(self, *args):
        return self.body(*args)

    def describe(self):
        return self.body.describe("call:")


def lowering(eqn):
    """The class lowering ``eqn`` if it is control flow or a call, else None."""
    if eqn.primitive.name in CALLS and not eqn.params[CALLS[eqn.primitive.name]].constvars:
        return Call
    return {control_flow.scan_p: Scan, control_flow.while_p: While,
            control_flow.cond_p: Cond}.get(eqn.primitive)
