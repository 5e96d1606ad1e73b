"""The layers are a tested rule (docs/architecture.md): who may import whom, where child
processes start, and what the console entry point loads.

The rules are read from the source with `ast` (import-linter cannot follow the setuptools
package-dir mapping that makes checks/ and tuners/ subpackages of rocmdoctor). Imports
under `if TYPE_CHECKING:` are for annotations only and do not count.
"""

from __future__ import annotations

import ast
import functools
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from tests.helpers import repo_root

ROOT = Path(repo_root())
FOLDERS = {"doctor": "rocmdoctor", "checks": "rocmdoctor.checks", "tuners": "rocmdoctor.tuners"}

# What each part may import of rocmdoctor (a part always may import itself). "root" is the
# package itself (`from rocmdoctor import __version__`), "schemas" the leaf that names formats.
LEAVES = {"root", "schemas"}
ALLOWED: dict[str, set[str]] = {
    "checks": {"model", "host", "facts", "fixes", "kb"} | LEAVES,
    "fixes": {"model", "host", "facts", "kb"} | LEAVES,
    "render": {"model", "fleet", "redact"} | LEAVES,
    "kb": {"model"},
    "facts": {"host", "kb", "model"} | LEAVES,
    "host": {"redact"} | LEAVES,
    "model": set(),
    "redact": set(),
    "schemas": set(),
    "root": set(),
    "fleet": {"model"} | LEAVES,
    "runner": {"facts", "host", "model"} | LEAVES,
    "explain": {"kb", "facts", "fixes", "host", "model", "redact"} | LEAVES,
    "tuners.bench": {"host", "facts", "kb", "model", "redact"} | LEAVES,
    "tuners": {"tuners.bench", "host", "facts", "kb", "model", "redact"} | LEAVES,
    "__main__": {"cli"},
    "cli": {"checks", "render", "host", "facts", "fixes", "kb", "model", "runner", "explain",
            "fleet", "redact", "tuners", "tuners.bench"} | LEAVES,
}
# Modules that run by path in the Python that trains, without rocmdoctor importable there:
# they start their own children (the ranks), inside the process group host/process.py gave them.
STANDALONE = {"rocmdoctor.host.collectives_launch", "rocmdoctor.host.collectives_rank",
              "rocmdoctor.host.probe_child", "rocmdoctor.host.deep_telemetry"}
RUNNER = "rocmdoctor.host.process"


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (or package), absolute
    line: int


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    base = FOLDERS[rel.parts[0]]
    parts = [p for p in rel.with_suffix("").parts[1:] if p != "__init__"]
    return ".".join([base, *parts])


def part_of(module: str) -> str:
    """The layer a rocmdoctor module belongs to."""
    parts = module.split(".")[1:]
    if not parts:
        return "root"
    if parts[0] == "tuners":
        return "tuners.bench" if len(parts) > 1 and parts[1] == "bench" else "tuners"
    return parts[0]


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(source: str, module: str) -> list[Import]:
    """Every runtime import in a module's source, as absolute names."""
    tree = ast.parse(source)
    typing_only = _type_checking_lines(tree)
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(Import(module, node.module, node.lineno))
            # `from rocmdoctor.tuners import study` imports the module rocmdoctor.tuners.study
            found += [Import(module, f"{node.module}.{alias.name}", node.lineno)
                      for alias in node.names if node.module.startswith("rocmdoctor")]
    return found


def all_sources() -> dict[str, str]:
    out = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            out[module_name(path)] = path.read_text(encoding="utf-8")
    return out


def violations(sources: dict[str, str]) -> list[str]:
    """Every import that breaks a rule, as 'module:line imports target (rule)'."""
    known = set(sources) | {".".join(m.split(".")[:-1]) for m in sources}
    bad = []
    for module, source in sources.items():
        part = part_of(module)
        found = imports_of(source, module)
        # `from rocmdoctor.facts import torch` is an import of rocmdoctor.facts.torch: the
        # package on the same line is not counted on its own.
        deeper = {(i.line, i.target.rpartition(".")[0]) for i in found if i.target in known}
        for imp in found:
            if (imp.line, imp.target) in deeper:
                continue
            where = f"{module}:{imp.line} imports {imp.target}"
            top = imp.target.split(".")[0]
            if top in ("subprocess",) and module != RUNNER and module not in STANDALONE:
                bad.append(f"{where} (child processes start through {RUNNER})")
            if top in ("checks", "tuners", "doctor"):
                bad.append(f"{where} (import from rocmdoctor...)")
            if top != "rocmdoctor" or imp.target not in known:
                continue  # another package, or a name imported from a module
            target_part = part_of(imp.target)
            if target_part == part:
                if part == "checks" and not module.endswith(".registry") and \
                        imp.target not in ("rocmdoctor.checks",) and imp.target != module:
                    bad.append(f"{where} (a check never imports another check)")
                continue
            if target_part not in ALLOWED.get(part, set()):
                bad.append(f"{where} ({part} may import only "
                           f"{', '.join(sorted(ALLOWED.get(part, set()))) or 'nothing'})")
    return bad


def test_the_code_keeps_every_layer_rule() -> None:
    assert violations(all_sources()) == []


@pytest.mark.parametrize(("module", "source", "rule"), [
    ("rocmdoctor.checks.kfd_access", "from rocmdoctor.checks.amdgpu_driver import X\n",
     "a check never imports another check"),
    ("rocmdoctor.render.report", "from rocmdoctor.facts.torch import torch_info\n",
     "render may import only"),
    ("rocmdoctor.kb.gfx", "def f():\n    from rocmdoctor.facts import topology\n",
     "kb may import only model"),
    ("rocmdoctor.facts.pci", "from rocmdoctor.checks import registry\n", "facts may import"),
    ("rocmdoctor.host.live", "from rocmdoctor.facts.platform import is_wsl\n",
     "host may import only"),
    ("rocmdoctor.tuners.bench.worker", "from rocmdoctor.tuners import study\n",
     "tuners.bench may import only"),
    ("rocmdoctor.tuners.tune", "from rocmdoctor.render.terminal import MARKS\n",
     "tuners may import only"),
    ("rocmdoctor.tuners.knobs", "import subprocess\n", "child processes start through"),
    ("rocmdoctor.checks.x", "from checks.registry import all_checks\n", "import from rocmdoctor"),
    ("rocmdoctor.facts.container", "from rocmdoctor.fixes import passthrough_fix\n",
     "facts may import"),
    ("rocmdoctor.fixes", "from rocmdoctor.checks import registry\n", "fixes may import only"),
])
def test_a_broken_rule_is_caught(module: str, source: str, rule: str) -> None:
    sources = all_sources()
    sources[module] = source
    found = [v for v in violations(sources) if v.startswith(module + ":")]
    assert len(found) == 1 and rule in found[0], found


def test_imports_for_annotations_only_do_not_count() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from rocmdoctor.host import Host\n")
    assert imports_of(source, "rocmdoctor.model") == [
        Import("rocmdoctor.model", "typing", 1),
    ]


# --- checks read facts, not the host ------------------------------------------------------------
# A check (and a fix text checks share, in fixes.py) learns about the machine only from a reader
# in facts/ (docs/architecture.md, "Where a fact is read"): it hands its Host on to readers and
# touches nothing of it, so each fact has one reader and the snapshot contract's keys are
# spelled in facts/ only. Every public member of
# a Host counts (files, commands, stat, listdir, glob, statfs, the environment, the account,
# the platform, the probe, the memo), and so do the modules that reach the machine without it.
READS_THROUGH_FACTS = {"checks", "fixes"}
MACHINE_MODULES = {"os", "pathlib", "glob", "shutil", "io", "subprocess", "socket", "ctypes",
                   "platform", "pwd", "grp", "tempfile", "psutil"}


@functools.lru_cache(maxsize=1)
def _modules() -> frozenset[str]:
    return frozenset(all_sources())


@functools.lru_cache(maxsize=1)
def _host_members() -> frozenset[str]:
    """Every public name a Host answers to: its methods and properties, and the attributes
    the Host classes set on themselves (`self.recording = ...`)."""
    from rocmdoctor.host import Host
    from rocmdoctor.host.live import LiveHost
    from rocmdoctor.host.snapshot import SnapshotHost

    names = {n for cls in (Host, LiveHost, SnapshotHost) for n in dir(cls)}
    for name in ("base", "live", "snapshot"):
        tree = ast.parse((ROOT / "doctor" / "host" / f"{name}.py").read_text(encoding="utf-8"))
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef) and cls.name in ("Host", "LiveHost", "SnapshotHost"):
                names |= {n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name) and n.value.id == "self"
                          and isinstance(n.ctx, ast.Store)}
    return frozenset(n for n in names if not n.startswith("_"))


def _names_host(annotation: ast.expr) -> bool:
    return re.search(r"\bHost\b", ast.unparse(annotation)) is not None


def _host_names(tree: ast.AST) -> set[str]:
    """The names a Host is bound to: `host`, and every parameter annotated Host."""
    names = {"host"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                if arg.annotation is not None and _names_host(arg.annotation):
                    names.add(arg.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                _names_host(node.annotation):
            names.add(node.target.id)
    return names


def host_reads(source: str, module: str) -> list[str]:
    """Where a check reads the machine itself, as 'module:line what (rule)'."""
    if part_of(module) not in READS_THROUGH_FACTS:
        return []
    tree = ast.parse(source)
    hosts, members, modules = _host_names(tree), _host_members(), _modules()
    bad = []
    for node in ast.walk(tree):
        where = f"{module}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in hosts and node.attr in members:
            bad.append(f"{where} reads {node.value.id}.{node.attr} (ask a reader in facts/)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("open", "getattr") and (node.func.id == "open" or (
                    node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in hosts)):
            bad.append(f"{where} calls {node.func.id}() (ask a reader in facts/)")
    for imp in imports_of(source, module):
        top = imp.target.split(".")[0]
        if top in MACHINE_MODULES or (imp.target.startswith("rocmdoctor.host.")
                                      and imp.target in modules):
            bad.append(f"{module}:{imp.line} imports {imp.target} (ask a reader in facts/)")
    return bad


def test_checks_read_the_machine_only_through_facts() -> None:
    found = [v for module, source in all_sources().items() for v in host_reads(source, module)]
    assert found == []


A_CHECK = "rocmdoctor.checks.planted"


@pytest.mark.parametrize(("source", "read"), [
    ("def run(self, host: Host) -> None:\n    return host.read_file('/proc/cmdline')\n",
     "host.read_file"),
    ("def run(self, host):\n    return host.run(['modinfo', '-n', 'amdgpu'])\n", "host.run"),
    ("def applies(self, h: 'Host'):\n    return h.env.get('HIP_VISIBLE_DEVICES')\n", "h.env"),
    ("def run(self, host: Host):\n    info = host.stat('/dev/kfd')\n", "host.stat"),
    ("def run(self, host: Host):\n    return host.listdir('/sys/class/kfd')\n", "host.listdir"),
    ("def run(self, host: Host):\n    return host.exists('/dev/dxg')\n", "host.exists"),
    ("def run(self, host: Host):\n    return host.python()\n", "host.python"),
    ("def run(self, host: Host):\n    return host.user.groups\n", "host.user"),
    ("def run(self, host: Host):\n    return host.platform.kernel_release\n",
     "host.platform"),
    ("def run(self, host: Host):\n    return host.known('facts:libload')\n", "host.known"),
    ("def run(self, host: Host):\n    return getattr(host, 'env')\n", "getattr()"),
    ("def run(self, host):\n    return open('/etc/group').read()\n", "open()"),
    ("import os\nHOME = os.environ.get('HOME')\n", "imports os"),
    ("from pathlib import Path\n", "imports pathlib"),
    ("from rocmdoctor.host.probe import run_probe\n", "imports rocmdoctor.host.probe"),
])
def test_a_check_that_reads_the_host_is_caught(source: str, read: str) -> None:
    found = host_reads(source, A_CHECK)
    assert len(found) == 1 and read in found[0] and "ask a reader in facts/" in found[0], found


def test_a_check_that_asks_a_reader_passes() -> None:
    source = ("from rocmdoctor.facts.boot import kernel_cmdline\n"
              "from rocmdoctor.host import Host, PathInfo\n"
              "def run(self, host: Host, info: PathInfo) -> bool:\n"
              "    return bool(kernel_cmdline(host).nomodeset and info.readable)\n")
    assert host_reads(source, A_CHECK) == []
    # outside checks/ the readers themselves read the host
    assert host_reads("def f(host):\n    return host.read_file('/proc/cmdline')\n",
                      "rocmdoctor.facts.boot") == []


# facts/rocm_version.py's installed_rocm hands over to facts/rocm_root.py, which reads the
# versions through rocm_version: explain still asks the older name.
KNOWN_CIRCLES = [["rocmdoctor.facts.rocm_root", "rocmdoctor.facts.rocm_version"]]


def import_circles(sources: dict[str, str]) -> list[list[str]]:
    """Every set of modules that import each other, round (imports inside functions count)."""
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        found = imports_of(source, module)
        deeper = {(i.line, i.target.rpartition(".")[0]) for i in found if i.target in known}
        graph[module] = {i.target for i in found if i.target in known and i.target != module
                         and (i.line, i.target) not in deeper}
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            here = todo.pop()
            if here not in seen:
                seen.add(here)
                todo += graph.get(here, ())
        reach[start] = seen
    circles = {tuple(sorted({m, *(o for o in reach[m] if m in reach[o])}))
               for m in graph if m in reach[m]}
    return sorted(list(c) for c in circles)


def test_no_modules_import_each_other() -> None:
    assert import_circles(all_sources()) == KNOWN_CIRCLES


def test_an_import_circle_is_caught() -> None:
    sources = all_sources()
    sources["rocmdoctor.facts.machine"] += "\ndef f():\n    from rocmdoctor.facts import collect_env\n"
    sources["rocmdoctor.facts.collect_env"] += "\ndef g():\n    from rocmdoctor.facts import machine\n"
    assert ["rocmdoctor.facts.collect_env", "rocmdoctor.facts.machine"] in import_circles(sources)


def test_every_fix_text_in_fixes_is_shared_by_checks() -> None:
    """fixes.py holds what several checks say; a fix one check gives lives in that check."""
    sources = all_sources()
    tree = ast.parse(sources["rocmdoctor.fixes"])
    public = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
              and not n.name.startswith("_")]
    users = {name: sorted(m for m, src in sources.items() if part_of(m) == "checks" and any(
        i.target == f"rocmdoctor.fixes.{name}" for i in imports_of(src, m))) for name in public}
    assert public and all(len(u) >= 2 for u in users.values()), users


def _loaded_by(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                           "print('\\n'.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in ("torch", "optuna")
                  or m.startswith("rocmdoctor.tuners") or m.startswith("rocmdoctor.checks"))


def test_the_entry_point_and_its_help_load_no_tuner_torch_or_optuna() -> None:
    assert _heavy(_loaded_by("import rocmdoctor.cli")) == []
    help_run = ("from rocmdoctor.cli.app import app\n"
                "try:\n    app(args=['--help'])\nexcept SystemExit:\n    pass")
    assert _heavy(_loaded_by(help_run)) == []
    # `check --help` loads its own command module and nothing of the tuner
    check_help = help_run.replace("['--help']", "['check', '--help']")
    loaded = _loaded_by(check_help)
    assert "rocmdoctor.cli.check" in loaded and _heavy(loaded) == []


# Run by path in the Python that trains, where rocmdoctor may not be importable; they share
# host/child_setup.py by loading it by path from their own folder.
CHILD_SCRIPTS = ("rocmdoctor.host.probe_child", "rocmdoctor.host.libload_child",
                 "rocmdoctor.host.child_setup")


def test_the_child_scripts_import_nothing_of_rocmdoctor() -> None:
    sources = all_sources()
    found = [f"{i.module}:{i.line} imports {i.target}" for m in CHILD_SCRIPTS
             for i in imports_of(sources[m], m) if i.target.split(".")[0] == "rocmdoctor"]
    assert found == []


def test_die_with_parent_and_the_stdout_hand_over_are_written_once() -> None:
    """prctl(PR_SET_PDEATHSIG) and stdout's hand-over (dup2 of stderr onto stdout) are made in
    host/child_setup.py; every child asks it."""
    found: dict[str, set[str]] = {"prctl": set(), "dup2": set()}
    for module, source in all_sources().items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr in found:
                found[node.attr].add(module)
    assert found["prctl"] == {"rocmdoctor.host.child_setup"}
    assert found["dup2"] == {"rocmdoctor.host.child_setup"}


def test_the_renderers_load_nothing_of_the_machine() -> None:
    """Renderers are pure functions of results and gathered facts: loading every one of them
    loads no host, facts or checks module (they name the facts' types for annotations only)."""
    renderers = sorted(m for m in all_sources() if part_of(m) == "render" and m.count(".") > 1)
    loaded = _loaded_by("\n".join(f"import {m}" for m in renderers))
    assert "rocmdoctor.render.report_facts" in loaded and "rocmdoctor.render.machine" in loaded
    assert sorted(m for m in loaded if m.startswith(("rocmdoctor.host", "rocmdoctor.facts",
                                                     "rocmdoctor.checks"))) == []


def _help_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rocmdoctor", "--help"], capture_output=True,
                   check=True, timeout=60)
    return time.perf_counter() - start


def test_help_answers_within_a_third_of_a_second() -> None:
    runs = [_help_seconds() for _ in range(5)]
    # The fastest of five: the machine's own noise (other processes) only slows a run down.
    assert min(runs) <= 0.3, f"rocmdoctor --help took {statistics.median(runs):.3f} s (median)"


def test_every_command_description_is_the_commands_own() -> None:
    from rocmdoctor.cli.app import COMMANDS, load_command

    for name, spec in COMMANDS.items():
        command = load_command(name)
        own: Optional[str] = command.help
        first = " ".join((own or "").split("\n\n")[0].split())
        assert first == spec.help, name
