"""Extensions (SEP-2133) as data: identifiers, settings, and the rows of their methods.

Sans-IO. An extension is named by an identifier ``{vendor-prefix}/{name}``
(``io.modelcontextprotocol/skills``); a peer supports it by listing the identifier under
``capabilities.extensions`` with a settings object (``{}``: no optional features). The
settings sit directly under the identifier. The methods an extension adds are rows of
the same :class:`~trimcp.protocol.methods.Method` table as the core ones, made with
:func:`extension_method`; they are not in :data:`~trimcp.protocol.methods.METHODS` (the
core table follows the schema), so whoever registers one structures its params and
results with the row's own types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from trimcp.protocol.methods import DRAFT_REVISION, REVISIONS, Kind, Method, Sender

P = TypeVar("P")
R = TypeVar("R")

#: ``{vendor-prefix}/{name}``: a reverse-DNS prefix (dot-separated labels), a slash, a
#: name of letters, digits, ``.``, ``_`` and ``-``.
_IDENTIFIER: Final = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$"
)

#: Every revision: extension methods are negotiated by the extension, not the revision.
_EVERY_REVISION: Final = frozenset((*REVISIONS, DRAFT_REVISION))


def check_identifier(identifier: object) -> str:
    """``identifier`` if it is a valid extension identifier; raises ``ValueError`` naming
    the expected form otherwise."""
    if not isinstance(identifier, str) or not _IDENTIFIER.match(identifier):
        raise ValueError(
            f"An extension identifier is '{{vendor-prefix}}/{{name}}' such as "
            f"'com.example/notes', got {identifier!r}"
        )
    return identifier


def extension_method(
    name: str,
    *,
    params: type[P] | None = None,
    result: type[R] | None = None,
    kind: Kind = "request",
    sender: Sender = "client",
) -> Method[P, R]:
    """The table row of an extension's method ``name``: its params and result types
    (attrs classes the converter structures, or None for free-form JSON objects),
    its kind and who sends it. Type the constant: ``NOTE: Final[Method[NoteParams,
    Note]] = extension_method("notes/get", params=NoteParams, result=Note)``."""
    if not name or name in _core_names():
        raise ValueError(f"{name!r} is a core MCP method (or empty); name the extension's own")
    return Method(
        name,
        kind,
        sender,
        None,
        None,
        _EVERY_REVISION,
        None,
        own_params=params,
        own_result=result if kind == "request" else None,
    )


def _core_names() -> frozenset[str]:
    from trimcp.protocol.methods import METHODS

    return frozenset(METHODS)


def settings_of(capabilities: Any, identifier: str) -> dict[str, Any] | None:
    """The settings a peer declared for the extension ``identifier`` in ``capabilities``
    (typed or wire form), or None when it did not declare it."""
    if capabilities is None:
        return None
    extensions = (
        capabilities.get("extensions")
        if isinstance(capabilities, Mapping)
        else getattr(capabilities, "extensions", None)
    )
    if not isinstance(extensions, Mapping):
        return None
    settings = extensions.get(identifier)
    return dict(settings) if isinstance(settings, Mapping) else None
