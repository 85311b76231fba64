"""Where the CUDA libraries this process has loaded live (their paths, read from
/proc/self/maps), so that fnx's own ctypes bindings and its compiling processes use the very
libraries CuPy loaded rather than whichever one the loader would find first."""
from __future__ import annotations


def loaded(fragment: str):
    """The path of the loaded library whose file name starts with ``fragment``
    (``"libcusolver.so"``), or None if none is loaded."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if fragment in line}
    except OSError:
        return None
    paths = sorted(p for p in paths if p.rsplit("/", 1)[-1].startswith(fragment))
    return paths[0] if paths else None
