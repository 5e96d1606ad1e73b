"""Collectives: NCCL and RCCL errors, watchdog timeouts, shared memory, peer access, torch's
distributed start-up. `threads` as in rocmdoctor.kb.errors_runtime."""

from __future__ import annotations

from rocmdoctor.kb.errors_base import NCCL_ERRORS, NCCL_TROUBLESHOOTING
from rocmdoctor.kb.messages import KnownMessage, Variant

NCCL_SHM = NCCL_TROUBLESHOOTING + "#sharing-data"
NCCL_1024 = "https://github.com/NVIDIA/nccl/issues/1024"
RCCL_1026 = "https://github.com/ROCm/rccl/issues/1026"
RCCL_INIT = "https://github.com/ROCm/rccl/blob/develop/src/init.cc"
FAIRCHEM_597 = "https://github.com/facebookresearch/fairchem/issues/597"
DISTRIBUTED_C10D = ("https://github.com/pytorch/pytorch/blob/main/torch/distributed/"
                    "distributed_c10d.py")
PROCESS_GROUP_NCCL = ("https://github.com/pytorch/pytorch/blob/main/torch/csrc/distributed/c10d/"
                      "ProcessGroupNCCL.cpp")

_DEBUG = "export NCCL_DEBUG=INFO"

NCCL_MESSAGES: tuple[KnownMessage, ...] = (
    KnownMessage(
        "nccl-error", "RCCL/NCCL error", "error",
        (r"\bNCCL error\b", r"\bnccl(UnhandledCuda|System|Internal|InvalidUsage|"
                            r"InvalidArgument|Remote)Error\b", r"\bRCCL\b.*\berror\b",
         r"NCCL WARN"),
        "A collective (all-reduce, broadcast) failed in NCCL (RCCL, its AMD port, says the "
        "same): ncclSystemError and ncclUnhandledCudaError mean a call into the OS or the GPU "
        "runtime failed (GPU peer access, too little shared memory in a container), "
        "ncclInvalidUsage a bug in how the program calls it.",
        "Rerun with NCCL_DEBUG=INFO (RCCL reads it too) to see the failing step; in "
        "containers start with --ipc=host or a large --shm-size; check that every rank sees "
        "its own GPU.",
        "visible-devices", NCCL_TROUBLESHOOTING,
        commands=(_DEBUG, "df -h /dev/shm"),
        unless=(r"NCCL WARN Missing \"",), context="nccl_last_error",
        yields_to=("nccl-shm-exhausted", "nccl-unhandled-cuda-error", "nccl-peer-access",
                   "nccl-duplicate-gpu", "nccl-p2p-transport", "nccl-socket-error",
                   "nccl-internal-error", "nccl-remote-error", "nccl-watchdog-timeout",
                   "nccl-no-socket-interface")),
    KnownMessage(
        "nccl-shm-exhausted", "NCCL: shared memory segment could not be created", "error",
        (r"Call to posix_fallocate failed", r"Error while creating shared memory segment",
         r"\bncclShmOpen\b"),
        "NCCL's shared-memory transport between ranks on one machine could not create its "
        "segment in /dev/shm. Most often /dev/shm is too small: docker gives a container 64 MB "
        "by default (NCCL issue 342; the MiniMax maintainers read the same log line in a vLLM "
        "container); the system error NCCL prints after the call says which it is.",
        "Give the container more shared memory, or share the host's; NCCL_SHM_DISABLE=1 "
        "avoids the transport at some speed cost.", "collectives", NCCL_SHM,
        commands=("df -h /dev/shm", "docker run --shm-size=16g <image>",
                  "docker run --ipc=host <image>", "export NCCL_SHM_DISABLE=1"),
        variants=(Variant(
            "shm_denied", "Make /dev/shm writable for every user again: its mode is 1777 "
            "(drwxrwxrwt), as on any Linux system; NCCL_SHM_DISABLE=1 avoids the transport "
            "meanwhile.", ("ls -ld /dev/shm", "sudo chmod 1777 /dev/shm",
                           "export NCCL_SHM_DISABLE=1"),
            "shm_open was refused (Permission denied): this user may not create files in "
            "/dev/shm, so its size is not the problem (NCCL issue 328: the same refusal, "
            "gone once the user could write there)."),), threads=10),
    KnownMessage(
        "nccl-unhandled-cuda-error", "ncclUnhandledCudaError: Call to CUDA function failed",
        "error",
        (r"ncclUnhandledCudaError", r"unhandled cuda error \(run with NCCL_DEBUG=INFO"),
        "A CUDA (on ROCm: HIP) call inside NCCL failed; the 'Last error' line, or the first "
        "NCCL WARN with NCCL_DEBUG=INFO, names the call. A known NCCL bug behind it on "
        "consumer GPUs under WSL was fixed in NCCL 2.18.6 (NCCL issue 1024, maintainer).",
        "Rerun with NCCL_DEBUG=INFO and read the first WARN; use a torch that bundles NCCL "
        "2.18.6 or newer; NCCL_P2P_DISABLE=1 for GPUs that cannot peer.", "collectives",
        NCCL_1024, commands=(_DEBUG, "python -c \"import torch; print(torch.cuda.nccl.version())\"",
                             "export NCCL_P2P_DISABLE=1"),
        context="nccl_last_error",
        yields_to=("nccl-peer-access", "nccl-p2p-transport", "nccl-shm-exhausted"), threads=9),
    KnownMessage(
        "nccl-peer-access", "NCCL: peer access is not supported between these two devices",
        "error",
        (r"failed to open CUDA IPC handle : 217", r"peer access is not supported between these "
                                                  r"two devices"),
        "NCCL's P2P transport tried direct GPU-to-GPU access between two GPUs that cannot do "
        "it (consumer cards, GPUs under different root complexes, IOMMU or ACS settings).",
        "Disable the P2P transport; NCCL then copies through host memory.", "collectives",
        NCCL_TROUBLESHOOTING, commands=("export NCCL_P2P_DISABLE=1", "nvidia-smi topo -m"),
        threads=2),
    KnownMessage(
        "nccl-p2p-transport", "RCCL/NCCL: P2P transport setup failed", "error",
        (r"transport/p2p\.cc:\d+ -> [13]\b",),
        "Setting up the P2P transport between two GPUs failed (-> 3 is a system error, -> 1 a "
        "GPU runtime error); on AMD machines RCCL also warns when the kernel command line "
        "lacks iommu=pt, which multi-GPU P2P needs (RCCL issue 1026).",
        "Disable P2P to confirm (NCCL_P2P_DISABLE=1, or NCCL_P2P_LEVEL=LOC as in RCCL issue "
        "1026); for the fix on AMD add iommu=pt (amd_iommu=on on older kernels) to the "
        "kernel command line.", "collectives", RCCL_1026,
        commands=("export NCCL_P2P_DISABLE=1", "cat /proc/cmdline"),
        yields_to=("nccl-peer-access",), threads=8),
    KnownMessage(
        "nccl-socket-error", "NCCL: socket errors between ranks", "error",
        (r"NCCL WARN Socket recv failed", r"misc/socket\.cc:\d+ -> 3\b",
         r"NCCL WARN [^\n]*Connection (?:refused|reset by peer|closed by remote peer)",
         # NCCL 2.18's socket.cc, in torch's "Last error:" block
         r"\bsocket(?:Start|Finalize)?Connect: Connect to \S+ failed"),
        "A TCP connection NCCL uses between ranks failed: a peer process died or hung, a "
        "firewall or the wrong network interface, or a node that cannot reach the others. "
        "Timeouts in other ranks follow from it.",
        "Find the first rank that failed (its own log); pin the interface NCCL uses and check "
        "that the nodes reach each other on it.", "collectives", NCCL_TROUBLESHOOTING,
        commands=(_DEBUG, "export NCCL_SOCKET_IFNAME=<interface>", "ip -br addr"),
        yields_to=("nccl-p2p-transport",), threads=4),
    KnownMessage(
        "nccl-watchdog-timeout", "Watchdog caught collective operation timeout", "error",
        (r"Watchdog caught collective operation timeout", r"Exception \(either an error or "
                                                          r"timeout\) detected by watchdog"),
        "A collective did not finish within the timeout: one rank is stuck or died (an "
        "exception, uneven data so it skips a step, a hung peer link) and the others waited "
        "for it. The op named is only where they waited; raising the timeout does not help a "
        "hang (InstructGLM issue 3: a 5-hour timeout still failed).",
        "Find the first rank that stopped (its own traceback, NCCL_DEBUG=INFO); make every "
        "rank run the same number of collectives; test with NCCL_P2P_DISABLE=1 and "
        "NCCL_IB_DISABLE=1 to rule out a transport.", "collectives", NCCL_TROUBLESHOOTING,
        commands=(_DEBUG, "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
                  "export NCCL_P2P_DISABLE=1"),
        yields_to=("nccl-socket-error", "nccl-p2p-transport", "nccl-shm-exhausted"),
        threads=12),
    KnownMessage(
        "nccl-duplicate-gpu", "NCCL: Duplicate GPU detected", "error",
        (r"Duplicate GPU detected : rank \d+ and rank \d+ both on CUDA device",),
        "Two ranks of one job use the same GPU: each process must select its own "
        "(torch.cuda.set_device(local_rank)); a hard-coded device or a mask that leaves each "
        "process the same GPU causes it (fairchem issue 597, maintainer).",
        "Call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) before init_process_group, "
        "and do not pin one GPU for all ranks.", "visible-devices", FAIRCHEM_597,
        commands=("env | grep -E 'LOCAL_RANK|VISIBLE_DEVICES'",), threads=8),
    KnownMessage(
        # bootstrap.cc (bootstrapNetInit): ncclFindInterfaces() found no interface that
        # NCCL_SOCKET_IFNAME admits (all up interfaces but lo and docker* when unset).
        "nccl-no-socket-interface", "NCCL: Bootstrap : no socket interface found", "error",
        (r"Bootstrap : no socket interface found",),
        "NCCL found no network interface to start on: NCCL_SOCKET_IFNAME names an interface "
        "this machine does not have (a training script's eth0 on a machine whose interfaces "
        "are named otherwise), or no interface but loopback and docker is up.",
        "Set NCCL_SOCKET_IFNAME to an interface this machine lists (or unset it and let NCCL "
        "pick).", "collectives", "https://github.com/NVIDIA/nccl/blob/master/src/bootstrap.cc",
        commands=("ip -br addr", "echo $NCCL_SOCKET_IFNAME",
                  "export NCCL_SOCKET_IFNAME=<interface>"), threads=3),
    KnownMessage(
        "nccl-internal-error", "NCCL: internal error - please report this issue", "error",
        (r"internal error - please report this issue to the NCCL developers",),
        "NCCL (or RCCL) hit a state it does not expect, most often during transport setup on "
        "this topology; on AMD multi-GPU machines RCCL's own warnings about iommu=pt and "
        "HSA_FORCE_FINE_GRAIN_PCIE are the first things to act on.",
        "Rerun with NCCL_DEBUG=INFO and act on the first WARN; report the log with the "
        "topology if it persists.", "collectives", NCCL_ERRORS,
        commands=(_DEBUG, "cat /proc/cmdline"), yields_to=("nccl-no-socket-interface",),
        threads=3),
    KnownMessage(
        "nccl-remote-error", "NCCL: remote process exited or there was a network error", "error",
        (r"remote process exited or there was a network error", r"\bncclRemoteError\b"),
        "A peer rank died or its network link broke; this rank only noticed. Across nodes the "
        "usual cause is the interface NCCL picked: a machine with several (docker bridges, "
        "virtual or unconnected NICs) may pick one the other node cannot reach (NCCL's "
        "troubleshooting guide; NCCL issue 1141: fixed by naming the interface).",
        "Read the log of the rank that exited first; check the network between the nodes, and "
        "name the interface they reach each other on with NCCL_SOCKET_IFNAME (NCCL_IB_DISABLE=1 "
        "rules out InfiniBand).",
        "collectives", NCCL_ERRORS,
        commands=(_DEBUG, "ip -br addr", "export NCCL_SOCKET_IFNAME=<interface>")),
    KnownMessage(
        "rccl-setup-advice", "RCCL: Missing \"iommu=pt\" / HSA_FORCE_FINE_GRAIN_PCIE", "harmless",
        (r"NCCL WARN Missing \"(?:amd_iommu=on|iommu=pt)\" from kernel command line",
         r"NCCL WARN Missing \"HSA_FORCE_FINE_GRAIN_PCIE=1\" from environment"),
        "RCCL prints this at every start when the kernel command line or the environment "
        "lacks AMD's multi-GPU settings. It is advice, not the failure; on multi-GPU AMD "
        "systems P2P problems and hangs are what it warns of (RCCL issue 1026).",
        "Add iommu=pt to the kernel command line (amd_iommu=on too on older kernels) and set "
        "HSA_FORCE_FINE_GRAIN_PCIE=1 for multi-GPU runs.", "collectives", RCCL_INIT,
        commands=("cat /proc/cmdline", "export HSA_FORCE_FINE_GRAIN_PCIE=1"),
        yields_to=("*",), threads=3),
    KnownMessage(
        "nccl-not-available", "Distributed package doesn't have NCCL built in", "error",
        (r"Distributed package doesn't have NCCL built in",
         r"ProcessGroupNCCL is only supported with GPUs, no GPUs found"),
        "The program asked for the nccl backend where there is none: Windows and macOS builds "
        "of torch have no NCCL, and a CPU-only build or a process without GPUs cannot use it.",
        "Use backend='gloo' on Windows, macOS or CPU; on a Linux GPU machine install the GPU "
        "build of torch.", "torch-install", DISTRIBUTED_C10D,
        commands=('python -c "import torch.distributed as d; print(d.is_nccl_available())"',)),
)
