"""fnx.scipy.interpolate.RegularGridInterpolator, fnx.scipy.spatial.transform (Rotation,
Slerp) and fnx.scipy.cluster.vq against JAX on the CPU (and SciPy where JAX lacks a method),
with fresh random inputs, under jit, vmap and grad."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation as SciRotation

import fnx
from fnx.scipy.cluster.vq import vq
from fnx.scipy.interpolate import RegularGridInterpolator
from fnx.scipy.spatial.transform import Rotation, Slerp

jax = pytest.importorskip("jax")
from jax.scipy.cluster.vq import vq as jax_vq  # noqa: E402
from jax.scipy.interpolate import RegularGridInterpolator as JaxInterpolator  # noqa: E402
from jax.scipy.spatial.transform import Rotation as JaxRotation, Slerp as JaxSlerp  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _grid(rng):
    grid = (np.sort(rng.uniform(0, 1, 5)), np.sort(rng.uniform(-1, 2, 4)))
    points = np.stack([rng.uniform(-0.2, 1.2, 11), rng.uniform(-1.3, 2.3, 11)], -1)
    return grid, points


@pytest.mark.parametrize("method", ["linear", "nearest"])
@pytest.mark.parametrize("fill_value", [np.nan, None, 0.5])
def test_interpolator_matches_jax(method, fill_value, rng):
    grid, points = _grid(rng)
    values = rng.standard_normal((5, 4, 3))      # a trailing axis is carried along
    got = RegularGridInterpolator(grid, values, method, fill_value=fill_value)(points)
    want = JaxInterpolator(grid, values, method, fill_value=fill_value)(points)
    assert got.shape == want.shape == (11, 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    coords = (points[:, 0].reshape(1, 11), points[:, 1])      # a tuple of coordinate arrays
    np.testing.assert_allclose(RegularGridInterpolator(grid, values[..., 0])(coords),
                               JaxInterpolator(grid, values[..., 0])(coords), rtol=1e-12)


def test_interpolator_is_a_pytree_under_jit_and_grad(rng):
    grid, points = _grid(rng)
    values = rng.standard_normal((5, 4))
    f = RegularGridInterpolator(grid, values, fill_value=0.0)
    np.testing.assert_allclose(fnx.jit(lambda f, x: f(x))(f, points), f(points), rtol=1e-12)
    assert len(fnx.tree_util.tree_leaves(f)) == 4

    def loss(lib, cls):
        return lambda v, x: lib.numpy.sum(cls(grid, v, fill_value=0.0)(x) ** 2)
    for argnum in (0, 1):
        np.testing.assert_allclose(fnx.grad(loss(fnx, RegularGridInterpolator), argnum)(
            values, points), jax.grad(loss(jax, JaxInterpolator), argnum)(values, points),
            rtol=1e-10, atol=1e-12)


def test_interpolator_refuses_what_jax_refuses():
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator((np.arange(3.0),), np.ones(3), bounds_error=True)
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator((np.arange(3.0),), np.ones(3), "cubic")
    with pytest.raises(ValueError, match="dimension 3"):
        RegularGridInterpolator((np.arange(3.0),) * 2, np.ones((3, 3)))(np.ones((2, 3)))


def _quats(rng, n=7):
    return rng.standard_normal((n, 4))


@pytest.mark.parametrize("method", ["as_matrix", "as_rotvec", "as_mrp", "magnitude", "as_quat"])
def test_rotation_representations_match_jax(method, rng):
    q = _quats(rng)
    got, want = getattr(Rotation.from_quat(q), method)(), getattr(JaxRotation.from_quat(q),
                                                                  method)()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(getattr(Rotation.from_quat(q[0]), method)(), want[0],
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "zxz", "XYX", "yzx", "XZY", "xy", "Z"])
def test_euler_angles_match_jax_and_scipy(seq, rng):
    angles = rng.uniform(-3, 3, (6, len(seq)))
    np.testing.assert_allclose(Rotation.from_euler(seq, angles).as_quat(),
                               JaxRotation.from_euler(seq, angles).as_quat(), atol=1e-12)
    np.testing.assert_allclose(Rotation.from_euler(seq, np.rad2deg(angles), degrees=True)
                               .as_quat(), SciRotation.from_euler(seq, angles).as_quat(),
                               atol=1e-12)
    if len(seq) == 3:
        q = _quats(rng)
        np.testing.assert_allclose(Rotation.from_quat(q).as_euler(seq),
                                   JaxRotation.from_quat(q).as_euler(seq), atol=1e-10)
        np.testing.assert_allclose(Rotation.from_quat(q).as_euler(seq, degrees=True),
                                   SciRotation.from_quat(q).as_euler(seq, degrees=True),
                                   atol=1e-8)


def test_matrix_rotvec_and_mrp_round_trip_as_jax(rng):
    sci = SciRotation.from_quat(_quats(rng))
    np.testing.assert_allclose(Rotation.from_matrix(sci.as_matrix()).as_quat(),
                               JaxRotation.from_matrix(sci.as_matrix()).as_quat(), atol=1e-12)
    rotvec = np.concatenate([sci.as_rotvec(), 1e-5 * rng.standard_normal((2, 3))])
    np.testing.assert_allclose(Rotation.from_rotvec(rotvec).as_quat(),
                               JaxRotation.from_rotvec(rotvec).as_quat(), atol=1e-12)
    np.testing.assert_allclose(Rotation.from_rotvec(rotvec).as_rotvec(), rotvec, atol=1e-12)
    np.testing.assert_allclose(Rotation.from_mrp(sci.as_mrp()).as_matrix(), sci.as_matrix(),
                               atol=1e-12)


def test_apply_compose_inverse_mean_match(rng):
    q, v = _quats(rng), rng.standard_normal((7, 3))
    ours, theirs, sci = Rotation.from_quat(q), JaxRotation.from_quat(q), SciRotation.from_quat(q)
    for inverse in (False, True):
        np.testing.assert_allclose(ours.apply(v, inverse), theirs.apply(v, inverse), atol=1e-12)
        np.testing.assert_allclose(ours[2].apply(v, inverse), sci[2].apply(v, inverse),
                                   atol=1e-12)
        np.testing.assert_allclose(ours.apply(v[0], inverse), sci.apply(v[0], inverse),
                                   atol=1e-12)
    np.testing.assert_allclose((ours[:3] * ours[4:]).as_quat(),
                               (theirs[:3] * theirs[4:]).as_quat(), atol=1e-12)
    np.testing.assert_allclose((ours * ours.inv()).magnitude(), 0, atol=1e-7)
    weights = rng.uniform(0.1, 1, 7)
    np.testing.assert_allclose(ours.mean(weights).as_matrix(), sci.mean(weights).as_matrix(),
                               atol=1e-10)
    assert len(ours) == 7 and ours[0].single and not ours.single
    with pytest.raises(TypeError, match="not subscriptable"):
        ours[0][0]
    np.testing.assert_allclose(ours.as_quat(canonical=True, scalar_first=True),
                               theirs.as_quat(canonical=True, scalar_first=True))


def test_slerp_matches_jax(rng):
    q, times = _quats(rng, 5), np.cumsum(rng.uniform(0.5, 1, 5))
    t = rng.uniform(times[0], times[-1], 9)
    got = Slerp.init(times, Rotation.from_quat(q))(t)
    want = JaxSlerp.init(times, JaxRotation.from_quat(q))(t)
    np.testing.assert_allclose(got.as_quat(), want.as_quat(), atol=1e-12)
    assert Slerp.init(times, Rotation.from_quat(q))(t[0]).single


def test_rotation_is_a_pytree_under_jit_vmap_and_grad(rng):
    q, v = _quats(rng), rng.standard_normal(3)
    assert fnx.tree_util.tree_leaves(Rotation.from_quat(q))[0].shape == (7, 4)
    np.testing.assert_allclose(fnx.jit(lambda r: r.inv())(Rotation.from_quat(q)).quat,
                               Rotation.from_quat(q).inv().quat)
    np.testing.assert_allclose(fnx.vmap(lambda q: Rotation.from_quat(q).as_euler("zyx"))(q),
                               Rotation.from_quat(q).as_euler("zyx"), atol=1e-12)
    angles = rng.uniform(-1, 1, 3)

    def loss(lib, cls):
        return lambda a: lib.numpy.sum(cls.from_euler("xyz", a).apply(v) ** 3)
    np.testing.assert_allclose(fnx.grad(loss(fnx, Rotation))(angles),
                               jax.grad(loss(jax, JaxRotation))(angles), rtol=1e-10)


@pytest.mark.parametrize("one_d", [False, True])
def test_vq_matches_jax(one_d, rng):
    obs, book = rng.standard_normal((9, 3)), rng.standard_normal((4, 3))
    if one_d:
        obs, book = obs[:, 0], book[:, 0]
    (code, dist), (want_code, want_dist) = vq(obs, book), jax_vq(obs, book)
    np.testing.assert_array_equal(code, want_code)
    np.testing.assert_allclose(dist, want_dist, rtol=1e-12)
    with pytest.raises(ValueError, match="same rank"):
        vq(obs, book[None])
