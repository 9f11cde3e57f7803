"""HCL (Terraform syntax) to positioned nodes, with python-hcl2's parser.

python-hcl2's dictionary output drops positions, so we walk its lark parse tree ourselves and keep
the line and column of every block, attribute and value: error messages must point at them.
Expressions are evaluated later (``velyrix.declarations.expressions``) once variables are known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.declarations import rules


@dataclass
class Attribute:
    """``name = expr`` with the position of its name."""

    name: str
    expr: Any  # a lark Tree or Token; evaluated by expressions.evaluate
    line: int
    column: int


@dataclass
class Block:
    """``type "label" ... { body }`` with the position of its type keyword."""

    type: str
    labels: list[str]
    line: int
    column: int
    attributes: list[Attribute] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    file: str = ""
    """The file the block was declared in (a configuration may be a directory of files)."""


def _pos(node: Any) -> tuple[int, int]:
    """First (line, column) inside a lark Tree or Token; (1, 1) when unknown."""
    from lark import Token, Tree

    if isinstance(node, Token):
        return (node.line or 1, node.column or 1)
    if isinstance(node, Tree):
        meta = getattr(node, "meta", None)
        if meta is not None and not getattr(meta, "empty", True):
            return (meta.line, meta.column)
        for child in node.children:
            if isinstance(child, (Token, Tree)):
                return _pos(child)
    return (1, 1)


def _identifier(node: Any) -> str:
    from lark import Token, Tree

    if isinstance(node, Token):
        return str(node)
    if isinstance(node, Tree):
        for child in node.children:
            if isinstance(child, (Token, Tree)):
                return _identifier(child)
    return ""


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def unescape(text: str) -> str:
    r"""Decode the escapes of a quoted HCL string in one pass: ``\n \r \t \" \\ \uNNNN \UNNNNNNNN``."""
    if "\\" not in text:
        return text

    def one(m: Any) -> str:
        body = m.group(1)
        if len(body) > 1:
            code = int(body[1:], 16)
            # a lone surrogate (\uD800) is kept, so the text rules refuse it by name (as the API does)
            return chr(code) if code <= 0x10FFFF else "\ufffd"
        return str(_ESCAPES.get(body, "\\" + body))

    return _ESCAPE.sub(one, text)


def _string_label(node: Any) -> str:
    """The text of a block label such as ``"velyrix_cluster"`` (string tree) or a bare identifier."""
    from lark import Token, Tree

    if isinstance(node, Tree) and node.data == "string":
        return "".join(
            unescape(str(c.children[0]))  # a label is a quoted string: its escapes are decoded
            for c in node.children
            if isinstance(c, Tree) and c.data == "string_part" and c.children and isinstance(c.children[0], Token)
        )
    return _identifier(node)


def _body(tree: Any, into: Block, file: str = "") -> None:
    from lark import Tree

    for child in tree.children:
        if not isinstance(child, Tree):
            continue
        if child.data == "attribute":
            name_node = child.children[0]
            exprs = [c for c in child.children[1:] if isinstance(c, Tree)]
            line, col = _pos(name_node)
            into.attributes.append(Attribute(_identifier(name_node), exprs[-1] if exprs else None, line, col))
        elif child.data == "block":
            parts = [c for c in child.children if isinstance(c, Tree)]
            head, rest = parts[0], parts[1:]
            line, col = _pos(head)
            block = Block(type=_identifier(head), labels=[], line=line, column=col, file=file)
            for part in rest:
                if part.data == "body":
                    _body(part, block, file)
                else:
                    block.labels.append(_string_label(part))
            into.blocks.append(block)


def parse(text: str, filename: str) -> Block:
    """Parse HCL ``text`` into a root ``Block`` (type ``""``) of positioned attributes and blocks.

    Raises ``errors.SpecError`` with the position of a syntax error and the tokens expected there.
    """
    import hcl2
    from lark import exceptions as lark_exc

    too_deep = _too_deep(text)
    if too_deep is not None:
        raise errors.SpecError(
            [
                errors.Diagnostic(
                    filename,
                    *too_deep,
                    f"nested deeper than {rules.MAX_NESTING} levels of (), [] and {{}}",
                    expected=f"at most {rules.MAX_NESTING} levels",
                )
            ]
        )
    try:
        tree = hcl2.parses_to_tree(text if text.endswith("\n") else text + "\n")
    except lark_exc.UnexpectedInput as exc:
        diagnostic = _unterminated_string(text, filename, getattr(exc, "line", 0) or 0)
        raise errors.SpecError([diagnostic or _syntax_diagnostic(exc, filename)]) from None
    except lark_exc.LarkError as exc:
        raise errors.SpecError([errors.Diagnostic(filename, 1, 1, f"cannot parse HCL: {exc}")]) from None
    except RecursionError:  # a shape the nesting scan does not see (e.g. a long chain of operators)
        raise errors.SpecError([errors.Diagnostic(filename, 1, 1, "expression too complex to parse")]) from None
    root = Block(type="", labels=[], line=1, column=1, file=filename)
    for child in tree.children:
        if getattr(child, "data", None) == "body":
            _body(child, root, filename)
    return root


def _too_deep(text: str) -> tuple[int, int] | None:
    """(line, column) of the first bracket nested deeper than ``rules.MAX_NESTING``, outside strings and
    comments; None when the text stays within it."""
    depth, line, col, i, n = 0, 1, 0, 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        col += 1
        if ch == "\n":
            line, col = line + 1, 0
        elif in_string:
            if ch == "\\":
                i += 1
                col += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch in "([{":
            depth += 1
            if depth > rules.MAX_NESTING:
                return line, col
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1
    return None


def _unterminated_string(text: str, filename: str, error_line: int) -> errors.Diagnostic | None:
    """A quoted string that never closes on its own line (HCL strings are single-line), at or
    before the line where the parser gave up; the parser itself reports such errors lines later."""
    for number, raw in enumerate(text.splitlines(), 1):
        if error_line and number > error_line:
            break
        in_string, escaped, depth = False, False, 0
        for col, ch in enumerate(raw, 1):
            if not in_string and ch == "#" or raw[col - 1 : col + 1] == "//" and not in_string:
                break
            if escaped:
                escaped = False
            elif ch == "\\" and in_string:
                escaped = True
            elif ch == '"' and depth == 0:
                in_string = not in_string
                start = col
            elif in_string and raw[col - 1 : col + 1] == "${":
                depth += 1
            elif in_string and ch == "}" and depth:
                depth -= 1
        if in_string and "<<" not in raw:
            return errors.Diagnostic(
                filename, number, start, "unterminated string", expected="a closing '\"' on the same line"
            )
    return None


_TOKEN_WORDS = {
    "EQ": "'='",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "NAME": "a name",
    "DBLQUOTE": "'\"'",
    "INT_LITERAL": "a number",
    "FLOAT_LITERAL": "a number",
    "NL_OR_COMMENT": "a new line",
    "STRING_CHARS": "string characters",
    "TRUE": "true",
    "FALSE": "false",
    "NULL": "null",
    "COLON": "':'",
    "DOT": "'.'",
}


def _syntax_diagnostic(exc: Any, filename: str) -> errors.Diagnostic:
    line = getattr(exc, "line", 1) or 1
    column = getattr(exc, "column", 1) or 1
    expected = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or [])
    words = sorted({_TOKEN_WORDS.get(t, t.lower().replace("_", " ")) for t in expected})
    token = getattr(exc, "token", None) or getattr(exc, "char", None)
    found = f" near {str(token).strip()[:20]!r}" if token is not None and str(token).strip() else ""
    if line < 0:
        line, column = 1, 1
    return errors.Diagnostic(
        filename, line, column, f"syntax error{found}", expected=", ".join(words[:6]) if words else "valid HCL"
    )
