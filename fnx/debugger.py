"""``fnx.debug.breakpoint``: an interactive debugger (``jdb``) that stops a running program,
inside ``jit``, ``vmap``, ``grad`` and control flow, as JAX's does.

The Python frames around the breakpoint are captured when the function is traced; their traced
local values travel through a host callback, so the debugger sees them as arrays when the
program reaches the breakpoint. Commands: ``p``/``pp`` expression (or a bare expression),
``u(p)``, ``d(own)``, ``l(ist)``, ``w(here)``/``bt``, ``c(ontinue)``, ``q(uit)`` (and end of
input), which stops the program with :class:`DebuggerQuit`.
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import os
import pprint
import sys
import threading
import traceback

from .core.core import Tracer
from .core.debugging import debug_callback
from .core.errors import FnxError
from .core.pytree import tree_flatten, tree_unflatten

_FNX_DIR = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()


class DebuggerQuit(FnxError, RuntimeError):
    """The debugger was quit (``q`` or end of input): the program stops at the breakpoint.

    >>> issubclass(fnx.debug.DebuggerQuit, RuntimeError)   # what q(uit) in jdb raises
    True
    """


@dataclasses.dataclass
class Frame:
    """One Python frame as the debugger shows it."""
    filename: str
    lineno: int
    locals: dict
    source: list
    offset: int | None       # the breakpoint's line within ``source``


def _frame(info) -> Frame:
    try:
        lines, start = inspect.getsourcelines(info.frame)
        source = [line.rstrip("\n") for line in lines]
        offset = info.lineno - max(start, 1)
        if not 0 <= offset < len(source):
            source, offset = [], None
    except (OSError, TypeError):
        source, offset = [], None
    return Frame(info.filename, info.lineno, dict(info.frame.f_locals), source, offset)


def _user_frames(skip: int, num_frames: int | None) -> list[Frame]:
    infos = [i for i in inspect.stack()[skip + 1:]
             if not os.path.abspath(i.filename).startswith(_FNX_DIR + os.sep)]
    return [_frame(i) for i in infos[:num_frames]]


def _split_traced(frames):
    """The frames' traced local values (to pass through the callback) and a function that puts
    their runtime values back."""
    traced, places = [], []
    for f in frames:
        for name, value in f.locals.items():
            try:
                leaves, tree = tree_flatten(value)
            except Exception:   # noqa: BLE001 - a local that is no pytree stays as it is
                continue
            idx = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
            if idx:
                places.append((f, name, leaves, tree, idx))
                traced.extend(leaves[i] for i in idx)

    def restore(values):
        it = iter(values)
        out = [dataclasses.replace(f, locals=dict(f.locals)) for f in frames]
        by_id = {id(f): o for f, o in zip(frames, out)}
        for f, name, leaves, tree, idx in places:
            leaves = list(leaves)
            for i in idx:
                leaves[i] = next(it)
            by_id[id(f)].locals[name] = tree_unflatten(tree, leaves)
        return out
    return traced, restore


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
    """Stop the program here, when it runs, in an interactive debugger over the frames around
    this line (their traced values as arrays). JAX's arguments; fnx has one, text, debugger.

    >>> @fnx.jit
    ... def f(x):
    ...     y = fnx.numpy.sin(x)
    ...     fnx.debug.breakpoint()     # (jdb) p y   ... (jdb) c
    ...     return y
    """
    del backend, filter_frames, kwargs
    frames = _user_frames(1, num_frames)
    traced, restore = _split_traced(frames)

    def stop(*values):
        with _lock:
            CliDebugger(restore(values)).run()
    debug_callback(stop, *traced, ordered=ordered)
    return token


class CliDebugger(cmd.Cmd):
    """The text debugger: pdb's commands over captured frames."""
    prompt = "(jdb) "

    def __init__(self, frames: list[Frame], stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.index = 0
        self.intro = "Entering jdb:"

    def run(self):
        self.cmdloop()

    def _print(self, text):
        print(text, file=self.stdout)

    def _eval(self, expr):
        return eval(expr, {}, dict(self.frames[self.index].locals))

    def _show(self, expr, fmt):
        try:
            self._print(fmt(self._eval(expr)))
        except Exception:   # noqa: BLE001 - the user's expression: report, keep debugging
            err = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
            self._print(f"*** {err}")

    def default(self, line):
        self._show(line, repr)

    def do_p(self, arg):
        """p expression: print the value of an expression"""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expression: pretty-print the value of an expression"""
        self._show(arg, pprint.pformat)

    def _context(self, lines=2):
        f = self.frames[self.index]
        out = [f"> {f.filename}({f.lineno})"]
        for i, text in enumerate(f.source):
            if f.offset is not None and f.offset - 1 - lines <= i <= f.offset + lines:
                out.append(("->  " if i == f.offset else "    ") + text)
        self._print("\n".join(out))

    def do_up(self, arg):
        """u(p): move to the frame of the caller"""
        if self.index == len(self.frames) - 1:
            self._print("At topmost frame.")
        else:
            self.index += 1
        self._context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): move to the frame called from this one"""
        if self.index == 0:
            self._print("At bottommost frame.")
        else:
            self.index -= 1
        self._context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist): the source around the current line"""
        self._context(5)
    do_l = do_list

    def do_where(self, arg):
        """w(here), bt: the frames, the innermost last"""
        out = ["Traceback:"]
        for f in self.frames[::-1]:
            out.append(f'  File "{f.filename}", line {f.lineno}')
            out.append("    " + (f.source[f.offset].strip() if f.offset is not None
                                 else "<no source>"))
        self._print("\n".join(out))
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ontinue): let the program run on"""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit), exit: stop the program here"""
        raise DebuggerQuit("the program was stopped from the debugger (jdb quit)")
    do_q = do_exit = do_EOF = do_quit
