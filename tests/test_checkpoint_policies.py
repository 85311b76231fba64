"""checkpoint policies by JAX's names: which intermediates the backward pass keeps (counted
among the residuals of the linearized function) and the same gradients whatever the policy."""
import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import lax
from fnx.ad_checkpoint import checkpoint_name, checkpoint_policies as cp
from fnx.core.ad import linearize_flat
from fnx.core.jaxpr import typecheck_jaxpr

NO_BATCH = (((2,), (0,)), ((), ()))          # (b, i, j) . (j, k): a plain product
BATCHED = (((2,), (2,)), ((0,), (0,)))       # (b, i, j) . (b, k, j): one product per b


def model(w, x):
    """The intermediates a policy chooses among: y (a product without batch dimensions),
    h (named "h"), z (a batched product) and g (named "g")."""
    y = lax.dot_general(x, w, NO_BATCH)
    h = checkpoint_name(jnp.sin(y), "h")
    z = lax.dot_general(h, h, BATCHED)
    g = checkpoint_name(jnp.cos(z), "g")
    return jnp.sum(jnp.tanh(g))


def intermediates(w, x):
    y = np.asarray(lax.dot_general(x, w, NO_BATCH))
    h = np.sin(y)
    z = np.einsum("bij,bkj->bik", h, h)
    return {"y": y, "h": h, "z": z, "g": np.cos(z)}


def saved(policy, w, x):
    """Which of the intermediates the linearized checkpointed model keeps as residuals."""
    f = fnx.checkpoint(model, policy=policy)
    _, lin = linearize_flat(lambda w, x: [f(w, x)], [w, x])
    typecheck_jaxpr(lin.jaxpr)
    consts = [np.asarray(c) for c in lin.consts]
    return {name for name, v in intermediates(w, x).items()
            if any(c.shape == v.shape and np.allclose(c, v, rtol=1e-12) for c in consts)}


@pytest.fixture
def args(rng):
    return rng.standard_normal((4, 4)), rng.standard_normal((3, 2, 4))


@pytest.mark.parametrize("policy, expected", [
    (None, set()),
    (cp.nothing_saveable, set()),
    (cp.dots_saveable, {"y", "z"}),
    (cp.checkpoint_dots, {"y", "z"}),
    (cp.dots_with_no_batch_dims_saveable, {"y"}),
    (cp.offload_dot_with_no_batch_dims("device", "pinned_host"), {"y"}),
    (cp.save_only_these_names("h"), {"h"}),
    (cp.save_only_these_names("h", "g"), {"h", "g"}),
    (cp.save_any_names_but_these("h"), {"g"}),
    (cp.save_from_both_policies(cp.save_only_these_names("g"),
                                cp.dots_with_no_batch_dims_saveable), {"y", "g"}),
    (cp.save_and_offload_only_these_names(names_which_can_be_saved=["h"],
                                          names_which_can_be_offloaded=["g"]), {"h", "g"}),
], ids=["none", "nothing", "dots", "checkpoint_dots", "dots_no_batch",
        "offload_dots", "names_h", "names_h_g", "names_but_h", "both", "save_and_offload"])
def test_policy_chooses_the_residuals(policy, expected, args):
    assert saved(policy, *args) == expected


POLICY_NAMES = ["nothing_saveable", "everything_saveable", "dots_saveable",
                "dots_with_no_batch_dims_saveable", ("save_only_these_names", "h"),
                ("save_only_these_names", "h", "g"), ("save_any_names_but_these", "h"),
                ("save_anything_except_these_names", "h"),
                ("save_anything_except_these_names", "h", "g")]


def _policy(policies, name):
    if isinstance(name, str):
        return getattr(policies, name)
    return getattr(policies, name[0])(*name[1:])


@pytest.mark.parametrize("name", POLICY_NAMES, ids=str)
def test_residuals_match_jax(name, args):
    jax = pytest.importorskip("jax")
    from jax._src.ad_checkpoint import saved_residuals
    from jax.ad_checkpoint import checkpoint_name as jax_name
    jjnp = jax.numpy

    def jax_model(w, x):
        h = jax_name(jjnp.sin(jax.lax.dot_general(x, w, NO_BATCH)), "h")
        g = jax_name(jjnp.cos(jax.lax.dot_general(h, h, BATCHED)), "g")
        return jjnp.sum(jjnp.tanh(g))
    w, x = (a.astype(np.float32) for a in args)
    theirs = sorted(tuple(a.shape) for a, _ in saved_residuals(
        jax.checkpoint(jax_model, policy=_policy(jax.checkpoint_policies, name)), w, x))
    f = fnx.checkpoint(model, policy=_policy(cp, name))
    _, lin = linearize_flat(lambda w, x: [f(w, x)], [jnp.asarray(w), jnp.asarray(x)])
    ours = sorted(tuple(c.shape) for c in lin.consts)
    if name in ("everything_saveable",) or name[0] == "save_anything_except_these_names":
        # both save every derivative factor; JAX keeps tanh's output beside 1 - tanh**2
        assert set(ours) == set(theirs) and len(ours) == len(theirs) - 1
    else:
        assert ours == theirs


@pytest.mark.parametrize("policy", [None, cp.nothing_saveable, cp.everything_saveable,
                                    cp.dots_saveable, cp.dots_with_no_batch_dims_saveable,
                                    cp.save_only_these_names("h", "g"),
                                    cp.save_anything_except_these_names("g")])
def test_gradients_do_not_depend_on_the_policy(policy, args):
    expected = fnx.grad(model, argnums=(0, 1))(*args)
    f = fnx.checkpoint(model, policy=policy)
    for grads in (fnx.grad(f, argnums=(0, 1))(*args),
                  fnx.jit(fnx.grad(f, argnums=(0, 1)))(*args)):
        for a, b in zip(grads, expected):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def test_gradients_match_jax_with_names(args):
    jax = pytest.importorskip("jax")
    from jax.ad_checkpoint import checkpoint_name as jax_name
    jjnp = jax.numpy
    w, x = (a.astype(np.float32) for a in args)

    def jax_model(w, x):
        y = jax.lax.dot_general(x, w, NO_BATCH)
        h = jax_name(jjnp.sin(y), "h")
        return jjnp.sum(jjnp.tanh(jjnp.cos(jax.lax.dot_general(h, h, BATCHED))))
    policy = jax.checkpoint_policies.save_only_these_names("h")
    theirs = jax.jit(jax.grad(jax.checkpoint(jax_model, policy=policy), (0, 1)))(w, x)
    ours = fnx.grad(fnx.checkpoint(model, policy=cp.save_only_these_names("h")), (0, 1))(w, x)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-5)


def test_checkpoint_name_is_the_identity_under_every_transformation(rng):
    x = rng.standard_normal((3, 4))
    tree = {"a": jnp.asarray(x), "b": [jnp.asarray(x[0])]}
    named = checkpoint_name(tree, "t")
    np.testing.assert_array_equal(np.asarray(named["b"][0]), x[0])
    np.testing.assert_allclose(np.asarray(fnx.grad(lambda v: jnp.sum(
        checkpoint_name(v, "v") ** 2))(x)), 2 * x)
    np.testing.assert_array_equal(np.asarray(fnx.vmap(lambda v: checkpoint_name(v, "r"))(x)), x)
    # under jit the name is dropped from the compiled program, not from the traced one
    assert "name[" in str(fnx.make_jaxpr(lambda v: checkpoint_name(v, "n") + 1)(x))
    lowered = fnx.jit(lambda v: checkpoint_name(v, "n") + 1).lower(x).as_text()
    assert "name" not in lowered.replace("name=", "")
    assert fnx.checkpoint_policies is cp


@pytest.mark.cuda
def test_named_checkpoint_under_jit_on_gpu(args, gpu):
    # the remat (and its name equations) is spliced into the GPU program
    w, x = (a.astype(np.float32) for a in args)
    f = fnx.jit(fnx.grad(fnx.checkpoint(model, policy=cp.save_only_these_names("h")), (0, 1)))
    want = fnx.grad(model, (0, 1))(w, x)
    on = [fnx.device_put(a, gpu) for a in (w, x)]
    for _ in range(3):          # warm-up, capture, replay
        for a, b in zip(f(*on), want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def _two_layers(np_):
    """One model for either library's numpy (its lines are the same for both)."""
    def _layer(w, x):
        return np_.sin(np_.dot(w, x))

    def model(w1, w2, x):
        return np_.sum(_layer(w2, _layer(w1, x)))
    return model


@pytest.mark.parametrize("policy", [None, "everything_saveable", "dots_saveable",
                                    "nothing_saveable"])
def test_saved_residuals_print_what_jax_prints(policy, rng, capsys):
    import re
    jax = pytest.importorskip("jax")
    from jax.ad_checkpoint import print_saved_residuals as jax_print_saved_residuals

    from fnx.ad_checkpoint import print_saved_residuals
    args = [rng.standard_normal(s).astype(np.float32) for s in [(5, 4), (6, 5), (4,)]]

    def wrapped(lib):
        model = _two_layers(lib.numpy)
        if policy is None:
            return model
        return lib.checkpoint(model, policy=getattr(lib.checkpoint_policies, policy))
    print_saved_residuals(wrapped(fnx), *args)
    ours = capsys.readouterr().out
    jax_print_saved_residuals(wrapped(jax), *args)
    # JAX adds a column to the line and names functions by their qualified names
    theirs = re.sub(r"(\.py:\d+):\d+ ", r"\1 ", capsys.readouterr().out)
    theirs = re.sub(r"\((?:[\w<>]+\.)+(\w+)\)", r"(\1)", theirs)
    assert ours == theirs
    assert ("(_layer)" in ours) == (policy != "nothing_saveable"), ours


def test_reverse_mode_and_checkpoint_keep_the_users_line_in_what_they_stage():
    # the backward pass and a checkpoint's recomputation re-trace the program's equations:
    # what they stage (and any error they raise) names the line the user wrote
    def f(x):
        y = jnp.log(x - 1.0)        # -inf at x == 1, and its derivative inf
        return jnp.sum(y)
    def equations(jaxpr):         # with those of the bodies of calls (a checkpoint's)
        for e in jaxpr.eqns:
            body = e.params.get("jaxpr")
            yield from equations(getattr(body, "jaxpr", body)) if body is not None else [e]

    here = f.__code__.co_filename
    for g in (fnx.grad(f), fnx.grad(fnx.checkpoint(f))):
        jaxpr = fnx.make_jaxpr(g)(jnp.array([2.0, 3.0])).jaxpr
        line = {e.primitive.name: e.source_info.lineno for e in equations(jaxpr)}
        assert line["div"] == line["log"] == f.__code__.co_firstlineno + 1, jaxpr
        assert line["broadcast_in_dim"] == f.__code__.co_firstlineno + 2, jaxpr
        assert all(e.source_info.filename == here for e in equations(jaxpr))
