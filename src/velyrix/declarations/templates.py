"""String templates of HCL: quoted strings, heredocs and ``.tf.json`` strings as a sequence of literal
text, ``${...}`` interpolations and ``%{if}``/``%{for}`` directives (with ``~`` strip markers).

Inputs: python-hcl2's ``string`` tree, or the raw text of a heredoc or JSON string (re-parsed as a
quoted HCL string). Output: a ``Template`` that ``evaluation.render`` turns into text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from velyrix.declarations import expressions, hcl


@dataclass
class Interpolation:
    """``${expr}``."""

    expr: Any
    line: int
    column: int


@dataclass
class Template:
    """Literal strings and directives, in order."""

    parts: list[Any] = field(default_factory=list)


@dataclass
class IfDirective:
    """``%{if cond}then%{else}otherwise%{endif}``."""

    cond: Any
    line: int
    column: int
    then: Template = field(default_factory=Template)
    otherwise: Template = field(default_factory=Template)


@dataclass
class ForDirective:
    """``%{for k, v in source}body%{endfor}``."""

    names: list[str]
    source: Any
    line: int
    column: int
    body: Template = field(default_factory=Template)


def _strip(kind: str, node: Any) -> tuple[bool, bool]:
    """(strip before, strip after) of a directive from its ``~`` markers."""
    tokens = [str(c) for c in node.children if not hasattr(c, "data")]
    marks = [i for i, t in enumerate(tokens) if t == "~"]
    return (bool(marks) and marks[0] == 1, bool(marks) and marks[-1] == len(tokens) - 2)


def from_string_tree(node: Any) -> Template:
    """The template of a quoted string tree."""
    from lark import Token, Tree

    root = Template()
    stack: list[tuple[Any, Template]] = [(None, root)]
    pending_strip = False
    for part in node.children:
        if not isinstance(part, Tree) or part.data != "string_part":
            continue
        for piece in part.children:
            target = stack[-1][1]
            if isinstance(piece, Token):
                text = _literal(piece)
                if pending_strip:
                    text, pending_strip = text.lstrip(), False
                target.parts.append(text)
                continue
            line, col = hcl._pos(piece)
            kind = piece.data
            before, after = _strip(kind, piece) if kind.startswith("template_") else (False, False)
            if before and target.parts and isinstance(target.parts[-1], str):
                target.parts[-1] = target.parts[-1].rstrip()
            pending_strip = after
            _directive(piece, stack, line, col)
    if len(stack) > 1:
        d = stack[-1][0]
        closing = "%{endif}" if isinstance(d, IfDirective) else "%{endfor}"
        raise expressions.ExpressionError(d.line, d.column, "unclosed template directive", expected=closing)
    return root


def _directive(piece: Any, stack: list[tuple[Any, Template]], line: int, col: int) -> None:
    """Add one ``${...}`` or ``%{...}`` piece to the template being built (``stack``: open directives)."""
    from lark import Tree

    kind, target = piece.data, stack[-1][1]
    exprs = [c for c in piece.children if isinstance(c, Tree) and c.data != "identifier"]
    if kind == "interpolation":
        target.parts.append(Interpolation(exprs[0], line, col))
    elif kind == "template_if_start":
        directive = IfDirective(exprs[0], line, col)
        target.parts.append(directive)
        stack.append((directive, directive.then))
    elif kind == "template_else":
        _expect(stack, IfDirective, "%{else}", line, col)
        stack[-1] = (stack[-1][0], stack[-1][0].otherwise)
    elif kind in ("template_endif", "template_endfor"):
        _expect(stack, IfDirective if kind == "template_endif" else ForDirective, f"%{{{kind[9:]}}}", line, col)
        stack.pop()
    elif kind == "template_for_start":
        names = [str(c.children[0]) for c in piece.children if isinstance(c, Tree) and c.data == "identifier"]
        loop = ForDirective(names, exprs[0], line, col)
        target.parts.append(loop)
        stack.append((loop, loop.body))


def _expect(stack: list[tuple[Any, Template]], kind: type, word: str, line: int, col: int) -> None:
    if not isinstance(stack[-1][0], kind):
        raise expressions.ExpressionError(line, col, f"{word} without its opening directive")


def _literal(tok: Any) -> str:
    text = str(tok)
    kind = getattr(tok, "type", "")
    if kind == "ESCAPED_INTERPOLATION":
        return text[1:]  # $${ -> ${
    if kind == "ESCAPED_DIRECTIVE":
        return text[1:]  # %%{ -> %{
    return hcl.unescape(text)


def from_heredoc(raw: str, trim: bool, line: int, column: int) -> Template:
    """The template of a heredoc token (``<<EOT`` or ``<<-EOT`` through its closing marker)."""
    lines = raw.replace("\r\n", "\n").split("\n")
    body = lines[1:-2] if len(lines) >= 3 else []
    if trim:
        indents = [len(x) - len(x.lstrip(" \t")) for x in body if x.strip()]
        cut = min(indents) if indents else 0
        body = [x[cut:] for x in body]
    text = "\n".join(body) + ("\n" if body else "")
    return from_source(text, line + 1, column)


def from_source(text: str, line: int = 1, column: int = 1) -> Template:
    """The template of raw template ``text`` (a heredoc body or a ``.tf.json`` string)."""
    if "${" not in text and "%{" not in text:
        return Template([text])
    import hcl2
    from lark import Tree
    from lark import exceptions as lark_exc

    try:
        tree = hcl2.parses_to_tree('x = "' + _quote(text) + '"\n')
    except lark_exc.LarkError:
        raise expressions.ExpressionError(line, column, "cannot parse template", expected="valid ${...}") from None
    subtrees = tree.iter_subtrees_topdown()  # type: ignore[no-untyped-call]
    found = next((t for t in subtrees if isinstance(t, Tree) and t.data == "string"), None)
    if found is None:
        raise expressions.ExpressionError(line, column, "cannot parse template")
    _shift(found, line - 1)
    return from_string_tree(found)


def _shift(tree: Any, lines: int) -> None:
    """Move the positions of a re-parsed template to where it stands in its file."""
    from lark import Token, Tree

    for node in tree.iter_subtrees():
        if not getattr(node.meta, "empty", True):
            node.meta.line += lines
        for child in node.children:
            if isinstance(child, Token) and child.line is not None:
                child.line += lines
    if isinstance(tree, Tree):
        return


def _quote(text: str) -> str:
    """Template ``text`` as the inside of a quoted HCL string: literal parts escaped, ``${...}`` and
    ``%{...}`` sequences kept as written."""
    out: list[str] = []
    i = 0
    while i < len(text):
        two = text[i : i + 2]
        if two in ("$${", "%%{"):
            out.append(two)
            i += 2
        elif two in ("${", "%{"):
            end = _closing_brace(text, i + 2)
            out.append(text[i:end])
            i = end
        else:
            ch = text[i]
            out.append({'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}.get(ch, ch))
            i += 1
    return "".join(out)


def _closing_brace(text: str, start: int) -> int:
    """Index just after the ``}`` closing the interpolation opened before ``start``."""
    depth, i, quoted = 1, start, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def expressions_of(template: Template) -> list[Any]:
    """Every expression inside ``template`` (for reference analysis)."""
    out: list[Any] = []
    for part in template.parts:
        if isinstance(part, Interpolation):
            out.append(part.expr)
        elif isinstance(part, IfDirective):
            out += [part.cond, *expressions_of(part.then), *expressions_of(part.otherwise)]
        elif isinstance(part, ForDirective):
            out += [part.source, *expressions_of(part.body)]
    return out
