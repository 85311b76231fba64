"""``jax.monitoring``: events and durations that programs record and listeners receive (JAX's
own compilation events are not emitted by fnx; user events are delivered as in JAX).

>>> seen = []
>>> fnx.monitoring.register_event_listener(lambda name, **kw: seen.append(name))
>>> fnx.monitoring.record_event("/my/event")
>>> seen
['/my/event']
>>> fnx.monitoring.clear_event_listeners()
"""
from __future__ import annotations

_LISTENERS: dict[str, list] = {"event": [], "duration": [], "time_span": [], "scalar": []}


def record_event(event: str, **kwargs) -> None:
    """Deliver ``event`` (and its keyword arguments) to every event listener.

    >>> fnx.monitoring.register_event_listener(lambda event, **kw: print(event, kw))
    >>> fnx.monitoring.record_event("/train/start", run=7)
    /train/start {'run': 7}
    >>> fnx.monitoring.clear_event_listeners()
    """
    for listener in list(_LISTENERS["event"]):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Deliver ``event`` and its duration in seconds to every duration listener.

    >>> fnx.monitoring.register_event_duration_secs_listener(lambda event, secs: print(secs))
    >>> fnx.monitoring.record_event_duration_secs("/train/step", 0.25)
    0.25
    >>> fnx.monitoring.clear_event_listeners()
    """
    for listener in list(_LISTENERS["duration"]):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Deliver ``event`` and its start and end times to every time-span listener.

    >>> fnx.monitoring.register_event_time_span_listener(lambda event, t0, t1: print(t1 - t0))
    >>> fnx.monitoring.record_event_time_span("/train/step", 1.0, 1.5)
    0.5
    >>> fnx.monitoring.clear_event_listeners()
    """
    for listener in list(_LISTENERS["time_span"]):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(key: str, value, **kwargs) -> None:
    """Deliver the scalar ``value`` under ``key`` to every scalar listener.

    >>> fnx.monitoring.register_scalar_listener(lambda key, value: print(key, value))
    >>> fnx.monitoring.record_scalar("/train/loss", 0.5)
    /train/loss 0.5
    >>> fnx.monitoring.clear_event_listeners()
    """
    for listener in list(_LISTENERS["scalar"]):
        listener(key, value, **kwargs)


# kind: (its register and unregister names, a record call, what a listener then receives)
_KINDS = {
    "event": ("register_event_listener", "unregister_event_listener",
              'record_event("/train/start")', "('/train/start',)"),
    "duration": ("register_event_duration_secs_listener", "unregister_event_duration_listener",
                 'record_event_duration_secs("/train/step", 0.25)', "('/train/step', 0.25)"),
    "time_span": ("register_event_time_span_listener", "unregister_event_time_span_listener",
                  'record_event_time_span("/train/step", 1.0, 1.5)',
                  "('/train/step', 1.0, 1.5)"),
    "scalar": ("register_scalar_listener", "unregister_scalar_listener",
               'record_scalar("/train/loss", 0.5)', "('/train/loss', 0.5)"),
}


def _example(kind) -> str:
    register, unregister, record, received = _KINDS[kind]
    return f"""

    >>> seen = []
    >>> def listener(*args, **kwargs):
    ...     seen.append(args)
    >>> fnx.monitoring.{register}(listener)
    >>> fnx.monitoring.{record}
    >>> fnx.monitoring.{unregister}(listener)
    >>> fnx.monitoring.{record}
    >>> seen
    [{received}]
    """


def _register(kind):
    def register(listener) -> None:
        _LISTENERS[kind].append(listener)
    register.__name__ = register.__qualname__ = _KINDS[kind][0]
    register.__doc__ = (f"Call ``listener`` on every recorded {kind.replace('_', ' ')}."
                        + _example(kind))
    return register


def _unregister(kind):
    def unregister(listener) -> None:
        if listener not in _LISTENERS[kind]:
            raise AssertionError(f"{listener} is not a registered {kind} listener")
        _LISTENERS[kind].remove(listener)
    unregister.__name__ = unregister.__qualname__ = _KINDS[kind][1]
    unregister.__doc__ = (f"Stop calling ``listener`` on recorded {kind.replace('_', ' ')}s."
                          + _example(kind))
    return unregister


register_event_listener = _register("event")
register_event_duration_secs_listener = _register("duration")
register_event_time_span_listener = _register("time_span")
register_scalar_listener = _register("scalar")
unregister_event_listener = _unregister("event")
unregister_event_duration_listener = _unregister("duration")
unregister_event_time_span_listener = _unregister("time_span")
unregister_scalar_listener = _unregister("scalar")


def clear_event_listeners() -> None:
    """Forget every listener.

    >>> fnx.monitoring.register_event_listener(print)
    >>> fnx.monitoring.clear_event_listeners()
    >>> fnx.monitoring.record_event("/nobody/listens")
    """
    for listeners in _LISTENERS.values():
        listeners.clear()
