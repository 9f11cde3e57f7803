"""Entry point of the ``velyrix`` command.

Command modules are registered here, one line each. Keep imports at module level cheap: a command
imports heavy libraries (FastAPI, SQLAlchemy, numpy, networkx) inside its function, so that
``velyrix plan`` stays fast.
"""

from __future__ import annotations

import sys

import typer

from velyrix import errors, settings

app = typer.Typer(
    name="velyrix",
    help=(
        "Velyrix: the software of a GPU cloud.\n\n"
        "Declare a training cluster in HCL, then plan it (fabric, storage, goodput, price), apply it "
        "to a fleet or to the digital twin, and operate it.\n\n"
        "Start with:  velyrix plan examples/acme-pretrain.tf"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    suggest_commands=False,  # click itself already says "Did you mean ...?"
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root() -> None:
    """Velyrix: the software of a GPU cloud."""


# Command modules in registration order, with the top-level commands each one adds. Only the module
# that owns the command being run is imported, so that start-up stays cheap (bench/bench_plan.py);
# help and unknown commands import them all. tests/cli/test_main.py keeps this table true.
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("plan", ("plan",)),
    ("agent", ("agent",)),
    ("apply", ("apply", "destroy", "status")),
    ("fleet", ("up", "demo", "sim", "report", "verify", "node")),
    ("sim_exporter", ("sim",)),  # after fleet: joins its `sim` group
    ("sim_serve", ("sim",)),  # after sim_exporter: joins the `sim` group
    ("server", ("server", "db", "admin")),
    ("login", ("login",)),
    ("keys", ("keys",)),
    ("fabric", ("fabric",)),
    ("checkpoint", ("checkpoint",)),
    ("goodput", ("goodput",)),
    ("health", ("health",)),
    ("scheduler", ("scheduler",)),
    ("noc", ("noc", "invoice", "sla")),
    ("audit", ("audit",)),
    ("output", ("output",)),
    ("evidence", ("report", "verify")),  # after fleet: joins its `report` and `verify` groups
    ("proactive", ("report",)),  # after fleet: joins its `report` group
    ("volumes", ("volume",)),
    ("network_config", ("network",)),
    ("sim_workload", ("sim", "report")),  # after fleet and sim_exporter: joins their `sim` and `report` groups
    ("access", ("ssh",)),
    ("network", ("network",)),  # after network_config: joins its `network` group
    ("bmc_admin", ("admin",)),  # after server: joins its `admin` group
    ("rollout", ("rollout", "sim")),  # after fleet: joins its `sim` group (sim defect)
)


def modules_for(argv: list[str]) -> list[str]:
    """The command modules needed to run ``argv`` (all of them for help or an unknown command)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    wanted = [module for module, names in COMMANDS if first in names]
    return wanted or [module for module, _ in COMMANDS]


def _register(argv: list[str]) -> None:
    import importlib

    for module in modules_for(argv):
        importlib.import_module(f"velyrix.cli.{module}").register(app)


_register(sys.argv[1:])


def _print_error(exc: errors.VelyrixError) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[bold red]Error:[/] {escape(exc.message)}", markup=True)  # messages quote user text
    if exc.hint:
        console.print(f"[yellow]Hint:[/] {escape(exc.hint)}", markup=True)


def run() -> None:
    """Console-script entry: runs the app; errors become a message and exit code, not a traceback.

    Exit codes: 0 success, 1 failure at run time, 2 bad input (spec, flags, values). ``--debug`` (or
    ``VELYRIX_DEBUG=1``) shows tracebacks.
    """
    debug = settings.load().client.debug or "--debug" in sys.argv[1:]
    sys.argv = [a for a in sys.argv if a != "--debug"]
    try:
        app()
    except errors.VelyrixError as exc:
        if debug:
            raise
        _print_error(exc)
        sys.exit(2 if exc.user_error else 1)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if debug:
            raise
        print(
            f"Error: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)", file=sys.stderr
        )
        sys.exit(1)


if __name__ == "__main__":
    run()
