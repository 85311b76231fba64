"""fnx.experimental.mesh_utils: arrays of devices shaped for a ``Mesh``, as
``jax.experimental.mesh_utils``. fnx knows no physical topology (no TPU tori), so devices are
laid out in their order.

>>> from fnx.experimental import mesh_utils
>>> mesh_utils.create_device_mesh((1,)).shape
(1,)
"""
from __future__ import annotations

import math

import numpy as np

from ..core.core import devices as _all_devices


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False):
    """An array of shape ``mesh_shape`` holding ``devices`` (all devices by default).

    >>> create_device_mesh((1, 1))
    array([[CpuDevice(id=0)]], dtype=object)
    """
    devices = list(_all_devices() if devices is None else devices)
    if len(devices) != math.prod(mesh_shape):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {tuple(mesh_shape)}")
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    return grid.reshape(tuple(mesh_shape))


def create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape, devices=None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False):
    """A mesh of ``dcn_mesh_shape`` groups (one per process) of ``mesh_shape`` devices each,
    the two shapes multiplied axis by axis.

    >>> create_hybrid_device_mesh((1,), (1,)).shape
    (1,)
    """
    devices = list(_all_devices() if devices is None else devices)
    groups: dict = {}
    for d in devices:
        groups.setdefault(getattr(d, "process_index", 0), []).append(d)
    per_group = [create_device_mesh(mesh_shape, g) for _, g in sorted(groups.items())]
    if len(per_group) != math.prod(dcn_mesh_shape):
        raise ValueError(f"Number of processes {len(per_group)} must equal the product of "
                         f"dcn_mesh_shape {tuple(dcn_mesh_shape)}")
    outer = np.empty(len(per_group), dtype=object)
    outer[:] = per_group
    outer = outer.reshape(tuple(dcn_mesh_shape))
    return np.block(outer.tolist()) if outer.ndim else per_group[0]


__all__ = ["create_device_mesh", "create_hybrid_device_mesh"]
