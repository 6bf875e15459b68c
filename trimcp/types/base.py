"""The base of every wire type.

Wire types are declared ``@attrs.frozen(kw_only=True, repr=False, eq=False)`` and inherit
:class:`WireType`, whose ``repr``, ``==`` and ``hash`` are written once
(:class:`trimcp._record.Record`) rather than compiled by attrs for each class, which made
``import trimcp.types`` about a quarter cheaper. They behave like attrs' own.

Each wire class's ``__init__`` is attrs' own, rewritten once the class is built
(:meth:`WireType.__attrs_init_subclass__`): the same keyword-only signature and defaults,
but each field is stored through its slot's own setter instead of
``object.__setattr__(self, name, value)``, which a frozen class's ``__init__`` otherwise
pays on every field (callgrind: about 360 instructions less per field; a wire object is
made for every call a server answers); a class of three fields or more stores them as its
:func:`writable_twin` instead (the bytecode's own slot stores, cheaper still). The
instances are the same frozen attrs objects.
"""

import functools
from collections.abc import Callable
from types import MemberDescriptorType
from typing import Any, Final

import attrs

from trimcp._attrs_cache import compile_generated
from trimcp._record import Record

__all__ = ["WireType", "made_by_its_fields", "slot_setters", "writable_twin"]


def slot_setters(cls: type) -> dict[str, Callable[[Any, Any], None]]:
    """Each field's slot setter (its member descriptor's ``__set__``), which a frozen
    class's ``__setattr__`` does not guard: what attrs' ``__init__`` reaches through
    ``object.__setattr__``, in one call and without the attribute lookup. For a slotted
    attrs class, the class attribute of a field's name is its slot's descriptor."""
    setters: dict[str, Callable[[Any, Any], None]] = {}
    for field in attrs.fields(cls):
        slot = getattr(cls, field.name)
        if type(slot) is not MemberDescriptorType:
            raise TypeError(f"{cls!r}.{field.name} is not a slot")
        setters[field.name] = slot.__set__
    return setters


@functools.cache
def writable_twin(cls: type) -> type:
    """A subclass of the slotted (frozen) attrs class ``cls`` that adds nothing to its
    layout and stores attributes plainly: an instance made as a twin, its fields set by
    the bytecode's own slot stores (less than half the cost of a slot setter's call),
    becomes a ``cls`` by ``__class__`` assignment (Python checks that the layouts are the
    same): the object ``cls``'s ``__init__`` makes. For code that makes wire objects
    itself (serde's fast structure functions); nothing else sees a twin instance. Both
    ``__setattr__`` and ``__delattr__`` are object's: with either one Python's own,
    every store would call it. One per class (kept)."""
    twin = type(
        f"{cls.__name__}Twin",
        (cls,),
        {
            "__slots__": (),
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__module__": cls.__module__,
        },
    )
    return twin


_FACTORY: Final[type] = type(attrs.Factory(list))
#: The ``__class__`` setter (what ``object.__setattr__(o, "__class__", c)`` reaches).
_SET_CLASS: Final = vars(object)["__class__"].__set__
#: From how many fields a class's ``__init__`` stores them as its writable twin.
_TWIN_FIELDS: Final = 3


def made_by_its_fields(cls: type) -> bool:
    """Whether the attrs class ``cls``'s ``__init__`` only stores each field, so that setting
    the slots of a new instance makes the same object: slotted, keyword-only fields with
    no validator, converter, default factory or init hook."""
    return not (
        hasattr(cls, "__attrs_pre_init__")
        or hasattr(cls, "__attrs_post_init__")
        or "__slots__" not in vars(cls)
        or any(
            f.validator is not None
            or f.converter is not None
            or isinstance(f.default, _FACTORY)
            or not f.init
            or not f.kw_only
            or f.alias != f.name
            for f in attrs.fields(cls)
        )
    )


def _slot_init(cls: type, attrs_init: Callable[..., None]) -> Callable[..., None]:
    """``cls``'s ``__init__`` storing through the slots' setters (``attrs_init``, attrs'
    own, when ``cls`` has fields that are more than stored)."""
    if not made_by_its_fields(cls):
        return attrs_init
    setters = slot_setters(cls)
    env: dict[str, Any] = {}
    params: list[str] = []
    body: list[str] = []
    for n, field in enumerate(attrs.fields(cls)):
        if field.default is attrs.NOTHING:
            params.append(field.name)
        else:
            env[f"_trimcp_default{n}"] = field.default
            params.append(f"{field.name}=_trimcp_default{n}")
        env[f"_trimcp_set{n}"] = setters[field.name]
        body.append(f"    _trimcp_set{n}(self, {field.name})")
    if not params:
        return attrs_init  # nothing to store: attrs' own is as cheap
    if len(body) >= _TWIN_FIELDS:
        # Three or more: a cls made its writable twin and back (two calls of the
        # __class__ setter) takes the bytecode's own slot stores, cheaper than a setter's
        # call each. Only an instance of cls itself (a subclass's may differ in layout).
        env["_trimcp_cls"], env["_trimcp_twin"] = cls, writable_twin(cls)
        env["_trimcp_set_class"] = _SET_CLASS
        stores = [f"        self.{field.name} = {field.name}" for field in attrs.fields(cls)]
        body = [
            "    if self.__class__ is _trimcp_cls:",
            "        _trimcp_set_class(self, _trimcp_twin)",
            *stores,
            "        _trimcp_set_class(self, _trimcp_cls)",
            "    else:",
            *(f"    {line}" for line in body),
        ]
    source = "\n".join([f"def __init__(self, *, {', '.join(params)}):", *body, ""])
    filename = f"<trimcp generated slot-init {cls.__module__}.{cls.__qualname__}>"
    exec(compile_generated(source, filename), env)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = attrs_init.__qualname__
    init.__module__ = attrs_init.__module__
    init.__annotations__ = attrs_init.__annotations__
    return init


def _made_at_first_use(cls: type) -> Callable[..., None]:
    """An ``__init__`` that puts :func:`_slot_init`'s in its place at the first call and
    runs it: a process makes the ``__init__`` of the classes it uses only (a stdio
    server's start makes a dozen wire objects of some 110 classes). ``inspect`` sees
    attrs' signature (``__wrapped__``)."""
    attrs_init: Callable[..., None] = vars(cls)["__init__"]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _slot_init(cls, attrs_init)
        setattr(cls, "__init__", init)  # noqa: B010 - mypy refuses assigning a method
        init(self, *args, **kwargs)

    return functools.update_wrapper(__init__, attrs_init)


class WireType(Record):
    """The base of every wire type: attrs-like ``repr``, ``==`` and ``hash``."""

    __slots__ = ()

    @classmethod
    def __attrs_init_subclass__(cls) -> None:
        # attrs calls this once it has built each attrs subclass (the final, slotted one).
        setattr(cls, "__init__", _made_at_first_use(cls))  # noqa: B010 - as above
