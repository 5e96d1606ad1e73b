"""Power sampled from a separate process: the measured process runs no sampling thread."""

from __future__ import annotations

import threading
import time

import pytest

from rocmdoctor.tuners.bench import power
from rocmdoctor.tuners.bench.power_child import ProcessSampler
from rocmdoctor.tuners.bench.worker import _start_sampler


def test_samples_come_from_a_child_process_not_a_thread() -> None:
    sampler = ProcessSampler(power.FakeSource(250.0, 40.0), hz=20.0)
    threads = threading.active_count()
    sampler.start()
    time.sleep(0.6)
    assert threading.active_count() == threads  # nothing samples in this process
    summary = sampler.stop(samples_measured=100)
    assert sampler._proc is not None and sampler._proc.returncode == 0
    assert summary["sampler"] == "process" and summary["source"] == "fake"
    assert summary["reason"] is None
    assert 8 <= summary["samples"] <= 16  # 20 Hz over about 0.6 s
    assert summary["avg_w"] == summary["peak_w"] == 250.0
    assert summary["util_avg_pct"] == 40.0
    assert summary["energy_source"] == "integrated power samples"
    assert summary["energy_per_sample_j"] == pytest.approx(250.0 * 0.6 / 100, rel=0.25)


def test_a_child_that_does_not_start_is_an_error_with_its_reason() -> None:
    sampler = ProcessSampler(power.FakeSource(1.0), python="/bin/false")
    with pytest.raises(RuntimeError, match="the power-sampling process did not start"):
        sampler.start()


def test_sources_that_cannot_move_to_a_child_keep_the_thread() -> None:
    class Local(power.FakeSource):
        def spawn_args(self) -> None:
            return None

    sampler = _start_sampler(Local(100.0), [])
    assert isinstance(sampler, power.PowerSampler)
    time.sleep(0.2)
    summary = sampler.stop(samples_measured=10)
    assert summary["sampler"] == "thread" and summary["avg_w"] == 100.0


def test_the_thread_is_the_fallback_when_the_child_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: ProcessSampler) -> None:
        raise RuntimeError("the power-sampling process did not start: no output")

    monkeypatch.setattr(ProcessSampler, "start", refuse)
    sampler = _start_sampler(power.FakeSource(100.0), ["nvml: ok"])
    assert isinstance(sampler, power.PowerSampler)
    assert sampler.reasons == ["nvml: ok", "process sampling: the power-sampling process did "
                               "not start: no output"]
    sampler.stop(samples_measured=1)


def test_no_source_is_still_a_result_with_the_reasons() -> None:
    summary = _start_sampler(None, ["power is measured on GPUs only"]).stop(samples_measured=1)
    assert summary["avg_w"] is None
    assert summary["reason"] == "power is measured on GPUs only"
