"""The GEMM choice cache file (fnx.cuda.gemm_table): its reading and writing need no GPU."""
import json
import logging
import multiprocessing

import pytest

from fnx.cuda import gemm_table


@pytest.fixture
def path(tmp_path):
    gemm_table._warned.clear()
    return str(tmp_path / "gemm.json")


@pytest.fixture
def read_logged(caplog):
    """``read(path) -> (choices, number of warnings logged)``: fnx repairs the file itself, so
    it says so in a log record (fnx.cuda), not a Python warning."""
    def read(path):
        caplog.clear()
        with caplog.at_level(logging.WARNING, "fnx.cuda"):
            got = gemm_table.read_choices(path)
            gemm_table.read_choices(path)          # a second read does not warn again
        return got, len([r for r in caplog.records
                         if r.name == "fnx.cuda" and "GEMM choice cache" in r.getMessage()])
    return read


@pytest.mark.parametrize("content", ['{"64x64x64b1nn": "lt:', "not json at all", "[1, 2, 3]",
                                     '"lt:0"', "null"])
def test_corrupt_or_wrong_shape_is_ignored_with_one_warning_and_rewritten(path, content,
                                                                          read_logged):
    with open(path, "w") as fh:
        fh.write(content)
    got, warned = read_logged(path)
    assert got == {} and warned == 1
    with open(path) as fh:
        assert json.load(fh) == {}


def test_malformed_entries_are_dropped_and_the_rest_kept(path, read_logged):
    with open(path, "w") as fh:
        json.dump({"a": "lt:3", "b": 7, "c": "lt:x", "d": "vec_block4", "e": "lt:1:2",
                   "f": "fallback", "g": ["lt:0"]}, fh)
    got, warned = read_logged(path)
    assert got == {"a": "lt:3", "d": "vec_block4", "e": "lt:1:2", "f": "fallback"}
    assert warned == 1
    with open(path) as fh:
        assert json.load(fh) == got


def test_a_missing_file_is_no_problem(path, read_logged):
    assert read_logged(path) == ({}, 0)


def test_writers_merge_their_entries(path):
    gemm_table.write_choices(path, {"a": "lt:0", "b": "fallback"})
    gemm_table.write_choices(path, {"b": "lt:2", "c": "outer4"})     # another process's
    assert gemm_table.read_choices(path) == {"a": "lt:0", "b": "lt:2", "c": "outer4"}


def _write_many(path, worker):
    for i in range(20):
        gemm_table.write_choices(path, {f"w{worker}-{i}": f"lt:{i}"})


def test_concurrent_writers_lose_nothing(path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_write_many, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    got = gemm_table.read_choices(path)
    assert got == {f"w{w}-{i}": f"lt:{i}" for w in range(4) for i in range(20)}


def test_known_choice():
    assert gemm_table.known_choice("fallback", [])
    assert gemm_table.known_choice("lt:3", [])
    assert gemm_table.known_choice("outer4", ["outer4"])
    assert not gemm_table.known_choice("outer4", ["warp_rows"])
    assert not gemm_table.known_choice("lt:x", [])
    assert not gemm_table.known_choice(3, [])
