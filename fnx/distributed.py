"""Several processes (on one or several machines) running one program, as ``jax.distributed``.

Each process calls ``fnx.distributed.initialize`` with the same coordinator address and its own
``process_id``; process 0 serves a small TCP key-value store there, through which the processes
tell each other their GPUs and hand NCCL its unique ids. Afterwards ``fnx.devices()`` lists
every process's GPUs, ``fnx.local_devices()`` this process's, and ``pmap`` maps over the local
ones with collectives that span all of them.

Launch one process per machine (or per GPU), for example on two machines with 8 GPUs each::

    # machine 0 (10.0.0.1)                       # machine 1
    python train.py --coordinator 10.0.0.1:1234 --num-processes 2 --process-id 0
    python train.py --coordinator 10.0.0.1:1234 --num-processes 2 --process-id 1

where ``train.py`` begins with::

    import fnx
    fnx.distributed.initialize(args.coordinator, args.num_processes, args.process_id)

``initialize()`` without arguments reads ``FNX_COORDINATOR_ADDRESS``, ``FNX_NUM_PROCESSES`` and
``FNX_PROCESS_ID`` (or torchrun's ``MASTER_ADDR``/``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``).
"""
from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
import time

from .core import core
from .core.errors import DistributedError

_state: dict = {}


class _Store:
    """Client of the key-value store: ``set(key, json_value)``, ``get(key)`` waits for it."""

    def __init__(self, address: tuple[str, int], timeout: float):
        self.address, self.timeout = address, timeout

    def _ask(self, message: dict):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with socket.create_connection(self.address, timeout=self.timeout) as s:
                    s.sendall((json.dumps(message) + "\n").encode())
                    reply = s.makefile().readline()
                return json.loads(reply)
            except (ConnectionRefusedError, OSError):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"fnx.distributed: no coordinator at "
                                       f"{self.address[0]}:{self.address[1]} after "
                                       f"{self.timeout:.0f} s") from None
                time.sleep(0.1)

    def set(self, key: str, value) -> None:
        self._ask({"op": "set", "key": key, "value": value})

    def get(self, key: str):
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._ask({"op": "get", "key": key})
            if reply.get("found"):
                return reply["value"]
            if time.monotonic() > deadline:
                raise TimeoutError(f"fnx.distributed: key {key!r} never arrived (did every "
                                   "process call initialize?)")
            time.sleep(0.05)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        message = json.loads(self.rfile.readline())
        table, lock = self.server.table, self.server.lock
        with lock:
            if message["op"] == "set":
                table[message["key"]] = message["value"]
                reply = {"ok": True}
            else:
                found = message["key"] in table
                reply = {"found": found, "value": table.get(message["key"])}
        self.wfile.write((json.dumps(reply) + "\n").encode())


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address):
        super().__init__(address, _Handler)
        self.table: dict = {}
        self.lock = threading.Lock()


def _from_env(coordinator_address, num_processes, process_id):
    env = os.environ
    if coordinator_address is None:
        coordinator_address = env.get("FNX_COORDINATOR_ADDRESS") or (
            f"{env['MASTER_ADDR']}:{env.get('MASTER_PORT', '29500')}"
            if "MASTER_ADDR" in env else None)
    if num_processes is None:
        num_processes = int(env.get("FNX_NUM_PROCESSES", env.get("WORLD_SIZE", 1)))
    if process_id is None:
        process_id = int(env.get("FNX_PROCESS_ID", env.get("RANK", 0)))
    if coordinator_address is None:
        raise DistributedError("fnx.distributed.initialize needs coordinator_address "
                               "(host:port), or FNX_COORDINATOR_ADDRESS in the environment")
    return coordinator_address, int(num_processes), int(process_id)


class RemoteDevice:
    """A GPU driven by another process: it appears in meshes and ``fnx.devices()``; only its
    own process runs programs on it."""

    def __init__(self, device_id: int, process_index: int, local_id: int, platform="gpu"):
        self.id, self.process_index, self.local_id = device_id, process_index, local_id
        self.platform = platform
        self.device_kind = platform

    def __repr__(self):
        return f"RemoteDevice(id={self.id}, process_index={self.process_index})"


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids=None,
               initialization_timeout: float = 300.0):
    """Join the program's processes: process 0 serves the store at ``coordinator_address``
    (``host:port``); every process publishes its GPUs and waits for the others'.

    >>> fnx.distributed.initialize("10.0.0.1:1234", num_processes=2, process_id=0)
    """
    if _state:
        raise DistributedError("fnx.distributed.initialize was already called")
    address, n, pid = _from_env(coordinator_address, num_processes, process_id)
    host, port = address.rsplit(":", 1)
    if pid == 0:
        server = _Server(("0.0.0.0", int(port)))
        threading.Thread(target=server.serve_forever, daemon=True,
                         name="fnx-coordinator").start()
        _state["server"] = server
    store = _Store((host, int(port)), initialization_timeout)
    _state["store"] = store
    local = _local_gpus(local_device_ids)
    store.set(f"gpus/{pid}", len(local))
    counts = [store.get(f"gpus/{p}") for p in range(n)]
    everything, next_id = [], 0
    for p, count in enumerate(counts):
        for k in range(count):
            if p == pid:
                dev = local[k]
                dev.process_index, dev.id = pid, next_id
            else:
                dev = RemoteDevice(next_id, p, k)
            everything.append(dev)
            next_id += 1
    core.set_process(pid, n, store)
    core.set_global_devices("gpu", everything)


def _local_gpus(local_device_ids):
    from .backends import cupy_backend
    gpus = cupy_backend.local_gpus()
    if local_device_ids is not None:
        ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
        gpus = [g for g in gpus if g.id in ids]
    return gpus


def is_initialized() -> bool:
    return bool(_state)


def shutdown() -> None:
    """Leave the program: process 0 stops serving the store."""
    server = _state.pop("server", None)
    if server is not None:
        server.shutdown()
        server.server_close()
    _state.clear()
    core.set_process(0, 1)
    core._global_devices.clear()


__all__ = ["initialize", "shutdown", "is_initialized", "RemoteDevice"]

from .core.traceback_util import export_boundaries as _export_boundaries  # noqa: E402

_export_boundaries(globals())   # errors end at the caller's line
