"""Every example of the README and the docs runs, and the public API's docstring examples
run as doctests.

The collector reads the fenced blocks of README.md and docs/**/*.md:

- ```python blocks of a page run in order, in one namespace, in a directory of demo files;
- ```console blocks hold ``$ mpieval ...`` commands, each followed by its output: the
  command runs (exit status 0) in a directory of demo files and its stdout is the shown
  lines, byte for byte (no wildcard: a sample cannot go stale). A ``$ mpiexec -n N mpieval
  ...`` command runs alone and under ``mpiexec -n 2`` and ``-n 3``: the same lines each
  time (results do not depend on the number of ranks), and the same ``--json`` but for its
  ``run`` block;
- ```sh blocks hold ``mpieval ...`` commands (and ``#`` comments), each run the same way.

A block that cannot run alone has ``<!-- not-run: why -->`` on the line before it; such
blocks are counted, and their number is capped, so that a new one is a decision. A
``text`` block of log lines with values (not a ``%g`` format) is output that no command
here gives, so it says where it comes from: ``<!-- illustration: why -->`` before it.

``python tests/test_docs_examples.py --write`` runs every console command alone on the
demo files and writes its output into the page (after a change of the demo data or of a
log line).
"""

from __future__ import annotations

import doctest
import importlib
import json
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
MAX_NOT_RUN = 15  # raise it only for a block that cannot run on one machine
ILLUSTRATION = re.compile(r"<!-- illustration: (.+?) -->")
MAX_ILLUSTRATIONS = 6  # log lines of a production job, shown for their format
# A log line with a value: NAME: [Tag=TAG ]field=number ...
LOG_LINE = re.compile(r"\S+: (?:compare=\S+ )?(?:Tag=\S+ )?[A-Za-z_@0-9]+=[-+0-9.]")
MPIEXEC = re.compile(r"mpiexec -n \d+ (mpieval .*)")
RANKS = (2, 3)  # a shown `mpiexec -n N` command runs at these N (and alone)
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


def run_command(command: str, cwd: Path, ranks: int = 0) -> str:
    """Run one ``mpieval ...`` command line in a shell (globs expand there), alone (one
    rank; ``ranks=0``) or under ``mpiexec -n ranks``; its stdout, failing the test on a
    non-zero exit."""
    assert command.startswith("mpieval "), f"not an mpieval command: {command!r}"
    if ranks:
        command = f"mpiexec -n {ranks} {command}"
    bin_dir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    for name in [n for n in env if n == "MPIEVAL_NO_MPI" or n.startswith(
            ("PMI_", "PMIX_", "OMPI_", "HYDRA_", "HYDI_", "MPI_LOCAL"))]:
        del env[name]  # a job of its own even when the tests themselves run under mpiexec
    done = subprocess.run(["timeout", "-k", "5", "240", "bash", "-c", command], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=260)
    assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr}"
    return done.stdout


def json_path(command: str) -> str | None:
    """The ``--json PATH`` of a command line, if it has one."""
    words = command.split()
    return words[words.index("--json") + 1] if "--json" in words else None


def metrics_json(path: Path) -> dict:
    """A ``--json`` file's metrics: all but the ``run`` block (command, ranks, time)."""
    return {k: v for k, v in json.loads(path.read_text()).items() if k != "run"}


def run_shown(command: str, cwd: Path) -> list[str]:
    """The stdout lines of a shown command: ``mpieval ...`` alone; ``mpiexec -n N mpieval
    ...`` alone and at each of RANKS, which must print the same lines (and write the same
    ``--json`` metrics) as alone."""
    launched = MPIEXEC.fullmatch(command)
    alone = command if launched is None else launched.group(1)
    lines = run_command(alone, cwd).rstrip("\n").split("\n")
    lines = [] if lines == [""] else lines
    if launched is None:
        return lines
    output = json_path(alone)
    metrics = metrics_json(cwd / output) if output else None
    for ranks in RANKS:
        again = run_command(alone, cwd, ranks).rstrip("\n").split("\n")
        assert again == lines, (f"{command} at -n {ranks} and alone differ:\n"
                                + "\n".join(again) + "\nalone:\n" + "\n".join(lines))
        if output:
            assert metrics_json(cwd / output) == metrics, f"{command}: --json at -n {ranks}"
    return lines


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
                printed = run_shown(command, workdir)
                assert printed == shown, (
                    f"{block.where}: {command}\nshown:\n" + "\n".join(shown)
                    + "\nprinted:\n" + "\n".join(printed)
                    + "\n(python tests/test_docs_examples.py --write writes the output)")
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
    other_shells = [b.where for b in ALL_BLOCKS if b.language in ("bash", "shell", "zsh")]
    assert not other_shells, f"shell blocks say sh (or console), to run: {other_shells}"
    markers = sum(len(NOT_RUN.findall(page.read_text())) for page in PAGES)
    assert markers == len(skipped), "a not-run marker that is not right before a block"
    assert len(skipped) <= MAX_NOT_RUN, [f"{b.where}: {b.not_run}" for b in skipped]
    commands = sum(len(console_commands(b.text)) if b.language == "console"
                   else len(sh_commands(b.text)) for b in runnable if b.language != "python")
    python = sum(b.language == "python" for b in runnable)
    print(f"\ndocs examples: {python} python blocks and {commands} commands run; "
          f"{len(skipped)} blocks marked not-run")
    assert python >= 10 and commands >= 10


def test_log_lines_shown_are_run_or_say_where_they_come_from() -> None:
    """A sample of log lines is either a console block (run, compared) or a text block
    marked as an illustration (a production job's line, showing the format); a ``%g``
    format is neither. Catches output pasted under a command that is not run."""
    pages = {page: page.read_text() for page in PAGES}
    unmarked, marked = [], []
    for block in ALL_BLOCKS:
        lines = block.text.split("\n")
        if block.language != "text" or not any(LOG_LINE.match(line) for line in lines):
            continue
        before = pages[block.page].split("\n")[:block.line - 1]
        last = next((line.strip() for line in reversed(before) if line.strip()), "")
        (marked if ILLUSTRATION.fullmatch(last) else unmarked).append(block.where)
    assert not unmarked, f"log lines with values in a text block, not marked: {unmarked}"
    markers = sum(len(ILLUSTRATION.findall(text)) for text in pages.values())
    assert markers == len(marked), "an illustration marker not right before its log lines"
    assert len(marked) <= MAX_ILLUSTRATIONS, marked
    assert LOG_LINE.match("auc: auc=0.5 bucket_error=nan")
    assert LOG_LINE.match("wuauc: Tag=all WUAUC=0.63 UAUC=0.63")
    assert not LOG_LINE.match("NAME: auc=%g bucket_error=%g")


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


def write_outputs() -> None:
    """Run every console command of the pages alone on the demo files, as the tests do (a
    fresh directory per page, commands in order), and write its stdout under it."""
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        files = Path(root) / "demo"
        files.mkdir()
        demo.write_shards(str(files), DEMO_ROWS)
        (files / "demo.toml").write_text(demo.CONFIG)
        for number, page in enumerate(PAGES):
            consoles = [b for b in blocks(page) if b.language == "console" and b.not_run is None]
            if not consoles:
                continue
            work = Path(root) / f"work-{number}"
            work.mkdir()
            for source in files.iterdir():
                (work / source.name).symlink_to(source)
            written = []
            for block in consoles:
                text = []
                for command, _ in console_commands(block.text):
                    launched = MPIEXEC.fullmatch(command)
                    printed = run_command(command if launched is None else launched.group(1),
                                          work).rstrip("\n")
                    text += [f"$ {command}", *(printed.split("\n") if printed else [])]
                written.append((block, text))
            lines = page.read_text().split("\n")
            for block, text in reversed(written):  # later blocks first: line numbers hold
                count = len(block.text.split("\n"))
                lines[block.line:block.line + count] = text
            page.write_text("\n".join(lines))
            print(f"{page.relative_to(ROOT)}: {len(written)} console blocks written")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_docs_examples.py --write")
    write_outputs()
