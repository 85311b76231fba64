"""The module import graph of fnx: no circles, and fnx/core standing on nothing above it.

Every ``import`` of an fnx module counts, the ones inside functions too (an import moved into a
function to break a circle still is one).
"""
import ast
import os
import subprocess
import sys

import fnx

ROOT = os.path.dirname(fnx.__file__)

def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _modules():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                out[_module_name(path)] = path
    return out


MODULES = _modules()


def _resolve(importer, node):
    """The fnx modules an import statement brings in."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "fnx"]
    if node.level:
        is_pkg = MODULES[importer].endswith("__init__.py")
        parts = importer.split(".")[:len(importer.split(".")) - node.level + (1 if is_pkg else 0)]
        base = ".".join(parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != "fnx":
        return []
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


def _edges():
    """Every ``(importer, imported)`` pair, at module level or inside functions."""
    edges = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update((name, target) for target in _resolve(name, node) if target != name)
    return edges


def _cycles(edges):
    """The strongly connected components with more than one module (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circles():
    cycles = _cycles(_edges())
    assert not cycles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_walk_sees_imports_inside_functions_and_finds_circles():
    # fnx.cuda.lowering imports lt_backward only inside a method
    assert ("fnx.cuda.lowering", "fnx.cuda.lt_backward") in _edges()
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_core_imports_nothing_outside_core():
    outside = sorted((a, b) for a, b in _edges()
                     if a.startswith("fnx.core") and not b.startswith("fnx.core"))
    assert not outside, f"fnx/core imports modules above it: {outside}"


def test_import_fnx_imports_no_cupy():
    code = "import sys, fnx, fnx.numpy, fnx.lax; print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(ROOT))
    assert out.stdout.split() == ["False"], out.stdout + out.stderr
