"""fnx.debug.log (records, levels, source lines, format checks as JAX's) and the sharding views
fnx.debug.inspect_array_sharding and visualize_array_sharding, on 4 virtual CPU devices."""
import logging

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx.sharding import NamedSharding, PartitionSpec as P, SingleDeviceSharding
from conftest import virtual_cpu_devices

jax = pytest.importorskip("jax")


@pytest.fixture(autouse=True, scope="module")
def four_devices():
    with virtual_cpu_devices(4):
        yield


@pytest.fixture
def records():
    """The records fnx.debug.log hands to its logger."""
    seen, handler = [], logging.Handler()
    handler.emit = seen.append
    logger = logging.getLogger("fnx.debug")
    logger.addHandler(handler)
    yield seen
    logger.removeHandler(handler)


def _line_of(marker):
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


def test_log_inside_jit_vmap_and_grad(rng, records):
    x = rng.standard_normal(3)

    @fnx.jit
    def f(x):
        fnx.debug.log("x={} total={t}", x, t=jnp.sum(x))   # the jit line
        return x * 2
    f(x)
    f(x)                                  # logged on every call, not only while tracing
    fnx.vmap(lambda r: (fnx.debug.log("row {}", r), r)[1])(x.reshape(3, 1))
    fnx.grad(lambda v: (fnx.debug.log("primal {}", v), v * v)[1])(float(x[0]))
    fnx.debug.log("plain", x[1], skip_format_check=True)
    messages = [r.getMessage() for r in records]
    want = [f"x={x} total={np.sum(x)}"] * 2 + [f"row {x[i:i + 1]}" for i in range(3)] + \
        [f"primal {np.float64(x[0])}", f"plain {np.float64(x[1])}"]
    assert messages == want
    assert {(r.levelno, r.name) for r in records} == {(logging.INFO, "fnx.debug")}
    assert records[0].pathname == __file__ and records[0].lineno == _line_of("# the jit line")


def test_log_is_not_filtered_by_the_logger_level(records):
    logger = logging.getLogger("fnx.debug")
    old = logger.level
    logger.setLevel(logging.ERROR)         # JAX hands its record over without this check
    try:
        fnx.debug.log("{}", 1)
    finally:
        logger.setLevel(old)
    assert [r.getMessage() for r in records] == ["1"]


@pytest.mark.parametrize("fmt, args, kwargs, error", [
    ("{}", (1, 2), {}, ValueError),             # an unused positional argument
    ("{a}", (), {"a": 1, "b": 2}, ValueError),  # an unused keyword argument
    ("{} {}", (1,), {}, IndexError),            # a field without its argument
    ("{a}", (), {}, KeyError),
])
def test_log_format_errors_match_jax(fmt, args, kwargs, error):
    with pytest.raises(error):
        fnx.debug.log(fmt, *args, **kwargs)
    with pytest.raises(error):
        jax.debug.log(fmt, *args, **kwargs)


def test_inspect_array_sharding(rng):
    mesh = fnx.make_mesh((2, 2), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))
    x = fnx.device_put(jnp.asarray(rng.standard_normal((4, 6))), sharding)
    seen = []
    fnx.debug.inspect_array_sharding({"a": x, "b": [jnp.ones(2)]}, callback=seen.append)
    assert seen[0] == sharding and isinstance(seen[1], SingleDeviceSharding)
    seen.clear()
    # vmap and grad look at the batched value and the primal, as JAX's rules do
    fnx.vmap(lambda r: fnx.debug.inspect_array_sharding(r, callback=seen.append))(x)
    fnx.grad(lambda v: (fnx.debug.inspect_array_sharding(v, callback=seen.append),
                        jnp.sum(v))[1])(x)
    assert seen == [sharding, sharding]
    seen.clear()

    @fnx.jit
    def f(v):
        fnx.debug.inspect_array_sharding(v, callback=seen.append)
        return v * 2
    f(x)
    f(x)                                  # once per compilation, as JAX
    assert seen == [SingleDeviceSharding(fnx.devices()[0])]


def _cells(table):
    """The non-empty cell texts of each line of a drawn table."""
    return [[c.strip() for c in line.strip("│").split("│") if c.strip()]
            for line in table.splitlines() if "│" in line and line.strip("│ ")]


@pytest.mark.parametrize("shape, spec, mesh_shape, rows", [
    ((8, 8), P("x", "y"), (2, 2), [["CPU 0", "CPU 1"], ["CPU 2", "CPU 3"]]),
    ((8, 8), P("y", "x"), (2, 2), [["CPU 0", "CPU 2"], ["CPU 1", "CPU 3"]]),
    ((8, 4), P(None, "x"), (2, 2), [["CPU 0,1", "CPU 2,3"]]),
    ((8,), P(("x", "y")), (2, 2), [["CPU 0", "CPU 1", "CPU 2", "CPU 3"]]),
    ((8,), P(), (4,), [["CPU 0,1,2,3"]]),
])
def test_visualize_array_sharding(capsys, rng, shape, spec, mesh_shape, rows):
    names = ("x", "y")[:len(mesh_shape)]
    mesh = fnx.make_mesh(mesh_shape, names)
    x = fnx.device_put(jnp.asarray(rng.standard_normal(shape)), NamedSharding(mesh, spec))
    fnx.debug.visualize_array_sharding(x)
    out = capsys.readouterr().out
    assert _cells(out) == rows
    lines = out.rstrip("\n").splitlines()
    assert len({len(line) for line in lines}) == 1       # a rectangle
    assert lines[0].startswith("┌") and lines[-1].startswith("└")
    if len(shape) == 1:
        assert len(lines) == 3                          # one line of cells, as JAX's
    else:   # a row of height h (of 10) takes h - 2 lines split around its text, as JAX's
        per_row = {1: 9, 2: 4}[len(rows)]
        assert sum("│" in line for line in lines) == per_row * len(rows)


def test_visualize_sharding_refuses_other_ranks():
    mesh = fnx.make_mesh((2,), ("x",))
    with pytest.raises(ValueError, match="1 and 2 dimensions"):
        fnx.debug.visualize_sharding((2, 2, 2), NamedSharding(mesh, P("x")))
