"""A benchmark spec's settings as read from JSON, and the residual wiring of the in-package
transformer block, computed on the CPU."""

from __future__ import annotations

import pytest

from rocmdoctor.tuners.bench.spec import BenchSpec

torch = pytest.importorskip("torch", reason="the models are torch modules: install torch==2.13.0")


def test_settings_from_json_are_a_copy_and_null_is_none_set() -> None:
    assert BenchSpec.from_dict({"settings": None}).settings == {}
    given = {"OMP_NUM_THREADS": "4"}
    spec = BenchSpec.from_dict({"settings": given})
    given["OMP_NUM_THREADS"] = "8"
    assert spec.settings == {"OMP_NUM_THREADS": "4"}


def test_encoder_block_adds_attention_then_mlp_to_its_input() -> None:
    from rocmdoctor.tuners.bench.models import EncoderBlock

    torch.manual_seed(0)
    block = EncoderBlock(num_heads=2, hidden_dim=8, mlp_dim=16).eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        y = block.ln_1(x)
        y, _ = block.self_attention(y, y, y, need_weights=False)
        mid = x + y
        expected = mid + block.mlp(block.ln_2(mid))
        assert torch.allclose(block(x), expected)


def test_a_time_or_rate_setting_is_a_number_not_below_zero() -> None:
    from rocmdoctor.tuners.bench.spec import settings_problems
    assert settings_problems({"power_hz": 10, "min_warmup_s": 2.5, "cpu_time_s": 0.0}) == []
    assert settings_problems({"power_hz": -0.5, "min_warmup_s": True,
                              "cpu_time_s": "3"}) == [
        "setting 'power_hz' must be float, not -0.5",
        "setting 'min_warmup_s' must be float, not True",
        "setting 'cpu_time_s' must be float, not '3'"]
