"""The jaxpr IR: variables, equations, printing, type checking and evaluation."""
from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np

from .core import Array, Primitive, ShapedArray, get_aval
from .errors import RETRACING, FnxError, SourceInfo


class Var:
    """A variable of a jaxpr, typed by its aval.

    >>> fnx.make_jaxpr(jnp.sin)(1.0).jaxpr.invars[0].aval
    ShapedArray(float32[], weak_type=True)
    """
    __slots__ = ("aval", "count")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.count = next(Var._counter)

    def __repr__(self):
        return f"Var({self.count}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in a jaxpr.

    >>> fnx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr.eqns[0].invars[1].aval
    ShapedArray(float32[], weak_type=True)
    """
    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"


class JaxprEqn:
    """One equation of a jaxpr: ``outvars = primitive[params] invars``.

    >>> eqn = fnx.make_jaxpr(jnp.sin)(1.0).jaxpr.eqns[0]
    >>> eqn.primitive.name, len(eqn.invars), len(eqn.outvars)
    ('sin', 1, 1)
    """
    __slots__ = ("invars", "outvars", "primitive", "params", "source_info")

    def __init__(self, invars, outvars, primitive: Primitive, params: dict,
                 source_info: SourceInfo | None = None):
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.primitive = primitive
        self.params = params
        self.source_info = source_info

    def replace(self, **kw):
        fields = {k: getattr(self, k) for k in self.__slots__}
        fields.update(kw)
        return JaxprEqn(**fields)


class Jaxpr:
    """A program in fnx's IR: equations over typed variables. It prints as JAX's do, as
    ``{ lambda constvars ; invars . let eqns in outvars }``.

    >>> print(fnx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr)
    { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
    """

    def __init__(self, constvars, invars, outvars, eqns):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(str(self))}</pre>"


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars.

    >>> closed = fnx.make_jaxpr(lambda x: x * 2.0)(1.0)
    >>> closed.jaxpr.eqns[0].primitive.name, closed.consts
    ('mul', [])
    """

    def __init__(self, jaxpr: Jaxpr, consts):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)    # JAX's older name for the consts

    def __call__(self, *args):
        return eval_jaxpr(self.jaxpr, self.consts, *args)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(str(self))}</pre>"


# ---------------------------------------------------------------------------------------------
# Evaluation


def bind_equation(eqn: "JaxprEqn", args, rule=None):
    """``eqn``'s primitive bound to ``args`` (or ``rule(*args, **params)``, a rule of it):
    what that stages keeps the line ``eqn`` was traced from, so re-traced programs (under
    grad, vmap, checkpoint) name the user's lines in their errors and printouts."""
    call = rule or eqn.primitive.bind
    if eqn.source_info is None:
        return call(*args, **eqn.params)
    token = RETRACING.set((sys._getframe(), eqn.source_info))
    try:
        return call(*args, **eqn.params)
    finally:
        RETRACING.reset(token)


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Interpret ``jaxpr`` by binding each equation under the current trace."""
    env: dict[Var, Any] = {}

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        outs = bind_equation(eqn, map(read, eqn.invars))
        if not eqn.primitive.multiple_results:
            outs = [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


# ---------------------------------------------------------------------------------------------
# Type checking


class JaxprTypeError(FnxError, TypeError):
    """A jaxpr is malformed: a variable used before it is defined, or avals that disagree.

    >>> issubclass(JaxprTypeError, TypeError)
    True
    """


def typecheck_jaxpr(jaxpr: Jaxpr) -> None:
    """Check that every variable is defined before use and every equation's output avals are
    what its primitive's abstract evaluation says. Raises JaxprTypeError."""
    defined: set = set()

    def define(v, where):
        if v in defined:
            raise JaxprTypeError(f"variable {v} defined twice ({where})", source=None)
        defined.add(v)

    for v in jaxpr.constvars + jaxpr.invars:
        define(v, "binder")
    for i, eqn in enumerate(jaxpr.eqns):
        for v in eqn.invars:
            if isinstance(v, Var) and v not in defined:
                raise JaxprTypeError(f"equation {i} ({eqn.primitive}) reads undefined {v}",
                                     source=eqn.source_info)
        in_avals = [v.aval for v in eqn.invars]
        out = eqn.primitive.rule("abstract_eval")(*in_avals, **eqn.params)
        out = out if eqn.primitive.multiple_results else [out]
        if len(out) != len(eqn.outvars):
            raise JaxprTypeError(f"equation {i} ({eqn.primitive}) has {len(eqn.outvars)} "
                                 f"outputs, its rule gives {len(out)}", source=eqn.source_info)
        for v, a in zip(eqn.outvars, out):
            if (v.aval.shape, v.aval.dtype) != (a.shape, a.dtype):
                raise JaxprTypeError(
                    f"equation {i} ({eqn.primitive}) output {v.aval.str_short()} disagrees "
                    f"with its abstract evaluation {a.str_short()}", source=eqn.source_info)
            define(v, f"equation {i}")
        for sub in _sub_jaxprs(eqn.params):
            typecheck_jaxpr(sub)
    for v in jaxpr.outvars:
        if isinstance(v, Var) and v not in defined:
            raise JaxprTypeError(f"output reads undefined {v}", source=None)


def _sub_jaxprs(params):
    for p in params.values():
        if isinstance(p, ClosedJaxpr):
            yield p.jaxpr
        elif isinstance(p, Jaxpr):
            yield p
        elif isinstance(p, (tuple, list)):
            for q in p:
                if isinstance(q, ClosedJaxpr):
                    yield q.jaxpr
                elif isinstance(q, Jaxpr):
                    yield q


# ---------------------------------------------------------------------------------------------
# Printing


def _var_names():
    """a, b, ..., z, ba, bb, ...: the numbers 0, 1, ... in base 26 with digits a-z, as JAX."""
    for i in itertools.count():
        name = ""
        while True:
            i, d = divmod(i, 26)
            name = chr(ord("a") + d) + name
            if not i:
                break
        yield name


class _Namer:
    def __init__(self):
        self.names: dict[Var, str] = {}
        self.gen = _var_names()

    def __call__(self, v):
        if isinstance(v, Literal):
            return _pp_literal(v)
        if v not in self.names:
            self.names[v] = next(self.gen)
        return self.names[v]

    def suggest(self, for_vars, like_vars):
        """Name each of ``for_vars`` (not yet named) as its partner in ``like_vars``."""
        used = set()
        for v, like in zip(for_vars, like_vars):
            if isinstance(v, Var) and isinstance(like, Var) and like not in used \
                    and v not in self.names:
                used.add(like)
                self.names[v] = self(like)


def _pp_literal(lit: Literal) -> str:
    val = np.asarray(lit.val).item()
    if isinstance(val, (bool, np.bool_)):
        text = str(bool(val))
    elif isinstance(val, (float, np.floating)):
        text = f"{float(val)!r}"
    else:
        text = str(val)
    return f"{text}:{lit.aval.str_short()}"


def _pp_param(v) -> str:
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, tuple):
        # strings inside keep their quotes, as str() of the tuple prints them in JAX
        return "(" + ", ".join(repr(x) if isinstance(x, str) else _pp_param(x) for x in v) \
            + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, type):
        return v.__name__
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def _is_jaxpr_param(v) -> bool:
    if isinstance(v, (tuple, list)):
        return bool(v) and all(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v)
    return isinstance(v, (Jaxpr, ClosedJaxpr))


_WIDTH = 80     # as JAX: a jaxpr (or an equation's parameters) that fits stays on one line


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, namer: _Namer | None = None) -> str:
    """The jaxpr as JAX prints it: typed literals (``2.0:f32[]``), parameters in name order,
    ``_`` for results nothing reads, and one line for whatever fits in 80 columns."""
    return " " * indent + _pp_jaxpr(jaxpr, indent, namer or _Namer())


def _pp_jaxpr(jaxpr, indent, namer, lead: int = 0) -> str:
    """The jaxpr's text, its first line unindented (after ``lead`` characters of the line it
    continues) and later lines indented from ``indent``."""
    jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    read = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, Var)}
    read.update(v for v in jaxpr.outvars if isinstance(v, Var))
    for e in jaxpr.eqns:            # values a sub-jaxpr closes over count as read
        for sub in subjaxprs(e):
            read.update(sub.constvars)

    def binder(v):
        return f"{namer(v)}:{v.aval.str_short()}"

    head = (f"{{ lambda {' '.join(map(binder, jaxpr.constvars))}; "
            f"{' '.join(map(binder, jaxpr.invars))}. let")
    def lhs(e):
        return " ".join(binder(v) if v in read else f"_:{v.aval.str_short()}"
                        for v in e.outvars) or "_"
    # an equation's results are named before the jaxprs in its params, one equation at a time
    eqns = [_pp_eqn(e, lhs, indent + 4, namer) for e in jaxpr.eqns]
    outs = ", ".join(map(namer, jaxpr.outvars)) + ("," if len(jaxpr.outvars) == 1 else "")
    one_line = f"{head} {'; '.join(eqns)} in ({outs}) }}"
    if "\n" not in one_line and indent + lead + len(one_line) <= _WIDTH:
        return one_line
    pad = " " * indent
    body = "".join(f"\n{pad}    {e}" for e in eqns)
    return f"{_wrapped_head(jaxpr, binder, indent, lead)}{body}\n{pad}  in ({outs}) }}"


def _wrapped_head(jaxpr, binder, indent, lead) -> str:
    """The ``{ lambda consts; args. let`` line, its binders wrapped as JAX wraps them: a
    list too long for the line breaks before a binder once the line has passed column 79."""
    col = indent + lead + len("{ lambda ")
    text = "{ lambda "
    for names, end in ((list(map(binder, jaxpr.constvars)), "; "),
                       (list(map(binder, jaxpr.invars)), ". let")):
        flat = " ".join(names)
        if col + len(flat) <= _WIDTH:
            text, col = text + flat, col + len(flat)
        else:
            for i, n in enumerate(names):
                if i and col + 1 > _WIDTH:
                    text += "\n" + " " * (indent + 4)
                    col = indent + 4
                elif i:
                    text, col = text + " ", col + 1
                text, col = text + n, col + len(n)
        text, col = text + end, col + len(end)
    return text


def _pp_eqn(eqn, lhs_of, indent, namer) -> str:
    params = dict(eqn.params)
    if eqn.primitive.pp_params is not None:
        params = eqn.primitive.pp_params(params)
    for sub in subjaxprs(eqn):
        if getattr(eqn.primitive, "pp_shares_names", False):
            # a call's jaxpr names its arguments and results as the call site does (JAX's jit)
            namer.suggest(sub.invars, eqn.invars)
            namer.suggest(sub.outvars, eqn.outvars)
    lhs = lhs_of(eqn)
    name = eqn.primitive.name

    def value(k, v, at):
        if isinstance(v, (tuple, list)) and _is_jaxpr_param(v):
            inner = [_pp_jaxpr(j, at + 2, namer) for j in v]
            return "(\n" + "".join(" " * (at + 2) + j + "\n" for j in inner) + " " * at + ")"
        if _is_jaxpr_param(v):
            return _pp_jaxpr(v, at, namer, lead=len(k) + 1)
        return _pp_param(v)
    head = f"{lhs} = {name}"
    if params:
        keys = sorted(params)
        if getattr(eqn.primitive, "pp_shares_names", False):
            keys.sort(key=lambda k: k != "name")         # a call's name leads, as in JAX
        flat = "[" + " ".join(f"{k}={value(k, params[k], indent)}" for k in keys) + "]"
        if "\n" not in flat and indent + len(head) + len(flat) <= _WIDTH:
            head += flat
        else:
            pad = " " * (indent + 2)
            head += "[" + "".join(f"\n{pad}{k}={value(k, params[k], indent + 2)}"
                                  for k in keys) + f"\n{' ' * indent}]"
    col = len(head.rsplit("\n", 1)[-1]) if "\n" in head else indent + len(head)
    return head + _filled([namer(v) for v in eqn.invars], col, indent + 2)


def _filled(words, col, indent) -> str:
    """`` w1 w2 ...`` from column ``col``: on one line if it fits, else wrapped as JAX's
    printer fills, breaking before a word once the line has passed column 79."""
    flat = "".join(" " + w for w in words)
    if col + len(flat) <= _WIDTH:
        return flat
    text = ""
    for i, w in enumerate(words):
        if i and col + 1 > _WIDTH:
            text, col = text + "\n" + " " * indent, indent
        else:
            text, col = text + " ", col + 1
        text, col = text + w, col + len(w)
    return text


def literal_or_none(x):
    """A Literal for Python/NumPy scalars and concrete 0-d arrays, else None."""
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return Literal(x, get_aval(x))
    if type(x) is Array and x.ndim == 0:
        return Literal(x, x.aval)
    return None


# ---------------------------------------------------------------------------------------------
# Small jaxpr utilities shared by transformations and passes


def jaxpr_with_consts_as_args(closed: ClosedJaxpr) -> Jaxpr:
    """An open jaxpr taking ``closed``'s consts as leading arguments."""
    j = closed.jaxpr
    return Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns)


def dependent_outputs(jaxpr: Jaxpr, unknown_inputs) -> list[bool]:
    """For each output, whether it depends on an input marked True in ``unknown_inputs``."""
    unknown = {v for v, u in zip(jaxpr.invars, unknown_inputs) if u}
    for eqn in jaxpr.eqns:
        if any(isinstance(v, Var) and v in unknown for v in eqn.invars):
            unknown.update(eqn.outvars)
    return [isinstance(v, Var) and v in unknown for v in jaxpr.outvars]


def subjaxprs(eqn) -> list:
    """The jaxprs in ``eqn``'s params: a jit's, a loop body, every branch of a cond.

    >>> closed = fnx.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0)
    >>> len(fnx.test_util.subjaxprs(closed.jaxpr.eqns[-1]))
    2
    """
    subs = []
    for v in eqn.params.values():
        for sub in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(sub, (Jaxpr, ClosedJaxpr)):
                subs.append(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub)
    return subs


def has_effect(eqn) -> bool:
    """Whether ``eqn`` must run even when nothing reads its results: its primitive has an effect
    (a debug print), or a jaxpr in its params (a loop body, a branch) holds such an equation."""
    return eqn.primitive.has_effect or any(
        has_effect(e) for sub in subjaxprs(eqn) for e in sub.eqns)


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None) -> tuple[Jaxpr, list[bool]]:
    """Drop equations no kept output needs. Returns the new jaxpr and which invars it reads."""
    outvars = jaxpr.outvars if used_outputs is None else \
        [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars) or has_effect(eqn):
            kept.append(eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    used_inputs = [v in live for v in jaxpr.invars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept), used_inputs
