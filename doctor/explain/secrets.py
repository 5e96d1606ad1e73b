"""Nothing secret leaves `explain`: the matched line, the notes and the unknown error's line
pass through rocmdoctor.redact.Redactor (token shapes, credentials in URLs) and through
`redact` here, which adds Bearer/Basic values and the values of secret-named settings and
flags (HF_TOKEN=..., --password ...)."""

from __future__ import annotations

import re

from rocmdoctor.redact import Redactor, is_secret_name

_REDACTOR = Redactor(homes=False)
REDACTED = "<redacted>"
_ASSIGNMENT = re.compile(r"\b([A-Za-z_][\w.-]*)(\s*[=:]\s*)([\"']?)([^\s\"',;]+)")
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)([= ])([\"']?)([^\s\"',;]+)")
_BEARER = re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)


def redact(text: str) -> str:
    """`text` with token-shaped strings, credentials in URLs and the values of secret-named
    settings (TOKEN=, --password ...) replaced; rocmdoctor.redact covers the token shapes
    and URL credentials, the Bearer and name=value forms are done here."""
    text = _REDACTOR(text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)

    def value(m: re.Match[str]) -> str:
        name, sep, quote, val = m.groups()
        if not is_secret_name(name) or val == REDACTED or val.startswith("-"):
            return m.group(0)
        return f"{name}{sep}{quote}{REDACTED}"

    return _ASSIGNMENT.sub(value, _FLAG.sub(value, text))
