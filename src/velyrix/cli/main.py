"""Entry point of the ``velyrix`` command.

Command modules are registered here, one line each. Keep imports at module level cheap: a command
imports heavy libraries (FastAPI, SQLAlchemy, numpy, networkx) inside its function, so that
``velyrix plan`` stays fast.
"""

from __future__ import annotations

import os
import sys

import typer

from velyrix import errors

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
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root() -> None:
    """Velyrix: the software of a GPU cloud."""


def _register() -> None:
    # One line per command module; each module attaches its commands to ``app``.
    from velyrix.cli import plan as _plan

    _plan.register(app)
    from velyrix.cli import agent as _agent
    _agent.register(app)
    from velyrix.cli import apply as _apply
    _apply.register(app)
    from velyrix.cli import fleet as _fleet
    _fleet.register(app)
    from velyrix.cli import sim_exporter as _sim_exporter  # keep after any `sim` group module: joins that group
    _sim_exporter.register(app)
    from velyrix.cli import server as _server
    _server.register(app)
    from velyrix.cli import login as _login
    _login.register(app)
    from velyrix.cli import fabric as _fabric
    _fabric.register(app)

    from velyrix.cli import checkpoint as _checkpoint
    _checkpoint.register(app)
    from velyrix.cli import goodput as _goodput
    _goodput.register(app)
    from velyrix.cli import health as _health
    _health.register(app)
    from velyrix.cli import scheduler as _scheduler
    _scheduler.register(app)


_register()


def _print_error(exc: errors.VelyrixError) -> None:
    from rich.console import Console

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[bold red]Error:[/] {exc.message}", markup=True)
    if exc.hint:
        console.print(f"[yellow]Hint:[/] {exc.hint}", markup=True)


def run() -> None:
    """Console-script entry: runs the app; errors become a message and exit code, not a traceback.

    Exit codes: 0 success, 1 failure at run time, 2 bad input (spec, flags, values). ``--debug`` (or
    ``VELYRIX_DEBUG=1``) shows tracebacks.
    """
    debug = os.environ.get("VELYRIX_DEBUG") == "1" or "--debug" in sys.argv[1:]
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
        print(f"Error: internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run()
