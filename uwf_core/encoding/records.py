"""`@record`: typed value classes, as `dataclasses.dataclass` makes them, at a fraction of the
start-up cost.

`uwf` starts once per step, and the ~50 typed records on its way (nodes, contexts, config,
results) cost ~20 ms through `dataclasses` — its import (which pulls in `inspect`) and its
per-class introspection — a fifth of a whole step. This builds the same methods from the class's
own annotations, from closures (no source compiled per class). It does what uwf's records use and no more:
`frozen`, defaults, `field(default_factory=..., compare=..., repr=...)`, `__post_init__`,
`replace` and `asdict`; equality and hashing as dataclasses define them (frozen records hash,
mutable ones do not). tests/store/test_records.py holds it to dataclasses' behaviour.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # not `from typing import`: typing costs ~2 ms on every `uwf` start

if TYPE_CHECKING:
    from typing import Any, TypeVar, dataclass_transform

    _R = TypeVar("_R")
else:

    def dataclass_transform(**kwargs):
        """At run time nothing: for type checkers (PEP 681) `record` makes dataclasses."""
        return lambda decorator: decorator


_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record."""


class Field:
    __slots__ = ("name", "default", "default_factory", "compare", "repr")

    def __init__(self, default=_MISSING, default_factory=_MISSING, compare=True, repr=True) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, compare: bool = True, repr: bool = True) -> Any:
    """A field's options, as `dataclasses.field` takes them (the subset uwf uses)."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("a field takes a default or a default_factory, not both")
    return Field(default, default_factory, compare, repr)


@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, *, frozen: bool = False) -> Any:
    """Make `cls` a record of the fields it annotates, in order."""

    def wrap(cls):
        return _build(cls, frozen)

    return wrap if cls is None else wrap(cls)


def _build(cls, frozen: bool):
    fields = []
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, Field) else Field(default=value)
        spec.name = name
        if isinstance(value, Field):
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        if fields and not _has_default(spec) and _has_default(fields[-1]):
            raise TypeError(f"non-default field {name!r} follows a default field in {cls.__qualname__}")
        fields.append(spec)
    cls.__init__ = _init(cls, fields, frozen)
    key = _key([f.name for f in fields if f.compare])
    shown = [f.name for f in fields if f.repr]
    name = cls.__qualname__

    def __repr__(self) -> str:
        return f"{name}({', '.join(f'{field}={getattr(self, field)!r}' for field in shown)})"

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    cls.__repr__, cls.__eq__ = __repr__, __eq__
    if frozen:
        cls.__setattr__ = _refuse_set
        cls.__delattr__ = _refuse_delete
        cls.__hash__ = lambda self: hash(key(self))
    elif "__hash__" not in cls.__dict__:
        cls.__hash__ = None  # equal by value and mutable: not hashable, as a dataclass
    cls.__record_fields__ = tuple(fields)
    return cls


def _init(cls, fields: list[Field], frozen: bool):
    """An __init__ that binds positional and keyword arguments as the field list says: built from
    closures, not compiled source (compiling costs more than the whole class is worth here)."""
    names = [f.name for f in fields]
    count, name = len(names), cls.__qualname__
    defaults = {f.name: f.default for f in fields if f.default is not _MISSING}
    factories = {f.name: f.default_factory for f in fields if f.default_factory is not _MISSING}
    post_init = "__post_init__" in cls.__dict__
    set_field = object.__setattr__

    def __init__(self, *args, **kwargs):
        if len(args) > count:
            raise TypeError(f"{name}() takes {count} positional arguments but {len(args)} were given")
        values = list(args)
        for field in names[len(args) :]:
            if field in kwargs:
                values.append(kwargs.pop(field))
            elif field in defaults:
                values.append(defaults[field])
            elif field in factories:
                values.append(factories[field]())
            else:
                raise TypeError(f"{name}() missing required argument: {field!r}")
        if kwargs:
            raise TypeError(f"{name}() got an unexpected or repeated argument {next(iter(kwargs))!r}")
        for field, value in zip(names, values):
            set_field(self, field, value)
        if post_init:
            self.__post_init__()

    return __init__


def _key(names: list[str]):
    """The values compared (and hashed), as one tuple."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        only = names[0]
        return lambda self: (getattr(self, only),)
    return attrgetter(*names)


def _refuse_set(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _has_default(spec: Field) -> bool:
    return spec.default is not _MISSING or spec.default_factory is not _MISSING


def replace(obj: _R, **changes: Any) -> _R:
    """A copy of the record `obj` with `changes` (as `dataclasses.replace`)."""
    fields: tuple[Field, ...] = getattr(obj, "__record_fields__")  # _build's, unseen by a type checker
    values = {f.name: getattr(obj, f.name) for f in fields}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return obj.__class__(**values)


def asdict(obj: Any) -> dict[str, Any]:
    """The record as a dict, records inside it too (as `dataclasses.asdict`)."""
    return {f.name: _plain(getattr(obj, f.name)) for f in obj.__record_fields__}


def _plain(value):
    if hasattr(value, "__record_fields__") and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(item) for item in value)
    return value
