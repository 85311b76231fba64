"""Compiling generated CUDA source into kernels, cached in memory (CuPy caches binaries on disk).

NVRTC's cost is mostly per program (starting up, parsing the headers, loading the module), not
per kernel, so ``compile_together`` builds every kernel a lowered program needs as one program:
a first call pays that cost once instead of once per kernel.
"""
from __future__ import annotations

import re

_KERNELS: dict = {}      # (source, name) -> cupy.RawKernel


def kernel(source: str, name: str):
    """The compiled kernel ``name`` of ``source`` (compiled alone if not compiled yet)."""
    k = _KERNELS.get((source, name))
    if k is None:
        import cupy as cp
        k = _KERNELS[(source, name)] = cp.RawKernel(source, name)
    return k


def compile_together(units) -> None:
    """Compile the not yet compiled ``units = [(source, name)]`` as one NVRTC program.

    Each unit goes into its own namespace, so helper functions of the same name do not clash;
    its kernel is renamed (kernels have C linkage, which namespaces do not separate) and
    ``#include`` lines move to the top. If the combined program fails to build, nothing is
    cached and each kernel compiles alone when first launched."""
    pending = list(dict.fromkeys(u for u in units if u not in _KERNELS))
    if len(pending) < 2:
        return
    includes, parts = [], []
    for i, (source, name) in enumerate(pending):
        body = []
        for line in source.splitlines():
            (includes if line.lstrip().startswith("#include") else body).append(line)
        renamed, found = re.subn(rf"\b{re.escape(name)}(\s*\()", rf"{name}__u{i}\1",
                                 "\n".join(body), count=1)
        if not found:
            return
        parts.append(f"namespace fnx_unit{i} {{\n{renamed}\n}}\n")
    code = "".join(f"{line}\n" for line in dict.fromkeys(includes)) + "".join(parts)
    import cupy as cp
    try:
        module = cp.RawModule(code=code)
        kernels = [module.get_function(f"{name}__u{i}") for i, (_, name) in enumerate(pending)]
    except Exception:       # compile each alone, where the failing one reports its own error
        return
    _KERNELS.update(zip(pending, kernels))
