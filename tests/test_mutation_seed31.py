"""What the mutation run of seed 31 (docs/testing.md) found no test for: each test below fails on
the change that survived, and passes on the code as it is."""

from __future__ import annotations

import os
import pwd
from typing import Any

import pytest


def test_a_uid_with_no_passwd_entry_is_named_by_user_then_by_number(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # `docker run -u 1234`: no passwd entry for the uid, as in many containers
    from rocmdoctor.host import live

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setenv("USER", "alice")
    assert live._live_user().name == "alice"
    # so a file written to be shared hides that name even where the uid has no entry
    assert "alice" not in live.account_redactor({})("run by alice")
    monkeypatch.delenv("USER")
    assert live._live_user().name == str(os.getuid())


def test_the_deep_checks_dtype_names_are_torchs_dtypes_of_those_widths() -> None:
    # the deep child reads them with getattr(torch, ...) in a process no in-process test sees
    torch = pytest.importorskip("torch")
    from rocmdoctor.host.deep_kernels import DTYPES

    assert {k: getattr(torch, v, None) for k, v in DTYPES.items()} == {
        "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
        "fp16": torch.float16}
