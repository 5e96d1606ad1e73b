"""The compilers' versions in the issue report (collect_env's fields), read from each tool's
own `--version` text."""

from __future__ import annotations

from rocmdoctor.facts.collect_env import gather, report_readings
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.render.report_facts import NA, collect_env_fields
from tests.helpers import host_of

NVCC = ("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2024 NVIDIA Corporation\n"
        "Built on Thu_Mar_28_02:18:24_PDT_2024\nCuda compilation tools, release 12.4, "
        "V12.4.131\nBuild cuda_12.4.r12.4/compiler.34097967_0\n")
GCC = ("gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\nCopyright (C) 2021 Free Software "
       "Foundation, Inc.\n")
HIPCC = "HIP version: 6.3.42134-a9a80e791\nAMD clang version 18.0.0git\n"
CMAKE = "cmake version 3.22.1\n\nCMake suite maintained and supported by Kitware.\n"


def _host() -> SnapshotHost:
    return host_of(commands={"gcc --version": GCC, "nvcc --version": NVCC,
                             "hipcc --version": HIPCC, "cmake --version": CMAKE})


def test_toolchain_versions_are_read_from_each_tools_output() -> None:
    assert gather(_host()).toolchain == {
        "GCC version": "(Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0",
        "CMake version": "version 3.22.1",
        "CUDA runtime version (nvcc)": "12.4.131",
        "HIP version (hipcc)": "6.3.42134-a9a80e791",
    }


def test_the_report_shows_them_in_collect_envs_fields() -> None:
    fields = dict(collect_env_fields(report_readings(_host(), "cuda")))
    assert (fields["GCC version"], fields["CMake version"], fields["CUDA runtime version"],
            fields["Clang version"]) == ("(Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0",
                                         "version 3.22.1", "12.4.131", NA)
