"""Every elementwise primitive is one row in each backend table: a NumPy impl (checked
against NumPy's own function on fresh inputs where one exists) and a CUDA C expression (so the
GPU fuses it instead of dropping it to a slow eager step)."""
import math

import numpy as np
import pytest

import fnx
from fnx.backends import numpy_backend
from fnx.core import lax as core_lax
from fnx.core import passes
from fnx.core.core import ShapedArray
from fnx.cuda import elementwise as cuda_elementwise

ELEMENTWISE = core_lax.elementwise_primitives()


def _accepted_dtype(p):
    """A dtype the primitive takes (its abstract_eval accepts it)."""
    for dt in (np.float32, np.int32, np.bool_):
        aval = ShapedArray((3,), dt)
        try:
            p.abstract_eval(aval, aval, y=2) if p is core_lax.integer_pow_p else \
                p.abstract_eval(*[aval] * _arity(p))
        except Exception:
            continue
        return np.dtype(dt)
    raise AssertionError(f"{p} accepts none of float32, int32, bool")


def _arity(p):
    return 1 if p in cuda_elementwise.UNARY or p is core_lax.integer_pow_p else 2


def test_the_registry_holds_the_elementwise_primitives():
    names = {p.name for p in ELEMENTWISE}
    assert {"sin", "exp", "add", "lt", "shift_left", "erf_inv"} <= names
    assert not names & {"reduce_sum", "dot_general", "broadcast_in_dim"}


@pytest.mark.parametrize("p", ELEMENTWISE, ids=lambda p: p.name)
def test_every_elementwise_primitive_has_a_numpy_impl(p):
    assert p in numpy_backend.impls, f"{p.name} has no NumPy impl (fnx/backends/numpy_backend.py)"


@pytest.mark.parametrize("p", ELEMENTWISE, ids=lambda p: p.name)
def test_every_elementwise_primitive_has_a_cuda_expression(p):
    dt = _accepted_dtype(p)
    params = {"y": 2} if p is core_lax.integer_pow_p else {}
    args = ["a0", "a1"][:_arity(p)]
    expr = cuda_elementwise.emit(p, args, dt, "float", params)
    assert isinstance(expr, str) and all(a in expr for a in args), expr
    assert p in passes.ELEMENTWISE     # the GPU's fusion walk groups it


@pytest.mark.parametrize("name", ["sin", "exp", "log1p", "tanh", "atan", "erf", "sqrt"])
def test_one_statement_wrappers_match_numpy(name):
    rng = np.random.default_rng()
    x = rng.uniform(0.1, 0.9, size=(5,))
    if name == "erf":
        ref = np.vectorize(math.erf)
    else:
        ref = getattr(np, {"atan": "arctan"}.get(name, name))
    wrapper = getattr(core_lax, name)
    assert wrapper.__name__ == name and wrapper.__doc__
    np.testing.assert_allclose(np.asarray(wrapper(x)), ref(x), rtol=1e-12)


@pytest.mark.parametrize("name, ref", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
    ("rem", np.fmod), ("pow", np.power), ("max", np.maximum), ("min", np.minimum),
    ("atan2", np.arctan2), ("nextafter", np.nextafter), ("lt", np.less),
    ("ge", np.greater_equal)])
def test_one_statement_binary_wrappers_match_numpy(name, ref):
    rng = np.random.default_rng()
    x, y = rng.uniform(0.1, 2.0, size=(2, 5))
    wrapper = getattr(fnx.lax, name)   # fnx.lax.pow is fnx.core.lax.pow_
    assert wrapper.__name__ == name and wrapper.__doc__
    np.testing.assert_allclose(np.asarray(wrapper(x, y)), ref(x, y), rtol=1e-12)


def test_binary_defines_the_rules_it_is_given():
    # linear in both operands: a transpose and the linear flag; piecewise constant: zero tangents
    assert core_lax.add_p.is_linear and core_lax.add_p.transpose is not None
    assert not core_lax.mul_p.is_linear and core_lax.mul_p.transpose is not None
    x = np.array([0.5, 1.5])
    _, t = fnx.jvp(lambda a: core_lax.lt(a, 1.0), (x,), (np.ones(2),))
    assert not np.asarray(t).any()
    _, t = fnx.jvp(lambda a: core_lax.atan2(a, 2.0), (x,), (np.ones(2),))
    np.testing.assert_allclose(np.asarray(t), 2.0 / (x ** 2 + 4.0), rtol=1e-12)
