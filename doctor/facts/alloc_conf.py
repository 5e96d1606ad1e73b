"""A parser for PYTORCH_*_ALLOC_CONF values that accepts and rejects exactly what torch does.

Two dialects, as torch has had two parsers: `modern` (torch >= 2.8, c10/core/AllocatorConfig
`ConfigTokenizer` plus c10/cuda/CUDAAllocatorConfig.cpp: separators are barely checked, numbers
go through std::stoull/std::stod; compared with the torch 2.13 CPU wheel in the tests) and
`legacy` (torch <= 2.7 `lexArgs`/`consumeToken`: strict `:`/`,`, std::stoi). `device` is
"rocm" or "cuda" for a GPU build (whose CUDA parser also runs and rejects unknown keys), None
for a CPU build (unknown keys are skipped). Nothing raises: an invalid value comes back as
`AllocConf.error` with torch's exception type and message.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional

from rocmdoctor.kb.allocator import ASYNC_BACKENDS, option, option_names

MODERN = "modern"
LEGACY = "legacy"
_U64 = 2**64
_MB = 1024 * 1024
_DBL_MIN = 2.2250738585072014e-308
_MODERN_SPACE = " \t\n\v\f\r"
_INT = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_HEX = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
_DEC = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_DOUBLE = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(" + _HEX + "|" + _DEC
    + r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)"
)
OUT_OF_BOUNDS = "Index out of bounds in ConfigTokenizer"
NO_CLOSING_BRACKET = "Expected closing bracket ']' in ConfigTokenizer but reached end of config"


@dataclass(frozen=True)
class AllocConfError:
    """What torch raises: its Python exception type, message, and the key being parsed."""

    kind: str  # ValueError, RuntimeError or IndexError
    message: str
    key: Optional[str] = None

    def quote(self) -> str:
        return f"{self.kind}: {self.message.strip()}"


@dataclass(frozen=True)
class AllocConf:
    text: str
    options: tuple[tuple[str, str], ...]  # (key, value) as parsed, in order
    error: Optional[AllocConfError] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def value(self, key: str) -> Optional[str]:
        """The last value given for a key (or one of its aliases), or None."""
        opt = option(key)
        names = {key} if opt is None else {opt.name, *opt.aliases}
        found = None
        for k, v in self.options:
            if k in names:
                found = v
        return found


class _Raise(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def tokenize(text: str, dialect: str = MODERN) -> list[str]:
    """Split like torch: `,` `:` `[` `]` are tokens; whitespace (legacy: spaces) vanishes."""
    skip = re.compile("[" + (_MODERN_SPACE if dialect == MODERN else " ") + "]")
    runs = (skip.sub("", run) for run in re.findall(r"[,:\[\]]|[^,:\[\]]+", text))
    return [run for run in runs if run]


def _strtoull(token: str, name: str, bits: int = 64) -> int:
    """std::stoull / std::stoi semantics: leading digits, a sign wraps, overflow raises."""
    m = _INT.match(token)
    if m is None:
        raise _Raise("ValueError", name)
    digits = m.group(2).lstrip("0") or "0"
    if len(digits) > 20:  # past any 64-bit value (and past Python's int() digit limit)
        raise _Raise("IndexError", name)
    magnitude = int(digits)
    if bits == 64:
        if magnitude >= _U64:
            raise _Raise("IndexError", name)
        return (_U64 - magnitude) % _U64 if m.group(1) == "-" else magnitude
    value = -magnitude if m.group(1) == "-" else magnitude
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise _Raise("IndexError", name)
    return value % _U64  # stoi's int, stored in a size_t


def _hex_exact(text: str) -> Fraction:
    body = text[2:]
    exponent = 0
    if "p" in body.lower():
        body, exp_text = re.split("[pP]", body)
        exponent = int(exp_text)
    whole, _, frac = body.partition(".")
    mantissa = int((whole + frac) or "0", 16)
    return Fraction(mantissa) * Fraction(2) ** (exponent - 4 * len(frac))


def _strtod(token: str) -> float:
    """std::stod semantics: longest numeric prefix, ERANGE (overflow, inexact tiny) raises."""
    m = _DOUBLE.match(token)
    if m is None:
        raise _Raise("ValueError", "stod")
    sign, body = m.group(1), m.group(2)
    low = body.lower()
    if low.startswith(("inf", "nan")):
        value = float(low[:3])
        return -value if sign == "-" else value
    try:
        value = float.fromhex(body) if low.startswith("0x") else float(body)
    except OverflowError:
        raise _Raise("IndexError", "stod") from None
    if value == float("inf"):
        raise _Raise("IndexError", "stod")
    if value == 0:
        mantissa = re.split("[pP]", body[2:])[0] if low.startswith("0x") else re.split(
            "[eE]", body)[0]
        if mantissa.strip("0.xX"):  # a non-zero number that underflowed to 0
            raise _Raise("IndexError", "stod")
    elif abs(value) < _DBL_MIN:  # subnormal: glibc sets ERANGE when it is inexact
        try:
            exact = _hex_exact(body) if low.startswith("0x") else Fraction(body)
        except ValueError:  # thousands of digits: no double holds that exactly
            raise _Raise("IndexError", "stod") from None
        if Fraction(value) != exact:
            raise _Raise("IndexError", "stod")
    return -value if sign == "-" else value


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class _Parser:
    def __init__(self, text: str, dialect: str, device: Optional[str],
                 known: frozenset[str]) -> None:
        self.legacy = dialect == LEGACY
        self.tok = tokenize(text, dialect)
        self.device = device
        self.known = known
        self.key: Optional[str] = None
        self.options: list[tuple[str, str]] = []
        self.large_mb = 20  # kLargeBuffer / 1 MB, the default large_segment_size_mb

    # --- tokens ------------------------------------------------------------------------
    def at(self, i: int) -> str:
        if i >= len(self.tok):
            if self.legacy:
                raise _Raise("RuntimeError", f"Error, expecting {self.key} value")
            raise _Raise("RuntimeError", OUT_OF_BOUNDS)
        return self.tok[i]

    def sep(self, i: int, sep: str) -> None:
        """Modern torch only checks that a token exists; legacy torch checks which one."""
        if self.legacy:
            if i >= len(self.tok) or self.tok[i] != sep:
                raise _Raise("RuntimeError",
                             f"Error parsing CachingAllocator settings, expected {sep}")
        else:
            self.at(i)

    def size(self, i: int) -> int:
        if self.legacy:
            return _strtoull(self.at(i), "stoi", bits=32)
        return _strtoull(self.at(i), "stoull")

    def boolean(self, i: int) -> bool:
        token = self.at(i) if not self.legacy else (self.tok[i] if i < len(self.tok) else "")
        if token in ("True", "False"):
            return token == "True"
        if self.legacy:
            raise _Raise("RuntimeError", f"Expected a single True/False argument for {self.key}")
        raise _Raise("ValueError", f"Expected 'True' or 'False' at index {i} in "
                                   f"ConfigTokenizer but got '{token}'")

    def skip_key(self, i: int) -> int:
        self.at(i + 1)
        i += 2
        if self.at(i) != "[":
            return i
        i += 1
        while i < len(self.tok) and self.tok[i] != "]":
            i += 1
        if i >= len(self.tok):
            raise _Raise("RuntimeError", NO_CLOSING_BRACKET)
        return i

    # --- values (each takes the index of its value, returns the index of its last token) -----
    def fail(self, message: str) -> _Raise:
        """TORCH_CHECK (legacy: RuntimeError) or TORCH_CHECK_VALUE (modern: ValueError)."""
        return _Raise("RuntimeError" if self.legacy else "ValueError", message)

    def value_split_mb(self, i: int) -> int:
        val, least = self.size(i), 21 if self.legacy else self.large_mb
        if val < least:
            raise self.fail(f"CachingAllocator option {self.key} too small, must be "
                            + ("> 20" if self.legacy else f">= {least}"))
        return i

    def value_large_mb(self, i: int) -> int:
        val = self.size(i)
        if val <= 10:
            raise self.fail("CachingAllocator option large_segment_size_mb must be > 10 MB")
        self.large_mb = min(val, (_U64 - 1) // _MB)
        return i

    def value_fraction_open(self, i: int) -> int:
        val = _strtod(self.at(i))
        if self.legacy and not 0 < val < 1.0:
            raise self.fail("garbage_collect_threshold too " + (
                "small" if not val > 0 else "big") + ", set it 0.0~1.0")
        if not 0 < val < 1.0:
            raise self.fail("garbage_collect_threshold is invalid, set it in (0.0, 1.0)")
        return i

    def value_fraction_closed(self, i: int) -> int:
        if not 0.0 <= _strtod(self.at(i)) <= 1.0:
            raise self.fail("per_process_memory_fraction is invalid, set it in [0.0, 1.0]")
        return i

    def value_divisions(self, i: int) -> int:
        if self.at(i) != "[":
            if not _pow2(self.size(i)):
                raise self.fail("For roundups, the divisions has to be power of 2 ")
            return i
        i += 1
        while i < len(self.tok) and self.tok[i] != "]":
            boundary_at = i
            self.sep(i + 1, ":")
            i += 2
            value = self.size(i)
            if value != 0 and not _pow2(value):
                raise self.fail("For roundups, the divisions has to be power of 2 or 0 to "
                                "disable roundup ")
            if self.tok[boundary_at] != ">" and not _pow2(
                    _strtoull(self.tok[boundary_at], "stoul" if self.legacy else "stoull")):
                raise self.fail("For roundups, the intervals have to be power of 2 ")
            if self.at(i + 1) != "]":
                i += 1
                self.sep(i, ",")
            i += 1
        if i >= len(self.tok):
            raise _Raise("RuntimeError", NO_CLOSING_BRACKET)
        return i

    def value_backend(self, i: int) -> int:
        rocm = self.device == "rocm"
        if self.at(i) not in (("native", *ASYNC_BACKENDS) if rocm else ("native",
                                                                       ASYNC_BACKENDS[0])):
            raise self.fail("Unknown allocator backend, options are " + (
                "native, cudaMallocAsync, and hipMallocAsync" if rocm
                else "native and cudaMallocAsync"))
        return i

    def value_threads(self, i: int) -> int:
        val = self.size(i)
        got = "" if self.legacy else f", got {val}"
        if not _pow2(val):
            raise self.fail(f"Number of register threads has to be power of 2{got}")
        if val > 128:
            raise self.fail(f"Number of register threads should be less than or equal to "
                            f"128{got}")
        return i

    def value_positive(self, i: int) -> int:
        if self.size(i) == 0:
            raise self.fail("Pinned reserve segment size has to be greater than 0")
        return i

    def value_size(self, i: int) -> int:
        self.size(i)
        return i

    def value_bool(self, i: int) -> int:
        self.boolean(i)
        return i

    # --- the loops ---------------------------------------------------------------------
    def handler(self, key: str, generic_pass: bool) -> Optional[Callable[[int], int]]:
        """The value parser for a key in this pass, or None to skip (or reject) the key."""
        opt = option(key)
        if opt is None or key not in self.known or opt.kind == "large_mb":
            return None
        if not self.legacy and (opt.scope == "generic") != generic_pass:
            return None
        method: Callable[[int], int] = getattr(self, "value_" + opt.kind)
        return method

    def run_pass(self, generic_pass: bool) -> None:
        i = 0
        n = len(self.tok)
        while i < n:
            key = self.tok[i]
            self.key = key
            parse = self.handler(key, generic_pass)
            if parse is not None:
                self.sep(i + 1, ":")
                start = i + 2
                i = parse(start)
                self.options.append((key, "".join(self.tok[start:i + 1])))
            elif self.legacy:
                raise _Raise("RuntimeError", f"Unrecognized CachingAllocator option: {key}")
            else:
                if self.device is not None and key not in self.known:
                    where = "Accelerator" if generic_pass else "CUDA"
                    raise _Raise("ValueError",
                                 f"Unrecognized key '{key}' in {where} allocator config.")
                if key == "large_segment_size_mb" and generic_pass:
                    self.options.append((key, self.tok[i + 2] if i + 2 < n else ""))
                i = self.skip_key(i)
            if i + 1 < n:
                i += 1
                self.sep(i, ",")
            i += 1

    def run(self) -> None:
        if self.legacy:
            self.run_pass(generic_pass=True)
            return
        # torch 2.13 reads every large_segment_size_mb first (tokens anywhere; the last wins),
        # then checks max_split_size_mb / max_non_split_rounding_mb against it.
        for j, token in enumerate(self.tok):
            if token == "large_segment_size_mb" and "large_segment_size_mb" in self.known:
                self.key = token
                self.at(j + 1)
                self.value_large_mb(j + 2)
        self.run_pass(generic_pass=True)
        if self.device is not None:
            self.run_pass(generic_pass=False)


def parse_alloc_conf(
    text: str,
    dialect: str = MODERN,
    device: Optional[str] = "rocm",
    known: Optional[frozenset[str]] = None,
) -> AllocConf:
    """Parse an allocator setting as torch would; never raises."""
    keys = known if known is not None else option_names(dialect)
    parser = _Parser(text, dialect, device, keys)
    try:
        parser.run()
    except _Raise as exc:
        return AllocConf(text, tuple(parser.options), AllocConfError(exc.kind, exc.message,
                                                                     parser.key))
    return AllocConf(text, tuple(parser.options))


def split_items(text: str) -> list[tuple[str, str]]:
    """Leniently split a setting into (key, value) items the way a person meant them:
    `;` or `,` between items, `:` or `=` between key and value, brackets kept whole."""
    items = re.findall(r"(?:\[[^\]]*\]?|[^,;\[])+", text)
    pairs = [re.match(r"\s*([^:=\s]*)\s*[:=]?\s*(.*?)\s*$", item, re.S) for item in items]
    return [(m.group(1), m.group(2)) for m in pairs if m and m.group(1)]


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _fix_value(name: str, value: str, min_split_mb: int) -> Optional[str]:
    """A value torch accepts that is closest to what was meant, or None to drop the item."""
    opt = option(name)
    kind = opt.kind if opt else ""
    low = value.strip().lower()
    if kind == "bool":
        return "True" if low in _TRUE else "False" if low in _FALSE else None
    number = re.fullmatch(r"[+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?", low)
    val = float(low) if number else math.nan  # 1e999 and 400-digit numbers are inf
    if not math.isfinite(val):
        return None
    if kind == "split_mb":
        return str(max(int(val), min_split_mb))
    if kind == "fraction_open":  # 80 probably meant 80 %
        return f"{val / 100:g}" if 1 < val < 100 and val.is_integer() else None
    if kind == "divisions" and val >= 1:
        return str(1 << (int(val).bit_length() - 1))
    return None


def repair(text: str, dialect: str, device: Optional[str], known: frozenset[str],
           drop: frozenset[str] = frozenset()) -> str:
    """The nearest setting torch accepts: misspelt keys corrected, `=` and `;` replaced,
    values fixed where the intent is clear, other bad items (and the keys in `drop`) removed."""
    import difflib

    min_split = 21 if dialect == LEGACY else 20
    kept: list[str] = []
    for key, value in split_items(text):
        name = key if key in known else next(
            iter(difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.75)), "")
        opt = option(name)
        if not name or opt is None or opt.name in drop or name in drop:
            continue
        item = f"{name}:{value}"
        if not parse_alloc_conf(item, dialect, device, known).ok:
            fixed = _fix_value(name, value, min_split)
            if fixed is None:
                continue
            item = f"{name}:{fixed}"
        if parse_alloc_conf(",".join([*kept, item]), dialect, device, known).ok:
            kept.append(item)
    return ",".join(kept)
