"""The in-package models match torchvision's: parameter counts, shapes, FLOPs.

torchvision is not installed on this machine (importing a mismatched wheel fails, see
tests/fixtures/captured/), so the counts are asserted always and compared against torchvision
only where it imports (a skip `pytest -rs` prints, as .ci/run does). Without torch (a venv
that skipped the README's first step) the whole module skips. Models are built on the meta device: exact shapes and counts, no RAM.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the models are torch modules: install torch==2.13.0 "
                                             "first, as the README's test command does")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from rocmdoctor.tuners.bench import models  # noqa: E402
from rocmdoctor.tuners.bench.flops import training_step_flops  # noqa: E402

# torchvision's documented parameter counts (ResNet50_Weights / ViT_B_16_Weights meta
# "num_params"): https://docs.pytorch.org/vision/stable/models.html
RESNET50_PARAMS = 25_557_032
VIT_B_16_PARAMS = 86_567_656
# GPT-2 small (124M): 50257x768 tied embedding + 1024x768 positions + 12 blocks + final norm
GPT2_SMALL_PARAMS = 124_439_808


def _on_meta(factory, *args, **kwargs):  # type: ignore[no-untyped-def]
    with torch.device("meta"):
        return factory(*args, **kwargs)


def test_resnet50_parameters_and_shape() -> None:
    model = _on_meta(models.resnet50)
    assert models.count_parameters(model) == RESNET50_PARAMS
    out = model(torch.empty(2, 3, 224, 224, device="meta"))
    assert out.shape == (2, 1000)


def test_vit_b_16_parameters_and_shape() -> None:
    model = _on_meta(models.vit_b_16)
    assert models.count_parameters(model) == VIT_B_16_PARAMS
    assert model(torch.empty(2, 3, 224, 224, device="meta")).shape == (2, 1000)
    with pytest.raises(ValueError, match="not a multiple of 16"):
        models.vit_b_16(image_size=100)


def test_gpt2_small_parameters_and_shape() -> None:
    model = _on_meta(models.gpt2_small, 256)
    assert models.count_parameters(model) == GPT2_SMALL_PARAMS
    assert model.lm_head.weight is model.wte.weight
    tokens = torch.zeros(2, 256, dtype=torch.long, device="meta")
    assert model(tokens).shape == (2, 256, 50257)


def test_resnet50_forward_flops_match_torchvision_metadata() -> None:
    """torchvision lists ResNet-50 at 4.09 "GFLOPS", which are multiply-adds: 2 x 4.09 G."""
    model = _on_meta(models.resnet50)
    with FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, 224, 224, device="meta"))
    assert counter.get_total_flops() == pytest.approx(2 * 4.09e9, rel=0.01)


def test_training_step_flops_of_resnet50() -> None:
    model = _on_meta(models.resnet50)
    images = torch.empty(2, 3, 224, 224, device="meta")
    labels = torch.zeros(2, dtype=torch.long, device="meta")
    forward, total = training_step_flops(model, images, labels,
                                         torch.nn.functional.cross_entropy,
                                         lambda: torch.autocast("cpu", enabled=False))
    assert forward / 2 == pytest.approx(8.18e9, rel=0.01)
    # backward is about twice the forward; the first conv needs no input gradient
    assert total / 2 == pytest.approx(24.30e9, rel=0.01)


def test_gpt2_forward_flops_per_token_are_twice_the_weights() -> None:
    """Forward FLOPs per token = 2 x (block weights + the tied LM head) + attention scores and
    mixing (2 x 2 x seq x width per layer, causal masking not discounted); embedding lookups
    are free."""
    model = _on_meta(models.gpt2_small, 128)
    tokens = torch.zeros(1, 128, dtype=torch.long, device="meta")
    with FlopCounterMode(display=False) as counter:
        model(tokens)
    blocks = sum(p.numel() for p in model.h.parameters() if p.dim() == 2)
    head = model.lm_head.weight.numel()
    attention = 2 * 2 * 128 * 768 * 12
    assert counter.get_total_flops() / 128 == pytest.approx(2 * (blocks + head) + attention,
                                                            rel=1e-3)


def test_tiny_cnn_runs() -> None:
    model = models.tiny_cnn()
    assert model(torch.randn(3, 3, 16, 16)).shape == (3, 10)
    assert models.count_parameters(model) == 5_466


def test_against_torchvision_where_it_imports() -> None:
    try:
        import torchvision
    except Exception as exc:  # noqa: BLE001 - a broken wheel raises RuntimeError, not ImportError
        pytest.skip(f"torchvision does not import here: {type(exc).__name__}: {exc}")
    for ours, theirs in ((models.resnet50, torchvision.models.resnet50),
                         (models.vit_b_16, torchvision.models.vit_b_16)):
        a, b = ours(), theirs()
        assert models.count_parameters(a) == models.count_parameters(b)
        a.load_state_dict(b.state_dict())  # same module names and shapes
        a.eval()
        b.eval()
        x = torch.randn(1, 3, 224, 224)
        with torch.no_grad():
            torch.testing.assert_close(a(x), b(x))


def test_the_vit_encoder_adds_the_position_embedding_before_its_layers() -> None:
    """On real tensors: with no layers, torchvision's Encoder is LayerNorm(x + position)."""
    torch.manual_seed(0)
    encoder = models.Encoder(seq_length=5, num_layers=0, num_heads=1, hidden_dim=8,
                             mlp_dim=16)
    x = torch.randn(2, 5, 8)
    want = torch.nn.functional.layer_norm(x + encoder.pos_embedding, (8,), eps=1e-6)
    assert torch.allclose(encoder(x), want, atol=1e-6)
    assert not torch.allclose(encoder(x), torch.nn.functional.layer_norm(x, (8,), eps=1e-6),
                              atol=1e-3)
