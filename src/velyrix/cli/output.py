"""``velyrix output FILE [NAME]``: the ``output`` values of a configuration, as ``terraform output`` shows
them (sensitive ones hidden in the list, shown when named; ``-json`` and ``-raw`` as in Terraform)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from velyrix.cli import common

OUTPUT_HELP = """Show the output values of the configuration FILE (a .tf file or a directory).

Examples:

  velyrix output cluster.tf

  velyrix output cluster.tf gpus -raw
"""


def register(app: typer.Typer) -> None:
    app.command(name="output", help=OUTPUT_HELP)(output)


def output(
    file: Path = typer.Argument(..., help="The configuration (.tf, .tf.json or a directory).", show_default=False),
    name: str = typer.Argument(None, help="One output to show (default: all).", show_default=False),
    json_out: bool = typer.Option(False, "-json", "--json", help="Print JSON (sensitive values included)."),
    raw: bool = typer.Option(False, "-raw", "--raw", help="Print one string, number or bool as it is."),
    var: list[str] = typer.Option(None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable (repeatable)."),
    var_file: list[Path] = typer.Option(None, "-var-file", "--var-file", metavar="FILE", help="A .tfvars file."),
) -> None:
    from velyrix import errors
    from velyrix.declarations import loader, typeexpr

    spec_file = loader.load(file, variables=common.parse_vars(var), var_files=var_file or [])
    outputs = spec_file.outputs
    if name is not None:
        if name not in outputs:
            near = errors.closest(name, outputs)
            raise errors.InvalidInputError(
                f"no output '{name}' in {file}",
                hint=(f"did you mean '{near[0]}'? " if near else "") + "outputs: " + (", ".join(outputs) or "none"),
            )
        value = outputs[name].value
        if raw:
            if isinstance(value, (list, dict)) or value is None:
                raise errors.InvalidInputError(f"output '{name}' is not a string, number or bool", hint="use -json")
            sys.stdout.write(typeexpr.to_string(value))
        elif json_out:
            common.print_json(value)
        else:
            sys.stdout.write(typeexpr.show(value) + "\n")
        return
    if json_out:
        common.print_json(
            {
                k: {"sensitive": o.sensitive, "type": typeexpr.kind_of(o.value), "value": o.value}
                for k, o in outputs.items()
            }
        )
        return
    for key, out in outputs.items():
        sys.stdout.write(f"{key} = {'<sensitive>' if out.sensitive else typeexpr.show(out.value)}\n")
    if not outputs:
        sys.stdout.write(f"No outputs in {file}.\n")
