"""The rules by which the GPU groups a jaxpr's equations into kernels; fnx.cuda.plan walks a
program with them once, and both lowering and ``jit(f).lower(...).as_text()`` use that walk.

The groups: an elementwise chain over one iteration shape (with data movement done as index
arithmetic, on its loads or on values it computes at the indices the movement maps to, and
cheap work broadcast into it computed there); a chain ending in a sum over leading axes; a row
group (reductions over the last axis mixed with elementwise work, a pick of one element per row
counting as a reduction); a 2-D product with a bias added along rows and an activation.
``dense_layers`` is the one matcher of ``act(x @ w + b)``: the groups use it, and so does the
lowering, which makes each layer one GEMM step. ``recompute_residuals`` lets a kernel redo
cheap elementwise work instead of loading its results. Nothing here imports CuPy.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..core import dtypes, lax
from ..core.core import Array, EvalTrace, get_backend, set_current_trace
from ..core.jaxpr import Jaxpr, Literal, Var
from ..core.passes import ELEMENTWISE, _literal_value, _rebuilt, _renamed, is_constant

ROW_DTYPES = frozenset({"float32", "float64", "bool", "int32", "int64"})
SMALL_TOTAL = 1 << 16     # a sum over every axis larger than this is not one column group
ROW_REDUCTIONS = frozenset({lax.reduce_sum_p, lax.reduce_max_p, lax.reduce_min_p})
ROW_ARG_REDUCTIONS = frozenset({lax.argmin_p, lax.argmax_p})
# every reduction fnx.cuda.reductions generates a kernel for (which computes the elementwise
# chain it reads)
GENERATED_REDUCTIONS = ROW_REDUCTIONS | ROW_ARG_REDUCTIONS | {
    lax.reduce_prod_p, lax.reduce_and_p, lax.reduce_or_p}


def is_fusible(eqn) -> bool:
    """Elementwise equations and broadcasts (which fused code does as index arithmetic)."""
    return eqn.primitive in ELEMENTWISE or eqn.primitive is lax.broadcast_in_dim_p


def _row_pick(eqn) -> bool:
    """take_along_axis of one element per row along the last axis (a masked row sum)."""
    if eqn.primitive is not lax.take_along_axis_p:
        return False
    x, idx = eqn.invars
    return (isinstance(x, Var) and isinstance(idx, Var) and dtypes.kind(x.aval.dtype) == "f"
            and x.aval.ndim >= 1 and eqn.params["axis"] == x.aval.ndim - 1
            and idx.aval.shape[-1] == 1)


def row_reduction_space(eqn):
    """The (rows, C) space a last-axis reduction (an argmin or argmax included) reduces, else
    None."""
    if eqn.primitive in ROW_REDUCTIONS:
        shape = tuple(eqn.invars[0].aval.shape)
        return shape if shape and eqn.params["axes"] == (len(shape) - 1,) else None
    if eqn.primitive in ROW_ARG_REDUCTIONS:
        shape = tuple(eqn.invars[0].aval.shape)
        return (shape if shape and eqn.params["axis"] == len(shape) - 1
                and eqn.invars[0].aval.dtype.name in ("float32", "float64") else None)
    if _row_pick(eqn):
        return tuple(eqn.invars[0].aval.shape)
    return None


# -- the order the GPU wants: totals after the row work that does not need them

def _is_total(eqn) -> bool:
    """A float reduction of a vector (or more) to a single value."""
    x = eqn.invars[0] if eqn.invars else None
    return (eqn.primitive in ROW_REDUCTIONS and isinstance(x, Var) and x.aval.ndim >= 1
            and dtypes.kind(x.aval.dtype) == "f"
            and int(np.prod(eqn.outvars[0].aval.shape, dtype=np.int64)) == 1)


def _is_scalar_work(eqn) -> bool:
    return (is_fusible(eqn) or eqn.primitive is lax.reshape_p) and all(
        int(np.prod(v.aval.shape, dtype=np.int64)) == 1
        for v in [*eqn.outvars, *(u for u in eqn.invars if isinstance(u, Var))])


def _is_row_work(eqn) -> bool:
    return (is_fusible(eqn) or eqn.primitive is lax.reshape_p
            or row_reduction_space(eqn) is not None)


def drop_weak_type_casts(jaxpr: Jaxpr) -> Jaxpr:
    """A conversion that changes only a value's weak type (a weakly typed argument, such as
    ``jnp.full(shape, 0.1)``, made strong where it meets others) computes nothing: its readers
    read its operand, so that patterns such as a product and its epilogue see through it.
    Results the program returns keep theirs.

    >>> j = fnx.make_jaxpr(lambda w, x: x @ w)(jnp.full((3, 2), 0.1), jnp.ones((4, 3)))
    >>> [e.primitive.name for e in drop_weak_type_casts(j.jaxpr).eqns]
    ['dot_general']
    """
    env, eqns, changed = {}, [], False
    returned = {v for v in jaxpr.outvars if isinstance(v, Var)}
    for e in jaxpr.eqns:
        e = _renamed(e, env)
        if e.primitive is lax.convert_element_type_p:
            x, out = e.invars[0], e.outvars[0]
            if isinstance(x, Var) and out not in returned and x.aval.dtype == out.aval.dtype \
                    and tuple(x.aval.shape) == tuple(out.aval.shape):
                env[out], changed = x, True
                continue
        eqns.append(e)
    return _rebuilt(jaxpr, eqns, env, changed)


def sink_totals(jaxpr: Jaxpr) -> Jaxpr:
    """Move each reduction to a single value (a loss averaged over the batch), with the scalar
    arithmetic on its result, past the elementwise and row work after it that does not read
    it. A loss's backward pass needs no total, so it then joins the loss's row group: one
    kernel for both.

    >>> j = fnx.make_jaxpr(lambda x: (jnp.sum(jnp.sum(x, -1)), jnp.exp(x)))(jnp.ones((2, 3)))
    >>> [e.primitive.name for e in sink_totals(j.jaxpr).eqns]
    ['reduce_sum', 'exp', 'reduce_sum']
    """
    result, held, held_vars, moved = [], [], set(), False
    for e in jaxpr.eqns:
        reads_held = any(isinstance(v, Var) and v in held_vars for v in e.invars)
        if _is_total(e) or (reads_held and _is_scalar_work(e)):
            held.append(e)
            held_vars.update(e.outvars)
            continue
        # (work over other rows than the first total's ends its row group anyway)
        rows = tuple(held[0].invars[0].aval.shape[:1]) if held else ()
        if held and (reads_held or not _is_row_work(e)
                     or tuple(e.outvars[0].aval.shape[:1]) != rows):
            result += held
            held, held_vars = [], set()
        elif held:
            moved = True
        result.append(e)
    return _rebuilt(jaxpr, result + held, {}, moved)


def _expands(e, deferred) -> bool:
    """A broadcast that makes a value larger, or elementwise work on such values only: work
    that costs a full write and read when materialised, and nothing when fused into its reader."""
    if e.primitive is lax.broadcast_in_dim_p:
        x = e.invars[0]
        return (not isinstance(x, Var) or int(np.prod(x.aval.shape, dtype=np.int64))
                < int(np.prod(e.outvars[0].aval.shape, dtype=np.int64)))
    ins = [v for v in e.invars if isinstance(v, Var)]
    return e.primitive in ELEMENTWISE and bool(ins) and all(v in deferred for v in ins)


def outer_products_as_broadcasts(eqns) -> list:
    """A ``dot_general`` that sums no terms (an outer product, batched or not: what ``vmap``
    makes of a per-example weight gradient) as the product of its operands broadcast to its
    result, which fused kernels compute where it is read instead of writing it out.

    >>> f = lambda x, d: lax.dot_general(x, d, (((), ()), ((0,), (0,))))   # (4, 3, 2)
    >>> eqns = fnx.make_jaxpr(f)(jnp.ones((4, 3)), jnp.ones((4, 2))).jaxpr.eqns
    >>> [e.primitive.name for e in outer_products_as_broadcasts(eqns)]
    ['broadcast_in_dim', 'broadcast_in_dim', 'mul']
    """
    out = []
    for e in eqns:
        dims = _outer_broadcast_dims(e)
        if dims is None:
            out.append(e)
            continue
        z = e.outvars[0]
        shape = tuple(z.aval.shape)
        wide = []
        for x, d in zip(e.invars, dims):
            v = Var(z.aval)
            out.append(e.replace(primitive=lax.broadcast_in_dim_p, invars=[x], outvars=[v],
                                 params={"shape": shape, "broadcast_dimensions": d}))
            wide.append(v)
        out.append(e.replace(primitive=lax.mul_p, invars=wide, params={}))
    return out


def _outer_broadcast_dims(e):
    """Each operand's broadcast dimensions into ``e``'s result, if ``e`` is a float
    ``dot_general`` without contracting dimensions whose operands list their batch dimensions
    first, in order (as the result does); else None."""
    if e.primitive is not lax.dot_general_p or not all(isinstance(v, Var) for v in e.invars):
        return None
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    x, w = e.invars
    z = e.outvars[0].aval
    if lc or rc or dtypes.kind(z.dtype) != "f" or x.aval.dtype != z.dtype \
            or w.aval.dtype != z.dtype:
        return None
    nb = len(lb)
    if tuple(lb) != tuple(range(nb)) or tuple(rb) != tuple(range(nb)):
        return None
    nx = x.aval.ndim - nb
    return (tuple(range(nb)) + tuple(range(nb, nb + nx)),
            tuple(range(nb)) + tuple(range(nb + nx, z.ndim)))


def expansions(eqns) -> set:
    """The values of ``eqns`` that ``_expands`` makes."""
    made: set = set()
    for e in eqns:
        if _expands(e, made):
            made.update(e.outvars)
    return made


def sink_expansions(eqns, outvars) -> list:
    """Move each expansion (``_expands``) that only fused work reads to just before its
    readers, a copy for each, so it joins each reader's kernel instead of being written out
    once and read back (k-means' ``|x|^2 + |c|^2``, broadcast to every point-centroid pair,
    before ``- 2 x.c``; per-example gradients, outer products, before their norms and their
    clipped sum over the batch).

    >>> f = lambda x, c: jnp.argmin(jnp.sum(x * x, 1, keepdims=True) + jnp.sum(c * c, 1)
    ...                             - 2 * x @ c.T, 1)
    >>> eqns = fnx.make_jaxpr(f)(jnp.ones((5, 2)), jnp.ones((3, 2))).jaxpr.eqns
    >>> [e.primitive.name for e in sink_expansions(eqns, [])][-6:]
    ['dot_general', 'broadcast_in_dim', 'broadcast_in_dim', 'add', 'sub', 'argmin']
    """
    users = _uses(eqns, outvars)
    fused_reader = {k: is_fusible(e) or e.primitive in GENERATED_REDUCTIONS
                    for k, e in enumerate(eqns)}
    deferred: dict = {}         # var -> index of the held equation making it
    for k, e in enumerate(eqns):
        readers = [u for v in e.outvars for u in users.get(v, ())]
        if _expands(e, deferred) and readers and all(
                u < len(eqns) and fused_reader[u] for u in readers):
            deferred.update((v, k) for v in e.outvars)
    if not deferred:
        return eqns
    held, out = set(deferred.values()), []

    def place(e, copies):
        """``e`` reading this reader's own copies of the held values it needs, which are
        made (appended to ``out``) first."""
        ins = []
        for v in e.invars:
            m = deferred.get(v) if isinstance(v, Var) else None
            if m is not None and v not in copies:
                made = place(eqns[m], copies)
                out.append(made)
                copies.update(zip(eqns[m].outvars, made.outvars))
            ins.append(copies.get(v, v) if isinstance(v, Var) else v)
        if e.outvars[0] in deferred:
            return e.replace(invars=ins, outvars=[Var(v.aval) for v in e.outvars])
        return e.replace(invars=ins)
    for k, e in enumerate(eqns):
        if k not in held:
            out.append(place(e, {}))
    return out


SMALL_PRODUCT_K = 16


def small_product(eqn) -> bool:
    """A float 2-D product summing at most ``SMALL_PRODUCT_K`` terms per element (a
    classifier's few logits' gradient times its weights). Fused code computes each element
    as a short dot where the elementwise work reading it runs, instead of a launch of its
    own."""
    if eqn.primitive is not lax.dot_general_p:
        return False
    (lc, _), (lb, rb) = eqn.params["dimension_numbers"]
    a, b = eqn.invars
    if lb or rb or len(lc) != 1 or not isinstance(a, Var) or not isinstance(b, Var):
        return False
    dtype = eqn.outvars[0].aval.dtype
    return (len(a.aval.shape) == 2 and len(b.aval.shape) == 2
            and a.aval.dtype == dtype == b.aval.dtype and dtype.name in ("float32", "float64")
            and a.aval.shape[lc[0]] <= SMALL_PRODUCT_K)


# data movement fused code does as index arithmetic (a slice, a pad, a transpose, a gather
# along one axis, ...): on the operands it loads, or on values the kernel computes at the
# indices the movement maps to (index_computable), so that a chain of them (a gradient's
# transposes padded into place and summed) writes nothing in between
MOVEMENT = frozenset({lax.slice_p, lax.pad_p, lax.transpose_p, lax.reshape_p, lax.rev_p,
                      lax.concatenate_p, lax.take_p})


def moved_operands(eqn):
    """The operands a data-movement equation loads at moved indices (a pad's value is read as
    any scalar is)."""
    return eqn.invars[:1] if eqn.primitive is lax.pad_p else eqn.invars


MAX_INLINED = 12    # equations a kernel may compute at the indices data movement maps to
# how many times over, at most, kernels may compute a value data movement reads (a gate's
# gradient both padded into place and read where it is made: yes; an im2col's nine windows
# over one computed image: no)
MAX_COMPUTED_READS = 2


def _size(v) -> int:
    return int(np.prod(v.aval.shape, dtype=np.int64))


def _elements_read(v, eqns, users) -> int:
    """How many elements of ``v`` its readers read in all, counted once per reader: a slice or
    a gather reads as many as it makes, anything else (a program output too) all of them."""
    total = 0
    for k in set(users.get(v, ())):
        e = eqns[k] if k < len(eqns) else None
        total += _size(e.outvars[0]) if e is not None and e.primitive in (
            lax.slice_p, lax.take_p) else _size(v)
    return total


def index_computable(v, produced, eqns, users) -> bool:
    """Whether a kernel of a run that has made ``produced`` (``{var: equation}``) can compute
    ``v`` at any index, as data movement reads it: ``v`` is loaded (made before the run), a
    scalar, or made by at most ``MAX_INLINED`` equations of data movement or elementwise work
    over such values. Its readers (``users``: var -> indices into ``eqns``) must together read
    a value computed (not just moved) at most ``MAX_COMPUTED_READS`` times per element
    (disjoint slices read it once), as each read computes it again; a broadcast of a value the
    run computed is refused for the same reason, and so is a small product."""
    seen: dict = {}       # var -> whether computing it takes arithmetic (None: refused)

    def visit(u):
        e = produced.get(u) if isinstance(u, Var) else None
        if e is None or not u.aval.shape:
            return False
        if u in seen:
            return seen[u]
        seen[u] = None
        if len(seen) > MAX_INLINED:
            return None
        p = e.primitive
        if p in MOVEMENT:
            operands = moved_operands(e)
            found = [visit(w) if isinstance(w, Var) else None for w in operands]
            computes = None if None in found else any(found)
        elif p is lax.broadcast_in_dim_p:
            x = e.invars[0]
            computes = None if isinstance(x, Var) and x in produced and x.aval.shape \
                else False
        elif p in ELEMENTWISE and not small_product(e):
            found = [visit(w) for w in e.invars]
            computes = None if None in found else True
        else:
            computes = None
        if computes and _elements_read(u, eqns, users) > MAX_COMPUTED_READS * _size(u):
            computes = None
        seen[u] = computes
        return computes
    return visit(v) is not None


# elementwise work costing about one instruction, which a kernel may redo for every element a
# value is broadcast to rather than have the value written and loaded back
CHEAP = frozenset({lax.add_p, lax.sub_p, lax.mul_p, lax.neg_p, lax.max_p, lax.min_p,
                   lax.gt_p, lax.ge_p, lax.lt_p, lax.le_p, lax.eq_p, lax.ne_p, lax.select_n_p,
                   lax.convert_element_type_p, lax.abs_p, lax.and_p, lax.or_p, lax.not_p,
                   lax.reshape_p})
MAX_BROADCAST_RECOMPUTED = 4


def cheap_to_broadcast(v, producer, eqns) -> bool:
    """Whether a kernel may compute ``v`` (made by ``eqns[producer[v]]`` in its run) at each
    element it is broadcast to: at most ``MAX_BROADCAST_RECOMPUTED`` ``CHEAP`` equations over
    values loaded or scalar (a cluster count's ``max(n, 1)`` and ``n > 0`` beside the sums
    they divide)."""
    todo, seen = [v], set()
    while todo:
        u = todo.pop()
        k = producer.get(u) if isinstance(u, Var) else None
        if k is None or not u.aval.shape or k in seen:
            continue
        seen.add(k)
        e = eqns[k]
        if len(seen) > MAX_BROADCAST_RECOMPUTED or e.primitive not in CHEAP:
            return False
        todo += e.invars
    return True


def joins_run(eqn, produced, eqns, users) -> bool:
    """Whether ``eqn`` can join an elementwise run that has made ``produced`` (``{var:
    equation}``): a small product reads its operands whole, so they must come from before the
    run; data movement reads its operands at other indices, so they must be computable at any
    index (``index_computable``; ``users``: var -> the indices of the ``eqns`` reading it)."""
    if small_product(eqn):
        return not any(v in produced for v in eqn.invars)
    if eqn.primitive in MOVEMENT:
        return bool(eqn.outvars[0].aval.shape) and all(
            isinstance(v, Var) and index_computable(v, produced, eqns, users)
            for v in moved_operands(eqn))
    return is_fusible(eqn)


def products_only(eqns) -> bool:
    """A run of small products alone gains nothing by fusing: they stay GEMMs; nor does a run
    of reshapes, which stay views."""
    return all(small_product(e) for e in eqns) or all(e.primitive is lax.reshape_p
                                                      for e in eqns)


def run_end(eqns, i, users) -> int:
    """Where the GPU lowering's elementwise run starting at ``eqns[i]`` ends (``i`` if none
    does): before a row group that starts at a change of shape, which stays whole. ``users``:
    var -> the equations reading it (``_uses``)."""
    end, produced = i, {}
    while end < len(eqns) and joins_run(eqns[end], produced, eqns, users):
        if end > i and eqns[end].outvars[0].aval.shape != eqns[end - 1].outvars[0].aval.shape \
                and row_group(eqns, end) is not None:
            break
        produced.update((v, eqns[end]) for v in eqns[end].outvars)
        end += 1
    return i if products_only(eqns[i:end]) else end


MAX_RECOMPUTED = 16     # elementwise equations a kernel may redo rather than read their results


def kernel_ids(eqns, outvars, row_groups=None) -> list:
    """Per equation, the number of the GPU kernel it joins, as the GPU lowering groups them: a
    row group (whose numbers go into the set ``row_groups``, if given), an elementwise run
    (with a sum over leading axes right after it), or an equation alone."""
    ids, i, current = [0] * len(eqns), 0, 0
    users = _uses(eqns, outvars)
    while i < len(eqns):
        current += 1
        found = row_group(eqns, i)
        if found is not None:
            end = found[0]
            if row_groups is not None:
                row_groups.add(current)
        else:
            end = run_end(eqns, i, users)
            if end == i:
                end = i + 1
            elif end < len(eqns) and leading_sum(eqns[end], None):
                end += 1
        ids[i:end] = [current] * (end - i)
        i = end
    return ids


def _recipe(v, eqns, producer, stretch):
    """``(equation indices, leaves)``: the elementwise equations of ``v``'s stretch that compute
    it, and the values they start from (made elsewhere); None if that takes more than
    ``MAX_RECOMPUTED`` equations, or one of them broadcasts a value made among them (another
    iteration shape)."""
    home = stretch[producer[v]]
    members, leaves, todo = set(), set(), [v]
    while todo:
        u = todo.pop()
        k = producer.get(u)
        if k is None or stretch[k] != home:
            leaves.add(u)
            continue
        if k in members:
            continue
        e = eqns[k]
        if e.primitive is lax.broadcast_in_dim_p and isinstance(e.invars[0], Var) \
                and producer.get(e.invars[0]) is not None \
                and stretch[producer[e.invars[0]]] == home:
            return None
        members.add(k)
        if len(members) > MAX_RECOMPUTED:
            return None
        todo += [w for w in e.invars if isinstance(w, Var)]
    return sorted(members), leaves


def recompute_residuals(eqns, outvars):
    """Elementwise values a later kernel reads (a backward pass reading an activation's
    intermediates, say ``tanh(...)`` and ``1 - tanh(...)**2`` of a GELU) recomputed inside that
    kernel from what they were made of, where that means fewer values to load (the GELU's input
    instead of four intermediates). The kernel that made them then writes fewer results.

    Stretches of fusible equations stand for kernels: a value made in one and read in another
    is a residual; the equations making it are copied, with new variables, before its first
    reader in the other stretch, whose reads are renamed to the copies."""
    producer = {v: k for k, e in enumerate(eqns) for v in e.outvars}
    row_groups: set = set()     # not read into: a copied broadcast could split the group
    stretch = kernel_ids(eqns, outvars, row_groups)
    inserts: dict = {}          # index -> equations copied in before it
    renames: dict = {}          # stretch -> {residual: its copy}
    first_reader: dict = {}     # (reading stretch, making stretch) -> [first index, residuals]
    for k, e in enumerate(eqns):
        if not is_fusible(e):
            continue
        for v in e.invars:
            m = producer.get(v) if isinstance(v, Var) else None
            if m is None or stretch[m] == stretch[k] or not is_fusible(eqns[m]) \
                    or stretch[k] in row_groups:
                continue
            entry = first_reader.setdefault((stretch[k], stretch[m]), [k, []])
            if v not in entry[1]:
                entry[1].append(v)
    readers: dict = {}          # value -> the other stretches reading it (0: the program)
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var) and v in producer and stretch[producer[v]] != stretch[k]:
                readers.setdefault(v, set()).add(stretch[k])
    for v in outvars:
        if isinstance(v, Var):
            readers.setdefault(v, set()).add(0)
    for (reading, _), (first, residuals) in first_reader.items():
        recipes = [_recipe(v, eqns, producer, stretch) for v in residuals]
        if any(r is None for r in recipes):
            continue
        members = sorted(set().union(*(set(r[0]) for r in recipes)))
        leaves = set().union(*(r[1] for r in recipes))
        already = {w for j, e in enumerate(eqns) if stretch[j] == reading for w in e.invars}
        # loads and writes saved (a residual only this stretch reads need not be written)
        saved = len(residuals) + sum(readers[v] == {reading} for v in residuals)
        if len(members) > MAX_RECOMPUTED or len(leaves - already) >= saved:
            continue
        copies, env = [], {}
        for j in members:
            e = eqns[j]
            fresh = [Var(v.aval) for v in e.outvars]
            env.update(zip(e.outvars, fresh))
            copies.append(_renamed(e, env).replace(outvars=fresh))
        inserts.setdefault(first, []).extend(copies)
        renames.setdefault(reading, {}).update({v: env[v] for v in residuals})
    if not inserts:
        return eqns
    result = []
    for k, e in enumerate(eqns):
        result += inserts.get(k, [])
        # data movement and small products read whole values made before their kernel: the
        # residual itself, not a copy recomputed inside
        result.append(_renamed(e, renames.get(stretch[k], {})) if is_fusible(e) else e)
    return result


def row_kind(shape, space):
    """'row' for the whole (rows, C) space, 'per_row' for one value per row, 'scalar' for one
    value, else None."""
    shape, space = tuple(shape), tuple(space)
    if shape == space:
        return "row"
    if shape in (space[:-1], space[:-1] + (1,)):
        return "per_row"
    if int(np.prod(shape, dtype=np.int64)) == 1:
        return "scalar"
    return None


def column_broadcast(eqn, space) -> bool:
    """A broadcast of one value per column (a layer norm's scale, each centroid's norm) over
    the whole (rows, C) space: the row kernel loads it along each row."""
    if eqn.primitive is not lax.broadcast_in_dim_p or not isinstance(eqn.invars[0], Var) \
            or tuple(eqn.outvars[0].aval.shape) != tuple(space):
        return False
    src, dims = tuple(eqn.invars[0].aval.shape), tuple(eqn.params["broadcast_dimensions"])
    return (len(dims) >= 1 and dims[-1] == len(space) - 1 and src[-1] == space[-1]
            and all(d == 1 for d in src[:-1]))


def row_accepts(eqn, space) -> bool:
    p = eqn.primitive
    vs = eqn.outvars + [v for v in eqn.invars if isinstance(v, Var)]
    if not all(v.aval.dtype.name in ROW_DTYPES for v in vs):
        return False
    if p in ROW_REDUCTIONS or p in ROW_ARG_REDUCTIONS or _row_pick(eqn):
        return (dtypes.kind(eqn.invars[0].aval.dtype) == "f"
                and row_reduction_space(eqn) == tuple(space))
    if p is lax.iota_p:
        return tuple(eqn.params["shape"]) == tuple(space)
    if column_broadcast(eqn, space):
        return True
    kinds = [row_kind(v.aval.shape, space) for v in eqn.outvars]
    if any(k is None for k in kinds):
        return False
    if p is lax.reshape_p:
        return kinds[0] == "per_row" and row_kind(eqn.invars[0].aval.shape, space) == "per_row"
    if p is lax.broadcast_in_dim_p:
        src = row_kind(eqn.invars[0].aval.shape, space)
        nd = len(space)
        return src == "scalar" or (src == "per_row" and kinds[0] == "row" and tuple(
            eqn.params["broadcast_dimensions"])[:nd - 1] == tuple(range(nd - 1)))
    return p in ELEMENTWISE


def row_group(eqns, i):
    """The longest row group starting at ``eqns[i]``: ``(end, space)`` or None."""
    j, space = i, None
    while j < len(eqns):
        space = row_reduction_space(eqns[j])
        if space is not None or eqns[j].primitive in ROW_REDUCTIONS:
            break       # the first reduction decides the row space (none: no row group)
        if not is_fusible(eqns[j]) and eqns[j].primitive is not lax.reshape_p:
            return None
        j += 1
    if not space:
        return None
    k = i
    while k < len(eqns) and row_accepts(eqns[k], space):
        k += 1
    k = _columns_read_whole(eqns, i, k, space)
    has_reduction = any(row_reduction_space(e) == space for e in eqns[i:k])
    return (_total_tail(eqns, k, space), space) if has_reduction else None


def _columns_read_whole(eqns, i, k, space) -> int:
    """Where the row group ``eqns[i:k]`` must end so that each value it broadcasts along its
    columns is one of its inputs, read by nothing else in it (a (C,) value with as many rows as
    columns would otherwise be taken for one value per row)."""
    made = {v for e in eqns[i:k] for v in e.outvars}
    for m in range(i, k):
        if column_broadcast(eqns[m], space):
            src = eqns[m].invars[0]
            if src in made or any(src in e.invars for e in eqns[i:k]
                                  if not (column_broadcast(e, space) and e.invars[0] is src)):
                return m
    return k


def row_total(eqn, space) -> bool:
    """A float reduction of one value per row to a single value (a loss averaged over the batch):
    it joins the row group, whose last block to finish combines the rows' values."""
    if eqn.primitive not in ROW_REDUCTIONS or not isinstance(eqn.invars[0], Var):
        return False
    x, y = eqn.invars[0], eqn.outvars[0]
    return (dtypes.kind(x.aval.dtype) == "f" and x.aval.dtype.name in ROW_DTYPES
            and row_kind(x.aval.shape, space) == "per_row"
            and row_kind(y.aval.shape, space) == "scalar")


def _scalar_only(eqn, space) -> bool:
    vs = eqn.outvars + [v for v in eqn.invars if isinstance(v, Var)]
    return ((is_fusible(eqn) or eqn.primitive is lax.reshape_p) and eqn.primitive is not lax.iota_p
            and all(v.aval.dtype.name in ROW_DTYPES and row_kind(v.aval.shape, space) == "scalar"
                    for v in vs))


def _total_tail(eqns, k, space):
    """Where a row group ending at ``k`` ends once the reductions of its per-row values to single
    values, and the scalar arithmetic after them, join it. Nothing per row may follow a total:
    the rows are done by then."""
    end, totals = k, False
    while end < len(eqns):
        if row_total(eqns[end], space):
            totals = True
        elif not (totals and _scalar_only(eqns[end], space)):
            break
        end += 1
    return end


def leading_sum(eqn, shape) -> bool:
    """A float sum over one or more leading axes (of ``shape``, when given)."""
    if eqn.primitive is not lax.reduce_sum_p or not isinstance(eqn.invars[0], Var):
        return False
    in_shape = tuple(eqn.invars[0].aval.shape)
    axes = tuple(eqn.params["axes"])
    if len(axes) == len(in_shape) and int(np.prod(in_shape, dtype=np.int64)) > SMALL_TOTAL:
        return False
    return ((shape is None or in_shape == tuple(shape)) and 0 < len(axes)
            and axes == tuple(range(len(axes))) and dtypes.kind(eqn.invars[0].aval.dtype) == "f")


# -- dense layers: dot_general + bias + activation


def _uses(eqns, outvars):
    """var -> indices of the equations reading it (len(eqns) for a program output)."""
    users: dict = {}
    for k, e in enumerate(eqns):
        for v in e.invars:
            if isinstance(v, Var):
                users.setdefault(v, []).append(k)
    for v in outvars:
        if isinstance(v, Var):
            users.setdefault(v, []).append(len(eqns))
    return users


def _bias_add(add, producer, users):
    """``(dot index, bias-broadcast index, bias)`` if ``add`` adds a bias along rows to a 2-D
    product that nothing else reads, else None."""
    out = add.outvars[0].aval
    if len(out.shape) != 2 or dtypes.kind(out.dtype) != "f":
        return None
    for d, bb in (add.invars, add.invars[::-1]):
        dot, bc = producer.get(d), producer.get(bb)
        if dot is None or bc is None or dot[1].primitive is not lax.dot_general_p \
                or bc[1].primitive is not lax.broadcast_in_dim_p:
            continue
        (lc, rc), (lb, rb) = dot[1].params["dimension_numbers"]
        if lb or rb or len(lc) != 1 or len(rc) != 1 \
                or not all(isinstance(v, Var) for v in dot[1].invars):
            continue
        b = bc[1].invars[0]
        if not isinstance(b, Var) or b.aval.shape != out.shape[1:] \
                or tuple(bc[1].params["broadcast_dimensions"]) != (1,):
            continue
        if len(users.get(d, ())) != 1 or len(users.get(bb, ())) != 1:
            continue
        return dot[0], bc[0], b
    return None


class DenseLayer(NamedTuple):
    """One ``act(x @ w + b)`` of a program, as indices of its equations."""
    dot: int
    bias: int               # the broadcast of the bias vector along rows
    add: int
    act: str                # "none", "relu", "leaky_relu:<slope>", "tanh", "logistic",
    #                         "gelu_tanh" or "gelu_erf" (GELU_FORMS)
    act_eqns: tuple         # the activation's equations
    out: Var                # the layer's result: the activation's, or the biased product
    mask: int | None        # a ReLU's ``z > 0`` (``z >= 0`` if leaky), read by the backward
    constants: tuple        # broadcast zeros that only the layer reads
    escapes: bool           # a value inside the layer, besides ``out`` and the mask, is read
    #                         outside it (``z`` kept for a backward pass, say)
    mask_read: bool         # the mask is read outside the activation (by the backward pass)

    def indices(self) -> set:
        return {self.dot, self.bias, self.add, *self.act_eqns, *self.constants} | \
            ({self.mask} if self.mask is not None else set())


def dense_layers(eqns, outvars) -> list[DenseLayer]:
    """Every dense layer in ``eqns``: a 2-D product, a bias added along rows, and the
    activation its biased result ``z`` goes through (relu as ``max(z, 0)``, its mask the
    ``z > 0`` its backward pass reads, leaky relu as ``select_n(z >= 0, slope * z, z)``, tanh,
    logistic, or gelu, tanh or erf form, checked on probe values); the GPU's dense-layer
    calls (fnx.cuda.epilogue) come from here."""
    producer = {v: (k, e) for k, e in enumerate(eqns) for v in e.outvars}
    users = _uses(eqns, outvars)
    layers = []
    for k, add in enumerate(eqns):
        if add.primitive is not lax.add_p:
            continue
        match = _bias_add(add, producer, users)
        if match is None:
            continue
        z = add.outvars[0]
        act, act_eqns, out, mask, zeros = _activation(z, eqns, producer, users)
        layer = DenseLayer(match[0], match[1], k, act, tuple(sorted(act_eqns)), out, mask, (),
                           False, mask is not None and any(
                               u not in act_eqns for u in users.get(eqns[mask].outvars[0], ())))
        inside = layer.indices()
        constants = tuple(c for c in zeros if set(users.get(eqns[c].outvars[0], ())) <= inside)
        inside |= set(constants)
        allowed = {out} | ({eqns[mask].outvars[0]} if mask is not None else set())
        escapes = any(u not in inside for j in inside for v in eqns[j].outvars
                      if v not in allowed for u in users.get(v, ()))
        layers.append(layer._replace(constants=constants, escapes=escapes))
    return layers


def _zero(v, producer):
    """``(is zero, [index of the broadcast making it])`` for an operand ``v``."""
    if isinstance(v, Literal):
        return is_constant(v, 0, {}), []
    k = producer.get(v)
    if k is None or not is_constant(v, 0, {v: k[1]}):
        return False, []
    return True, [k[0]]


def _activation(z, eqns, producer, users):
    """``(name, equations, result, mask, zero broadcasts)`` of the activation applied to
    ``z`` (``("none", (), z, None, [])`` if none is)."""
    for k in users.get(z, ()):
        e = eqns[k] if k < len(eqns) else None
        if e is None:
            continue
        if e.primitive is lax.max_p and z in e.invars:
            is_zero, zeros = _zero(e.invars[1] if e.invars[0] is z else e.invars[0], producer)
            if is_zero:
                mask, more = _positive_mask(z, eqns, producer, users)
                return "relu", (k,), e.outvars[0], mask, zeros + more
        if e.primitive in (lax.gt_p, lax.ge_p) and e.invars[0] is z:
            is_zero, zeros = _zero(e.invars[1], producer)
            relu = _relu_select(e, k, z, eqns, producer, users) if is_zero else None
            if relu:
                name, members, out, more = relu
                return name, members, out, k, zeros + more
        if e.primitive in (lax.tanh_p, lax.logistic_p):
            return e.primitive.name, (k,), e.outvars[0], None, []
    gelu = _gelu(z, eqns, producer)
    form = _gelu_form(z, sorted(gelu), eqns) if gelu else None
    if form:
        return form, tuple(gelu), eqns[max(gelu)].outvars[0], None, []
    return "none", (), z, None, []


_GELU_PROBE = np.linspace(-6.0, 6.0, 61)
GELU_FORMS = {   # name -> the float64 function, for the probe below
    "gelu_tanh": lambda z: 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3))),
    "gelu_erf": lambda z: 0.5 * z * (1 + np.vectorize(math.erf)(z / np.sqrt(2))),
}


def _gelu_tanh_slope(z):
    t = np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3))
    return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * z * z)


GELU_SLOPES = {"gelu_tanh": _gelu_tanh_slope}    # the derivatives cuBLASLt's DGELU computes


def probe_values(eqns, indices, inputs, out):
    """``out`` (float64 NumPy) as the equations at ``indices`` compute it on the CPU from
    ``inputs = {var: 1-D probe values}``, broadcast constants taking the probes' shape; None
    if anything is unusual."""
    cpu = get_backend("cpu")
    shape = np.shape(next(iter(inputs.values())))

    def probe(value, dtype):
        return Array(np.full(shape, value, dtype) if np.ndim(value) == 0 else
                     np.asarray(value, dtype), cpu)
    env = {v: probe(x, np.dtype(v.aval.dtype)) for v, x in inputs.items()}
    try:
        with set_current_trace(EvalTrace(None)), np.errstate(all="ignore"):
            for k in indices:
                e = eqns[k]
                if e.primitive is lax.broadcast_in_dim_p:       # a constant, probe-shaped
                    env[e.outvars[0]] = probe(_literal_value(e.invars[0]), e.outvars[0].aval.dtype)
                    continue
                args = [env[v] if isinstance(v, Var) else probe(_literal_value(v), v.aval.dtype)
                        for v in e.invars]
                env[e.outvars[0]] = e.primitive.bind(*args, **e.params)
        return np.asarray(cpu.to_numpy(env[out]._value), np.float64)
    except Exception:       # anything unusual: nothing a kernel may stand in for
        return None


def _gelu_form(z, indices, eqns):
    """Which gelu (``GELU_FORMS``) the elementwise equations at ``indices`` compute from ``z``,
    found by running them on probe values of ``z``; None if neither (a look-alike whose
    constants differ)."""
    out = probe_values(eqns, indices, {z: _GELU_PROBE}, eqns[indices[-1]].outvars[0])
    if out is None:
        return None
    probe = _GELU_PROBE.astype(z.aval.dtype).astype(np.float64)
    for name, ref in GELU_FORMS.items():
        if np.allclose(out, ref(probe), rtol=1e-4, atol=1e-5):
            return name
    return None


def _positive_mask(z, eqns, producer, users):
    """``(index, zero broadcasts)`` of a ``z > 0`` that reads ``z`` (``nn.relu``'s backward
    pass keeps it); ``(None, [])`` if there is none."""
    for k in users.get(z, ()):
        e = eqns[k] if k < len(eqns) else None
        if e is not None and e.primitive is lax.gt_p and e.invars[0] is z:
            is_zero, zeros = _zero(e.invars[1], producer)
            if is_zero:
                return k, zeros
    return None, []


def _relu_select(cmp, k, z, eqns, producer, users):
    """``(name, equations, result, zero broadcasts)`` of ``select_n(z >= 0, slope * z, z)``
    with a literal ``slope > 0`` (a leaky relu, whose result is ``>= 0`` exactly where ``z``
    is) reading the comparison ``cmp`` at index ``k``; None if there is none. (A relu written
    ``select_n(z > 0, 0, z)`` makes a NaN 0, where the kernels' relu, ``max(z, 0)``, keeps it:
    it is no activation of theirs.)"""
    for s in users.get(cmp.outvars[0], ()):
        sel = eqns[s] if s < len(eqns) else None
        if sel is None or sel.primitive is not lax.select_n_p or len(sel.invars) != 3 \
                or sel.invars[0] is not cmp.outvars[0] or sel.invars[2] is not z \
                or cmp.primitive is not lax.ge_p:
            continue
        low = sel.invars[1]
        scaled = producer.get(low)
        if scaled is None or scaled[1].primitive is not lax.mul_p or z not in scaled[1].invars \
                or users.get(low) != [s]:
            continue
        slope = [v for v in scaled[1].invars if v is not z]
        if len(slope) == 1 and isinstance(slope[0], Literal) and np.ndim(slope[0].val) == 0 \
                and float(slope[0].val) > 0:
            return f"leaky_relu:{float(slope[0].val)!r}", (scaled[0], s), sel.outvars[0], []
    return None


def _gelu(z, eqns, producer):
    """The indices of a gelu of ``z`` computed right after it: ``(c * z) * (1 + t)`` with ``t``
    a tanh (the approximate form) or an erf of an elementwise function of ``z`` and constants;
    empty if there is none."""
    window = _elementwise_window(z, eqns, producer)
    known = {v: k for k in window for v in eqns[k].outvars}

    def op(v):
        k = known.get(v)
        return (k, eqns[k]) if k is not None else (None, None)

    def is_literal(v):
        _, e = op(v)
        return isinstance(v, Literal) or (e is not None and e.primitive is
                                          lax.broadcast_in_dim_p
                                          and isinstance(e.invars[0], Literal))

    def is_scaled_z(v):
        if v is z:
            return True
        _, e = op(v)
        return e is not None and e.primitive is lax.mul_p and z in e.invars and all(
            is_literal(u) for u in e.invars if u is not z)

    def is_one_plus_t(v):
        _, e = op(v)
        if e is None or e.primitive is not lax.add_p:
            return False
        for one, t in (e.invars, e.invars[::-1]):
            _, te = op(t)
            if te is not None and te.primitive in (lax.tanh_p, lax.erf_p) and \
                    is_constant(one, 1, {u: eqns[k] for u, k in known.items()}):
                return True
        return False

    for k in window:
        e = eqns[k]
        if e.primitive is lax.mul_p and len(e.invars) == 2:
            a, b = e.invars
            if (is_scaled_z(a) and is_one_plus_t(b)) or (is_scaled_z(b) and is_one_plus_t(a)):
                return _slice_within(e.outvars[0], known, eqns)
    return set()


def _elementwise_window(z, eqns, producer):
    """Indices of the equations right after ``z``'s definition computed from ``z`` and
    constants alone (a broadcast literal counts as a constant)."""
    known, members, k = {z}, [], producer[z][0] + 1
    while k < len(eqns):
        e = eqns[k]
        reads = [v for v in e.invars if isinstance(v, Var)]
        const = e.primitive is lax.broadcast_in_dim_p and not reads
        if not const and not (e.primitive in ELEMENTWISE and reads
                              and all(v in known for v in reads)
                              and e.outvars[0].aval.shape == z.aval.shape):
            break
        known.update(e.outvars)
        members.append(k)
        k += 1
    return members


def _slice_within(v, known, eqns):
    """The indices (among ``known``'s producers) of the equations ``v`` is computed from."""
    needed, todo = set(), [v]
    while todo:
        k = known.get(todo.pop())
        if k is None or k in needed:
            continue
        needed.add(k)
        todo.extend(u for u in eqns[k].invars if isinstance(u, Var))
    return needed


