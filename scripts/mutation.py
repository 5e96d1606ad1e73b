#!/usr/bin/env python3
"""Mutation testing over every wing, each mutant tested by the tests that run its code.

    python scripts/mutation.py map                      # the coverage map (about 5 min, 2 cores)
    python scripts/mutation.py run --sample 20 --seed 28 [wing ...]
    python scripts/mutation.py report                   # the table of the last run

A mutant is one change made by one of cosmic-ray's operators (pip install cosmic-ray: numbers
+1/-1, comparisons, binary and boolean operators, break/continue, exceptions, decorators,
loops) or by the two literal operators below, which cosmic-ray lacks: a string literal
wrapped in "XX" (a dict key, an environment-variable name, a pattern no longer matches) or
cut by its last character (a regex piece, a version digit, a table value).

Each mutant's tests are picked by coverage, not by file name: `map` runs the suite (e2e and
GPU tests left out) once under coverage.py with one dynamic context per test
(pytest-cov's --cov-context=test), which maps each line to the tests that ran it. Code that
runs at import (a table, a class body, a default) has no test context; for such a line the
tests are those that run any line reading the names it defines, in any module, following the
module's own constants that are built from it (GFX_TARGETS from _t(...), _R714 from _P713).
A file that only runs in a child process (probe_child.py, run by path; child_setup.py, loaded
by path by the child scripts) gets every test of the test modules that name it.

Everything runs in a copy of the working tree ($MUTATION_DIR, default
/tmp/rocmdoctor-mutation), `rocmdoctor` imported from it; the checkout is never touched. A
mutant whose tests fail or pass their time limit is killed; one whose tests all pass
survived; one on a line no test runs is counted apart ("no tests") and not drawn. The sample
is drawn per wing with random.Random(seed) from the mutants in source order, so the same
code and seed draw the same mutants. docs/testing.md ("Mutation testing") records a run.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
WORK = Path(os.environ.get("MUTATION_DIR", "/tmp/rocmdoctor-mutation"))
WINGS: dict[str, tuple[str, ...]] = {
    "checks": ("checks/*.py",),
    "facts": ("doctor/facts/*.py",),
    "kb": ("doctor/kb/*.py",),
    "host": ("doctor/host/*.py",),
    "runner": ("doctor/runner.py", "checks/registry.py"),
    "explain": ("doctor/explain/*.py",),
    "render": ("doctor/render/*.py",),
    "tuners": ("tuners/*.py",),
    "bench": ("tuners/bench/*.py",),
}
KB_GOLDEN_TEST = "tests/test_kb_tables_golden.py::test_the_tables_of_each_kb_module"
TUNER_GOLDEN_TEST = "tests/test_kb_tables_golden.py::test_the_tables_of_the_tuners_data_modules"
TUNER_TABLES = ("tuners/knobs.py", "tuners/bench/spec.py")  # held whole the same way
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
          "--no-header", "-o", "addopts=", "-m", "not gpu"]


# --- the literal operators -------------------------------------------------------------------
def _string_operator() -> Any:
    import parso
    from cosmic_ray.operators.operator import Example, Operator

    literal = re.compile(r"(?is)([rbu]*)('''|\"\"\"|'|\")(.*)\2")

    def docstring(node: Any) -> bool:
        parent = node.parent.parent if node.parent.type == "strings" else node.parent
        return bool(parent.type == "simple_stmt")

    def variants(node: Any) -> list[str]:
        if node.type != "string":
            return []
        m = literal.fullmatch(node.value)
        if m is None or "f" in m.group(1).lower() or docstring(node):
            return []
        prefix, quote, body = m.groups()
        out = [f"{prefix}{quote}XX{body}XX{quote}"]
        cut = body[:-2] if body.endswith(tuple("\\" + c for c in "\\'\"abfnrtv0")) else body[:-1]
        if body and not cut.endswith("\\"):
            out.append(f"{prefix}{quote}{cut}{quote}")
        return [v for v in out if _evaluates(v)]

    class ChangeString(Operator):  # type: ignore[misc]
        """A string literal wrapped in XX, or cut by its last character."""

        def mutation_positions(self, node: Any) -> Iterator[tuple[Any, Any]]:
            for _ in variants(node):
                yield (node.start_pos, node.end_pos)

        def mutate(self, node: Any, index: int) -> Any:
            return parso.python.tree.String(variants(node)[index], node.start_pos, node.prefix)

        @classmethod
        def examples(cls) -> tuple[Any, ...]:
            return (Example('x = "ab"', 'x = "XXabXX"'), Example('x = "ab"', 'x = "a"', 1))

    return ChangeString()


def _evaluates(literal: str) -> bool:
    try:
        ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return False
    return True


def operators() -> dict[str, Any]:
    import cosmic_ray.plugins as plugins

    ops = {name: plugins.get_operator(name)() for name in plugins.operator_names()
           if not plugins.get_operator(name).arguments()}
    ops["literal/ChangeString"] = _string_operator()
    return ops


# --- mutants ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutant:
    wing: str
    path: str  # relative to the root
    line: int
    end_line: int
    operator: str
    occurrence: int


def wing_files(wing: str) -> list[str]:
    files = sorted({str(p.relative_to(ROOT)) for pattern in WINGS[wing]
                    for p in ROOT.glob(pattern)})
    return [f for f in files if not f.endswith("__init__.py") or (ROOT / f).stat().st_size > 400]


def mutants_of(wing: str, path: str, ops: dict[str, Any]) -> list[Mutant]:
    from cosmic_ray.ast import ast_nodes, get_ast_from_path

    tree = get_ast_from_path(ROOT / path)
    out = []
    for name, op in ops.items():
        positions = [(s, e) for node in ast_nodes(tree) for s, e in op.mutation_positions(node)]
        out += [Mutant(wing, path, s[0], e[0], name, i) for i, (s, e) in enumerate(positions)]
    return out


def mutated_code(m: Mutant, ops: dict[str, Any], root: Path = ROOT) -> Optional[str]:
    from cosmic_ray.mutating import mutate_code

    code = mutate_code((root / m.path).read_text(encoding="utf-8"), ops[m.operator],
                       m.occurrence)
    if code is None:
        return None
    try:
        compile(code, m.path, "exec")
    except SyntaxError:
        return None
    return str(code)


# --- which tests run a line --------------------------------------------------------------------
class CoverageMap:
    """Line -> the tests that ran it, from the map run; names read at import followed."""

    def __init__(self, work: Path) -> None:
        from coverage import CoverageData

        self.work = work
        data = CoverageData(basename=str(work / ".coverage-map"))
        data.read()
        self.lines: dict[str, dict[int, set[str]]] = {}
        mapped = work / "map-root.txt"  # where the map ran (a map copied from another run)
        bases = [mapped.read_text(encoding="utf-8").strip()] if mapped.exists() else []
        for measured in data.measured_files():
            rel = _relative(measured, [*bases, str(work), str(ROOT)])
            if rel is None:
                continue
            by_line = data.contexts_by_lineno(measured)
            # A parametrized test is run whole (test_x[a b] is no argument pytest takes back).
            self.lines[rel] = {n: {c.split("|")[0].split("[")[0] for c in ctx if c}
                               for n, ctx in by_line.items()}
        self.durations: dict[str, float] = json.loads(
            (work / "durations.json").read_text(encoding="utf-8"))
        self._readers: dict[str, list[tuple[str, int]]] = {}
        self._scopes: dict[str, _Module] = {}
        self._import_time: dict[tuple[str, frozenset[str]], set[str]] = {}

    def module(self, path: str) -> _Module:
        if path not in self._scopes:
            self._scopes[path] = _Module(ROOT / path)
        return self._scopes[path]

    def readers(self, name: str) -> list[tuple[str, int]]:
        """Every (file, line) inside a function that reads `name`."""
        if not self._readers:
            for path in self.lines:
                for n, line in self.module(path).reads:
                    self._readers.setdefault(n, []).append((path, line))
        return self._readers.get(name, [])

    def tests_for(self, m: Mutant) -> set[str]:
        tests: set[str] = set()
        for line in range(m.line, m.end_line + 1):
            tests |= self.lines.get(m.path, {}).get(line, set())
        tests |= self.child_tests(m.path)
        mod = self.module(m.path)
        if not mod.in_function(m.line):
            tests |= self.import_time_tests(m.path, frozenset(mod.defined_at(m.line)))
            if m.path.startswith("doctor/kb/"):
                # every kb table is held whole by its golden file; the test reads the tables
                # through getattr, which no name-reading map sees
                tests.add(KB_GOLDEN_TEST)
            elif m.path in TUNER_TABLES:
                tests.add(TUNER_GOLDEN_TEST)
        return tests

    def child_tests(self, path: str) -> set[str]:
        """For a file that runs in a child process (a script run by path, or a file such a
        script loads by path), whose lines coverage does not see: every test of the test
        modules that name it (its module name, or the constant holding its path), e2e ones
        included."""
        if not hasattr(self, "_children"):
            self._children = child_scripts(self.lines)
        names = self._children.get(path)
        if not names:
            return set()
        word = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
        # every test function, the e2e ones too (the map's run leaves those out, and they are
        # the ones that start the child); GPU tests are deselected when run
        return {test for text, functions in test_modules().values() if word.search(text)
                for test in functions}

    def import_time_tests(self, path: str, defined: frozenset[str]) -> set[str]:
        """The tests that run a line reading what a top-level statement defines, and the
        tests whose own body reads it (a test comparing two tables reads them itself, and
        coverage measures the package, not the tests)."""
        key = (path, defined)
        if key not in self._import_time:
            tests: set[str] = set()
            for name in self.affected(self.module(path).affected(set(defined))):
                for where, line in self.readers(name):
                    tests |= self.lines.get(where, {}).get(line, set())
                tests |= self.test_readers().get(name, set())
            self._import_time[key] = tests
        return self._import_time[key]

    def test_readers(self) -> dict[str, set[str]]:
        """Name -> the tests (of the map's run: no e2e or GPU test) whose body reads it."""
        if not hasattr(self, "_test_readers"):
            self._test_readers: dict[str, set[str]] = {}
            # the tests the map's run collected (a test that runs no package line has no
            # coverage context); a map from before collected.json: the tests with one
            listed = self.work / "collected.json"
            ran = set(json.loads(listed.read_text(encoding="utf-8"))) if listed.exists() else {
                t for by_line in self.lines.values() for ts in by_line.values() for t in ts}
            for _, functions in test_modules().values():
                for test, node in functions.items():
                    if test not in ran:
                        continue
                    for sub in ast.walk(node):
                        name = _read_name(sub)
                        if name:
                            self._test_readers.setdefault(name, set()).add(test)
        return self._test_readers

    def affected(self, names: set[str]) -> set[str]:
        """The names built at import from these, in any module (KNOWN_MESSAGES from
        errors_torch's TORCH): a table read only by another table reaches its readers."""
        names = set(names)
        grew = True
        while grew:
            before = len(names)
            for path in self.lines:
                names |= self.module(path).affected(names)
            grew = len(names) > before
        return names


@functools.cache
def test_modules() -> dict[str, tuple[str, dict[str, ast.FunctionDef]]]:
    """Each test module's text and its test functions by id ("tests/x.py::test_y"), read once."""
    found: dict[str, tuple[str, dict[str, ast.FunctionDef]]] = {}
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        found[path.name] = (text, {f"tests/{path.name}::{node.name}": node
                                   for node in ast.parse(text).body
                                   if isinstance(node, ast.FunctionDef)
                                   and node.name.startswith("test")})
    return found


_SCRIPT_NAME = re.compile(r"\w+\.py")


def child_scripts(files: Any) -> dict[str, set[str]]:
    """Package file -> the names that point at it, for each file a child process runs: "X.py"
    joined to the folder of `__file__` (probe.py's CHILD_SCRIPT; a child script loading
    child_setup.py by path). The names are its module name and the top-level constant that
    holds its path; a file loaded by a child script also gets that script's names."""
    found: dict[str, set[str]] = {}
    loaded_by: dict[str, set[str]] = {}
    for path in sorted(files):
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        top = {id(s) for s in tree.body}
        for stmt in ast.walk(tree):
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                continue
            nodes = list(ast.walk(stmt))
            if not any(isinstance(n, ast.Name) and n.id == "__file__" for n in nodes):
                continue
            for n in nodes:
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and \
                        _SCRIPT_NAME.fullmatch(n.value):
                    target = str(Path(path).parent / n.value)
                    names = found.setdefault(target, {Path(n.value).stem})
                    if id(stmt) in top:
                        names |= _defines(stmt)
                    loaded_by.setdefault(target, set()).add(path)
    grew = True
    while grew:
        grew = False
        for target, loaders in loaded_by.items():
            for loader in loaders:
                extra = found.get(loader, set()) - found[target]
                if extra:
                    found[target] |= extra
                    grew = True
    return found


def _relative(measured: str, bases: list[str]) -> Optional[str]:
    real = os.path.realpath(measured)
    for base in bases:
        if real.startswith(base + os.sep):
            return real[len(base) + 1:]
    return None


class _Module:
    """Which lines of a module are inside functions, what each top-level statement defines,
    and which names the function bodies read."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.function_lines: set[int] = set()
        self.reads: list[tuple[str, int]] = []
        self.top: list[tuple[int, int, set[str], set[str]]] = []  # lines, defines, reads
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = node.body if isinstance(node.body, list) else [node.body]
                for stmt in body:
                    self.function_lines.update(range(stmt.lineno, (stmt.end_lineno or 0) + 1))
                    for sub in ast.walk(stmt):
                        name = _read_name(sub)
                        if name:
                            self.reads.append((name, sub.lineno))
        for stmt in tree.body:
            self.top.append((stmt.lineno, stmt.end_lineno or stmt.lineno, _defines(stmt),
                             {n for sub in ast.walk(stmt) if (n := _read_name(sub))}))

    def in_function(self, line: int) -> bool:
        return line in self.function_lines

    def defined_at(self, line: int) -> set[str]:
        """The names the top-level statement holding this line defines."""
        return {n for a, b, defines, _ in self.top if a <= line <= b for n in defines}

    def affected(self, names: set[str]) -> set[str]:
        """These names and those the module's top-level statements build from them."""
        names = set(names)
        grew = True
        while grew:
            grew = False
            for _, _, defines, reads in self.top:
                if reads & names and not defines <= names:
                    names |= defines
                    grew = True
        return names


def _read_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.attr
    return None


def _defines(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


# --- the copy, the map, a run ----------------------------------------------------------------
def make_copy(work: Path) -> dict[str, str]:
    """The working tree copied to `work`, `rocmdoctor` mapped onto it as setuptools does; the
    environment that imports it from there."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    for f in files:
        if (ROOT / f).is_file():
            (work / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, work / f)
    site = work / ".site" / "rocmdoctor"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    for entry in (work / "doctor").iterdir():
        (site / entry.name).symlink_to(entry)
    (site / "checks").symlink_to(work / "checks")
    (site / "tuners").symlink_to(work / "tuners")
    env = dict(os.environ, PYTHONPATH=str(work / ".site"), PYTHONDONTWRITEBYTECODE="1")
    probe = "import rocmdoctor.checks as c; print(c.__file__)"
    where = subprocess.run([sys.executable, "-c", probe], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    if not os.path.realpath(where.strip()).startswith(str(work)):
        sys.exit(f"rocmdoctor is not imported from the copy: {where.strip()}")
    return env


def build_map(work: Path) -> None:
    env = make_copy(work)
    env["COVERAGE_FILE"] = str(work / ".coverage-map")
    argv = [sys.executable, *PYTEST[:-2], "-m", "not gpu and not e2e", "--cov=rocmdoctor",
            "--cov-context=test", "--cov-report=", "--durations=0"]
    argv.remove("-x")
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    (work / "map.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    (work / "map-root.txt").write_text(str(work), encoding="utf-8")
    failing = sorted(set(re.findall(r"^FAILED (\S+)", done.stdout, re.M)))
    (work / "baseline.json").write_text(json.dumps({"failing": failing, "passing": []}),
                                        encoding="utf-8")
    durations: dict[str, float] = {}
    for line in done.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+)", line)
        if m:
            test = m.group(2).split("[")[0]
            durations[test] = durations.get(test, 0.0) + float(m.group(1))
    (work / "durations.json").write_text(json.dumps(durations), encoding="utf-8")
    collect = subprocess.run([sys.executable, *PYTEST[:-2], "-m", "not gpu and not e2e",
                              "--collect-only"], cwd=work, env=env, capture_output=True,
                             text=True)
    collected = sorted({ln.split("[")[0] for ln in collect.stdout.splitlines() if "::" in ln})
    (work / "collected.json").write_text(json.dumps(collected), encoding="utf-8")
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:])


def draw(wing: str, ops: dict[str, Any], cover: CoverageMap, sample: int,
         seed: int) -> tuple[list[tuple[Mutant, set[str]]], int, int]:
    """(the drawn mutants with their tests, the mutants of the wing, those no test runs)."""
    population = [m for f in wing_files(wing) for m in mutants_of(wing, f, ops)]
    covered = []
    for m in population:
        tests = cover.tests_for(m)
        if tests:
            covered.append((m, tests))
    rng = random.Random(f"{seed}:{wing}")
    order = rng.sample(range(len(covered)), len(covered))
    drawn = []
    for i in order:  # a draw that does not compile (a cut string) is passed over
        if len(drawn) == sample:
            break
        if mutated_code(covered[i][0], ops) is not None:
            drawn.append(covered[i])
    return drawn, len(population), len(population) - len(covered)


@functools.cache
def sandbox() -> tuple[str, ...]:
    """The prefix that runs a mutant's tests in a PID namespace of their own (unshare(1), as
    root or with user namespaces): a mutant can signal every process it sees (process.py's
    tagged() matching every process, seed 31: `== tag` made `is not tag`, which SIGKILLed the
    whole machine's processes) and must end only its own tests. Empty where unshare cannot."""
    prefix = ("unshare", "--pid", "--fork", "--kill-child", "--mount-proc")
    try:
        ok = shutil.which("unshare") is not None and subprocess.run(
            [*prefix, "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        print("warning: no PID namespace (unshare): a mutant that signals every process can "
              "end this run", file=sys.stderr)
    return prefix if ok else ()


def _fails_unmutated(test: str, work: Path, env: dict[str, str]) -> bool:
    """Whether a test that killed a mutant fails on the code as it is (then it kills nothing:
    it is left out of every mutant's tests). Each test is asked once a run directory."""
    path = work / "baseline.json"
    known = json.loads(path.read_text(encoding="utf-8"))
    if test in known["failing"] or test in known["passing"]:
        return test in known["failing"]
    done = subprocess.run([*sandbox(), sys.executable, *PYTEST, test], cwd=work, env=env,
                          capture_output=True, text=True)
    known["failing" if done.returncode else "passing"].append(test)
    path.write_text(json.dumps(known), encoding="utf-8")
    return done.returncode != 0


def _collects_unmutated(args: Path, work: Path, env: dict[str, str]) -> bool:
    """Whether the tests of an argument file collect on the code as it is (the mutant already
    reverted): then a usage error under the mutant was the mutant's doing."""
    done = subprocess.run([sys.executable, *PYTEST, "--collect-only", f"@{args}"], cwd=work,
                          env=env, capture_output=True, text=True)
    return done.returncode == 0


def run_one(m: Mutant, tests: set[str], ops: dict[str, Any], work: Path,
            env: dict[str, str], timeout_floor: float) -> dict[str, Any]:
    result = _run_one(m, tests, ops, work, env, timeout_floor)
    while result["status"] == "killed" and result["by"] and "::" in result["by"][0] \
            and not result["by"][0].startswith("("):
        by = result["by"][0].split("[")[0]
        # The test must fail on the mutant alone too: one that fails only after others (a
        # test that leaks state into the next) proves nothing about the mutant.
        if not _fails_unmutated(by, work, env) and \
                _run_one(m, {by}, ops, work, env, timeout_floor)["status"] == "killed":
            break
        tests = tests - {by}
        result = _run_one(m, tests, ops, work, env, timeout_floor)
    return result


def _run_one(m: Mutant, tests: set[str], ops: dict[str, Any], work: Path,
             env: dict[str, str], timeout_floor: float) -> dict[str, Any]:
    target = work / m.path
    original = target.read_text(encoding="utf-8")
    code = mutated_code(m, ops, work)
    durations = json.loads((work / "durations.json").read_text(encoding="utf-8"))
    failing = set(json.loads((work / "baseline.json").read_text(encoding="utf-8"))["failing"])
    ordered = sorted(tests - failing, key=lambda t: (durations.get(t, 1.0), t))
    if not ordered:
        return {**asdict(m), "status": "no tests", "tests": 0, "by": [], "seconds": 0.0,
                "mutated": ""}
    limit = timeout_floor + 3 * sum(durations.get(t, 1.0) for t in ordered)
    args = work / "mutant-tests.txt"
    args.write_text("\n".join(ordered) + "\n", encoding="utf-8")
    start = time.monotonic()
    try:
        target.write_text(code or original, encoding="utf-8")
        done = subprocess.run([*sandbox(), sys.executable, *PYTEST, f"@{args}"], cwd=work,
                              env=env, capture_output=True, text=True, timeout=limit)
        # 1: a test failed; 2, 3: the mutant broke collection or pytest itself (an import
        # error); 4 (usage error: a conftest that no longer imports, a test id no longer
        # collected) is the mutant's doing when the same tests collect on the code as it is,
        # and this script's fault (an argument file that was wrong) otherwise.
        status = "survived" if done.returncode == 0 else (
            "killed" if done.returncode in (1, 2, 3) else f"error {done.returncode}")
        failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.M)
        if not failed:
            output = (done.stdout.strip() or done.stderr.strip()).splitlines()
            failed = [output[-1] if output else ""]
    except subprocess.TimeoutExpired:
        status, failed = "killed", ["(timed out)"]
    finally:
        target.write_text(original, encoding="utf-8")
    if status == "error 4" and _collects_unmutated(args, work, env):
        # Named in parentheses: no test id, so run_one has no single test to confirm.
        status, failed = "killed", ["(no longer collects)"]
    diff = [ln for ln in (code or "").splitlines()[m.line - 1:m.end_line]]
    return {**asdict(m), "status": status, "tests": len(ordered), "by": failed[:1],
            "seconds": round(time.monotonic() - start, 1), "mutated": " | ".join(diff)[:200]}


def run(wings: list[str], sample: int, seed: int, work: Path, floor: float) -> None:
    ops = operators()
    env = make_copy(work)
    cover = CoverageMap(work)
    results = work / "results.jsonl"
    summary = work / "summary.json"
    totals = json.loads(summary.read_text(encoding="utf-8")) if summary.exists() else {}
    # an interrupted run resumes: a mutant already recorded here is not run again
    done = {_key(json.loads(line)) for line in results.read_text(encoding="utf-8").splitlines()
            if line.strip()} if results.exists() else set()
    for wing in wings:
        drawn, population, untested = draw(wing, ops, cover, sample, seed)
        totals[wing] = {"mutants": population, "no_tests": untested, "sample": len(drawn),
                        "seed": seed}
        summary.write_text(json.dumps(totals, indent=1), encoding="utf-8")
        print(f"== {wing}: {population} mutants, {untested} on lines no test runs; "
              f"{len(drawn)} drawn (seed {seed})", flush=True)
        with results.open("a", encoding="utf-8") as out:
            for m, tests in drawn:
                if _key(asdict(m)) in done:
                    print(f"recorded {m.path}:{m.line} {m.operator}#{m.occurrence}", flush=True)
                    continue
                r = run_one(m, tests, ops, work, env, floor)
                out.write(json.dumps(r) + "\n")
                out.flush()
                print(f"{r['status']:8} {m.path}:{m.line} {m.operator}#{m.occurrence} "
                      f"({r['tests']} tests, {r['seconds']} s) {r['mutated'][:90]}", flush=True)
    report(work)


def _key(r: dict[str, Any]) -> tuple[str, int, str, int]:
    return r["path"], r["line"], r["operator"], r["occurrence"]


def again(work: Path, floor: float) -> None:
    """Each mutant that survived the last run, tested again with the map as it is now (after
    tests were added: run `map` first). A mutant is found by its mutated line, so code that
    moved since still finds it; one whose line is gone is reported so."""
    ops = operators()
    env = make_copy(work)
    cover = CoverageMap(work)
    results = work / "results.jsonl"
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for line in results.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        latest[(r["path"], r["operator"], r["occurrence"])] = r
    for r in [r for r in latest.values() if r["status"] != "killed"]:
        m = Mutant(r["wing"], r["path"], r["line"], r["end_line"], r["operator"],
                   r["occurrence"])
        found = _find_again(m, r["mutated"], ops)
        if found is None:
            print(f"gone     {m.path}:{m.line} {m.operator}#{m.occurrence} {r['mutated'][:90]}")
            continue
        result = run_one(found, cover.tests_for(found), ops, work, env, floor)
        # Kept under the identity of the first run, so that the report counts it once.
        result.update(line=m.line, end_line=m.end_line, occurrence=m.occurrence,
                      again=True)
        with results.open("a", encoding="utf-8") as out:
            out.write(json.dumps(result) + "\n")
        print(f"{result['status']:8} {m.path}:{m.line} {m.operator}#{m.occurrence} "
              f"({result['tests']} tests, {result['seconds']} s) {result['mutated'][:90]}",
              flush=True)
    report(work)


def _find_again(m: Mutant, mutated: str, ops: dict[str, Any]) -> Optional[Mutant]:
    if _mutated_lines(m, ops) == mutated:
        return m
    for other in mutants_of(m.wing, m.path, {m.operator: ops[m.operator]}):
        if _mutated_lines(other, ops) == mutated:
            return other
    return None


def _mutated_lines(m: Mutant, ops: dict[str, Any]) -> str:
    code = mutated_code(m, ops)
    return " | ".join((code or "").splitlines()[m.line - 1:m.end_line])[:200]


def report(work: Path) -> None:
    totals = json.loads((work / "summary.json").read_text(encoding="utf-8"))
    rows: dict[str, list[dict[str, Any]]] = {}
    for line in (work / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows.setdefault(r["wing"], []).append(r)  # a later run of a mutant replaces it
    print("| wing | mutants | no tests | sampled | killed | survived | score | first pass |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for wing, t in totals.items():
        first: dict[tuple[str, str, int], dict[str, Any]] = {}
        latest: dict[tuple[str, str, int], dict[str, Any]] = {}
        for r in rows.get(wing, []):
            first.setdefault((r["path"], r["operator"], r["occurrence"]), r)
            latest[(r["path"], r["operator"], r["occurrence"])] = r
        killed = sum(r["status"] == "killed" for r in latest.values())
        survived = [r for r in latest.values() if r["status"] != "killed"]
        score = 100 * killed / len(latest) if latest else 0.0
        before = 100 * sum(r["status"] == "killed" for r in first.values()) / max(1, len(first))
        print(f"| {wing} | {t['mutants']} | {t['no_tests']} | {len(latest)} | {killed} | "
              f"{len(survived)} | {score:.1f} % | {before:.1f} % |")
        for r in survived:
            print(f"  {r['status']}: {r['path']}:{r['line']} {r['operator']}#{r['occurrence']}"
                  f"  {r['mutated'][:120]}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("map", help="the coverage map: line -> tests")
    go = sub.add_parser("run", help="draw and test mutants")
    go.add_argument("wings", nargs="*", help=f"some of {', '.join(WINGS)} (all)")
    go.add_argument("--sample", type=int, default=20, help="mutants drawn a wing (20)")
    go.add_argument("--seed", type=int, default=28)
    go.add_argument("--timeout", type=float, default=60.0,
                    help="seconds a mutant's tests get beyond 3 times their own time (60)")
    sub.add_parser("again", help="test the survivors of the last run again")
    sub.add_parser("report", help="the table of the runs in $MUTATION_DIR")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    unknown = set(getattr(args, "wings", None) or ()) - set(WINGS)
    if unknown:
        parser.error(f"no wing {', '.join(sorted(unknown))}; the wings: {', '.join(WINGS)}")
    if args.command == "map":
        build_map(WORK)
    elif args.command == "run":
        run(args.wings or list(WINGS), args.sample, args.seed, WORK, args.timeout)
    elif args.command == "again":
        again(WORK, 60.0)
    else:
        report(WORK)


if __name__ == "__main__":
    main()
