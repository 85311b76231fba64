"""fnx.scipy.stats.gaussian_kde against JAX's on CPU with fresh random data: densities, log
densities, the integrals, draws for the same key, the pytree, and gradients in the data."""
import numpy as np
import pytest

import fnx
from fnx.scipy.stats import gaussian_kde

jax = pytest.importorskip("jax")
from jax.scipy.stats import gaussian_kde as jax_kde  # noqa: E402

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def _close(ours, theirs, rtol=1e-12, atol=1e-300):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=atol)


@pytest.mark.parametrize("options", [{}, {"bw_method": "silverman"}, {"bw_method": 0.4},
                                     {"bw_method": lambda kde: 0.5 * kde.neff ** -0.2},
                                     "weights"])
@pytest.mark.parametrize("d", [1, 3])
def test_densities_match_jax(rng, options, d):
    data = rng.standard_normal((d, 25)) * rng.uniform(0.5, 2, (d, 1))
    if options == "weights":
        options = {"weights": rng.uniform(0.1, 1.0, 25)}
    ours, theirs = gaussian_kde(data, **options), jax_kde(data, **options)
    points = rng.standard_normal((d, 9)) * 2
    for name in ("evaluate", "pdf", "__call__", "logpdf"):
        _close(getattr(ours, name)(points), getattr(theirs, name)(points))
    _close(ours.covariance, theirs.covariance)
    _close(ours.neff, theirs.neff)
    mean, cov = rng.standard_normal(d), np.diag(rng.uniform(0.5, 2, d))
    _close(ours.integrate_gaussian(mean, cov), theirs.integrate_gaussian(mean, cov))
    other = rng.standard_normal((d, 7)) + 0.5
    _close(ours.integrate_kde(gaussian_kde(other)), theirs.integrate_kde(jax_kde(other)))
    key = int(rng.integers(0, 2 ** 31))
    _close(ours.resample(fnx.random.PRNGKey(key), (4,)),
           theirs.resample(jax.random.PRNGKey(key), (4,)))
    assert ours.resample(fnx.random.PRNGKey(key), (3, 4)).shape == (d, 3, 4)
    if d == 1:
        low, high = sorted(rng.uniform(-3, 3, 2))
        _close(ours.integrate_box_1d(low, high), theirs.integrate_box_1d(low, high))
        _close(ours(points[0]), theirs(points[0]))      # one-dimensional points, as (m,)


def test_is_a_pytree_through_jit_and_grad(rng):
    data, points = rng.standard_normal((2, 20)), rng.standard_normal((2, 5))
    kde = gaussian_kde(data)
    leaves, tree = fnx.tree_util.tree_flatten(kde)
    assert len(leaves) == 5
    rebuilt = fnx.tree_util.tree_unflatten(tree, leaves)
    _close(rebuilt.logpdf(points), kde.logpdf(points))
    _close(fnx.jit(lambda k, p: k.logpdf(p))(kde, points), kde.logpdf(points))
    grad = fnx.grad(lambda x: gaussian_kde(x).logpdf(points).sum())(data)
    _close(grad, jax.grad(lambda x: jax_kde(x).logpdf(points).sum())(data), 1e-10)
    with pytest.raises(AttributeError):
        kde.dataset = data
    with pytest.raises(NotImplementedError):
        kde.integrate_box([0, 0], [1, 1])
    with pytest.raises(ValueError, match="dimension 3"):
        kde.logpdf(np.zeros((3, 2)))
