"""A command line that names a command builds the Click group with that command only
(cli/app.py `_command`, issue 38: Typer reads every command's signature, 40-60 ms of a first
`analyze`): the named command's parameters are the full group's; help, no command or an
unknown command build them all; the app's registered commands are left as they were."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import typer.main

from crossview.cli import app
from crossview.cli.app import ROOT_VALUE_OPTIONS, _command, command_name, invoked

NAMES = sorted({command_name(c) for c in (*app.registered_commands, *app.registered_groups)})


def _built(monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.setattr(sys, "argv", ["crossview", *args])
    return _command()


def _params(cmd: Any) -> list[tuple[object, ...]]:
    return [(p.name, p.opts, p.secondary_opts, p.required, repr(p.default), p.nargs, p.multiple,
             p.envvar, getattr(p, "help", None), getattr(p, "is_flag", None),
             type(p.type).__name__, getattr(p.type, "readable", None)) for p in cmd.params]


def test_root_value_options_are_the_root_options_that_take_a_value() -> None:
    root = typer.main.get_command(app)
    taking = {o for p in root.params if p.param_type_name == "option"
              and not getattr(p, "is_flag", False) for o in p.opts}
    assert taking == set(ROOT_VALUE_OPTIONS)


def test_invoked_is_the_first_word_past_the_root_options() -> None:
    assert invoked(["-q", "--no-cache", "--cache-dir", "kernels", "analyze", "x"]) == "analyze"
    assert invoked(["--memory-limit", "1GB", "--cache-size=2GB", "report", "a"]) == "report"
    assert invoked(["--help"]) is None
    assert invoked(["-q", "--help", "analyze"]) is None  # the root's help lists every command
    assert invoked([]) is None
    assert invoked(["--", "analyze"]) is None


@pytest.mark.parametrize("name", NAMES)
def test_one_command_group_holds_that_command_as_the_full_group_has_it(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    before = (list(app.registered_commands), list(app.registered_groups))
    full = _built(monkeypatch, "--help")
    one = _built(monkeypatch, "-q", "--cache-dir", "x", name, "--help")
    assert list(one.commands) == [name]
    assert _params(one) == _params(full)  # the root options
    assert _params(one.commands[name]) == _params(full.commands[name])
    assert one.commands[name].help == full.commands[name].help
    assert (list(app.registered_commands), list(app.registered_groups)) == before


def test_help_and_unknown_commands_build_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    for args in ((), ("--help",), ("--help", "analyze"), ("-q", "no-such-command")):
        assert sorted(_built(monkeypatch, *args).commands) == NAMES
