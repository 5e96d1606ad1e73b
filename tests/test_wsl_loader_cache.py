"""WSL: the ROCm runtime for WSL installed, but the loader's cache never refreshed (ldconfig),
is named as such, not just "no GPU" (ROCm/librocdxg#46)."""

from __future__ import annotations

import re
from dataclasses import replace

from rocmdoctor.checks.torch_device import TorchDevice
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.rocm_sdk import ROCDXG_LDCONFIG
from rocmdoctor.model import Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import fixture_text, make_snapshot
from tests.test_loaded_rocm import WSL_KERNEL, probe

CAPTURE = "wsl-librocdxg-ldconfig-cache-not-refreshed-after-install-rocm7.13-TRUNCATED.txt"
VENV = "wsl-venv-ld-library-path-empty-find-libhsa-runtime64-in-rocm-sdk-core-rocm7.13-librocdxg.txt"
# `ldconfig -p` as glibc prints it: a count line, then "name (flags) => path" lines.
CACHE = ("3 libs found in cache `/etc/ld.so.cache'\n"
         "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n"
         "\tlibstdc++.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libstdc++.so.6\n"
         "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n")


def wsl(cache: str, env: dict[str, str]) -> SnapshotHost:
    # librocdxg#46: torch 2.11.0+rocm7.13.0 in ~/.venv, the runtime in _rocm_sdk_core/lib,
    # LD_LIBRARY_PATH empty; librocdxg installed system-wide in /opt/rocm/lib.
    text = fixture_text(VENV)
    location = re.search(r"(/home/\S+/site-packages)/_rocm_sdk_core", text).group(1) + "/torch"  # type: ignore[union-attr]
    return SnapshotHost(make_snapshot(
        paths={"/dev/dxg": {"type": "char", "mode": "0666"},
               "/opt/rocm/lib/librocdxg.so.1": {"type": "file"}},
        kernel=WSL_KERNEL, env=env, commands={"ldconfig -p": cache},
        python=probe("2.11.0+rocm7.13.0", "7.13.26162-1140233ffe", location=location)))


def test_real_wsl_runtime_installed_but_not_in_the_loader_s_cache() -> None:
    text = fixture_text(CAPTURE)
    assert "`ldconfig` cache not being refreshed after installation" in text
    assert "export LD_LIBRARY_PATH=/opt/rocm/lib:$LD_LIBRARY_PATH" in text
    result = replace(run_one(TorchDevice(), wsl(CACHE, {})), duration_ms=0)
    assert result == TorchDevice().result(
        Status.FAIL, "torch sees no GPU; the system lists 0; on WSL torch needs AMD's WSL runtime",
        [Finding.error("no GPU is listed by the system either"),
         Finding.info("WSL with /dev/dxg, torch built for ROCm 7.13.0: ROCm 7.2.0 and later "
                      "reach the GPU through librocdxg (ROCDXG), as AMD's WSL guide installs it"),
         Finding.error("/opt/rocm/lib/librocdxg.so.1 is installed, but the loader's cache does "
                       "not list it (`ldconfig -p`): ldconfig was not run after the install, so "
                       "the ROCm runtime cannot load it and finds no GPU")],
        Fix("Rebuild the loader's cache (needs root); without root, `export LD_LIBRARY_PATH="
            "/opt/rocm/lib:$LD_LIBRARY_PATH` lets this shell find it.", ("sudo ldconfig",),
            needs_root=True),
        ROCDXG_LDCONFIG)


def test_a_refreshed_cache_or_the_folder_on_ld_library_path_is_no_finding() -> None:
    listed = CACHE + "\tlibrocdxg.so.1 (libc6,x86-64) => /opt/rocm/lib/librocdxg.so.1\n"
    for host in (wsl(listed, {}), wsl(CACHE, {"LD_LIBRARY_PATH": "/opt/rocm/lib"})):
        result = run_one(TorchDevice(), host)
        assert result.status is Status.FAIL  # still no GPU in this replay, for another reason
        assert result.summary == "torch sees no GPU; the system lists 0"
