"""Generated RawKernels for chains of elementwise equations.

A chain of elementwise equations over one iteration shape becomes one CUDA kernel: each thread
computes every equation for its elements in registers, reading the chain's inputs once (with
broadcasting folded into index arithmetic) and writing only the values used after the chain.
Kernels are compiled once per (chain signature, dtypes, shapes) and cached in memory; CuPy
caches the compiled binaries on disk.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes, lax
from ..core.jaxpr import Literal
from ..core.remat_policies import name_p
from .fusion import MOVEMENT, small_product
from .compile import kernel as _compile

C_TYPES = {
    "bool": "bool", "int8": "signed char", "int16": "short", "int32": "int",
    "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long long", "float16": "__half",
    "bfloat16": "__nv_bfloat16", "float32": "float", "float64": "double",
}
# 16-bit floats are stored in CUDA's own types and computed in float: (load, store) conversions
_FLOAT_CONVERSIONS = {"float16": ("__half2float", "__float2half"),
                      "bfloat16": ("__bfloat162float", "__float2bfloat16")}


def compute_type(dtype) -> str:
    """The C type values of ``dtype`` are computed in (16-bit floats compute in float)."""
    name = np.dtype(dtype).name
    return "float" if name in _FLOAT_CONVERSIONS else C_TYPES[name]


def load_value(dtype, stored: str) -> str:
    """The C expression of a stored element ``stored`` of ``dtype`` in its compute type."""
    convert = _FLOAT_CONVERSIONS.get(np.dtype(dtype).name)
    return f"{convert[0]}({stored})" if convert else stored


def store_value(dtype, value: str) -> str:
    """The C expression storing ``value`` (of the compute type) as an element of ``dtype``."""
    convert = _FLOAT_CONVERSIONS.get(np.dtype(dtype).name)
    return f"{convert[1]}({value})" if convert else value


def headers(value_dtypes) -> str:
    """The ``#include`` lines of a kernel over values of ``value_dtypes``: cuda_bf16.h is large,
    so only kernels that touch bfloat16 parse it."""
    bf16 = any(np.dtype(d) == dtypes.bfloat16 for d in value_dtypes)
    return "#include <cuda_fp16.h>\n" + ("#include <cuda_bf16.h>\n" if bf16 else "")


def _is_float(dtype):
    return dtypes.kind(dtype) == "f"


def _minmax(op):
    def emit(a, b, dt):
        if _is_float(dt):   # NaN propagates, as in NumPy
            return f"(isnan({a}) || {a} {op} {b} ? {a} : {b})"
        return f"({a} {op} {b} ? {a} : {b})"
    return emit


def _integer_pow(a, dt, y):
    if y == 0:
        return f"(({compute_type(dt)})1)"
    base = " * ".join([a] * abs(y))
    return f"(({compute_type(dt)})1 / ({base}))" if y < 0 else f"({base})"


def _unsigned(dt) -> str:
    """The unsigned C type of an integer dtype's width."""
    return C_TYPES[f"uint{np.dtype(dt).itemsize * 8}"]


def _shift(op, over_wide):
    """XLA's shifts: a count outside [0, bit width) gives ``over_wide(a, dt)``; ``op(a, b, u, s)``
    is given the unsigned and signed C types of the width (no undefined behaviour for negative
    values)."""
    def emit(a, b, dt):
        u, bits = _unsigned(dt), np.dtype(dt).itemsize * 8
        return (f"(({u})({b}) >= {bits} ? {over_wide(a, dt)} : "
                f"({compute_type(dt)})({op(a, b, u, _signed(dt))}))")
    return emit


def _signed(dt) -> str:
    """The signed C type of an integer dtype's width."""
    return C_TYPES[f"int{np.dtype(dt).itemsize * 8}"]


def _sign_fill(a, dt):
    return f"(({_signed(dt)})({a}) < 0 ? ({compute_type(dt)})-1 : ({compute_type(dt)})0)"


def _div(a, b, dt):
    """XLA's division: integers truncate, x / 0 has every bit set and INT_MIN / -1 is INT_MIN
    (computed without C's undefined behaviour)."""
    if _is_float(dt):
        return f"({a} / {b})"
    ct = compute_type(dt)
    if np.dtype(dt).kind == "u":
        return f"({b} == 0 ? ({ct})-1 : ({ct})({a} / {b}))"
    return (f"({b} == 0 ? ({ct})-1 : {b} == -1 ? ({ct})(0 - ({_unsigned(dt)})({a})) : "
            f"({ct})({a} / {b}))")


def _rem(a, b, dt):
    """C's fmod for floats; XLA's integer remainder, where x % 0 is x (and x % -1 is 0)."""
    if _is_float(dt):
        return f"fmod({a}, {b})"
    ct = compute_type(dt)
    if np.dtype(dt).kind == "u":
        return f"({b} == 0 ? {a} : ({ct})({a} % {b}))"
    return f"({b} == 0 ? {a} : {b} == -1 ? ({ct})0 : ({ct})({a} % {b}))"


# primitive -> C expression; ``dt`` is the operands' dtype
UNARY = {
    lax.neg_p: lambda a, dt: f"(-{a})",
    # floats: +-0 and NaN are their own sign, as in XLA
    lax.sign_p: lambda a, dt: (f"(({a} == 0 || {a} != {a}) ? {a} : "
                               f"({compute_type(dt)})(({a} > 0) - ({a} < 0)))")
    if _is_float(dt) else f"(({a} > 0) - ({a} < 0))",
    lax.floor_p: lambda a, dt: f"floor({a})", lax.ceil_p: lambda a, dt: f"ceil({a})",
    lax.round_p: lambda a, dt: f"round({a})",
    lax.is_finite_p: lambda a, dt: f"isfinite({a})",
    lax.abs_p: lambda a, dt: f"fabs({a})" if _is_float(dt) else f"({a} < 0 ? -{a} : {a})",
    lax.exp_p: lambda a, dt: f"exp({a})", lax.log_p: lambda a, dt: f"log({a})",
    lax.log1p_p: lambda a, dt: f"log1p({a})", lax.expm1_p: lambda a, dt: f"expm1({a})",
    lax.sqrt_p: lambda a, dt: f"sqrt({a})", lax.rsqrt_p: lambda a, dt: f"rsqrt({a})",
    lax.sin_p: lambda a, dt: f"sin({a})", lax.cos_p: lambda a, dt: f"cos({a})",
    lax.tan_p: lambda a, dt: f"tan({a})", lax.asin_p: lambda a, dt: f"asin({a})",
    lax.acos_p: lambda a, dt: f"acos({a})", lax.atan_p: lambda a, dt: f"atan({a})",
    lax.sinh_p: lambda a, dt: f"sinh({a})", lax.cosh_p: lambda a, dt: f"cosh({a})",
    lax.tanh_p: lambda a, dt: f"tanh({a})", lax.asinh_p: lambda a, dt: f"asinh({a})",
    lax.acosh_p: lambda a, dt: f"acosh({a})", lax.atanh_p: lambda a, dt: f"atanh({a})",
    lax.logistic_p: lambda a, dt: f"(1 / (1 + exp(-{a})))",
    lax.erf_p: lambda a, dt: f"erf({a})",
    lax.not_p: lambda a, dt: f"(!{a})" if np.dtype(dt) == np.bool_ else f"(~{a})",
    lax.stop_gradient_p: lambda a, dt: a,
    lax.erf_inv_p: lambda a, dt: f"erfinv({a})",
    name_p: lambda a, dt: a,     # checkpoint_name, inside a remat that was spliced in
}
BINARY = {
    lax.add_p: lambda a, b, dt: f"({a} + {b})", lax.sub_p: lambda a, b, dt: f"({a} - {b})",
    lax.mul_p: lambda a, b, dt: f"({a} * {b})", lax.div_p: _div, lax.rem_p: _rem,
    lax.pow_p: lambda a, b, dt: f"pow({a}, {b})",
    lax.max_p: _minmax(">"), lax.min_p: _minmax("<"),
    lax.atan2_p: lambda a, b, dt: f"atan2({a}, {b})",
    lax.nextafter_p: lambda a, b, dt: f"nextafter({a}, {b})",
    lax.and_p: lambda a, b, dt: f"({a} & {b})", lax.or_p: lambda a, b, dt: f"({a} | {b})",
    lax.xor_p: lambda a, b, dt: f"({a} ^ {b})",
    lax.eq_p: lambda a, b, dt: f"({a} == {b})", lax.ne_p: lambda a, b, dt: f"({a} != {b})",
    lax.lt_p: lambda a, b, dt: f"({a} < {b})", lax.le_p: lambda a, b, dt: f"({a} <= {b})",
    lax.gt_p: lambda a, b, dt: f"({a} > {b})", lax.ge_p: lambda a, b, dt: f"({a} >= {b})",
    lax.shift_left_p: _shift(lambda a, b, u, s: f"({u})({a}) << ({u})({b})",
                             lambda a, dt: f"({compute_type(dt)})0"),
    lax.shift_right_logical_p: _shift(lambda a, b, u, s: f"({u})({a}) >> ({u})({b})",
                                      lambda a, dt: f"({compute_type(dt)})0"),
    # unsigned values shift as signed ones (XLA's rule)
    lax.shift_right_arithmetic_p: _shift(lambda a, b, u, s: f"({s})({a}) >> ({u})({b})",
                                         _sign_fill),
}
ELEMENTWISE = set(UNARY) | set(BINARY) | {lax.integer_pow_p, lax.select_n_p,
                                          lax.convert_element_type_p, lax.iota_p}


def emit(p, args, dt, out_ctype: str, params) -> str:
    """The C expression of elementwise primitive ``p`` on argument expressions ``args``
    (``dt``: the operands' dtype; ``out_ctype``: the C type of the result)."""
    if p in UNARY:
        return UNARY[p](args[0], dt)
    if p in BINARY:
        return BINARY[p](args[0], args[1], dt)
    if p is lax.integer_pow_p:
        return _integer_pow(args[0], dt, params["y"])
    if p is lax.convert_element_type_p:
        return f"(({out_ctype}){args[0]})"
    if p is lax.select_n_p:
        expr = args[1]
        for c in range(2, len(args)):
            expr = f"({args[0]} == {c - 1} ? {args[c]} : {expr})"
        return expr
    raise NotImplementedError(f"no CUDA expression for {p}")


def _literal(lit: Literal) -> str:
    v = np.asarray(lit.val).item()
    ct = compute_type(lit.aval.dtype)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if np.isinf(v):
            return f"(({ct})(1.0/0.0))" if v > 0 else f"(({ct})(-1.0/0.0))"
        if np.isnan(v):
            return f"(({ct})(0.0/0.0))"
        return f"(({ct}){v!r})"
    return f"(({ct}){v})"


def _strides(shape):
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def _coords(shape, flat="i") -> list:
    """C expressions of the coordinates, in ``shape``, of the element at linear index
    ``flat`` (in 32-bit arithmetic where the shape allows: see ``_load_index``)."""
    if int(np.prod(shape, dtype=np.int64)) < 2 ** 31:
        flat, suffix = f"((unsigned int)({flat}))", "u"
    else:
        flat, suffix = f"({flat})", "LL"
    return [f"({flat} / {st}{suffix} % {n}{suffix})" if st > 1 else f"({flat} % {n}{suffix})"
            for st, n in zip(_strides(shape), shape)]


def _flat(coords, shape) -> str:
    """C expression of the linear index of the element at ``coords`` in ``shape``."""
    return " + ".join(f"(long long)({c}) * {st}LL" if st > 1 else f"(long long)({c})"
                      for c, st in zip(coords, _strides(shape))) or "0"


class _At:
    """Where an element is, as a linear index or as coordinates (C expressions): data
    movement maps one to the other only where it must."""

    def __init__(self, flat=None, coords=None):
        self._flat, self._coords = flat, coords

    def flat(self, shape) -> str:
        return self._flat if self._flat is not None else _flat(self._coords, shape)

    def coords(self, shape) -> list:
        return self._coords if self._coords is not None else _coords(shape, self._flat)


def _load_index(in_shape, out_shape, bdims):
    """C expression for the element of an input of ``in_shape`` broadcast into ``out_shape``
    along ``bdims`` at output linear index ``i``."""
    if tuple(in_shape) == tuple(out_shape) and list(bdims) == list(range(len(out_shape))):
        return "i"
    if int(np.prod(in_shape, dtype=np.int64)) == 1:
        return "0"
    out_strides = _strides(out_shape)
    in_strides = _strides(in_shape)
    # 32-bit arithmetic where the iteration space allows it: a 64-bit division costs dozens
    # of instructions, a 32-bit one by a constant a multiply and a shift
    narrow = int(np.prod(out_shape, dtype=np.int64)) < 2 ** 31
    i, suffix = ("((unsigned int)i)", "u") if narrow else ("i", "LL")
    terms = []
    for j, d in enumerate(bdims):
        if in_shape[j] == 1:
            continue
        coord = i if out_strides[d] == 1 else f"({i} / {out_strides[d]}{suffix})"
        if d > 0:       # (the first coordinate is below its size already)
            coord = f"({coord} % {out_shape[d]}{suffix})"
        terms.append(f"{coord} * {in_strides[j]}{suffix}" if in_strides[j] != 1 else coord)
    return ("(long long)(" + " + ".join(terms) + ")" if narrow else " + ".join(terms)) \
        if terms else "0"


class FusedKernel:
    """One generated kernel for a chain of equations over ``shape``."""

    def __init__(self, eqns, inputs, outputs, shape, also_read=()):
        self.eqns = eqns
        self.also_read = also_read    # inputs the body must load even if no equation reads them
        self.inputs = inputs          # Vars read from outside the chain
        self.outputs = outputs        # Vars written for use after the chain
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.shared_bytes = 0
        self.source, self.name = self._generate()
        self._kernel = None

    def params(self):
        """The kernel's pointer parameters, ``[(declaration, name)]``: inputs, then outputs."""
        return ([(f"const {C_TYPES[v.aval.dtype.name]}* __restrict__", f"in{k}")
                 for k, v in enumerate(self.inputs)]
                + [(f"{C_TYPES[v.aval.dtype.name]}* __restrict__", f"out{k}")
                   for k, v in enumerate(self.outputs)])

    def _generate(self):
        body = self.body()
        sig = ", ".join([f"{d} {n}" for d, n in self.params()] + ["long long n"])
        name = "fnx_fused_" + "_".join(e.primitive.name for e in self.eqns)[:80]
        name = name.replace("-", "_")
        src = (
            headers(self.value_dtypes()) +
            f'extern "C" __global__ void {name}({sig}) {{\n'
            "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "       i += (long long)gridDim.x * blockDim.x) {\n"
            f"{body}\n"
            "  }\n"
            "}\n")
        return src, name

    def value_dtypes(self):
        """The dtypes of every value the kernel reads, computes or writes."""
        vs = [*self.inputs, *self.outputs, *(v for e in self.eqns for v in e.invars + e.outvars)]
        return {v.aval.dtype for v in vs}

    def body(self, coords=None) -> str:
        """The statements computing element ``i`` of every output. ``coords``: C expressions
        of a 2-D element's row and column, where the caller has them (a small product's
        operand loads that depend on one of them can then leave a loop over the other)."""
        names = {}
        lines = []
        shape = self.shape

        def elsewhere(v):
            """A value of another shape than the iteration's (not a scalar): data movement
            reads it, computed at the indices the movement maps to (``value_at``)."""
            return tuple(v.aval.shape) not in (shape, ())
        producer = {v: e for e in self.eqns for v in e.outvars}
        # inputs reach the iteration shape directly, through a broadcast_in_dim or data
        # movement (loads at other indices), or as scalars
        bcast_of, moved = {}, {}
        for e in self.eqns:
            if elsewhere(e.outvars[0]):
                continue
            if e.primitive is lax.broadcast_in_dim_p and e.invars[0] in self.inputs:
                bcast_of[e.outvars[0]] = (e.invars[0], e.params["broadcast_dimensions"])
            elif e.primitive in MOVEMENT:
                moved[e.outvars[0]] = e

        def load(k, v, index):
            return load_value(v.aval.dtype, f"in{k}[{index}]")

        def value_at(v, at):
            """C expression of ``v``'s element at coordinates ``at`` (inline, so that a
            load under a pad's or a concatenation's condition stays under it)."""
            if isinstance(v, Literal):
                return _literal(v)
            if not v.aval.shape:
                return names[v] if v in names else load(self.inputs.index(v), v, "0")
            if v in self.inputs:
                return load(self.inputs.index(v), v, at.flat(v.aval.shape))
            e = producer[v]
            p, ct = e.primitive, compute_type(v.aval.dtype)
            if p in MOVEMENT:
                return self._moved(e, at, value_at)
            if p is lax.broadcast_in_dim_p:
                x = e.invars[0]
                if isinstance(x, Literal) or not x.aval.shape:
                    return value_at(x, None)
                c = at.coords(v.aval.shape)
                return value_at(x, _At(coords=["0" if x.aval.shape[j] == 1 else c[d] for j, d
                                               in enumerate(e.params["broadcast_dimensions"])]))
            if p is lax.iota_p:
                return f"(({ct})({at.coords(v.aval.shape)[e.params['dimension']]}))"
            dt = e.invars[-1].aval.dtype if e.invars else v.aval.dtype
            return emit(p, [value_at(a, at) for a in e.invars], dt, ct, e.params)

        # a small product reads its operands at the indices of its own sums
        direct = {v for e in self.eqns
                  if not elsewhere(e.outvars[0]) and e.outvars[0] not in bcast_of
                  and not small_product(e)
                  for v in (e.invars if e.outvars[0] not in moved else e.invars[1:]
                            if e.primitive is lax.pad_p else ())}
        direct |= set(self.outputs) | set(self.also_read)
        for k, v in enumerate(self.inputs):
            if v not in direct:
                continue          # read only through a broadcast, with its own indexing
            ct = compute_type(v.aval.dtype)
            nd = len(v.aval.shape)
            index = _load_index(v.aval.shape, self.shape, tuple(range(len(self.shape) - nd,
                                                                     len(self.shape))))
            names[v] = f"v_in{k}"
            lines.append(f"    const {ct} v_in{k} = {load(k, v, index)};")
        counter = 0
        for e in self.eqns:
            out = e.outvars[0]
            if elsewhere(out):
                continue
            if out in bcast_of:
                src, bd = bcast_of[out]
                k = self.inputs.index(src)
                index = _load_index(src.aval.shape, self.shape, bd)
                names[out] = f"t{counter}"
                lines.append(f"    const {compute_type(out.aval.dtype)} t{counter} = "
                             f"{load(k, src, index)};")
                counter += 1
                continue
            if out in moved:
                names[out] = f"t{counter}"
                lines.append(f"    const {compute_type(out.aval.dtype)} t{counter} = "
                             f"{self._moved(e, _At(flat='i'), value_at)};")
                counter += 1
                continue
            p = e.primitive
            dt = e.invars[-1].aval.dtype if e.invars else out.aval.dtype
            if small_product(e):
                expr = self._product(e, load, coords)
            elif p is lax.iota_p:
                d = e.params["dimension"]
                expr = (f"(({compute_type(out.aval.dtype)})((i / {_strides(self.shape)[d]}LL) "
                        f"% {self.shape[d]}LL))")
            elif p is lax.broadcast_in_dim_p:
                # a value computed inside the chain: a scalar, or cheap work the kernel redoes
                # for each element (fusion.cheap_to_broadcast)
                expr = value_at(out, _At(flat="i"))
            else:
                args = [_literal(a) if isinstance(a, Literal) else names[a] for a in e.invars]
                expr = emit(p, args, dt, compute_type(out.aval.dtype), e.params)
            names[out] = f"t{counter}"
            lines.append(f"    const {compute_type(out.aval.dtype)} t{counter} = {expr};")
            counter += 1
        for k, v in enumerate(self.outputs):
            val = store_value(v.aval.dtype,
                              names[v] if not isinstance(v, Literal) else _literal(v))
            if int(np.prod(v.aval.shape, dtype=np.int64)) == self.size:
                lines.append(f"    out{k}[i] = {val};")
            else:   # a scalar computed along the chain: one element writes it
                lines.append(f"    if (i == 0) out{k}[0] = {val};")
        self.names = names
        return "\n".join(lines)

    @staticmethod
    def _moved(e, at, value_at) -> str:
        """The element of data-movement equation ``e``'s result at ``at`` (an ``_At``), from
        its operands' elements where the movement maps it (``value_at(operand, _At)``)."""
        p, x = e.primitive, e.invars[0]
        out_shape = e.outvars[0].aval.shape
        if p is lax.reshape_p:
            return value_at(x, _At(flat=at.flat(out_shape)))
        coords = at.coords(out_shape)
        if p is lax.transpose_p:
            src = [None] * len(coords)
            for d, axis in enumerate(e.params["permutation"]):
                src[axis] = coords[d]
            return value_at(x, _At(coords=src))
        if p is lax.rev_p:
            return value_at(x, _At(coords=[
                f"({n - 1}LL - {c})" if d in e.params["dimensions"] else c
                for d, (c, n) in enumerate(zip(coords, x.aval.shape))]))
        if p is lax.take_p:     # an index clamped into the axis, as the CPU backend does
            axis, idx = e.params["axis"], e.invars[1]
            n_idx = len(idx.aval.shape)
            j = value_at(idx, _At(coords=coords[axis:axis + n_idx]))
            n = x.aval.shape[axis]
            return value_at(x, _At(coords=coords[:axis]
                                   + [f"min(max((long long)({j}), 0LL), {n - 1}LL)"]
                                   + coords[axis + n_idx:]))
        if p is lax.slice_p:
            return value_at(x, _At(coords=[f"({s}LL + {c} * {st}LL)" for c, s, st in zip(
                coords, e.params["start_indices"], e.params["strides"])]))
        if p is lax.pad_p:
            inside, src = [], []
            for c, (lo, _, interior), n in zip(coords, e.params["padding_config"],
                                               x.aval.shape):
                r = f"((long long)({c}) - {lo}LL)"
                if interior:
                    inside.append(f"{r} % {interior + 1}LL == 0")
                    r = f"({r} / {interior + 1}LL)"
                inside.append(f"{r} >= 0 && {r} < {n}LL")
                src.append(r)
            return (f"(({' && '.join(inside)}) ? {value_at(x, _At(coords=src))} : "
                    f"{value_at(e.invars[1], None)})")
        # concatenate: the operand whose span along the axis holds the coordinate
        axis = e.params["dimension"]
        starts = np.cumsum([0] + [v.aval.shape[axis] for v in e.invars])
        expr = None
        for v, start, end in reversed(list(zip(e.invars, starts[:-1], starts[1:]))):
            src = _At(coords=[f"((long long)({c}) - {start}LL)" if d == axis else c
                              for d, c in enumerate(coords)])
            expr = value_at(v, src) if expr is None else \
                f"((long long)({coords[axis]}) < {end}LL ? {value_at(v, src)} : {expr})"
        return expr

    def _product(self, e, load, coords) -> str:
        """Element ``i`` of a small product: its few terms summed in order."""
        (lc, rc), _ = e.params["dimension_numbers"]
        a, b = e.invars
        m, n = e.outvars[0].aval.shape
        terms = a.aval.shape[lc[0]]
        row, col = coords or (f"(i / {n}LL)", f"(i % {n}LL)")

        def at_a(t):
            return f"{row} * {terms}LL + {t}" if lc[0] == 1 else f"{t * m}LL + {row}"

        def at_b(t):
            return f"{t * n}LL + {col}" if rc[0] == 0 else f"{col} * {terms}LL + {t}"
        ka, kb = self.inputs.index(a), self.inputs.index(b)
        return "(" + " + ".join(f"{load(ka, a, at_a(t))} * {load(kb, b, at_b(t))}"
                                for t in range(terms)) + ")" if terms else "0"

    def kernel(self):
        if self._kernel is None:
            self._kernel = _compile(self.source, self.name)
        return self._kernel

    def extra_args(self):
        return (np.int64(self.size),)

    def launch_config(self, sm_count: int):
        threads = 256
        blocks = max(1, min((self.size + threads - 1) // threads, sm_count * 16))
        return (blocks,), (threads,)


class MultiKernel:
    """Independent elementwise chains of different shapes in one launch, thread ``t`` working
    on the chain whose index range holds it: an optimizer's update of every parameter, say,
    costs one launch instead of one per parameter."""

    def __init__(self, kernels):
        self.kernels = kernels
        self.eqns = [e for k in kernels for e in k.eqns]
        self.offsets = np.cumsum([0] + [k.size for k in kernels]).tolist()
        self.size = self.offsets[-1]
        self.shape = (self.size,)
        self.shared_bytes = 0
        self.source, self.name = self._generate()
        self._kernel = None

    def _generate(self):
        parts, sig, dispatch = [], [], []
        for j, k in enumerate(self.kernels):
            params = k.params()
            decl = ", ".join(f"{d} {n}" for d, n in params)
            parts.append(f"__device__ __forceinline__ void part{j}(long long i, {decl}) {{\n"
                         f"{k.body()}\n}}\n")
            sig += [f"{d} p{j}_{n}" for d, n in params]
            call = f"part{j}(t - {self.offsets[j]}LL, " + ", ".join(f"p{j}_{n}" for _, n in
                                                                     params) + ");"
            cond = f"if (t < {self.offsets[j + 1]}LL) " if j + 1 < len(self.kernels) else ""
            dispatch.append(("else " if j else "") + cond + call)
        name = f"fnx_multi_{len(self.kernels)}"
        value_dtypes = [d for k in self.kernels for d in k.value_dtypes()]
        src = (headers(value_dtypes) + "".join(parts)
               + f'extern "C" __global__ void {name}({", ".join(sig + ["long long n"])}) {{\n'
               "  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n;\n"
               "       t += (long long)gridDim.x * blockDim.x) {\n    "
               + "\n    ".join(dispatch) + "\n  }\n}\n")
        return src, name

    kernel = FusedKernel.kernel
    extra_args = FusedKernel.extra_args
    launch_config = FusedKernel.launch_config
