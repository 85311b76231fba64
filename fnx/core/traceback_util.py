"""Tracebacks that end at the user's line: fnx's own frames are hidden from errors it raises.

Every public entry point (``jnp.matmul``, ``fnx.grad(f)``, a jitted function, an Array operator)
is an *API boundary*. When an exception leaves the outermost boundary, fnx's frames are removed
from its traceback (the user's functions that fnx called, a jitted body, a ``vmap``-ed
function, stay), so the last frame shown is the user's line. Option ``traceback_filtering``
(JAX's ``jax_traceback_filtering``, also read from the environment variable
``JAX_TRACEBACK_FILTERING``) chooses:

* ``"auto"`` (the default): ``"tracebackhide"`` under IPython, ``"quiet_remove_frames"``
  elsewhere;
* ``"quiet_remove_frames"``: fnx's frames removed, a note says so;
* ``"remove_frames"``: fnx's frames removed; the unfiltered traceback is kept as the
  exception's ``__cause__`` (an ``UnfilteredStackTrace``);
* ``"tracebackhide"``: nothing removed; fnx's frames are marked ``__tracebackhide__``, which
  IPython and pytest honour;
* ``"off"``: every frame shown.

>>> fnx.config.update("jax_traceback_filtering", "off")    # debugging fnx itself
"""
from __future__ import annotations

import functools
import os
import types

from .config import config

_FNX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_NOTE = ("--------------------\nfnx has removed its internal frames from the traceback of this "
         "exception; set JAX_TRACEBACK_FILTERING=off (or fnx.config.update("
         "'jax_traceback_filtering', 'off')) to include them.")


class UnfilteredStackTrace(Exception):
    """The unfiltered traceback of an exception, kept as its ``__cause__`` in
    ``remove_frames`` mode."""


def is_fnx_frame(frame) -> bool:
    return frame.f_code.co_filename.startswith(_FNX_DIR)


def _mode() -> str:
    mode = config.traceback_filtering
    if mode == "auto":
        return "tracebackhide" if _under_ipython() else "quiet_remove_frames"
    return mode


def _under_ipython() -> bool:
    try:
        get_ipython  # noqa: F821  (a builtin inside IPython)
        return True
    except NameError:
        return False


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without fnx's frames."""
    frames = []
    while tb is not None:
        if not is_fnx_frame(tb.tb_frame):
            frames.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(frames):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _under_another_boundary(frame) -> bool:
    """Whether a boundary further out will filter (only the outermost one does)."""
    frame = frame.f_back
    while frame is not None:
        if frame.f_code is _BOUNDARY_CODE:
            return True
        frame = frame.f_back
    return False


def _hide_fnx_frames(tb):
    while tb is not None:
        if is_fnx_frame(tb.tb_frame):
            tb.tb_frame.f_locals["__tracebackhide__"] = True
        tb = tb.tb_next


def _filter(e: BaseException, mode: str) -> None:
    tb = e.__traceback__
    if mode == "tracebackhide":
        _hide_fnx_frames(tb)
        return
    e.with_traceback(filter_traceback(tb))
    if mode == "quiet_remove_frames":
        if hasattr(e, "add_note") and _NOTE not in getattr(e, "__notes__", ()):  # 3.11+
            e.add_note(_NOTE)
        return
    unfiltered = UnfilteredStackTrace(f"{type(e).__name__}: {e}\n\nThe preceding is the "
                                      "original exception with fnx's frames; the stack trace "
                                      "below excludes them.\n--------------------")
    unfiltered.with_traceback(tb)
    unfiltered.__cause__, unfiltered.__context__ = e.__cause__, e.__context__
    unfiltered.__suppress_context__ = e.__suppress_context__
    e.__cause__, e.__context__ = unfiltered, None


def api_boundary(fun):
    """``fun`` as an API boundary: an exception leaving it has fnx's frames filtered out of
    its traceback, unless a boundary further out will do it.

    >>> @api_boundary
    ... def matmul(a, b): ...
    """
    @functools.wraps(fun)
    def fnx_api_boundary(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841  (pytest and IPython skip this frame)
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            mode = _mode()
            if mode == "off" or e.__traceback__ is None or \
                    _under_another_boundary(e.__traceback__.tb_frame):
                raise
            _filter(e, mode)
            raise
    return fnx_api_boundary


_BOUNDARY_CODE = api_boundary(lambda: None).__code__
_wrapped: dict = {}


def boundary_of(fun):
    """``api_boundary(fun)``, made once per function (so a function exported under two names
    stays one object)."""
    b = _wrapped.get(fun)
    if b is None:
        b = _wrapped[fun] = api_boundary(fun)
        _wrapped[b] = b
    return b


def export_boundaries(namespace: dict) -> None:
    """Make every fnx function in a public module's ``namespace`` an API boundary (only the
    public names: fnx's own modules keep calling the plain functions)."""
    for name, value in list(namespace.items()):
        if not name.startswith("_") and isinstance(value, types.FunctionType) and \
                value.__code__.co_filename.startswith(_FNX_DIR):
            namespace[name] = boundary_of(value)


def boundary_methods(cls, names) -> None:
    """Make methods of ``cls`` API boundaries (operators and methods users call)."""
    for name in names:
        fun = cls.__dict__.get(name)
        if isinstance(fun, types.FunctionType):
            setattr(cls, name, boundary_of(fun))
