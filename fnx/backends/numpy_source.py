"""One Python function's source, written statement by statement and compiled once.

The CPU executable runs a jaxpr as a single generated function: values live in its locals, the
functions and constants it calls are names bound in an enclosing scope (read as fast as
locals), so an equation costs the NumPy call it makes and little else.

>>> src = FunctionSource(["x"])
>>> add = src.bind(np.add, "add")
>>> src.emit(f"y = {add}(x, x)", label="add")
>>> src.returns(["y"])
>>> src.compile("double")(np.arange(3))
[array([0, 2, 4])]
"""
from __future__ import annotations

import itertools
import os

_serial = itertools.count()
_LABELS = "__fnx_step_labels__"     # per generated function: its source lines' step labels


class FunctionSource:
    """The source of ``def run(*params)``: statements, the objects they name, and for each
    line the step it belongs to (for error messages)."""

    def __init__(self, params):
        self.params = list(params)
        self.lines: list = []
        self.labels: list = []
        self.bound: dict = {}       # name -> object
        self._names: dict = {}      # id(object) -> name (one name per object)
        self._kept: list = []       # objects named by id stay alive while named
        self.indent = 1

    def bind(self, obj, hint: str = "k") -> str:
        """A name under which the function reads ``obj`` (the same name for the same object)."""
        name = self._names.get(id(obj))
        if name is None:
            name = f"{hint}_{len(self.bound)}"
            self._names[id(obj)] = name
            self._kept.append(obj)
            self.bound[name] = obj
        return name

    def bind_as(self, name: str, obj):
        """Bind ``obj`` under a name of the caller's choosing (a constant's variable)."""
        self.bound[name] = obj

    def emit(self, line: str, label=None):
        self.lines.append("    " * self.indent + line)
        self.labels.append(label)

    def returns(self, names):
        self.emit("return [" + ", ".join(names) + "]")

    def compile(self, name: str):
        """The function, compiled. Its code is named after a file inside fnx, so that
        traceback filtering treats it as fnx's own frames."""
        filename = os.path.join(os.path.dirname(__file__), f"<jit {name} #{next(_serial)}>")
        bound = list(self.bound)
        head = [f"def _make({', '.join(bound)}):",
                f"    def run({', '.join(self.params)}):"]
        body = ["    " + line for line in self.lines] or ["        pass"]
        source = "\n".join(head + body + ["    return run", ""])
        namespace = {_LABELS: [None, None] + self.labels}
        exec(compile(source, filename, "exec"), namespace)
        return namespace["_make"](*[self.bound[n] for n in bound])


def failing_step(tb):
    """The label of the innermost generated step a traceback passes through, or None."""
    label = None
    while tb is not None:
        labels = tb.tb_frame.f_globals.get(_LABELS)
        if labels is not None and tb.tb_lineno - 1 < len(labels):
            label = labels[tb.tb_lineno - 1] or label
        tb = tb.tb_next
    return label
