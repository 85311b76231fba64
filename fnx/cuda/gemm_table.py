"""The kernel table for products: for each problem (shape, layout, dtype, precision, epilogue)
the candidates are cublasGemmEx with cuBLAS's own choice, the algorithms cuBLASLt's heuristic
offers, and fnx's generated kernels for the shape (fnx.cuda.small_gemm, fnx.cuda.split_gemm);
cuBLASLt's backward-pass epilogues compete the same way (fnx.cuda.lt_backward). The first eager
call of a problem times them on the device and keeps the fastest in :class:`ChoiceTable`
(``TABLE``), in memory and on disk (``$FNX_CACHE_DIR`` or ``~/.cache/fnx``), so later processes
skip the timing. During stream capture an unknown problem uses cublasGemmEx.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import logging
import threading

import numpy as np

from ..core.config import config
from . import cublas
from .copies import dense as contiguous
from .elementwise import C_TYPES

# raised whenever the candidates change, so that choices made among older ones are timed again
TABLE_VERSION = 2


def cache_file() -> str:
    import cupy as cp
    from .compile import cache_root
    root = cache_root()
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    name = name.decode() if isinstance(name, bytes) else name
    tag = "".join(c if c.isalnum() else "-" for c in name)
    cublas = f"-cublas{cp.cuda.get_cublas_version()}" \
        if hasattr(cp.cuda, "get_cublas_version") else ""
    return os.path.join(root, f"gemm-v{TABLE_VERSION}-{tag}{cublas}.json")


# -- the cache file (plain JSON: {problem key: choice}); nothing here needs CuPy

# what a stored choice looks like: cuBLAS's own, cuBLASLt algorithm(s) (lt_backward stores a
# forward:backward pair), or a generated kernel's kind
_CHOICE = re.compile(r"fallback|lt:\d+(?::\d+)*|[A-Za-z_][A-Za-z0-9_]*")
_warned: set = set()
logger = logging.getLogger("fnx.cuda")
_file_lock = threading.Lock()


def _warn_once(path, what):
    if path not in _warned:
        _warned.add(path)
        # fnx repairs the file itself: a log record, not a warning the user must act on
        logger.warning("ignoring %s in the GEMM choice cache %s; those problems are timed again "
                       "and the file rewritten", what, path)


def _read(path) -> tuple[dict, str | None]:
    """The well-formed entries of the cache file at ``path``, and what was wrong with the rest
    (None where nothing was)."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError):
        return {}, "a corrupt file"
    if not isinstance(data, dict):
        return {}, f"a file holding a JSON {type(data).__name__} instead of an object"
    good = {k: v for k, v in data.items()
            if isinstance(k, str) and isinstance(v, str) and _CHOICE.fullmatch(v)}
    return good, (None if len(good) == len(data) else
                  f"{len(data) - len(good)} malformed entr{'y' if len(data) - len(good) == 1 else 'ies'}")


def read_choices(path) -> dict:
    """The choices stored at ``path``. A corrupt file, JSON of the wrong shape, or malformed
    entries are ignored with one warning, and the file is rewritten with what was good."""
    good, problem = _read(path)
    if problem is not None:
        _warn_once(path, problem)
        write_choices(path, good, replace=True)
    return good


def write_choices(path, entries: dict, replace: bool = False) -> None:
    """Store ``entries`` at ``path``, merged into what other processes stored there meanwhile
    (``entries`` win a disagreement; ``replace`` drops the file's own). The file is written
    whole to a temporary file, then renamed over the old one, under a lock, so a reader sees
    either version and concurrent writers lose nothing."""
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with _file_lock, _locked(path + ".lock"):
            merged = {} if replace else _read(path)[0]
            merged.update(entries)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as fh:
                json.dump(merged, fh)
            os.replace(tmp, path)
    except OSError:
        pass        # a read-only home only costs the timing in the next process


@contextlib.contextmanager
def _locked(lock_path):
    """An exclusive lock between processes (flock where there is one)."""
    try:
        import fcntl
    except ImportError:       # no flock: rename is still atomic; a race can only lose entries
        yield
        return
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def known_choice(choice, kinds) -> bool:
    """Whether a stored choice names a candidate of this problem: cuBLAS's own, a cuBLASLt
    algorithm, or one of the generated ``kinds``."""
    return isinstance(choice, str) and (choice == "fallback" or choice in kinds
                                        or re.fullmatch(r"lt:\d+", choice) is not None)


@functools.lru_cache(maxsize=None)
def _timing_stream(device: int):
    """The stream candidates are timed on, one per device, with its cuBLAS handle."""
    import cupy as cp
    stream = cp.cuda.Stream(non_blocking=True)
    cublas.handle_for(stream.ptr)
    return stream


def _captured(fn, reps):
    """``reps`` calls of ``fn`` captured into one CUDA graph on the timing stream (after one
    call outside it: a first call may allocate or load), so that timing it leaves host launch
    cost (which dwarfs small GEMMs) out of the figure."""
    import cupy as cp
    stream = _timing_stream(cp.cuda.runtime.getDevice())
    with stream:
        fn()
        stream.begin_capture()
        try:
            for _ in range(reps):
                fn()
        finally:
            graph = stream.end_capture()
    return graph


def _replay_time(graph, reps):
    """GPU milliseconds per captured call, from one replay of ``graph``."""
    import cupy as cp
    stream = _timing_stream(cp.cuda.runtime.getDevice())
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    if reps > 2:        # small problems: one untimed replay settles clocks and caches
        graph.launch(stream)
    start.record(stream)
    graph.launch(stream)
    stop.record(stream)
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / reps


def timings(candidates, flops) -> dict:
    """``{name: GPU milliseconds per call}`` of ``candidates = {name: run}``, each problem of
    ``flops``; a candidate that cannot run is left out."""
    import cupy as cp
    reps = int(min(20, max(1, 2e10 / max(flops, 1))))
    # operands are ready, and no other stream's launches share the GPU with the timed ones
    cp.cuda.Device().synchronize()
    graphs = {}
    for name, run in candidates.items():
        try:
            graphs[name] = _captured(run, reps)
        except Exception:       # a candidate that cannot run this problem is left out
            continue
    # two rounds, each candidate's best kept: a big problem times one call per round, and the
    # first round also brings the clocks up
    times: dict = {}
    for _ in range(2):
        for name, graph in graphs.items():
            t = _replay_time(graph, reps)
            times[name] = min(t, times.get(name, t))
    return times


def _lt_count(flops, most):
    """How many cuBLASLt algorithms to time: all offered for small problems, few for big ones
    (each timing run of a big GEMM costs milliseconds of the first call; on an H100 the
    fastest of a 1e9-flop-or-bigger problem was always among the heuristic's first four)."""
    return most if flops < 1e9 else 4 if flops < 1e11 else 2


class ChoiceTable:
    """The timed choices of this process, ``{problem key: choice}``: cuBLAS's own
    (``"fallback"``), a cuBLASLt algorithm (``"lt:<i>"``, or ``"lt:<i>:<j>"`` for a forward and
    backward pair), a generated kernel's kind, or ``"fnx"`` (fnx's own launches won).

    A jitted program's first call does not wait for generated candidates to compile
    (``impatient``): its problems are timed without the ones not yet built, and those choices are
    provisional (kept off the disk). The kernels left out compile in the background after that
    call (``compile_deferred``); each time a batch is built, ``upgrades`` goes up, and a captured
    graph that predates it is captured again (fnx.cuda.graph), timing them then.
    """

    def __init__(self):
        self.choices: dict = {}
        self.plans: dict = {}            # cuBLASLt plans and generated kernels, by problem
        self.loaded = False
        self.provisional: dict = {}      # key -> the (source, name) units left out of its timing
        self.deferred: list = []         # units left out, not yet handed to the compiler
        self.upgrades = 0
        self._impatient = 0

    def choice(self, key):
        """The choice remembered for ``key`` (this process's, else the cache file's), or None."""
        if not self.loaded:
            self.loaded = True
            self.choices.update(read_choices(cache_file()))
        return self.choices.get(key)

    def remember(self, key, choice, left_out=()) -> None:
        """Keep ``choice`` for ``key``: on disk too, unless candidates (``left_out`` units)
        were not yet compiled when it was timed."""
        self.choices[key] = choice
        if left_out:
            self.provisional[key] = list(left_out)
            self.deferred.extend(u for u in left_out if u not in self.deferred)
            return
        self.provisional.pop(key, None)
        write_choices(cache_file(), {k: v for k, v in self.choices.items()
                                     if k not in self.provisional})

    def decide(self, key, candidates, flops, pick=None, left_out=()) -> str:
        """Time ``candidates = {name: run}`` (problems of ``flops``), remember the choice for
        ``key`` and return it: the fastest name, or ``pick(times)`` where candidates combine
        (lt_backward's forward and backward halves). Every choice of the table is made here."""
        times = timings(candidates, flops)
        if pick is not None:
            choice = pick(times)
        else:
            choice = min(times, key=times.get) if times else "fallback"
        self.remember(key, choice, left_out)
        return choice

    def forget(self, key) -> None:
        """Time ``key`` again at its next eager call (in this process)."""
        self.choices.pop(key, None)
        self.provisional.pop(key, None)

    @contextlib.contextmanager
    def impatient(self):
        """Within it, a problem's generated candidates not yet compiled are left out of its
        timing, and the choice is provisional until they are compiled."""
        self._impatient += 1
        try:
            yield
        finally:
            self._impatient -= 1

    def compile_deferred(self) -> None:
        """Start compiling, in the background, the candidates impatient calls left out; once
        they are built, ``upgrades`` goes up."""
        from .compile import compile_together, when_compiled
        units, self.deferred = self.deferred, []
        if units:
            compile_together(units)
            when_compiled(units, self._upgrade_ready)

    def _upgrade_ready(self):
        self.upgrades += 1

    def plan(self, key, args):
        """The cuBLASLt plan of problem ``key`` (``cublaslt.Plan(*args)``), made once; None where
        cuBLASLt has none."""
        plan = self.plans.get(key)
        if plan is None and key not in self.plans:
            from .cublaslt import Plan
            try:
                plan = Plan(*args, max_algos=32)
            except (RuntimeError, OSError, AttributeError):
                plan = None
            self.plans[key] = plan
        return plan

    def generated(self, key, kind, args, epilogue):
        """fnx's generated kernel of ``kind`` for problem ``key``, made once."""
        from .small_gemm import SmallGemm
        k = (key, kind)
        g = self.plans.get(k)
        if g is None:
            g = self.plans[k] = SmallGemm(kind, *args, epilogue=epilogue)
        return g

    def fastest(self, key, plan_args, flops, fallback, lt_run, most=8, kinds=(), make=None,
                run=None):
        """Run problem ``key`` with its fastest candidate, timing them the first time: ``fallback``
        (cuBLAS's own choice, or the unfused pair), cuBLASLt algorithm ``i`` as ``lt_run(plan, i,
        timing)``, or a generated kernel of one of ``kinds`` as ``run(make(kind), timing)``.
        ``timing`` is True while candidates are timed (a candidate that must not touch its real
        output then writes elsewhere)."""
        import cupy as cp
        from .compile import compile_together, ready
        choice = self.choice(key)
        if choice is not None and not known_choice(choice, kinds):
            # a cache file from another fnx, or edited: time this problem again (and save)
            _warn_once(cache_file(), f"the unknown choice {choice!r} for {key}")
            del self.choices[key]
            choice = None
        capturing = cp.cuda.get_current_stream().is_capturing()
        waiting = self.provisional.get(key)
        if not isinstance(choice, str) or waiting is not None and not capturing and (
                not self._impatient or all(ready(u) for u in waiting)):
            if capturing:
                return fallback(False)
            plan = self.plan(key, plan_args) if plan_args is not None else None
            candidates = {"fallback": lambda: fallback(True)}
            for i in range(min(len(plan.algos) if plan else 0, _lt_count(flops, most))):
                candidates[f"lt:{i}"] = lambda i=i: lt_run(plan, i, True)
            made = {kind: make(kind) for kind in kinds}
            units = {kind: (g.source, g.name) for kind, g in made.items()}
            left_out = [kind for kind in made if self._impatient and not ready(units[kind])]
            if not self._impatient:
                compile_together(list(units.values()))
            candidates.update({kind: lambda g=g: run(g, True) for kind, g in made.items()
                               if kind not in left_out})
            choice = self.decide(key, candidates, flops,
                                 left_out=[units[kind] for kind in left_out])
        if choice.startswith("lt:") and plan_args is not None:
            plan = self.plan(key, plan_args)
            i = int(choice[3:])
            if plan is not None and i < len(plan.algos):
                return lt_run(plan, i, False)
        elif choice in kinds:
            from .small_gemm import Misaligned
            try:
                return run(make(choice), False)
            except Misaligned:
                pass
        return fallback(False)


TABLE = ChoiceTable()


def _sizes(out, a, trans_a):
    return out.shape[-2], out.shape[-1], a.shape[-2] if trans_a else a.shape[-1]


def _layout(trans_a, trans_b):
    return f"{'T' if trans_a else 'N'}{'T' if trans_b else 'N'}"


def matmul_into(out, a, b, trans_a: bool, trans_b: bool, precision: str, batch: int = 1,
                generated: bool = True):
    """``out = op(a) @ op(b)`` (batched along a leading axis when ``batch > 1``) with the
    fastest known kernel for this problem (cuBLAS's alone unless ``generated``)."""
    from .small_gemm import PLAIN, SmallGemm
    m, n, k = _sizes(out, a, trans_a)
    dtype = np.dtype(a.dtype)
    key = f"{m}x{n}x{k}b{batch}{_layout(trans_a, trans_b)}" \
          f"-{dtype.name}-{np.dtype(out.dtype).name}-{precision}"
    small_args = (m, n, k, trans_a, trans_b, dtype)
    kinds = SmallGemm.candidates(m, n, k, dtype, batch, trans_a) \
        if np.dtype(out.dtype) == dtype else []
    if kinds and not generated:     # a choice among fewer candidates, remembered apart
        kinds, key = [], key + "-cublas"
    return TABLE.fastest(
        key, (m, n, k, trans_a, trans_b, dtype, out.dtype, precision, batch),
        2.0 * m * n * k * batch,
        lambda timing: cublas.matmul_into(out, a, b, trans_a, trans_b, precision, batch=batch),
        lambda plan, i, timing: plan(out, a, b, i), most=16, kinds=kinds,
        make=lambda kind: TABLE.generated(key, kind, small_args, PLAIN),
        run=lambda g, timing: g(out, a, b))


def dense_into(out, a, b, bias, act, trans_a, trans_b, precision):
    """``out = act(op(a) @ op(b) + bias)``: a cuBLASLt GEMM with the BIAS / RELU_BIAS epilogue,
    or the fastest plain GEMM followed by one bias+activation kernel, whichever is faster."""
    from .epilogue import bias_act_
    from .small_gemm import SmallGemm, dense_epilogue
    m, n, k = _sizes(out, a, trans_a)
    dtype = np.dtype(a.dtype)
    key = f"dense-{act}-{m}x{n}x{k}{_layout(trans_a, trans_b)}-{dtype.name}-{precision}"
    epilogue = dense_epilogue(act, dtype)
    # cuBLASLt's epilogues: the bias alone, or with a ReLU or a (tanh-form) GELU
    lt_epilogue = {"none": "bias", "relu": "relu_bias", "gelu_tanh": "gelu_bias"}.get(act)
    lt_args = None if lt_epilogue is None else \
        (m, n, k, trans_a, trans_b, dtype, out.dtype, precision, 1, True, True, lt_epilogue)

    # the generated kernels compete with their epilogue inside: the unfused pair is cuBLAS's
    def unfused(timing):
        matmul_into(out, a, b, trans_a, trans_b, precision, generated=False)
        bias_act_(out, bias, act)
    if not isinstance(TABLE.choice(key), str):
        import cupy as cp
        if not cp.cuda.get_current_stream().is_capturing():
            # the plain GEMM picks its own kernel first, outside the timing of this one
            matmul_into(out, a, b, trans_a, trans_b, precision, generated=False)
    return TABLE.fastest(key, lt_args, 2.0 * m * n * k, unfused,
                    lambda plan, i, timing: plan(out, a, b, i, bias=bias),
                    kinds=SmallGemm.candidates(m, n, k, dtype, 1, trans_a),
                    make=lambda kind: TABLE.generated(key, kind,
                                                      (m, n, k, trans_a, trans_b, dtype), epilogue),
                    run=lambda g, timing: g(out, a, b, bias))


def matmul_precision(precision) -> str:
    """The precision a product is lowered with, fixed when the jaxpr is lowered (as in JAX)."""
    if precision is not None:
        return str(precision)
    return getattr(config, "default_matmul_precision", None) or "highest"


def dense_layer(x, w, b, *, act, trans_a, trans_b, shape, precision):
    """``act(op(x) @ op(w) + b)`` (fnx.cuda.epilogue's ``dense_p``) run eagerly, through the
    epilogue candidates of ``dense_into``."""
    import cupy as cp
    out = cp.empty(shape, x.dtype)
    dense_into(out, contiguous(x), contiguous(w), contiguous(b), act, trans_a, trans_b,
               matmul_precision(precision))
    return out


def update_into(out, a, b, c, alpha, trans_a, trans_b, precision):
    """``out = c + alpha * op(a) @ op(b)``: a gradient step folded into the GEMM that makes the
    gradient (``out`` may be ``c`` itself)."""
    import cupy as cp
    from .small_gemm import SmallGemm, update
    m, n, k = _sizes(out, a, trans_a)
    dtype = np.dtype(a.dtype)
    key = f"update-{m}x{n}x{k}{_layout(trans_a, trans_b)}-{dtype.name}-{precision}-{alpha!r}"
    epilogue = update(alpha, C_TYPES[dtype.name])
    scratch = []       # timing must not apply the step to ``out`` again and again

    def target(timing):
        if not timing:
            return out
        if not scratch:
            scratch.append(cp.empty_like(out))
        return scratch[0]

    def gemmex(timing):
        dst = target(timing)
        if dst is not c:
            cp.copyto(dst, c)
        cublas.matmul_into(dst, a, b, trans_a, trans_b, precision, alpha=alpha, beta=1.0)
    return TABLE.fastest(key, (m, n, k, trans_a, trans_b, dtype, out.dtype, precision),
                    2.0 * m * n * k, gemmex,
                    lambda plan, i, timing: plan(target(timing), a, b, i, c=c, alpha=alpha,
                                                 beta=1.0),
                    kinds=SmallGemm.candidates(m, n, k, dtype, 1, trans_a),
                    make=lambda kind: TABLE.generated(key, kind,
                                                      (m, n, k, trans_a, trans_b, dtype), epilogue),
                    run=lambda g, timing: g(target(timing), a, b, c))

