"""Every command that vpod's own text tells the user to type exists, with its options.

The source under src/vpod is read (not run): each string literal (f-strings with
their fields as placeholders) is searched for command lines of the console
scripts that a message presents as something to type: in backticks, after a
cue (``with``, ``run``, ``then``, ``try``, ``use``, ``see``, ``e.g.``, ``$``), or
as an example line of a help text. Each is walked through the real command
tree: every word up to the command must be a command, every ``--option`` on
it must be one the command (or a group above it) takes, and ``--help`` of the
command works. A message naming ``vipu-admin grant it to user default`` fails
here; so does one whose command or option was renamed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from .console_scripts import Script, scripts

SRC = Path(__file__).resolve().parents[2] / "src" / "vpod"
SCRIPTS = scripts()
TOOLS = sorted(SCRIPTS, key=len, reverse=True)  # vipu-admin before vipu
_TOKEN = r"[^\s`()\"';]+"
_TOOL = "(?:" + "|".join(re.escape(t) for t in TOOLS) + ")"
_AFTER_CUE = re.compile(
    r"(?:(?:^|[\s(])(?:with|run|then|try|use|see|e\.g\.|type|or|by)[ :(]+|\$ +)"
    rf"({_TOOL}(?: +{_TOKEN})*)"
)
_IN_BACKTICKS = re.compile(rf"`({_TOOL}(?: +[^`]+?)?)`")
_EXAMPLE_LINE = re.compile(rf"^[ \t]+({_TOOL}(?: +{_TOKEN})*)", re.MULTILINE)
_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
"""What a subcommand looks like; anything else after a group (``...``, ``ID``, ``{X}``) is
a placeholder or code, not a command to check."""


@dataclass(frozen=True)
class Phrase:
    text: str
    where: str


def _strings(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    inside_fstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "{X}" for v in node.values]
            found.append(("".join(str(p) for p in parts), node.lineno))
            inside_fstrings.update(id(v) for v in node.values)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
        ):
            found.append((node.value, node.lineno))
    return found


def phrases() -> list[Phrase]:
    """The command lines that vpod's messages and help texts ask the user to type."""
    found: dict[tuple[str, str], Phrase] = {}
    for path in sorted(SRC.rglob("*.py")):
        if "wire" in path.parts:
            continue
        for text, line in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            flat = " ".join(text.split())
            where = f"{path.relative_to(SRC.parent)}:{line}"
            for pattern, source in ((_IN_BACKTICKS, flat), (_AFTER_CUE, flat)):
                for match in pattern.finditer(source):
                    found.setdefault((match.group(1), where), Phrase(match.group(1), where))
            for match in _EXAMPLE_LINE.finditer(text):
                found.setdefault((match.group(1), where), Phrase(match.group(1), where))
    return sorted(found.values(), key=lambda p: (p.where, p.text))


def _alternatives(phrase: str) -> list[list[str]]:
    """``vpod storage list|show X`` -> one token list per alternative subcommand."""
    tokens = [t.rstrip(".,:;") for t in phrase.split()]
    lists: list[list[str]] = [[]]
    for token in tokens:
        if "|" in token and "{" not in token:  # create|list, --secure|--insecure
            lists = [[*done, alt] for done in lists for alt in token.split("|") if alt]
        else:
            lists = [[*done, token] for done in lists]
    return lists


def _option(command: click.Command, name: str) -> click.Parameter | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _check_click(script: Script, tokens: list[str], phrase: Phrase) -> None:
    assert script.command is not None
    chain: list[click.Command] = [script.command]
    path: list[str] = []
    rest = tokens[1:]
    while rest:
        token, current = rest[0], chain[-1]
        if token in ("--", "|", "\\", "&&"):
            break
        if token.startswith("-"):
            option = None
            for name in token.split("=", 1)[0].split("/"):  # --init/--tls-init: both
                option = next((o for c in reversed(chain) if (o := _option(c, name))), None)
                if option is None and name not in ("-h", "--help"):
                    pytest.fail(
                        f"{phrase.where}: `{phrase.text}`: {script.name} {' '.join(path)}"
                        f" has no option {name}"
                    )
            takes_value = option is not None and not getattr(option, "is_flag", False)
            rest = rest[2:] if takes_value and "=" not in token else rest[1:]
            continue
        if isinstance(current, click.Group):
            if not _WORD.match(token):
                break  # "vpod cluster ...", "vipu = ...": the group only
            command = current.get_command(click.Context(current), token)
            if command is None:
                pytest.fail(
                    f"{phrase.where}: `{phrase.text}`: {script.name} {' '.join(path)}"
                    f" has no command {token!r}"
                )
            chain.append(command)
            path.append(token)
            rest = rest[1:]
            continue
        rest = rest[1:]  # an argument of the command (or the prose after it)
    shown = CliRunner().invoke(script.command, [*path, "--help"], prog_name=script.name)
    assert shown.exit_code == 0, f"{phrase.where}: {script.name} {' '.join(path)} --help"


def _check_argparse(script: Script, tokens: list[str], phrase: Phrase) -> None:
    """A script without click (the bridge's): its options must be in its ``--help``."""
    options = [t.split("=", 1)[0] for t in tokens[1:] if t.startswith("--")]
    if not options:
        return  # named only: it is installed (SCRIPTS holds installed scripts only)
    help_text = script.argparse_help()
    for option in options:
        assert option in help_text, (
            f"{phrase.where}: `{phrase.text}`: {script.name} has no {option}"
        )


PHRASES = phrases()


def test_the_scan_finds_the_messages_it_is_meant_to_check() -> None:
    """Guard the scanner itself: it finds commands in each of its three forms."""
    by_file: dict[str, set[str]] = {}
    for p in PHRASES:
        by_file.setdefault(p.where.split(":")[0], set()).add(p.text)
    after_cues = by_file["vpod/launch/up_setup.py"]  # "bring it back with ... (then ...)"
    assert "vipu-admin create allocation {X} --cluster {X} --size N" in after_cues
    assert "vipu-admin grant allocation {X} --user {X}" in after_cues
    assert "vipu-admin list clusters" in by_file["vpod/controller/inventory.py"]  # `...`
    assert "vipu-admin test cluster pod16" in by_file["vpod/cli/vipu_admin_main.py"]  # example
    assert len(PHRASES) > 100


@pytest.mark.parametrize("phrase", PHRASES, ids=lambda p: f"{p.where} {p.text[:40]}")
def test_each_command_a_message_names_exists(phrase: Phrase) -> None:
    for tokens in _alternatives(phrase.text):
        script = SCRIPTS[tokens[0]]
        if script.command is None:
            _check_argparse(script, tokens, phrase)
        else:
            _check_click(script, tokens, phrase)
