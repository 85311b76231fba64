"""A compiling process: reads ``(source, options, binary kind)`` jobs on stdin, answers with
NVRTC's binary (or its error log) on stdout.

NVRTC serialises its work inside one process (a program's kernels on 8 threads took as long
as one after another), so separate processes are what compile in parallel. This script starts
in tens of milliseconds: Python runs it without ``site`` (``-S``), and it imports nothing but
the standard library, calling the NVRTC library whose path it is given (the one the parent
loaded) through ctypes. No CUDA context is created here.

Frames, both ways: an 8-byte little-endian length, then a pickle of plain values.
"""
import ctypes
import os
import pickle
import struct
import sys


def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


def _write(stream, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


class Nvrtc:
    """The few NVRTC entry points a compile needs."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)

    def _text(self, prog, size_fn, get_fn):
        size = ctypes.c_size_t()
        getattr(self.lib, size_fn)(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        getattr(self.lib, get_fn)(prog, buf)
        return buf.raw[:size.value]

    def compile(self, source, options, binary):
        prog = ctypes.c_void_p()
        if self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"fnx.cu", 0,
                                       None, None):
            return ("failed", "nvrtcCreateProgram")
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            if self.lib.nvrtcCompileProgram(prog, len(options), opts):
                log = self._text(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog")
                return ("error", log.rstrip(b"\0").decode(errors="replace"))
            if binary == "cubin":
                return ("ok", self._text(prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN"))
            return ("ok", self._text(prog, "nvrtcGetPTXSize", "nvrtcGetPTX"))
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main():
    try:
        os.nice(10)     # beside the program's own first call, which must not wait for us
    except OSError:
        pass
    nvrtc = Nvrtc(sys.argv[1])
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        job = _read(stdin)
        if job is None:
            return
        try:
            reply = nvrtc.compile(*job)
        except Exception as e:        # reported to the caller, which compiles in-process
            reply = ("failed", f"{type(e).__name__}: {e}")
        _write(stdout, reply)


if __name__ == "__main__":
    main()
