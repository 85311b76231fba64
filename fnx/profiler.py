"""fnx.profiler: JAX's profiler API, recording on the host.

A trace (``trace``, or ``start_trace``/``stop_trace``) records wall-clock spans: every call of a
``jit``-compiled function (``jit(name)``; on a GPU the time to launch it, which returns before
the device finishes unless the caller blocks), every trace of one (``trace jit(name)``), and the
user's ``TraceAnnotation``, ``StepTraceAnnotation`` and ``annotate_function`` spans, each with
its thread. ``stop_trace`` writes them in the Chrome trace-event format that TensorBoard's
profile plugin and Perfetto (ui.perfetto.dev) open, at
``log_dir/plugins/profile/<timestamp>/<host>.trace.json.gz`` as JAX lays its traces out.
Device kernels are not recorded. ``device_memory_profile`` lists the live arrays in pprof's
format.

>>> import tempfile
>>> with fnx.profiler.trace(tempfile.mkdtemp()) as path:
...     with fnx.profiler.TraceAnnotation("my_step"):
...         _ = fnx.jit(jnp.sin)(1.0)
"""
from __future__ import annotations

import contextlib
import functools
import gc
import gzip
import json
import os
import socket
import time

from .core import profiling
from .core.core import Array, Tracer

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "device_memory_profile", "save_device_memory_profile",
           "ProfileOptions"]

_run: dict = {}       # the running trace's log_dir and options


class ProfileOptions:
    """Options of a trace, as JAX's (``host_tracer_level``, ``python_tracer_level``,
    ``device_tracer_level``, ...); fnx records the same host spans at every level.

    >>> ProfileOptions().host_tracer_level
    2
    """

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 0
        self.device_tracer_level = 1
        self.enable_hlo_proto = False
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.repository_path = ""


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> None:
    """Start recording; :func:`stop_trace` writes the trace under ``log_dir``. One trace runs
    at a time.

    >>> import tempfile
    >>> start_trace(tempfile.mkdtemp())
    >>> stop_trace().endswith(".trace.json.gz")
    True
    """
    if _run:
        raise RuntimeError("Profile has already been started. Only one profile may be run at "
                           "a time.")
    _run.update(log_dir=os.fspath(log_dir), link=create_perfetto_link,
                perfetto=create_perfetto_trace or create_perfetto_link)
    profiling.start()


def _trace_events(spans, pid):
    events = [{"ph": "M", "pid": pid, "name": "process_name",
               "args": {"name": f"{socket.gethostname()} (fnx host)"}}]
    for s in spans:
        event = {"ph": "X", "pid": pid, "tid": s.thread, "name": s.name,
                 "ts": s.start_ns / 1000, "dur": (s.end_ns - s.start_ns) / 1000}
        if s.args:
            event["args"] = {k: str(v) for k, v in s.args.items()}
        events.append(event)
    return {"displayTimeUnit": "ns", "traceEvents": events}


def stop_trace() -> str:
    """Stop recording and write the trace; returns the path of the written file.

    >>> import tempfile
    >>> start_trace(tempfile.mkdtemp())
    >>> with TraceAnnotation("work"):
    ...     pass
    >>> import gzip, json
    >>> [e["name"] for e in json.load(gzip.open(stop_trace()))["traceEvents"]][1:]
    ['work']
    """
    if not _run:
        raise RuntimeError("No profile started")
    run = dict(_run)
    _run.clear()
    spans = profiling.stop()
    directory = os.path.join(run["log_dir"], "plugins", "profile",
                             time.strftime("%Y_%m_%d_%H_%M_%S"))
    os.makedirs(directory, exist_ok=True)
    data = json.dumps(_trace_events(spans, os.getpid())).encode()
    path = os.path.join(directory, f"{socket.gethostname()}.trace.json.gz")
    with gzip.open(path, "wb") as f:
        f.write(data)
    if run["perfetto"]:
        perfetto = os.path.join(directory, "perfetto_trace.json.gz")
        with gzip.open(perfetto, "wb") as f:
            f.write(data)
        if run["link"]:
            print(f"Open https://ui.perfetto.dev and load {perfetto}")
    return path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options=None):
    """Record a trace of the code inside (see :func:`start_trace`); yields ``log_dir``.

    >>> import tempfile, os
    >>> with trace(tempfile.mkdtemp()) as log_dir:
    ...     _ = jnp.ones(3) + 1
    >>> os.listdir(os.path.join(log_dir, "plugins", "profile")) != []
    True
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield os.fspath(log_dir)
    finally:
        stop_trace()


class TraceAnnotation:
    """A named span of the trace (its keyword arguments are shown with it), as a context
    manager; nothing is recorded when no trace runs.

    >>> with TraceAnnotation("load_batch", size=128):
    ...     pass
    """

    def __init__(self, name: str, **kwargs):
        self.name, self.kwargs = name, kwargs
        self._span = None

    def __enter__(self):
        self._span = profiling.span(self.name, **self.kwargs)
        self._span.__enter__()
        return self

    def __exit__(self, *exc):
        return self._span.__exit__(*exc)


class StepTraceAnnotation(TraceAnnotation):
    """A span marking one training step (``step_num=`` numbers it), which the profile viewer
    groups steps by.

    >>> for step in range(2):
    ...     with StepTraceAnnotation("train", step_num=step):
    ...         pass
    """

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)


def annotate_function(func, name: str | None = None, **decorator_kwargs):
    """``func`` recording a span (named ``name``, else its qualified name) for each call.

    >>> @annotate_function
    ... def step(x):
    ...     return x + 1
    >>> step(1)
    2
    """
    label = name or getattr(func, "__qualname__", None) or getattr(func, "__name__", "fn")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with profiling.span(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


# ---------------------------------------------------------------------------------------------
# memory profiles in pprof's format (a gzipped protocol buffer, perftools.profiles.Profile)


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1      # negative int64s as two's complement, as protobuf encodes them
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _packed(number: int, values) -> bytes:
    return _field(number, b"".join(_varint(v) for v in values))


def _live_arrays(backend):
    for obj in gc.get_objects():
        if isinstance(obj, Array) and not isinstance(obj, Tracer) and not obj.is_deleted():
            if backend is None or obj._backend.platform == backend:
                yield obj


def device_memory_profile(backend: str | None = None) -> bytes:
    """A pprof profile (gzipped protocol buffer bytes, for ``pprof``) of the live arrays,
    optionally of one platform ("cpu", "gpu"): one sample per device, dtype and shape, with the
    number of arrays and their bytes.

    >>> keep = jnp.zeros((256, 256))
    >>> len(device_memory_profile()) > 0
    True
    """
    strings = [""]
    index: dict = {}

    def s(text):
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    groups: dict = {}
    for a in _live_arrays(backend):
        key = (str(a._backend), a.aval.str_short())
        count, size = groups.get(key, (0, 0))
        groups[key] = (count + 1, size + a._value.nbytes)
    body = b"".join(_field(1, _field(1, s(t)) + _field(2, s(u)))
                    for t, u in (("allocations", "count"), ("space", "bytes")))
    functions = {}
    for (device, kind), (count, size) in groups.items():
        ids = [functions.setdefault(name, len(functions) + 1) for name in (kind, device)]
        body += _field(2, _packed(1, ids) + _packed(2, [count, size])
                       + _field(3, _field(1, s("device")) + _field(2, s(device))))
    for name, fid in functions.items():
        body += _field(4, _field(1, fid) + _field(4, _field(1, fid)))
        body += _field(5, _field(1, fid) + _field(2, s(name)) + _field(3, s(name)))
    body += b"".join(_field(6, t.encode()) for t in strings)
    body += _field(14, s("space"))          # default_sample_type
    return gzip.compress(body)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write :func:`device_memory_profile` to ``filename`` (``pprof -top filename`` reads it).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "memory.prof")
    >>> save_device_memory_profile(path)
    >>> os.path.getsize(path) > 0
    True
    """
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))
