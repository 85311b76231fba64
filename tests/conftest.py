import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import fnx  # noqa: E402

# The tests compare against float64 references, so they run with 64-bit types on, as JAX's own
# test suite does; the tests of the default (x64 off) switch it off themselves.
fnx.config.update("jax_enable_x64", os.environ.get("FNX_TEST_X64", "1") == "1")


def pytest_collection_modifyitems(config, items):
    import pytest
    try:
        import cupy
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with CuPy")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _x64_mode(request):
    """Tests marked ``x32`` run with x64 off (the user's default): they check fnx's default
    dtypes (float32, int32) and JAX's canonicalization of 64-bit values."""
    if request.node.get_closest_marker("x32") is None:
        yield
        return
    import fnx
    with fnx.enable_x64(False):
        yield


@pytest.fixture
def jax_x64_as_fnx():
    """JAX (the oracle) with x64 set as fnx's is, restored after the test."""
    import fnx
    import jax
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", fnx.config.enable_x64)
    yield
    jax.config.update("jax_enable_x64", old)


@pytest.fixture(scope="module")
def gpu():
    """The GPU backend (only cuda-marked tests ask for it)."""
    import fnx
    return fnx.devices("gpu")[0]


@pytest.fixture(scope="module")
def cpu():
    import fnx
    return fnx.devices("cpu")[0]


@pytest.fixture
def rng(request):
    """A fresh, reproducible random stream per test (seeded by its name)."""
    import zlib

    import numpy as np
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


@contextlib.contextmanager
def virtual_cpu_devices(count: int):
    """``count`` virtual CPU devices, the default ones even where a GPU is present (a module's
    fixture: ``with virtual_cpu_devices(8): yield``)."""
    old = fnx.config.num_cpu_devices
    fnx.config.update("jax_num_cpu_devices", count)
    try:
        with fnx.default_device(fnx.devices("cpu")[0]):
            yield
    finally:
        fnx.config.update("jax_num_cpu_devices", old)
