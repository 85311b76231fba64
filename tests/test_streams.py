"""The side-stream plan of a lowered program (fnx.cuda.streams), checked on the CPU: simulating
what the streams and events order, every dependency holds, no buffer is dropped while a launch
on another stream may still touch it, and everything is joined by the end."""
import random

import pytest

from fnx.cuda.streams import Access, dependencies, schedule


def happens_before(sched):
    """(a, b) -> whether launch position a is ordered before launch position b on the GPU."""
    n = len(sched.launches)
    edges = {t: set() for t in range(n)}
    last_on: dict = {}
    recorded_at = {}            # event -> launch position after which it is recorded
    start_waiters = []
    for t, launch in enumerate(sched.launches):
        if launch.stream in last_on:
            edges[last_on[launch.stream]].add(t)
        last_on[launch.stream] = t
        for e in launch.waits:
            if e == sched.start_event:
                start_waiters.append(t)
            else:
                edges[recorded_at[e]].add(t)
        if launch.record is not None:
            recorded_at[launch.record] = t
    reach = {}
    for t in reversed(range(n)):
        r = set()
        for u in edges[t]:
            r |= {u} | reach[u]
        reach[t] = r
    final = {recorded_at[e] for e in sched.final_waits}
    return (lambda a, b: b in reach[a]), final, reach, last_on


def check(accesses, kept, views=lambda s: {s}, n_side=2):
    sched = schedule(accesses, views, kept, n_side)
    pos = {launch.step: t for t, launch in enumerate(sched.launches)}
    assert sorted(pos) == list(range(len(accesses)))
    before, final, reach, last_on = happens_before(sched)
    for j, preds in enumerate(dependencies(accesses, views)):
        for i in preds:
            assert before(pos[i], pos[j]), (i, j)
    freed_at = {s: t for t, launch in enumerate(sched.launches) for s in launch.frees}
    for s, t in freed_at.items():
        assert s not in kept
        touchers = [pos[j] for j, a in enumerate(accesses) if s in a.touched]
        assert max(touchers) <= t
        for u in range(t + 1, len(sched.launches)):
            for a in touchers:
                assert a == u or before(a, u), (s, a, u)
    # every side launch reaches the main stream's end
    ends = final | ({last_on[0]} if 0 in last_on else set())
    for t, launch in enumerate(sched.launches):
        if launch.stream:
            assert any(t == f or before(t, f) for f in ends), t
    return sched


def training_step_accesses():
    """A 3-layer MLP step as lowered: slots 0-5 are W1 b1 W2 b2 W3 b3 (donated), 6 is x."""
    A = lambda r, w, p=(): Access(frozenset(r), frozenset(w), frozenset(p))
    return [
        A({6, 0, 1}, {10}),          # 0 dense 1
        A({10, 2, 3}, {11}),         # 1 dense 2
        A({11, 4, 5}, {12}),         # 2 dense 3
        A({12}, {13, 14}),           # 3 loss rows kernel: loss 13, gZ3 14
        A({14}, {15}),               # 4 bias-3 gradient
        A({14, 4}, {16}),            # 5 gX3 = gZ3 @ W3^T
        A({16, 11}, {17, 18}),       # 6 mask: gZ2 17, bias-2 grad 18
        A({17, 2}, {19}),            # 7 gX2
        A({19, 10}, {20, 21}),       # 8 mask: gZ1 20, bias-1 grad 21
        A({1, 3, 5, 15, 18, 21}, {22, 23, 24}, {1, 3, 5}),   # 9 bias updates, in place
        A({6, 20, 0}, {25}, {0}),    # 10 W1 update in place
        A({10, 17, 2}, {26}, {2}),   # 11 W2 update in place
        A({11, 14, 4}, {27}, {4}),   # 12 W3 update in place
    ]


def test_weight_updates_run_beside_the_backward_chain():
    acc = training_step_accesses()
    kept = set(range(7)) | {13, 22, 23, 24, 25, 26, 27}
    sched = check(acc, kept)
    on_side = {ln.step for ln in sched.launches if ln.stream}
    # the longest chain (through gW1's update) stays on the main stream
    assert on_side == {4, 9, 11, 12}
    pos = {ln.step: t for t, ln in enumerate(sched.launches)}
    # W3's update is issued before the layers below it run, right after gX3 read W3
    assert pos[12] < pos[6]
    # nothing on the main stream waits for a side stream before the end
    assert not any(ln.waits for ln in sched.launches if ln.stream == 0)
    assert sched.n_streams == 2


def test_no_side_streams_when_asked_or_useless():
    acc = training_step_accesses()
    kept = set(range(7)) | {13, 22, 23, 24, 25, 26, 27}
    sched = check(acc, kept, n_side=0)
    assert all(ln.stream == 0 for ln in sched.launches) and not sched.n_events
    chain = [Access(frozenset({0}), frozenset({1})), Access(frozenset({1}), frozenset({2}))]
    sched = check(chain, {0, 2})
    assert all(ln.stream == 0 for ln in sched.launches)


def test_in_place_write_waits_for_readers_of_views():
    A = lambda r, w, p=(): Access(frozenset(r), frozenset(w), frozenset(p))
    # slot 5 is a view of donated slot 0; step 2 writes slot 0 in place after step 1 reads 5
    acc = [A({0}, {5}), A({5}, {6}), A({7}, {8}, {0}), A({6}, {9})]
    views = lambda s: {0, 5} if s in (0, 5) else {s}
    preds = dependencies(acc, views)
    assert 1 in preds[2] and 0 in preds[2]
    check(acc, {0, 7, 8, 9}, views)


@pytest.mark.parametrize("seed", range(40))
def test_random_programs(seed):
    rng = random.Random(seed)
    n_inputs = rng.randint(1, 4)
    live = list(range(n_inputs))           # slots that can be read
    donated = set(range(n_inputs))
    next_slot, acc = n_inputs, []
    read_later: dict = {}
    n = rng.randint(2, 18)
    plan = []
    for j in range(n):
        reads = set(rng.sample(live, rng.randint(1, min(3, len(live)))))
        writes = set(range(next_slot, next_slot + rng.randint(1, 2)))
        next_slot += len(writes)
        plan.append([reads, writes, set()])
        live += sorted(writes)
    # an in-place write into a donated slot by its last reader (as lowering guarantees)
    for d in donated:
        readers = [j for j, (r, _, _) in enumerate(plan) if d in r]
        if readers and rng.random() < 0.6:
            plan[readers[-1]][2].add(d)
    acc = [Access(frozenset(r), frozenset(w), frozenset(p)) for r, w, p in plan]
    outputs = set(rng.sample(range(n_inputs, next_slot), rng.randint(1, 3)))
    check(acc, donated | outputs, n_side=rng.randint(1, 3))
