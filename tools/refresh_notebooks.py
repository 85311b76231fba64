"""Run the notebooks top to bottom and store them with their outputs.

    python tools/refresh_notebooks.py                 # every notebook in notebooks/
    python tools/refresh_notebooks.py 02_train_mlp    # the ones whose name contains this

Each runs as the tests run it (tests/test_notebooks.py uses ``execute`` below): in a fresh
``python3`` kernel whose working directory is notebooks/ and whose ``PYTHONPATH`` starts with the
repository root, so the kernel imports this checkout's fnx. A notebook that fails is not written.
Needs the ``test`` extra (nbclient, nbformat, ipykernel, matplotlib, scikit-learn).
"""
import glob
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")
CELL_TIMEOUT_S = 120


def notebook_paths(pattern: str = "") -> list[str]:
    """The notebooks whose file name contains ``pattern``, in order."""
    return [p for p in sorted(glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))
            if pattern in os.path.basename(p)]


def execute(path: str):
    """The notebook at ``path`` run top to bottom (a ``nbformat.NotebookNode`` with outputs).
    Raises ``nbclient.exceptions.CellExecutionError`` at the first cell that fails."""
    import nbclient
    import nbformat
    nb = nbformat.read(path, as_version=4)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + old if old else "")   # the kernel inherits it
    try:
        # no timings in the cells' metadata: a refresh changes only what the cells print
        nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                record_timing=False,
                                resources={"metadata": {"path": NOTEBOOK_DIR}}).execute()
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    return nb


def main(argv: list[str]) -> int:
    import nbformat
    paths = notebook_paths(argv[0] if argv else "")
    for path in paths:
        print(f"running {os.path.relpath(path, ROOT)}", flush=True)
        nbformat.write(execute(path), path)
    return 0 if paths else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
