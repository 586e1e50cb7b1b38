"""Docs are tested against code: the README's table names every setting, flag and variable."""

from __future__ import annotations

import re
from pathlib import Path

from kenning_encounter.cli import build_parser
from kenning_encounter.config import ENV_PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _serve_flags() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    serve = sub.choices["serve"]  # type: ignore[index]
    flags = {o for a in serve._actions for o in a.option_strings if o.startswith("--")}
    # A switch's --no- form is documented by its row.
    return {f for f in flags if not f.startswith("--no-")} - {"--help", "--version"}


def test_every_flag_is_in_the_configuration_table() -> None:
    table = set(re.findall(r"\| `(--[a-z0-9-]+)` \|", README))
    assert table == _serve_flags()


def test_every_setting_has_its_variable_in_the_table() -> None:
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if alias is not None:
            choices = [
                c for c in getattr(alias, "choices", []) if isinstance(c, str) and c.isupper()
            ]
            assert any(f"`{c}`" in README for c in choices), name
        else:
            assert f"`{ENV_PREFIX}{name.upper()}`" in README, name


def test_quick_start_has_one_run_and_one_test_command() -> None:
    quick = README.split("## Quick start", 1)[1].split("##", 1)[0]
    block = quick.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make run", "make test"]
