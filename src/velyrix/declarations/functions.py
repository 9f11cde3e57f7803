"""The Terraform functions Velyrix evaluates: collection and type-conversion functions here, string,
numeric and encoding ones in ``function_strings``; ``try`` and ``can`` live in ``evaluation`` (they
need unevaluated arguments). The list is documented in docs/terraform-language.md.

``call(name, args, base_dir)`` checks the argument count and runs the function; errors are
``FunctionError`` (``evaluation`` adds the position).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from velyrix.declarations import expressions, function_strings, typeexpr
from velyrix.declarations.typeexpr import FunctionError

MAX_FILE_BYTES = 1_000_000
"""``file()`` reads at most this many bytes (a declaration is not a place for large data)."""


def _list(value: Any, what: str = "argument") -> list[Any]:
    if isinstance(value, list):
        return value
    raise FunctionError(f"{what} must be a list, got {typeexpr.kind_of(value)}", "a list")


def _map(value: Any, what: str = "argument") -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise FunctionError(f"{what} must be a map or an object, got {typeexpr.kind_of(value)}", "a map")


def _int(value: Any) -> int:
    return function_strings._int(value)


def length(value: Any) -> int:
    if isinstance(value, (list, dict, str)):
        return len(value)
    raise FunctionError(f"length() needs a string, a list or a map, got {typeexpr.kind_of(value)}")


def lookup(m: Any, key: Any, *default: Any) -> Any:
    mapping, k = _map(m), function_strings._s(key, "key")
    if k in mapping:
        return mapping[k]
    if default:
        return default[0]
    raise FunctionError(f"the map has no key {k!r} and no default was given", "lookup(map, key, default)")


def merge(*maps: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in maps:
        if m is not None:
            out.update(_map(m))
    return out


def element(lst: Any, index: Any) -> Any:
    items = _list(lst)
    if not items:
        raise FunctionError("cannot use element() on an empty list")
    return items[_int(index) % len(items)]


def index_(lst: Any, value: Any) -> int:
    for i, item in enumerate(_list(lst)):
        if typeexpr.equal(item, value):
            return i
    raise FunctionError(f"{typeexpr.show(value)} is not in the list")


def flatten(lst: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list(lst):
        out.extend(flatten(item) if isinstance(item, list) else [item])
    return out


def distinct(lst: Any) -> list[Any]:
    return typeexpr._distinct(_list(lst))


def chunklist(lst: Any, size: Any) -> list[list[Any]]:
    items, n = _list(lst), _int(size)
    if n < 0:
        raise FunctionError("the chunk size must not be negative")
    return [items] if n == 0 else [items[i : i + n] for i in range(0, len(items), n)]


def range_(*args: Any) -> list[Any]:
    nums = [function_strings._n(a) for a in args]
    start, stop, step = (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2 else 1)
    if step == 0:
        raise FunctionError("the step of range() must not be zero")
    out: list[Any] = []
    value = start
    while (value < stop) if step > 0 else (value > stop):
        out.append(typeexpr.number(value))
        value += step
        if len(out) > 1024:
            raise FunctionError("range() would produce more than 1024 elements")
    return out


def slice_(lst: Any, start: Any, end: Any) -> list[Any]:
    items, a, b = _list(lst), _int(start), _int(end)
    if not 0 <= a <= b <= len(items):
        raise FunctionError(f"slice indexes {a}..{b} are out of range for a list of {len(items)}")
    return items[a:b]


def sort(lst: Any) -> list[str]:
    return sorted(function_strings._s(v, "element") for v in _list(lst))


def sum_(lst: Any) -> Any:
    items = _list(lst)
    if not items:
        raise FunctionError("cannot sum an empty list")
    return typeexpr.number(sum(function_strings._n(v, "element") for v in items))


def zipmap(keys: Any, values: Any) -> dict[str, Any]:
    k, v = _list(keys), _list(values)
    if len(k) != len(v):
        raise FunctionError(f"{len(k)} keys but {len(v)} values")
    return {function_strings._s(a, "key"): b for a, b in zip(k, v, strict=True)}


def one(lst: Any) -> Any:
    items = _list(lst)
    if len(items) > 1:
        raise FunctionError(f"one() needs a list of zero or one element, got {len(items)}")
    return items[0] if items else None


def coalesce(*values: Any) -> Any:
    for v in values:
        if v is not None and v != "":
            return v
    raise FunctionError("no non-null, non-empty argument")


def coalescelist(*lists: Any) -> list[Any]:
    for lst in lists:
        if _list(lst):
            return list(lst)
    return []


def _bools(lst: Any) -> list[bool]:
    return [typeexpr.convert(v, typeexpr.BOOL, what="element") for v in _list(lst)]


def setop(kind: str) -> Callable[..., list[Any]]:
    def run(*sets: Any) -> list[Any]:
        first = typeexpr._distinct(_list(sets[0]))
        others = [_list(s) for s in sets[1:]]
        if kind == "union":
            return typeexpr._distinct(first + [v for s in others for v in s])
        if kind == "intersection":
            return [v for v in first if all(any(typeexpr.equal(v, o) for o in s) for s in others)]
        return [v for v in first if not any(typeexpr.equal(v, o) for s in others for o in s)]

    return run


def transpose(m: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, values in _map(m).items():
        for v in _list(values):
            out.setdefault(function_strings._s(v), []).append(key)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _convert(t: Any) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        try:
            return typeexpr.convert(value, t, what="argument")
        except expressions.ExpressionError as exc:
            raise FunctionError(exc.message, typeexpr.describe(t)) from None

    return run


def tomap(value: Any) -> dict[str, Any]:
    return dict(_map(value))


def tolist(value: Any) -> list[Any]:
    return list(_list(value))


def file_(base_dir: str, path: Any) -> str:
    """The text of a file; a relative path starts at the current directory, as in Terraform
    (``base_dir`` is accepted for ``path.module``-free callers and not used for relative paths)."""
    target = Path(function_strings._s(path, "path"))
    try:
        data = target.read_bytes()[: MAX_FILE_BYTES + 1]
    except OSError as exc:
        raise FunctionError(f"cannot read {target}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise FunctionError(f"{target} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FunctionError(f"{target} is not UTF-8 text (use filebase64)") from None


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    **function_strings.FUNCTIONS,
    "length": (length, 1, 1),
    "lookup": (lookup, 2, 3),
    "merge": (merge, 0, None),
    "keys": (lambda m: sorted(_map(m)), 1, 1),
    "values": (lambda m: [_map(m)[k] for k in sorted(_map(m))], 1, 1),
    "concat": (lambda *ls: [v for lst in ls for v in _list(lst)], 0, None),
    "contains": (lambda lst, v: any(typeexpr.equal(x, v) for x in _list(lst)), 2, 2),
    "element": (element, 2, 2),
    "index": (index_, 2, 2),
    "flatten": (flatten, 1, 1),
    "distinct": (distinct, 1, 1),
    "compact": (lambda lst: [v for v in _list(lst) if v is not None and v != ""], 1, 1),
    "chunklist": (chunklist, 2, 2),
    "range": (range_, 1, 3),
    "reverse": (lambda lst: list(reversed(_list(lst))), 1, 1),
    "slice": (slice_, 3, 3),
    "sort": (sort, 1, 1),
    "sum": (sum_, 1, 1),
    "zipmap": (zipmap, 2, 2),
    "one": (one, 1, 1),
    "coalesce": (coalesce, 1, None),
    "coalescelist": (coalescelist, 1, None),
    "alltrue": (lambda lst: all(_bools(lst)), 1, 1),
    "anytrue": (lambda lst: any(_bools(lst)), 1, 1),
    "setunion": (setop("union"), 1, None),
    "setintersection": (setop("intersection"), 1, None),
    "setsubtract": (setop("subtract"), 2, 2),
    "transpose": (transpose, 1, 1),
    "tostring": (_convert(typeexpr.STRING), 1, 1),
    "tonumber": (_convert(typeexpr.NUMBER), 1, 1),
    "tobool": (_convert(typeexpr.BOOL), 1, 1),
    "tolist": (tolist, 1, 1),
    "toset": (lambda v: typeexpr._distinct(_list(v)), 1, 1),
    "tomap": (tomap, 1, 1),
    "file": (file_, 1, 1),
    "fileexists": (lambda base, p: Path(function_strings._s(p)).is_file(), 1, 1),
}
NEEDS_BASE_DIR = ("file", "fileexists")
EVALUATED_LAZILY = ("try", "can")
"""Functions that ``evaluation`` runs itself, on unevaluated arguments."""


def call(name: str, args: list[Any], base_dir: str = ".") -> Any:
    """Run function ``name`` on ``args``; ``base_dir`` is where ``file()`` paths start (path.module)."""
    fn, least, most = FUNCTIONS[name]
    if len(args) < least or (most is not None and len(args) > most):
        want = f"{least}" if least == most else f"{least} to {most}" if most is not None else f"at least {least}"
        raise FunctionError(f"takes {want} argument{'s' if most != 1 else ''}, got {len(args)}")
    if name in NEEDS_BASE_DIR:
        return fn(base_dir, *args)
    try:
        return fn(*args)
    except (TypeError, ValueError, OverflowError) as exc:
        raise FunctionError(str(exc)) from None


def documented() -> list[str]:
    """Every function name Velyrix evaluates, sorted (``try`` and ``can`` included)."""
    return sorted([*FUNCTIONS, *EVALUATED_LAZILY])
