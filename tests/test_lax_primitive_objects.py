"""fnx.lax's ``*_p`` objects for operations fnx composes: ``fnx.lax.X_p.bind(...)`` gives what
``jax.lax.X_p.bind(...)`` gives, for a table of them with fresh random operands; and they are
primitives under every transformation (jit stages them by name, jvp and vmap follow)."""
import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.numpy as jnp

jax = pytest.importorskip("jax")

pytestmark = pytest.mark.usefixtures("jax_x64_as_fnx")


def floats(*shape, lo=-3.0, hi=3.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def ints(*shape, lo=-2 ** 31, hi=2 ** 31):
    return lambda rng: rng.integers(lo, hi, shape, dtype=np.int64).astype(np.int32)


def index(value):
    return lambda rng: np.int32(value)


WINDOW = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((0, 1), (1, 0)),
              base_dilation=(1, 1), window_dilation=(1, 1))


def _gather(lx):
    return dict(dimension_numbers=lx.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
        slice_sizes=(1, 4), unique_indices=False, indices_are_sorted=False,
        mode=lx.GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)


def _scatter(name):
    def params(lx):
        numbers = lx.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                             scatter_dims_to_operand_dims=(0,))
        if lx is jax.lax:    # JAX's primitive combines with the update_jaxpr its function makes
            operand, rows, updates = np.zeros((3, 4)), np.zeros((5, 1), np.int32), np.zeros((5, 4))
            jaxpr = jax.make_jaxpr(lambda o: getattr(jax.lax, name)(
                o, rows, updates, numbers, mode=lx.GatherScatterMode.FILL_OR_DROP))(operand)
            return dict(jaxpr.eqns[-1].params)
        return dict(dimension_numbers=numbers, indices_are_sorted=False, unique_indices=False,
                    mode=lx.GatherScatterMode.FILL_OR_DROP)
    return params


def _reduce(lx):
    def pairs(a, b):
        return a[0] + b[0], lx.max(a[1], b[1])
    if lx is jax.lax:     # JAX's primitive holds its own trace of the computation
        x = np.zeros((3, 4))
        jaxpr = jax.make_jaxpr(lambda x: jax.lax.reduce((x, x), (0.0, -np.inf), pairs, (1,)))(x)
        return dict(jaxpr.eqns[-1].params)
    return dict(computation=pairs, dimensions=(1,))


def _sharding(lx):
    if lx is jax.lax:
        mesh = jax.make_mesh((1,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
        jaxpr = jax.make_jaxpr(lambda x: jax.lax.with_sharding_constraint(
            x, jax.sharding.NamedSharding(mesh, jax.P())))(np.zeros((3, 4)))
        return dict(jaxpr.eqns[-1].params)
    return dict(sharding=fnx.NamedSharding(fnx.make_mesh((1,), ("i",)), fnx.P()))


def _device_put(lx):
    if lx is jax.lax:
        return dict(jax.make_jaxpr(jax.device_put)(np.zeros((3, 4))).eqns[-1].params)
    return dict(devices=(None,), srcs=(None,), copy_semantics=(None,))


def _rows(count):
    return lambda rng: rng.integers(0, count, (5, 1)).astype(np.int32)


# name -> (operand makers, params of the lax module)
TABLE = {
    "square": ([floats(3, 4)], {}),
    "cbrt": ([floats(3, 4)], {"accuracy": None}),
    "exp2": ([floats(3, 4)], {"accuracy": None}),
    "clamp": ([floats(), floats(3, 4), lambda rng: np.float64(rng.uniform(1, 2))], {}),
    "lgamma": ([floats(3, 4, lo=0.1, hi=8)], {}),
    "digamma": ([floats(3, 4, lo=0.1, hi=8)], {}),
    "erfc": ([floats(3, 4)], {}),
    "igamma": ([floats(6, lo=0.5, hi=5), floats(6, lo=0.1, hi=6)], {}),
    "igammac": ([floats(6, lo=0.5, hi=5), floats(6, lo=0.1, hi=6)], {}),
    "igamma_grad_a": ([floats(6, lo=0.5, hi=5), floats(6, lo=0.1, hi=6)], {}),
    "regularized_incomplete_beta": ([floats(6, lo=0.5, hi=5), floats(6, lo=0.5, hi=5),
                                     floats(6, lo=0, hi=1)], {}),
    "zeta": ([floats(6, lo=1.5, hi=6), floats(6, lo=0.2, hi=4)], {}),
    "polygamma": ([lambda rng: rng.integers(0, 4, 6).astype(float), floats(6, lo=0.2, hi=4)],
                  {}),
    "bessel_i0e": ([floats(3, 4, lo=-20, hi=20)], {}),
    "bessel_i1e": ([floats(3, 4, lo=-20, hi=20)], {}),
    "population_count": ([ints(3, 4)], {}),
    "clz": ([ints(3, 4)], {}),
    "mulhi": ([ints(3, 4), ints(3, 4)], {}),
    "reduce_precision": ([floats(3, 4, lo=-100, hi=100)], {"exponent_bits": 5,
                                                           "mantissa_bits": 10}),
    "eq_to": ([lambda rng: np.array([1.0, np.nan, -0.0, 0.0, 2.0]),
               lambda rng: np.array([np.nan, np.nan, 0.0, 0.0, rng.uniform()])], {}),
    "le_to": ([lambda rng: np.array([1.0, np.nan, -0.0, 0.0, -np.inf]),
               lambda rng: np.array([np.nan, np.nan, 0.0, -0.0, rng.uniform()])], {}),
    "lt_to": ([lambda rng: np.array([1.0, np.nan, -0.0, 0.0, np.inf]),
               lambda rng: np.array([np.nan, np.nan, 0.0, -0.0, rng.uniform()])], {}),
    "cumprod": ([floats(3, 4)], {"axis": 1, "reverse": True}),
    "cummax": ([floats(3, 4)], {"axis": 0, "reverse": False}),
    "cummin": ([floats(3, 4)], {"axis": 1, "reverse": False}),
    "cumlogsumexp": ([floats(3, 4)], {"axis": 0, "reverse": True}),
    "reduce_xor": ([ints(3, 4)], {"axes": (1,)}),
    "reduce_window_sum": ([floats(4, 5)], WINDOW),
    "reduce_window_max": ([floats(4, 5)], WINDOW),
    "reduce_window_min": ([floats(4, 5)], WINDOW),
    "dynamic_slice": ([floats(5, 6), index(1), index(4)], {"slice_sizes": (2, 3)}),
    "dynamic_update_slice": ([floats(5, 6), floats(2, 3), index(2), index(-1)], {}),
    "gather": ([floats(3, 4), _rows(3)], _gather),
    "scatter_add": ([floats(3, 4), _rows(3), floats(5, 4)], _scatter("scatter_add")),
    "scatter_sub": ([floats(3, 4), _rows(3), floats(5, 4)], _scatter("scatter_sub")),
    "scatter_mul": ([floats(3, 4), _rows(3), floats(5, 4)], _scatter("scatter_mul")),
    "scatter_min": ([floats(3, 4), _rows(3), floats(5, 4)], _scatter("scatter_min")),
    "scatter_max": ([floats(3, 4), _rows(3), floats(5, 4)], _scatter("scatter_max")),
    "squeeze": ([floats(3, 1, 4)], {"dimensions": (1,)}),
    "tile": ([floats(2, 3)], {"reps": (2, 3)}),
    "split": ([floats(3, 6)], {"sizes": (1, 2, 3), "axis": 1}),
    "stack": ([floats(3, 4), floats(3, 4)], {"axis": 1}),
    "unstack": ([floats(3, 4)], {"axis": 1}),
    "copy": ([floats(3, 4)], {}),
    "optimization_barrier": ([floats(3, 4), ints(2)], {}),
    "top_k": ([floats(3, 5)], {"k": 2, "axis": 0}),
    "approx_top_k": ([floats(3, 6)], {"k": 2, "reduction_dimension": 1, "recall_target": 0.95,
                                      "is_max_k": False, "reduction_input_size_override": -1,
                                      "aggregate_to_topk": True}),
    "reduce": ([floats(3, 4), floats(3, 4), lambda rng: np.float64(0.0),
                lambda rng: np.float64(-np.inf)], _reduce),
    "rng_bit_generator": ([lambda rng: rng.integers(0, 2 ** 32, 4, dtype=np.uint64).astype(
        np.uint32)], lambda lx: dict(shape=(3, 5), dtype=np.dtype(np.uint32),
                                     algorithm=lx.RandomAlgorithm.RNG_DEFAULT, out_sharding=None)),
    "device_put": ([floats(3, 4)], _device_put),
    "sharding_constraint": ([floats(3, 4)], _sharding),
}


def _params(params, module):
    return params(module) if callable(params) else params


def test_the_table_covers_every_composed_primitive():
    assert set(TABLE) == {name.replace("-", "_") for name in lax.primitives.COMPOSED}


@pytest.mark.parametrize("name", TABLE)
def test_bind_matches_jax(name, rng):
    makers, params = TABLE[name]
    args = [m(rng) for m in makers]
    ours = getattr(lax, f"{name}_p").bind(*map(jnp.asarray, args), **_params(params, lax))
    theirs = getattr(jax.lax, f"{name}_p").bind(*args, **_params(params, jax.lax))
    ours = ours if isinstance(ours, (list, tuple)) else [ours]
    theirs = theirs if isinstance(theirs, (list, tuple)) else [theirs]
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, o.dtype, t.shape, t.dtype)
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("name", ["cumprod", "gather", "scatter_add", "dynamic_slice", "lgamma",
                                  "reduce_window_max", "split", "device_put"])
def test_transformations_of_a_bound_primitive(name, rng):
    makers, params = TABLE[name]
    args = [m(rng) for m in makers]
    p = getattr(lax, f"{name}_p")
    fnx_params, jax_params = _params(params, lax), _params(params, jax.lax)

    def first(bind, params):
        def f(x, *rest):
            out = bind(x, *rest, **params)
            return out[-1] if isinstance(out, (list, tuple)) else out
        return f

    ours, theirs = first(p.bind, fnx_params), first(getattr(jax.lax, f"{name}_p").bind,
                                                     jax_params)
    # staged under its own name, and run by jit
    text = str(fnx.make_jaxpr(ours)(*map(jnp.asarray, args)))
    assert f" {p.name}[" in text or f" {p.name} " in text, text
    np.testing.assert_allclose(np.asarray(fnx.jit(ours)(*map(jnp.asarray, args))),
                               np.asarray(theirs(*args)), rtol=1e-12, atol=1e-13)
    # derivative in the first operand (a direction), and vmap over a stacked first operand
    direction = rng.standard_normal(np.shape(args[0]))
    _, tangent = fnx.jvp(lambda x: ours(x, *map(jnp.asarray, args[1:])),
                         (jnp.asarray(args[0]),), (jnp.asarray(direction),))
    _, want = jax.jvp(lambda x: theirs(x, *args[1:]), (args[0],), (direction,))
    np.testing.assert_allclose(np.asarray(tangent), np.asarray(want), rtol=1e-10, atol=1e-12)
    stacked = np.stack([args[0], makers[0](rng)])
    batched = fnx.vmap(lambda x: ours(x, *map(jnp.asarray, args[1:])))(jnp.asarray(stacked))
    np.testing.assert_allclose(np.asarray(batched),
                               np.stack([np.asarray(theirs(x, *args[1:])) for x in stacked]),
                               rtol=1e-11)


# jax.lax's primitive objects fnx does not have, and why
NOT_IN_FNX = {
    "after_all_p": "fnx's tokens are Python objects, not arrays a primitive can return",
    "create_token_p": "as after_all_p",
    "dce_sink_p": "an XLA lowering detail",
    "stage_p": "an XLA lowering detail",
    "linear_solve_p": "custom_linear_solve runs its solves as functions, not staged jaxprs",
    "ragged_all_to_all_p": "fnx has no ragged_all_to_all",
    "reduce_window_p": "its computation is a JAX jaxpr; fnx's reduce_window takes a function",
    "rng_uniform_p": "XLA's stateful RNG: fnx has no rng_uniform",
    "select_and_gather_add_p": "internal to JAX's max-pooling derivatives",
    "select_and_scatter_add_p": "internal to JAX's max-pooling derivatives",
    "select_and_scatter_p": "internal to JAX's max-pooling derivatives",
}


def test_the_primitive_objects_fnx_lacks_are_the_known_ones():
    theirs = {n for n in dir(jax.lax) if n.endswith("_p")}
    assert theirs - set(dir(lax)) == set(NOT_IN_FNX)


def test_device_put_inside_transformations_is_the_identity_on_values(rng):
    x = rng.standard_normal(3)
    np.testing.assert_array_equal(np.asarray(fnx.jit(lambda x: fnx.device_put(x) * 2)(x)), 2 * x)
    assert float(fnx.grad(lambda x: fnx.device_put(x, fnx.devices()[0]) * 3.0)(x[0])) == 3.0
