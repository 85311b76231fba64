"""The GPU's one fusion walk: a jaxpr rewritten for the GPU, then cut into launches.

``rewrite`` turns the optimized jaxpr into the equations the GPU runs (totals moved after the
row work that does not need them, convolutions decomposed or mapped onto cuDNN, transposes
folded into products, dense layers and gradient steps fused into library calls, cheap residuals
recomputed). ``plan`` walks them once, in order, and cuts
them into launches: generated kernels (elementwise chains, row groups, column sums, other
reductions, several independent kernels in one launch), gradient steps, control flow, and
library or eager calls. fnx.cuda.lowering lowers exactly these launches, and
``jit(f).lower(...).as_text()`` prints exactly these (``fusion_groups``), so what is printed is
what runs. Nothing here touches the GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import lax
from ..core.jaxpr import Jaxpr, Var, _Namer, dce_jaxpr, pp_jaxpr
from .control import lowering as control_lowering
from .contractions import products_as_contractions
from .decompose import decompose
from .epilogue import dense_p, fuse_dense_epilogues, fuse_gradient_steps, gemm_update_p
from .fusion import (MOVEMENT, _uses, cheap_to_broadcast, leading_sum, moved_operands,
                     outer_products_as_broadcasts, recompute_residuals, row_group, run_end,
                     sink_expansions, sink_totals, drop_weak_type_casts)
from .reductions import reduces, split_over_blocks
from .rows import joins_rows


def fold_transposed_products(jaxpr: Jaxpr):
    """``transpose(dot_general(a, b))`` of a 2-D product is ``dot_general(b, a)``: the backward
    pass of a dense layer writes its weight gradient this way, and folding the transpose into
    the product saves a copy kernel per layer."""
    n_uses: dict = {}
    for e in jaxpr.eqns:
        for v in e.invars:
            if isinstance(v, Var):
                n_uses[v] = n_uses.get(v, 0) + 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            n_uses[v] = n_uses.get(v, 0) + 1
    producer = {}
    folded, dropped = {}, set()
    for k, e in enumerate(jaxpr.eqns):
        if e.primitive is lax.dot_general_p:
            producer[e.outvars[0]] = k
        elif (e.primitive is lax.transpose_p and e.params["permutation"] == (1, 0)
              and e.invars[0] in producer and n_uses.get(e.invars[0]) == 1):
            d = jaxpr.eqns[producer[e.invars[0]]]
            (lc, rc), (lb, rb) = d.params["dimension_numbers"]
            if lb or rb:
                continue
            params = dict(d.params, dimension_numbers=((rc, lc), ((), ())))
            folded[producer[e.invars[0]]] = d.replace(invars=[d.invars[1], d.invars[0]],
                                                      outvars=list(e.outvars), params=params)
            dropped.add(k)
    return [folded.get(k, e) for k, e in enumerate(jaxpr.eqns) if k not in dropped]


def rewrite(jaxpr: Jaxpr) -> list:
    """The equations the GPU runs for ``jaxpr`` (same inputs, same results)."""
    eqns = outer_products_as_broadcasts(decompose(fold_transposed_products(
        sink_totals(drop_weak_type_casts(jaxpr)))))
    eqns = products_as_contractions(eqns)
    eqns = fuse_gradient_steps(fuse_dense_epilogues(eqns, jaxpr.outvars), jaxpr.outvars)
    eqns = sink_expansions(recompute_residuals(eqns, jaxpr.outvars), jaxpr.outvars)
    # what the fused layers left unread (an activation's constant operands)
    return dce_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns))[0].eqns


def readers(eqns, outvars) -> dict:
    """var -> the set of indices of the equations reading it (``len(eqns)`` for a program
    output)."""
    return {v: set(ks) for v, ks in _uses(eqns, outvars).items()}


@dataclass(frozen=True)
class Part:
    """One generated kernel: ``kind`` ("fused", "rows", "columns" or "reduce") over equations
    ``eqns`` (indices, increasing) in iteration ``shape``, writing ``outputs``. ``start``: for a
    kernel of an elementwise run, where the run starts (its results may then go straight into
    donated buffers that nothing reads after it); None otherwise."""
    kind: str
    eqns: tuple
    shape: tuple
    outputs: tuple
    start: int | None = None


@dataclass(frozen=True)
class Launch:
    """One step: ``kind`` "kernels" (its ``parts`` in one launch), or "gradient_step",
    "control" or "call" of equation ``eqn``."""
    kind: str
    parts: tuple = ()
    eqn: int | None = None


def plan(eqns, outvars, sm_count: int) -> list[Launch]:
    """The launches that run ``eqns`` (``rewrite``'s result) in order, on a GPU of
    ``sm_count`` multiprocessors."""
    users = readers(eqns, outvars)

    def needed(indices):
        positions = set(indices)
        return tuple(v for k in indices for v in eqns[k].outvars
                     if users.get(v, set()) - positions)

    launches: list = []
    i = 0
    while i < len(eqns):
        found = row_group(eqns, i)
        if found is None and i + 1 < len(eqns) \
                and eqns[i].primitive in (lax.dot_general_p, dense_p):
            # a narrow product right before a row group over it: made in that kernel
            found = row_group(eqns, i + 1)
            if found is not None and not joins_rows(eqns[i], found[1]):
                found = None
        if found is not None and not split_over_blocks(eqns[i:found[0]], sm_count):
            end, shape = found
            indices = tuple(range(i, end))
            launches.append(Launch("kernels", (Part("rows", indices, tuple(shape),
                                                    needed(indices)),)))
            i = end
            continue
        j = run_end(eqns, i, users)
        if j > i:
            i = _elementwise_run(eqns, i, j, users, launches)
            continue
        e = eqns[i]
        if leading_sum(e, None):
            launches.append(Launch("kernels", (Part(
                "columns", (i,), tuple(e.invars[0].aval.shape), needed((i,))),)))
        elif e.primitive is gemm_update_p:
            launches.append(Launch("gradient_step", eqn=i))
        elif reduces(e):
            launches.append(Launch("kernels", (Part(
                "reduce", (i,), tuple(e.invars[0].aval.shape), tuple(e.outvars)),)))
        elif control_lowering(e) is not None:
            launches.append(Launch("control", eqn=i))
        else:
            launches.append(Launch("call", eqn=i))
        i += 1
    return launches


def _elementwise_run(eqns, i, j, users, launches) -> int:
    """The launches of the elementwise equations ``eqns[i:j]``: one kernel per iteration shape
    (scalar equations, and values data movement reads at other indices, are computed inside
    every kernel that needs them), and kernels that do not read each other's results share one
    launch. A sum over leading axes right after the run joins the kernel that makes its
    operand. Returns where the walk goes on."""
    run = list(range(i, j))
    shape_of = {k: tuple(eqns[k].outvars[0].aval.shape) for k in run}
    made_at = {v: k for k in run for v in eqns[k].outvars}
    members: dict = {}
    for k in run:
        if shape_of[k] != ():
            members.setdefault(shape_of[k], set()).add(k)

    # the iteration shape of a kernel that may end in the reduction right after the run (its
    # epilogue, below): it computes no broadcast value, as such kernels do no index arithmetic
    reduced = tuple(eqns[j].invars[0].aval.shape) if j < len(eqns) and (
        leading_sum(eqns[j], None) or reduces(eqns[j])) else None

    def with_deps(shape, ks):
        """``ks`` with the scalar work they read, and what data movement reads at other
        indices (the kernel computes it there: fusion.index_computable)."""
        todo, acc = list(ks), set(ks)
        while todo:
            k = todo.pop()
            e = eqns[k]
            elsewhere = shape_of[k] not in (shape, ())
            for v in e.invars:
                m = made_at.get(v)
                if m is None or m in acc:
                    continue
                if shape_of[m] == () or elsewhere or (
                        e.primitive in MOVEMENT and v in moved_operands(e)) or (
                        e.primitive is lax.broadcast_in_dim_p and shape != reduced
                        and cheap_to_broadcast(v, made_at, eqns)):
                    acc.add(m)
                    todo.append(m)
        return acc
    classes = {shape: with_deps(shape, ks) for shape, ks in members.items()}
    covered = set().union(*classes.values()) if classes else set()
    left = [k for k in run if k not in covered]
    if left:
        classes[()] = with_deps((), left)
    # an equation in several kernels is written by the kernel of its own shape (the others
    # compute it where they need it), a scalar one by the first
    owner: dict = {k: shape_of[k] for k in run if k in classes.get(shape_of[k], ())}
    for shape, ks in classes.items():
        for k in ks:
            owner.setdefault(k, shape)
    deps = {shape: {owner[made_at[v]] for k in ks for v in eqns[k].invars
                    if v in made_at and made_at[v] not in ks} for shape, ks in classes.items()}
    kernels_of: dict = {}
    for ks in classes.values():
        for k in ks:
            kernels_of.setdefault(k, []).append(ks)

    def loads(u, k) -> bool:
        """Whether reader ``u`` of equation ``k``'s result loads it (rather than every kernel
        computing ``u`` computing it too)."""
        return u not in kernels_of or any(k not in ks for ks in kernels_of[u])
    level: dict = {}

    def level_of(shape):
        if shape not in level:
            level[shape] = 1 + max((level_of(d) for d in deps[shape]), default=-1)
        return level[shape]
    for shape in classes:
        level_of(shape)
    # a reduction of a value one (final) kernel makes becomes that kernel's epilogue: a sum
    # over leading axes as a column kernel, any other as a reduction kernel
    epilogue = None
    if reduced is not None:
        src, shape = made_at.get(eqns[j].invars[0]), reduced
        # (not over data movement: a column kernel has few threads, each running the whole
        # chain for many rows, where index arithmetic costs more than a load)
        if src is not None and owner[src] == shape and shape in classes and \
                not any(shape in d for d in deps.values()) and \
                not any(eqns[k].primitive in MOVEMENT for k in classes[shape]):
            epilogue = shape
            kind = "columns" if leading_sum(eqns[j], None) else "reduce"
    for lvl in range(max(level.values()) + 1):
        parts = []
        for shape, ks in classes.items():
            if level[shape] != lvl:
                continue
            order = tuple(sorted(ks))
            mine = {k for k in ks if owner[k] == shape}
            outputs = tuple(v for k in order if k in mine for v in eqns[k].outvars
                            if any(loads(u, k) for u in users.get(v, ())))
            if shape == epilogue:
                launches.append(Launch("kernels", (Part(
                    kind, order + (j,), shape,
                    tuple(v for v in outputs if users[v] != {j}) + (eqns[j].outvars[0],)),)))
            elif outputs:       # (a kernel none of whose results is read is not launched)
                parts.append(Part("fused", order, shape, outputs, start=i))
        if parts:
            launches.append(Launch("kernels", tuple(parts)))
    return j + (epilogue is not None)


# -- what is printed


@dataclass(frozen=True)
class FusionGroup:
    """One launch of a lowered program, as ``jit(f).lower(...).as_text()`` prints it.

    ``kind``: "elementwise", "rows", "columns", "reduce" or "multi" (several independent
    kernels in one launch) for generated kernels; "dense" (a product with its bias and
    activation, ``activation`` naming it), "product", "gradient_step", "control" or "call"
    otherwise. ``eqns``: the equations of the GPU's program (``rewrite``) it runs, in order;
    ``inputs``: the values it reads from outside; ``outputs``: those it makes that are read
    after it (or returned); ``shape``: the iteration shape of a generated kernel, the first
    result's shape otherwise.
    """
    kind: str
    eqns: tuple
    inputs: tuple
    outputs: tuple
    shape: tuple
    activation: str | None = None


_KIND = {"fused": "elementwise", "rows": "rows", "columns": "columns", "reduce": "reduce"}


def _group(launch: Launch, eqns) -> FusionGroup:
    if launch.kind == "kernels":
        indices = sorted({k for p in launch.parts for k in p.eqns})
        kind = "multi" if len(launch.parts) > 1 else _KIND[launch.parts[0].kind]
        shape = launch.parts[0].shape if len(launch.parts) == 1 else ()
        outputs = tuple(v for p in launch.parts for v in p.outputs)
    else:
        indices = [launch.eqn]
        e = eqns[launch.eqn]
        kind = {dense_p: "dense", lax.dot_general_p: "product"}.get(e.primitive, launch.kind)
        shape = e.outvars[0].aval.shape if e.outvars else ()
        outputs = tuple(e.outvars)
    members = [eqns[k] for k in indices]
    produced = {v for e in members for v in e.outvars}
    inputs: list = []
    for e in members:
        for v in e.invars:
            if isinstance(v, Var) and v not in produced and v not in inputs:
                inputs.append(v)
    act = members[0].params.get("act") if kind == "dense" else None
    return FusionGroup(kind, tuple(members), tuple(inputs), outputs, tuple(shape), act)


def default_sm_count() -> int:
    """The current GPU's multiprocessor count; an H100's (132) where there is no GPU, so that a
    program's plan can be printed and tested anywhere."""
    try:
        import cupy as cp
        return cp.cuda.Device().attributes["MultiProcessorCount"]
    except Exception:       # noqa: BLE001  (no CuPy, no driver or no device)
        return 132


def fusion_groups(jaxpr: Jaxpr, sm_count: int | None = None) -> list[FusionGroup]:
    """The launches the GPU runs ``jaxpr`` as, one record each, in order.

    >>> [g.kind for g in fnx.jit(mlp_step).lower(params, x, y).fusion_groups][:3]
    ['dense', 'dense', 'dense']
    """
    eqns = rewrite(jaxpr)
    return [_group(launch, eqns)
            for launch in plan(eqns, jaxpr.outvars, sm_count or default_sm_count())]


def pp_fusion_groups(jaxpr: Jaxpr, groups, namer=None) -> str:
    """One line per launch: kind, iteration shape, inputs -> outputs (in the variable names of
    ``pp_jaxpr(jaxpr, namer=namer)``) and the primitives it runs.

    >>> print(pp_fusion_groups(jaxpr, fusion_groups(jaxpr)))
    GPU launches (1):
      0: elementwise [3]: (a) -> (c)  sin mul
    """
    if namer is None:
        namer = _Namer()
        pp_jaxpr(jaxpr, namer=namer)       # names in the order the printed jaxpr gives them
    lines = [f"GPU launches ({len(groups)}):"]
    for n, g in enumerate(groups):
        kind = g.kind + (f"[{g.activation}]" if g.activation else "")
        shape = f" [{','.join(map(str, g.shape))}]" if g.shape else ""
        prims = " ".join(e.primitive.name for e in g.eqns)
        lines.append(f"  {n}: {kind}{shape}: ({' '.join(map(namer, g.inputs))}) -> "
                     f"({' '.join(map(namer, g.outputs))})  {prims}")
    return "\n".join(lines)
