"""Where a configuration comes from: one ``.tf`` / ``.tf.json`` file, or a directory whose ``.tf`` and
``.tf.json`` files together form one configuration (in lexical order, as Terraform reads them).

Input: a path. Output: one parsed root ``hcl.Block`` per file and the directory that relative paths
(``path.module``, ``file()``, auto-loaded ``.tfvars``) start from. Unreadable input is a ``SpecError``.
"""

from __future__ import annotations

from pathlib import Path

from velyrix import errors
from velyrix.declarations import hcl

MAX_FILES = 256
"""At most this many files in a configuration directory."""
_PARSED: dict[tuple[str, str], hcl.Block] = {}
"""The last few files parsed in this process, by (name, text): ``velyrix plan`` reads the same file for its
clusters (``loader``) and for its connectivity resources (``connectivity``). Parsed blocks are never changed
after parsing (``expansion`` builds copies), so one parse serves both."""
_PARSED_MAX = 8


def is_json(name: str) -> bool:
    """Whether ``name`` is in Terraform's JSON syntax."""
    return name.endswith(".tf.json") or name.endswith(".json")


def parse_text(text: str, filename: str) -> hcl.Block:
    """The root block of one file's ``text``, by its syntax (HCL, or JSON for ``*.tf.json``)."""
    if not is_json(filename):
        return hcl.parse(text, filename)
    from velyrix.declarations import jsonconfig  # only JSON configurations pay for it

    return jsonconfig.parse(text, filename)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise errors.SpecError(
            [errors.Diagnostic(str(path), 1, 1, f"cannot read file: {reason}", expected="a readable UTF-8 HCL file")]
        ) from None


def _parse_file(text: str, filename: str) -> hcl.Block:
    """``parse_text``, once per (name, text) among the last ``_PARSED_MAX`` files of this process."""
    key = (filename, text)
    root = _PARSED.get(key)
    if root is None:
        root = parse_text(text, filename)
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = root
    return root


def configuration_files(directory: Path) -> list[Path]:
    """The ``.tf`` and ``.tf.json`` files of ``directory``, sorted by name."""
    found = sorted(
        [p for p in directory.iterdir() if p.is_file() and (p.name.endswith(".tf") or p.name.endswith(".tf.json"))],
        key=lambda p: p.name,
    )
    if not found:
        raise errors.SpecError(
            [
                errors.Diagnostic(
                    str(directory),
                    1,
                    1,
                    "no .tf or .tf.json files in this directory",
                    expected="a directory holding the configuration's .tf files",
                )
            ]
        )
    if len(found) > MAX_FILES:
        raise errors.SpecError(
            [errors.Diagnostic(str(directory), 1, 1, f"{len(found)} configuration files; at most {MAX_FILES}")]
        )
    return found


def read_configuration(path: Path) -> tuple[list[hcl.Block], str]:
    """Parse the file or directory at ``path``; every file's syntax errors are reported together."""
    if path.is_dir():
        paths, base = configuration_files(path), path
    else:
        paths, base = [path], path.parent
    roots: list[hcl.Block] = []
    problems: list[errors.Diagnostic] = []
    for p in paths:
        try:
            roots.append(_parse_file(_read(p), str(p)))
        except errors.SpecError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise errors.SpecError(problems)
    return roots, str(base)
