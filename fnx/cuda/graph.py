"""Replaying a lowered program as one CUDA graph.

The first call runs the launches eagerly (compiling kernels and sizing cuBLAS workspaces). The
second captures the whole call into a CUDA graph on a private stream, over static buffers; every
buffer the captured launches touch is kept alive for the graph's lifetime. Later calls copy only
the inputs that changed into the static buffers and replay the graph.

An array returned to the user is never overwritten by a later call. A replay writes the
program's results into its graph's own buffers, which a call copies into fresh arrays. Where the
intermediates are small, two more graphs are captured, each with its own buffers, and calls
alternate between them, returning their result buffers themselves: a graph replays only when
the user no longer holds what it returned last (a training loop's ``loss, params = step(...)``
keeps one call's results at a time); otherwise the first graph runs and its results are copied.
Allocating and copying results costs the host more than a small step's whole replay. Ownership
is explicit: the arrays a graph returns are views whose memory is owned by a :class:`Lease`,
which every array and view over them keeps alive; the graph is free once its lease is gone.

A first call does not wait for generated GEMM kernels (fnx.cuda.gemm_table): they compile
after it, and once they are built the next call runs the program once without the graph, which
times them, and captures the graph again.

Donated arguments are the exception, by design: their static buffers receive the results paired
with them (``Program.alias``) and are returned as those results. Passing such a result back
as the donated argument of the next call (a training loop) therefore needs no copy at all. If
capture fails, the launches keep running eagerly and ``reason`` says why.
"""
from __future__ import annotations

import functools
import sys
import weakref

from . import gemm_table
from .copies import MultiCopy, copy_into, dense_copy, fresh_outputs
from .streams import prepare_libraries

# id(buffer) -> how many times a compiled program has overwritten it in place. Inputs are
# buffers of immutable arrays, so an input passed again (same object, same count) still holds
# what the static buffer was last filled with, and its copy is skipped.
WRITES: dict = {}


def note_written(buffers):
    for b in buffers:
        WRITES[id(b)] = WRITES.get(id(b), 0) + 1


# the alternating graphs (see above) are captured when the first one's intermediates take no
# more than this and it replays within RING_REPLAY_US: a longer step is bound by its GPU time,
# not by the host's copies, and three arenas would hold memory for nothing
RING_ARENA_BYTES = 64 * 2**20
RING_REPLAY_US = 250.0

# the share of one stream's replay time a schedule with side streams must save to be kept
SIDE_STREAMS_MIN_GAIN = 0.03


class Lease:
    """The owner of the memory of one replay's returned results: every array over it (the
    results, and any view of them) holds it, so while it lives the user still holds results."""
    __slots__ = ("__weakref__",)


def _leased(buffers, lease, device: int) -> list:
    """``buffers`` (on ``device``) as new arrays whose memory ``lease`` owns."""
    import cupy as cp
    return [cp.ndarray(b.shape, b.dtype, cp.cuda.MemoryPointer(
        cp.cuda.UnownedMemory(b.data.ptr, b.nbytes, lease, device), 0), strides=b.strides)
        if b.nbytes else b for b in buffers]


def _unheld(entry) -> bool:
    """Whether nothing holds what ring graph ``entry`` returned last."""
    lease = entry[2]
    return lease is None or lease() is None


def _disjoint(arrays) -> bool:
    """No two of ``arrays`` share a byte of device memory."""
    spans = sorted((a.data.ptr, a.data.ptr + a.nbytes) for a in arrays if a.nbytes)
    return all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))


# references to a donated static buffer, during a call that passes it back, besides the graph's
# own and _replay's: the caller's list of buffers, the tuple it builds for ``exe(*buffers)``, the
# ``*args`` tuple of ``__call__``, and the donated Array, which keeps its buffer until the call
# has succeeded (fnx.core.jit)
_CALLER_REFS = 4


@functools.lru_cache(maxsize=None)
def capture_stream(device: int):
    """The stream every graph of ``device`` is captured on, with its cuBLAS handle and
    workspace, made once: graphs replay one after another on the caller's stream, so they share
    that workspace, and a program captured again makes no new handle (nor 32 MiB)."""
    import cupy as cp
    with cp.cuda.Device(device):
        stream = cp.cuda.Stream(non_blocking=True)
    prepare_libraries(stream.ptr)
    return stream


class GraphExecutable:
    def __init__(self, executable):
        self.executable = executable
        self.calls = 0
        self.graph = None
        self.reason: str | None = None     # why the call is not (yet) a replayed graph
        self.eager_fallbacks = 0           # replays refused because a user still held a buffer
        self.recaptures = 0                # captured again once more kernels were compiled
        self._upgrades = None
        self._static_in = None
        self._keepalive = None
        self._plain = None
        self._donated = sorted(set(executable.alias.values()))
        self.schedule = None               # the executable's schedule the graph was captured with
        self.timed = None                  # replay µs of each schedule, when both were captured

    @property
    def num_launches(self):
        return self.executable.num_launches

    def describe(self) -> str:
        mode = "CUDA graph replay" if self.graph is not None else \
            f"eager launches ({self.reason or 'graph is captured on the second call'})"
        lines = [self.executable.describe(), f"  execution: {mode}"]
        if self.recaptures:
            lines.append(f"  captured again {self.recaptures} time(s), once GEMM kernels "
                         "compiling in the background were ready and timed")
        if self.schedule is not None:
            timed = "" if not self.timed else " (chosen by replay time: " + ", ".join(
                f"{k} {v:.1f} µs" for k, v in self.timed.items()) + ")"
            lines.append(f"  streams: {self.schedule.describe()}{timed}")
        if self.graph is not None:
            arena = sum(p.total_bytes() for p in self._pools)
            static = sum(a.nbytes for a in self._static_in)
            if len(self._ring) > 1:
                lines.append("  results: two more captured graphs alternate, returning their "
                             "own result buffers while the user no longer holds them")
            side = sum(w.nbytes for w in self.executable._side_workspaces or ())
            lines.append(f"  memory: {arena / 2**20:.1f} MiB arena (intermediates, "
                         f"reused by liveness), {static / 2**20:.1f} MiB static inputs"
                         + (f", {side / 2**20:.0f} MiB side streams' cuBLAS workspaces"
                            if side else ""))
        if self._donated:
            lines.append(f"  donated arguments {self._donated}: results written in place "
                         f"({self.executable.in_place} by their kernels, "
                         f"{len(self.executable.alias) - self.executable.in_place} copied)")
        return "\n".join(lines)

    def __call__(self, *args):
        self.calls += 1
        if self.graph is not None and gemm_table.TABLE.upgrades != self._upgrades:
            self._recapture(args)
        if self.graph is None and self.calls == 2 and self.reason is None:
            self._capture(args)
        if self.graph is None:
            with gemm_table.TABLE.impatient():
                outs = self.executable(*args)
            gemm_table.TABLE.compile_deferred()
            note_written([args[i] for i in self._donated])
            return outs
        return self._replay(args)

    def _recapture(self, args):
        """Generated GEMM kernels that were still compiling when the graph was captured are
        ready: one run without the graph times them, and the graph is captured again."""
        with gemm_table.TABLE.impatient():
            self._plain_executable()(*args)
        gemm_table.TABLE.compile_deferred()
        self.recaptures += 1
        self.graph = None
        self._capture(args)

    def _replay(self, args):
        import cupy as cp
        static = self._static_in
        copy_mask, srcs, dsts = 0, [], []
        for i in self._donated:
            a, s = args[i], static[i]
            if a is s:
                # + 1: the local ``a``
                if sys.getrefcount(s) > self._free_refs[i] + 1 + _CALLER_REFS:
                    return self._eager(args)    # a view of the buffer is still held
                continue
            if sys.getrefcount(s) > self._free_refs[i]:
                return self._eager(args)        # the user still holds the last results
            copy_mask |= 1 << i
            srcs.append(a)
            dsts.append(s)
        for i in self._copied:
            a = args[i]
            if a is self._last[i] and WRITES.get(id(a), 0) == self._last_writes[i]:
                continue
            self._last[i], self._last_writes[i] = a, WRITES.get(id(a), 0)
            copy_mask |= 1 << i
            srcs.append(a)
            dsts.append(static[i])
        if copy_mask:
            if all(a.flags.c_contiguous and a.dtype == d.dtype for a, d in zip(srcs, dsts)):
                copier = self._copiers.get(copy_mask)
                if copier is None:
                    copier = self._copiers[copy_mask] = MultiCopy([d.nbytes for d in dsts])
                copier(srcs, dsts)
                srcs = ()
            for src, dst in zip(srcs, dsts):
                copy_into(dst, src)
        graph, results, owned = self._pick()
        graph.launch(cp.cuda.get_current_stream())
        outs = list(self._aliased_out)
        if self._fresh:
            if not owned:
                fresh = fresh_outputs(self._out_meta)
                self._copy_out(results, fresh)
                results = fresh
            for j, o in zip(self._fresh, results):
                outs[j] = o
        note_written(self._donated_static)
        return outs

    def _pick(self):
        """``(graph, its result buffers, whether they can be returned as they are)``: one of
        the alternating graphs whose results the user no longer holds, else the first."""
        ring = self._ring
        if len(ring) > 1:
            for k in (self._turn, 3 - self._turn):
                if _unheld(ring[k]):
                    self._turn = 3 - k
                    lease = Lease()
                    ring[k][2] = weakref.ref(lease)
                    return ring[k][0], _leased(ring[k][1], lease, self._device), True
        return ring[0][0], ring[0][1], False

    def _eager(self, args):
        """Run without the graph and without writing into donated buffers."""
        self.eager_fallbacks += 1
        return self._plain_executable()(*args)

    def _plain_executable(self):
        """The program lowered again without donation (it writes no argument in place)."""
        from .lowering import lower
        if self._plain is None:
            self._plain = lower(*self.executable.source)
        return self._plain

    def _record(self, static_in, sched, stream=None):
        """``(graph, outs, env, pool, stream)``: one run of the program on ``static_in``,
        captured with schedule ``sched`` on ``stream`` (the device's capture stream if None),
        in a new pool."""
        import cupy as cp
        from . import control
        if stream is None:
            stream = capture_stream(cp.cuda.Device().id)
        prepare_libraries(stream.ptr)
        control.prepare_body_streams()
        # Everything allocated while capturing comes from a private pool that lives as long as
        # the graph: a temporary freed inside the captured program (CuPy's own, which fnx cannot
        # hold on to) must never be handed to an array outside it, or replays would overwrite it.
        pool = cp.cuda.MemoryPool()
        with cp.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture()
            try:
                outs, env = self.executable.run(*static_in, sched=sched)
            finally:
                graph = stream.end_capture()
        stream.synchronize()
        return graph, outs, env, pool, stream

    def _times(self, recorded, static_in):
        """Each recorded graph's replay time (µs), on the static inputs; the donated ones,
        which replays update, are put back afterwards."""
        import cupy as cp
        saved = [dense_copy(static_in[i]) for i in self._donated]
        stream = cp.cuda.get_current_stream()
        start, stop = cp.cuda.Event(), cp.cuda.Event()

        def time(graph, reps):
            start.record(stream)
            for _ in range(reps):
                graph.launch(stream)
            stop.record(stream)
            stop.synchronize()
            return cp.cuda.get_elapsed_time(start, stop) * 1e3 / reps
        first = [time(r[0], 1) for r in recorded]      # also settles clocks and caches
        reps = int(min(20, max(1, 20e3 / max(first))))   # about 20 ms per graph at most
        times = [min(time(r[0], reps), time(r[0], reps)) for r in recorded]
        for i, v in zip(self._donated, saved):
            copy_into(static_in[i], v)
        stream.synchronize()
        return times

    def _capture(self, args):
        import cupy as cp
        exe = self.executable
        self._upgrades = gemm_table.TABLE.upgrades
        static_in = [dense_copy(a) for a in args]
        cp.cuda.get_current_stream().synchronize()
        schedules = [exe.schedule] + ([exe.single] if exe.single is not exe.schedule else [])
        if exe.schedule.side_steps:
            exe.hold_side_workspaces()
        try:
            recorded = [self._record(static_in, sched) for sched in schedules]
        except Exception as e:     # anything that syncs or allocates unsafely inside capture
            self.reason = f"capture failed: {type(e).__name__}: {e}" + "".join(
                f" ({note})" for note in getattr(e, "__notes__", ())
                if note.startswith("in launch "))
            return
        self.schedule = schedules[0]
        times = self._times(recorded, static_in)
        best = 0
        if len(recorded) > 1:
            # side streams hold workspaces of their own and keep what a side step touched until
            # the next join: they must earn that memory
            best = 0 if times[0] < (1 - SIDE_STREAMS_MIN_GAIN) * times[1] else 1
            self.schedule = schedules[best]
            self.timed = {"side streams": times[0], "one stream": times[1]}
            recorded = [recorded[best]]
            if not self.schedule.side_steps:
                exe.drop_side_workspaces()
        replay_us = times[best]
        graph, outs, env, pool, stream = recorded[0]
        del recorded
        self.graph = graph
        self._static_in = static_in
        alias = self.executable.alias
        static_out = [o if isinstance(o, cp.ndarray) else cp.asarray(o) for o in outs]
        self._aliased_out = [static_in[alias[j]] if j in alias else None
                             for j in range(len(static_out))]
        self._donated_static = [static_in[i] for i in self._donated]
        self._fresh = [j for j in range(len(static_out)) if j not in alias]
        results = [static_out[j] for j in self._fresh]
        self._out_meta = [(o.shape, o.dtype) for o in results]
        self._copy_out = MultiCopy([o.nbytes for o in results])
        self._ring = [[graph, results, None]]
        self._device = cp.cuda.Device().id
        kept, self._pools = [env], [pool]
        if results and pool.total_bytes() <= RING_ARENA_BYTES \
                and replay_us <= RING_REPLAY_US:
            # two graphs with their own intermediates (one graph's replay must not touch what
            # another returned) on the same stream, so with the same cuBLAS workspace
            try:
                for _ in range(2):
                    graph_k, outs_k, env_k, pool_k, _ = self._record(static_in, self.schedule,
                                                                     stream=stream)
                    outs_k = [o if isinstance(o, cp.ndarray) else cp.asarray(o) for o in outs_k]
                    self._ring.append([graph_k, [outs_k[j] for j in self._fresh], None])
                    kept.append(env_k)
                    self._pools.append(pool_k)
                    del outs_k, env_k
            except Exception:           # the first graph alone, its results always copied
                pass
            # all three, and no result sharing memory with an input or another result
            if len(self._ring) < 3 or not _disjoint(
                    [a for _, r, _ in self._ring for a in r] + static_in):
                del self._ring[1:], kept[1:], self._pools[1:]
        self._turn = 1
        self._copied = [i for i in range(len(args)) if i not in set(self._donated)]
        self._last = [None] * len(args)
        self._last_writes = [0] * len(args)
        self._copiers: dict = {}
        self._keepalive = (kept, stream)
        del outs, env, static_out, kept, results
        # the eager calls' intermediates are cached in CuPy's pool; the graph has its own arena
        # now, so give them back to the device
        cp.get_default_memory_pool().free_all_blocks()
        # what holds a donated static buffer while no user array does: this object's lists, the
        # kept-alive environment, a local ``s`` (as in _replay) and getrefcount's argument
        self._free_refs = {}
        for i in self._donated:
            s = static_in[i]
            self._free_refs[i] = sys.getrefcount(s)
        s = None
