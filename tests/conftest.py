import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


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
