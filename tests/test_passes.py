"""The jaxpr passes jit runs before lowering (inlining, constant folding, simplification, CSE,
DCE) and the fusion groups: each pass on small programs, results kept, types kept."""
import math

import numpy as np
import pytest

import fnx
import fnx.lax as lax
import fnx.nn as nn
import fnx.numpy as jnp
from fnx.core import lax as core_lax
from fnx.core import passes
from fnx.cuda import fusion, plan
from fnx.core.core import ShapedArray
from fnx.core.jaxpr import (Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr, eval_jaxpr,
                            jaxpr_with_consts_as_args, typecheck_jaxpr)

from op_specs import SPECS, SPEC_IDS

F32 = np.float32


class _Builder:
    """Hand-written jaxprs: ``b.eq(prim, *ins, **params)`` appends an equation whose output
    aval is the primitive's abstract evaluation."""

    def __init__(self, *in_avals):
        self.invars = [Var(a) for a in in_avals]
        self.eqns = []

    def eq(self, prim, *ins, **params):
        out = Var(prim.abstract_eval(*[v.aval for v in ins], **params))
        self.eqns.append(JaxprEqn(ins, [out], prim, params))
        return out

    def jaxpr(self, *outs):
        j = Jaxpr([], self.invars, list(outs), self.eqns)
        typecheck_jaxpr(j)
        return j


def _aval(shape=(), dtype=F32, weak=False):
    return ShapedArray(shape, dtype, weak)


def _lit(value, dtype=F32, weak=True):
    return Literal(np.dtype(dtype).type(value), _aval((), dtype, weak))


def _prims(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def _run_checked(pass_fn, jaxpr):
    out = pass_fn(jaxpr)
    typecheck_jaxpr(out)
    return out


# ---------------------------------------------------------------------------------------------
# CSE


def test_cse_merges_equal_equations():
    j = fnx.make_jaxpr(lambda x: jnp.sin(x) * jnp.sin(x) + jnp.sin(x))(jnp.ones(3)).jaxpr
    assert _prims(j).count("sin") == 3
    out = _run_checked(passes.cse, j)
    assert _prims(out) == ["sin", "mul", "add"]
    assert "mul b b" in str(out)


def test_cse_compares_literals_by_value_dtype_and_sign():
    b = _Builder(_aval((3,)))
    (x,) = b.invars
    outs = [b.eq(core_lax.add_p, x, _lit(v)) for v in (1.0, 1.0, 0.0, -0.0)]
    j = b.jaxpr(*outs)
    out = _run_checked(passes.cse, j)
    assert len(out.eqns) == 3      # the two "+ 1.0" merge; 0.0 and -0.0 differ
    assert out.outvars[0] is out.outvars[1]


def test_cse_needs_equal_params():
    b = _Builder(_aval((2, 3)))
    (x,) = b.invars
    s0 = b.eq(core_lax.reduce_sum_p, x, axes=(0,))
    s0b = b.eq(core_lax.reduce_sum_p, x, axes=(0,))
    s1 = b.eq(core_lax.reduce_sum_p, x, axes=(1,))
    out = _run_checked(passes.cse, b.jaxpr(s0, s0b, s1))
    assert len(out.eqns) == 2


def test_cse_never_merges_effects():
    def f(x):
        fnx.debug.print("x={}", x)
        fnx.debug.print("x={}", x)
        return x + 1
    j = fnx.make_jaxpr(f)(1.0).jaxpr
    out = _run_checked(passes.optimize, j)
    assert _prims(out).count("debug_callback") == 2


def test_cse_compares_jaxpr_params_by_identity():
    j = fnx.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x)
                       + lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0).jaxpr
    conds = [e for e in j.eqns if e.primitive.name == "cond"]
    assert len(conds) == 2
    out = _run_checked(passes.cse, j)      # equal branches, but distinct jaxpr objects
    assert _prims(out).count("cond") == 2
    # the same equation repeated (same branch objects) is merged
    k = j.eqns.index(conds[0])
    dup = conds[0].replace(outvars=[Var(v.aval) for v in conds[0].outvars])
    eqns = j.eqns[:k + 1] + [dup] + j.eqns[k + 1:]
    j2 = Jaxpr(j.constvars, j.invars, j.outvars + dup.outvars, eqns)
    out2 = _run_checked(passes.cse, j2)
    assert _prims(out2).count("cond") == 2 and out2.outvars[-1] is conds[0].outvars[0]


def test_cse_keeps_constant_broadcasts_apart():
    # fused consumers recompute a broadcast constant; sharing one would put it in memory
    j = fnx.make_jaxpr(lambda x: jnp.maximum(x, 0.0) + jnp.minimum(x, 0.0))(jnp.ones(4)).jaxpr
    before = _prims(j).count("broadcast_in_dim")
    assert _prims(_run_checked(passes.cse, j)).count("broadcast_in_dim") == before


# ---------------------------------------------------------------------------------------------
# Constant folding


def test_fold_constants_scalar_literals():
    b = _Builder(_aval())
    (x,) = b.invars
    six = b.eq(core_lax.mul_p, _lit(2.0), _lit(3.0))
    e = b.eq(core_lax.exp_p, _lit(0.0))
    y = b.eq(core_lax.add_p, x, six)
    z = b.eq(core_lax.mul_p, y, e)
    out = _run_checked(passes.fold_constants, b.jaxpr(z))
    assert _prims(out) == ["add", "mul"]
    assert "add a 6.0" in str(out) and "mul b 1.0" in str(out)
    assert out.eqns[0].invars[1].aval == six.aval      # the folded literal keeps the type


def test_fold_constants_chains_and_keeps_int_semantics():
    b = _Builder(_aval((), np.int32))
    (x,) = b.invars
    q = b.eq(core_lax.div_p, _lit(-7, np.int32, False), _lit(2, np.int32, False))
    r = b.eq(core_lax.neg_p, q)
    y = b.eq(core_lax.add_p, x, r)
    out = _run_checked(passes.fold_constants, b.jaxpr(y))
    assert _prims(out) == ["add"] and "add a 3" in str(out)    # -7 / 2 truncates to -3


def test_fold_constants_leaves_non_scalars_and_effects():
    j = fnx.make_jaxpr(lambda x: x + jnp.full((3,), 2.0) * 3.0)(jnp.ones(3)).jaxpr
    assert passes.fold_constants(j) is j


def test_folding_then_simplifying_removes_identities():
    b = _Builder(_aval((3,)))
    (x,) = b.invars
    one = b.eq(core_lax.sub_p, _lit(3.0), _lit(2.0))
    y = b.eq(core_lax.mul_p, x, one)
    out = _run_checked(passes.optimize, b.jaxpr(y))
    assert out.eqns == [] and out.outvars == [x]


# ---------------------------------------------------------------------------------------------
# Algebraic simplification


@pytest.mark.parametrize("build", [
    lambda b, x: b.eq(core_lax.mul_p, x, _lit(1.0)),
    lambda b, x: b.eq(core_lax.mul_p, _lit(1.0), x),
    lambda b, x: b.eq(core_lax.add_p, x, _lit(0.0)),
    lambda b, x: b.eq(core_lax.add_p, _lit(0.0), x),
    lambda b, x: b.eq(core_lax.sub_p, x, _lit(0.0)),
    lambda b, x: b.eq(core_lax.div_p, x, _lit(1.0)),
    lambda b, x: b.eq(core_lax.neg_p, b.eq(core_lax.neg_p, x)),
    lambda b, x: b.eq(core_lax.convert_element_type_p, x, new_dtype=np.dtype(F32),
                      weak_type=False),
    lambda b, x: b.eq(core_lax.reshape_p, x, new_sizes=(2, 3)),
    lambda b, x: b.eq(core_lax.transpose_p, x, permutation=(0, 1)),
    lambda b, x: b.eq(core_lax.transpose_p, b.eq(core_lax.transpose_p, x, permutation=(1, 0)),
                      permutation=(1, 0)),
    lambda b, x: b.eq(core_lax.broadcast_in_dim_p, x, shape=(2, 3), broadcast_dimensions=(0, 1)),
    lambda b, x: b.eq(core_lax.mul_p, x, b.eq(core_lax.broadcast_in_dim_p, _lit(1.0, weak=False),
                                              shape=(2, 3), broadcast_dimensions=())),
    lambda b, x: b.eq(core_lax.select_n_p, b.eq(core_lax.gt_p, x, _lit(0.0)), x, x),
    lambda b, x: b.eq(core_lax.integer_pow_p, x, y=1),
    lambda b, x: b.eq(core_lax.log_p, b.eq(core_lax.exp_p, x)),
], ids=["x*1", "1*x", "x+0", "0+x", "x-0", "x/1", "neg-neg", "convert-same", "reshape-same",
        "transpose-identity", "transpose-twice", "broadcast-same", "x*ones", "select-same",
        "pow1", "log-exp"])
def test_simplify_removes_identities(build):
    b = _Builder(_aval((2, 3)))
    (x,) = b.invars
    j = b.jaxpr(build(b, x))
    out = _run_checked(passes.optimize, j)
    assert out.eqns == [] and out.outvars == [x], str(out)


def test_simplify_keeps_results_whose_type_would_change():
    b = _Builder(_aval(), _aval((), F32, weak=True))
    x, w = b.invars
    ones = b.eq(core_lax.broadcast_in_dim_p, _lit(1.0, weak=False), shape=(3,),
                broadcast_dimensions=())
    y = b.eq(core_lax.mul_p, x, ones)               # f32[] * f32[3]: the shape grows
    z = b.eq(core_lax.convert_element_type_p, w, new_dtype=np.dtype(F32), weak_type=False)
    sub_zero = b.eq(core_lax.sub_p, _lit(0.0), x)    # 0 - x is not x
    out = _run_checked(passes.simplify, b.jaxpr(y, z, sub_zero))
    assert _prims(out) == ["broadcast_in_dim", "mul", "convert_element_type", "sub"]


def test_simplify_keeps_stop_gradient():
    # the optimized jaxpr of a jitted function is still differentiated (grad of jit)
    j = fnx.make_jaxpr(lambda x: lax.stop_gradient(x) * x)(1.0).jaxpr
    assert "stop_gradient" in _prims(passes.optimize(j))
    g = fnx.grad(fnx.jit(lambda x: lax.stop_gradient(x) * x))(3.0)
    assert float(g) == 3.0


def test_simplify_merges_reshapes_and_transposes():
    b = _Builder(_aval((2, 3, 4)))
    (x,) = b.invars
    r = b.eq(core_lax.reshape_p, b.eq(core_lax.reshape_p, x, new_sizes=(6, 4)), new_sizes=(24,))
    t = b.eq(core_lax.transpose_p, b.eq(core_lax.transpose_p, x, permutation=(1, 2, 0)),
             permutation=(0, 2, 1))
    j = b.jaxpr(r, t)
    out = _run_checked(passes.optimize, j)
    assert _prims(out) == ["reshape", "transpose"]
    v = np.arange(24, dtype=F32).reshape(2, 3, 4)
    for a, e in zip(eval_jaxpr(out, [], v), eval_jaxpr(j, [], v)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


@pytest.mark.parametrize("perm_x,perm_w,folded", [
    ((1, 0, 2), (1, 0), 2),     # both fold: the free axes keep their order
    ((2, 1, 0), (1, 0), 1),     # x's free axes (5, 3) would come out swapped: x stays
])
def test_simplify_folds_transposes_into_products(rng, perm_x, perm_w, folded):
    x0 = rng.standard_normal((3, 4, 5)).astype(F32)
    x = np.transpose(x0, np.argsort(perm_x))        # transposed by perm_x it is x0's layout
    w = rng.standard_normal((6, 4)).astype(F32)
    b = _Builder(_aval(x.shape), _aval(w.shape))
    xt = b.eq(core_lax.transpose_p, b.invars[0], permutation=perm_x)
    wt = b.eq(core_lax.transpose_p, b.invars[1], permutation=perm_w)
    d = b.eq(core_lax.dot_general_p, xt, wt, dimension_numbers=(((1,), (0,)), ((), ())),
             precision=None, preferred_element_type=None)
    j = b.jaxpr(d)
    out = _run_checked(passes.optimize, j)
    assert _prims(out).count("transpose") == 2 - folded
    np.testing.assert_allclose(np.asarray(eval_jaxpr(out, [], x, w)[0]),
                               np.einsum("ikl,jk->ilj", x0, w), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Inlining, DCE, the driver


@pytest.mark.x32
def test_inline_nested_jit_calls():
    inner = fnx.jit(lambda x: jnp.sin(x) * 2.0)
    j = fnx.make_jaxpr(lambda x: inner(x) + inner(x + 1.0))(jnp.ones(3)).jaxpr
    assert _prims(j).count("jit") == 2
    out = _run_checked(passes.inline_calls, j)   # typecheck: each copy has fresh variables
    assert "jit" not in _prims(out) and _prims(out).count("sin") == 2
    x = np.linspace(-1, 1, 3).astype(F32)
    np.testing.assert_array_equal(np.asarray(eval_jaxpr(out, [], x)[0]),
                                  np.asarray(eval_jaxpr(j, [], x)[0]))


def test_inlined_equations_keep_their_source_lines():
    inner = fnx.jit(lambda x: jnp.tanh(x))
    j = fnx.make_jaxpr(lambda x: inner(x) * 3.0)(jnp.ones(2)).jaxpr
    out = passes.inline_calls(j)
    tanh = next(e for e in out.eqns if e.primitive.name == "tanh")
    assert tanh.source_info is not None and tanh.source_info.filename.endswith("test_passes.py")


def test_passes_keep_source_info():
    j = fnx.make_jaxpr(lambda x: jnp.exp(x) * 1.0 + jnp.exp(x))(jnp.ones(2)).jaxpr
    infos = {e.primitive.name: e.source_info for e in j.eqns}
    out = passes.optimize(j)
    for e in out.eqns:
        assert e.source_info == infos[e.primitive.name]


def test_dce_drops_unused_and_keeps_effects():
    def f(x):
        jnp.cos(x) * 3.0                    # dead
        fnx.debug.print("{}", x)
        return x + 1.0
    j = fnx.make_jaxpr(f)(1.0).jaxpr
    out = _run_checked(passes.dce, j)
    assert _prims(out) == ["debug_callback", "add"]
    assert passes.dce(out) is out


def test_optimize_reaches_a_fixed_point_through_all_passes():
    inner = fnx.jit(lambda x, y: x * y)

    def f(x):
        a = inner(x, 1.0)                    # inlined, then x * 1 -> x
        b = jnp.sin(a) + jnp.sin(x)          # then the two sins are one
        return -(-b)
    j = fnx.make_jaxpr(f)(jnp.ones(3)).jaxpr
    out = _run_checked(passes.optimize, j)
    assert _prims(out) == ["sin", "add"]
    assert passes.optimize(out) is out


def test_passes_return_their_argument_when_nothing_changes():
    j = fnx.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3)).jaxpr
    for p in passes.PASSES:
        assert p(j) is j


def test_passes_treat_control_flow_opaquely():
    def f(x):
        y = lax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v + 1.0, x)
        z = lax.fori_loop(0, 3, lambda i, v: v * 1.5, y)
        w = lax.while_loop(lambda v: v[0] < 100.0, lambda v: v * 2.0 + 0.0, z)
        c, ys = lax.scan(lambda c, a: (c + a, c * a), 0.0, w)
        return c + jnp.sum(ys) * 1.0 + jnp.sum(ys)
    x = np.array([0.5, -1.0, 2.0], F32)
    j = fnx.make_jaxpr(f)(x).jaxpr
    out = j
    for p in passes.PASSES:
        out = _run_checked(p, out)
    out = _run_checked(passes.optimize, out)
    assert len(out.eqns) < len(j.eqns)
    for a, e in zip(eval_jaxpr(out, [], x), eval_jaxpr(j, [], x)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fnx.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)


def _grad_program(spec, args):
    """``(closed jaxpr, its arguments)``: the gradient of ``sum(spec.fn(*args) ** 2)`` with
    respect to the float arguments."""
    fidx = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]

    def loss(*fa):
        full = list(args)
        for i, v in zip(fidx, fa):
            full[i] = v
        return jnp.sum(spec.fn(*full) ** 2)
    fargs = [args[i] for i in fidx]
    return fnx.make_jaxpr(fnx.grad(loss, tuple(range(len(fidx)))))(*fargs), fargs


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_every_pass_typechecks_and_keeps_results(spec):
    args = spec.draw(np.random.default_rng(23))
    closed, fargs = [fnx.make_jaxpr(spec.fn)(*args)], None
    if spec.grad:
        program, fargs = _grad_program(spec, args)
        closed.append(program)
    for n, c in enumerate(closed):
        jx = jaxpr_with_consts_as_args(c)
        out = jx
        for p in passes.PASSES:
            out = _run_checked(p, out)
        a = [*c.consts, *(args if n == 0 else fargs)]
        for got, want in zip(eval_jaxpr(out, [], *a), eval_jaxpr(jx, [], *a)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# jit runs the passes


def gpu_groups(lowered):
    """The launches the GPU would run ``lowered``'s program as (on a CPU machine too)."""
    return plan.fusion_groups(lowered.traced.jaxpr)


def gpu_text(lowered):
    """``lowered.as_text()`` as the GPU backend prints it."""
    from fnx.core.jaxpr import _Namer, pp_jaxpr
    namer = _Namer()
    jaxpr = lowered.traced.jaxpr
    return pp_jaxpr(jaxpr, namer=namer) + "\n" + plan.pp_fusion_groups(
        jaxpr, gpu_groups(lowered), namer)


def test_as_text_prints_the_fusion_groups_of_the_backend_it_runs_on():
    lowered = fnx.jit(lambda x: jnp.exp(x) * 2.0).lower(jnp.ones(3))
    # the CPU runs the jaxpr's operations as they are: no fusion groups to print
    assert lowered.fusion_groups == [] and "GPU launches" not in lowered.as_text()
    assert [g.kind for g in gpu_groups(lowered)] == ["elementwise"]


def test_jit_lowers_the_optimized_jaxpr():
    f = lambda x: jnp.sin(x) * 1.0 + jnp.sin(x)  # noqa: E731
    x = jnp.ones(3)
    text = fnx.jit(f).lower(x).as_text()
    assert text.count("= sin") == 1 and "mul" not in text
    with fnx.config.option("jit_optimize", False):
        plain = fnx.jit(f).lower(x).as_text()
    assert plain.count("= sin") == 2
    np.testing.assert_allclose(np.asarray(fnx.jit(f)(x)), np.asarray(f(x)))


def test_jit_inlines_nested_jit():
    inner = fnx.jit(lambda x: jnp.exp(x) - 1.0)
    outer = fnx.jit(lambda x: inner(x) * inner(x))
    x = jnp.linspace(0, 1, 5)
    lowered = outer.lower(x)
    text = lowered.as_text()
    assert "jit[" not in text and text.split("GPU launches")[0].count("exp") == 1
    np.testing.assert_allclose(np.asarray(outer(x)), np.asarray((jnp.exp(x) - 1) ** 2),
                               rtol=1e-6)


def test_jit_result_may_be_a_literal_or_an_argument():
    f = fnx.jit(lambda x: (x * 1.0, 2.0 * 3.0 + 0.0 * 1.0, jnp.float32(1.5) + 2.0))
    a, b, c = f(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(a), [1.0, 1.0])
    assert float(b) == 6.0 and float(c) == 3.5
    a2, _, _ = f(jnp.ones(2))
    assert a2.shape == (2,)


# ---------------------------------------------------------------------------------------------
# Fusion groups


def _mlp_step():
    sizes, batch = [16, 12, 12, 5], 8
    rng = np.random.default_rng(0)
    params = [(jnp.asarray(rng.standard_normal((m, n)).astype(F32)), jnp.zeros(n))
              for m, n in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.standard_normal((batch, sizes[0])).astype(F32))
    y = jnp.asarray(rng.integers(0, sizes[-1], batch).astype(np.int32))

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = nn.relu(h @ w + b)
        w, b = params[-1]
        logp = nn.log_softmax(h @ w + b)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(params, x, y):
        v, g = fnx.value_and_grad(loss)(params, x, y)
        return v, fnx.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g)
    return fnx.jit(step), (params, x, y)


def _check_partition(jaxpr, groups):
    """The launches run in order: each reads only program inputs and earlier launches'
    outputs, writes only values it computes, and together they make every result."""
    available = set(jaxpr.invars) | set(jaxpr.constvars)
    for g in groups:
        assert all(v in available for v in g.inputs), g
        assert set(g.outputs) <= {v for e in g.eqns for v in e.outvars}, g
        available |= set(g.outputs)
    assert all(v in available for v in jaxpr.outvars if isinstance(v, Var))


@pytest.mark.x32
def test_mlp_step_groups_have_dense_layers_and_rows():
    step, args = _mlp_step()
    lowered = step.lower(*args)
    jaxpr, groups = lowered.traced.jaxpr, gpu_groups(lowered)
    _check_partition(jaxpr, groups)
    kinds = [g.kind for g in groups]
    dense = [g for g in groups if g.kind == "dense"]
    assert [g.activation for g in dense] == ["relu", "relu"]
    assert dense[0].shape == (8, 12) and kinds.count("gradient_step") == 3
    assert "rows" in kinds and "columns" in kinds and "gradient_step" in kinds
    rows = [g for g in groups if g.kind == "rows"]
    picks = [e.primitive.name for g in rows for e in g.eqns]
    # the logits, a narrow product, are made inside the softmax's row kernel
    assert picks[0] == "dense" and "reduce_max" in picks
    # the loss, its mean over the batch and its gradient: one row group (sink_totals)
    assert len(rows) == 1, plan.pp_fusion_groups(jaxpr, groups)
    assert any(e.primitive.name == "reduce_sum" and e.outvars[0].aval.shape == ()
               for e in rows[0].eqns)
    assert any(v.aval.shape == (8, 5) for v in rows[0].outputs)     # the logits' gradient
    text = gpu_text(lowered)
    assert "GPU launches" in text and "dense[relu]" in text and ": rows [8,5]" in text
    assert text.index("GPU launches") > text.index("in (")


def test_sink_totals_moves_a_mean_past_row_work_only():
    def f(x, w):
        loss = jnp.mean(jnp.sum(x * x, -1))         # a total
        g = jnp.exp(x) * 2.0                          # row work that does not read it
        return loss, g @ w, loss * 3.0               # a product: the total stays before it
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)
    jaxpr = fnx.make_jaxpr(f)(x, w).jaxpr
    moved = fusion.sink_totals(jaxpr)
    names = [e.primitive.name for e in moved.eqns]
    first_total = next(i for i, e in enumerate(moved.eqns) if e.primitive.name == "reduce_sum"
                       and e.outvars[0].aval.shape == ())
    assert names.index("exp") < first_total < names.index("dot_general"), names
    assert fusion.sink_totals(moved) is moved             # a fixed point
    want = eval_jaxpr(jaxpr, [], x, w)
    for a, b in zip(eval_jaxpr(moved, [], x, w), want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_distances_to_argmin_are_one_row_group_after_their_product():
    """k-means: ``|x|^2 + |c|^2``, broadcast to every pair, is not written out ahead of the
    product (nor read as a GEMM's C operand); one row group adds it to ``-2 x.c`` and takes each
    row's argmin and min and their mean."""
    def f(c, x):
        d = jnp.sum(x * x, 1, keepdims=True) + jnp.sum(c * c, 1) - 2 * (x @ c.T)
        return jnp.argmin(d, 1), jnp.mean(jnp.min(d, 1))
    rng = np.random.default_rng(0)
    c, x = (rng.standard_normal(s).astype(np.float32) for s in ((7, 3), (40, 3)))
    lowered = fnx.jit(f).lower(c, x)
    jaxpr, groups = lowered.traced.jaxpr, gpu_groups(lowered)
    _check_partition(jaxpr, groups)
    assert [g.kind for g in groups].count("gradient_step") == 0
    (big,) = [g for g in groups if g.kind == "rows" and g.shape == (40, 7)]
    names = [e.primitive.name for e in big.eqns]
    assert {"add", "sub", "argmin", "reduce_min", "div"} <= set(names), names
    assert not [g for g in groups if g.kind == "elementwise" and g.shape == (40, 7)]
    moved = plan.rewrite(jaxpr)
    want = eval_jaxpr(jaxpr, [], c, x)
    got = eval_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, moved), [], c, x)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def _clipped_per_example_step(w, x, y):
    """DP-SGD's core: each example's gradient clipped to norm 1, then averaged."""
    def clipped(w, x, y):
        g = fnx.grad(lambda w: jnp.sum((jnp.tanh(x @ w) - y) ** 2))(w)
        return g * jnp.minimum(1.0, 1.0 / (jnp.sqrt(jnp.sum(g * g)) + 1e-6))
    return jnp.mean(fnx.vmap(clipped, in_axes=(None, 0, 0))(w, x, y), axis=0)


def test_per_example_gradients_are_never_written_out():
    """vmap of a weight gradient is a batched outer product: the GPU computes it where its
    norm and its clipped sum over the batch read it, so no launch writes (batch, in, out)."""
    rng = np.random.default_rng(0)
    w, x, y = (rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (8, 6), (8, 5)))
    lowered = fnx.jit(_clipped_per_example_step).lower(w, x, y)
    jaxpr, groups = lowered.traced.jaxpr, gpu_groups(lowered)
    _check_partition(jaxpr, groups)
    assert not [g for g in groups if g.kind == "product"], plan.pp_fusion_groups(jaxpr, groups)
    assert not [v for g in groups for v in g.outputs if v.aval.shape == (8, 6, 5)]
    kinds = {g.kind for g in groups if g.shape == (8, 6, 5)}
    assert kinds == {"reduce", "columns"}, plan.pp_fusion_groups(jaxpr, groups)
    moved = plan.rewrite(jaxpr)
    want = eval_jaxpr(jaxpr, [], w, x, y)
    got = eval_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, moved), [], w, x, y)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)


def test_per_example_norms_and_clipped_sums_become_contractions():
    """At sizes where the products outnumber their factors, the per-example norm is a product
    of two row sums and the clipped sum over the batch one GEMM: nothing the size of
    (batch, in, out) is computed at all."""
    rng = np.random.default_rng()
    w, x, y = (rng.standard_normal(s).astype(np.float32) for s in ((64, 32), (16, 64), (16, 32)))
    lowered = fnx.jit(_clipped_per_example_step).lower(w, x, y)
    jaxpr, groups = lowered.traced.jaxpr, gpu_groups(lowered)
    _check_partition(jaxpr, groups)
    assert not [g for g in groups if g.shape == (16, 64, 32)], plan.pp_fusion_groups(jaxpr, groups)
    moved = plan.rewrite(jaxpr)
    assert [e for e in moved if e.primitive is core_lax.dot_general_p
            and e.outvars[0].aval.shape == (64, 32) and e.params["dimension_numbers"][0][0]]
    want = _clipped_per_example_step(*(a.astype(np.float64) for a in (w, x, y)))
    got = eval_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, moved), [], w, x, y)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("f,shapes", [
    (lambda c, x, d: (c[:, None, None] * x[:, :, None] * d[:, None, :]).sum(0),
     [(8,), (8, 30), (8, 20)]),
    (lambda x, d: ((x[:, :, None] * d[:, None, :]) ** 2).sum((1, 2)), [(8, 30), (8, 20)]),
    (lambda x, d: (2.0 * x[:, :, None] * d[:, None, :]).sum((0, 2)), [(8, 30), (8, 20)]),
    (lambda x, d: (x[:, :, :, None] * d[:, None, :, :]).sum(2), [(8, 30, 40), (8, 40, 20)]),
    (lambda x, d: (x[None, :, :] * d[:, :, None]).sum(1), [(30, 40), (50, 30)]),
    (lambda x, d, e: (x[:, :, None, None] * d[:, None, :, None] * e).sum(0),
     [(8, 30), (8, 20), (1, 1, 1, 5)]),
])
def test_sums_of_products_of_expansions_as_contractions(f, shapes):
    from fnx.cuda.contractions import products_as_contractions
    rng = np.random.default_rng()
    args = [rng.standard_normal(s) for s in shapes]
    closed = fnx.make_jaxpr(f)(*args)
    j = closed.jaxpr
    product_size = max(math.prod(e.outvars[0].aval.shape) for e in j.eqns)
    rewritten = dce_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars,
                                products_as_contractions(j.eqns)))[0]
    assert max(math.prod(e.outvars[0].aval.shape) for e in rewritten.eqns) < product_size
    got = eval_jaxpr(rewritten, closed.consts, *args)
    want = f(*args)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("act,fn", [
    ("relu", lambda z: jnp.maximum(z, 0.0)),
    ("none", lambda z: jnp.where(z > 0, z, 0.0)),     # makes a NaN 0, which the kernels keep
    ("relu", nn.relu),
    ("leaky_relu", lambda z: nn.leaky_relu(z, 0.25)),
    ("tanh", jnp.tanh),
    ("sigmoid", nn.sigmoid),
    ("gelu_tanh", lambda z: nn.gelu(z, approximate=True)),
    ("gelu_erf", lambda z: nn.gelu(z, approximate=False)),
    # gelu's shape with another constant is no gelu: the layer ends at its product
    ("none", lambda z: 0.5 * z * (1 + jnp.tanh(0.8 * (z + 0.044715 * z ** 3)))),
    ("none", lambda z: z),
])
def test_dense_layer_epilogues(act, fn):
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal((4, 6)).astype(F32))
    w = jnp.asarray(rng.standard_normal((6, 3)).astype(F32))
    b = jnp.asarray(rng.standard_normal(3).astype(F32))
    f = fnx.jit(lambda x, w, b: fn(x @ w + b) * 2.0)
    lowered = f.lower(x, w, b)
    jaxpr, groups = lowered.traced.jaxpr, gpu_groups(lowered)
    _check_partition(jaxpr, groups)
    assert groups[0].kind == "dense" and \
        groups[0].activation.split(":")[0] == act, gpu_text(lowered)
    assert set(groups[0].inputs) == set(jaxpr.invars)
    assert groups[0].shape == (4, 3)
    np.testing.assert_allclose(np.asarray(f(x, w, b)), np.asarray(fn(x @ w + b) * 2.0),
                               rtol=1e-5, atol=1e-6)


def test_elementwise_and_reduction_groups():
    f = fnx.jit(lambda x, y: (jnp.sum(jnp.exp(x) * y, axis=0), jnp.tanh(x) + 1.0))
    x = jnp.ones((5, 7))
    lowered = f.lower(x, x)
    groups = gpu_groups(lowered)
    _check_partition(lowered.traced.jaxpr, groups)
    assert [g.kind for g in groups] == ["columns", "elementwise"]
    red = groups[0]
    assert red.shape == (5, 7) and len(red.eqns) == 3


def test_product_read_elsewhere_is_no_dense_layer():
    f = fnx.jit(lambda x, w, b: (x @ w + b, x @ w))
    x, w, b = jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones(4)
    lowered = f.lower(x, w, b)
    _check_partition(lowered.traced.jaxpr, gpu_groups(lowered))
    assert "dense" not in [g.kind for g in gpu_groups(lowered)]


@pytest.mark.x32
def test_gelu_with_its_backward_interleaved_keeps_a_valid_order():
    x, w, b = jnp.ones((4, 6)), jnp.full((6, 3), 0.1), jnp.ones(3)
    g = fnx.jit(fnx.grad(lambda w: jnp.sum(nn.gelu(x @ w + b) ** 2)))
    lowered = g.lower(w)
    groups = gpu_groups(lowered)
    _check_partition(lowered.traced.jaxpr, groups)
    assert groups[0].kind == "dense", gpu_text(lowered)


def test_a_scalar_made_beside_other_scalar_work_is_written_for_later_readers():
    """An RK4 step's time ``i * dt`` is made in the kernel of the vector that first reads it
    (``t * wt``), beside a kernel of other scalar work (the loop counter); later stages read it
    too, so that kernel must write it (it was computed and never stored: a null pointer on the
    GPU, in a neural ODE's ``fori_loop``)."""
    def f(h0, w1, wt, b1, w2, b2):
        def field(t, h):
            return jnp.tanh(h @ w1 + t * wt + b1) @ w2 + b2

        def rk4(i, h):
            t, dt = i * 0.05, 0.05
            k1 = field(t, h)
            k2 = field(t + dt / 2, h + dt / 2 * k1)
            k3 = field(t + dt / 2, h + dt / 2 * k2)
            k4 = field(t + dt, h + dt * k3)
            return h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jnp.sum(lax.fori_loop(0, 20, rk4, h0))
    args = [jnp.ones(s) for s in [(5, 4), (4, 6), 6, 6, (6, 4), 4]]
    lowered = fnx.jit(f).lower(*args)
    (loop,) = [e for e in lowered.traced.jaxpr.eqns if e.primitive.name in ("scan", "while")]
    body = getattr(loop.params["jaxpr"], "jaxpr", loop.params["jaxpr"])
    _check_partition(body, plan.fusion_groups(body))


def test_gpu_code_generators_cover_exactly_the_fusible_primitives():
    """fnx.core.passes names the elementwise primitives; the GPU's code generator must emit
    every one of them, and nothing the fusion walk would leave out of a group."""
    from fnx.core import passes
    from fnx.cuda import elementwise   # imports no CuPy until a kernel is compiled
    assert set(elementwise.ELEMENTWISE) == set(passes.ELEMENTWISE)


def _gpu_fused(f, *args):
    """The equations the GPU lowering runs for ``f``, after it fuses dense layers and
    gradient steps (a pure rewrite of the jaxpr: no GPU needed)."""
    from fnx.cuda.epilogue import fuse_dense_epilogues, fuse_gradient_steps
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    jaxpr = fnx.jit(f).lower(*args).traced.jaxpr
    eqns = decompose(fold_transposed_products(jaxpr))
    return fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)


def _dense_acts(eqns):
    return [e.params["act"] for e in eqns if e.primitive.name == "dense"]


@pytest.mark.parametrize("act,fn", [
    ("relu", nn.relu),
    ("relu", lambda z: jnp.maximum(z, 0.0)),
    ("none", lambda z: jnp.where(z > 0, z, 0.0)),     # makes a NaN 0, which the kernels keep
    ("leaky_relu:0.1", lambda z: nn.leaky_relu(z, 0.1)),
    ("sigmoid", nn.sigmoid),
    ("tanh", jnp.tanh),
    ("gelu_tanh", lambda z: nn.gelu(z, approximate=True)),
    ("gelu_erf", lambda z: nn.gelu(z, approximate=False)),
    ("none", lambda z: z),
])
def test_gpu_dense_layers_take_their_activation(act, fn):
    rng = np.random.default_rng(2)
    x, w, b = (jnp.asarray(rng.standard_normal(s).astype(F32)) for s in [(4, 6), (6, 3), (3,)])
    eqns = _gpu_fused(lambda x, w, b: fn(x @ w + b) * 2.0, x, w, b)
    (got,) = _dense_acts(eqns)
    if act.startswith("leaky_relu:"):      # the slope as the program holds it: float32
        name, slope = got.split(":")
        assert name == "leaky_relu" and float(slope) == pytest.approx(0.1)
    else:
        assert got == act
    names = [e.primitive.name for e in eqns]
    assert "dot_general" not in names
    if act != "none":
        assert not {"select_n", "tanh", "logistic"} & set(names), names


@pytest.mark.x32
def test_gpu_dense_layers_under_grad_keep_the_mask_the_backward_reads():
    """A ReLU layer's ``z > 0`` is recomputed from its output, next to the backward pass that
    reads it; the gradient steps become GEMMs that update the weights."""
    step, args = _mlp_step()
    eqns = _gpu_fused(step.__wrapped__ if hasattr(step, "__wrapped__") else step, *args)
    assert _dense_acts(eqns) == ["relu", "relu", "none"]
    dense_outs = {e.outvars[0] for e in eqns if e.primitive.name == "dense"}
    masks = [e for e in eqns if e.primitive.name == "gt"]
    assert len(masks) == 2 and all(m.invars[0] in dense_outs for m in masks)
    assert sum(e.primitive.name == "gemm_update" for e in eqns) == 3


def test_gpu_layer_whose_biased_product_is_read_again_keeps_it():
    """``z`` read besides its activation (here returned): the layer is a GEMM with its bias,
    and the activation stays a separate step."""
    rng = np.random.default_rng(3)
    x, w, b = (jnp.asarray(rng.standard_normal(s).astype(F32)) for s in [(4, 6), (6, 3), (3,)])

    def f(x, w, b):
        z = x @ w + b
        return jnp.tanh(z), z
    eqns = _gpu_fused(f, x, w, b)
    assert _dense_acts(eqns) == ["none"] and "tanh" in [e.primitive.name for e in eqns]


def test_a_small_product_joins_the_elementwise_work_reading_it():
    """At most SMALL_PRODUCT_K terms per element: the product is computed inside the chain
    that reads it (with the column sum after it), unless its operands are made in that chain."""
    from fnx import lax
    rng = np.random.default_rng(0)
    g, w, h = (jnp.asarray(rng.standard_normal(s).astype(F32)) for s in [(8, 5), (12, 5), (8, 12)])

    def backward(g, w, h):
        gz = jnp.where(h > 0, lax.dot_general(g, w, (((1,), (1,)), ((), ()))), 0.0)
        return gz, gz.sum(0)
    jaxpr = fnx.make_jaxpr(backward)(g, w, h).jaxpr
    groups = plan.fusion_groups(jaxpr)
    assert [grp.kind for grp in groups] == ["columns"], plan.pp_fusion_groups(jaxpr, groups)

    def made_inside(g, w):
        return lax.dot_general(jnp.exp(g), w, (((1,), (1,)), ((), ()))) + 1.0
    jaxpr = fnx.make_jaxpr(made_inside)(g, w).jaxpr
    names = [[e.primitive.name for e in grp.eqns] for grp in plan.fusion_groups(jaxpr)]
    assert names == [["exp"], ["dot_general", "add"]], names     # a second kernel reads exp

    wide = jnp.asarray(rng.standard_normal((8, 17)).astype(F32))
    jaxpr = fnx.make_jaxpr(lambda a, b: jnp.tanh(a @ b))(wide, wide.T).jaxpr
    assert [grp.kind for grp in plan.fusion_groups(jaxpr)] == ["product", "elementwise"]


@pytest.mark.parametrize("batch,classes,expected", [(128, 10, True), (1024, 10, False),
                                                    (128, 17, False)])
def test_a_narrow_product_joins_the_row_group_after_it(monkeypatch, batch, classes, expected):
    """fnx.cuda.rows.joins_rows: a classifier's logits, right before the softmax's row group,
    are made inside the row kernel when they have at most ROW_PRODUCT_COLUMNS columns and
    ROW_PRODUCT_FLOPS of work; the kernel's source then computes them (no input holds them)."""
    from fnx.cuda import rows
    from fnx.cuda.epilogue import fuse_dense_epilogues
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    rng = np.random.default_rng(2)
    w = jnp.asarray(rng.standard_normal((512, classes)).astype(F32))
    b = jnp.asarray(rng.standard_normal(classes).astype(F32))
    x = jnp.asarray(rng.standard_normal((batch, 512)).astype(F32))

    def loss(w, b, x):
        return -jnp.mean(nn.log_softmax(x @ w + b)[:, 0])
    jaxpr = fnx.make_jaxpr(fnx.grad(loss))(w, b, x).jaxpr
    eqns = fuse_dense_epilogues(decompose(fold_transposed_products(jaxpr)), jaxpr.outvars)
    k = next(k for k, e in enumerate(eqns) if e.primitive.name == "dense")
    found = fusion.row_group(eqns, k + 1)
    assert found is not None and found[1] == (batch, classes)
    assert rows.joins_rows(eqns[k], found[1]) == expected
    if expected:
        monkeypatch.setattr(rows, "max_cluster", lambda: 8)
        group = eqns[k:found[0]]
        made = {v for e in group for v in e.outvars}
        inputs = list(dict.fromkeys(v for e in group for v in e.invars
                                    if isinstance(v, Var) and v not in made))
        kernel = rows.RowKernel(group, inputs, [group[-1].outvars[0]], found[1])
        assert kernel.product is eqns[k] and "prod_row[c]" in kernel.source
        assert eqns[k].outvars[0] not in inputs


@pytest.mark.x32
def test_relu_layers_and_their_backward_are_found_for_pairing(monkeypatch):
    """fnx.cuda.lt_backward.find: on the GPU lowering's equations of a train step, each ReLU
    layer whose backward is a product masked by h > 0 and summed over the batch (a product
    with at most SMALL_PRODUCT_K terms is left out: it fuses into the mask's kernel; so is a
    layer of MAX_FLOPS or more)."""
    from fnx.cuda.epilogue import dense_p, fuse_dense_epilogues, fuse_gradient_steps
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    from fnx.cuda import lt_backward
    from fnx.cuda.lt_backward import find
    for classes, expected in ((20, 2), (10, 1)):
        rng = np.random.default_rng(1)
        sizes = [16, 24, 24, classes]
        params = [(jnp.asarray(rng.standard_normal((m, n)).astype(F32)), jnp.zeros(n))
                  for m, n in zip(sizes[:-1], sizes[1:])]
        x = jnp.asarray(rng.standard_normal((8, 16)).astype(F32))

        def loss(params, x):
            h = x
            for w, b in params[:-1]:
                h = nn.relu(h @ w + b)
            return jnp.sum(jnp.tanh(h @ params[-1][0] + params[-1][1]))
        jaxpr = fnx.make_jaxpr(fnx.grad(loss))(params, x).jaxpr
        eqns = decompose(fold_transposed_products(jaxpr))
        eqns = fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)
        matches = find(eqns, jaxpr.outvars)
        assert len(matches) == expected
        # a limit between the first layer's 2 * 8 * 24 * (16 + 24) and the second's
        monkeypatch.setattr(lt_backward, "MAX_FLOPS", 2.0 * 8 * 24 * 42)
        limited = find(eqns, jaxpr.outvars)
        assert [m.dense.invars[0].aval.shape for m in limited] == [(8, 16)]
        monkeypatch.undo()
        for m in matches:
            assert m.flops == 2.0 * 8 * 24 * (m.dense.invars[0].aval.shape[1]
                                              + m.product.invars[0].aval.shape[1])
            assert m.dense.primitive is dense_p and m.dense.params["act"] == "relu"
            assert m.select.invars[2] is m.product.outvars[0]
            assert m.total.invars[0] is m.select.outvars[0]
            assert m.dense.outvars[0].aval.shape == m.product.outvars[0].aval.shape


def _gelu_mlp_grad(inputs):
    rng = np.random.default_rng(2)
    params = [(jnp.asarray(rng.standard_normal((m, n)).astype(F32)),
               jnp.asarray(rng.standard_normal(n).astype(F32)))
              for m, n in [(inputs, 24), (24, 20)]]
    x = jnp.asarray(rng.standard_normal((8, inputs)).astype(F32))

    def loss(params, x):
        (w1, b1), (w2, b2) = params
        h = nn.gelu(x @ w1 + b1, approximate=True)
        return jnp.sum(jnp.tanh(h @ w2 + b2))
    return fnx.make_jaxpr(fnx.grad(loss))(params, x), [*params[0], *params[1], x]


def _crossing(eqns, outvars):
    """(reading stretch, value) pairs: values a kernel reads from another elementwise kernel."""
    producer = {v: k for k, e in enumerate(eqns) for v in e.outvars}
    stretch = fusion.kernel_ids(eqns, outvars)
    return {(stretch[k], v) for k, e in enumerate(eqns) if fusion.is_fusible(e)
            for v in e.invars if v in producer and stretch[producer[v]] != stretch[k]
            and fusion.is_fusible(eqns[producer[v]])}


def test_recompute_residuals_gives_the_same_values_from_fewer_loads():
    """The backward pass of a GELU reads four of the forward's intermediates; recomputed from
    the layer's pre-activation (and its bias) they are two loads, and the values are the same."""
    from fnx.core.jaxpr import Jaxpr, eval_jaxpr
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    closed, args = _gelu_mlp_grad(inputs=40)
    jaxpr = closed.jaxpr
    eqns = decompose(fold_transposed_products(jaxpr))
    new = fusion.recompute_residuals(eqns, jaxpr.outvars)
    assert len(_crossing(new, jaxpr.outvars)) < len(_crossing(eqns, jaxpr.outvars))
    assert fusion.recompute_residuals(new, jaxpr.outvars) is new        # nothing left to do
    ref = eval_jaxpr(jaxpr, closed.consts, *args)
    got = eval_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, new), closed.consts, *args)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))


def test_recomputed_gelu_backward_reads_the_dense_layers_output_only():
    """On the GPU lowering's equations: the GELU's backward kernel reads the dense layer's
    result z and the incoming gradient, and the forward's GELU kernel writes only its result."""
    from fnx.core.jaxpr import Jaxpr, dce_jaxpr
    from fnx.cuda.epilogue import dense_p, fuse_dense_epilogues, fuse_gradient_steps
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    closed, _ = _gelu_mlp_grad(inputs=16)
    jaxpr = closed.jaxpr
    eqns = decompose(fold_transposed_products(jaxpr))
    eqns = fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)

    def lowered(eqns):
        return dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns))[0].eqns
    before, after = lowered(eqns), lowered(fusion.recompute_residuals(eqns, jaxpr.outvars))
    assert _crossing(after, jaxpr.outvars) == set()
    z = next(e for e in after if e.primitive is dense_p).outvars[0]
    backward = [e for e in after if e.primitive.name == "tanh"][-1]     # the recomputed one
    stretch = fusion.kernel_ids(after, jaxpr.outvars)
    reads = {v for k, e in enumerate(after) if stretch[k] == stretch[after.index(backward)]
             for v in e.invars if isinstance(v, Var)}
    made_elsewhere = {v for v in reads if not any(v in e.outvars for k, e in enumerate(after)
                                                  if stretch[k] == stretch[after.index(backward)])}
    assert z in made_elsewhere and len(made_elsewhere) == 2, made_elsewhere
    # four intermediates, besides h, went to memory
    assert len(_crossing(before, jaxpr.outvars)) == 4
    forward = [e.primitive.name for k, e in enumerate(after) if stretch[k] == 2]
    assert "sub" not in forward and forward.count("integer_pow") == 1, forward


_GRAD_SPECS = [s for s in SPECS if s.grad]


@pytest.mark.parametrize("spec", _GRAD_SPECS, ids=[s.name for s in _GRAD_SPECS])
def test_recompute_residuals_keeps_every_gradient_the_same(spec):
    """Every op spec's gradient program (as the GPU lowering sees it), with its residuals
    recomputed, evaluates to the same values, bit for bit, on the CPU."""
    from fnx.core.jaxpr import Jaxpr, eval_jaxpr
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    closed, fargs = _grad_program(spec, spec.draw(np.random.default_rng(5)))
    j = closed.jaxpr
    eqns = decompose(fold_transposed_products(j))
    new = fusion.recompute_residuals(eqns, j.outvars)
    ref = eval_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts, *fargs)
    got = eval_jaxpr(Jaxpr(j.constvars, j.invars, j.outvars, new), closed.consts, *fargs)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))


@pytest.mark.parametrize("approximate,width,expected", [(True, 24, 1), (False, 24, 0),
                                                        (True, 20, 0)])
def test_gelu_backward_found_for_cublaslt(approximate, width, expected):
    """fnx.cuda.lt_backward.find_gelu: a column kernel computing g * gelu'(z) (tanh form,
    checked on probe values) from a product and a dense layer's z, once the GELU's
    intermediates are recomputed; not the erf form, whose derivative cuBLASLt does not
    compute, nor a width cuBLASLt's auxiliary matrix cannot alias (a multiple of 8)."""
    from fnx.cuda.epilogue import fuse_dense_epilogues, fuse_gradient_steps
    from fnx.cuda.decompose import decompose
    from fnx.cuda.plan import fold_transposed_products
    from fnx.cuda.lt_backward import find_gelu
    rng = np.random.default_rng(3)
    w1, w2 = (jnp.asarray(rng.standard_normal(s).astype(F32)) for s in [(16, width), (width, 20)])
    b1 = jnp.asarray(rng.standard_normal(width).astype(F32))
    x = jnp.asarray(rng.standard_normal((8, 16)).astype(F32))

    def loss(w1, b1, w2):
        return jnp.sum(jnp.sin(nn.gelu(x @ w1 + b1, approximate=approximate) @ w2))
    jaxpr = fnx.make_jaxpr(fnx.grad(loss, argnums=(0, 1, 2)))(w1, b1, w2).jaxpr
    eqns = decompose(fold_transposed_products(jaxpr))
    eqns = fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)
    assert find_gelu(eqns, jaxpr.outvars) == []         # four intermediates read: no match
    eqns = fusion.recompute_residuals(eqns, jaxpr.outvars)
    matches = find_gelu(eqns, jaxpr.outvars)
    assert len(matches) == expected
    for m in matches:
        assert m.z.aval.shape == (8, width) and m.total.outvars[0].aval.shape == (width,)
        assert m.product.outvars[0].aval.shape == (8, width)


def test_jit_of_log_of_exp_is_the_identity_as_in_jax():
    jax = pytest.importorskip("jax")
    x = float(np.random.default_rng().uniform(90.0, 200.0))     # exp overflows float32
    f = lambda lib, np_: lambda v: np_.log(np_.exp(v))  # noqa: E731
    got = fnx.jit(f(fnx, fnx.numpy))(np.float32(x))
    want = jax.jit(f(jax, jax.numpy))(np.float32(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert np.isinf(np.asarray(f(fnx, fnx.numpy)(np.float32(x))))   # eagerly: exp overflows


# data movement of values a kernel computes: (name, function, shapes); each is one GPU kernel
MOVED_COMPUTED = [
    # a gradient of three slices: the transposed pieces padded into place and summed
    ("concatenate by pads", lambda a, b, c: sum(
        jnp.pad(jnp.transpose(jnp.tanh(t), (0, 2, 1)).reshape(4, 5, 1, 3),
                [(0, 0), (0, 0), (k, 2 - k), (0, 0)]) for k, t in enumerate((a, b, c))),
     [(4, 3, 5)] * 3),
    ("slices of a reshape", lambda x: jnp.exp(x).reshape(4, 3, 10)[:, 1, ::2] * 2.0,
     [(4, 30)]),
    ("reversed transpose", lambda x, y: jnp.flip(jnp.transpose(x * y), 0) + 1.0,
     [(6, 7), (6, 7)]),
    ("concatenated computed", lambda x, y: jnp.concatenate([jnp.sin(x), x * y], 1) - 0.5,
     [(5, 3), (5, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", MOVED_COMPUTED, ids=[m[0] for m in MOVED_COMPUTED])
def test_data_movement_of_computed_values_joins_the_kernel_that_reads_it(name, fn, shapes):
    rng = np.random.default_rng(11)
    args = [jnp.asarray(rng.standard_normal(s)) for s in shapes]
    groups = gpu_groups(fnx.jit(fn).lower(*args))
    assert [g.kind for g in groups] == ["elementwise"], groups


def cluster_update(sums, counts, old):
    """k-means' new centroids: a cluster count's ``n > 0`` and ``max(n, 1)``, broadcast beside
    the sums they divide."""
    n = counts.reshape(-1, 1)
    return jnp.where(n > 0, sums / jnp.maximum(n, 1.0), old)


def test_cheap_work_broadcast_into_a_kernel_is_computed_there():
    update = cluster_update
    rng = np.random.default_rng(3)
    args = [jnp.asarray(rng.standard_normal((8, 5))), jnp.asarray(rng.integers(0, 3, 8) * 1.0),
            jnp.asarray(rng.standard_normal((8, 5)))]
    assert [g.kind for g in gpu_groups(fnx.jit(update).lower(*args))] == ["elementwise"]
    # work that is not cheap (a tanh) is made once and loaded
    expensive = lambda s, c, o: s / jnp.tanh(c).reshape(-1, 1) + o     # noqa: E731
    assert len(gpu_groups(fnx.jit(expensive).lower(*args))) == 2
