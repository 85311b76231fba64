"""fnx.scipy.special, fnx.scipy.stats and the special functions of fnx.lax against scipy in
float64 (and float32 within its precision), with derivatives by finite differences, vmap, jit
and a GPU check."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
from fnx.scipy import special, stats
from fnx.test_util import check_grads

sp = pytest.importorskip("scipy.special")
st = pytest.importorskip("scipy.stats")

rng = np.random.default_rng(11)
REALS = np.r_[rng.uniform(-9.7, 30, 300), 0.5, 1.0, 2.0, 1e-3, 150.0, 1e5]
TAILS = np.r_[-40.0, -20.0, -5.5, -4.9, rng.uniform(-6, 8, 200), 12.0, 30.0]
POSITIVE = rng.uniform(0.01, 5, 200)
PROBS = rng.uniform(0.001, 0.999, 200)


def close(out, expected, rtol=1e-9, atol=1e-12):
    out = np.asarray(out)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("ours,theirs,x,rtol", [
    (lax.lgamma, sp.gammaln, REALS, 1e-11),
    (lax.digamma, sp.digamma, REALS, 1e-11),
    (lax.erfc, sp.erfc, np.linspace(-5, 27, 500), 1e-13),
])
def test_lax_special_functions(ours, theirs, x, rtol):
    close(ours(x), theirs(x), rtol=rtol, atol=1e-13)
    x32 = x.astype(np.float32)
    expected = theirs(x32.astype(np.float64))
    keep = np.abs(expected) > 1e-30                       # float32's normal range
    out = np.asarray(ours(x32))
    assert out.dtype == np.float32
    close(out[keep], expected[keep], rtol=2e-5, atol=1e-6)


def test_poles_as_in_jax():
    poles = np.array([0.0, -1.0, -2.0, -7.0])
    assert np.all(np.isposinf(np.asarray(lax.lgamma(poles))))
    assert np.all(np.isnan(np.asarray(lax.digamma(poles))))


def test_derivatives_of_lgamma_and_digamma():
    x = np.array([-2.3, -0.4, 0.3, 1.7, 8.2])
    close(fnx.vmap(fnx.grad(lax.lgamma))(x), sp.digamma(x), rtol=1e-10)
    close(fnx.vmap(fnx.grad(lax.digamma))(x), sp.polygamma(1, x), rtol=1e-8)
    check_grads(lax.lgamma, (x,), order=2)
    check_grads(lax.erfc, (np.array([-1.0, 0.4, 1.9, 2.1, 5.0]),), order=2)


SPECIAL = [
    ("gammaln", (REALS,), sp.gammaln),
    ("gamma", (REALS[REALS < 150],), sp.gamma),
    ("betaln", (POSITIVE, POSITIVE[::-1]), sp.betaln),
    ("beta", (POSITIVE, POSITIVE[::-1]), sp.beta),
    ("factorial", (np.round(POSITIVE * 3),), sp.factorial),
    ("logit", (PROBS,), sp.logit),
    ("expit", (TAILS,), sp.expit),
    ("xlogy", (np.r_[0, 0, TAILS[:9]], np.r_[0, 1, POSITIVE[:9]]), sp.xlogy),
    ("xlog1py", (np.r_[0, TAILS[:9]], np.r_[-1, POSITIVE[:9]]), sp.xlog1py),
    ("entr", (np.r_[0, -1, POSITIVE],), sp.entr),
    ("rel_entr", (np.r_[0, 0, 1, POSITIVE], np.r_[0, 1, 0, POSITIVE[::-1]]), sp.rel_entr),
    ("kl_div", (POSITIVE, POSITIVE[::-1]), sp.kl_div),
    ("ndtr", (TAILS,), sp.ndtr),
    ("ndtri", (PROBS,), sp.ndtri),
    ("log_ndtr", (TAILS,), sp.log_ndtr),
    ("erfc", (TAILS,), sp.erfc),
    ("digamma", (REALS,), sp.digamma),
    ("logsumexp", (TAILS,), sp.logsumexp),
]


@pytest.mark.parametrize("name,args,reference", SPECIAL, ids=[s[0] for s in SPECIAL])
def test_special_against_scipy(name, args, reference):
    close(getattr(special, name)(*args), reference(*args), rtol=1e-9)


def test_multigammaln():
    a = POSITIVE + 3
    close(special.multigammaln(a, 3), [sp.multigammaln(v, 3) for v in a], rtol=1e-11)


def test_zero_safe_derivatives():
    """xlogy's value is 0 where x == 0; its derivatives are JAX's, log(y) in x and x / y in y
    (so -inf and NaN at (0, 0), and 0 in y where only x is 0)."""
    x, y = np.array([0.0, 0.0, 2.0]), np.array([0.0, 3.0, 3.0])
    grads = fnx.grad(lambda x, y: special.xlogy(x, y).sum(), (0, 1))(x, y)
    close(grads[0], [-np.inf, np.log(3.0), np.log(3.0)])
    close(grads[1], [np.nan, 0.0, 2.0 / 3.0])
    close(fnx.grad(lambda y: special.xlog1py(2.0, y))(np.float64(0.5)), 2.0 / 1.5)
    check_grads(lambda t: special.log_ndtr(t), (np.array([-30.0, -6.0, -1.0, 0.5, 7.0]),),
                order=1, rtol=1e-6)


LOCATION_SCALE = ["norm", "logistic", "laplace", "cauchy", "expon", "uniform"]


@pytest.mark.parametrize("name", LOCATION_SCALE)
def test_location_scale_families(name):
    ours, theirs = getattr(stats, name), getattr(st, name)
    loc, scale = 0.3, 1.7
    for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        close(getattr(ours, f)(TAILS, loc, scale), getattr(theirs, f)(TAILS, loc, scale),
              rtol=1e-8)
    if hasattr(ours, "ppf"):
        close(ours.ppf(PROBS, loc, scale), theirs.ppf(PROBS, loc, scale), rtol=1e-8)
        close(ours.isf(PROBS, loc, scale), theirs.isf(PROBS, loc, scale), rtol=1e-8)


def test_shaped_and_discrete_distributions():
    x = np.abs(TAILS)
    close(stats.gamma.logpdf(x, 2.5, loc=0.1, scale=2.0),
          st.gamma.logpdf(x, 2.5, loc=0.1, scale=2.0))
    close(stats.beta.logpdf(PROBS, 2.5, 0.7), st.beta.logpdf(PROBS, 2.5, 0.7))
    close(stats.t.logpdf(TAILS, 3.5, loc=0.3, scale=1.7),
          st.t.logpdf(TAILS, 3.5, loc=0.3, scale=1.7))
    close(stats.chi2.pdf(POSITIVE, 4.0), st.chi2.pdf(POSITIVE, 4.0))
    k = np.r_[0, 1, 2, 5, 17, 2.5, -1.0]
    close(stats.poisson.logpmf(k, 3.3), st.poisson.logpmf(k, 3.3))
    close(stats.bernoulli.pmf(np.r_[0.0, 1.0, 2.0], 0.3), st.bernoulli.pmf([0, 1, 2], 0.3))


def test_multivariate_normal_and_dirichlet():
    a = rng.standard_normal((3, 3))
    cov, x, mean = a @ a.T + np.eye(3), rng.standard_normal((5, 3)), rng.standard_normal(3)
    close(stats.multivariate_normal.logpdf(x, mean, cov),
          st.multivariate_normal.logpdf(x, mean, cov))
    alpha = np.r_[0.5, 2.0, 3.0]
    points = rng.dirichlet(alpha, 4)
    close(stats.dirichlet.logpdf(points, alpha), [st.dirichlet.logpdf(p, alpha) for p in points])
    # the score of the mean: cov^-1 (x - mean)
    score = fnx.grad(lambda m: stats.multivariate_normal.logpdf(x[0], m, cov))(mean)
    close(score, np.linalg.solve(cov, x[0] - mean), rtol=1e-10)


def test_python_numbers_take_the_arrays_dtype():
    """loc = 0.3 beside float64 data is 0.3 in float64, not rounded through float32."""
    out = stats.norm.logpdf(np.array([1.0]), 0.3, 1.7)
    assert out.dtype == np.float64
    close(out, st.norm.logpdf([1.0], 0.3, 1.7), rtol=1e-14)


def test_jit_vmap_and_gradients_of_a_log_likelihood():
    def nll(params, x):
        loc, log_scale = params
        return -stats.t.logpdf(x, 4.0, loc=loc, scale=fnx.numpy.exp(log_scale)).sum()

    x = rng.standard_normal((3, 50)) * 2 + 1
    params = np.array([0.2, 0.4])
    values = fnx.jit(fnx.vmap(nll, in_axes=(None, 0)))(params, x)
    close(values, [-st.t.logpdf(row, 4.0, loc=0.2, scale=np.exp(0.4)).sum() for row in x],
          rtol=1e-10)
    check_grads(lambda p: nll(p, x[0]), (params,), order=2)


@pytest.mark.cuda
def test_on_the_gpu_as_on_the_cpu(gpu, cpu):
    x = TAILS.astype(np.float32)

    def f(t):
        return (special.log_ndtr(t) + lax.lgamma(fnx.numpy.abs(t) + 0.5)
                + stats.logistic.logpdf(t, 0.3, 1.5))

    on_gpu = fnx.jit(fnx.grad(lambda t: f(t).sum()))(fnx.device_put(x, gpu))
    assert on_gpu._backend is gpu
    close(on_gpu, fnx.grad(lambda t: f(t).sum())(fnx.device_put(x, cpu)), rtol=1e-4,
          atol=1e-5)
