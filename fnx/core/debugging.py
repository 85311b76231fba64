"""Printing from inside transformed functions (the NaN check is nan_checks.py's).

``debug_callback`` is a primitive with an effect: it stays in jaxprs (dead-code elimination
keeps it), runs its callback with concrete values when the program runs, prints every example
under vmap, and prints primal values under grad."""
from __future__ import annotations

import logging
import string

import numpy as np

from .batching import bdim_at_front
from .core import Array, Tracer, device_put
from .errors import FnxError, user_frame
from .lax import primitive
from .nan_checks import NaNError  # noqa: F401  (fnx.debug's NaNError)
from .pytree import tree_flatten, tree_unflatten

debug_callback_p = primitive("debug_callback", multiple_results=True)
debug_callback_p.has_effect = True
debug_callback_p.abstract_eval = lambda *avals, callback, batched: []


def _impl(*args, callback, batched):
    callback(*[np.asarray(a) for a in args], batched=batched)
    return []


def _jvp(primals, tangents, *, callback, batched):
    debug_callback_p.bind(*primals, callback=callback, batched=batched)
    return [], []


def _batch(vals, dims, *, callback, batched):
    size = next(v.shape[d] for v, d in zip(vals, dims) if d is not None)
    debug_callback_p.bind(*[bdim_at_front(v, d, size) for v, d in zip(vals, dims)],
                          callback=callback, batched=True)
    return [], []


debug_callback_p.impl = _impl
debug_callback_p.jvp = _jvp
debug_callback_p.batch = _batch
debug_callback_p.transpose = lambda cts, *args, **params: [None] * len(args)


def debug_print(fmt: str, *args, **kwargs):
    """``fmt.format(*args, **kwargs)`` printed when the program runs, inside jit, vmap and grad
    too (under vmap, once per example).

    >>> fnx.jit(lambda x: fnx.debug.print("x = {}", x))(jnp.arange(3))
    x = [0 1 2]
    """
    _emit_formatted(fmt, args, kwargs, print, "print")


_logger = logging.getLogger("fnx.debug")


def debug_log(fmt: str, *args, ordered: bool = False, partitioned: bool = False,
              skip_format_check: bool = False, **kwargs):
    """``fmt.format(*args, **kwargs)`` as an INFO record handed to the ``fnx.debug`` logger's
    handlers when the program runs, inside jit, vmap (once per example) and grad, the record
    naming the caller's file and line (``jax.debug.log``; as there, the logger's level does
    not filter it). Arguments ``fmt`` leaves unused raise ValueError, unless
    ``skip_format_check``, which appends them to a ``fmt`` without fields.

    >>> import logging
    >>> records, handler = [], logging.Handler()
    >>> handler.emit = records.append
    >>> logging.getLogger("fnx.debug").addHandler(handler)
    >>> fnx.jit(lambda x: fnx.debug.log("total {}", x.sum()))(jnp.arange(3))
    >>> logging.getLogger("fnx.debug").removeHandler(handler)
    >>> [(r.levelname, r.getMessage()) for r in records]
    [('INFO', 'total 3')]
    """
    del ordered, partitioned       # one host runs every callback, in program order
    if not skip_format_check:
        _FormatChecker().format(fmt, *args, **kwargs)
    where = user_frame()
    filename, lineno = (where.filename, where.lineno) if where else ("(unknown file)", 0)

    def emit(message):
        _logger.handle(_logger.makeRecord(_logger.name, logging.INFO, filename, lineno,
                                          message, (), None))
    _emit_formatted(fmt, args, kwargs, emit, "log", append_unused=skip_format_check)


class _FormatChecker(string.Formatter):
    """Reads a format string against its arguments without formatting any value (they may be
    traced): KeyError or IndexError for a field without its argument, ValueError for an
    argument without its field."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        positional = [a for i, a in enumerate(args) if i not in used_args]
        named = [k for k in kwargs if k not in used_args]
        if positional or named:
            raise ValueError(
                f"unused arguments to fnx.debug.log: {positional or ''}{named or ''}; pass the "
                f"values as arguments to a format string with a field for each (an f-string "
                f"formats too early)")


def _emit_formatted(fmt, args, kwargs, emit, name, append_unused=False):
    """Stage ``emit(message)`` of ``fmt`` formatted with the runtime values of ``args`` and
    ``kwargs``; with ``append_unused``, a ``fmt`` without fields gets the values appended,
    separated by spaces."""
    names = list(kwargs)
    values = list(args) + [kwargs[k] for k in names]
    append = append_unused and \
        all(field is None for _, field, _, _ in string.Formatter().parse(fmt))

    def callback(*vals, batched):
        def show(vs):
            pos = vs[:len(args)]
            kw = dict(zip(names, vs[len(args):]))
            emit(" ".join([fmt, *map(str, pos)]) if append else fmt.format(*pos, **kw))
        if batched:
            for i in range(len(vals[0])):
                show([v[i] for v in vals])
        else:
            show(list(vals))
    callback.__name__ = name
    traced = [v for v in values if isinstance(v, (Array, Tracer))]
    if len(traced) != len(values):
        values = [v if isinstance(v, (Array, Tracer)) else np.asarray(v) for v in values]
    debug_callback_p.bind(*values, callback=callback, batched=False)


def debug_callback(callback, *args, ordered: bool = False, partitioned: bool = False,
                   **kwargs):
    """Call ``callback(*args, **kwargs)`` for its side effect when the program runs, with the
    arguments' values as arrays: inside jit, once per example under vmap, on primal values under
    grad. Its result is ignored.

    >>> losses = []
    >>> @fnx.jit
    ... def f(x):
    ...     fnx.debug.callback(lambda v: losses.append(float(v)), x.sum())
    ...     return x * 2
    >>> _ = f(jnp.ones(3)); losses
    [3.0]
    """
    leaves, tree = tree_flatten((args, kwargs))
    # array leaves travel through the primitive; anything else (a string, a flag) stays here
    is_dyn = [isinstance(v, (Array, Tracer, np.ndarray, np.generic, int, float, complex))
              for v in leaves]
    dynamic = [v for v, d in zip(leaves, is_dyn) if d]

    def call(vals):
        it = iter(device_put(v) for v in vals)
        a, kw = tree_unflatten(tree, [next(it) if d else v for v, d in zip(leaves, is_dyn)])
        callback(*a, **kw)

    def flat(*vals, batched):
        if batched:
            for i in range(len(vals[0])):
                call([v[i] for v in vals])
        else:
            call(vals)
    flat.__name__ = getattr(callback, "__name__", "callback")
    debug_callback_p.bind(*[v if isinstance(v, (Array, Tracer)) else np.asarray(v)
                            for v in dynamic], callback=flat, batched=False)
