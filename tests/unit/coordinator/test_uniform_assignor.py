"""The uniform assignor's fast path for groups whose members all subscribe to the same
topics, against the general path (which it replaces there): every partition once,
shares differing by at most one, and no more partitions moved than the general path
moves, given the previous target (disjoint, as the coordinator passes it). The general
path gives exactly the answers of the members x partitions search it replaced, kept
here as the reference."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kafka_wire.coordinator.assignors import UniformAssignor


@st.composite
def groups(draw):
    members = [f"m{i}" for i in range(draw(st.integers(1, 9)))]
    topics = {f"t{i}": draw(st.integers(0, 12)) for i in range(draw(st.integers(1, 3)))}
    subscribed = set(draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True)))
    if draw(st.booleans()):
        subscribed.add("not-created-yet")
    current: dict[str, dict[str, set[int]]] = {}
    # The previous target: each partition (some beyond a topic's size now) with at
    # most one owner, who may have left the group.
    for t, size in topics.items():
        for p in range(size + 2):
            owner = draw(st.sampled_from([*members, "gone", None]))
            if owner is not None:
                current.setdefault(owner, {}).setdefault(t, set()).add(p)
    return members, subscribed, topics, current


def _kept(assignment, current) -> int:
    return sum(len(ps & current.get(m, {}).get(t, set()))
               for m, owned in assignment.items() for t, ps in owned.items())


@settings(max_examples=400, deadline=None, derandomize=True)
@given(groups())
def test_same_subscriptions_balanced_complete_and_sticky(group):
    members, subscribed, topics, current = group
    subscriptions = {m: set(subscribed) for m in members}
    fast = UniformAssignor().assign(subscriptions, topics, current)
    general = UniformAssignor._heterogeneous(members, subscriptions, topics, current)
    every = sorted((t, p) for t in subscribed if t in topics for p in range(topics[t]))
    assert sorted((t, p) for owned in fast.values() for t, ps in owned.items() for p in ps) \
        == every
    shares = [sum(map(len, fast[m].values())) for m in members]
    assert max(shares) - min(shares) <= 1
    assert _kept(fast, current) >= _kept(general, current)
    # A new group: the same answer as the general path (round-robin in name order).
    assert UniformAssignor().assign(subscriptions, topics, {}) == \
        UniformAssignor._heterogeneous(members, subscriptions, topics, {})


def test_a_second_member_takes_the_highest_half():
    assigned = UniformAssignor().assign({"a": {"t"}, "b": {"t"}}, {"t": 6},
                                        {"a": {"t": set(range(6))}})
    assert assigned == {"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4, 5}}}


def _reference(members, subscriptions, topics, current):
    """The general path as it was: a search over every eligible member per partition."""
    out = {m: {} for m in members}
    eligible = {(t, p): [m for m in members if t in subscriptions[m]]
                for t in sorted(topics) for p in range(topics[t])}
    eligible = {tp: ms for tp, ms in eligible.items() if ms}
    count = {m: 0 for m in members}
    owner = {}
    for m in members:
        for t, ps in current.get(m, {}).items():
            for p in ps:
                if m in eligible.get((t, p), ()) and (t, p) not in owner:
                    owner[(t, p)] = m
                    count[m] += 1
    for tp, ms in eligible.items():
        if tp not in owner:
            m = min(ms, key=lambda x: (count[x], x))
            owner[tp] = m
            count[m] += 1
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner, reverse=True):
            src = owner[tp]
            dst = min(eligible[tp], key=lambda x: (count[x], x))
            if count[src] - count[dst] > 1:
                owner[tp] = dst
                count[src] -= 1
                count[dst] += 1
                moved = True
    for (t, p), m in owner.items():
        out[m].setdefault(t, set()).add(p)
    return out


@st.composite
def mixed_groups(draw):
    members = [f"m{i}" for i in range(draw(st.integers(1, 10)))]
    topics = {f"t{i}": draw(st.integers(0, 16)) for i in range(draw(st.integers(1, 4)))}
    names = [*sorted(topics), "not-created-yet"]
    subscriptions = {m: set(draw(st.lists(st.sampled_from(names), unique=True)))
                     for m in members}
    # Previous owners may overlap here (the general path must not care).
    current = {m: {t: set(draw(st.lists(st.integers(0, 18), max_size=6))) for t in names}
               for m in [*members, "gone"] if draw(st.booleans())}
    return members, subscriptions, topics, current


@settings(max_examples=600, deadline=None, derandomize=True)
@given(mixed_groups())
def test_different_subscriptions_get_the_reference_answer(group):
    members, subscriptions, topics, current = group
    assert UniformAssignor._heterogeneous(members, subscriptions, topics, current) == \
        _reference(members, subscriptions, topics, current)
