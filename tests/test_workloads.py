"""Every program of ``benchmarks/workloads.py`` at its ``--cpu`` size, jitted in fnx and in JAX
(both on the CPU, float32) from the same fresh random initial values: three calls give the same
losses, and a carried state comes back with the structure, shapes and dtypes it went in with,
changes from call to call, and after three calls equals JAX's."""
import os
import sys

import jax
import numpy as np
import pytest

import fnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import workloads  # noqa: E402

CALLS = 3
LOSS_RTOL = 1e-4
# A leaf of the carried state is compared relative to its largest entry (an entry near zero
# carries the rounding of the others).
STATE_RTOL = 5e-4
# Adam's first update of an entry is about ``lr * sign(gradient)``: where an entry's gradient is
# at rounding level (rare, but fresh seeds find it), each framework moves it by up to ``lr``
# its own way. A few such entries of these programs may be up to 2 lr per call apart.
ADAM = {"gru", "transformer", "lstm", "vae", "attention", "embed"}


@pytest.fixture(autouse=True)
def _float32():
    """The benchmark runs with 64-bit types off, as a user's program does."""
    with jax.enable_x64(False), fnx.enable_x64(False):
        yield


def _run(name, fw, seed):
    """The initial state, the losses and the outputs (structure and copies of the leaves: a
    donated output is given up by the next call) of CALLS jitted calls, each call's state the
    previous call's output, as the benchmark runs them (fnx donates the state)."""
    prog = workloads.PROGRAMS[name]
    cfg = prog["sizes"]["cpu"]
    L = workloads._library(fw)
    state, data = prog["init"](cfg, np.random.default_rng(seed))
    carry = prog["carry"]
    args = ([state] if carry else []) + data
    if fw == "fnx":
        args = list(fnx.device_put(args, fnx.devices("cpu")[0]))
    step = L.jax.jit(prog["build"](L, cfg), donate_argnums=0 if carry and fw == "fnx" else ())
    losses, outs = [], []
    for _ in range(CALLS):
        loss, out = step(*args)
        losses.append(float(loss))
        tree = (fnx if fw == "fnx" else jax).tree_util
        outs.append((tree.tree_structure(out), [np.array(x) for x in tree.tree_leaves(out)]))
        if carry:
            args[0] = out
    return state, losses, outs


def _assert_close_leaves(ours, theirs, what, moved=0.0):
    """Leaf by leaf within STATE_RTOL of the leaf's scale; with ``moved``, at most 1% of a
    leaf's entries (at least one) may instead be up to ``moved`` apart."""
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, i)
        scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-30)
        diff = np.abs(a.astype(np.float64) - b)
        off = diff > STATE_RTOL * (scale + np.abs(b))
        allowed = max(1, off.size // 100) if moved else 0
        assert off.sum() <= allowed and np.all(diff[off] <= moved), \
            f"{what}: leaf {i}, {off.sum()} entries off, largest difference {diff.max():.3g} " \
            f"of scale {scale:.3g}"


def _check_newton(ours, theirs, seed):
    """The mean final residual norm is near float32 rounding, so it is compared absolutely;
    each example's iteration count and solution are compared directly. An example whose
    residual lands within rounding of the tolerance may stop one iteration apart (then only
    that example's solution is compared, to the tolerance's scale)."""
    cfg = workloads.PROGRAMS["newton"]["sizes"]["cpu"]
    (xs, its), (xs_ref, its_ref) = ours[2][0][1], theirs[2][0][1]
    same = its == its_ref
    assert same.sum() >= len(same) - 1, (seed, its, its_ref)
    assert (its >= 1).all() and (its < cfg["max_iter"]).all(), (seed, its)
    np.testing.assert_allclose(xs[same], xs_ref[same], rtol=1e-4, atol=1e-5, err_msg=seed)
    np.testing.assert_allclose(xs[~same], xs_ref[~same], atol=10 * cfg["tol"], err_msg=seed)
    atol = 1e-6 if same.all() else 2 * cfg["tol"] / len(same)
    for loss, loss_ref in zip(ours[1], theirs[1]):
        assert loss < cfg["tol"] and abs(loss - loss_ref) <= atol, (seed, loss, loss_ref)


@pytest.mark.parametrize("name", list(workloads.PROGRAMS))
def test_program_matches_jax(name):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    ours, theirs = _run(name, "fnx", seed), _run(name, "jax", seed)
    if name == "newton":
        _check_newton(ours, theirs, seed)
        return
    state, losses, outs = ours
    np.testing.assert_allclose(losses, theirs[1], rtol=LOSS_RTOL, err_msg=f"seed {seed}")
    assert np.all(np.isfinite(losses))
    if not workloads.PROGRAMS[name]["carry"]:
        _assert_close_leaves(outs[-1][1], theirs[2][-1][1], f"seed {seed}")
        return
    # The state goes round: the structure, shapes and dtypes it went in with, changed by
    # every call.
    structure = fnx.tree_util.tree_structure(state)
    leaves = [np.asarray(x) for x in fnx.tree_util.tree_leaves(state)]
    spec = [(x.shape, x.dtype) for x in leaves]
    for (treedef, new), (_, new_ref) in zip(outs, theirs[2]):
        assert treedef == structure
        assert [(x.shape, x.dtype) for x in new] == spec == [(x.shape, x.dtype) for x in new_ref]
        assert any(not np.array_equal(a, b) for a, b in zip(leaves, new))
        leaves = new
    assert len(set(losses)) == CALLS, losses
    cfg = workloads.PROGRAMS[name]["sizes"]["cpu"]
    _assert_close_leaves(outs[-1][1], theirs[2][-1][1], f"seed {seed}",
                         moved=2 * cfg["lr"] * CALLS if name in ADAM else 0.0)
