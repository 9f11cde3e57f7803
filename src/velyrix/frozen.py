"""``@frozen``: what ``@dataclass(frozen=True)`` makes of a class, without generating code at import.

In Python 3.11, ``dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` for each class and compiles it with ``exec`` (about 1 ms a class): the ~45
settings groups, catalog records and declaration models that ``velyrix plan`` imports cost tens of ms of
start-up that way (docs/benchmarks.md, issue 14). ``frozen`` gives the class the same behaviour from
methods written once here, and the same ``__dataclass_fields__`` (real ``dataclasses.Field`` objects), so
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` treat it as the dataclass it would be;
type checkers see it as one through ``dataclass_transform``. tests/test_frozen.py compares it with
``dataclass(frozen=True)`` on the same class bodies.

Covered: fields with a default, a ``field(default=..., default_factory=..., metadata=..., repr=...,
compare=..., hash=...)``, or none, on a class whose only base is ``object``. Anything else (a base class,
``ClassVar``, ``InitVar``, ``init=False``, ``kw_only``) is refused at import with a ``TypeError``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

_MISSING: Any = dataclasses.MISSING
_FIELD_KIND: Any = dataclasses._FIELD  # type: ignore[attr-defined]  # the mark dataclasses.fields() keeps
_PARAMS: Any = dataclasses._DataclassParams  # type: ignore[attr-defined]


def _fields_of(cls: type) -> list[dataclasses.Field[Any]]:
    """The class's fields in declaration order, built as ``dataclass`` builds them (defaults left on the class)."""
    out: list[dataclasses.Field[Any]] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "ClassVar" in text or "InitVar" in text or "KW_ONLY" in text:
            raise TypeError(f"{cls.__qualname__}.{name}: @frozen covers plain fields only")
        default = cls.__dict__.get(name, _MISSING)
        spec: dataclasses.Field[Any] = (
            default if isinstance(default, dataclasses.Field) else dataclasses.field(default=default)
        )
        if not spec.init or spec.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{name}: @frozen covers init fields only")
        if isinstance(spec.default, (list, dict, set)):
            raise ValueError(
                f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory"
            )
        spec.name = name
        spec.type = annotation
        spec._field_type = _FIELD_KIND  # type: ignore[attr-defined]
        if isinstance(default, dataclasses.Field):
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        out.append(spec)
    return out


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    specs = type(self).__frozen_specs__
    if len(args) > len(specs):
        raise TypeError(
            f"{type(self).__qualname__}.__init__() takes {len(specs) + 1} positional arguments"
            f" but {len(args) + 1} were given"
        )
    for index, (name, default, factory) in enumerate(specs):
        if index < len(args):
            if name in kwargs:
                raise TypeError(f"{type(self).__qualname__}.__init__() got multiple values for argument '{name}'")
            value = args[index]
        elif name in kwargs:
            value = kwargs.pop(name)
        elif default is not _MISSING:
            value = default
        elif factory is not _MISSING:
            value = factory()
        else:
            raise TypeError(f"{type(self).__qualname__}.__init__() missing 1 required positional argument: '{name}'")
        object.__setattr__(self, name, value)
    if kwargs:
        raise TypeError(
            f"{type(self).__qualname__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
        )


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__frozen_repr__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = type(self).__frozen_compare__
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in type(self).__frozen_hash__))


def _setattr(self: Any, name: str, value: object) -> None:
    if type(self) is self.__frozen_class__ or name in self.__dataclass_fields__:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)


def _delattr(self: Any, name: str) -> None:
    if type(self) is self.__frozen_class__ or name in self.__dataclass_fields__:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T]) -> type[T]:
    """``cls`` with the methods and field table of ``dataclass(frozen=True)`` (returns the same class)."""
    if cls.__bases__ != (object,):
        raise TypeError(f"{cls.__qualname__}: @frozen covers classes without base classes")
    specs = _fields_of(cls)
    ns: dict[str, Any] = {
        "__dataclass_fields__": {f.name: f for f in specs},
        "__dataclass_params__": _PARAMS(True, True, False, False, False, True),
        "__frozen_class__": cls,
        "__frozen_specs__": tuple((f.name, f.default, f.default_factory) for f in specs),
        "__frozen_repr__": tuple(f.name for f in specs if f.repr),
        "__frozen_compare__": tuple(f.name for f in specs if f.compare),
        "__frozen_hash__": tuple(f.name for f in specs if (f.compare if f.hash is None else f.hash)),
        "__match_args__": tuple(f.name for f in specs),
        "__init__": _init,
        "__repr__": _repr,
        "__eq__": _eq,
        "__hash__": _hash,
        "__setattr__": _setattr,
        "__delattr__": _delattr,
    }
    for name, value in ns.items():
        if name in cls.__dict__ and not name.startswith("__dataclass") and not name.startswith("__frozen"):
            raise TypeError(f"{cls.__qualname__} defines {name}: @frozen would replace it")
        setattr(cls, name, value)
    if not cls.__doc__:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in specs)})"
    return cls
