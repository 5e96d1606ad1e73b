"""Which environment variables a snapshot keeps, and how secrets are hidden."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"

# Variables whose names start with one of these are relevant to GPU training.
RELEVANT_PREFIXES = (
    "HIP_", "HSA_", "ROCR_", "ROCM", "AMD_", "MIOPEN_", "PYTORCH_", "TORCH_", "CUDA_",
    "NCCL_", "RCCL_", "OMP_", "GPU_", "HCC_", "ROCBLAS_", "HIPBLAS", "CUBLAS", "NVIDIA_",
    "TORCHINDUCTOR_", "TRITON_", "LD_", "MKL_", "KMP_", "XLA_", "HF_", "TRANSFORMERS_",
    "APPTAINER_", "SINGULARITY_", "KUBERNETES_",
)
RELEVANT_NAMES = frozenset({
    "PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "HOME", "USER",
    "LOGNAME", "SHELL", "LANG", "LC_ALL", "container", "WSL_DISTRO_NAME", "SLURM_JOB_ID",
    "OPENBLAS_CORETYPE", "SUDO_USER", "SUDO_UID", "TMPDIR",
})

SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|SESSION|COOKIE",
                         re.IGNORECASE)
# Values that look like tokens whatever their name: well-known prefixes, or long opaque strings.
SECRET_VALUE = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"
    r"|glpat-[A-Za-z0-9_-]{20,})"
)
_OPAQUE = re.compile(r"^[A-Za-z0-9+/_=-]{32,}$")


def is_relevant(name: str) -> bool:
    return name in RELEVANT_NAMES or name.startswith(RELEVANT_PREFIXES)


def looks_secret(name: str, value: str) -> bool:
    if SECRET_NAME.search(name):
        return True
    if SECRET_VALUE.fullmatch(value.strip()):
        return True
    # A long opaque value with both letters and digits and no path separators or spaces.
    return (
        bool(_OPAQUE.match(value))
        and not value.startswith("/")
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


def redact_value(value: str) -> str:
    """Hide token-shaped substrings inside a longer value."""
    return SECRET_VALUE.sub(REDACTED, value)


def capture_env(environ: Mapping[str, str], redact: bool = True) -> dict[str, str]:
    """The variables a snapshot keeps: relevant ones, secrets redacted unless asked not to."""
    kept: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if not is_relevant(name) and not (not redact and SECRET_NAME.search(name)):
            continue
        if redact and looks_secret(name, value):
            kept[name] = REDACTED
        elif redact:
            kept[name] = redact_value(value)
        else:
            kept[name] = value
    return kept


UUID = re.compile(
    r"\b(?:GPU-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\bGPU-[0-9a-fA-F]{8,}\b"
)
SERIAL = re.compile(
    r"(?i)\b(serial(?:[ _]number)?|unique[ _]?id|asic_serial|product_serial|fru_id)"
    r"(\"?\s*[:=]\s*\"?)([^\s\",]+)"
)
HOME = re.compile(r"/home/[^/\s\"':]+")
# Account names too common to replace as words (they name things other than the user).
COMMON_NAMES = frozenset({"root", "user", "admin", "test", "docker"})


class Redactor:
    """Hides what makes a report personal: secrets, user and host names, home paths,
    serial numbers and UUIDs. Apply it to every string that leaves the machine."""

    def __init__(self, user_names: tuple[str, ...] = (), host_names: tuple[str, ...] = (),
                 home_dirs: tuple[str, ...] = (), enabled: bool = True,
                 homes: bool = True) -> None:
        self.enabled = enabled
        self.homes = homes
        self.home_dirs = tuple(sorted({h.rstrip("/") for h in home_dirs if len(h) > 1},
                                      key=len, reverse=True))
        # A host name also appears without its domain (shell prompts, rocm-smi, logs).
        host_names = (*host_names, *(h.split(".")[0] for h in host_names if "." in h))
        words = [n for n in (*user_names, *host_names)
                 if n and len(n) >= 3 and n not in COMMON_NAMES and n != REDACTED]
        self.names = re.compile(
            r"(?<![\w.-])(" + "|".join(re.escape(w) for w in sorted(set(words), key=len,
                                                                     reverse=True)) + r")(?![\w-])"
        ) if words else None

    def __call__(self, text: str) -> str:
        if not self.enabled:
            return text
        text = SECRET_VALUE.sub(REDACTED, text)
        for home in self.home_dirs:
            text = text.replace(home, "~")
        if self.homes:
            text = HOME.sub("/home/<user>", text)
        text = UUID.sub("<uuid>", text)
        text = SERIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}<serial>", text)
        if self.names is not None:
            text = self.names.sub(REDACTED, text)
        return text

    def env_value(self, name: str, value: str) -> str:
        if not self.enabled:
            return value
        return REDACTED if looks_secret(name, value) else self(value)


def redact_tree(value: Any, redactor: Redactor) -> Any:
    """Redact every string in a JSON-like tree (before escaping, so patterns still match)."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, dict):
        return {redactor(str(k)): redact_tree(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v, redactor) for v in value]
    return value


def redact_snapshot(data: dict[str, Any]) -> dict[str, Any]:
    """What `snapshot` hides by default beyond secret variables: the host name, UUIDs, serial
    numbers and token-shaped strings wherever they occur. User names and home paths stay:
    the diagnosis needs them (group membership), and `report` hides them when it publishes."""
    hostname = str((data.get("platform") or {}).get("hostname") or "")
    redactor = Redactor(host_names=(hostname,) if hostname != REDACTED else (), homes=False)
    out = dict(data)
    for key in ("files", "paths", "dirs", "commands", "python"):
        if key in out:
            out[key] = redact_tree(out[key], redactor)
    out["platform"] = {**(out.get("platform") or {}), "hostname": REDACTED}
    return out
