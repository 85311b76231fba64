"""The names of jax.scipy.special and jax.scipy.stats that fnx.scipy added, against JAX on the
CPU: one table of cases with fresh random inputs, checking values and (where JAX defines them)
gradients; the docstring examples of the private modules that define stats' distributions;
and the coverage of JAX's public names."""
import doctest

import numpy as np
import pytest

import fnx
from fnx.scipy import _discrete, _summaries, special, stats
from fnx.test_util import check_grads

jax = pytest.importorskip("jax")
import jax.scipy.special as jsp  # noqa: E402
import jax.scipy.stats as jst  # noqa: E402

rng = np.random.default_rng(20261124)   # reproducible, as the rng fixture is per test


pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def u(lo, hi, n=40):
    return lambda: rng.uniform(lo, hi, n)


def whole(lo, hi, n=40):
    return lambda: rng.integers(lo, hi, n).astype(np.float64)


# name -> (argument makers, argnums to differentiate, rtol)
SPECIAL = {
    "loggamma": ([u(0.1, 30)], (0,), 1e-10),
    "gammasgn": ([u(-6, 6)], (), 0),
    "poch": ([u(0.1, 6), u(-1, 4)], (0, 1), 1e-10),
    "comb": ([whole(0, 30), whole(0, 20)], (), 1e-10),
    "boxcox": ([u(0.1, 5), u(-2, 2)], (0, 1), 1e-10),
    "boxcox1p": ([u(-0.5, 5), u(-2, 2)], (0, 1), 1e-10),
    "erfcx": ([u(-5, 40)], (), 1e-12),    # JAX's gradient fails past 26
    "gammainc": ([u(0.1, 20), u(0.01, 40)], (1,), 1e-10),
    "gammaincc": ([u(0.1, 20), u(0.01, 40)], (1,), 1e-10),
    "betainc": ([u(0.2, 10), u(0.2, 10), u(0.01, 0.99)], (2,), 1e-9),
    "expn": ([whole(1, 8), u(0.01, 30)], (1,), 1e-11),   # n = 0: below
    "exp1": ([u(0.01, 40)], (0,), 1e-11),
    "expi": ([u(-40, 80)], (0,), 1e-11),
    "i0e": ([u(-60, 60)], (0,), 1e-12),
    "i0": ([u(-60, 60)], (0,), 1e-12),
    "i1e": ([u(-60, 60)], (0,), 1e-12),
    "i1": ([u(-60, 60)], (0,), 1e-12),
    "zeta": ([u(1.1, 20), u(0.05, 30)], (1,), 1e-12),
    "dawsn": ([u(-20, 20)], (0,), 1e-12),
    "spence": ([u(0, 20)], (), 1e-12),          # JAX: NaN gradients
    "hyp1f1": ([u(0.1, 3), u(0.5, 4), u(-10, 10)], (2,), 1e-7),
}


def _compare(ours, theirs, args, argnums, rtol):
    out, expected = np.asarray(ours(*args)), np.asarray(theirs(*args))
    # atol: near 0 JAX rounds to 0 what is a tiny negative log-probability
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=1e-15, equal_nan=True)
    for i in argnums:
        grad = fnx.vmap(fnx.grad(ours, argnums=i))(*args)
        reference = np.asarray(jax.vmap(jax.grad(theirs, argnums=i))(*args))
        np.testing.assert_allclose(np.asarray(grad), reference,
                                   rtol=max(rtol, 1e-7),
                                   atol=1e-12)


@pytest.mark.parametrize("name", SPECIAL)
def test_special_against_jax(name):
    makers, argnums, rtol = SPECIAL[name]
    _compare(getattr(special, name), getattr(jsp, name), [m() for m in makers], argnums, rtol)


def test_polygamma_bernoulli_and_comb_with_repetition():
    n, x = rng.integers(0, 5, 30), rng.uniform(0.1, 10, 30)
    np.testing.assert_allclose(special.polygamma(n, x), jsp.polygamma(n, x), rtol=1e-11)
    # JAX's own table is float32-accurate; scipy's is exact
    sp = pytest.importorskip("scipy.special")
    np.testing.assert_allclose(special.bernoulli(20), sp.bernoulli(20), rtol=1e-10)
    x = rng.uniform(-5, 40, 30)        # erfcx' = 2 x erfcx(x) - 2 / sqrt(pi)
    np.testing.assert_allclose(fnx.vmap(fnx.grad(special.erfcx))(x),
                               2 * x * jsp.erfcx(x) - 2 / np.sqrt(np.pi), rtol=1e-9)
    x = rng.uniform(0.01, 30, 30)      # E_0 = exp(-x) / x, where JAX's gradient is NaN below 1
    np.testing.assert_allclose(special.expn(0, x), jsp.expn(0, x), rtol=1e-12)
    np.testing.assert_allclose(fnx.vmap(fnx.grad(special.expn, 1))(np.zeros(30), x),
                               -np.exp(-x) * (1 / x + 1 / x**2), rtol=1e-9)
    x = rng.uniform(0.05, 20, 30)      # spence' = log(x) / (1 - x)
    np.testing.assert_allclose(fnx.vmap(fnx.grad(special.spence))(x), np.log(x) / (1 - x),
                               rtol=1e-9)
    np.testing.assert_allclose(special.comb(7.0, 3.0, repetition=True),
                               jsp.comb(7.0, 3.0, repetition=True), rtol=1e-12)


# (distribution, function, argument makers, argnums to differentiate)
def _stats_cases():
    x, pos, p = u(-6, 6), u(0.2, 4), u(0.05, 0.95)
    k = whole(-1, 12)
    cases = []
    for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        for d in ("gumbel_r", "gumbel_l"):
            # JAX loses digits in the tails: see test_betabinom_and_gumbel_tails_against_scipy
            cases.append((d, f, [x, x, pos], (0,), 1e-5))
        cases.append(("pareto", f, [u(0.5, 8), pos, u(-0.5, 0.5), pos], (0, 1)))
        cases.append(("truncnorm", f, [u(-3, 3), lambda: rng.uniform(-3, 0.5, 40),
                                       lambda: rng.uniform(0.6, 4, 40), u(-0.3, 0.3), pos],
                      (0,) if f in ("logpdf", "cdf") else ()))      # slow gradients: two
    # JAX's gumbel ppf has no gradient (float0 inside): values only
    cases += [(d, "ppf", [p, x, pos], (), 1e-9) for d in ("gumbel_r", "gumbel_l")]
    cases += [("pareto", "ppf", [p, pos, x, pos], (0,))]
    cases += [("gennorm", f, [x, u(0.5, 4)], (0,)) for f in ("logpdf", "pdf", "cdf")]
    cases += [("vonmises", f, [u(-3, 3), u(0.1, 50)], (0, 1)) for f in ("logpdf", "pdf")]
    cases += [("wrapcauchy", f, [u(-1, 7), u(0.05, 0.95)], (0, 1)) for f in ("logpdf", "pdf")]
    for f in ("logpmf", "pmf"):
        cases += [("binom", f, [k, whole(1, 10), p, whole(-1, 2)], (2,)),
                  ("nbinom", f, [k, pos, p, whole(-1, 2)], (1, 2)),
                  ("geom", f, [k, p, whole(-1, 2)], (1,)),
                  # JAX's betaln is good to ~1e-7 here: see test_betabinom_against_scipy
                  ("betabinom", f, [k, whole(1, 10), pos, pos, whole(-1, 2)], (), 1e-5)]
    return cases


STATS = [case if len(case) == 5 else case + (1e-9,) for case in _stats_cases()]


@pytest.mark.parametrize("dist,fn,makers,argnums,rtol", STATS,
                         ids=[f"{case[0]}.{case[1]}" for case in STATS])
def test_stats_against_jax(dist, fn, makers, argnums, rtol):
    ours, theirs = getattr(getattr(stats, dist), fn), getattr(getattr(jst, dist), fn)
    _compare(ours, theirs, [m() for m in makers], argnums, rtol)


def test_betabinom_and_gumbel_tails_against_scipy():
    st = pytest.importorskip("scipy.stats")
    k, n = rng.integers(0, 12, 40), rng.integers(8, 12, 40)
    a, b = rng.uniform(0.2, 4, 40), rng.uniform(0.2, 4, 40)
    np.testing.assert_allclose(stats.betabinom.logpmf(k, n, a, b),
                               st.betabinom.logpmf(k, n, a, b), rtol=1e-11)
    k = rng.integers(0, n + 1)        # inside the support, where the gradient is finite
    check_grads(lambda a, b: stats.betabinom.logpmf(k, n, a, b), (a, b), order=1)
    x = rng.uniform(-6, 40, 40)
    for f in ("logsf", "logcdf"):
        np.testing.assert_allclose(getattr(stats.gumbel_r, f)(x), getattr(st.gumbel_r, f)(x),
                                   rtol=1e-12)
        np.testing.assert_allclose(getattr(stats.gumbel_l, f)(-x), getattr(st.gumbel_l, f)(-x),
                                   rtol=1e-12)


def test_multinomial_against_jax():
    p = rng.dirichlet(np.ones(4), 5)
    x = rng.multinomial(9, [0.1, 0.2, 0.3, 0.4], 5)
    x[0, 0] += 1                                          # counts off n: -inf
    for f in ("logpmf", "pmf"):
        for row in range(len(x)):      # JAX's checks the sum over all rows: one at a time
            np.testing.assert_allclose(getattr(stats.multinomial, f)(x[row], 9, p[row]),
                                       getattr(jst.multinomial, f)(x[row], 9, p[row]),
                                       rtol=1e-10)
        batch = getattr(stats.multinomial, f)(x, 9, p)
        np.testing.assert_allclose(batch, [getattr(stats.multinomial, f)(x[row], 9, p[row])
                                           for row in range(len(x))], rtol=1e-14)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_against_jax(method):
    a = rng.integers(0, 5, (4, 7)).astype(np.float64)
    np.testing.assert_array_equal(stats.rankdata(a, method), jst.rankdata(a, method))
    np.testing.assert_array_equal(stats.rankdata(a, method, axis=1),
                                  jst.rankdata(a, method, axis=1))
    a[1, 2] = np.nan
    np.testing.assert_array_equal(stats.rankdata(a, method, axis=0),
                                  jst.rankdata(a, method, axis=0))


def test_mode_and_sem_against_jax():
    a = rng.integers(0, 4, (6, 5))
    for axis, keepdims in [(0, False), (1, True), (None, False), (None, True)]:
        ours, theirs = stats.mode(a, axis, keepdims=keepdims), jst.mode(a, axis,
                                                                        keepdims=keepdims)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o, t)
    b = rng.standard_normal((6, 5))
    np.testing.assert_allclose(stats.sem(b), jst.sem(b), rtol=1e-12)
    np.testing.assert_allclose(stats.sem(b, axis=None, ddof=0, keepdims=True),
                               jst.sem(b, axis=None, ddof=0, keepdims=True), rtol=1e-12)
    b[2, 3] = np.nan
    np.testing.assert_allclose(stats.sem(b, axis=1, nan_policy="omit"),
                               jst.sem(b, axis=1, nan_policy="omit"), rtol=1e-12)


@pytest.mark.x32
@pytest.mark.parametrize("module", [_discrete, _summaries, stats], ids=lambda m: m.__name__)
def test_examples_of_the_distributions(module):
    """The distributions' functions live in namespaces, which the API doctests do not reach."""
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS,
                                  extraglobs={"jnp": fnx.numpy})
    assert failures == 0


@pytest.mark.parametrize("ours,theirs,least", [(special, jsp, 1.0), (stats, jst, 0.95)])
def test_coverage_of_jax_names(ours, theirs, least):
    names = [n for n in dir(theirs) if not n.startswith("_")]
    assert sum(hasattr(ours, n) for n in names) / len(names) >= least


def test_each_distribution_imports_as_a_module_as_in_jax():
    import importlib
    import types
    names = [n for n in dir(jst) if isinstance(getattr(jst, n), types.ModuleType)]
    assert "norm" in names
    for name in names:
        module = importlib.import_module(f"fnx.scipy.stats.{name}")
        assert module is getattr(stats, name)
    import fnx.scipy.stats.norm as norm
    x = np.linspace(-2.0, 2.0, 5)
    np.testing.assert_allclose(norm.logpdf(x, 0.5, 2.0), jst.norm.logpdf(x, 0.5, 2.0), rtol=1e-12)
