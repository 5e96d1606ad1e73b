"""ROCm's math libraries: MIOpen (databases, runtime kernel builds), rocBLAS's Tensile
libraries, hipBLASLt. `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import (
    GFX_OF_GPU,
    MIOPEN_DEBUG,
    MIOPEN_PERFDB,
    TORCH_BUILD,
    WINDOWS_ROCBLAS,
)
from rocmdoctor.kb.messages import KnownMessage

MIOPEN_124 = "https://github.com/ROCm/MIOpen/issues/124"
TORCH_126942 = "https://github.com/pytorch/pytorch/pull/126942"
ROCBLAS_1300 = "https://github.com/ROCm/rocBLAS/issues/1300"
MIGRAPHX_3517 = "https://github.com/ROCm/AMDMIGraphX/pull/3517"
HIPBLASLT_1205 = "https://github.com/ROCm/hipBLASLt/pull/1205"
ROCM_LIBRARIES_3550 = "https://github.com/ROCm/rocm-libraries/issues/3550"
ROCMLIBS_12 = "https://github.com/likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU/issues/12"

_MIOPEN_DIRS = ('mkdir -p "/tmp/miopen-$USER"', 'export MIOPEN_USER_DB_PATH="/tmp/miopen-$USER"',
                'export MIOPEN_CUSTOM_CACHE_DIR="/tmp/miopen-$USER"')

LIBRARY_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "miopen-database", "MIOpen cannot use its database", "error",
        (r"MIOpen.*(unable to open database file|readonly database|SQLite)",
         r"sqlite_db\.cpp:\d+: (?:open memvfs: )?unable to open database file",
         r"Internal error while accessing SQLite database",
         r"Db lock has failed to lock",
         r"boost::filesystem::\w+: [^\n]*\.config/miopen"),
        "MIOpen could not open or write its performance database or kernel cache (SQLite files "
        "under $HOME/.config/miopen and $HOME/.cache/miopen): the folder is read-only or "
        "missing, as in containers with a read-only or shared HOME.",
        "Give MIOpen writable folders before Python starts.",
        "torch-device", MIOPEN_PERFDB, commands=_MIOPEN_DIRS,
        unless=(r"Unable to read system database file", r"Performance may degrade",
                r"File is unreadable"),
        container_fix="Point MIOpen at a writable folder on a local disk inside the "
                      "container (or mount one there); a read-only install or a HOME on a "
                      "bind mount or network filesystem cannot hold its SQLite locks "
                      "(PyTorch CI hit this with read-only kdb files, pytorch pull 126942).",
        container_commands=_MIOPEN_DIRS, threads=9),
    KnownMessage(
        "miopen-system-db-warning", "MIOpen: Unable to read system database file", "harmless",
        (r"Unable to read system database file[^\n]*Performance may degrade",
         r"MIOpen\(HIP\): Warning \[\w+\] File is unreadable"),
        "A warning: MIOpen found no tuned database for this GPU and will search for kernels "
        "itself (slower the first time). It is not the cause of a failure; look for an "
        "'Error' line from MIOpen or the program.",
        "Nothing to fix; the first runs of each convolution shape take longer.", None,
        MIOPEN_PERFDB, yields_to=("*",), threads=4),
    KnownMessage(
        "miopen-hiprtc-compile", "MIOpen: HIPRTC_ERROR_COMPILATION", "error",
        (r"HIPRTC_ERROR_COMPILATION", r"Error \[Compile\] 'hiprtcCompileProgram",
         r"Error \[BuildHip\]"),
        "MIOpen compiles some kernels at run time with hipRTC, and that build failed: a "
        "hipRTC/comgr from another ROCm than MIOpen's, or system headers leaking into the "
        "build (TheRock issue 6258: /usr/include's uint64_t clashing with MIOpen's). The "
        "Python error (miopenStatusUnknownError) follows from it.",
        "Use one ROCm for torch and its libraries (the wheel's bundled ones, without a system "
        "ROCm on LD_LIBRARY_PATH); rerun with MIOPEN_LOG_LEVEL=6 for the compile log to "
        "report; torch.backends.cudnn.enabled = False bypasses MIOpen meanwhile.",
        "torch-rocm-match", MIOPEN_DEBUG,
        commands=("echo $LD_LIBRARY_PATH", "MIOPEN_LOG_LEVEL=6 python <your script>"),
        yields_to=("hip-std-headers-missing",), library="MIOpen", requires=("miopen_named",),
        threads=10),
    KnownMessage(
        "miopen-comgr-isa", "MIOpen: comgr rejects the ISA name", "error",
        (r"amd_comgr_action_info_set_isa_name[^\n]*INVALID_ARGUMENT",
         r"Code object build failed"),
        "MIOpen's kernel build failed inside comgr: it passed an ISA name the comgr in use "
        "does not accept (amdgcn-amd-amdhsa--gfx900:sramecc-:xnack-), which points at MIOpen "
        "and comgr from different ROCm releases.",
        "Make torch load MIOpen and comgr from one ROCm (remove other ROCm lib folders from "
        "LD_LIBRARY_PATH, or reinstall the wheel); the MIOPEN_LOG_LEVEL=6 log names the "
        "files.", "torch-rocm-match", MIOPEN_DEBUG,
        commands=("echo $LD_LIBRARY_PATH", TORCH_BUILD),
        yields_to=("hip-std-headers-missing", "miopen-hiprtc-compile"),
        library="MIOpen", threads=1),
    KnownMessage(
        "miopen-error", "MIOpen error", "error",
        (r"MIOpen Error", r"miopenStatus\w*Error", r"MIOpen\(HIP\): Error"),
        "MIOpen (the convolution and normalization library on ROCm) failed: a kernel did not "
        "compile or the chosen solver does not fit the problem, often after a ROCm, compiler "
        "or GPU change, or on a GPU the MIOpen release does not support.",
        "Log one failing run at level 4 to see the failing step (debugging only; unset it "
        "afterwards); to get going meanwhile, torch.backends.cudnn.enabled = False bypasses "
        "MIOpen at a speed cost.",
        "torch-device", MIOPEN_DEBUG, commands=("export MIOPEN_LOG_LEVEL=4",),
        yields_to=("miopen-database", "miopen-hiprtc-compile", "miopen-comgr-isa",
                   "hip-std-headers-missing")),
    KnownMessage(
        "rocblas-legacy-path", "rocBLAS looks for TensileLibrary.dat under /opt/rocm/rocblas",
        "error",
        (r"Cannot read /opt/rocm[^/\s]*/rocblas/lib/",),
        "rocBLAS searched the pre-5.x layout /opt/rocm/rocblas/lib, because that folder is on "
        "LD_LIBRARY_PATH; the Tensile files now live under /opt/rocm/lib/rocblas/library "
        "(rocBLAS issue 1300, maintainer).",
        "Remove /opt/rocm/rocblas/lib from LD_LIBRARY_PATH, or point rocBLAS at the library "
        "folder.", "rocm-install", ROCBLAS_1300,
        commands=("echo $LD_LIBRARY_PATH",
                  "export ROCBLAS_TENSILE_LIBPATH=/opt/rocm/lib/rocblas/library/"), threads=2),
    KnownMessage(
        "rocblas-tensile-missing", "rocBLAS: Cannot read TensileLibrary.dat", "error",
        (r"rocBLAS error: Cannot read [^\n]*TensileLibrary[^\n]*\.dat",
         r"\bfor GPU arch : gfx[0-9a-f]+",
         r"rocBLAS error: Could not load [^\n]*TensileLibrary[^\n]*\.dat",
         r"rocBLAS error: Could not initialize Tensile (?:host|library)",
         r"\bTensileLibrary\.dat not found\b"),
        "rocBLAS has no kernels for this GPU: the list of available Tensile files lacks its "
        "gfx target (gfx1201 with a ROCm older than its support, gfx1103 in libraries built "
        "for another HIP SDK), or rocBLAS looks in a folder that does not hold them.",
        "Use a ROCm, torch wheel or application build whose rocBLAS ships the GPU's target; "
        "only a target no ROCm release ships can run the kernels of another of its family "
        "through HSA_OVERRIDE_GFX_VERSION (on Linux). Point ROCBLAS_TENSILE_LIBPATH at the "
        "folder that holds the files when the layout differs.",
        "torch-arch-support", MIGRAPHX_3517,
        commands=(GFX_OF_GPU, "ls /opt/rocm/lib/rocblas/library/ | grep -o 'gfx[0-9a-f]*' "
                              "| sort -u"),
        container_fix="The image's rocBLAS lacks the GPU's target: use an image built for "
                      "it, or enable the image's GPU-override setting (Flatpak dsnote's "
                      "maintainer: 'Override GPU version').",
        unless=(r"No devices found",), context="tensile", yields_to=("rocblas-legacy-path",),
        variants=(WINDOWS_ROCBLAS,), library="rocBLAS", threads=12),
    KnownMessage(
        "hipblaslt-tensile-missing", "rocblaslt: Could not load TensileLibrary_lazy_gfx", "error",
        (r"rocblaslt error: Could not load [^\n]*TensileLibrary[^\n]*\.dat",
         # hipBLASLt's tensile_host.cpp when its library folder holds no file for the GPU
         # (ROCm/hipBLASLt library/src/amd_detail/rocblaslt/src/tensile_host.cpp)
         r"rocblaslt warning: No paths matched \S*hipblaslt\S*gfx"),
        "hipBLASLt (behind torch's matmuls on newer ROCm) ships no kernels for this GPU in "
        "the libraries in use (ollama issue 11652: ollama's bundled ROCm had none for "
        "gfx1200).",
        "Use libraries that include the target (a newer ROCm or torch wheel); torch can skip "
        "hipBLASLt with TORCH_BLAS_PREFER_HIPBLASLT=0.", "torch-arch-support",
        "https://github.com/ollama/ollama/issues/11652",
        commands=(GFX_OF_GPU, "export TORCH_BLAS_PREFER_HIPBLASLT=0"), context="tensile",
        variants=(WINDOWS_ROCBLAS,), library="hipBLASLt", threads=2),
    KnownMessage(
        "hipblaslt-no-solution", "hipBLASLt: Heuristic Fetch Failed / HIPBLAS_STATUS_NOT_SUPPORTED",
        "error",
        (r"hipBLASLt error: Heuristic Fetch Failed", r"HIPBLAS_STATUS_NOT_SUPPORTED",
         r"no heuristic function available for current configuration",
         r"returnedAlgoCount == 0"),
        "The BLAS backend has no kernel for this matmul's shape, data type, transposes or "
        "epilogue on this GPU (hipBLASLt pull 1205: no solutions for complex types; "
        "rocm-libraries issue 3550: a batched 3x3 matmul with a batch of 18 million).",
        "Update ROCm's BLAS libraries; to sidestep hipBLASLt, tell torch to prefer rocBLAS "
        "(or rocBLAS to not use hipBLASLt), and log the failing call to report it.",
        "torch-rocm-match", HIPBLASLT_1205,
        commands=("export TORCH_BLAS_PREFER_HIPBLASLT=0", "export ROCBLAS_USE_HIPBLASLT=0",
                  "HIPBLASLT_LOG_LEVEL=2 python <your script>"),
        yields_to=("hipblaslt-tensile-missing",), threads=5),
)
