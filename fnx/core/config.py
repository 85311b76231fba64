"""fnx.config: global options, read with ``config.name`` and set with ``config.update``.

>>> fnx.config.update("default_matmul_precision", "tensorfloat32")
>>> with fnx.default_matmul_precision("highest"): ...
"""
from __future__ import annotations

import contextlib

_OPTIONS = {
    # "highest" (full float32) or "tensorfloat32" (TF32 tensor cores) for float32 products on
    # the GPU; the value in force when a function is traced for jit is the one it keeps
    "default_matmul_precision": "highest",
    # print which argument changed (shape, dtype, structure, static value) when jit retraces
    "explain_cache_misses": False,
    # print a line each time jit traces and compiles a function
    "log_compiles": False,
    # raise, naming the primitive and its source line, as soon as an operation makes a NaN
    "debug_nans": False,
    # run the jaxpr passes (inlining, constant folding, simplification, CSE, DCE) when jit
    # traces a function; read at trace time, so it applies to functions traced afterwards
    "jit_optimize": True,
    # side streams a jitted GPU program may run independent steps on (weight updates beside the
    # backward pass), so they overlap; 0 runs every step on the caller's stream. Read when a
    # program is lowered
    "gpu_side_streams": 2,
}


class Config:
    """Options are plain attributes (read on every jitted call, so reading must be cheap)."""

    def __init__(self):
        for name, value in _OPTIONS.items():
            object.__setattr__(self, name, value)

    def update(self, name: str, value) -> None:
        if name not in _OPTIONS:
            raise KeyError(f"unknown fnx option {name!r}; options: {sorted(_OPTIONS)}")
        if name == "default_matmul_precision" and value not in ("highest", "tensorfloat32"):
            raise ValueError("default_matmul_precision must be 'highest' or 'tensorfloat32', got "
                             f"{value!r}")
        if name == "gpu_side_streams" and (not isinstance(value, int) or value < 0):
            raise ValueError(f"gpu_side_streams must be an int >= 0, got {value!r}")
        object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        self.update(name, value)

    @contextlib.contextmanager
    def option(self, name: str, value):
        old = getattr(self, name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)

    def __repr__(self):
        return f"Config({ {n: getattr(self, n) for n in _OPTIONS} })"


config = Config()


def default_matmul_precision(value: str):
    """Context manager: float32 products inside use ``value`` ('highest' or 'tensorfloat32')."""
    return config.option("default_matmul_precision", value)
