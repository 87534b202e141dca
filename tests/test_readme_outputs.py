"""What the README's commands write stays out of git: every path is git-ignored.

Nothing is run. Each command line of every ```bash block is read for the paths
it writes or names below the working directory: shell redirections
(``> jobs.csv``), ``$PWD/...`` in assignments (``VPOD_DATABASE_URL``), and
the values of the options of vpod's console scripts whose type is a path
(``--data-dir vpod-prod``, ``--json sim.json``, ``--output vpod-pieces``),
including the defaults of those left out (``scripts/up`` runs ``vpod up``,
whose ``--data-dir`` defaults to ``vpod-data``). Each such path that git does
not track must be ignored by ``.gitignore``, so trying the README leaves a
clean ``git status``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import click
import pytest

from tests.cli.console_scripts import scripts
from tests.test_readme import README, REPO, bash_blocks

SCRIPTS = {name: s.command for name, s in scripts().items() if s.command is not None}
ALIASES = {"scripts/up": ["vpod", "up"]}
"""Repository scripts that run a console script (``scripts/up`` execs ``vpod up "$@"``)."""
_SEPARATORS = {"|", "||", "&&", ";"}


def _segments(line: str) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segments: list[list[str]] = [[]]
    for word in lexer:
        if word in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _under_pwd(word: str) -> str | None:
    _, found, rest = word.partition("$PWD/")
    return rest if found else None


def _path_options(words: list[str]) -> list[tuple[str, bool]]:
    """(path, is a directory) for each path-typed option of a vpod command, given or default."""
    program = Path(words[0]).name
    if words[0] in ALIASES:
        words = [*ALIASES[words[0]], *words[1:]]
        program = words[0]
    command = SCRIPTS.get(program)
    if command is None:
        return []
    args = words[1:]
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        sub = command.get_command(click.Context(command), args[0])
        if sub is None:
            break
        command, args = sub, args[1:]
    found: list[tuple[str, bool]] = []
    given: set[str] = set()
    for param in command.params:
        if not isinstance(param, click.Option) or not isinstance(param.type, click.Path):
            continue
        directory = not param.type.file_okay
        for n, arg in enumerate(args):
            name, _, inline = arg.partition("=")
            if name in param.opts:
                value = inline or (args[n + 1] if n + 1 < len(args) else "")
                found.append((value, directory))
                given.add(param.name or "")
        default = param.default if isinstance(param.default, str | Path) else None
        # left out: where the command writes by default
        if param.name not in given and default and (param.type.writable or directory):
            found.append((str(default), directory))
    return found


def readme_paths() -> list[tuple[str, bool]]:
    """Every (relative path, is a directory) the README's commands write or name."""
    paths: list[tuple[str, bool]] = []
    for block in bash_blocks(README.read_text()):
        for line in block:
            for words in _segments(line):
                for n, word in enumerate(words):
                    if word in (">", ">>") and n + 1 < len(words):
                        paths.append((words[n + 1], False))
                    inside = _under_pwd(word)
                    if inside is not None:
                        paths.append((inside, False))
                if words[0] in ("export", "source"):
                    continue
                paths += _path_options(words)
    return [(p, d) for p, d in dict.fromkeys(paths) if p and not p.startswith(("/", "~", "$", "-"))]


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def git_checkout() -> None:
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: nothing to ignore files in")


def test_the_scan_sees_the_readmes_outputs() -> None:
    """Guard the scan: redirections, $PWD paths, given and default path options."""
    found = dict(readme_paths())
    assert found.get("jobs.csv") is False  # printf ... > jobs.csv
    assert "sim.json" in found  # vpod sim --json
    assert "sim.png" in found  # vpod sim --plot
    assert found.get("vpod-prod") is True  # --data-dir vpod-prod
    assert found.get("vpod-pieces") is True  # --output vpod-pieces
    assert found.get("vpod-data") is True  # scripts/up: vpod up's default --data-dir


def test_every_path_the_readme_writes_is_git_ignored(git_checkout: None) -> None:
    tracked = set(_git("ls-files").stdout.splitlines())
    not_ignored = []
    for path, directory in readme_paths():
        probe = f"{path.rstrip('/')}/any-file" if directory else path
        if probe in tracked or path in tracked:
            continue
        if _git("check-ignore", "-q", "--no-index", probe).returncode != 0:
            not_ignored.append(path)
    assert not not_ignored, f"add to .gitignore: {not_ignored}"
