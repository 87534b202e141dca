"""vpod-run's hosts: --host lists, MPI hostfiles, poprun's spreading, and the remote command
line (run through a real sh, as a remote login shell runs it)."""

from __future__ import annotations

import subprocess

import pytest

from vpod.ipuof.hosts import Host, HostError, is_local, parse_host_list, parse_hostfile, spread
from vpod.ipuof.remote import remote_command, ssh_argv


def test_a_host_list_keeps_order_and_reads_slots() -> None:
    assert parse_host_list("h1,h2") == [Host("h1"), Host("h2")]
    assert parse_host_list(" h1:2 , user@h2:3") == [Host("h1", 2), Host("user@h2", 3)]
    assert parse_host_list("fe80::1,::1") == [Host("fe80::1"), Host("::1")]  # IPv6 stays whole
    assert parse_host_list("h1,h2,h1") == [Host("h1", 2), Host("h2")]  # named twice: 2 slots


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("h1,,h2", "empty host name"),
        ("-oProxyCommand=id", "not starting with '-'"),
        ("h1;id", "is not a host name"),
        ("h$(id)", "is not a host name"),
        ("h1 h2", "is not a host name"),
        ("h1:0", "slots must be a whole number from 1"),
    ],
)
def test_a_bad_host_list_says_what_to_fix(text: str, words: str) -> None:
    with pytest.raises(HostError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_host_list(text)


def test_a_hostfile_has_slots_comments_and_blank_lines() -> None:
    text = "# Poplar servers\n\npoplar-1 slots=2   # first\n  poplar-2\tslots=4\npoplar-3\n"
    assert parse_hostfile(text, "hosts.txt") == [
        Host("poplar-1", 2),
        Host("poplar-2", 4),
        Host("poplar-3"),
    ]
    assert parse_hostfile("a slots=1\nb\na slots=2\n", "f") == [Host("a", 3), Host("b")]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("# nothing\n\n", "f names no host"),
        ("h1\nh2 max-slots=3\n", "f, line 2: 'max-slots=3' is not understood"),
        ("h1 slots=x\n", "f, line 1: slots must be a whole number"),
        ("h1 slots=-2\n", "f, line 1: slots must be a whole number"),
        ("`id`\n", "f, line 1: '`id`' is not a host name"),
    ],
)
def test_a_bad_hostfile_names_the_line(text: str, words: str) -> None:
    with pytest.raises(HostError) as caught:
        parse_hostfile(text, "f")
    assert words in str(caught.value)


def test_instances_are_divided_evenly_in_order_without_slots() -> None:
    hosts = [Host("a"), Host("b")]
    assert spread(hosts, 4) == ["a", "a", "b", "b"]
    assert spread(hosts, 2) == ["a", "b"]
    assert spread([Host("a"), Host("b"), Host("c")], 6) == ["a", "a", "b", "b", "c", "c"]
    with pytest.raises(HostError, match="must be a multiple of the 2 hosts"):
        spread(hosts, 3)
    with pytest.raises(HostError, match="must be a multiple of the 2 hosts"):
        spread(hosts, 1)


def test_slots_fill_hosts_in_order() -> None:
    assert spread([Host("a", 2), Host("b", 2)], 3) == ["a", "a", "b"]
    assert spread([Host("a", 3), Host("b")], 4) == ["a", "a", "a", "b"]  # no slots: one
    assert spread([Host("a", 4), Host("b", 4)], 2) == ["a", "a"]
    with pytest.raises(HostError, match="needs 5 slots but the hosts have 4"):
        spread([Host("a", 2), Host("b", 2)], 5)


def test_only_this_machines_names_start_without_ssh() -> None:
    assert all(is_local(name) for name in ("localhost", "127.0.0.1", "::1"))
    assert is_local("poplar-1", {"poplar-1"})
    assert not is_local("poplar-2", {"poplar-1"})
    assert not is_local("127.0.0.2")  # another loopback address may be another sshd
    assert not is_local("root@localhost")  # a user: always through ssh


def test_ssh_argv_puts_the_callers_options_first_and_ends_options_before_the_host() -> None:
    argv = ssh_argv(["ssh", "-F", "cfg"], ["BatchMode=no", "Port=2222"], "h1", "true")
    assert argv == [
        "ssh", "-F", "cfg", "-o", "BatchMode=no", "-o", "Port=2222", "-o", "BatchMode=yes",
        "-T", "--", "h1", "true",
    ]  # fmt: skip


def test_the_remote_command_survives_a_shell_word_for_word(tmp_path: object) -> None:
    """What the remote login shell gets: arguments and variables arrive unchanged, nothing in
    them runs, the working directory is the launcher's when the host has it."""
    tricky = ["a b", "it's", '"q"', "$(touch /tmp/vpod-pwned)", "`id`", "x;y", "*", "\\n", ""]
    env = {"POPDIST_LOCAL_INSTANCE_INDEX": "3", "ODD": "$HOME; rm -rf / 'x'"}
    script = 'printf "%s\\n" "$PWD" "$ODD" "$POPDIST_LOCAL_INSTANCE_INDEX" "$@"'
    line = remote_command(["sh", "-c", script, "argv0", *tricky], env, str(tmp_path))
    code, out = as_sshd_runs(line)
    assert code == 0, out
    assert out.split("\n")[:-1] == [str(tmp_path), env["ODD"], "3", *tricky]


def test_the_remote_command_passes_the_exit_status_and_falls_back_to_home() -> None:
    line = remote_command(["sh", "-c", 'echo "$PWD"; exit 7'], {}, "/no/such/directory")
    code, out = as_sshd_runs(line, env={"HOME": "/", "PATH": "/usr/bin:/bin"})
    assert code == 7
    assert out.strip() == "/"


def as_sshd_runs(line: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``line`` as sshd runs a command: a login shell in a session of its own, its
    standard input open (the launcher's pipe) until it ends; its status and output."""
    proc = subprocess.Popen(
        ["bash", "-c", line],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # the wrapper signals its own process group
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    out = proc.stdout.read()
    code = proc.wait(timeout=30)
    proc.stdin.close()
    return code, out
