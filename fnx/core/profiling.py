"""The spans a profiler trace records: wall-clock intervals on the host, each with a name, the
thread and a few arguments. ``fnx.profiler`` starts and stops the recording and writes it out;
``jit`` and the user's annotations add spans while it runs, and cost one attribute check when
nothing records.

>>> start()
>>> with span("step", step_num=1): pass
>>> [e.name for e in stop()]
['step']
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import NamedTuple

events: list | None = None      # the spans recorded so far, while a trace runs


class Span(NamedTuple):
    name: str
    start_ns: int
    end_ns: int
    thread: int
    args: dict


def start() -> None:
    global events
    events = []


def stop() -> list:
    global events
    done, events = events or [], None
    return done


@contextlib.contextmanager
def span(name: str, **args):
    """Record the time spent inside as one span named ``name`` (nothing when not recording)."""
    if events is None:
        yield
        return
    begin = time.perf_counter_ns()
    try:
        yield
    finally:
        if events is not None:
            events.append(Span(name, begin, time.perf_counter_ns(), threading.get_ident(), args))
