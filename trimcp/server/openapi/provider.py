"""The OpenAPI provider: one tool per operation of a document, each call one HTTP request
to the API through trimcp's own HTTP client (:mod:`trimcp.http.client`)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final, Literal

import trio

from trimcp._version import __version__
from trimcp.http.client import ConnectionPool, Response
from trimcp.http.errors import HttpClientError
from trimcp.http.url import Endpoint, parse_url
from trimcp.server.context import Context
from trimcp.server.openapi.document import (
    MAX_DOCUMENT_BYTES,
    OpenApiError,
    Refs,
    check_version,
    parse_text,
    server_url,
)
from trimcp.server.openapi.operations import Operation, build_call, is_json, read_operations
from trimcp.server.providers import Kind, Provider
from trimcp.server.tools import SchemaTool, ToolError
from trimcp.types import CallToolResult, TextContent, Tool

logger = logging.getLogger("trimcp.openapi")

#: Bytes of one API answer a tool reads (past it the call is a tool error).
MAX_RESPONSE_BYTES: Final = 1024 * 1024
#: Bytes of an API's error answer read for its message.
_ERROR_EXCERPT: Final = 4096
#: Keys an API's JSON error body commonly puts its message under, in the order looked at.
_MESSAGE_KEYS: Final = (
    "message",
    "error_description",
    "detail",
    "title",
    "error",
    "errors",
    "msg",
    "description",
)
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class OpenApiProvider(Provider):
    """The operations of an OpenAPI 3.0 or 3.1 ``document`` as tools (see
    :mod:`trimcp.server.openapi` for what is supported and how names and schemas are made).

    ``base_url``: where the API is (default: the document's first server, resolved against
    ``source`` when that is a URL). ``headers``: sent with every request (an API key
    header); ``bearer_token``: sent as ``Authorization: Bearer ...``. The MCP caller's own
    token is never sent, unless ``forward_caller_token`` (then it replaces
    ``bearer_token``; only for an API that is that token's audience). ``timeout``: seconds
    one call may take in all (connecting, sending, the answer); ``max_response_bytes``:
    what one answer may hold. ``unsupported``: ``"refuse"`` (raise :class:`OpenApiError`
    listing every operation trimcp cannot serve) or ``"skip"`` (leave them out, with a
    warning on the ``trimcp.openapi`` logger). ``output_schemas=False`` advertises no
    output schemas (for an API whose answers do not match its document). ``source``:
    where the document came from, for messages. Raises :class:`OpenApiError` for a
    document that cannot be served.

    Calls run in the request's task and cancel scope: a cancelled request closes its
    connection to the API. Connections are kept alive between calls while the serving
    server's lifespan runs (:meth:`lifespan`).
    """

    def __init__(
        self,
        document: Mapping[str, Any],
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        bearer_token: str | None = None,
        forward_caller_token: bool = False,
        timeout: float = 30.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        unsupported: Literal["refuse", "skip"] = "refuse",
        output_schemas: bool = True,
        source: str = "the OpenAPI document",
    ) -> None:
        if unsupported not in ("refuse", "skip"):
            raise ValueError(f"unsupported must be 'refuse' or 'skip', not {unsupported!r}")
        if not timeout > 0 or max_response_bytes < 1:
            raise ValueError("timeout and max_response_bytes must be positive")
        check_version(document, source)
        operations, problems = read_operations(document, Refs(document))
        if problems and unsupported == "refuse":
            shown = "\n  ".join(problems[:10])
            more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
            raise OpenApiError(
                f"{source}: {len(problems)} operation(s) cannot be served:\n  {shown}{more}\n"
                "(leave them out with unsupported='skip', or trimcp run --openapi-skip-"
                "unsupported)"
            )
        for problem in problems:
            logger.warning("%s: skipped %s", source, problem)
        #: What was left out (``unsupported="skip"``), one line per operation.
        self.skipped = tuple(problems)
        if not operations:
            raise OpenApiError(f"{source} has no operation to serve")
        info = document.get("info")
        info = info if isinstance(info, Mapping) else {}
        #: The document's ``info.title``, ``info.version`` and ``info.description``.
        self.title = str(info.get("title") or "openapi")
        self.version = str(info.get("version") or "0.1.0")
        self.description = (
            info.get("description") if isinstance(info.get("description"), str) else None
        )
        self.base_url = _base_url(base_url, document, source)
        self._headers = _checked_headers(headers or {}, bearer_token)
        self._forward = forward_caller_token
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._pool: ConnectionPool | None = None
        #: The operations served, by tool name.
        self.operations: dict[str, Operation] = {op.name: op for op in operations}
        self._tools = [self._tool(op, output_schemas) for op in operations]

    def __repr__(self) -> str:
        return f"<OpenApiProvider {self.title!r} at {self.base_url} ({len(self._tools)} tools)>"

    # --- loading ------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | Path, **options: Any) -> OpenApiProvider:
        """The provider of the document in the file ``path`` (JSON, or YAML when PyYAML is
        installed); ``options`` as for the constructor. Reads at most
        :data:`~trimcp.server.openapi.document.MAX_DOCUMENT_BYTES`."""
        source = str(path)
        try:
            with open(path, "rb") as file:
                data = file.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise OpenApiError(f"cannot read {source}: {exc.strerror or exc}") from None
        document = parse_text(_decode(data, source), source)
        return cls(document, source=options.pop("source", source), **options)

    @classmethod
    async def from_url(cls, url: str, **options: Any) -> OpenApiProvider:
        """The provider of the document at ``url`` (fetched with trimcp's HTTP client,
        within ``timeout``, at most ``MAX_DOCUMENT_BYTES``); a relative server URL in it is
        resolved against ``url``. Cancellation: the fetch is cancelled with the caller."""
        timeout = float(options.get("timeout", 30.0))
        try:
            endpoint = parse_url(url)
        except ValueError as exc:
            raise OpenApiError(f"--openapi {url}: {exc}") from None
        pool = ConnectionPool(ssl_context=None, connect_timeout=timeout, max_idle=0)
        try:
            with trio.fail_after(timeout):
                async with pool.request(
                    "GET",
                    endpoint,
                    {"accept": "application/json, application/yaml;q=0.9, */*;q=0.5"},
                    head_timeout=timeout,
                ) as response:
                    if response.status != 200:
                        raise OpenApiError(f"fetching {url} answered HTTP {response.status}")
                    data = await response.read_all(MAX_DOCUMENT_BYTES, timeout)
        except trio.TooSlowError:
            raise OpenApiError(f"fetching {url} took longer than {timeout:g} s") from None
        except HttpClientError as exc:
            raise OpenApiError(f"fetching {url} failed: {exc.message}") from None
        finally:
            await pool.aclose()
        document = parse_text(_decode(data, url), url)
        return cls(document, source=options.pop("source", url), **options)

    @classmethod
    async def load(cls, spec: str, **options: Any) -> OpenApiProvider:
        """:meth:`from_url` for an ``http(s)://`` URL, else :meth:`from_file`."""
        if spec.startswith(("http://", "https://")):
            return await cls.from_url(spec, **options)
        return cls.from_file(spec, **options)

    # --- serving -----------------------------------------------------------------------

    def components(self, kind: Kind) -> Sequence[Any]:
        return self._tools if kind == "tools" else ()

    @contextlib.asynccontextmanager
    async def _connections(self) -> AsyncIterator[None]:
        pool = ConnectionPool(ssl_context=None, connect_timeout=self.timeout, max_idle=8)
        self._pool = pool
        try:
            yield
        finally:
            self._pool = None
            await pool.aclose()

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Keeps connections to the API alive between calls while the server serves."""
        return self._connections()

    def _tool(self, operation: Operation, output_schemas: bool) -> SchemaTool:
        definition = Tool(
            name=operation.name,
            title=operation.title,
            description=operation.description,
            input_schema=operation.input_schema,
            output_schema=operation.output_schema if output_schemas else None,
            annotations=operation.annotations,
        )
        call = functools.partial(self._call, operation, output_schemas)
        return SchemaTool(
            definition,
            call,
            wrap_result=operation.wrap_result and output_schemas,
            tags=operation.tags,
        )

    async def _call(
        self, operation: Operation, structured: bool, arguments: dict[str, Any], ctx: Context
    ) -> Any:
        """One call: arguments checked, the request sent, the answer read (see the module
        docs). Cancellation: with the request; the connection is then closed."""
        call = build_call(operation, arguments)
        url = self.base_url + call.target
        try:
            endpoint = parse_url(url)
        except ValueError as exc:
            raise ToolError(f"{operation.label}: {exc}") from None
        headers = {"accept": "application/json", "user-agent": f"trimcp/{__version__}"}
        headers.update(call.headers)
        headers.update(self._headers)  # configured credentials win over arguments
        if self._forward:
            token = getattr(ctx.auth, "token", "")
            if token:
                headers["authorization"] = f"Bearer {token}"
        if call.body:
            headers["content-type"] = operation.body_media or "application/json"
        with trio.move_on_after(self.timeout) as scope:
            try:
                return await self._exchange(operation, structured, endpoint, headers, call.body)
            except HttpClientError as exc:
                raise ToolError(f"{operation.label} failed: {exc.message}") from None
        assert scope.cancelled_caught
        raise ToolError(f"{operation.label}: no answer from {url} within {self.timeout:g} s")

    async def _exchange(
        self,
        operation: Operation,
        structured: bool,
        endpoint: Endpoint,
        headers: dict[str, str],
        body: bytes,
    ) -> Any:
        pool = self._pool
        async with contextlib.AsyncExitStack() as stack:
            if pool is None:  # served outside a lifespan: one connection for this call
                pool = ConnectionPool(ssl_context=None, connect_timeout=self.timeout, max_idle=0)
                stack.push_async_callback(pool.aclose)
            async with pool.request(
                operation.method, endpoint, headers, body, head_timeout=self.timeout
            ) as response:
                if not 200 <= response.status < 300:
                    excerpt = await response.read_excerpt(_ERROR_EXCERPT, self.timeout)
                    raise ToolError(_failure(operation, response, excerpt))
                data = await response.read_all(self.max_response_bytes, self.timeout)
                return _answer(operation, structured, response, data)
        raise AssertionError("unreachable")  # pragma: no cover


def _answer(operation: Operation, structured: bool, response: Response, data: bytes) -> Any:
    """What a tool returns for a 2xx answer."""
    label = operation.label
    has_schema = structured and operation.output_schema is not None
    if not data.strip():
        return CallToolResult(content=[TextContent(text=_status(response))])
    media = response.content_type
    if is_json(media) or not media:
        try:
            value = json.loads(data)
        except ValueError:
            if media:
                raise ToolError(f"{label} answered invalid JSON") from None
            value = None
        else:
            if has_schema and not operation.wrap_result and not isinstance(value, dict):
                raise ToolError(
                    f"{label} answered a JSON {type(value).__name__} where its OpenAPI "
                    "document promises an object"
                )
            return value
    text = data.decode("utf-8", "replace")
    if has_schema:
        raise ToolError(f"{label} answered {media or 'untyped data'}, not JSON: {text[:500]}")
    return text


def _failure(operation: Operation, response: Response, excerpt: bytes) -> str:
    """The tool error for an API error: its status and the API's own message."""
    head = f"{operation.label} failed: {_status(response)}"
    if 300 <= response.status < 400:
        where = response.headers.get("location", "elsewhere")
        return f"{head}: redirected to {where} (not followed; check the base URL)"
    message = api_message(excerpt)
    return f"{head}: {message}" if message else head


def _status(response: Response) -> str:
    """``HTTP 404 Not Found`` (the standard phrase when the API sent none)."""
    reason = response.reason.strip()
    if not reason:
        with contextlib.suppress(ValueError):
            reason = HTTPStatus(response.status).phrase
    return f"HTTP {response.status} {reason}".rstrip()


def api_message(body: bytes) -> str:
    """An API's error message from its error body: a JSON body's ``message`` (or
    ``detail``, ``error``, ``title``...), else the text itself, at most 1000 characters."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    found = _message_in(data) if data is not None else None
    if found is None:
        found = json.dumps(data, ensure_ascii=False) if isinstance(data, dict | list) else text
    found = " ".join(found.split())
    return found if len(found) <= 1000 else found[:999] + "…"


def _message_in(data: Any, depth: int = 0) -> str | None:
    if isinstance(data, str):
        return data or None
    if depth > 3:
        return None
    if isinstance(data, list) and data:
        parts = [part for part in (_message_in(item, depth + 1) for item in data[:5]) if part]
        return "; ".join(parts) or None
    if isinstance(data, Mapping):
        for key in _MESSAGE_KEYS:
            if key in data:
                found = _message_in(data[key], depth + 1)
                if found:
                    return found
    return None


def _decode(data: bytes, source: str) -> str:
    if len(data) > MAX_DOCUMENT_BYTES:
        raise OpenApiError(f"{source} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise OpenApiError(f"{source} is not UTF-8 text") from None


def _base_url(given: str | None, document: Mapping[str, Any], source: str) -> str:
    url = given or server_url(document)
    if url is None:
        raise OpenApiError(
            f"{source} names no server: give the API's URL (base_url=..., or --base-url URL)"
        )
    if not url.startswith(("http://", "https://")):
        if given is None and source.startswith(("http://", "https://")):
            url = parse_url(source).resolve(url).url
        else:
            raise OpenApiError(
                f"the API's URL {url!r} is not an absolute http(s) URL: give one with base_url="
                "... (or --base-url URL)"
            )
    try:
        endpoint = parse_url(url)
    except ValueError as exc:
        raise OpenApiError(f"the API's URL: {exc}") from None
    if "?" in endpoint.target or "#" in url:
        raise OpenApiError(f"the API's URL {url!r} must not hold a query or fragment")
    return url.rstrip("/")


def _checked_headers(headers: Mapping[str, str], bearer_token: str | None) -> dict[str, str]:
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise OpenApiError(f"invalid header name {name!r}")
        if not isinstance(value, str) or any(c in value for c in "\r\n\0"):
            raise OpenApiError(f"the value of header {name!r} must be one line of text")
        checked[name.lower()] = value
    if bearer_token is not None:
        if not bearer_token or any(c in bearer_token for c in "\r\n\0 "):
            raise OpenApiError("the bearer token must be one word of text")
        checked["authorization"] = f"Bearer {bearer_token}"
    return checked


def headers_from_env(environ: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The API credentials ``trimcp run --openapi`` takes from the environment (never from
    argv, where other users of the machine can read them): ``TRIMCP_OPENAPI_HEADERS``,
    one ``Name: value`` per line, and ``TRIMCP_OPENAPI_TOKEN``, a bearer token."""
    headers: dict[str, str] = {}
    for line in environ.get("TRIMCP_OPENAPI_HEADERS", "").splitlines():
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise OpenApiError(
                "TRIMCP_OPENAPI_HEADERS: write one 'Name: value' per line (no colon in "
                f"{name.strip()[:40]!r})"
            )
        headers[name.strip()] = value.strip()
    token = environ.get("TRIMCP_OPENAPI_TOKEN") or None
    return headers, token
