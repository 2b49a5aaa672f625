"""Rolling label shares and hot frames over StackSamples (pure)."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwatch.model import stacks as S
from gpuwatch.model.stacks import DumpResult, StackSample, ThreadStack
from gpuwatch.shares import Shares, hot_frames, stack_shares


def th(role: str, label: str, detail: str = "", rank: int | None = None, leaf: str = "f (x.py:1)") -> ThreadStack:
    return ThreadStack(pid=1, tid=1, role=role, rank=rank, thread_name="MainThread", label=label, detail=detail,
                       active=True, owns_gil=False, frames=(leaf, "main (train.py:9)"))


def sample(t: float, *threads: ThreadStack, failed: int = 0) -> StackSample:
    dumps = tuple(DumpResult(pid=1, ok=True, ms=9.0) for _ in threads) + tuple(
        DumpResult(pid=2, ok=False, ms=1.0, error=f"boom {t}") for _ in range(failed))
    return StackSample(t=t, threads=threads, dumps=dumps)


def test_shares_per_role_with_counts():
    samples = [
        sample(1.0, th("main", S.DATA_WAIT, "Queue.get"), th("main", S.DATA_WAIT, "Queue.get"),
               th("worker", S.W_BUSY, "ImageFile.load"), th("other", S.OTHER)),
        sample(2.0, th("main", S.DISPATCH, "Linear.forward"), th("main", S.DATA_WAIT, "Queue.get"),
               th("worker", S.W_BUSY, "Image.resize"), th("worker", S.W_BUSY, "ImageFile.load"),
               th("pin", S.PIN_IDLE, "Queue.get")),
    ]
    sh = stack_shares(samples, window_s=30)
    assert sh.main.samples == 4
    assert sh.main.counts == ((S.DATA_WAIT, 3), (S.DISPATCH, 1))  # in MAIN_LABELS order
    assert sh.main.share(S.DATA_WAIT) == pytest.approx(0.75)
    assert sh.main.share(S.SYNC) == 0.0
    assert sh.main.top == S.DATA_WAIT
    assert sh.worker.shares() == {S.W_BUSY: 1.0}
    assert sh.worker.detail(S.W_BUSY) == "ImageFile.load"
    assert sh.worker.details == ((S.W_BUSY, "ImageFile.load", 2),)
    assert sh.pin.samples == 1 and sh.pin.top == S.PIN_IDLE
    assert sh.span_s == pytest.approx(1.0)
    assert sh.dumps_ok == 9 and sh.dumps_failed == 0 and sh.last_error is None
    assert sh.role("worker") is sh.worker
    # role "other" threads (queue feeders, resource sharers) count nowhere
    assert sum(r.samples for r in (sh.main, sh.worker, sh.pin)) == 8


def test_window_keeps_only_recent_samples():
    samples = [sample(float(t), th("main", S.DATA_WAIT if t < 50 else S.BACKWARD)) for t in range(100)]
    sh = stack_shares(samples, window_s=10)
    assert sh.main.samples == 11  # t = 89..99, both ends included
    assert sh.main.shares() == {S.BACKWARD: 1.0}
    assert stack_shares(samples, window_s=1000).main.share(S.DATA_WAIT) == pytest.approx(0.5)


def test_out_of_order_samples_are_windowed_by_time():
    samples = [sample(5.0, th("main", S.SYNC)), sample(1.0, th("main", S.DISPATCH)), sample(4.0, th("main", S.SYNC))]
    sh = stack_shares(samples, window_s=2)
    assert sh.main.counts == ((S.SYNC, 2),) and sh.span_s == pytest.approx(1.0)


def test_rank_filter():
    samples = [sample(1.0, th("main", S.DATA_WAIT, rank=0), th("main", S.BACKWARD, rank=1),
                      th("main", S.BACKWARD, rank=1))]
    assert stack_shares(samples, 30, rank=0).main.shares() == {S.DATA_WAIT: 1.0}
    assert stack_shares(samples, 30, rank=1).main.shares() == {S.BACKWARD: 1.0}
    assert stack_shares(samples, 30).main.samples == 3


def test_no_samples_means_unknown_not_zero():
    sh = stack_shares([], window_s=30)
    assert sh.main.samples == 0 and sh.main.share(S.DATA_WAIT) is None and sh.main.top is None
    assert sh.main.shares() == {} and sh.span_s == 0.0
    only_failures = stack_shares([sample(1.0, failed=2)], 30)
    assert only_failures.dumps_failed == 2 and only_failures.last_error == "boom 1.0"
    assert only_failures.worker.share(S.W_BUSY) is None


def test_shares_is_frozen():
    sh = stack_shares([sample(1.0, th("main", S.SYNC))], 30)
    assert isinstance(sh, Shares)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sh.window_s = 5  # type: ignore[misc]


def test_hot_frames_counts_leaves():
    samples = [
        sample(1.0, th("main", S.DATA_WAIT, leaf="select (selectors.py:415)"),
               th("worker", S.W_BUSY, leaf="ImageFile.load (PIL/ImageFile.py:425)")),
        sample(2.0, th("main", S.DATA_WAIT, leaf="select (selectors.py:415)"),
               th("main", S.OPTIMIZER, leaf="_single_tensor_adam (torch/optim/adam.py:544)")),
        sample(3.0, th("main", S.SYNC, leaf="a (b.py:1)")),
    ]
    assert hot_frames(samples, "main") == [
        ("select (selectors.py:415)", 2), ("_single_tensor_adam (torch/optim/adam.py:544)", 1), ("a (b.py:1)", 1)]
    assert hot_frames(samples, "main", n=1) == [("select (selectors.py:415)", 2)]
    assert hot_frames(samples, "worker") == [("ImageFile.load (PIL/ImageFile.py:425)", 1)]
    assert hot_frames(samples, "main", window_s=1.0) == [
        ("_single_tensor_adam (torch/optim/adam.py:544)", 1), ("a (b.py:1)", 1), ("select (selectors.py:415)", 1)]
    assert hot_frames(samples, "main", label=S.SYNC) == [("a (b.py:1)", 1)]
    assert hot_frames(samples, "pin") == []
