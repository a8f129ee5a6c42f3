"""Every example of the README and the docs runs, and the public API's docstring examples
run as doctests.

The collector reads the fenced blocks of README.md and docs/**/*.md:

- ```python blocks of a page run in order, in one namespace, in a directory of demo files;
- ```console blocks hold ``$ mpieval ...`` commands, each followed by its output: the
  command runs (exit status 0) in a directory of demo files and its stdout must match the
  shown lines, where a line ``...`` stands for any number of lines and a line ending in
  ``...`` for any line that starts with the rest;
- ```sh blocks hold ``mpieval ...`` commands (and ``#`` comments), each run the same way.

A block that cannot run alone has ``<!-- not-run: why -->`` on the line before it; such
blocks are counted, and their number is capped, so that a new one is a decision.
"""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from mpieval import demo
from mpieval.errors import UndefinedMetricWarning
from mpieval.kinds import KINDS

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUN_LANGUAGES = ("python", "console", "sh")
NOT_RUN = re.compile(r"<!-- not-run: (.+?) -->")
MAX_NOT_RUN = 14  # raise it only for a block that cannot run on one machine
DEMO_ROWS = 300_000  # mpieval demo's default: the README shows its output
# The public API whose docstrings carry examples, each run as a doctest: every kind's
# metric class, and the shared API.
DOCTESTED = {
    **{kind.metric.split(":")[0]: [kind.metric.split(":")[1]] for kind in KINDS.values()},
    "mpieval.metric": ["Evaluator", "compute_all"],
    "mpieval.comm": ["Comm"],
    "mpieval.checkpoint": ["save", "load"],
}
SECTIONS = ("Parameters", "Raises", "Examples")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    not_run: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page (fences at the start of a line)."""
    found, lines = [], page.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            language = line[3:].strip()
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            marked = NOT_RUN.fullmatch(before.strip())
            found.append(Block(page, i + 1, language, "\n".join(lines[i + 1:j]),
                               marked.group(1) if marked else None))
            i = j + 1
        else:
            i += 1
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks(page)]


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's files (``mpieval demo --dir``: shards, ``demo.toml``), written once."""
    directory = tmp_path_factory.mktemp("demo")
    demo.write_shards(str(directory), DEMO_ROWS)
    (directory / "demo.toml").write_text(demo.CONFIG)
    return directory


@pytest.fixture
def workdir(demo_files: Path, tmp_path: Path) -> Path:
    """A fresh directory with the demo files (links to them), where an example runs."""
    target = tmp_path / "work"
    target.mkdir()
    for source in demo_files.iterdir():
        (target / source.name).symlink_to(source)
    return target


def run_command(command: str, cwd: Path) -> str:
    """Run one ``mpieval ...`` command line in a shell (globs expand there), alone (one
    rank); its stdout, failing the test on a non-zero exit."""
    assert command.startswith("mpieval "), f"not an mpieval command: {command!r}"
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    for name in [n for n in env if n.startswith(("PMI_", "PMIX_", "OMPI_", "HYDRA_"))]:
        del env[name]  # run alone even when the tests themselves run under mpiexec
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr}"
    return done.stdout


def matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` fits ``shown``: ``...`` is any number of lines, ``X...`` a line
    starting with X, any other line itself."""
    if not shown:
        return not printed
    head, rest = shown[0], shown[1:]
    if head == "...":
        return any(matches(rest, printed[k:]) for k in range(len(printed) + 1))
    if not printed:
        return False
    if head.endswith("..."):
        fits = printed[0].startswith(head[:-3])
    else:
        fits = printed[0] == head
    return fits and matches(rest, printed[1:])


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """The ``$ `` commands of a console block, each with the output shown after it."""
    commands: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            assert commands, f"output before any command: {line!r}"
            commands[-1][1].append(line)
    return commands


def sh_commands(text: str) -> list[str]:
    """The command lines of a sh block, comments dropped."""
    lines = (line.split(" #")[0].strip() for line in text.split("\n"))
    return [line for line in lines if line and not line.startswith("#")]


def _id(item: object) -> str:
    return str(Path(str(item)).relative_to(ROOT)) if isinstance(item, Path) else str(item)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_the_python_examples_of_a_page_run(page: Path, workdir: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    runnable = [b for b in blocks(page) if b.language == "python" and b.not_run is None]
    if not runnable:
        pytest.skip("no python example")
    monkeypatch.chdir(workdir)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    with warnings.catch_warnings():
        # Undefined values (e.g. bucket error on a few rows) are beside the examples' point.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for block in runnable:
            try:
                exec(compile(block.text, block.where, "exec"), namespace)
            except Exception as error:
                pytest.fail(f"{block.where}: {type(error).__name__}: {error}")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_the_command_examples_of_a_page_run(page: Path, workdir: Path) -> None:
    runnable = [b for b in blocks(page) if b.language in ("console", "sh") and b.not_run is None]
    if not runnable:
        pytest.skip("no command example")
    for block in runnable:
        if block.language == "console":
            for command, shown in console_commands(block.text):
                printed = run_command(command, workdir).rstrip("\n")
                lines = printed.split("\n") if printed else []
                assert not shown or matches(shown, lines), (
                    f"{block.where}: {command}\nshown:\n" + "\n".join(shown)
                    + "\nprinted:\n" + printed)
        else:
            for command in sh_commands(block.text):
                run_command(command, workdir)


def test_every_example_runs_or_says_why_not() -> None:
    """Counts the examples; every block in a runnable language runs unless marked, a
    marker stands right before a block, and the marked ones stay few."""
    runnable = [b for b in ALL_BLOCKS if b.language in RUN_LANGUAGES and b.not_run is None]
    skipped = [b for b in ALL_BLOCKS if b.not_run is not None]
    unlabelled = [b.where for b in ALL_BLOCKS if not b.language]
    assert not unlabelled, f"fenced blocks without a language (text, python, ...): {unlabelled}"
    markers = sum(len(NOT_RUN.findall(page.read_text())) for page in PAGES)
    assert markers == len(skipped), "a not-run marker that is not right before a block"
    assert len(skipped) <= MAX_NOT_RUN, [f"{b.where}: {b.not_run}" for b in skipped]
    commands = sum(len(console_commands(b.text)) if b.language == "console"
                   else len(sh_commands(b.text)) for b in runnable if b.language != "python")
    python = sum(b.language == "python" for b in runnable)
    print(f"\ndocs examples: {python} python blocks and {commands} commands run; "
          f"{len(skipped)} blocks marked not-run")
    assert python >= 10 and commands >= 10


def test_the_collector_compares_output() -> None:
    """The output matching used for console blocks: wildcards, and real mismatches."""
    assert matches(["a: x=...", "...", "z"], ["a: x=1", "b", "c", "z"])
    assert matches(["..."], [])
    assert not matches(["a: x=1"], ["a: x=2"])
    assert not matches(["a", "..."], ["b"])


@pytest.mark.parametrize("module_name", sorted(DOCTESTED))
def test_the_docstring_examples_run(module_name: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(module_name)
    monkeypatch.chdir(tmp_path)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name in DOCTESTED[module_name]:
            obj = getattr(module, name)
            text = obj.__doc__ or ""
            missing = [s for s in SECTIONS if f"\n    {s}\n    {'-' * len(s)}\n" not in text]
            assert not missing, f"{module_name}.{name}: no {missing} section"
            tests = [t for t in finder.find(obj, name, module=module, globs={}) if t.examples]
            assert tests, f"{module_name}.{name}: no example"
            for test in tests:
                runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
