"""Small value classes, without what ``dataclasses`` costs at import.

``@dataclass`` writes the source of each class's ``__init__``, ``__repr__`` and ``__eq__``
and compiles it: about 0.7 ms a class, paid by every process that defines the class.
The read path has a handful of such classes (protocol, metadata, the listing, the log
segment...), so every cold task and reschedule poke spent several milliseconds
generating code before reading a byte. A :class:`Record` is declared the same way (its
fields are its ``__slots__``, in order; defaults in ``_defaults``, per-instance mutable
defaults in ``_factories``; ``_frozen`` for immutable ones) and shares one generic
implementation, which costs nothing to define.

Behaviour follows a dataclass's: positional or keyword construction with the same
``TypeError`` for a missing, repeated or unknown argument, field-wise ``==`` between
instances of the same class, ``repr`` with the field names, hashing and no assignment
for frozen records (unhashable otherwise); copy and pickle rebuild through ``__init__``.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar


class FrozenRecordError(AttributeError):
    """An assignment to a field of a frozen record."""


class Record:
    """Base of value classes: subclasses name their fields in ``__slots__`` (a tuple)."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    #: field -> default value (shared: only for immutable values)
    _defaults: ClassVar[dict[str, Any]] = {}
    #: field -> callable making a fresh default for each instance (``dict``, ``list``...)
    _factories: ClassVar[dict[str, Callable[[], Any]]] = {}
    #: True: fields cannot be assigned after construction, and instances hash by value
    _frozen: ClassVar[bool] = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        names = cls.__slots__
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments but {len(args)} were given")
        assign = object.__setattr__
        for name, value in zip(names, args):
            if name in kwargs:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {name!r}")
            assign(self, name, value)
        for name in names[len(args):]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif name in cls._defaults:
                value = cls._defaults[name]
            elif name in cls._factories:
                value = cls._factories[name]()
            else:
                raise TypeError(f"{cls.__name__}() missing required argument {name!r}")
            assign(self, name, value)
        if kwargs:   # what is left names no field (a positional field's name was refused above)
            raise TypeError(f"{cls.__name__}() got unexpected keyword arguments {sorted(kwargs)}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in type(self).__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        if not type(self)._frozen:
            raise TypeError(f"unhashable type: {type(self).__name__!r} (a mutable record)")
        return hash((type(self).__name__,) + self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__slots__)
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        if type(self)._frozen:
            raise FrozenRecordError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if type(self)._frozen:
            raise FrozenRecordError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")
        object.__delattr__(self, name)

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return type(self), self._values()
