"""fnx.profiler: a trace holds the spans of what ran inside (jit calls and traces, the user's
annotations), written where JAX writes its traces; the memory profile is a pprof protocol
buffer that lists the live arrays."""
import gzip
import json
import os

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp
from fnx import profiler


def _events(path):
    return [e for e in json.load(gzip.open(path))["traceEvents"] if e["ph"] == "X"]


def test_trace_records_jit_calls_and_annotations(tmp_path):
    f = fnx.jit(lambda x: jnp.tanh(x) * 2)
    with profiler.trace(tmp_path, create_perfetto_trace=True):
        for step in range(3):
            with profiler.StepTraceAnnotation("train", step_num=step):
                f(np.ones(4))
        with profiler.TraceAnnotation("eval", split="test"):
            profiler.annotate_function(lambda: f(np.ones(4)), name="evaluate")()
    runs = os.listdir(tmp_path / "plugins" / "profile")
    assert len(runs) == 1
    files = sorted(os.listdir(tmp_path / "plugins" / "profile" / runs[0]))
    assert files[0] == "perfetto_trace.json.gz" and files[1].endswith(".trace.json.gz")
    events = _events(tmp_path / "plugins" / "profile" / runs[0] / files[1])
    names = [e["name"] for e in events]
    assert names.count("jit(<lambda>)") == 4 and names.count("trace jit(<lambda>)") == 1
    assert [e["args"]["step_num"] for e in events if e["name"] == "train"] == ["0", "1", "2"]
    evaluate, = [e for e in events if e["name"] == "evaluate"]
    outer, = [e for e in events if e["name"] == "eval"]
    assert outer["args"] == {"split": "test"}
    # spans nest in time: eval holds evaluate, which holds a jit call
    assert outer["ts"] <= evaluate["ts"] and evaluate["ts"] + evaluate["dur"] <= \
        outer["ts"] + outer["dur"] + 1e-3
    assert all(e["dur"] >= 0 for e in events)


def test_nothing_is_recorded_outside_a_trace(tmp_path):
    with profiler.TraceAnnotation("before"):
        fnx.jit(jnp.sin)(1.0)
    profiler.start_trace(tmp_path)
    with pytest.raises(RuntimeError, match="already been started"):
        profiler.start_trace(tmp_path)
    names = [e["name"] for e in _events(profiler.stop_trace())]
    assert names == []
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()


def _varint(buf, i):
    """The varint starting at ``buf[i]`` and the position after it."""
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, i


def _parse(buf):
    """Fields of one protocol buffer message: [(number, int or bytes)]."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        if key & 7 == 0:
            n, i = _varint(buf, i)
            out.append((key >> 3, n))
        else:
            n, i = _varint(buf, i)
            out.append((key >> 3, buf[i:i + n]))
            i += n
    return out


def _unpack(data):
    vals, i = [], 0
    while i < len(data):
        n, i = _varint(data, i)
        vals.append(n)
    return vals


def test_memory_profile_lists_live_arrays(tmp_path):
    keep = [jnp.zeros((123, 7), dtype=jnp.float32) for _ in range(3)]
    path = tmp_path / "mem.prof"
    profiler.save_device_memory_profile(path)
    fields = _parse(gzip.decompress(path.read_bytes()))
    strings = [v.decode() for n, v in fields if n == 6]
    assert strings[0] == "" and "f32[123,7]" in strings and "space" in strings
    functions = {dict(_parse(v))[1]: strings[dict(_parse(v))[2]] for n, v in fields if n == 5}
    samples = []
    for n, v in fields:
        if n == 2:
            sample = dict(_parse(v))
            samples.append(([functions[i] for i in _unpack(sample[1])], _unpack(sample[2])))
    (count, size), = [vals for locs, vals in samples if locs[0] == "f32[123,7]"]
    assert count >= 3 and size == count * 123 * 7 * 4
    assert keep
