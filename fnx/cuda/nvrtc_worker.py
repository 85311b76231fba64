"""A compiling process: reads ``(source, options)`` jobs on stdin, answers with NVRTC's binary
(or its error log) on stdout.

NVRTC serialises much of its work inside one process, so kernels compiled on threads of the
program's own process run little faster than one after another; separate processes compile
in parallel (fnx.cuda.compile starts a few of these). It is run as a script, importing only
CuPy's NVRTC binding: neither fnx nor the user's program is imported here, and no CUDA context
is created.

Frames, both ways: an 8-byte little-endian length, then a pickle.
"""
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


def _compile(nvrtc, source, options, binary):
    prog = nvrtc.createProgram(source, "fnx.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError:
            return ("error", nvrtc.getProgramLog(prog))
        return ("ok", nvrtc.getCUBIN(prog) if binary == "cubin" else nvrtc.getPTX(prog))
    finally:
        nvrtc.destroyProgram(prog)


def main():
    try:
        os.nice(10)     # beside the program's own first call, which must not wait for us
    except OSError:
        pass
    from cupy_backends.cuda.libs import nvrtc
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        job = _read(stdin)
        if job is None:
            return
        try:
            reply = _compile(nvrtc, *job)
        except Exception as e:        # reported to the caller, which compiles in-process
            reply = ("failed", f"{type(e).__name__}: {e}")
        _write(stdout, reply)


if __name__ == "__main__":
    main()
