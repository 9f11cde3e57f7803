"""Terraform's string, numeric, encoding and hash functions (documented in docs/terraform-language.md).

Each function takes already evaluated arguments (plain Python values) and returns a value; wrong
arguments raise ``typeexpr.FunctionError``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from velyrix.declarations import expressions, typeexpr
from velyrix.declarations.typeexpr import FunctionError


def _s(value: Any, what: str = "argument") -> str:
    if value is None or isinstance(value, (list, dict)):
        raise FunctionError(f"{what} must be a string, got {typeexpr.kind_of(value)}", "a string")
    return typeexpr.to_string(value)


def _n(value: Any, what: str = "argument") -> Any:
    try:
        return typeexpr.convert(value, typeexpr.NUMBER, what=what)
    except expressions.ExpressionError as exc:
        raise FunctionError(exc.message, "a number") from None


def _int(value: Any, what: str = "argument") -> int:
    n = _n(value, what)
    if not isinstance(n, int):
        raise FunctionError(f"{what} must be a whole number, got {n!r}", "a whole number")
    return n


_VERB = re.compile(r"%(?P<flags>[-+# 0]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?(?P<verb>[a-zA-Z%])")


def format_(fmt: Any, *args: Any) -> str:
    """``format("%s-%03d", "a", 7)``: verbs %s %d %f %e %g %t %q %v %x %X %o %b %%."""
    text, out, i, pos = _s(fmt, "format"), [], 0, 0
    for m in _VERB.finditer(text):
        out.append(text[pos : m.start()])
        pos = m.end()
        verb = m.group("verb")
        if verb == "%":
            out.append("%")
            continue
        if i >= len(args):
            raise FunctionError(f"not enough arguments for {m.group(0)!r}", f"{text.count('%')} arguments")
        out.append(_one(verb, args[i], m.group("flags") or "", m.group("width"), m.group("prec")))
        i += 1
    out.append(text[pos:])
    if i < len(args):
        raise FunctionError(f"too many arguments: {len(args)} given, the format uses {i}")
    return "".join(out)


MAX_PAD = 10_000
"""Widths, precisions and indents above this are refused (a declaration needs no megabyte strings)."""


def _one(verb: str, value: Any, flags: str, width: str | None, prec: str | None) -> str:
    if int(width or 0) > MAX_PAD or int(prec or 0) > MAX_PAD:
        raise FunctionError(f"width or precision above {MAX_PAD}")
    spec = flags.replace("#", "") + (width or "") + (f".{prec}" if prec is not None else "")
    if verb in "dxXob":
        n = _int(value, f"%{verb}")
        return format(n, spec.replace("-", "<") + {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb])
    if verb in "feEgG":
        return format(float(_n(value, f"%{verb}")), spec.replace("-", "<") + verb)
    if verb == "t":
        if not isinstance(value, bool):
            raise FunctionError("%t needs a bool", "true or false")
        return "true" if value else "false"
    if verb == "q":
        return json.dumps(_s(value, "%q"))
    if verb == "v" and "#" in flags or verb == "v" and isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    if verb in "sv":
        text = _s(value, f"%{verb}")
        if prec is not None:
            text = text[: int(prec)]
        return text.ljust(int(width)) if width and "-" in flags else text.rjust(int(width or 0))
    raise FunctionError(f"unsupported format verb %{verb}", "%s, %d, %f, %t, %q or %v")


def formatlist(fmt: Any, *args: Any) -> list[str]:
    lists = [a for a in args if isinstance(a, list)]
    n = len(lists[0]) if lists else 1
    if any(len(x) != n for x in lists):
        raise FunctionError("all list arguments must have the same length")
    return [format_(fmt, *[a[i] if isinstance(a, list) else a for a in args]) for i in range(n)]


def join(sep: Any, *lists: Any) -> str:
    items = [v for lst in lists for v in _list(lst)]
    return _s(sep, "separator").join(_s(v, "element") for v in items)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise FunctionError(f"a list is required, got {typeexpr.kind_of(value)}", "a list")
    return value


def split(sep: Any, text: Any) -> list[str]:
    s, t = _s(sep), _s(text)
    if t == "":
        return []
    return t.split(s) if s else list(t)


def substr(text: Any, offset: Any, length: Any) -> str:
    t, off, n = _s(text), _int(offset), _int(length)
    if off < 0:
        off = max(len(t) + off, 0)
    return t[off:] if n == -1 else t[off : off + n]


def indent(spaces: Any, text: Any) -> str:
    if not 0 <= _int(spaces) <= MAX_PAD:
        raise FunctionError(f"indent takes 0 to {MAX_PAD} spaces")
    pad = " " * _int(spaces)
    lines = _s(text).split("\n")
    return "\n".join([lines[0], *[pad + x if x else x for x in lines[1:]]])


def regex(pattern: Any, text: Any) -> Any:
    found = regexall(pattern, text)
    if not found:
        raise FunctionError("pattern did not match any part of the string")
    return found[0]


def regexall(pattern: Any, text: Any) -> list[Any]:
    try:
        rx = re.compile(_s(pattern))
    except re.error as exc:
        raise FunctionError(f"invalid regular expression: {exc}") from None
    out: list[Any] = []
    for m in rx.finditer(_s(text)):
        if rx.groupindex:
            out.append(m.groupdict())
        elif rx.groups:
            out.append(list(m.groups()))
        else:
            out.append(m.group(0))
    return out


def replace(text: Any, old: Any, new: Any) -> str:
    t, o, n = _s(text), _s(old), _s(new)
    if len(o) > 1 and o.startswith("/") and o.endswith("/"):
        try:
            return re.sub(o[1:-1], re.sub(r"\$\{?(\w+)\}?", r"\\g<\1>", n), t)
        except re.error as exc:
            raise FunctionError(f"invalid regular expression: {exc}") from None
    return t.replace(o, n)


def title(text: Any) -> str:
    return re.sub(r"(^|\s)(\w)", lambda m: m.group(1) + m.group(2).upper(), _s(text))


def trim(text: Any, chars: Any) -> str:
    return _s(text).strip(_s(chars))


def chomp(text: Any) -> str:
    return re.sub(r"(\r\n|\n|\r)+$", "", _s(text))


# --- numbers ---------------------------------------------------------------------------------------


def max_(*values: Any) -> Any:
    if not values:
        raise FunctionError("at least one number is required")
    return max(_n(v) for v in values)


def min_(*values: Any) -> Any:
    if not values:
        raise FunctionError("at least one number is required")
    return min(_n(v) for v in values)


def log(value: Any, base: Any) -> Any:
    x, b = _n(value), _n(base)
    if x <= 0 or b <= 0 or b == 1:
        raise FunctionError("log needs a positive number and a positive base other than 1")
    return typeexpr.number(math.log(x, b))


def pow_(base: Any, exp: Any) -> Any:
    try:
        return typeexpr.number(math.pow(_n(base), _n(exp)))
    except (OverflowError, ValueError):
        raise FunctionError("result out of range") from None


def parseint(text: Any, base: Any) -> int:
    b = _int(base)
    if not 2 <= b <= 62:
        raise FunctionError("base must be between 2 and 62")
    try:
        return int(_s(text), b)
    except ValueError:
        raise FunctionError(f"cannot parse {text!r} as a base {b} integer") from None


def signum(value: Any) -> int:
    n = _n(value)
    return int((n > 0) - (n < 0))


# --- encoding and hashes ---------------------------------------------------------------------------


def base64encode(text: Any) -> str:
    import base64

    return base64.b64encode(_s(text).encode("utf-8")).decode("ascii")


def urlencode(text: Any) -> str:
    import urllib.parse

    return urllib.parse.quote(_s(text), safe="")


def base64decode(text: Any) -> str:
    import base64

    try:
        return base64.b64decode(_s(text), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise FunctionError("not valid base64 of UTF-8 text") from None


def jsondecode(text: Any) -> Any:
    try:
        value = json.loads(_s(text), parse_constant=_no_constant)
    except ValueError as exc:
        raise FunctionError(f"not valid JSON: {exc}") from None
    return _normalise(value)


def _no_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON number")


def _normalise(value: Any) -> Any:
    if isinstance(value, float):
        return typeexpr.number(value)
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    return value


def csvdecode(text: Any) -> list[dict[str, str]]:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(_s(text))))
    if not rows:
        return []
    head = rows[0]
    if any(len(r) != len(head) for r in rows[1:]):
        raise FunctionError("every CSV row needs as many fields as the header")
    return [dict(zip(head, r, strict=True)) for r in rows[1:]]


def _hash(algo: str) -> Callable[[Any], str]:
    def digest(text: Any) -> str:
        import hashlib

        return hashlib.new(algo, _s(text).encode("utf-8")).hexdigest()

    return digest


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "format": (format_, 1, None),
    "formatlist": (formatlist, 1, None),
    "join": (join, 2, None),
    "split": (split, 2, 2),
    "lower": (lambda t: _s(t).lower(), 1, 1),
    "upper": (lambda t: _s(t).upper(), 1, 1),
    "title": (title, 1, 1),
    "trimspace": (lambda t: _s(t).strip(), 1, 1),
    "trim": (trim, 2, 2),
    "trimprefix": (lambda t, p: _s(t).removeprefix(_s(p)), 2, 2),
    "trimsuffix": (lambda t, p: _s(t).removesuffix(_s(p)), 2, 2),
    "replace": (replace, 3, 3),
    "substr": (substr, 3, 3),
    "strrev": (lambda t: _s(t)[::-1], 1, 1),
    "chomp": (chomp, 1, 1),
    "indent": (indent, 2, 2),
    "startswith": (lambda t, p: _s(t).startswith(_s(p)), 2, 2),
    "endswith": (lambda t, p: _s(t).endswith(_s(p)), 2, 2),
    "strcontains": (lambda t, p: _s(p) in _s(t), 2, 2),
    "regex": (regex, 2, 2),
    "regexall": (regexall, 2, 2),
    "abs": (lambda n: abs(_n(n)), 1, 1),
    "ceil": (lambda n: math.ceil(_n(n)), 1, 1),
    "floor": (lambda n: math.floor(_n(n)), 1, 1),
    "log": (log, 2, 2),
    "max": (max_, 1, None),
    "min": (min_, 1, None),
    "pow": (pow_, 2, 2),
    "signum": (signum, 1, 1),
    "parseint": (parseint, 2, 2),
    "base64encode": (base64encode, 1, 1),
    "base64decode": (base64decode, 1, 1),
    "jsonencode": (lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False), 1, 1),
    "jsondecode": (jsondecode, 1, 1),
    "urlencode": (urlencode, 1, 1),
    "csvdecode": (csvdecode, 1, 1),
    "md5": (_hash("md5"), 1, 1),
    "sha1": (_hash("sha1"), 1, 1),
    "sha256": (_hash("sha256"), 1, 1),
    "sha512": (_hash("sha512"), 1, 1),
}
