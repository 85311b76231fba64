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
    """Deliver ``event`` to every event listener."""
    for listener in list(_LISTENERS["event"]):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Deliver ``event`` and its duration in seconds to every duration listener."""
    for listener in list(_LISTENERS["duration"]):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Deliver ``event`` and its start and end times to every time-span listener."""
    for listener in list(_LISTENERS["time_span"]):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(key: str, value, **kwargs) -> None:
    """Deliver the scalar ``value`` under ``key`` to every scalar listener."""
    for listener in list(_LISTENERS["scalar"]):
        listener(key, value, **kwargs)


def _register(kind):
    def register(listener) -> None:
        _LISTENERS[kind].append(listener)
    register.__doc__ = f"Call ``listener`` on every recorded {kind.replace('_', ' ')}."
    return register


def _unregister(kind):
    def unregister(listener) -> None:
        if listener not in _LISTENERS[kind]:
            raise AssertionError(f"{listener} is not a registered {kind} listener")
        _LISTENERS[kind].remove(listener)
    unregister.__doc__ = f"Stop calling ``listener`` on recorded {kind.replace('_', ' ')}s."
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
    """Forget every listener."""
    for listeners in _LISTENERS.values():
        listeners.clear()
