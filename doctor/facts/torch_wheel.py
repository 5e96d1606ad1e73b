"""Which PyTorch wheel fits this machine: the ROCm index for the installed ROCm, the CUDA
index for the NVIDIA driver. The pip lines every torch check and `explain` print."""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.nvidia_gpus import nvidia_gpus
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.host import Host
from rocmdoctor.kb import driver_support as drivers
from rocmdoctor.kb import torch_wheels as wheels
from rocmdoctor.kb.cuda_driver import newest_cuda_for_driver


def rocm_index_line(host: Host, force: bool = True, driver: Optional[str] = None
                    ) -> tuple[str, str]:
    """(pip line, why this index) for the ROCm wheel matching the system ROCm.

    With `driver` (an AMD GPU Driver release, e.g. "6.0" or "30.20"), only an index whose ROCm
    AMD tests that driver with: the system ROCm's when it is one, else the newest one (where
    AMD's table names none, as without `driver`).
    """
    install = installed_rocm(host)
    index = wheels.rocm_index_for(install.version if install else None)
    why = (f"rocm{index} fits the installed ROCm {install.version}" if install else
           f"rocm{index} is the newest ROCm index; the wheel brings its own ROCm libraries")
    row = drivers.kmd_row(driver) if driver else None
    tested = {wheels.version_tuple(u)[:2] for u in row.user_space} if row else set()
    fits = [i for i in wheels.rocm_indexes() if wheels.version_tuple(i)[:2] in tested]
    if fits and not (install and index in fits):
        index = fits[-1]
        why = (f"rocm{index} is the newest ROCm index AMD tests with the {driver}.x driver; "
               "the wheel brings its own ROCm libraries")
    return wheels.pip_line(f"rocm{index}", force), why


def cuda_index_line(host: Optional[Host], force: bool = True, newest_gpus: bool = False
                    ) -> tuple[str, str]:
    """(pip line, why this index) for the newest CUDA wheel the NVIDIA driver can run.

    Without a known driver (or no machine: a pasted text read elsewhere): the build with the
    oldest CUDA (it runs on the most drivers), or with `newest_gpus` the newest CUDA (it
    supports the newest GPUs).
    """
    newest = wheels.WHEELS[-1]
    driver = nvidia_gpus(host).driver_version if host is not None else None
    cuda = newest_cuda_for_driver(driver, newest.cuda) if driver else None
    if cuda is None and newest_gpus:
        cuda = newest.cuda[-1]
        why = f"{wheels.cuda_index(cuda)} has torch {newest.torch}'s newest CUDA"
    elif cuda is None:
        cuda = newest.cuda[0]
        why = (f"{wheels.cuda_index(cuda)} is torch {newest.torch}'s oldest CUDA: it runs on the "
               "oldest drivers and GPUs")
    else:
        why = f"{wheels.cuda_index(cuda)} is the newest build driver {driver} can run"
    return wheels.pip_line(wheels.cuda_index(cuda), force), why
