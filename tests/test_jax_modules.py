"""JAX's modules that programs import by name exist under fnx's (``import jax.image`` ports to
``import fnx.image``), and the small ones added for that agree with JAX on the CPU."""
import importlib

import numpy as np
import pytest

import fnx

jax = pytest.importorskip("jax")

MODULES = ["dtypes", "image", "example_libraries.stax", "example_libraries.optimizers",
           "experimental.ode", "experimental.mesh_utils", "experimental.pjit", "scipy.integrate",
           "scipy.ndimage", "scipy.stats.norm", "scipy.stats.multivariate_normal",
           "nn.initializers",
           "tree_util", "flatten_util", "numpy.linalg", "numpy.fft", "scipy.special", "lax",
           "random", "experimental.shard_map", "sharding", "ad_checkpoint", "scipy.fft",
           "scipy.interpolate", "scipy.spatial.transform", "scipy.cluster.vq",
           "custom_batching", "profiler",
           "experimental.checkify", "experimental.jet"]


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_under_fnx_name(name):
    importlib.import_module(f"jax.{name}")          # a name JAX has
    module = importlib.import_module(f"fnx.{name}")
    assert module is not None


@pytest.mark.x32
@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("mode", ["constant", "nearest", "wrap", "mirror", "reflect"])
def test_map_coordinates_matches_jax(order, mode, rng, jax_x64_as_fnx):
    import jax.scipy.ndimage as jnd
    from fnx.scipy import ndimage
    image = rng.standard_normal((5, 6)).astype(np.float32)
    coords = [rng.uniform(-2, 7, 10).astype(np.float32), rng.uniform(-2, 8, 10).astype(np.float32)]
    got = ndimage.map_coordinates(image, coords, order, mode=mode, cval=1.5)
    want = jnd.map_coordinates(image, coords, order, mode=mode, cval=1.5)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    if order == 1:
        def g(lib, nd):
            return lib.grad(lambda c: nd.map_coordinates(image, [c, coords[1]], 1, mode).sum())
        np.testing.assert_allclose(g(fnx, ndimage)(coords[0]), g(jax, jnd)(coords[0]),
                                   rtol=1e-5, atol=1e-6)


def test_map_coordinates_of_integers_and_errors(jax_x64_as_fnx):
    import jax.scipy.ndimage as jnd
    from fnx.scipy import ndimage
    ints, coords = np.arange(12).reshape(3, 4), [np.array([0.5, 1.5]), np.array([1.5, 2.5])]
    np.testing.assert_array_equal(ndimage.map_coordinates(ints, coords, 1),
                                  jnd.map_coordinates(ints, coords, 1))
    with pytest.raises(NotImplementedError, match="order<=1"):
        ndimage.map_coordinates(ints, coords, 3)
    with pytest.raises(ValueError, match="length input.ndim"):
        ndimage.map_coordinates(ints, coords[:1], 1)


def test_trapezoid_matches_jax(rng, jax_x64_as_fnx):
    from jax.scipy.integrate import trapezoid as jtrap

    from fnx.scipy.integrate import trapezoid
    y, x = rng.standard_normal((4, 5)), np.sort(rng.uniform(0, 3, 5))
    np.testing.assert_allclose(trapezoid(y, x), jtrap(y, x), rtol=1e-12)
    np.testing.assert_allclose(trapezoid(y, dx=0.3, axis=0), jtrap(y, dx=0.3, axis=0), rtol=1e-12)


class _Device:
    def __init__(self, i, process):
        self.id, self.process_index = i, process

    def __repr__(self):
        return f"d{self.id}"


def test_mesh_utils_lay_devices_out_in_order():
    from fnx.experimental import mesh_utils
    devices = [_Device(i, i // 4) for i in range(8)]
    mesh = mesh_utils.create_device_mesh((2, 4), devices)
    assert [[d.id for d in row] for row in mesh] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    hybrid = mesh_utils.create_hybrid_device_mesh((2, 2), (2, 1), devices)
    assert hybrid.shape == (4, 2)
    assert {d.process_index for d in hybrid[:2].ravel()} == {0}
    with pytest.raises(ValueError, match="must equal the product"):
        mesh_utils.create_device_mesh((3,), devices)
    mesh = fnx.sharding.Mesh(mesh_utils.create_device_mesh((1,)), ("x",))
    assert mesh.shape["x"] == 1
