"""Serve a REST API from its OpenAPI document: one tool per operation.

    provider = OpenApiProvider.from_file("petstore.json", base_url="https://api.example")
    app = Server("petstore")
    app.add_provider(provider)

or from the shell, with no Python file: ``trimcp run --openapi petstore.json``.

Supported: OpenAPI 3.0 and 3.1 documents, JSON (YAML when PyYAML is installed), from a
file or an ``http(s)`` URL; path, query and header parameters (the default styles, plus
``spaceDelimited``, ``pipeDelimited`` and ``deepObject`` queries); JSON request bodies
(``application/json`` and ``+json`` types); local ``$ref``s anywhere; the first 2xx
JSON response's schema as the output schema. See :mod:`.operations` for names and
schemas, and ``docs/openapi.md``.

Refused, with a message naming the operation, when the provider is made (or left out
with ``unsupported="skip"``): callbacks, request bodies that are not JSON (multipart,
forms, binary), cookie parameters, parameters described by ``content``, the ``label``
and ``matrix`` styles, references to other files or URLs, recursive schemas, and schemas
past :data:`~.document.MAX_SCHEMA_NODES` once inlined. Not used: ``securitySchemes``
(credentials come from the provider's configuration, never from the MCP caller unless
asked), ``links``, ``webhooks``, servers after the first, response headers.

Calls: each goes out through trimcp's HTTP client within the provider's ``timeout``, in
the request's task and cancel scope; a 2xx answer is read up to ``max_response_bytes``;
a 4xx/5xx answer is a tool error (``isError``) carrying the status and the API's own
message; a redirect is not followed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trimcp.server.openapi.document import MAX_DOCUMENT_BYTES, MAX_SCHEMA_NODES, OpenApiError
from trimcp.server.openapi.provider import (
    MAX_RESPONSE_BYTES,
    OpenApiProvider,
    api_message,
    headers_from_env,
)

if TYPE_CHECKING:
    from trimcp.server.app import Server


async def openapi_server(
    spec: str,
    *,
    tool_search: bool = False,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> Server:
    """A server whose tools are the operations of the OpenAPI document ``spec`` (a path or
    an ``http(s)`` URL), named and described by the document's ``info``; with
    ``tool_search``, behind :class:`~trimcp.server.transforms.ToolSearch`. ``environ``:
    where API credentials are read from (see :func:`headers_from_env`; None: none).
    ``options`` go to :class:`OpenApiProvider`. Raises :class:`OpenApiError`.
    Cancellation: fetching the document is cancelled with the caller."""
    from trimcp.server.app import Server
    from trimcp.server.transforms import ToolSearch

    if environ is not None:
        headers, token = headers_from_env(environ)
        options = {"headers": headers, "bearer_token": token, **options}
    provider = await OpenApiProvider.load(spec, **options)
    app = Server(provider.title, provider.version, instructions=provider.description)
    app.add_provider(provider)
    if tool_search:
        app.add_transform(ToolSearch())
    return app


__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_SCHEMA_NODES",
    "OpenApiError",
    "OpenApiProvider",
    "api_message",
    "headers_from_env",
    "openapi_server",
]
