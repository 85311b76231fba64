"""The jax.numpy names fnx.numpy gained for coverage (windows, index tricks, polynomials, set
operations, selection and pure updates, partitions, assembly, functional helpers, calculus,
bit functions, histograms, host helpers) against JAX on the CPU, with x64 on in both: values on
fresh random inputs, and gradients where JAX defines them."""
import io

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True)
def _jax_x64():
    with jax.enable_x64(True):
        yield


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [np.asarray(out)]


def _assert_match(ours, theirs, tol=1e-10):
    ours, theirs = _leaves(ours), _leaves(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape, (o.shape, t.shape)
        # fnx's index results (nonzero, argsort, bincount) stay int32 under x64
        same = o.dtype == t.dtype or o.dtype.kind == t.dtype.kind == "i"
        assert same, (o.dtype, t.dtype)
        if o.dtype.kind in "biu":
            np.testing.assert_array_equal(o, t)
        else:
            np.testing.assert_allclose(o, t, rtol=tol, atol=tol)


def normal(*shape):
    return lambda r: r.standard_normal(shape)


def ints(lo, hi, *shape):
    return lambda r: r.integers(lo, hi, shape)


def positive(*shape):
    return lambda r: r.uniform(0.5, 2.0, shape)


# (id, function of the module m and the drawn inputs, input makers, differentiable argnums)
CASES = [
    ("i0", lambda m, x: m.i0(x), [lambda r: 12 * r.standard_normal(20)], (0,)),
    ("hamming", lambda m: m.hamming(7), [], ()),
    ("hanning", lambda m: m.hanning(6), [], ()),
    ("blackman", lambda m: m.blackman(9), [], ()),
    ("bartlett", lambda m: m.bartlett(8), [], ()),
    ("window_edges", lambda m: [m.hamming(0), m.hanning(1)], [], ()),
    ("kaiser", lambda m, b: m.kaiser(7, b), [lambda r: r.uniform(1, 10)], (0,)),
    ("mgrid", lambda m: m.mgrid[0:3, -1:1:5j], [], ()),
    ("ogrid", lambda m: m.ogrid[0:2, 0:4:2, 1:3], [], ()),
    ("r_", lambda m, a: m.r_[a, 0.5, 3:6, -1:1:3j], [normal(4)], (0,)),
    ("r_directive", lambda m, a: [m.r_["0,2", a, a], m.r_["-1,3,1", a], m.r_["r", a, a],
                                  m.r_["c", a]], [normal(3)], (0,)),
    ("c_", lambda m, a, b: m.c_[a, b, a], [normal(3), normal(3)], (0, 1)),
    ("c_2d", lambda m, a: m.c_[a, a], [normal(2, 3)], (0,)),
    ("polyadd", lambda m, a, b: m.polyadd(a, b), [normal(4), normal(2)], (0, 1)),
    ("polysub", lambda m, a, b: m.polysub(a, b), [normal(2), normal(5)], (0, 1)),
    ("polymul", lambda m, a, b: m.polymul(a, b), [normal(4), normal(3)], (0, 1)),
    ("polydiv", lambda m, a, b: m.polydiv(a, b), [normal(6), positive(3)], (0, 1)),
    ("polyder", lambda m, a: [m.polyder(a), m.polyder(a, 3), m.polyder(a, 6)], [normal(5)], (0,)),
    ("polyint", lambda m, a, k: [m.polyint(a), m.polyint(a, 2, k)], [normal(4), normal(2)],
     (0, 1)),
    ("poly", lambda m, z: m.poly(z), [normal(4)], (0,)),
    ("polyfit", lambda m, x, y: m.polyfit(x, y, 3), [normal(12), normal(12)], (1,)),
    ("polyfit_2d_weighted", lambda m, x, y, w: m.polyfit(x, y, 2, w=w),
     [normal(10), normal(10, 2), positive(10)], (1,)),
    ("polyfit_cov", lambda m, x, y: m.polyfit(x, y, 2, cov=True), [normal(10), normal(10)], ()),
    ("polyfit_full", lambda m, x, y: m.polyfit(x, y, 2, full=True)[:4],
     [normal(10), normal(10)], ()),
    ("union1d", lambda m, a, b: m.union1d(a, b), [ints(0, 9, 7), ints(0, 9, 2, 3)], ()),
    ("setdiff1d", lambda m, a, b: m.setdiff1d(a, b), [ints(0, 9, 10), ints(0, 9, 4)], ()),
    ("setxor1d", lambda m, a, b: m.setxor1d(a, b), [ints(0, 9, 6), ints(0, 9, 5)], ()),
    ("intersect1d", lambda m, a, b: m.intersect1d(a, b), [ints(0, 9, 10), ints(0, 9, 8)], ()),
    ("intersect1d_indices", lambda m, a, b: m.intersect1d(a, b, return_indices=True),
     [lambda r: r.permutation(12)[:8], lambda r: r.permutation(12)[:6]], ()),
    ("choose", lambda m, a, x, y: m.choose(a, [x, y, 2.0]),
     [ints(0, 3, 3, 4), normal(3, 4), normal(4)], ()),
    ("choose_wrap_clip", lambda m, a, x, y: [m.choose(a + 2, [x, y], mode="wrap"),
                                             m.choose(a + 1, [x, y, 2.0], mode="clip")],
     [ints(0, 3, 3, 4), normal(3, 4), normal(4)], (1, 2)),
    ("compress", lambda m, c, x: [m.compress(c, x, axis=1), m.compress(c[:3], x, axis=0),
                                  m.compress(c, x)],
     [lambda r: r.random(4) > 0.5, normal(3, 4)], ()),
    ("compress_size", lambda m, x: m.compress(np.array([True, False, True, True]), x, axis=1,
                                              size=3, fill_value=9.0), [normal(3, 4)], (0,)),
    ("extract", lambda m, x: m.extract(x > 0, x), [normal(3, 4)], ()),
    ("extract_size", lambda m, x: m.extract(x > 0, x, size=10), [normal(3, 4)], (0,)),
    ("put", lambda m, x, v: [m.put(x, np.array([0, 5, 7]), v, inplace=False),
                             m.put(x, np.array([13, -20]), v, mode="wrap", inplace=False),
                             m.put(x, np.array([13, -20]), v, mode="clip", inplace=False)],
     [normal(3, 4), normal(2)], (0, 1)),
    ("place", lambda m, x, v: m.place(x, np.arange(12).reshape(3, 4) % 3 == 0, v, inplace=False),
     [normal(3, 4), normal(3)], (0, 1)),
    ("put_along_axis", lambda m, x, v: [
        m.put_along_axis(x, np.array([[1], [0], [3]]), v, 1, inplace=False),
        m.put_along_axis(x, np.array([[2, 0, 1, 1]]), 7.0, 0, inplace=False),
        m.put_along_axis(x, np.array([3, 11]), 7.0, None, inplace=False)],
     [normal(3, 4), normal(3, 1)], (0, 1)),
    ("fill_diagonal", lambda m, x, y, v: [m.fill_diagonal(x, v, inplace=False),
                                          m.fill_diagonal(y, 2.0, inplace=False)],
     [normal(5, 3), normal(3, 3, 3), normal(2)], (0, 1, 2)),
    ("sort_complex", lambda m, x: m.sort_complex(x), [normal(3, 5)], ()),
    ("sort_complex_int", lambda m, x: m.sort_complex(x), [ints(-5, 5, 6)], ()),
    ("block", lambda m, a, b, c: [m.block([[a, b], [c, 1.0]]), m.block([a[0], b[:, 0]]),
                                  m.block([[[a]]])],
     [normal(2, 3), normal(2, 1), normal(1, 3)], (0, 1, 2)),
    ("diagflat", lambda m, v: [m.diagflat(v), m.diagflat(v, -2)], [normal(2, 2)], (0,)),
    ("rollaxis", lambda m, x: [m.rollaxis(x, 2), m.rollaxis(x, 0, 3), m.rollaxis(x, -1, -2),
                               m.rollaxis(x, 1, 0)], [normal(2, 3, 4)], (0,)),
    ("trim_zeros", lambda m, x: [m.trim_zeros(x), m.trim_zeros(x, "f"), m.trim_zeros(x, "b")],
     [lambda r: np.r_[0, 0, r.integers(1, 5, 3), 0, r.integers(1, 5, 2), 0]], ()),
    ("trim_zeros_axis", lambda m, x: [m.trim_zeros(x, axis=0), m.trim_zeros(x, axis=1)],
     [lambda r: np.pad(r.integers(1, 5, (2, 3)), ((1, 2), (2, 0)))], ()),
    ("apply_along_axis", lambda m, x: [m.apply_along_axis(lambda v: v[:2] * v.sum(), 1, x),
                                       m.apply_along_axis(lambda v: m.outer(v, v), 2, x),
                                       m.apply_along_axis(m.sum, 0, x)],
     [normal(3, 5, 4)], (0,)),
    ("apply_over_axes", lambda m, x: [m.apply_over_axes(m.sum, x, [0, 2]),
                                      m.apply_over_axes(m.mean, x, [1])], [normal(3, 5, 4)], (0,)),
    ("fromfunction", lambda m: m.fromfunction(lambda i, j: i * 10 + j ** 2, (3, 4)), [], ()),
    ("frompyfunc", lambda m, x, y: [m.frompyfunc(lambda a, b: a * b + 1, 2, 1)(x, y),
                                    m.frompyfunc(lambda a, b: a * b + 1, 2, 1).outer(x[0], y)],
     [normal(2, 3), normal(3)], (0, 1)),
    ("gradient", lambda m, f: [m.gradient(f), m.gradient(f, 0.5, axis=1)], [normal(4, 5)], (0,)),
    ("gradient_coordinates", lambda m, f, x: m.gradient(f, x, 2.0),
     [normal(6, 3), lambda r: np.cumsum(r.uniform(0.5, 1.5, 6))], (0, 1)),
    ("unwrap", lambda m, p: [m.unwrap(p), m.unwrap(p, axis=0, discont=4.0),
                             m.unwrap(p, period=3.0)], [lambda r: 6 * r.standard_normal((4, 6))],
     (0,)),
    ("packbits", lambda m, b: [m.packbits(b), m.packbits(b, axis=1, bitorder="little"),
                               m.packbits(b, axis=0)], [ints(0, 2, 3, 11)], ()),
    ("unpackbits", lambda m, u: [m.unpackbits(u), m.unpackbits(u, axis=1),
                                 m.unpackbits(u, axis=0, count=5),
                                 m.unpackbits(u, axis=1, count=-3, bitorder="little")],
     [lambda r: r.integers(0, 256, (2, 3)).astype(np.uint8)], ()),
    ("bitwise_count", lambda m, x: [m.bitwise_count(x), m.bitwise_count(x.astype(np.int8)),
                                    m.bitwise_count(x > 0)], [ints(-100, 100, 8)], ()),
    ("spacing", lambda m, x: m.spacing(x), [lambda r: np.r_[0.0, r.standard_normal(5) * 1e3]], ()),
    ("geomspace", lambda m, a, b: [m.geomspace(a[0], b[0], 5), m.geomspace(-a, -b, 4, axis=1,
                                                                           endpoint=False)],
     [positive(2), lambda r: r.uniform(10, 100, 2)], (0, 1)),
    ("histogramdd", lambda m, s, w: [m.histogramdd(s, bins=(3, 4, 2)),
                                     m.histogramdd(s, bins=3, weights=w, density=True)],
     [normal(40, 3), positive(40)], ()),
    ("histogram2d", lambda m, x, y: [m.histogram2d(x, y), m.histogram2d(x, y, bins=[3, 5],
                                                                     range=[(-1, 1), (-2, 2)])],
     [normal(30), normal(30)], ()),
    ("mask_indices", lambda m: [m.mask_indices(4, m.triu, 1), m.mask_indices(3, m.tril)], [], ()),
    ("fromstring", lambda m: m.fromstring("1 2 3.5", sep=" "), [], ()),
]


@pytest.mark.parametrize("name,fn,makers,argnums", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(rng, name, fn, makers, argnums):
    args = [make(rng) for make in makers]
    # value-dependent shapes cannot be traced by JAX: NumPy (float64) is their oracle
    oracle = fn(np, *args) if name in _EAGER else jax.jit(lambda *a: fn(jjnp, *a))(*args)
    _assert_match(fn(jnp, *args), oracle)
    if argnums:
        def loss(m, *a):
            # a fixed, uneven weighting of every float output, so each element counts
            return sum(m.sum(m.real(leaf) * np.cos(np.arange(leaf.size)).reshape(leaf.shape))
                       for leaf in _flat(fn(m, *a)) if np.dtype(leaf.dtype).kind in "fc")

        ours = fnx.grad(lambda *a: loss(jnp, *a), argnums=argnums)(*args)
        theirs = jax.jit(jax.grad(lambda *a: loss(jjnp, *a), argnums=argnums))(*args)
        _assert_match(ours, theirs, tol=1e-8)


def _flat(out):
    return [leaf for o in out for leaf in _flat(o)] if isinstance(out, (tuple, list)) else [out]


# value-dependent shapes (set operations, masks, trimming), checked against NumPy
_EAGER = {"union1d", "setdiff1d", "setxor1d", "intersect1d", "intersect1d_indices", "compress",
          "extract", "trim_zeros", "trim_zeros_axis", "mask_indices", "fromstring", "choose"}


def test_partition_contract(rng):
    x = rng.standard_normal((3, 7, 4))
    for kth in (0, 3, -1):
        ours = np.asarray(jnp.partition(x, kth, axis=1))
        theirs = np.asarray(jjnp.partition(x, kth, axis=1))
        np.testing.assert_array_equal(ours[:, kth], theirs[:, kth])
        k = kth % 7
        np.testing.assert_array_equal(np.sort(ours[:, :k], 1), np.sort(theirs[:, :k], 1))
        picked = np.take_along_axis(x, np.asarray(jnp.argpartition(x, kth, axis=1)), 1)
        np.testing.assert_array_equal(picked[:, k], theirs[:, k])


@pytest.mark.parametrize("name", ["union1d", "setdiff1d", "setxor1d", "intersect1d"])
def test_set_operations_under_jit(rng, name):
    a, b = rng.integers(0, 9, 10), rng.integers(0, 9, 6)
    for size, fill in ((12, None), (4, None), (12, -1)):
        def op(m):
            return lambda x, y: getattr(m, name)(x, y, size=size, fill_value=fill)
        np.testing.assert_array_equal(fnx.jit(op(jnp))(a, b), jax.jit(op(jjnp))(a, b))


@pytest.mark.parametrize("strip_zeros", [True, False])
@pytest.mark.parametrize("degree", [1, 2, 5, 8])
def test_roots_in_jax_order(rng, degree, strip_zeros):
    # leading and trailing zeros; complex coefficients too
    for p in (np.r_[0.0, rng.standard_normal(degree + 1), 0.0],
              rng.standard_normal(degree + 1) + 1j * rng.standard_normal(degree + 1)):
        ours = jnp.roots(p, strip_zeros=strip_zeros)
        theirs = jjnp.roots(p, strip_zeros=strip_zeros)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-8)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_roots_derivatives(rng, transform):
    p = rng.standard_normal(6)

    def parts(m):
        return lambda p: (m.roots(p).real, m.roots(p, strip_zeros=False).imag)
    ours = getattr(fnx, transform)(parts(jnp))(p)
    theirs = getattr(jax, transform)(parts(jjnp))(p)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-7, atol=1e-9)


def test_roots_under_jit_and_vmap(rng):
    p = np.stack([np.r_[0.0, rng.standard_normal(4)], rng.standard_normal(5)])
    ours = fnx.jit(fnx.vmap(lambda p: jnp.roots(p, strip_zeros=False)))(p)
    theirs = jax.vmap(lambda p: jjnp.roots(p, strip_zeros=False))(p)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-8)
    with pytest.raises(fnx.errors.ConcretizationTypeError):
        fnx.jit(jnp.roots)(p[1])


def test_mask_indices_with_size():
    for size in (2, 8):
        ours = jnp.mask_indices(3, jnp.tril, size=size)
        _assert_match(ours, jjnp.mask_indices(3, jjnp.tril, size=size))


def test_updates_need_inplace_false():
    for call in (lambda: jnp.put(jnp.zeros(3), 0, 1.0),
                 lambda: jnp.place(jnp.zeros(3), jnp.ones(3, bool), 1.0),
                 lambda: jnp.put_along_axis(jnp.zeros(3), jnp.array([0]), 1.0, 0),
                 lambda: jnp.fill_diagonal(jnp.zeros((2, 2)), 1.0)):
        with pytest.raises(ValueError, match="inplace=False"):
            call()


def test_scalar_type_names():
    assert jnp.double == np.float64 and jnp.single == np.float32
    assert jnp.cdouble == np.complex128 and jnp.csingle == np.complex64
    assert jnp.int_(3).dtype == jnp.int64 and jnp.uint(3).dtype == jnp.uint64
    assert np.dtype(jnp.float8_e4m3fn) == np.dtype(jjnp.float8_e4m3fn)
    assert np.dtype(jnp.int4) == np.dtype(jjnp.int4)
    assert jnp.generic is np.generic and jnp.object_ is np.object_
    assert issubclass(jnp.ComplexWarning, RuntimeWarning)


def test_host_helpers(rng):
    x = rng.standard_normal((2, 3))
    buffer = io.BytesIO()
    jnp.save(buffer, x)
    buffer.seek(0)
    loaded = jnp.load(buffer)
    assert isinstance(loaded, fnx.Array)
    np.testing.assert_array_equal(loaded, x)
    assert jnp.array_str(np.arange(3)) == "[0 1 2]"
    with jnp.printoptions(precision=2):
        assert jnp.get_printoptions()["precision"] == 2
    assert jnp.iterable([1]) and not jnp.iterable(1.0)
    operands = [np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))]
    path, _ = jnp.einsum_path("ij,jk,kl->il", *operands)
    assert sorted(len(step) for step in path) == [2, 2]
    with pytest.raises(NotImplementedError):
        jnp.fromiter(iter([1, 2]), float)


def test_coverage_of_jax_numpy_names():
    names = [n for n in dir(jjnp) if not n.startswith("_")]
    missing = sorted(n for n in names if not hasattr(jnp, n))
    assert len(missing) <= 0.05 * len(names), missing
