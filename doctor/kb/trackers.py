"""Where an error is discussed, and how an application gets libraries for a GPU target: the
public issue trackers of the applications and libraries people run on ROCm and CUDA, each
with its repository as the source, and the rebuild or update command the project documents.

`explain` asks these trackers for a message it does not know (the application's own first,
then the library's, then ROCm's and PyTorch's); the commands name the way an application gets
kernels for a gfx target its bundled libraries lack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from urllib.parse import quote_plus

LLAMA_CPP_BUILD = "https://github.com/ggml-org/llama.cpp/blob/master/docs/build.md"
OLLAMA_LINUX = "https://github.com/ollama/ollama/blob/main/docs/linux.md"


@dataclass(frozen=True)
class Tracker:
    name: str  # as explain's paste facts name it (rocmdoctor.explain.paste)
    repo: str  # owner/name on GitHub
    # How the project gets libraries with a GPU target it lacks ("<gfx>" is replaced), and
    # the document that says so.
    rebuild: Optional[str] = None
    rebuild_source: Optional[str] = None


TRACKERS: tuple[Tracker, ...] = (
    Tracker("ollama", "ollama/ollama", "curl -fsSL https://ollama.com/install.sh | sh",
            OLLAMA_LINUX),
    Tracker("llama.cpp", "ggml-org/llama.cpp",
            'HIPCXX="$(hipconfig -l)/clang" HIP_PATH="$(hipconfig -R)" cmake -S . -B build '
            "-DGGML_HIP=ON -DAMDGPU_TARGETS=<gfx> -DCMAKE_BUILD_TYPE=Release && cmake --build "
            "build --config Release -- -j 16", LLAMA_CPP_BUILD),
    Tracker("llamafile", "mozilla-ai/llamafile"),
    Tracker("koboldcpp", "LostRuins/koboldcpp"),
    Tracker("ComfyUI", "Comfy-Org/ComfyUI"),
    Tracker("stable-diffusion-webui", "AUTOMATIC1111/stable-diffusion-webui"),
    Tracker("vLLM", "vllm-project/vllm"),
    Tracker("DeepSpeed", "deepspeedai/DeepSpeed"),
    Tracker("transformers", "huggingface/transformers"),
    Tracker("hipBLASLt", "ROCm/rocm-libraries"),
    Tracker("rocBLAS", "ROCm/rocm-libraries"),
    Tracker("MIOpen", "ROCm/rocm-libraries"),
    Tracker("triton", "triton-lang/triton"),
    Tracker("pytorch-triton-rocm", "ROCm/triton"),
    Tracker("bitsandbytes", "bitsandbytes-foundation/bitsandbytes"),
    Tracker("flash-attn", "Dao-AILab/flash-attention"),
    Tracker("xformers", "facebookresearch/xformers"),
    Tracker("RCCL", "ROCm/rccl"),
    Tracker("NCCL", "NVIDIA/nccl"),
)
ROCM = Tracker("ROCm", "ROCm/ROCm")
PYTORCH = Tracker("PyTorch", "pytorch/pytorch")


def tracker(name: str) -> Optional[Tracker]:
    return next((t for t in TRACKERS if t.name == name), None)


def search_url(repo: str, query: str) -> str:
    """The tracker's issue search for `query`, open and closed issues alike."""
    return f"https://github.com/{repo}/issues?q={quote_plus(query)}"
