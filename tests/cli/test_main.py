"""The command table of cli/main.py: each command runs with only its own module imported, and the
table lists exactly what the modules register (so a new command cannot be forgotten)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import typer

from velyrix.cli import main

from ..conftest import ROOT


def _names(modules: list[str]) -> set[str]:
    app = typer.Typer()
    for module in modules:
        importlib.import_module(f"velyrix.cli.{module}").register(app)
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    return names | {g.name or g.typer_instance.info.name or "" for g in app.registered_groups}


def test_every_module_registers_exactly_its_listed_commands() -> None:
    for module, names in main.COMMANDS:
        got = _names([m for m, _ in main.COMMANDS[: [m for m, _ in main.COMMANDS].index(module)]] + [module])
        assert set(names) <= got, f"{module} should register {names}"
    assert _names([m for m, _ in main.COMMANDS]) == {n for _, names in main.COMMANDS for n in names}


def test_a_command_imports_only_its_module() -> None:
    assert main.modules_for(["plan", "x.tf"]) == ["plan"]
    assert main.modules_for(["--debug", "sim", "inject"]) == [
        "fleet",
        "sim_exporter",
        "sim_serve",
        "sim_workload",
        "rollout",
    ]
    assert main.modules_for(["--help"]) == [m for m, _ in main.COMMANDS]
    assert main.modules_for(["plna"]) == [m for m, _ in main.COMMANDS]


def test_plan_does_not_load_service_or_numeric_libraries() -> None:
    code = (
        "import sys; sys.argv = ['velyrix', 'plan', 'examples/acme-pretrain.tf']\n"
        "from velyrix.cli import main\n"
        "try:\n    main.run()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('numpy', 'scipy', 'networkx', 'fastapi', 'sqlalchemy', 'httpx', 'matplotlib', 'ssl')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "HEAVY []" in proc.stderr, proc.stderr[-500:]


def test_unknown_command_suggests_and_exits_2(velyrix) -> None:
    result = velyrix("plna")
    assert result.exit_code == 2
    assert result.stderr.count("Did you mean 'plan'?") == 1


def test_phase_events_read_as_the_result_of_the_phase_left() -> None:
    from velyrix.cli.apply_follow import event_line

    history = [{"phase": "Networking", "from": "Provisioning", "at": "t1"}]
    ev = {"reason": "PhaseNetworking", "message": "image verified", "at": "t1"}
    assert event_line(ev, history) == "Provisioning: image verified -> Networking"
    assert event_line({"reason": "NodeReplaced", "message": "n07 by n64"}, history) == "NodeReplaced: n07 by n64"
