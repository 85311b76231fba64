"""What a bug report asks about the running process: its environment and the arrays alive in
it (``jax.print_environment_info``, ``jax.live_arrays``, ``jax.copy_to_host_async``)."""
from __future__ import annotations

import gc
import platform
import sys
import textwrap

import numpy as np

from .core.core import Array, Tracer, devices, process_count
from .core.pytree import tree_leaves
from .version import __version__


def print_environment_info(return_string: bool = False):
    """Print (or return) the versions of fnx, NumPy and Python, the devices and the platform.

    >>> "fnx:" in fnx.print_environment_info(return_string=True)
    True
    """
    found = devices()
    info = textwrap.dedent(f"""\
    fnx:    {__version__}
    numpy:  {np.__version__}
    python: {sys.version.replace(chr(10), ' ')}
    device info: {found[0].device_kind}-{len(found)}, {len(found)} local devices
    process_count: {process_count()}
    platform: {platform.uname()}
    """)
    if return_string:
        return info
    print(info)


def live_arrays(platform: str | None = None) -> list:
    """The arrays alive now (on ``platform``'s devices if given), for finding what holds
    memory.

    >>> x = jnp.ones(3)
    >>> any(a is x for a in fnx.live_arrays())
    True
    """
    # isinstance(tracer, Array) holds, as for jax.Array; tracers are not arrays alive
    arrays = [o for o in gc.get_objects()
              if isinstance(o, Array) and not isinstance(o, Tracer) and not o.is_deleted()]
    if platform is not None:
        arrays = [a for a in arrays if any(d.platform == platform for d in a.devices())]
    return arrays


def copy_to_host_async(x):
    """Start copying the arrays of pytree ``x`` to the host (their data already is there on the
    CPU; a GPU array's copy is made when it is read), as JAX's; returns None.

    >>> fnx.copy_to_host_async({"w": jnp.ones(2)})
    """
    for leaf in tree_leaves(x):
        if not isinstance(leaf, Array):
            raise TypeError(f"copy_to_host_async takes arrays, got {type(leaf).__name__}")
