"""The pip-installed ROCm SDK (TheRock's `rocm` Python packages) and ROCm on WSL: package
names, per-GPU packages, the documented WSL runtime step. Each rule with its source.
"""

from __future__ import annotations

import re
from typing import Optional

# ROCm/TheRock RELEASES.md, "Installing multi-arch ROCm Python packages": rocm (meta),
# rocm-sdk-core, rocm[libraries] -> rocm-sdk-libraries ("architecture-neutral host code"),
# rocm[device-gfx{target}] -> rocm-sdk-device-{target}, rocm[devel] -> rocm-sdk-devel; torch's
# device extras install amd-torch-device-{target} and depend on rocm-sdk-device-{target}.
THEROCK_RELEASES = ("https://github.com/ROCm/TheRock/blob/"
                    "89553ce3746eda74ade42557470d25e37c91b6f0/RELEASES.md")
MULTI_ARCH_INDEX = "https://rocm.nightlies.amd.com/whl-multi-arch/"
# The older per-family scheme: one index and one rocm-sdk-libraries-<family> per GPU family
# (gfx94X-dcgpu, gfx110X-dgpu, gfx1151, gfx120X-all ...); pip writes the names lower-case.
FAMILY_INDEX = "https://rocm.nightlies.amd.com/v2/{family}/"
FAMILY_MISMATCH = "https://github.com/ROCm/TheRock/issues/3046"
# Known family names (TheRock RELEASES.md; TheRock#3046): the X is one hex digit.
FAMILIES = ("gfx94X-dcgpu", "gfx950-dcgpu", "gfx110X-all", "gfx110X-dgpu", "gfx1150",
            "gfx1151", "gfx120X-all")
SDK_PACKAGE = "rocm-sdk-core"
DEVICE_PREFIX = "rocm-sdk-device-"
TORCH_DEVICE_PREFIX = "amd-torch-device-"
LIBRARIES = "rocm-sdk-libraries"
# `rocm-sdk path --root` falls back to rocm-sdk-core when rocm[devel] is absent.
SDK_ROOT_FALLBACK = "https://github.com/ROCm/TheRock/pull/7108"

# ROCm on WSL. AMD's "Install PyTorch for ROCm" (WSL) step "Update to WSL compatible runtime
# lib": remove the wheel's libhsa-runtime64.so* and copy the WSL runtime from /opt/rocm/lib
# (docs-6.3.4, corrected as AMD said in ROCm/ROCm#4749); "As of ROCm 6.4.1 for WSL we no
# longer require this step". ROCm 7.2 and later reach the GPU through librocdxg (ROCDXG).
WSL_PYTORCH_DOC = ("https://rocm.docs.amd.com/projects/radeon/en/docs-6.3.4/docs/install/wsl/"
                   "install-pytorch.html")
WSL_STEP_HISTORY = "https://github.com/ROCm/ROCm/issues/4749"
WSL_STEP_UNTIL = (6, 4, 1)  # wheels for ROCm before this need the step
WSL_ROCDXG_FROM = (7, 2, 0)
WSL_ROCDXG_GUIDE = ("https://rocm.docs.amd.com/projects/radeon-ryzen/en/latest/docs/install/"
                    "installrad/wsl/howto_wsl.html")
# HSA_ENABLE_DXG_DETECTION=1 "is to pair with rocm prev 7.13" (AMD, ROCm/librocdxg#34).
DXG_DETECTION_VAR = "HSA_ENABLE_DXG_DETECTION"
DXG_DETECTION_UNTIL = (7, 13, 0)
DXG_DETECTION_SOURCE = "https://github.com/ROCm/librocdxg/issues/34"
WSL_RUNTIME_PACKAGE = "hsa-runtime-rocr4wsl-amdgpu"  # ROCm/ROCm#4682
# librocdxg installed under /opt/rocm/lib, but "the `ldconfig` cache not being refreshed after
# installation, so the loader can't find the newly installed libraries" (AMD in
# ROCm/librocdxg#46, fixed by #47); workaround LD_LIBRARY_PATH=/opt/rocm/lib.
ROCDXG_GLOB = "/opt/rocm/lib/librocdxg.so*"
ROCDXG_LDCONFIG = "https://github.com/ROCm/librocdxg/issues/46"

_FAMILY = re.compile(r"^(gfx[0-9a-fx]+)(?:-[a-z]+)?$")


def normalize(name: str) -> str:
    """A distribution name as pip compares it (PEP 503): lower-case, runs of -_. to -."""
    return re.sub(r"[-_.]+", "-", name).lower()


def family_covers(family: str, target: str) -> bool:
    """Whether a family name (gfx110X-dgpu, gfx1151) holds code for a target (gfx1100)."""
    m = _FAMILY.match(normalize(family))
    if m is None:
        return False
    digits = m.group(1)[3:]  # after "gfx"
    pattern = "gfx" + "".join("[0-9a-f]" if c == "x" else re.escape(c) for c in digits)
    return re.fullmatch(pattern, target.lower()) is not None


def family_for(target: str, exclude: tuple[str, ...] | list[str] = ()) -> Optional[str]:
    """The known per-family index that holds a target, or None; `exclude`: families already
    installed that, as their recorded targets show, do not."""
    skip = {normalize(f) for f in exclude}
    return next((f for f in FAMILIES if family_covers(f, target) and normalize(f) not in skip),
                None)
