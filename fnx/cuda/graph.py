"""Replaying a lowered program as one CUDA graph.

The first call runs the launches eagerly (compiling kernels and sizing cuBLAS workspaces). The
second captures the whole call into a CUDA graph on a private stream, over static input buffers;
every buffer the captured launches touch is kept alive for the graph's lifetime. Later calls copy
their inputs into the static buffers, replay the graph and return copies of the outputs, so an
array returned to the user is never overwritten by a later call. If capture fails, the launches
keep running eagerly and ``reason`` says why.
"""
from __future__ import annotations

from .copies import MultiCopy, fresh_outputs


class GraphExecutable:
    def __init__(self, executable):
        self.executable = executable
        self.calls = 0
        self.graph = None
        self.reason: str | None = None     # why the call is not (yet) a replayed graph
        self._static_in = None
        self._static_out = None
        self._keepalive = None

    @property
    def num_launches(self):
        return self.executable.num_launches

    def describe(self) -> str:
        mode = "CUDA graph replay" if self.graph is not None else \
            f"eager launches ({self.reason or 'graph is captured on the second call'})"
        return f"{self.executable.describe()}\n  execution: {mode}"

    def __call__(self, *args):
        import cupy as cp
        self.calls += 1
        if self.graph is None and self.calls == 2 and self.reason is None:
            self._capture(args)
        if self.graph is None:
            return self.executable(*args)
        if self._copy_in.aligned(args) and all(a.flags.c_contiguous and a.dtype == d.dtype
                                               for a, d in zip(args, self._static_in)):
            self._copy_in(args, self._static_in)
        else:
            for dst, src in zip(self._static_in, args):
                cp.copyto(dst, src)
        self.graph.launch(cp.cuda.get_current_stream())
        outs = fresh_outputs(self._out_meta)
        self._copy_out(self._static_out, outs)
        return outs

    def _capture(self, args):
        import cupy as cp
        from . import cublas
        stream = cp.cuda.Stream(non_blocking=True)
        cublas.handle_for(stream.ptr)   # its handle and workspace exist before capture starts
        static_in = [cp.array(a, copy=True, order="C") for a in args]
        cp.cuda.get_current_stream().synchronize()
        # Everything allocated while capturing comes from a private pool that lives as long as
        # the graph: a temporary freed inside the captured program (CuPy's own, which fnx cannot
        # hold on to) must never be handed to an array outside it, or replays would overwrite it.
        pool = cp.cuda.MemoryPool()
        try:
            with cp.cuda.using_allocator(pool.malloc), stream:
                stream.begin_capture()
                try:
                    outs, env = self.executable.run(*static_in)
                finally:
                    graph = stream.end_capture()
            stream.synchronize()
        except Exception as e:     # anything that syncs or allocates unsafely inside capture
            self.reason = f"capture failed: {type(e).__name__}: {e}"
            return
        self.graph = graph
        self._static_in = static_in
        self._static_out = [o if isinstance(o, cp.ndarray) else cp.asarray(o) for o in outs]
        self._out_meta = [(o.shape, o.dtype) for o in self._static_out]
        self._copy_in = MultiCopy([a.nbytes for a in static_in])
        self._copy_out = MultiCopy([o.nbytes for o in self._static_out])
        self._keepalive = (env, stream, pool)
