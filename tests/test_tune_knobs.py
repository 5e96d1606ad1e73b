"""Which knobs `rocmdoctor tune` searches on each platform, and what a trial's parameters
become (spec, environment, database folders). Platforms are the probe's facts for real
stacks: MI300X with the torch 2.9.1+rocm6.4 wheel (HIP 6.4.43482), an RX 7900 XTX with
2.13.0+rocm7.2 (HIP 7.2.53211), torch 2.6.0+rocm6.2.4, an H200 and a T4 with CUDA wheels."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.tuners import knobs as kb
from rocmdoctor.tuners import rules
from rocmdoctor.tuners.bench.spec import BenchSpec
from rocmdoctor.tuners.model import Platform
from rocmdoctor.tuners.space import PlannedKnob, SearchSpace, materialize, plan_space

MI300X = Platform(kind="rocm", torch="2.9.1+rocm6.4", hip="6.4.43482-0f2d60242",
                     device="AMD Instinct MI300X", arch="gfx942", cpu_count=64,
                     torch_threads=32)
RX7900 = Platform(kind="rocm", torch="2.13.0+rocm7.2", hip="7.2.53211",
                     device="AMD Radeon RX 7900 XTX", arch="gfx1100", cpu_count=16,
                     torch_threads=8)
ROCM26 = Platform(kind="rocm", torch="2.6.0+rocm6.2.4", hip="6.2.41134-65d174c3e",
                     device="AMD Instinct MI210", arch="gfx90a", cpu_count=32)
H200 = Platform(kind="cuda", torch="2.11.0+cu130", cuda="13.0", device="NVIDIA H200",
                   arch="sm_90", cpu_count=16)
T4 = Platform(kind="cuda", torch="2.9.1+cu128", cuda="12.8", device="Tesla T4",
                 arch="sm_75", cpu_count=8)
CPU = Platform(kind="cpu", torch="2.13.0+cpu", device="cpu", cpu_count=8, torch_threads=8)


def _knob(space: SearchSpace, name: str) -> PlannedKnob:
    found = space.get(name)
    assert found is not None, name
    return found


def _knobs(space: SearchSpace) -> list[tuple[str, tuple[str, ...], str]]:
    return [(pk.name, pk.labels, pk.baseline) for pk in space.knobs]


def test_default_space_for_resnet50_on_mi300x_with_torch_2_9() -> None:
    space = plan_space(MI300X, BenchSpec(), {})
    assert _knobs(space) == [
        ("precision", ("fp32", "bf16", "fp16"), "fp32"),
        ("channels_last", ("off", "on"), "off"),
        ("compile", ("off", "on"), "off"),
        # torch.optim's default on a GPU is foreach: only the other two are tried
        ("compile_mode", ("default", "reduce-overhead"), "default"),
        ("optimizer_impl", ("default", "for-loop", "fused"), "default"),
        ("cudnn_benchmark", ("default", "on"), "default"),
        ("miopen_immediate", ("default", "on"), "default"),
        ("miopen_find_mode", ("default", "FAST", "NORMAL", "HYBRID"), "default"),
        ("miopen_nhwc", ("default", "1"), "default"),
        ("tunableop", ("off", "on"), "off"),
        ("blas_prefer_hipblaslt", ("default", "1", "0"), "default"),
        ("hip_force_dev_kernarg", ("default", "1"), "default"),
        ("hsa_no_scratch_reclaim", ("default", "1"), "default"),
    ]
    assert space.skipped == (
        ("alloc", "needs torch >= 2.12 (this is 2.9.1+rocm6.4)"),
        ("aotriton_experimental", "resnet50 has no sdpa work for it to act on"),
        ("batch_size", "no batch size but yours (64) to try here"),
        ("rocm_fa_library", "resnet50 has no sdpa work for it to act on"),
        ("sdpa_backend", "resnet50 has no sdpa work for it to act on"),
        ("threads", "only on CPU"),
    )
    # 3 precisions x 2 x (compile off, or on with 2 modes: 3) x 3 optimizers x 2 x 2
    # x 4 find modes x 3 layout/NHWC combinations x 2 x 3 x 2 x 2
    assert space.size() == 31104
    assert space.baseline_params() == {
        "precision": "fp32", "channels_last": "off", "compile": "off",
        "optimizer_impl": "default", "cudnn_benchmark": "default",
        "miopen_immediate": "default", "miopen_find_mode": "default", "tunableop": "off",
        "blas_prefer_hipblaslt": "default", "hip_force_dev_kernarg": "default",
        "hsa_no_scratch_reclaim": "default"}


def test_gpt2_on_rocm_7_2_gets_attention_and_allocator_knobs_but_no_convolution_ones() -> None:
    space = plan_space(RX7900, BenchSpec(model="gpt2", precision="bf16"), {}, space="full")
    assert [pk.name for pk in space.knobs] == [
        "precision", "compile", "compile_mode", "optimizer_impl", "sdpa_backend",
        "rocm_fa_library", "tunableop", "blas_prefer_hipblaslt", "hip_force_dev_kernarg",
        "gpu_max_hw_queues", "hsa_no_scratch_reclaim", "hsa_enable_sdma",
        "aotriton_experimental", "alloc"]
    # --space full adds the max-autotune modes (minutes of compile)
    assert _knob(space, "compile_mode").labels == (
        "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
    assert _knob(space, "sdpa_backend").labels == ("default", "flash", "efficient", "math")
    assert _knob(space, "precision").baseline == "bf16"
    assert _knob(space, "alloc").labels == ("default", "expandable_segments")
    assert dict(space.skipped) == {
        "batch_size": "no batch size but yours (64) to try here",
        "channels_last": "gpt2 has no conv work for it to act on",
        "cudnn_benchmark": "gpt2 has no conv work for it to act on",
        "miopen_find_enforce": "gpt2 has no conv work for it to act on",
        "miopen_find_mode": "gpt2 has no conv work for it to act on",
        "miopen_immediate": "gpt2 has no conv work for it to act on",
        "miopen_nhwc": "gpt2 has no conv work for it to act on",
        "threads": "only on CPU",
    }


def test_rocm_torch_2_6_benchmarks_by_default_and_lacks_immediate_mode() -> None:
    space = plan_space(ROCM26, BenchSpec(), {})
    # MIOpen benchmark mode was on by default from torch 1.13 to 2.6 (pytorch#82656, #145294)
    assert _knob(space, "cudnn_benchmark").labels == ("default", "off")
    assert dict(space.skipped)["miopen_immediate"] == \
        "needs torch >= 2.9 (this is 2.6.0+rocm6.2.4)"


def test_user_environment_shapes_the_choices() -> None:
    env = {"MIOPEN_FIND_MODE": "FAST", "PYTORCH_TUNABLEOP_ENABLED": "1",
           "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:128"}
    space = plan_space(RX7900, BenchSpec(channels_last=True), env, space="env")
    assert _knobs(space) == [
        ("miopen_find_mode", ("default", "NORMAL", "HYBRID"), "default"),
        ("miopen_find_enforce", ("default", "SEARCH"), "default"),
        ("miopen_nhwc", ("default", "1"), "default"),
        ("blas_prefer_hipblaslt", ("default", "1", "0"), "default"),
        ("hip_force_dev_kernarg", ("default", "1"), "default"),
        ("gpu_max_hw_queues", ("default", "2"), "default"),
        ("hsa_no_scratch_reclaim", ("default", "1"), "default"),
        ("hsa_enable_sdma", ("default", "0"), "default"),
    ]
    assert dict(space.skipped) == {
        "aotriton_experimental": "resnet50 has no sdpa work for it to act on",
        "alloc": "your allocator setting has max_split_size_mb, which misbehaves with "
                 "expandable_segments (https://github.com/pytorch/pytorch/issues/123548, "
                 "https://github.com/ROCm/legacy-rocm-build/issues/6603)",
        "threads": "only on CPU",
        "tunableop": "your environment already sets PYTORCH_TUNABLEOP_ENABLED",
    }


def test_nhwc_variables_need_channels_last() -> None:
    space = plan_space(RX7900, BenchSpec(), {}, space="miopen_nhwc,miopen_find_mode")
    assert [pk.name for pk in space.knobs] == ["miopen_find_mode"]
    assert space.skipped == (
        ("miopen_nhwc", "needs channels_last on (search it or pass --channels-last)"),)


def test_cpu_space_and_precisions_per_cuda_generation() -> None:
    space = plan_space(CPU, BenchSpec(model="tinycnn"), {}, keep_precision=True,
                       batch_sizes=(32, 128))
    assert _knobs(space) == [
        ("channels_last", ("off", "on"), "off"),
        ("compile", ("off", "on"), "off"),
        # on the CPU torch.optim's default is the for-loop
        ("optimizer_impl", ("default", "foreach", "fused"), "default"),
        ("batch_size", ("32", "64", "128"), "64"),
        ("threads", ("default", "4", "2", "1"), "default"),
    ]
    assert dict(space.skipped)["precision"] == "--keep-precision keeps fp32"
    assert dict(space.skipped)["tunableop"] == "only on ROCm, CUDA"
    assert _knob(plan_space(H200, BenchSpec(), {}), "precision").labels == (
        "fp32", "tf32", "bf16", "fp16")
    assert _knob(plan_space(T4, BenchSpec(), {}), "precision").labels == (
        "fp32", "fp16")


def test_unknown_knob_names_are_refused() -> None:
    try:
        plan_space(CPU, BenchSpec(), {}, space="threads,warp_speed")
    except ValueError as exc:
        assert str(exc).startswith("unknown knob(s) warp_speed; known: precision, ")
    else:
        raise AssertionError("no error")
    try:
        plan_space(CPU, BenchSpec(), {}, space="test_fault")
    except ValueError as exc:
        assert str(exc).startswith("unknown knob(s) test_fault;")
    else:
        raise AssertionError("test knob accepted without allow_test_knobs")


def test_materialize_builds_spec_environment_and_trial_folders() -> None:
    env = {"PYTORCH_HIP_ALLOC_CONF": "garbage_collection_threshold:0.8"}
    space = plan_space(RX7900, BenchSpec(), env, space="full")
    params = {"precision": "bf16", "channels_last": "on", "cudnn_benchmark": "on",
              "miopen_find_mode": "NORMAL", "miopen_nhwc": "1", "tunableop": "on",
              "alloc": "expandable_segments"}
    plan = materialize(space, params, BenchSpec(), RX7900, env, "/c/study/trials/7")
    # (a trial's figures need no MFU: its FLOP count and GEMM peak are skipped)
    assert plan.spec == BenchSpec(precision="bf16", channels_last=True, compile=False,
                                  settings={"cudnn_benchmark": True, "mfu": False})
    assert plan.tunableop is True
    assert plan.env == {
        "MIOPEN_FIND_MODE": "NORMAL",
        "PYTORCH_MIOPEN_SUGGEST_NHWC": "1", "PYTORCH_MIOPEN_SUGGEST_NHWC_BATCHNORM": "1",
        "PYTORCH_HIP_ALLOC_CONF": "garbage_collection_threshold:0.8,expandable_segments:True",
        "MIOPEN_USER_DB_PATH": "/c/study/trials/7/miopen-db",
        "MIOPEN_CUSTOM_CACHE_DIR": "/c/study/trials/7/miopen-cache",
        "PYTORCH_TUNABLEOP_FILENAME": "/c/study/trials/7/tunableop_results%d.csv",
    }
    compiled = materialize(space, {"compile": "on"}, BenchSpec(), RX7900, {}, "/t/1")
    assert compiled.spec.compile is True and compiled.env["TORCHINDUCTOR_CACHE_DIR"] == \
        "/t/1/inductor"
    shared = materialize(space, {"compile": "on"}, BenchSpec(), RX7900, {}, "/t/1", "/cache")
    assert (shared.env["TORCHINDUCTOR_CACHE_DIR"], shared.env["TRITON_CACHE_DIR"]) == \
        ("/cache/inductor", "/cache/triton")
    threads = plan_space(CPU, BenchSpec(model="tinycnn"), {})
    cpu_plan = materialize(threads, {"threads": "2"}, BenchSpec(model="tinycnn"), CPU, {}, "/t")
    assert cpu_plan.env == {"OMP_NUM_THREADS": "2"} and cpu_plan.dirs == {}


def test_allocator_variable_follows_the_user_then_the_torch_version() -> None:
    assert rules.alloc_var(RX7900, {}) == "PYTORCH_ALLOC_CONF"
    assert rules.alloc_var(MI300X, {}) == "PYTORCH_CUDA_ALLOC_CONF"  # pytorch#183387 in 2.9.1
    assert rules.alloc_var(RX7900, {"PYTORCH_HIP_ALLOC_CONF": "x:1"}) == "PYTORCH_HIP_ALLOC_CONF"
    assert rules.merge_alloc("expandable_segments:False, roundup_power2_divisions:4",
                          "expandable_segments:True") == \
        "roundup_power2_divisions:4,expandable_segments:True"  # torch's tokenizer drops spaces
    assert rules.merge_alloc("", "expandable_segments:True") == "expandable_segments:True"


def test_versions_and_defaults() -> None:
    # the probe's version parser (facts/torch.py), a HIP build number no patch level
    assert rules.release("2.9.1+rocm6.4") == (2, 9, 1)
    assert rules.release("6.4.43482-0f2d60242") == (6, 4)
    assert rules.release("7.2.53211") == (7, 2)
    assert rules.release("rocm") is None and rules.release(None) is None
    assert rules.at_least("2.12.0a0+git1234", "2.12") and not rules.at_least("2.11.1", "2.12")
    assert rules.setting_default("cudnn_benchmark", ROCM26) is True
    assert rules.setting_default("cudnn_benchmark", RX7900) is False
    assert rules.setting_default("cudnn_benchmark", CPU) is None


def test_environment_warnings_name_debug_variables() -> None:
    assert rules.environment_warnings({"AMD_SERIALIZE_KERNEL": "3", "MIOPEN_LOG_LEVEL": "4"}) == [
        "your environment sets AMD_SERIALIZE_KERNEL=3, which serializes every kernel launch; "
        "every trial inherits it, so all numbers are slower than they need be "
        "(https://github.com/ROCm/rocm-systems/blob/develop/projects/clr/rocclr/utils/flags.hpp)"]


def test_every_knob_has_a_source_and_a_default_first() -> None:
    names = [k.name for k in kb.KNOBS]
    assert "HSA_OVERRIDE_GFX_VERSION" in {n for n, _, _ in kb.NEVER_SEARCHED}
    for knob in kb.KNOBS:
        assert knob.source.startswith("https://"), knob.name
        assert set(knob.spaces) <= set(kb.SPACES) and set(knob.platforms) <= set(kb.PLATFORMS)
        if knob.kind in (kb.ENV, kb.SETTING, kb.ALLOC) and knob.choices:
            assert knob.choices[0][1] in ({}, None), knob.name
    assert names.count("tunableop") == 2  # one per platform, never both on one machine


@given(st.text(max_size=40))
def test_version_parsing_never_raises(text: str) -> None:
    version = rules.release(text)
    assert version is None or all(isinstance(n, int) for n in version)
    assert rules.at_least(text, "2.9") in (True, False)


def test_the_allocator_variable_is_the_one_this_torch_reads() -> None:
    """torch >= 2.10 reads PYTORCH_CUDA_ALLOC_CONF before PYTORCH_ALLOC_CONF (kb/allocator.py
    PRECEDENCE): with both set, a trial must patch the CUDA one, or its option is ignored."""
    new = Platform(kind="rocm", torch="2.13.0+rocm7.1", hip="7.1.25424")
    both = {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6",
            "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:256"}
    assert rules.alloc_var(new, both) == "PYTORCH_CUDA_ALLOC_CONF"
    # An empty variable still shadows the later ones (torch reads "set", not "non-empty").
    assert rules.alloc_var(new, {"PYTORCH_CUDA_ALLOC_CONF": "", "PYTORCH_ALLOC_CONF": "x:1"}) == \
        "PYTORCH_CUDA_ALLOC_CONF"
    # torch 2.8 and 2.9 read PYTORCH_ALLOC_CONF first.
    mid = Platform(kind="cuda", torch="2.9.1+cu128", cuda="12.8")
    assert rules.alloc_var(mid, both) == "PYTORCH_ALLOC_CONF"
    # Before 2.8 a CUDA build reads only PYTORCH_CUDA_ALLOC_CONF.
    old = Platform(kind="cuda", torch="2.5.1+cu124", cuda="12.4")
    assert rules.alloc_var(old, {"PYTORCH_ALLOC_CONF": "x:1"}) == "PYTORCH_CUDA_ALLOC_CONF"
    # Nothing set: the variable this torch reads reliably (pytorch#183387).
    assert rules.alloc_var(new, {}) == "PYTORCH_ALLOC_CONF"


def test_merging_an_allocator_option_keeps_bracketed_lists_whole() -> None:
    current = "roundup_power2_divisions:[256:1,512:2],max_split_size_mb:128"
    assert rules.merge_alloc(current, "expandable_segments:True") == (
        "roundup_power2_divisions:[256:1,512:2],max_split_size_mb:128,expandable_segments:True")
    assert rules.merge_alloc(current, "max_split_size_mb:512") == (
        "roundup_power2_divisions:[256:1,512:2],max_split_size_mb:512")
    # Replacing the bracketed option itself: a comma split left "512:2]" behind.
    assert rules.merge_alloc(current, "roundup_power2_divisions:4") == (
        "max_split_size_mb:128,roundup_power2_divisions:4")
    assert rules.merge_alloc(" max_split_size_mb : 64 ,", "max_split_size_mb:512") == (
        "max_split_size_mb:512")


def test_every_variable_a_knob_sets_is_documented_with_its_values() -> None:
    """docs/tune.md's row of each environment knob names each variable it sets and each value
    it tries (`TORCH_NCCL_HIGH_PRIORITY=1`, `NCCL_MIN_NCHANNELS` 16 or 32), so the docs and
    the search agree."""
    import re
    from pathlib import Path

    from rocmdoctor.tuners.knobs import ENV, KNOBS
    rows = {}
    for line in Path("docs/tune.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `(\w+)` \| (.*?) \| (.*?) \| (.*?) \|$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    missing = []
    for knob in KNOBS:
        if knob.kind != ENV or knob.test_only:
            continue
        row = rows.get(knob.name, "")
        for _, env in knob.choices:
            for var, value in (env or {}).items():
                said = re.search(r"(?<![\w.])" + re.escape(str(value)) + r"(?![\w.])", row)
                if var not in row or not said:
                    missing.append((knob.name, var, value))
    assert missing == []
