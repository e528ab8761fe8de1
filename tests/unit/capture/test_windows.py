"""Capture windows: time and size, empty windows, unique names, and the
replay property the Spark job's exactly-once rests on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.capture.windows import BatchRef, WindowPolicy, WindowState, plan

S = 1000
POLICY = WindowPolicy(interval_ms=60 * S, size_limit_bytes=1000)


def refs(*specs: tuple[int, int]) -> list[BatchRef]:
    """Batches of one offset each: (append time ms, size)."""
    return [BatchRef(i, i + 1, t, size) for i, (t, size) in enumerate(specs)]


def test_a_window_is_written_only_once_time_has_closed_it():
    batches = refs((10 * S, 100), (20 * S, 100))
    files, state = plan(WindowState(0), batches, 2, POLICY, close_before=0, close_file=False)
    assert files == [] and state == WindowState(0, 0)  # still open: nothing taken, the window known
    files, state = plan(WindowState(0), batches, 2, POLICY, close_before=60 * S, close_file=False)
    assert [(f.name_ms, f.first_offset, f.end_offset, f.batches) for f in files] == [(0, 0, 2, 2)]
    assert state == WindowState(2, 60 * S, 0, False)


def test_a_later_event_closes_the_windows_before_it_and_idle_windows_give_empty_files():
    batches = refs((10 * S, 100), (200 * S, 100))
    files, state = plan(WindowState(0), batches, 2, POLICY, close_before=0, close_file=False)
    assert [(f.name_ms, f.batches) for f in files] == [(0, 1), (60 * S, 0), (120 * S, 0)]
    assert state.next_offset == 1 and state.window_start == 180 * S  # the event at 200 s waits


def test_skip_empty_writes_no_file_for_idle_windows():
    policy = WindowPolicy(interval_ms=60 * S, size_limit_bytes=1000, skip_empty=True)
    files, state = plan(WindowState(0), refs((10 * S, 100), (200 * S, 100)), 2, policy, close_before=10**7,
                        close_file=False)
    assert [(f.name_ms, f.batches) for f in files] == [(0, 1), (180 * S, 1)]
    assert state.window_start == policy.window_of(10**7)


def test_the_size_limit_closes_a_file_early_and_the_next_is_named_after_its_first_event():
    batches = refs((1 * S, 600), (2 * S, 600), (3 * S, 600), (3 * S + 500, 600))
    files, _ = plan(WindowState(0), batches, 4, POLICY, close_before=60 * S, close_file=False)
    assert [(f.name_ms, f.first_offset, f.end_offset) for f in files] == [
        (0, 0, 1), (2 * S, 1, 2), (3 * S, 2, 3), (4 * S, 3, 4),  # 3.5 s is taken by 3 s: the next free second
    ]


def test_a_forced_close_then_more_events_in_the_same_window_never_reuse_a_name():
    files1, state = plan(WindowState(0), refs((5 * S, 10)), 1, POLICY, close_before=0, close_file=True)
    assert [f.name_ms for f in files1] == [0] and state.window_has_file
    more = [BatchRef(1, 2, 5 * S + 200, 10)]
    files2, state = plan(state, more, 2, POLICY, close_before=60 * S, close_file=False)
    assert [f.name_ms for f in files2] == [5 * S]  # no empty file for the window: it has one
    assert state == WindowState(2, 60 * S, 5 * S, False)


def test_an_idle_partition_starts_its_windows_now():
    files, state = plan(WindowState(7), [], 7, POLICY, close_before=600 * S, close_file=False)
    assert files == [] and state == WindowState(7, 600 * S)


def test_control_batches_after_the_last_event_are_consumed():
    files, state = plan(WindowState(0), refs((1 * S, 10)), 5, POLICY, close_before=60 * S, close_file=False)
    assert files[0].end_offset == 5 and state.next_offset == 5


@st.composite
def histories(draw):
    n = draw(st.integers(0, 40))
    t, out = 0, []
    for i in range(n):
        t += draw(st.sampled_from([0, 1, 100, 999, 1000, 5 * S, 61 * S, 200 * S]))
        out.append(BatchRef(2 * i, 2 * i + 1 + draw(st.integers(0, 1)), t, draw(st.integers(1, 700))))
    polls = draw(st.lists(st.tuples(st.integers(0, n), st.integers(0, 400 * S), st.booleans()), max_size=8))
    policy = WindowPolicy(interval_ms=draw(st.sampled_from([1, 10, 60])) * S,
                          size_limit_bytes=draw(st.sampled_from([1, 500, 1000, 10**6])),
                          skip_empty=draw(st.booleans()))
    return out, sorted(polls), policy


@settings(max_examples=300, deadline=None)
@given(histories())
def test_replaying_any_micro_batch_from_its_offsets_gives_the_same_files(history):
    batches, polls, policy = history
    state = WindowState(0)
    seen, names = [], []
    now = 0
    last = batches[-1].append_time_ms if batches else 0
    for visible, advance, close_file in polls + [(len(batches), last + 3 * policy.interval_ms, True)]:
        now = max(now, advance)
        # The log as a poll sees it: the first `visible` batches; the end is the next offset.
        avail = [b for b in batches[:visible] if b.base_offset >= state.next_offset]
        end = batches[visible - 1].next_offset if visible else 0
        end = max(end, state.next_offset)
        files, new = plan(state, avail, end, policy, close_before=policy.window_of(now), close_file=close_file)
        # Spark replays from (start, end) alone.
        again = [b for b in avail if b.base_offset < new.next_offset]
        replayed, state2 = plan(state, again, new.next_offset, policy, close_before=new.window_start, close_file=True)
        assert replayed == files and state2 == new
        for f in files:
            seen += [b for b in batches if f.first_offset <= b.base_offset < f.end_offset]
            names.append(f.name_ms)
        state = new
    assert seen == batches  # every batch in exactly one file, in order
    assert names == sorted(set(names))  # names strictly increase: none is reused
