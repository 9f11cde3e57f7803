"""Connectivity resources of a configuration: ``velyrix_private_link`` (AWS Direct Connect, Azure
ExpressRoute, Google Cloud Interconnect, Oracle FastConnect), ``velyrix_bgp_session`` (BYOIP with ROA
evidence) and ``velyrix_vpn`` (IPsec), each attached to a cluster of the same configuration.

``load`` reads the same files as ``loader.load`` (which skips these resource types) and returns a
validated ``ConnectivityFile``, or raises one ``SpecError`` with every problem at file:line:column.
Ownership offline is what the declaration's evidence shows: a public ASN or BYOIP prefix needs a ROA
(``authorization`` block) naming the session's ASN as origin and covering the prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from velyrix import errors, settings
from velyrix.declarations import checks, configuration, connectivity_build, diagnostics, evaluation, files, hcl, loader
from velyrix.declarations import connectivity_specs as specs
from velyrix.declarations import variables as variables_mod

ConnectivityFile = specs.ConnectivityFile
TYPES = specs.TYPES


def load(
    path: str | Path,
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[str | Path] = (),
    env: Mapping[str, str] | None = None,
) -> ConnectivityFile:
    """The connectivity resources of the configuration at ``path`` (as ``loader.load`` reads it)."""
    roots, base_dir = files.read_configuration(Path(path))
    auto = variables_mod.auto_var_files(Path(base_dir))
    env = settings.terraform_variables() if env is None else env
    return _build(roots, str(path), base_dir, variables or {}, [*auto, *(Path(f) for f in var_files)], env)


def loads(
    text: str,
    filename: str = "<string>",
    variables: Mapping[str, str] | None = None,
    known_clusters: Sequence[str] | None = None,
) -> ConnectivityFile:
    """Like ``load`` for the HCL ``text`` named ``filename``; ``known_clusters`` (the API: the cluster
    the objects are put on) replaces the names of the text's own ``velyrix_cluster`` resources."""
    root = files.parse_text(text, filename)
    return _build([root], filename, ".", variables or {}, [], {}, known_clusters)


def _build(
    roots: list[hcl.Block],
    filename: str,
    base_dir: str,
    cli_vars: Mapping[str, str],
    var_files: list[Path],
    env: Mapping[str, str],
    known_clusters: Sequence[str] | None = None,
) -> ConnectivityFile:
    build = connectivity_build
    chk = diagnostics.Checker(filename)
    config = configuration.build(roots, chk, base_dir=base_dir, cli_vars=cli_vars, var_files=var_files, env=env)
    clusters = tuple(_cluster_names(config, chk) if known_clusters is None else known_clusters)
    out = build.Collected()
    for inst in config.instances:
        if inst.type in specs.TYPES:
            with loader._in_file(chk, inst.block.file):
                build.instance(inst, chk, out, clusters)
    build.cross_checks(out, chk)
    if chk.diagnostics:
        unique = {(d.file, d.line, d.column, d.message): d for d in chk.diagnostics}.values()
        raise errors.SpecError(sorted(unique, key=lambda d: (d.file != filename, d.file, d.line, d.column)))
    return specs.ConnectivityFile(filename, tuple(out.links), tuple(out.sessions), tuple(out.vpns), clusters)


def _cluster_names(config: configuration.Configuration, chk: diagnostics.Checker) -> list[str]:
    """The ``name`` of every cluster instance (what a connectivity resource's ``cluster`` names)."""
    names = []
    for inst in config.instances:
        if inst.type != "velyrix_cluster":
            continue
        try:
            attr = checks.find_attribute(inst.block, "name")
            names.append(str(evaluation.evaluate(attr.expr, inst.scope)))
        except (StopIteration, evaluation.ExpressionError):
            continue
    return names
