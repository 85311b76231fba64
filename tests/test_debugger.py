"""fnx.debug.breakpoint: the jdb debugger stops jitted, vmapped and branching programs and shows
their values; commands are fed through stdin, as a user types them."""
import io
import sys

import numpy as np
import pytest

import fnx
import fnx.numpy as jnp


def _session(monkeypatch, capsys, commands, fun, *args):
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    result = fun(*args)
    return result, capsys.readouterr().out


def test_breakpoint_in_jit_shows_traced_locals(monkeypatch, capsys):
    @fnx.jit
    def f(x):
        y, z = jnp.sin(x), jnp.cos(x)
        fnx.debug.breakpoint()
        return y * z

    x = 0.7
    out, text = _session(monkeypatch, capsys, "p y\npp (y, z)\np y + z\nnot_a_name\nc\n", f, x)
    np.testing.assert_allclose(float(out), np.sin(x) * np.cos(x), rtol=1e-12)
    lines = text.split("(jdb) ")
    assert lines[0] == "Entering jdb:\n"
    assert lines[1] == repr(jnp.asarray(np.sin(x))) + "\n"
    assert lines[3] == repr(jnp.asarray(np.sin(x) + np.cos(x))) + "\n"
    assert "NameError" in lines[4]


def test_breakpoint_frames_and_source(monkeypatch, capsys):
    def inner(x):
        w = x * 2
        fnx.debug.breakpoint()
        return w

    def outer(x):
        v = inner(x) + 1
        return v

    _, text = _session(monkeypatch, capsys, "l\nu\np x\nd\nw\nc\n", fnx.jit(outer), 3.0)
    assert "->          fnx.debug.breakpoint()" in text
    assert "At topmost frame." not in text and "->          v = inner(x) + 1" in text
    assert "Array(3., dtype=float64" in text
    assert text.index('line') < text.rindex("fnx.debug.breakpoint()")


def test_breakpoint_in_a_branch_runs_only_when_taken(monkeypatch, capsys):
    def stop_if_nonfinite(x):
        fnx.lax.cond(jnp.isfinite(x).all(), lambda x: None,
                     lambda x: fnx.debug.breakpoint(), x)

    @fnx.jit
    def f(x, y):
        z = x / y
        stop_if_nonfinite(z)
        return z

    out, text = _session(monkeypatch, capsys, "c\n", f, 2.0, 1.0)
    assert float(out) == 2.0 and "jdb" not in text
    out, text = _session(monkeypatch, capsys, "p x\nc\n", f, 2.0, 0.0)
    assert np.isinf(float(out)) and "Entering jdb:" in text and "inf" in text


def test_breakpoint_under_vmap_stops_per_example(monkeypatch, capsys):
    def f(x):
        fnx.debug.breakpoint()
        return x + 1
    _, text = _session(monkeypatch, capsys, "p x\nc\np x\nc\n", fnx.vmap(f), jnp.arange(2.0))
    assert text.count("Entering jdb:") == 2
    assert "Array(0., dtype=float64)" in text and "Array(1., dtype=float64)" in text


def test_quitting_or_end_of_input_stops_the_program(monkeypatch, capsys):
    f = fnx.jit(lambda x: (fnx.debug.breakpoint(), x * 2)[1])
    for commands in ("q\n", ""):
        monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
        with pytest.raises(RuntimeError, match="stopped from the debugger"):
            f(1.0)
    assert isinstance(fnx.debug.DebuggerQuit("x"), RuntimeError)
