"""``velyrix.frozen.frozen`` behaves as ``dataclass(frozen=True)`` on the same class body: construction,
defaults, repr, equality, hashing, immutability and the field table read by ``dataclasses``' functions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from velyrix import catalog, settings
from velyrix.declarations import models
from velyrix.frozen import frozen


def _body() -> dict[str, object]:
    return {
        "__annotations__": {"name": "str", "count": "int", "tags": "dict[str, int]", "note": "str", "flag": "bool"},
        "__doc__": "A record.",
        "count": 3,
        "tags": field(default_factory=dict),
        "note": field(default="n", repr=False, compare=False, metadata={"scope": "x"}),
        "flag": field(default=True, hash=False),
    }


def _pair() -> tuple[type, type]:
    return frozen(type("Rec", (), _body())), dataclass(frozen=True)(type("Rec", (), _body()))


def test_construction_repr_equality_and_hash_match_dataclass() -> None:
    mine, theirs = _pair()
    for args, kwargs in [(("a",), {}), (("a", 5), {"note": "z"}), ((), {"name": "b", "tags": (1,), "flag": False})]:
        a, b = mine(*args, **kwargs), theirs(*args, **kwargs)
        assert repr(a) == repr(b)
        assert vars(a) == vars(b)
        assert (a == mine(*args, **kwargs)) is True
        assert a != b  # another class: both sides answer NotImplemented, as two dataclasses do
        try:
            expected: object = hash(b)
        except TypeError as e:  # a dict field: neither is hashable
            expected = str(e)
        try:
            got: object = hash(a)
        except TypeError as e:
            got = str(e)
        assert got == expected
    assert mine("a", note="p") == mine("a", note="q")  # compare=False
    assert mine.count == theirs.count == 3 and mine.note == theirs.note == "n"  # defaults stay on the class
    assert not hasattr(mine, "tags") and not hasattr(theirs, "tags")
    assert mine.__match_args__ == theirs.__match_args__
    assert mine.__doc__ == "A record."


def test_bad_calls_raise_like_dataclass() -> None:
    mine, theirs = _pair()
    for args, kwargs in [((), {}), (("a",), {"nope": 1}), (("a", 1, {}, "n", True, 9), {}), (("a",), {"name": "b"})]:
        with pytest.raises(TypeError):
            theirs(*args, **kwargs)
        with pytest.raises(TypeError):
            mine(*args, **kwargs)
    record = mine("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "b"
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.other = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        del record.name


def test_dataclasses_functions_see_the_same_fields() -> None:
    mine, theirs = _pair()
    a, b = mine("a", 2, {"k": 1}), theirs("a", 2, {"k": 1})
    assert dataclasses.is_dataclass(a)
    keys = ("name", "type", "default", "default_factory", "repr", "hash", "compare", "metadata", "init")
    assert [[getattr(f, k) for k in keys] for f in dataclasses.fields(a)] == [
        [getattr(f, k) for k in keys] for f in dataclasses.fields(b)
    ]
    assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert repr(dataclasses.replace(a, count=7)) == repr(dataclasses.replace(b, count=7))


def test_what_frozen_does_not_cover_is_refused() -> None:
    with pytest.raises(TypeError):
        frozen(type("Sub", (dict,), {"__annotations__": {"a": "int"}}))
    with pytest.raises(TypeError):
        frozen(type("C", (), {"__annotations__": {"a": "ClassVar[int]"}}))
    with pytest.raises(TypeError):
        frozen(type("C", (), {"__annotations__": {"a": "int"}, "a": field(default=1, init=False)}))
    with pytest.raises(TypeError):
        frozen(type("C", (), {"__annotations__": {"a": "int"}, "__eq__": lambda s, o: True}))


def test_the_settings_catalog_and_declaration_records_are_frozen_dataclasses() -> None:
    loaded = settings.load()
    assert loaded == settings.load() and hash(loaded) == hash(settings.load())
    assert [f.name for f in dataclasses.fields(loaded)][:2] == ["paths", "database"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.client.debug = True  # type: ignore[misc]
    node = catalog.node_type("hgx-h200-8g")
    assert dataclasses.is_dataclass(node) and dataclasses.replace(node) == node
    assert dataclasses.is_dataclass(models.StorageSpec())
