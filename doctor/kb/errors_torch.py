"""Which torch is installed and whether it can reach a GPU: CPU-only builds, a ROCm build on an
NVIDIA machine, no or old NVIDIA driver, no visible GPU, WSL's runtime, loading and building
extensions. `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import (
    CUDA_FUNCTIONS,
    CUDA_RUNTIME_TYPES,
    DOCKER_NVIDIA,
    DOCKER_ROCM,
    HIP_ERRORS,
    KFD_NODES,
    NVIDIA_SMI,
    NVIDIA_TOOLKIT,
    ROCM_DOCKER,
    ROCM_WSL_PYTORCH,
    TORCH_BUILD,
    TORCH_CUDA_INIT,
    WHL,
    WINDOWS_TORCH_BUILD,
)
from rocmdoctor.kb.messages import KnownMessage, Variant

DETECTRON2_460 = "https://github.com/facebookresearch/detectron2/issues/460"
MODAL_681 = "https://github.com/modal-labs/modal-examples/issues/681"
VLLM_7207 = "https://github.com/vllm-project/vllm/issues/7207"
CUDA_RELEASE_NOTES = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"
CPP_EXTENSION = "https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py"
SERIALIZATION = "https://github.com/pytorch/pytorch/blob/main/torch/serialization.py"
TORCH_121099 = "https://github.com/pytorch/pytorch/issues/121099"
WSL_8587 = "https://github.com/microsoft/WSL/issues/8587"
CUDA_WSL = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"
LAMBDA_STACK_15 = "https://github.com/lambdal/lambda-stack-dockerfiles/issues/15"
HIP_SDK_WINDOWS = "https://rocm.docs.amd.com/projects/install-on-windows/en/latest/"
A1111_LAUNCH = ("https://github.com/AUTOMATIC1111/stable-diffusion-webui/blob/master/modules/"
                "launch_utils.py")
TORCH_123505 = "https://github.com/pytorch/pytorch/issues/123505"
CUDA_ALLOCATOR_CONFIG_H = ("https://github.com/pytorch/pytorch/blob/main/c10/cuda/"
                           "CUDAAllocatorConfig.h")
ROCM_INSTALL = ("https://rocm.docs.amd.com/projects/install-on-linux/en/latest/install/"
                "quick-start.html")

_CPU_WHEEL_FIX = ("Install the torch build for your GPU into the environment that runs the "
                  "program (for NVIDIA a CUDA build, for AMD a ROCm build, each from the "
                  "index https://pytorch.org/get-started/locally/ names for it), then "
                  "check the version line: +cpu, or no CUDA/HIP version, is a "
                  "CPU-only build. Without a GPU (or on a Mac) run on the CPU: device='cpu'.")

TORCH_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "torch-not-compiled-cuda", "Torch not compiled with CUDA enabled", "error",
        (r"Torch not compiled with CUDA enabled",),
        "The torch that Python imports is a CPU-only build: the default wheel on Windows and "
        "macOS, the wrong virtual environment, or a launcher that fell back to CPU torch. On "
        "an AMD GPU a CUDA wheel is just as wrong: ROCm builds are separate. Detectron2's "
        "maintainer: 'a pytorch installation issue'.",
        _CPU_WHEEL_FIX, "torch-install", DETECTRON2_460,
        commands=(TORCH_BUILD,), context="torch_build", yields_to=("webui-zluda-cpu-torch",),
        variants=(WINDOWS_TORCH_BUILD,), threads=22),
    KnownMessage(
        "webui-zluda-cpu-torch", "ROCm: version=None / Using CPU-only torch", "error",
        (r"ROCm agent enumerator failed", r"ROCm: version=None", r"Failed to install ZLUDA",
         r"Using CPU-only torch"),
        "A Windows launcher for AMD GPUs (ZLUDA or ROCm-on-Windows builds of the web UIs) "
        "found no AMD HIP SDK, so it installed CPU-only torch; the later 'Torch not compiled "
        "with CUDA enabled' follows from that.",
        "Install the AMD HIP SDK for Windows that the launcher's guide names, delete the "
        "launcher's venv folder, and start it again so it installs the GPU build.",
        "torch-install", HIP_SDK_WINDOWS, context="zluda_setup", threads=3),
    KnownMessage(
        "webui-torch-gpu-test", "Torch is not able to use GPU (web UI start-up test)", "error",
        (r"Torch is not able to use GPU; add --skip-torch-cuda-test",),
        "The web UI's start-up test ran `assert torch.cuda.is_available()` in its venv and it "
        "failed: a CPU-only or wrong-vendor torch, no access to the GPU, or the test process "
        "crashed; 'Error code: 134' is SIGABRT, which on ROCm is the HIP runtime aborting "
        "because it has no code for the GPU (hipErrorNoBinaryForGpu).",
        "Run the same test in the web UI's venv to see the real error, then fix that; "
        "--skip-torch-cuda-test only hides it (the UI then runs on the CPU).",
        "torch-device", A1111_LAUNCH,
        commands=('venv/bin/python -c "import torch; print(torch.cuda.is_available())"',),
        context="webui_abort", threads=0),
    KnownMessage(
        "allocator-option-unrecognized", "Unrecognized CachingAllocator option", "error",
        (r"Unrecognized CachingAllocator option: \w+",),
        "PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_HIP_ALLOC_CONF) names an option this torch does "
        "not know, and torch refuses to start the GPU: expandable_segments arrived in torch "
        "2.1 (a project's launcher setting it under torch 2.0.1; pytorch issue 123505), and "
        "ROCm builds once lacked release_lock_on_cudamalloc (ROCm/pytorch pull 1304).",
        "Remove the option from the variable (check the launcher or shell profile that sets "
        "it), or upgrade torch to a release that has it.", "allocator-config", TORCH_123505,
        commands=("env | grep ALLOC_CONF", TORCH_BUILD, "unset PYTORCH_CUDA_ALLOC_CONF"),
        threads=8),
    KnownMessage(
        "expandable-segments-unsupported", "expandable_segments not supported on this platform",
        "harmless",
        (r"expandable_segments not supported on this platform",),
        "torch accepts expandable_segments:True but ignores it on this platform (Windows, and "
        "ROCm builds before torch 2.12 with ROCm 7): the warning only says the setting does "
        "nothing here.",
        "Drop the setting, or, against fragmentation on ROCm, use "
        "garbage_collection_threshold:0.8,max_split_size_mb:512 instead.", "allocator-config",
        CUDA_ALLOCATOR_CONFIG_H, commands=("env | grep ALLOC_CONF",), yields_to=("*",)),
    KnownMessage(
        "cuda-no-driver", "Found no NVIDIA driver on your system", "error",
        (r"Found no NVIDIA driver(?: on your system)?\b",),
        "A CUDA build of torch found no NVIDIA kernel driver: the machine has no NVIDIA GPU "
        "(a CPU-only cloud runtime, a laptop's Intel or AMD graphics), the driver is not "
        "loaded, or a container was started without GPUs. As a warning before 'falling back "
        "to CPU' it is harmless on a machine meant to run on the CPU.",
        "On an NVIDIA machine install and load the driver until nvidia-smi lists the GPU; on "
        "a machine without one run on the CPU (device='cpu'); in a notebook service, choose "
        "a GPU runtime.",
        "nvidia-driver", CUDA_FUNCTIONS, commands=(NVIDIA_SMI, "lspci | grep -i nvidia"),
        container_fix="Start the container with GPUs (the NVIDIA Container Toolkit must be "
                      "installed on the host): docker run --gpus all ...",
        container_commands=(DOCKER_NVIDIA,),
        # An AMD GPU named in the text: a CUDA torch (or a ZLUDA setup that did not take)
        # looked for NVIDIA's driver on a machine that has none.
        variants=(Variant(
            "amd_paste",
            "The text shows an AMD GPU: this torch is a CUDA build, which looks for NVIDIA's "
            "driver. On Linux install a ROCm build of torch; on Windows AMD's PyTorch wheels "
            "for Windows (for the GPUs AMD lists), or, for a program set up to run through "
            "ZLUDA, redo that setup as its guide says (the HIP SDK and ZLUDA versions it "
            "names, its environment variables, a fresh venv): the error means ZLUDA did not "
            "take.",
            (TORCH_BUILD,), "The text shows an AMD GPU: not an NVIDIA driver problem."),),
        threads=12),
    KnownMessage(
        "cuda-driver-too-old", "The NVIDIA driver on your system is too old", "error",
        (r"The NVIDIA driver on your system is too old",),
        "The torch wheel's CUDA runtime needs a newer driver than the one loaded; the 'found "
        "version' is the newest CUDA the driver supports (11040 = CUDA 11.4, driver 470).",
        "Update the NVIDIA driver to one that supports the wheel's CUDA (NVIDIA's release "
        "notes list the minimum per CUDA version), or install a torch built for an older "
        "CUDA.",
        "nvidia-driver", CUDA_RELEASE_NOTES, commands=(NVIDIA_SMI, TORCH_BUILD),
        container_fix="A container uses the host's driver: update the driver on the host "
                      "(Yuan-2.0 maintainers: a CUDA 12.1 image needs driver 535), or use an "
                      "image built for an older CUDA.",
        context="driver_found", threads=12),
    KnownMessage(
        "cuda-driver-insufficient", "CUDA driver version is insufficient for CUDA runtime",
        "error",
        (r"CUDA driver version is insufficient for CUDA runtime version",
         r"cudaErrorInsufficientDriver",
         # error 222 (cudaErrorUnsupportedPtxVersion, CUDA_ERROR_UNSUPPORTED_PTX_VERSION): "the
         # PTX was generated by a compiler newer than what is supported by the CUDA driver and
         # PTX JIT compiler" (CUDA Runtime API, its most common reason)
         r"the provided PTX was compiled with an unsupported toolchain",
         r"cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
        "The program's CUDA runtime is newer than the installed driver supports (with 'the "
        "provided PTX was compiled with an unsupported toolchain': its PTX was built by a "
        "newer CUDA compiler than the driver's JIT understands).",
        "Update the NVIDIA driver, or use a build of the program for an older CUDA.",
        "nvidia-driver", CUDA_RUNTIME_TYPES, commands=(NVIDIA_SMI,),
        container_fix="The host's driver counts: update it on the host, or use an image for "
                      "an older CUDA."),
    KnownMessage(
        "cuda-getdevicecount", "Unexpected error from cudaGetDeviceCount()", "error",
        (r"Unexpected error from cudaGetDeviceCount\(\)",),
        "CUDA's first call failed with an error other than 'no device'. The number names it: "
        "802 the system is not ready (on NVSwitch machines the Fabric Manager is not "
        "running), 803 the user-space driver and the kernel module differ, 804 forward "
        "compatibility on a GPU that does not support it.",
        "Act on the error number (below); nvidia-smi must work first.",
        "nvidia-driver", CUDA_RUNTIME_TYPES, commands=(NVIDIA_SMI,), context="cuda_code",
        yields_to=("cuda-forward-compat-unsupported", "cuda-fabric-manager")),
    KnownMessage(
        "hip-getdevicecount", "Unexpected error from hipGetDeviceCount()", "error",
        (r"Unexpected error from hipGetDeviceCount\(\)", r"HIP initialization: Unexpected"),
        "HIP's first call failed: the GPU is not usable by ROCm in this system. Seen with a "
        "GPU the amdgpu driver never claimed (an SR-IOV virtual function on an Azure NVv4 VM, "
        "ROCm issue 1770, 'UNCLAIMED' in lshw), with /dev/kfd inaccessible, and with GPUs "
        "ROCm does not support.",
        "Check that amdgpu is bound to the GPU and rocminfo lists it; a virtual function or a "
        "GPU outside ROCm's list has no fix in software.",
        "amdgpu-driver", HIP_ERRORS, commands=("lspci -nnk | grep -iA3 'amd\\|ati'", KFD_NODES),
        context="cuda_code", threads=1),
    KnownMessage(
        "rocm-on-nvidia", "A ROCm build of torch on a machine without an AMD GPU", "error",
        (r"hipErrorNoBinaryForGpu", r"No HIP GPUs are available", r"ROCk module is NOT loaded",
         r"no ROCm-capable device is detected", r"hipErrorNoDevice",
         r"adding custom device \"/dev/kfd\": no such file"),
        "This machine has an NVIDIA GPU and no AMD GPU, but a ROCm build of torch (or ROCm "
        "itself) is installed, so ROCm finds nothing to run on (modal-examples issue 681: an "
        "image installing the rocm6.0 nightly on an NVIDIA T4; easydiffusion issue 1400: the "
        "maintainer swapped the ROCm libraries for the CUDA build).",
        "Install the CUDA build of torch instead (HSA_OVERRIDE_GFX_VERSION and the render "
        "group do not apply here).",
        "torch-install", MODAL_681,
        commands=("pip install --force-reinstall torch torchvision --index-url " + WHL + "cu128",),
        container_fix="Use a CUDA image and start it with the NVIDIA runtime instead of the "
                      "ROCm devices.", container_commands=(DOCKER_NVIDIA,),
        requires=("nvidia_machine",), threads=4),
    KnownMessage(
        "hip-no-gpus-available", "No HIP GPUs are available", "error",
        (r"No HIP GPUs are available",),
        "A ROCm build of torch sees no GPU: the user may not open /dev/kfd, a container was "
        "started without the devices (or under Docker Desktop, whose VM has none: vllm issue "
        "7207), the GPU is not one the runtime enumerates, or the masks hide it.",
        "Run rocminfo in the same environment: if it lists no GPU agent, fix access first "
        "(groups, devices); if it does, compare its gfx target with torch's build.",
        "torch-device", VLLM_7207, commands=("rocminfo | grep -i gfx", KFD_NODES, "groups"),
        container_fix="Pass the devices and groups when the container starts, on a Linux "
                      "host with the native docker engine (Docker Desktop's VM has no "
                      "/dev/kfd: vllm issue 7207).",
        container_commands=(DOCKER_ROCM, "docker info --format '{{.OperatingSystem}}'"),
        wsl_fix="Under WSL the pip wheel's own libhsa-runtime64.so cannot reach the GPU; use "
                "the one from AMD's WSL install (below) or AMD's WSL wheels.",
        wsl_commands=('cd "$(pip show torch | sed -n \'s/^Location: //p\')/torch/lib"',
                      "rm libhsa-runtime64.so*",
                      "cp /opt/rocm/lib/libhsa-runtime64.so.1.2 libhsa-runtime64.so"),
        yields_to=("rocm-on-nvidia", "visible-devices-both-set", "visible-devices-mask",
                   "wsl-rocm-bundled-hsa"), threads=18),
    KnownMessage(
        "cuda-no-gpus-available", "No CUDA GPUs are available", "error",
        (r"No CUDA GPUs are available",),
        "A CUDA build of torch sees no GPU although the driver loaded: CUDA_VISIBLE_DEVICES "
        "names an index that does not exist (a script's `export CUDA_VISIBLE_DEVICES=2` on a "
        "one-GPU machine), or a container was started without GPUs.",
        "Unset CUDA_VISIBLE_DEVICES or set it to an index nvidia-smi lists, before torch is "
        "imported.", "visible-devices", CUDA_FUNCTIONS,
        commands=("echo $CUDA_VISIBLE_DEVICES", "nvidia-smi -L"),
        container_fix="Start the container with GPUs: docker run --gpus all ...",
        container_commands=(DOCKER_NVIDIA,),
        unless_text=(r"No HIP GPUs",), yields_to=("visible-devices-mask",), threads=6),
    KnownMessage(
        "wsl-rocm-bundled-hsa", "ROCm torch under WSL sees no GPU", "error",
        (r"No HIP GPUs are available", r"hipGetDeviceCount: Returned hipErrorNoDevice",
         r"is_available\(\)\)?\"?\s*\n\s*False", r"Is CUDA available: False",
         r"CUDA/ROCm available: False"),
        "Under WSL the GPU is reached through /dev/dxg, not /dev/kfd. The pip ROCm wheels "
        "bundle their own libhsa-runtime64.so, which cannot use that path, so torch finds no "
        "device while rocminfo (the system runtime from `amdgpu-install --usecase=wsl,rocm "
        "--no-dkms`) does. AMD's WSL guide replaces the bundled library.",
        "Replace the wheel's libhsa-runtime64.so with the system one, as AMD's WSL guide "
        "does (or install AMD's WSL wheels from repo.radeon.com); only the ROCm releases AMD "
        "lists for WSL work.",
        "torch-install", ROCM_WSL_PYTORCH,
        commands=('cd "$(pip show torch | sed -n \'s/^Location: //p\')/torch/lib"',
                  "rm libhsa-runtime64.so*",
                  "cp /opt/rocm/lib/libhsa-runtime64.so.1.2 libhsa-runtime64.so"),
        requires=("wsl", "not_nvidia"), threads=7),
    KnownMessage(
        "torch-no-gpu", "torch.cuda.is_available() is False", "error",
        (r"is_available\(\)\)?\"?\s*\n\s*False", r"CUDA AVAILABLE:\s*\n\s*False",
         r"Is CUDA available: False", r"CUDA/ROCm available: False"),
        "torch sees no GPU. The usual reasons: a CPU-only build, a build for the other vendor, "
        "no access to the device nodes, a visibility mask hiding the GPU, or a driver that is "
        "not loaded. The check lists which one holds here.",
        "Run the checks: they read the build, the devices, the groups and the masks.",
        "torch-device", TORCH_CUDA_INIT, commands=(TORCH_BUILD, "rocmdoctor check"),
        context="cdi_spec", yields_to=("*",), threads=10),
    KnownMessage(
        "cuda-forked-subprocess", "Cannot re-initialize CUDA in forked subprocess", "error",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        "The program used the GPU and then forked worker processes (multiprocessing's "
        "default 'fork' on Linux, DataLoader workers touching CUDA); a forked child cannot "
        "use the parent's CUDA (or HIP) context.",
        "Start workers with the 'spawn' method, or keep GPU work out of the workers.",
        "torch-device", TORCH_CUDA_INIT,
        commands=("python -c \"import multiprocessing as m; m.set_start_method('spawn')\"",)),
    KnownMessage(
        "load-on-missing-gpu", "Attempting to deserialize object on a CUDA device", "error",
        (r"Attempting to deserialize object on (?:a )?CUDA device",),
        "The checkpoint was saved from GPU tensors and this process has no GPU (or fewer "
        "GPUs than the one it was saved from); torch.load puts tensors back where they were.",
        "Load with map_location: torch.load(path, map_location='cpu') (or the device you "
        "have); if there should be a GPU here, the checks say why torch sees none.",
        "torch-device", SERIALIZATION, commands=("rocmdoctor check",)),
    KnownMessage(
        "cuda-home-not-set", "CUDA_HOME / ROCM_HOME environment variable is not set", "error",
        (r"CUDA_HOME environment variable is not set",
         r"ROCM_HOME environment variable is not set", r"CUDA was not found on the system"),
        "An extension is being compiled (pip install of flash-attn, apex, a custom op) and "
        "torch's build helper found no CUDA toolkit (nvcc) or ROCm install to compile with.",
        "Install the toolkit matching torch's CUDA (or ROCm) version and point the variable "
        "at it, or install a prebuilt wheel of the extension.",
        "torch-install", CPP_EXTENSION,
        commands=(TORCH_BUILD, "export CUDA_HOME=/usr/local/cuda", "export ROCM_HOME=/opt/rocm")),
    KnownMessage(
        "extension-cuda-mismatch", "The detected CUDA version mismatches the one torch used",
        "error",
        (r"The detected CUDA version \(\S+\) mismatches the version that was used to compile",),
        "An extension is being compiled with a CUDA toolkit whose major version differs from "
        "the one the installed torch was built with; torch refuses to mix them.",
        "Use the toolkit of torch's CUDA version (CUDA_HOME pointing at it), or install the "
        "torch build for the toolkit you have.", "torch-install", CPP_EXTENSION,
        commands=(TORCH_BUILD, "nvcc --version")),
    KnownMessage(
        "nvcc-unsupported-arch", "nvcc fatal: Unsupported gpu architecture", "error",
        (r"nvcc fatal\s*: Unsupported gpu architecture '?compute_\d+",),
        "The CUDA toolkit compiling an extension does not know the requested architecture: "
        "the toolkit is older than the GPU (compute_120 needs CUDA 12.8) or newer than it "
        "(CUDA 12 dropped compute_35; pytorch issue 121099 removed it from the defaults).",
        "Set TORCH_CUDA_ARCH_LIST to your GPU's capability (nvidia-smi --query-gpu="
        "compute_cap) and use a toolkit that supports it.",
        "torch-arch-support", TORCH_121099,
        commands=("nvidia-smi --query-gpu=compute_cap --format=csv,noheader",
                  "export TORCH_CUDA_ARCH_LIST=\"$(nvidia-smi --query-gpu=compute_cap "
                  "--format=csv,noheader | head -1)\"")),
    KnownMessage(
        "libcuda-missing", "libcuda.so: cannot open shared object file", "error",
        (r"libcuda\.so(?:\.1)?: cannot open shared object file", r"cannot find -lcuda\b",
         r"libcuda\.so cannot found",
         # bitsandbytes' CUDA setup before 0.43 (cuda_setup/main.py), then its CPU library
         r"CUDA SETUP: WARNING! libcuda\.so not found!",
         # the Rust crate cudarc's loader (src/driver/sys/mod.rs; cudarc issue 255: WSL's
         # /usr/lib/wsl/lib was not on LD_LIBRARY_PATH)
         r"Unable to find cuda lib under the names \[\"cuda\""),
        "The NVIDIA driver's user-space library is not on the loader path. Under WSL it lives "
        "in /usr/lib/wsl/lib and only libcuda.so.1 is there, while cuDNN asks for libcuda.so "
        "(WSL issue 8587). Without an NVIDIA GPU it is missing because there is no driver.",
        "Install the NVIDIA driver; without an NVIDIA GPU run the program on the CPU.",
        "nvidia-driver", CUDA_WSL, commands=(NVIDIA_SMI, "ldconfig -p | grep libcuda"),
        wsl_fix="Put WSL's driver folder on the loader path (or link libcuda.so into the "
                "environment's lib folder).",
        wsl_commands=("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH",
                      "ls -l /usr/lib/wsl/lib/libcuda*"), yields_to=("triton-cuda-on-rocm",),
        context="libcuda", threads=11),
    KnownMessage(
        "libcudnn-missing", "Could not load library libcudnn", "error",
        (r"Could not load library libcudnn_\w+\.so",),
        "cuDNN's libraries (or the driver library they load, named after 'Error:') are not "
        "found: cuDNN is not installed for this CUDA, not on the loader path, or the machine "
        "has no NVIDIA GPU at all (whisper-standalone-win issue 171: forcing the CPU fixed "
        "it).",
        "Install the cuDNN the program expects (for pip: the nvidia-cudnn wheel) or put its "
        "folder on LD_LIBRARY_PATH; without an NVIDIA GPU run on the CPU (--device=cpu).",
        "nvidia-driver", CUDA_WSL, commands=("ldconfig -p | grep -E 'libcudnn|libcuda'",),
        yields_to=("libcuda-missing",), threads=5),
    KnownMessage(
        # cuDNN 8 on Windows: its main DLL (cudnn64_8.dll) loads its parts by name from the
        # DLL search path. torch's own copies are preloaded by torch/__init__.py
        # (_load_dll_libraries: glob.glob(os.path.join(th_dll_path, "*.dll"))), and glob reads
        # [ and ] in that folder's path as a pattern, so nothing is preloaded there.
        "cudnn-dll-not-found", "Could not locate cudnn_*64_N.dll (Windows)", "error",
        (r"Could not (?:locate|load library) cudnn\w*64_\d+\.dll",),
        "cuDNN's main DLL was loaded, but one of its parts (a cudnn_*64_N.dll beside it) was "
        "not found on the DLL search path: a cudnn64_N.dll copied on its own (into the CUDA "
        "toolkit's bin folder, or another folder on PATH) is loaded first without its parts, "
        "or the folder torch is installed in has [ or ] in its path, where torch's own copy "
        "is never preloaded (torch/__init__.py finds torch\\lib\\*.dll with glob, which "
        "reads brackets as a pattern; stable-diffusion-webui-forge issue 2798).",
        "Let torch load the cuDNN its wheel bundles: delete the cudnn*.dll files copied on "
        "their own into other folders on PATH (or install that whole cuDNN release, every "
        "DLL, not one file), and move or rename the program's folder so its path has no [ "
        "or ].",
        None, "https://github.com/pytorch/pytorch/blob/main/torch/__init__.py",
        commands=("where cudnn64_*.dll",), threads=2),
    KnownMessage(
        "rocm-library-missing", "libamdhip64 / libhsa-runtime64: cannot open shared object",
        "error",
        (r"lib(?:amdhip64|hsa-runtime64|rocblas|MIOpen|hipblas(?:lt)?|rocm_smi64|hiprtc|rccl|"
         r"roc(?:solver|fft|rand|sparse|tx64|tracer64|profiler64)|hip(?:fft|rand|sparse|solver)|"
         r"amd_comgr)\.so[.\d]*: cannot open shared object file",),
        "A program built against ROCm cannot find ROCm's libraries: ROCm is not installed "
        "(the program expects a system ROCm), or its lib folder is not on the loader path.",
        "Install ROCm (or use a torch wheel, which bundles its own), or add ROCm's lib "
        "folder to the loader path.", "rocm-install", ROCM_INSTALL,
        commands=("ls /opt/rocm*/lib/libamdhip64.so*",
                  "export LD_LIBRARY_PATH=/opt/rocm/lib:$LD_LIBRARY_PATH")),
    KnownMessage(
        "cuda-library-missing", "libcudart / libcublas: cannot open shared object file", "error",
        (r"lib(?:cudart|cublas|cublasLt|cufft|curand|cusparse|nvrtc|nvJitLink)\.so[.\d]*: "
         r"cannot open shared object file",
         # CTranslate2 (faster-whisper, WhisperX) on Windows: "Library cublas64_11.dll is not
         # found or cannot be loaded" (Purfview/whisper-standalone-win issue 237)
         r"Library (?:cublas|cublasLt|cudnn\w*|cudart)64_\d+\.dll is not found or cannot be "
         r"loaded"),
        "A program needs CUDA runtime libraries that are not installed for its CUDA version, "
        "or not on the loader path.",
        "Install the CUDA libraries of that version (pip's nvidia-* wheels come with torch's "
        "CUDA builds) or add their folder to LD_LIBRARY_PATH.", "torch-install", CUDA_WSL,
        commands=("ldconfig -p | grep -E 'libcudart|libcublas'",),
        variants=(Variant(
            "windows", "Install the CUDA libraries of the version the DLL's name gives "
            "(cublas64_11.dll is CUDA 11's cuBLAS; cuDNN's DLLs name their major version): the "
            "program's own download of them, or pip's nvidia-cublas-cu11 / -cu12 and "
            "nvidia-cudnn wheels, and put their folder on PATH or next to the program.",
            ("where cublas64*.dll cudnn*.dll",),
            "The DLL names the CUDA version the program was built for."),)),
    KnownMessage(
        "container-nvidia-toolkit-missing", "could not select device driver with capabilities "
                                            "[[gpu]]", "error",
        (r"could not select device driver \S* ?with capabilities: \[\[gpu\]\]",
         # `--runtime=nvidia` (or compose's `runtime: nvidia`) with no such runtime registered
         # in /etc/docker/daemon.json, or registered but the daemon not restarted since
         r"unknown or invalid runtime name: nvidia"),
        "Docker has no GPU runtime: the NVIDIA Container Toolkit is not installed or not "
        "registered with this docker (docker installed as a snap is another daemon: "
        "nvidia-docker issue 1642, maintainer).",
        "Install the NVIDIA Container Toolkit, register it with docker and restart docker.",
        "nvidia-driver", NVIDIA_TOOLKIT,
        commands=("sudo apt-get install -y nvidia-container-toolkit",
                  "sudo nvidia-ctk runtime configure --runtime=docker",
                  "sudo systemctl restart docker"), needs_root=True,
        wsl_fix="Under WSL 2 the GPU comes from the Windows NVIDIA driver (no Linux driver "
                "inside WSL): use Docker Desktop's WSL 2 backend, or a Docker Engine installed "
                "in the WSL distribution with the NVIDIA Container Toolkit registered and the "
                "daemon restarted (CUDA on WSL User Guide).",
        wsl_commands=("docker info | grep -i runtimes",
                      "sudo nvidia-ctk runtime configure --runtime=docker",
                      "sudo systemctl restart docker"),
        threads=12),
    KnownMessage(
        # nvidia-container-cli mounts the host driver's libraries into the container; the
        # image's own copy of one (an apt libnvidia-compute-*, libnvidia-ml1 in the
        # Dockerfile) is in the way: lambda-stack-dockerfiles issue 15 (maintainer: the
        # image's CUDA packages out of step), BIOP-desktop issue 2 (removing
        # libnvidia-compute-535-server from the image fixed it)
        "container-image-driver-libs", "nvidia-container-cli: mount error: ... "
                                       "libnvidia-*.so: file exists", "error",
        (r"nvidia-container-cli: mount error: file creation failed: \S*/libnvidia-[\w.-]+\.so"
         r"[.\d]*: file exists",),
        "The image itself carries NVIDIA driver libraries (installed in its Dockerfile, or "
        "pulled in by a CUDA package), and the NVIDIA Container Toolkit, which mounts the "
        "host driver's own copies at start, finds the file already there.",
        "Remove the driver libraries from the image (the libnvidia-* and nvidia-utils packages "
        "its Dockerfile installs) and rebuild it, or use an image without them: the host's "
        "driver is mounted in at run time.", "nvidia-driver", LAMBDA_STACK_15,
        commands=("docker run --rm --entrypoint sh <image> -c 'dpkg -l | grep -i libnvidia'",),
        threads=6),
    KnownMessage(
        "nvidia-container-requirement", "nvidia-container-cli: requirement error: cuda>=",
        "error",
        (r"nvidia-container-cli: requirement error: unsatisfied condition: cuda ?>= ?[\d.]+",),
        "The image is built for a newer CUDA than the host's NVIDIA driver supports; the "
        "toolkit refuses to start it (nvidia-docker issue 1442, maintainer: a CUDA 11 "
        "container needs a host driver of 450 or newer).",
        "Update the host's NVIDIA driver, or use an image for an older CUDA. "
        "NVIDIA_DISABLE_REQUIRE=true (a maintainer's workaround) skips the check where the "
        "driver works anyway through forward compatibility.",
        "nvidia-driver", "https://github.com/NVIDIA/nvidia-docker/issues/1442",
        commands=(NVIDIA_SMI, "docker run -e NVIDIA_DISABLE_REQUIRE=true --gpus all <image>"),
        threads=12),
    KnownMessage(
        "nvidia-container-library", "nvidia-container-cli: initialization error", "error",
        (r"nvidia-container-cli: initialization error",),
        "The container toolkit could not talk to the host's NVIDIA driver: the driver is not "
        "loaded, or its libraries (libnvidia-ml.so.1) are missing or from another version "
        "than the kernel module; or Docker runs in a VM of its own that has no NVIDIA driver "
        "(Docker Desktop on Linux: nvidia-container-toolkit issues 83 and 229), so the host "
        "is fine and the VM lacks it.",
        "Make nvidia-smi work on the host first (install or load the driver, reboot after a "
        "driver update), then start the container again; if it works there, make sure the "
        "docker command talks to the host's Docker Engine, not Docker Desktop's VM.",
        "nvidia-driver", NVIDIA_TOOLKIT,
        commands=(NVIDIA_SMI, "cat /proc/driver/nvidia/version", "docker context ls"),
        yields_to=("nvml-mismatch",)),
    KnownMessage(
        "nvidia-smi-no-driver", "NVIDIA-SMI has failed because it couldn't communicate with the "
                                "NVIDIA driver", "error",
        (r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver",),
        "The NVIDIA kernel module is not loaded: it was not built for the running kernel "
        "(a kernel update without a DKMS rebuild), Secure Boot refused it, or nouveau holds "
        "the GPU.",
        "Check whether the module exists for this kernel and why it did not load; rebuild it "
        "with DKMS or reinstall the driver package, then reboot.", "nvidia-driver",
        CUDA_RELEASE_NOTES,
        commands=("lsmod | grep nvidia", "dkms status", "mokutil --sb-state",
                  "sudo dmesg | grep -iE 'nvidia|NVRM'"),
        needs_root=True,
        container_fix="Inside a container nvidia-smi works only when the host's driver works "
                      "and the container was started with GPUs (--gpus all).",
        container_commands=(DOCKER_NVIDIA,),
        # the module's refusal in the same text says why the driver is not there
        yields_to=("secure-boot-module-refused",), threads=12),
    KnownMessage(
        "nvml-mismatch", "Failed to initialize NVML: Driver/library version mismatch", "error",
        (r"Driver/library version mismatch",),
        "The NVIDIA user-space libraries were updated (often by an unattended upgrade) while "
        "the older kernel module is still loaded; the two versions differ until the module "
        "is reloaded.",
        "Reboot (or unload and reload the nvidia modules when nothing uses the GPU); pin the "
        "driver packages if upgrades keep doing this.", "nvidia-driver", CUDA_RELEASE_NOTES,
        commands=("cat /proc/driver/nvidia/version", "sudo reboot"), needs_root=True,
        threads=12),
    KnownMessage(
        "container-no-dev-kfd", "error gathering device information while adding custom "
                                "device \"/dev/kfd\"", "error",
        (r"error gathering device information while adding custom device \"?/dev/(?:kfd|dri)",),
        "Docker was asked to pass /dev/kfd (or /dev/dri) into the container, and the host "
        "has no such device: the amdgpu driver is not loaded there, or the docker host is "
        "not Linux with an AMD GPU (a Windows HIP SDK gives no /dev/kfd; Docker Desktop's "
        "VM has none). '--privileged' does not create it.",
        "On the docker host, load amdgpu until /dev/kfd exists (rocminfo works there), then "
        "start the container again.", "kfd-access", ROCM_DOCKER,
        commands=("ls -l /dev/kfd /dev/dri", "lsmod | grep amdgpu", "sudo modprobe amdgpu"),
        # WSL: https://github.com/ROCm/librocdxg (README, "Container Launch - WSL-Specific
        # Flags"); AMD's answer in ROCm/AMDMIGraphX issue 3834 (WSL does not use /dev/kfd).
        wsl_fix="Under WSL there is no /dev/kfd or /dev/dri: ROCm reaches the GPU through "
                "/dev/dxg. Pass --device=/dev/dxg and mount WSL's DXCore and AMD's ROCDXG "
                "library instead (ROCm 7.1 and later; before 7.13 add -e "
                "HSA_ENABLE_DXG_DETECTION=1; older WSL releases mount "
                "/opt/rocm/lib/libhsa-runtime64.so.1 in place of librocdxg.so). WSL covers "
                "only the GPUs AMD lists for it (Radeon RX 7000 and 9000, Radeon PRO W7000, "
                "some Ryzen AI): an older card has no WSL path; use native Linux there.",
        wsl_commands=("ls -l /dev/dxg", "docker run -it --device=/dev/dxg -v "
                      "/usr/lib/wsl/lib/libdxcore.so:/usr/lib/libdxcore.so -v "
                      "/opt/rocm/lib/librocdxg.so:/usr/lib/librocdxg.so --cap-add=SYS_PTRACE "
                      "--security-opt seccomp=unconfined --ipc=host --shm-size 8G "
                      "rocm/pytorch:latest"),
        needs_root=True, yields_to=("rocm-on-nvidia",), threads=16),
)
