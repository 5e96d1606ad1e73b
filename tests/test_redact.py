"""rocmdoctor.redact: which names are secret, which values look like tokens, URL credentials,
home folders and account names, and what a snapshot keeps."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.redact import (
    REDACTED,
    Redactor,
    capture_env,
    is_secret_name,
    looks_secret,
    redact_snapshot,
    redact_value,
)
from tests.helpers import fixture_text, make_snapshot


@pytest.mark.parametrize("name", [
    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "GITHUB_TOKEN", "AWS_SESSION_TOKEN", "WANDB_API_KEY",
    "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "AZURE_STORAGE_KEY", "PGPASSWORD",
    "PYTORCH_DB_PASSWORD", "MYSQL_PWD", "PYTORCH_PROFILER_PW", "REDIS_PASSWD",
    "GOOGLE_APPLICATION_CREDENTIALS", "TORCH_AUTH_HEADER", "api_key", "apiKey", "--password",
    "--api-key", "accessToken", "aws.secretAccessKey", "SSH_PASSPHRASE", "HFTOKEN",
    "CLIENT_SECRET", "SESSION_COOKIE", "PRIVATEKEY", "GPG_SIGNATURE", "PASSWORD", "PASSWD",
    "DB_PASSWD", "password", "SMTP_PASSWORD", "PYTORCH_PW",
])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "NCCL_IB_PKEY", "HOTKEY", "MONKEY_PATCH", "PWD", "OLDPWD", "PATH", "HIP_VISIBLE_DEVICES",
    "PYTORCH_HIP_ALLOC_CONF", "TORCHINDUCTOR_CACHE_DIR", "KEYBOARD", "TOKENIZERS_PARALLELISM",
    "HSA_OVERRIDE_GFX_VERSION", "TORCHINDUCTOR_POST_GRAD_PASS", "NCCL_IB_HCA", "SECRETARY",
])
def test_not_secret_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize("value", [
    "ghp_" + "a1B2" * 9, "gho_" + "a1B2" * 9, "github_pat_11ABCDEFG0" + "x" * 40,
    "hf_" + "abcd" * 8, "sk-" + "proj-" + "Ab1" * 10, "sk-ant-api03-" + "Ab1" * 10,
    "xoxb-1234567890-" + "AbCd" * 5, "xoxp-1234567890-abcdefghij", "AKIA" + "Q2W3E4R5T6Y7U8I9",
    "ASIA" + "Q2W3E4R5T6Y7U8I9", "glpat-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt", "AIza" + "Sy" + "A1b" * 11,
    "ya29." + "a0Af" * 10, "npm_" + "a1B2c3" * 6, "pypi-" + "AgEIcHlwaS5vcmc" * 4,
    "sk_live_" + "a1B2" * 6, "dop_v1_" + "ab12" * 16,
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abcdefghijk",
])
def test_token_shapes_are_secrets_alone_and_inside_text(value: str) -> None:
    assert looks_secret("ANYTHING", value)
    assert redact_value(f"token is {value}, done") == f"token is {REDACTED}, done"


@pytest.mark.parametrize(("text", "expected"), [
    ("https://user:pw@hub.example.org/x", "https://<redacted>@hub.example.org/x"),
    ("redis://:s3cret@cache:6379/0", "redis://<redacted>@cache:6379/0"),
    ("https://ghp_notlongenough@github.com", "https://<redacted>@github.com"),
    ("git+https://oauth2:tok@gitlab.example.org/a.git", "git+https://<redacted>@gitlab.example.org/a.git"),
    ("https://u:p@ss@host/p?q=a@b", "https://<redacted>@host/p?q=a@b"),
    ('"url": "https://a:b@h"', '"url": "https://<redacted>@h"'),
    ("https://host/path@v1", "https://host/path@v1"),
    ("mail alice@example.org", "mail alice@example.org"),
    ("https://<redacted>@h", "https://<redacted>@h"),
])
def test_url_credentials(text: str, expected: str) -> None:
    assert redact_value(text) == expected
    assert Redactor()(text) == expected


def test_account_redactor_hides_names_homes_and_the_inductor_folder() -> None:
    r = Redactor.for_account("root", "gpu-node-07.cluster.example.org",
                             {"HOME": "/scratch/zelvina", "USER": "zelvina", "LOGNAME": "zel"})
    text = ("zelvina@gpu-node-07:/scratch/zelvina/venv$ ls /scratch/zelvina2 /home/zelvina/x "
            "/tmp/torchinductor_zelvina/a gpu-node-07.cluster.example.org root")
    assert r(text) == ("<redacted>@<redacted>:~/venv$ ls /scratch/zelvina2 ~/x "
                       "/tmp/torchinductor_<redacted>/a <redacted> root")


def test_a_home_folder_is_a_whole_path_component() -> None:
    r = Redactor(home_dirs=("/root",))
    assert r("/root/.cache /rootfs/x /root") == "~/.cache /rootfs/x ~"


def test_disabled_redactor_keeps_everything() -> None:
    text = "https://u:p@h ghp_" + "a1B2" * 9 + " /home/zelvina"
    assert Redactor.for_account("zelvina", "h", {}, enabled=False)(text) == text


TOKEN = "hf_" + "Qw3Er5Ty7Ui9Op1As2Df"


def _planted_snapshot() -> dict[str, Any]:
    data = make_snapshot(
        files={"/home/zelvina/.config/x": f"url https://zelvina:pw1@h.example.org {TOKEN}\n"},
        paths={"/home/zelvina/venv": {"type": "dir", "owner": "zelvina", "group": "zelvina"}},
        dirs={"/home/zelvina": ["venv", "gpunode17.log"]},
        commands={"rocm-smi": f"gpunode17 zelvina /home/zelvina {TOKEN} redis://:pw2@c:1\n"},
        user={"name": "zelvina", "uid": 1000, "groups": ["zelvina", "render"]},
        python={"executable": "/home/zelvina/venv/bin/python", "torch": {"imported": True}},
    )
    data["platform"]["hostname"] = "gpunode17.example.org"
    return data


def test_redact_snapshot_hides_everything_personal_in_every_section() -> None:
    environ = {"HOME": "/home/zelvina", "USER": "zelvina", "PATH": "/home/zelvina/bin:/usr/bin",
               "HF_ENDPOINT": "https://zelvina:pw3@hub.example.org", "PYTORCH_X_PW": "pw4",
               "PYTORCH_DB_PASSWORD": "pw5", "NCCL_IB_PKEY": "0x8001", "EDITOR": "vim"}
    out = redact_snapshot(_planted_snapshot(), environ)
    text = repr(out)
    for leak in ("zelvina", "gpunode17", "pw1", "pw2", "pw3", "pw4", "pw5", TOKEN):
        assert leak not in text, leak
    assert out["env"] == {
        "HF_ENDPOINT": "https://<redacted>@hub.example.org", "HOME": "~",
        "NCCL_IB_PKEY": "0x8001", "PATH": "~/bin:/usr/bin", "PYTORCH_DB_PASSWORD": REDACTED,
        "PYTORCH_X_PW": REDACTED, "USER": REDACTED,
    }
    assert out["commands"]["rocm-smi"]["stdout"] == (
        "<redacted> <redacted> ~ <redacted> redis://<redacted>@c:1\n")
    assert out["files"] == {"~/.config/x": "url https://<redacted>@h.example.org <redacted>\n"}
    assert out["paths"]["~/venv"]["owner"] == REDACTED
    assert out["dirs"] == {"~": ["venv", "<redacted>.log"]}
    assert out["python"]["executable"] == "~/venv/bin/python"
    assert out["user"] == {"name": REDACTED, "uid": 1000, "groups": [REDACTED, "render"]}
    assert out["platform"]["hostname"] == REDACTED


def test_capture_env_without_redaction_keeps_secret_named_variables_too() -> None:
    env = {"HF_TOKEN": TOKEN, "MY_PASSWORD": "x", "EDITOR": "vim", "HIP_X": "1"}
    assert capture_env(env, redact=False) == {"HF_TOKEN": TOKEN, "MY_PASSWORD": "x", "HIP_X": "1"}


@given(st.text(max_size=300), st.text(max_size=20), st.text(max_size=20))
def test_redactor_never_raises_and_is_stable(text: str, user: str, home: str) -> None:
    r = Redactor.for_account(user, "node.example.org", {"HOME": "/" + home, "USER": user})
    once = r(text)
    assert isinstance(once, str)
    assert is_secret_name(text) in (True, False)


def test_serial_numbers_and_unique_ids_of_a_real_rocm_smi_capture_are_hidden() -> None:
    text = fixture_text("rocm-smi-a-gfx942-mi300x-x4-driver6.7.0.txt")
    expected = text
    for secret in ("0x8d1457e2c20f59d2", "0xb4fa34630e85d42a", "0xe8986800e182538a",
                   "0xeff71edc82169115", "692347006052", "692347005894", "692347006047",
                   "692347005902"):
        assert secret in expected
        expected = expected.replace(secret, "<serial>")
    assert Redactor()(text) == expected
    assert Redactor(ids=False)(text) == text


def test_asic_serial_in_amd_smi_json_is_hidden_keeping_the_json_valid() -> None:
    text = fixture_text("amd-smi-static-json-gpu_data-envelope-gfx1101-rx7800xt-TRUNCATED.txt")
    assert Redactor()(text) == text.replace('"asic_serial": "0x4162405E51BB99B0"',
                                            '"asic_serial": "<serial>"')


def test_the_deepest_home_folder_wins() -> None:
    r = Redactor(home_dirs=("/home/zelvina", "/home/zelvina/work/"))
    assert r("/home/zelvina/work/a /home/zelvina/b") == "~/a ~/b"


def test_a_home_of_slash_is_no_home_but_a_short_one_is() -> None:
    r = Redactor.for_account("nobody", "h", {"HOME": "/"})
    assert r("/usr/lib /") == "/usr/lib /"
    assert Redactor(home_dirs=("/u",))("/u/x /ux") == "~/x /ux"


def test_a_blank_account_variable_names_no_account() -> None:
    r = Redactor.for_account("zelvina", "h", {"USER": "  ", "LOGNAME": ""})
    assert r("/home/zelvina/a /home/other/b") == "~/a /home/<user>/b"


def test_report_environment_values_hide_secrets_unless_redaction_is_off() -> None:
    r = Redactor.for_account("zelvina", "h", {"HOME": "/home/zelvina"})
    assert r.env_value("HF_TOKEN", "abc") == REDACTED
    assert r.env_value("PYTHONPATH", "/home/zelvina/src") == "~/src"
    off = Redactor.for_account("zelvina", "h", {"HOME": "/home/zelvina"}, enabled=False)
    assert off.env_value("HF_TOKEN", "abc") == "abc"
    assert off.env_value("PYTHONPATH", "/home/zelvina/src") == "/home/zelvina/src"
