"""Libraries on top of ROCm and the system libraries under it: hipBLASLt's architecture check
in torch, a CUDA triton in place of pytorch-triton-rocm, bitsandbytes without a GPU build,
DeepSpeed's op builder on ROCm, libtinfo, and the C++ standard headers ROCm's compiler (and
hipRTC inside MIOpen) needs. `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import GFX_OF_GPU, TORCH_BUILD
from rocmdoctor.kb.messages import KnownMessage, Variant

TORCH_138067 = "https://github.com/pytorch/pytorch/issues/138067"
TORCH_138267 = "https://github.com/pytorch/pytorch/pull/138267"
TORCH_128753 = "https://github.com/pytorch/pytorch/pull/128753"
ROCM_PYTORCH_1251 = "https://github.com/ROCm/pytorch/pull/1251"
VLLM_16664 = "https://github.com/vllm-project/vllm/pull/16664"
BNB_INSTALL = "https://huggingface.co/docs/bitsandbytes/v0.50.2/en/installation.md"
BNB_1519 = "https://github.com/bitsandbytes-foundation/bitsandbytes/issues/1519"
DEEPSPEED_1816 = "https://github.com/deepspeedai/DeepSpeed/issues/1816"
HCC_964 = "https://github.com/ROCm/hcc/issues/964"
MIOPEN_2049 = "https://github.com/ROCm/MIOpen/issues/2049"
# The warning is xformers' own (xformers/_cpp_lib.py); PIA issue 30: "(you have 2.1.2+cpu)",
# the maintainer's answer a CPU-only torch.
XFORMERS_CPP_LIB = "https://github.com/facebookresearch/xformers/blob/main/xformers/_cpp_lib.py"

TRITON_PIP = "pip list 2>/dev/null | grep -i triton"
TRITON_REQUIRES = ('python -c "import importlib.metadata as m; '
                   "print([r for r in m.requires('torch') or [] if 'triton' in r])\"")

STACK_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "xformers-build-mismatch", "xFormers can't load C++/CUDA extensions", "error",
        (r"xFormers can't load C\+\+/CUDA extensions",),
        "The installed xformers was built for another torch (its version, or its CUDA build) "
        "than the one Python imports, so its compiled kernels do not load: the program runs "
        "on without them (slower attention, no memory-efficient kernels) or fails where it "
        "needs them. The '(you have ...)' after the versions it was built for says which.",
        "Install the xformers release built for your torch, from the same index as torch "
        "(pip install xformers --index-url https://download.pytorch.org/whl/<cu121 or "
        "yours>), or the torch version it was built for.", "torch-install", XFORMERS_CPP_LIB,
        commands=(TORCH_BUILD, "pip show xformers torch"), context="xformers_build",
        library="xformers"),
    KnownMessage(
        "hipblaslt-unsupported-arch", "torch: Attempting to use hipBLASLt on an unsupported "
        "architecture", "error",
        (r"Attempting to use hipBLASLt on an? ?unsupported architecture",),
        "torch was asked to use hipBLASLt for matmuls on a GPU it does not use hipBLASLt for. "
        "torch then falls back to hipBLAS with a warning; the RuntimeError means a torch "
        "build lost that fallback (the 2.6 nightlies of October 2024, pytorch issue 138067, "
        "fixed by pytorch pull 138267) or code insists on hipBLASLt.",
        "Update torch past the fix; meanwhile tell torch not to prefer hipBLASLt.",
        "torch-rocm-match", TORCH_138267,
        commands=("export TORCH_BLAS_PREFER_HIPBLASLT=0", TORCH_BUILD),
        unless=(r"Overriding blas backend",), context="hipblaslt", library="hipBLASLt",
        threads=4),
    KnownMessage(
        "hipblaslt-arch-fallback", "torch: hipBLASLt unsupported here, using hipBLAS",
        "harmless",
        (r"unsupported architecture! Overriding blas backend to hip(?:blas)?\b",),
        "A warning: this GPU is not one torch uses hipBLASLt for, so torch keeps the hipBLAS "
        "backend (pytorch pull 128753 made it check the architecture first). Matmuls run; "
        "this is not the cause of a failure.",
        "Nothing to fix: torch uses hipBLAS. Unset TORCH_BLAS_PREFER_HIPBLASLT to silence it.",
        None, TORCH_128753, context="hipblaslt", yields_to=("*",), library="hipBLASLt",
        threads=3),
    KnownMessage(
        "triton-cuda-on-rocm", "A CUDA triton in place of pytorch-triton-rocm", "error",
        (r"triton[/\\]third_party[/\\]cuda", r"triton[/\\]backends[/\\]nvidia",
         r"cannot find -lcuda\b", r"libcuda\.so cannot found",
         r"No module named 'triton\._C\.libtriton\.triton'",
         r"^\s*(?:\[pip3?\] )?triton(?:==|\s+)\d+\.\d+", r"^Name: triton$",
         r"Collecting triton\b", r"Downloading triton-\d",
         # NVIDIA's PTX assembler, which only the CUDA build of triton runs
         r"Internal Triton PTX codegen error", r"\bptxas fatal\b"),
        "torch's ROCm wheels depend on pytorch-triton-rocm, which installs the module "
        "`triton`. Another package pulled PyPI's triton (the CUDA build) beside or over it "
        "(xgrammar in vllm pull 16664, mamba_ssm), and Python imports that one: it knows only "
        "NVIDIA GPUs (it links -lcuda) or its compiled part does not match, so torch.compile "
        "and triton kernels fail.",
        "Remove PyPI's triton and reinstall torch from its ROCm index, which brings back the "
        "pytorch-triton-rocm it requires.", "torch-install", ROCM_PYTORCH_1251,
        commands=(TRITON_PIP, "pip uninstall -y triton", TRITON_REQUIRES),
        # A triton whose version says ROCm (3.4.0+rocm7.1.0, 3.7.1+git0263a6a6.rocm7.14.0:
        # AMD's and TheRock's builds) is the ROCm one, not PyPI's.
        unless=(r"\btriton\b[^\n]*\d[\w.+]*[+.]rocm\d",),
        requires=("rocm_context",), context="triton", library="triton", threads=5),
    KnownMessage(
        "bitsandbytes-no-gpu-build", "bitsandbytes loaded its CPU library", "error",
        (r"bitsandbytes was compiled without GPU support",
         r"Loading binary [^\n]*libbitsandbytes_cpu\.so", r"libbitsandbytes_cpu\.so: undefined",
         r"CUDA Setup failed despite GPU being available",
         r"ROCm Setup failed despite ROCm being available",
         r"Could not find the bitsandbytes (?:ROCm|CUDA) binary at",
         r"No compatible (?:ROCm|CUDA) binary found at [^\n]*libbitsandbytes_"),
        "bitsandbytes found no GPU library it can load and fell back to its CPU one: on ROCm "
        "the installed package has no ROCm build (PyPI's bitsandbytes was CUDA-only before "
        "its ROCm support); on CUDA it found no CUDA runtime (libcudart).",
        "Install bitsandbytes with its ROCm backend: a release whose wheels include ROCm, or "
        "build it from source for this GPU (bitsandbytes' installation guide, AMD ROCm).",
        "torch-install", BNB_INSTALL,
        commands=("python -m bitsandbytes",
                  "cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=<gfx of your GPU> -S . && make "
                  "&& pip install ."),
        variants=(Variant("nvidia_paste",
                          "bitsandbytes found no CUDA runtime (libcudart): install a CUDA build "
                          "of torch and bitsandbytes, or put the CUDA toolkit's lib folder on "
                          "LD_LIBRARY_PATH.",
                          ("python -m bitsandbytes", "ldconfig -p | grep libcudart"),
                          "The text shows CUDA and no ROCm: the CUDA case."),
                  # bitsandbytes before 0.43 had a cuda_setup module that printed "CUDA
                  # Setup failed despite GPU being available"; its maintainer's answer is to
                  # upgrade (bitsandbytes issue 492), newer releases load and report their
                  # backends differently, ROCm included.
                  Variant("bnb_cuda_setup",
                          "This is the CUDA setup of a bitsandbytes older than 0.43, which "
                          "found no library it could load: upgrade bitsandbytes (newer "
                          "releases ship their GPU libraries in the wheel and say which "
                          "backend they load), then run `python -m bitsandbytes`.",
                          ("pip install -U bitsandbytes", "python -m bitsandbytes"),
                          "The text shows bitsandbytes' old CUDA setup."),
                  # bitsandbytes/cextension.py (get_cuda_bnb_library_path): the library is
                  # looked for under torch.version.hip's ROCm (libbitsandbytes_rocm63.so);
                  # BNB_ROCM_VERSION names another; ROCm/bitsandbytes issue 82 (AMD): the
                  # build had named it after the system's ROCm instead.
                  Variant("bnb_rocm_named",
                          "bitsandbytes looked for its ROCm library under torch's ROCm "
                          "version (libbitsandbytes_rocmNN) and it is not there: the build "
                          "named it after another ROCm (the system's, not torch's). Build it "
                          "for torch's ROCm version, or set BNB_ROCM_VERSION to the digits of "
                          "the library that was built.",
                          ("python -c 'import torch; print(torch.version.hip)'",
                           "python -c 'import bitsandbytes, pathlib; print(*pathlib.Path("
                           "bitsandbytes.__file__).parent.glob(\"libbitsandbytes_*\"))'",
                           "export BNB_ROCM_VERSION=<digits of the library built, e.g. 64>"),
                          "The text names the ROCm library bitsandbytes looked for and did not "
                          "find.")),
        # its CUDA setup saying libcuda.so was not found: the driver library is the cause
        # and the CPU library the consequence (bitsandbytes pull 337: WSL's /usr/lib/wsl/lib)
        yields_to=("libcuda-missing",),
        context="bitsandbytes", library="bitsandbytes", threads=4),
    KnownMessage(
        "bitsandbytes-rocm-library-broken", "bitsandbytes' ROCm library misses a symbol",
        "error",
        (r"libbitsandbytes_(?:rocm|hip)\d*\.so: undefined symbol",),
        "bitsandbytes' ROCm library was found but a kernel it links is missing: a build that "
        "did not compile it for this GPU or this ROCm (bitsandbytes issues 1519 and 1550).",
        "Rebuild bitsandbytes from source against the installed ROCm, naming this GPU's "
        "target in BNB_ROCM_ARCH.", "torch-install", BNB_1519,
        commands=(GFX_OF_GPU, "cmake -DCOMPUTE_BACKEND=hip -DBNB_ROCM_ARCH=<gfx of your GPU> "
                              "-S . && make && pip install ."),
        context="bitsandbytes", library="bitsandbytes", threads=2),
    KnownMessage(
        "deepspeed-rocm-build", "DeepSpeed's op builder fails on ROCm", "error",
        (r"hipify\(\) got an unexpected keyword argument",
         r"op_builder[/\\]\w+\.py[^\n]*\n(?:[^\n]*\n){0,3}[^\n]*\bCUDA_HOME\b",
         r"op_builder[/\\]builder\.py\", line \d+, in get_rocm_\w+",
         r"No such file or directory: \"[^\"\n]*rocminfo \|",
         r"cuda is missing or is incompatible with installed torch, only cpu ops can be compiled",
         r"_hip\.c(?:pp|u):\d+:\s*\n[^\n]*fatal error: cuda\w*\.h: No such file"),
        "DeepSpeed builds its C++/HIP ops with torch's hipify and torch's paths, and this "
        "DeepSpeed and this torch disagree on ROCm: DeepSpeed passes hipify arguments the "
        "torch's hipify lacks (the hipify changes of pytorch pull 76141 came later), reads "
        "CUDA_HOME where a ROCm torch sets ROCM_HOME (fixed in DeepSpeed pull 7224), or a "
        "source was not rewritten for HIP.",
        "Use a DeepSpeed release and a torch release that build together on ROCm (update the "
        "older of the two); `ds_report` shows which ops DeepSpeed can build with this torch.",
        "torch-install", DEEPSPEED_1816,
        commands=("ds_report", TORCH_BUILD, "pip install --upgrade deepspeed"),
        context="deepspeed", library="DeepSpeed", threads=4),
    KnownMessage(
        "libtinfo-missing", "libtinfo (ncurses) missing for ROCm's compiler libraries", "error",
        (r"libtinfo\.so\.[56]: cannot open shared object file",
         r"undefined reference to `\w+@NCURSES\w*_TINFO",
         r"libtinfo\.so\.[56]: no version information available"),
        "ROCm's compiler and code-object libraries (LLVM, comgr; torch's ROCm wheels bundle "
        "them) link the terminal library libtinfo of one major version, and the system has "
        "another or none: libtinfo.so.5 on systems that ship only .so.6, or a package that "
        "did not pull it in (hcc issue 964; ROCm 4.5 declared it; from ROCm 5.3 comgr links "
        "libtinfo.so.6, pytorch/builder pull 1270).",
        "Install the libtinfo the library asks for: on Debian and Ubuntu libtinfo5 (for "
        "libtinfo.so.5) or libtinfo6; on RHEL-family systems the package dnf names for it.",
        "rocm-install", HCC_964,
        commands=("sudo apt install libtinfo5", "dnf provides '*/libtinfo.so.5'"),
        needs_root=True, context="libtinfo", library="libtinfo", threads=6),
    KnownMessage(
        "hip-std-headers-missing", "C++ standard headers missing for ROCm's compiler", "error",
        (r"fatal error: '(?:limits|cmath|cstdint|cstddef|climits|cstdlib|cstring|cstdio|"
         r"type_traits|utility|string|new|algorithm|array|vector|memory|iostream|"
         r"initializer_list|tuple|cassert|cfloat|numeric)' file not found",),
        "ROCm's clang (hipcc, and hipRTC, with which MIOpen compiles kernels at run time) "
        "takes the C++ standard headers from the newest GCC installed, and that GCC's "
        "libstdc++ development package is missing (on Ubuntu 22.04: gcc-12 without "
        "libstdc++-12-dev). The MIOpen or compile error after it follows from this.",
        "Install the libstdc++ development package of the newest GCC on the system.",
        "rocm-install", MIOPEN_2049,
        commands=("ls /usr/lib/gcc/x86_64-linux-gnu/", "sudo apt install libstdc++-12-dev"),
        needs_root=True, context="std_headers", library="libstdc++", threads=8),
)
