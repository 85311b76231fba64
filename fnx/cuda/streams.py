"""Independent steps of a lowered program on side streams, so that they overlap on the GPU and a
captured CUDA graph gets parallel branches.

A training step ends in work nothing else waits for: each layer's weight-gradient GEMM (with its
SGD step) and the bias updates. On one stream each of them sits on the critical path; on a side
stream it runs beside the input-gradient chain of the layers below it. XLA issues such a step on
one stream, so this is time fnx saves.

The plan is static, made once per lowered program from what each step reads and writes:

- ``dependencies``: a step follows the producers of what it reads, and an in-place write into a
  donated buffer follows every earlier reader of that buffer (or of a view of it).
- ``schedule``: the longest chain of dependent steps runs on the caller's stream in program
  order; every other step (a weight update, a bias gradient) is a side step. A side step is
  issued as soon as its predecessors are, after waiting on an event recorded on the main stream
  at that point (a fork), so it is ordered after everything issued before it; the main stream
  waits on the side streams (a join) before a step that follows a side step, and at the end.
- Memory: CuPy's pools keep freed blocks per stream and hand them out again in that stream's
  order. A buffer a side step touched is therefore released only after the next join, when the
  main stream is ordered after that step; a side stream's own blocks are reused by later side
  steps, which fork after every main-stream reader of them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field


@dataclass
class Access:
    """The buffer slots one step reads, makes, and writes in place (donated buffers)."""
    reads: frozenset
    writes: frozenset
    in_place: frozenset = frozenset()

    @property
    def touched(self):
        return self.reads | self.writes | self.in_place


def dependencies(accesses, views_of) -> list:
    """Per step, the earlier steps it must follow. ``views_of(slot)``: the slots that may share
    that slot's buffer (itself included)."""
    producer, readers, preds = {}, {}, []
    for j, a in enumerate(accesses):
        p = {producer[s] for s in a.reads if s in producer}
        for target in a.in_place:
            for s in views_of(target):
                p.update(readers.get(s, ()))
                if s in producer:
                    p.add(producer[s])
        p.discard(j)
        preds.append(p)
        for s in a.reads:
            readers.setdefault(s, []).append(j)
        for s in a.writes | a.in_place:
            producer[s] = j
    return preds


@dataclass
class Launch:
    """One step as issued: run ``step`` on ``stream`` (0 = the caller's) after waiting on the
    ``waits`` events, then record event ``record`` (or none) and drop the ``frees`` slots."""
    step: int
    stream: int
    waits: list = field(default_factory=list)
    record: int | None = None
    frees: list = field(default_factory=list)


@dataclass
class Schedule:
    launches: list
    start_event: int | None     # recorded on the main stream before any step: the first fork
    final_waits: list           # the join at the end
    n_events: int
    n_streams: int              # side streams used
    side_steps: int
    n_side: int                 # side streams the launches index (1..n_side)

    def describe(self) -> str:
        if not self.side_steps:
            return "one stream"
        return (f"{self.side_steps} steps on {self.n_streams} side stream"
                f"{'s' if self.n_streams > 1 else ''}, "
                f"{sum(1 for ln in self.launches if ln.stream == 0 and ln.waits)} joins")


def side_steps(preds) -> list:
    """Whether each step runs on a side stream: every step off the longest chain of dependent
    steps (the chain that ends last in program order, of those as long)."""
    n = len(preds)
    depth, via = [0] * n, [None] * n
    for j in range(n):
        if preds[j]:
            via[j] = max(preds[j], key=lambda i: (depth[i], i))
            depth[j] = depth[via[j]] + 1
    side = [True] * n
    j = max(range(n), key=lambda j: (depth[j], j)) if n else None
    while j is not None:
        side[j] = False
        j = via[j]
    return side


def schedule(accesses, views_of, kept, n_side: int) -> Schedule:
    """The issue order, streams, events and frees for steps with ``accesses`` (in program
    order). ``kept``: slots never freed (arguments, constants, results)."""
    n = len(accesses)
    preds = dependencies(accesses, views_of)
    side = side_steps(preds) if n_side > 0 else [False] * n
    order, issued = [], set()

    def issue_ready():
        progress = True
        while progress:
            progress = False
            for j in range(n):
                if side[j] and j not in issued and preds[j] <= issued:
                    issued.add(j)
                    order.append(j)
                    progress = True
    issue_ready()
    for j in range(n):
        if not side[j]:
            issued.add(j)
            order.append(j)
            issue_ready()

    launches, n_events = [], 0
    stream_of: dict = {}            # side step -> its stream
    unjoined: dict = {}             # side stream -> its last launch not yet joined
    forked_at = {}                  # side stream -> main position it last forked from
    main_position, start_event = 0, None
    main_event: dict = {0: None}    # main position -> event recorded there
    last_used = {s: -1 for s in range(1, n_side + 1)}

    def event_after(launch):
        nonlocal n_events
        if launch.record is None:
            launch.record, n_events = n_events, n_events + 1
        return launch.record

    by_step: dict = {}
    for t, j in enumerate(order):
        if side[j]:
            mine = [stream_of[i] for i in preds[j] if i in stream_of and
                    unjoined.get(stream_of[i]) is not None]
            if mine:
                s = max(mine, key=lambda s: last_used[s])
            else:
                s = min(last_used, key=last_used.get)
            launch = Launch(j, s)
            if forked_at.get(s) != main_position:
                if main_position == 0:
                    if start_event is None:
                        start_event, n_events = n_events, n_events + 1
                    launch.waits.append(start_event)
                else:
                    launch.waits.append(event_after(main_event[main_position]))
                forked_at[s] = main_position
            for i in preds[j]:
                if i in stream_of and stream_of[i] != s:
                    launch.waits.append(event_after(by_step[i]))
            stream_of[j] = s
            unjoined[s] = launch
            last_used[s] = t
        else:
            launch = Launch(j, 0)
            needs_join = any(i in stream_of for i in preds[j])
            if needs_join:
                for s, last in list(unjoined.items()):
                    if last is not None:
                        launch.waits.append(event_after(last))
                        unjoined[s] = None
            main_position += 1
            main_event[main_position] = launch
        by_step[j] = launch
        launches.append(launch)

    final_waits = [event_after(last) for last in unjoined.values() if last is not None]
    _plan_frees(launches, accesses, kept, side)
    return Schedule(launches, start_event, final_waits, n_events,
                    len({s for s in stream_of.values()}), sum(side), n_side)


def _plan_frees(launches, accesses, kept, side):
    """Each slot is dropped after the launch that touches it last; one a side step touched waits
    for the next join (a main launch with waits) after that, or is kept to the end."""
    last = {}
    for t, launch in enumerate(launches):
        for s in accesses[launch.step].touched:
            last[s] = t
    side_touch = {s for launch in launches if side[launch.step]
                  for s in accesses[launch.step].touched}
    joins = [t for t, launch in enumerate(launches) if launch.stream == 0 and launch.waits]
    for s, t in last.items():
        if s in kept:
            continue
        if s in side_touch:
            t = next((u for u in joins if u > t), None)
            if t is None:
                continue
        launches[t].frees.append(s)


def prepare_libraries(stream_ptr: int) -> None:
    """The library handles a stream needs, made before a graph is captured on it (making one
    while capturing is not allowed): cuBLAS's with its workspace always, cuSOLVER's and cuDNN's
    once this process has used them (a program's first call runs eagerly, so any program that
    uses them has)."""
    from . import cublas, cudnn, solver
    cublas.handle_for(stream_ptr)
    solver.prepare_stream(stream_ptr)
    cudnn.prepare_stream(stream_ptr)


@functools.lru_cache(maxsize=None)
def side_streams(n: int, device: int) -> tuple:
    """``n`` non-blocking streams shared by every lowered program on ``device``, each with its
    own library handles (made here, never while a graph is being captured); a program binds
    its own cuBLAS workspaces to them (``Program.hold_side_workspaces``)."""
    import cupy as cp
    from . import cublas
    streams = tuple(cp.cuda.Stream(non_blocking=True) for _ in range(n))
    for s in streams:
        cublas.handle_for(s.ptr, concurrent=True)
        prepare_libraries(s.ptr)
    return streams
