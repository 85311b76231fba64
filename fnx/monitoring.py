"""``jax.monitoring``: events, durations and scalars a program records, passed to the
listeners registered for them.

>>> seen = []
>>> fnx.monitoring.register_event_listener(lambda event, **kw: seen.append(event))
>>> fnx.monitoring.record_event("/my_program/started")
>>> seen
['/my_program/started']
>>> fnx.monitoring.clear_event_listeners()
"""
from __future__ import annotations

_LISTENERS: dict[str, list] = {"event": [], "duration": [], "time_span": [], "scalar": []}


def record_event(event: str, **kwargs) -> None:
    """Tell every event listener ``listener(event, **kwargs)``."""
    for listener in list(_LISTENERS["event"]):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Tell every duration listener ``listener(event, duration, **kwargs)``."""
    for listener in list(_LISTENERS["duration"]):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Tell every time-span listener ``listener(event, start_time, end_time, **kwargs)``."""
    for listener in list(_LISTENERS["time_span"]):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value, **kwargs) -> None:
    """Tell every scalar listener ``listener(event, value, **kwargs)``."""
    for listener in list(_LISTENERS["scalar"]):
        listener(event, value, **kwargs)


def register_event_listener(callback) -> None:
    _LISTENERS["event"].append(callback)


def register_event_duration_secs_listener(callback) -> None:
    _LISTENERS["duration"].append(callback)


def register_event_time_span_listener(callback) -> None:
    _LISTENERS["time_span"].append(callback)


def register_scalar_listener(callback) -> None:
    _LISTENERS["scalar"].append(callback)


def _unregister(kind, callback):
    if callback not in _LISTENERS[kind]:
        raise AssertionError(f"{callback!r} is not a registered {kind} listener")
    _LISTENERS[kind].remove(callback)


def unregister_event_listener(callback) -> None:
    _unregister("event", callback)


def unregister_event_duration_listener(callback) -> None:
    _unregister("duration", callback)


def unregister_event_time_span_listener(callback) -> None:
    _unregister("time_span", callback)


def unregister_scalar_listener(callback) -> None:
    _unregister("scalar", callback)


def clear_event_listeners() -> None:
    """Forget every listener of every kind."""
    for listeners in _LISTENERS.values():
        listeners.clear()


__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]
