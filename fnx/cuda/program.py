"""A lowered program at run time: numbered buffer slots, the steps that fill them, and the
schedule that orders the steps on streams and drops each slot after its last reader.

fnx.cuda.lowering makes a :class:`Program` from a jaxpr; fnx.cuda.graph captures its run into a
CUDA graph and replays it. Nothing here knows about jaxprs or kernels: a step is a function of
the slot environment.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from . import cublas
from .copies import dense
from .control import on_device
from .streams import Schedule, side_streams


class Source(NamedTuple):
    """What a program was lowered from, so it can be lowered again (without donation)."""
    jaxpr: object
    const_values: list
    backend: object


class Program:
    """``program(*args) -> list of CuPy arrays``: ``steps[k](env)`` reads and fills slots of
    ``env`` (constants first, then arguments), in the order ``schedule`` gives.

    ``alias`` pairs results with the arguments whose buffers they are written into
    (``{output: argument}``); ``choices`` are the cuBLASLt-or-fnx choices whose candidates some
    steps run (fnx.cuda.lt_backward); ``nested`` maps a step to its control-flow lowering.
    ``source``: what it was lowered from.
    """

    def __init__(self, *, source: Source, consts: list, n_slots: int, steps: list[Callable],
                 labels: list[str], out_slots: list, schedule: Schedule, single: Schedule,
                 alias: dict, in_place: int, nested: dict, choices: list, kernels: list,
                 units: list):
        import cupy as cp
        self.source = source
        self.consts, self.n_slots = consts, n_slots
        self.steps, self.labels, self.out_slots = steps, labels, out_slots
        # with side streams where the program has independent steps, and on one stream: a
        # captured graph keeps side streams only where they replay clearly faster (fnx.cuda.graph)
        self.schedule, self.single = schedule, single
        self.alias, self.in_place = alias, in_place
        self.nested, self.choices = nested, choices
        self.kernels, self.units = kernels, units   # the generated kernels, their sources
        self._events = [cp.cuda.Event(block=False, disable_timing=True)
                        for _ in range(schedule.n_events)]
        self._at = 0             # the step running (named when one fails)
        self._side_workspaces = None

    def hold_side_workspaces(self) -> None:
        """Keep cuBLAS workspaces for this program's side streams, made now (before a graph is
        captured, never while it is). Side streams run concurrently, so each needs its own; a
        program holds them while its graphs may use them, and its eager runs without a graph
        take fresh ones that are given back as the run ends."""
        if self._side_workspaces is None:
            self._side_workspaces = self._new_side_workspaces()

    def drop_side_workspaces(self) -> None:
        """Give the side streams' workspaces back (a graph kept on one stream needs none; one
        captured with side streams keeps its own reference)."""
        self._side_workspaces = None

    def _new_side_workspaces(self) -> list:
        import cupy as cp
        n = self.schedule.n_side if self.schedule.side_steps else 0
        return [cp.empty(cublas.WORKSPACE_BYTES, dtype=cp.uint8) for _ in range(n)]

    @property
    def num_launches(self) -> int:
        return len(self.steps)

    def __call__(self, *args):
        return self.run(*args)[0]

    def _environment(self, args) -> list:
        env = [None] * self.n_slots
        env[:len(self.consts)] = self.consts
        env[len(self.consts):len(self.consts) + len(args)] = [dense(a) for a in args]
        return env

    def run(self, *args, sched=None):
        """``(outputs, env)``: env holds every buffer the steps touched (a CUDA graph captured
        from this run must keep them alive). ``sched``: ``self.schedule`` (by default) or
        ``self.single``."""
        env = self._environment(args)
        sched = self.schedule if sched is None else sched
        try:
            if sched.side_steps:
                self._run_streams(env, sched)
            else:
                for launch in sched.launches:
                    self._at = launch.step
                    self.steps[launch.step](env)
                    for s in launch.frees:
                        env[s] = None
        except Exception as e:      # say which step failed (a capture's reason shows it)
            # the innermost program names its step (a loop body's, not the loop's)
            if hasattr(e, "add_note") and not any(
                    n.startswith("in launch ") for n in getattr(e, "__notes__", ())):
                e.add_note(f"in launch {self._at}: {self.labels[self._at]}")
            raise
        # a literal result by a fill kernel, which a graph can capture (a copy from the host
        # it cannot)
        outs = [env[s] if s is not None else on_device(lit) for s, lit in self.out_slots]
        return outs, env

    def _run_streams(self, env, sched):
        import cupy as cp
        events = self._events
        main = cp.cuda.get_current_stream()
        streams = (main,) + side_streams(sched.n_side, cp.cuda.Device().id)
        # the side streams are shared by every program: bind this run's workspaces, and keep
        # them in ``env`` so a graph captured from it holds them (the caller's stream waits for
        # the side streams at the end, so an eager run's are free to reuse once it drops env)
        workspaces = self._side_workspaces or self._new_side_workspaces()
        for s, ws in zip(streams[1:], workspaces):
            cublas.handle_for(s.ptr, concurrent=True).bind(ws)
        env.append(workspaces)
        if sched.start_event is not None:
            events[sched.start_event].record(main)
        for launch in sched.launches:
            self._at = launch.step
            stream = streams[launch.stream]
            for e in launch.waits:
                stream.wait_event(events[e])
            if launch.stream:
                with stream:
                    self.steps[launch.step](env)
            else:
                self.steps[launch.step](env)
            if launch.record is not None:
                events[launch.record].record(stream)
            for s in launch.frees:
                env[s] = None
        for e in sched.final_waits:
            main.wait_event(events[e])

    def describe(self) -> str:
        """The lowered program: one line per launch, fused kernels with their equations, and
        which launches run on side streams."""
        lines = [f"{self.num_launches} launches, {len(self.kernels)} fused kernels, "
                 f"{self.schedule.describe()}"]
        side = {ln.step: ln.stream for ln in self.schedule.launches if ln.stream}
        for k, label in enumerate(self.labels):
            lines.append(f"  {label}" + (f"   [side stream {side[k]}]" if k in side else ""))
            if k in self.nested:
                lines += ["    " + line for line in self.nested[k].describe()]
        lines += [f"  {choice.describe()}" for choice in self.choices]
        return "\n".join(lines)

    def profile(self, *args, repeats: int = 100):
        """``[(label, microseconds)]``: each launch's GPU time, measured by capturing it alone
        into a CUDA graph and replaying it ``repeats`` times (no host overhead in the figure)."""
        import cupy as cp
        from .streams import prepare_libraries
        stream = cp.cuda.Stream(non_blocking=True)
        prepare_libraries(stream.ptr)
        env = self._environment(args)
        keep, times = [], []
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        with stream:
            for step, label in zip(self.steps, self.labels):
                pool = cp.cuda.MemoryPool()
                with cp.cuda.using_allocator(pool.malloc):
                    stream.begin_capture()
                    try:
                        step(env)
                    finally:
                        graph = stream.end_capture()
                graph.launch(stream)
                start.record(stream)
                for _ in range(repeats):
                    graph.launch(stream)
                stop.record(stream)
                stop.synchronize()
                times.append((label, cp.cuda.get_elapsed_time(start, stop) * 1e3 / repeats))
                keep.append((graph, pool))
        return times
