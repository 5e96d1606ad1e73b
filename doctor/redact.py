"""Which environment variables a snapshot keeps, and how secrets are hidden."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

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

# The words of a variable or option name that make its value a secret. A name is split into
# words at `_`, `-`, `.` and lower-to-upper case changes (HF_TOKEN, aws.secretKey, --api-key);
# a word is secret when it is one of SECRET_WORDS or ends in one of SECRET_SUFFIXES (which
# also covers names written without separators: PGPASSWORD, HFTOKEN). KEY counts as a whole
# word only, so NCCL_IB_PKEY (InfiniBand's partition key), HOTKEY and MONKEY are no secret;
# PYTORCH_PROFILER_PW is one.
SECRET_WORDS = frozenset({
    "KEY", "KEYS", "PW", "PWD", "AUTH", "SESSION", "COOKIE", "COOKIES", "CREDS", "SIGNATURE",
    "BEARER",
})
SECRET_SUFFIXES = (
    "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "TOKEN", "TOKENS", "SECRET", "SECRETS",
    "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "CREDENTIAL", "CREDENTIALS",
)
# Names that hold no secret although a word says otherwise: PWD is the working directory.
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_words(name: str) -> list[str]:
    """HF_TOKEN -> [HF, TOKEN]; aws.secretAccessKey -> [AWS, SECRET, ACCESS, KEY]."""
    return [w.upper() for part in re.split(r"[^A-Za-z0-9]+", name)
            for w in _NAME_WORDS.findall(part)]


def is_secret_name(name: str) -> bool:
    """Whether a variable, option or field of this name holds a secret."""
    bare = name.strip().lstrip("-$").upper()
    if bare in NOT_SECRET_NAMES:
        return False
    return any(w in SECRET_WORDS or w.endswith(SECRET_SUFFIXES) for w in name_words(name))


# Values that look like tokens whatever their name: well-known prefixes (GitHub, Hugging Face,
# OpenAI/Anthropic, Slack, AWS access key ids, JWTs, GitLab, Google API keys and OAuth
# tokens, npm, PyPI, Stripe, DigitalOcean).
SECRET_VALUE = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|xox[abpre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}"
    r"|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_-]{50,}|[sr]k_live_[A-Za-z0-9]{20,}"
    r"|do[por]_v1_[a-f0-9]{64})"
)
# Credentials inside a URL: scheme://user:password@host, scheme://:password@host (Redis) and
# scheme://token@host. The whole user-info part goes, up to the last @ before the host.
URL_CREDENTIALS = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/?#\"'<>`]*@", re.IGNORECASE)
_OPAQUE = re.compile(r"^[A-Za-z0-9+/_=-]{32,}$")


def is_relevant(name: str) -> bool:
    return name in RELEVANT_NAMES or name.startswith(RELEVANT_PREFIXES)


def looks_secret(name: str, value: str) -> bool:
    """Whether a variable's whole value is a secret: by its name, or by the value's shape."""
    if is_secret_name(name):
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
    """Hide token-shaped substrings and URL credentials inside a longer value."""
    value = URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}@", value)
    return SECRET_VALUE.sub(REDACTED, value)


def capture_env(environ: Mapping[str, str], redact: bool = True,
                redactor: Optional[Redactor] = None) -> dict[str, str]:
    """The variables a snapshot keeps: relevant ones, secrets redacted unless asked not to;
    `redactor` (user and host names, home paths) applies to the values kept."""
    kept: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if not is_relevant(name) and not (not redact and is_secret_name(name)):
            continue
        if not redact:
            kept[name] = value
        elif looks_secret(name, value):
            kept[name] = REDACTED
        else:
            kept[name] = redactor(value) if redactor is not None else redact_value(value)
    return kept


UUID = re.compile(
    r"\b(?:GPU-)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\bGPU-[0-9a-fA-F]{8,}\b"
)
# The value never starts with = or : so that a heading such as rocm-smi's
# "==== Serial Number ====" stays whole.
SERIAL = re.compile(
    r"(?i)\b(serial(?:[ _]number)?|unique[ _]?id|asic_serial|product_serial|fru_id)"
    r"(\"?\s*[:=]\s*\"?)([^\s\",=:][^\s\",]*)"
)
HOME = re.compile(r"/home/[^/\s\"':]+")
# TorchInductor's default cache folder carries the account name (torch/_inductor/runtime/
# cache_dir_utils.py: default_cache_dir, "torchinductor_" + getpass.getuser()).
USER_TMP = re.compile(r"(/torchinductor_)[^/\s\"':,;]+")
# Account names too common to replace as words (they name things other than the user).
COMMON_NAMES = frozenset({"root", "user", "admin", "test", "docker"})


class Redactor:
    """Hides what makes a report personal: secrets, user and host names, home paths,
    serial numbers and UUIDs. Apply it to every string that leaves the machine."""

    def __init__(self, user_names: tuple[str, ...] = (), host_names: tuple[str, ...] = (),
                 home_dirs: tuple[str, ...] = (), enabled: bool = True,
                 homes: bool = True, ids: bool = True) -> None:
        self.enabled = enabled
        self.homes = homes
        self.ids = ids
        dirs = sorted({h.rstrip("/") for h in home_dirs if len(h.rstrip("/")) > 1},
                      key=len, reverse=True)
        # A home folder as a whole path component: /home/al does not cut /home/alice.
        self.home_dirs = re.compile(
            "(?:" + "|".join(re.escape(h) for h in dirs) + r")(?![^/\s\"':;,=)\]}>])"
        ) if dirs else None
        # A host name also appears without its domain (shell prompts, rocm-smi, logs).
        host_names = (*host_names, *(h.split(".")[0] for h in host_names if "." in h))
        words = [n for n in (*user_names, *host_names)
                 if n and len(n) >= 3 and n not in COMMON_NAMES and n != REDACTED]
        self.names = re.compile(
            r"(?<![\w.-])(" + "|".join(re.escape(w) for w in sorted(set(words), key=len,
                                                                     reverse=True)) + r")(?![\w-])"
        ) if words else None

    @classmethod
    def for_account(cls, user_name: str, hostname: str, environ: Mapping[str, str],
                    enabled: bool = True, ids: bool = True) -> Redactor:
        """The redactor for what one account on one machine writes: its user name (and
        $USER, $LOGNAME, which tools such as torch take it from, and $SUDO_USER, the account
        that trains when this runs under sudo), the host name, and the home folders ($HOME
        and /home/<user>)."""
        users = tuple(dict.fromkeys(
            n.strip() for n in (user_name, environ.get("USER", ""), environ.get("LOGNAME", ""),
                                environ.get("SUDO_USER", ""))
            if n and n.strip()))
        homes = tuple(h for h in (environ.get("HOME", ""), *(f"/home/{u}" for u in users))
                      if h.startswith("/"))
        hosts = (hostname,) if hostname and hostname != REDACTED else ()
        return cls(user_names=users, host_names=hosts, home_dirs=homes, enabled=enabled,
                   ids=ids)

    def __call__(self, text: str) -> str:
        if not self.enabled:
            return text
        text = redact_value(text)
        if self.home_dirs is not None:
            text = self.home_dirs.sub("~", text)
        if self.homes:
            text = HOME.sub("/home/<user>", text)
            text = USER_TMP.sub(lambda m: m.group(1) + REDACTED, text)
        if self.ids:
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


def redact_snapshot(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """What `snapshot` hides by default, as `report` does: secrets wherever they occur
    (secret-named variables, token shapes, URL credentials), the user and host names, home
    paths, UUIDs and serial numbers. `environ` is the environment the run read (for $HOME,
    $USER and $LOGNAME); the snapshot keeps only the relevant variables of it."""
    platform = data.get("platform") or {}
    user = data.get("user") or {}
    redactor = Redactor.for_account(str(user.get("name") or ""),
                                    str(platform.get("hostname") or ""), environ)
    out = dict(data)
    out["env"] = capture_env(environ, redactor=redactor)
    for key in ("files", "paths", "dirs", "commands", "python"):
        if key in out:
            out[key] = redact_tree(out[key], redactor)
    out["platform"] = {**platform, "hostname": REDACTED}
    if user:
        out["user"] = {**user, "name": redactor(str(user.get("name") or "")),
                       "groups": [redactor(str(g)) for g in user.get("groups") or ()]}
    return out
