"""The eval-forward probe: the model's forward replayed as validation runs it, and nothing of the run changed."""
from __future__ import annotations

import itertools

import torch
from torch import nn

from prenet_callbacks.measure.eval_probe import CALL_SAMPLES, REPEATS, EvalForwardProbe


class Recorder(nn.Module):
    """A model that notes the mode and grad state of every forward it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Dropout(0.5), nn.Linear(16, 2))
        self.seen: list[tuple[bool, bool]] = []

    def forward(self, x: torch.Tensor, *, scale: float = 1.0) -> torch.Tensor:
        self.seen.append((self.training, torch.is_grad_enabled()))
        return self.net(x) * scale


def _fake_clock(step: float = 0.5):
    ticks = itertools.count()
    return lambda: next(ticks) * step


def _train_batch(model: nn.Module, probe: EvalForwardProbe, calls: int = 1) -> None:
    probe.new_batch()
    for _ in range(calls):
        model(torch.randn(4, 8), scale=2.0).sum().backward()


def test_the_replay_runs_in_eval_mode_without_grad_on_the_last_call_and_restores_everything():
    model = Recorder().train()
    model.net[2].eval()           # a module the user had put in eval mode stays so
    probe = EvalForwardProbe(model, now=_fake_clock())
    probe.arm()
    _train_batch(model, probe)
    running_mean = model.net[1].running_mean.clone()
    rng = torch.get_rng_state()
    model.seen.clear()
    seconds = probe.measure()
    assert seconds == 0.5 and probe.declined is None            # the fake clock ticks once per call
    assert model.seen == [(False, False)] * (REPEATS + 1)       # eval mode, no autograd, warm-up + repeats
    assert model.training and model.net[0].training and not model.net[2].training
    assert torch.equal(torch.get_rng_state(), rng)
    assert torch.equal(model.net[1].running_mean, running_mean)  # eval-mode BatchNorm updates nothing
    assert all(p.grad is None or p.grad.abs().sum() >= 0 for p in model.parameters())
    assert not model._forward_hooks and not model._forward_pre_hooks   # no on_call: the hooks are off


def test_after_the_replay_it_times_training_calls_then_takes_its_hooks_off():
    model = Recorder()
    calls: list[float] = []
    probe = EvalForwardProbe(model, now=_fake_clock(), on_call=calls.append)
    probe.arm()
    _train_batch(model, probe)
    probe.measure()
    with torch.no_grad():
        model(torch.randn(4, 8))   # a validation call is not a training call
    for _ in range(CALL_SAMPLES + 3):
        _train_batch(model, probe)
    assert len(calls) == CALL_SAMPLES and all(c == 0.5 for c in calls)
    assert not model._forward_hooks and not model._forward_pre_hooks


def test_it_declines_what_a_replay_would_not_reproduce():
    model = Recorder()
    twice = EvalForwardProbe(model)
    twice.arm()
    _train_batch(model, twice, calls=2)
    assert twice.measure() is None and "2 times" in twice.declined

    never = EvalForwardProbe(model)
    never.arm()
    assert never.measure() is None and "not called" in never.declined

    compiled = EvalForwardProbe(torch.compile(Recorder()))
    compiled.arm()
    assert compiled.measure() is None and "compiled" in compiled.declined


def test_a_failing_replay_raises_with_the_model_as_it_was():
    class Fails(Recorder):
        def forward(self, x, *, scale=1.0):
            if not self.training:
                raise RuntimeError("eval path broken")
            return super().forward(x, scale=scale)

    model = Fails().train()
    probe = EvalForwardProbe(model, on_call=lambda s: None)
    probe.arm()
    _train_batch(model, probe)
    try:
        probe.measure()
    except RuntimeError as error:
        assert "eval path broken" in str(error)
    else:
        raise AssertionError("the replay's error should reach the window, which reports it")
    assert model.training and not model._forward_hooks


def test_only_a_model_held_whole_is_replayed_outside_its_step():
    from torch import nn

    from prenet_callbacks.measure.eval_probe import holds_whole_model

    class FullyShardedDataParallel(nn.Module):   # stands for torch's FSDP wrapper, matched by class name
        pass

    wrapped = nn.Sequential(nn.Linear(2, 2))
    wrapped.add_module("shard", FullyShardedDataParallel())
    assert holds_whole_model(nn.Sequential(nn.Linear(2, 2)))
    assert not holds_whole_model(wrapped)
    assert not holds_whole_model(object())


def test_a_failing_call_timer_takes_the_hooks_off_and_the_forward_goes_on():
    model = Recorder()

    def broken(seconds: float) -> None:
        raise RuntimeError("sink broken")

    probe = EvalForwardProbe(model, now=_fake_clock(), on_call=broken)
    probe.arm()
    _train_batch(model, probe)
    probe.measure()
    _train_batch(model, probe)   # the timed call's sink raises inside the user's forward: swallowed
    assert not model._forward_hooks and not model._forward_pre_hooks
