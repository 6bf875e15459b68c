"""Resources: static URIs and RFC 6570 templates, and how a read becomes contents.

``@app.resource("config://app")`` registers a static resource (listed by
``resources/list``); a URI with ``{variables}`` registers a template (listed by
``resources/templates/list``) whose function takes the variables as parameters, converted
to their annotated types (see :mod:`trimcp.server.textargs`). A variable missing from the
URI takes the parameter's default; without one the URI does not match.

A read returns: ``str`` -> ``TextResourceContents`` (the resource's MIME type, else
``text/plain``); ``bytes`` -> ``BlobResourceContents`` (base64; else
``application/octet-stream``); contents objects, or a list of any of these, as they are;
anything else JSON-able -> its JSON as text (else ``application/json``).

Errors: an unknown URI is ``-32002`` with ``data: {"uri": ...}``, and so is
:class:`ResourceNotFound` raised by the function; an ``McpError`` from the function is
answered as is; any other exception is logged and answered ``-32603`` with a
message that names only the URI.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trimcp import serde
from trimcp.errors import INTERNAL_ERROR, RESOURCE_NOT_FOUND, McpError
from trimcp.protocol.uris import canonical_uri
from trimcp.server.context import Context
from trimcp.server.convert import ValidationError, to_json
from trimcp.server.registry import FunctionHandle
from trimcp.server.signature import FunctionInfo, call, inspect_function, param_error
from trimcp.server.textargs import TextConvert, choices_of, text_converter
from trimcp.server.tools import icon_list
from trimcp.server.uri_template import UriTemplate
from trimcp.types import (
    Annotations,
    BlobResourceContents,
    Icon,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
    TextResourceContents,
)

logger = logging.getLogger("trimcp.server")


class ResourceNotFound(McpError):
    """Raise from a resource function when what the URI names does not exist (``-32002``).

    Without ``uri`` the framework fills in the URI being read.
    """

    def __init__(self, uri: str | None = None) -> None:
        shown = "" if uri is None else uri[:200]
        super().__init__(RESOURCE_NOT_FOUND, f"Resource not found: {shown}", {"uri": uri})
        self.uri = uri


def not_found(uri: str) -> McpError:
    return ResourceNotFound(uri)


def _annotations(value: Annotations | Mapping[str, Any] | None) -> Annotations | None:
    if value is None or isinstance(value, Annotations):
        return value
    return serde.structure(dict(value), Annotations)


class _ResourceBase(FunctionHandle[..., Any]):
    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.info: FunctionInfo = inspect_function(fn, what="resource")
        self.name = name or self.info.name
        self.title = title
        self.description = description if description is not None else self.info.summary
        self.mime_type = mime_type
        self.annotations = _annotations(annotations)
        self.icons: list[Icon] | None = icon_list(icons)
        self.meta = dict(meta) if meta is not None else None

    async def _produce(self, uri: str, kwargs: dict[str, Any], ctx: Context) -> list[Any]:
        if self.info.context_param is not None:
            kwargs[self.info.context_param] = ctx
        try:
            value = await call(self.info, kwargs)
            return contents_for(uri, value, self.mime_type)
        except ResourceNotFound as exc:
            if exc.uri is None:
                raise not_found(uri) from None
            raise
        except McpError:
            raise
        except Exception:
            logger.exception("reading resource %r failed", uri[:200])
            raise McpError(INTERNAL_ERROR, f"Error reading resource {uri[:200]}") from None


class RegisteredResource(_ResourceBase):
    """A static resource: one URI, listed by ``resources/list``."""

    def __init__(
        self, uri: str, fn: Callable[..., Any], *, size: int | None = None, **kwargs: Any
    ) -> None:
        if ":" not in uri:
            raise ValueError(f"Resource URI {uri!r} has no scheme (e.g. 'file://', 'app://')")
        _require_canonical("Resource URI", uri, uri)
        super().__init__(fn, **kwargs)
        if self.info.params:
            names = ", ".join(p.name for p in self.info.params)
            raise TypeError(
                f"Static resource {uri!r} takes parameters ({names}); put them in the URI as "
                "{variables} to make it a template"
            )
        self.uri = uri
        self.size = size

    def __repr__(self) -> str:
        return f"<RegisteredResource {self.uri!r}>"

    def definition(self) -> Resource:
        return Resource(
            uri=self.uri,
            name=self.name,
            title=self.title,
            description=self.description,
            mime_type=self.mime_type,
            size=self.size,
            icons=self.icons,
            annotations=self.annotations,
            meta=self.meta,
        )

    async def read(self, uri: str, ctx: Context) -> list[Any]:
        return await self._produce(uri, {}, ctx)


class RegisteredTemplate(_ResourceBase):
    """A resource template: any URI it matches, listed by ``resources/templates/list``."""

    def __init__(self, uri_template: str, fn: Callable[..., Any], **kwargs: Any) -> None:
        self.template = UriTemplate(uri_template)
        # The literal text before the first expression: reads are matched in canonical form.
        head = uri_template.partition("{")[0]
        _require_canonical("Resource template", uri_template, head)
        super().__init__(fn, **kwargs)
        variables = set(self.template.variables)
        params = {p.name: p for p in self.info.params}
        missing = variables - params.keys()
        if missing:
            raise TypeError(
                f"Resource template {uri_template!r}: the function has no parameter for "
                f"{', '.join(sorted(missing))}"
            )
        extra = [p.name for p in self.info.params if p.name not in variables and p.required]
        if extra:
            raise TypeError(
                f"Resource template {uri_template!r}: parameters {', '.join(extra)} are not "
                "template variables and have no default"
            )
        self._converters: dict[str, TextConvert] = {}
        for name in self.template.variables:
            try:
                self._converters[name] = text_converter(params[name].annotation)
            except TypeError as exc:
                raise param_error(f"Resource template {uri_template!r}", name, exc) from None
        self._required = {name for name in self.template.variables if params[name].required}
        self._choices = {name: choices_of(params[name].annotation) for name in variables}

    def __repr__(self) -> str:
        return f"<RegisteredTemplate {self.template.template!r}>"

    def choices(self, variable: str) -> list[str] | None:
        """The values a ``Literal``/``Enum`` variable allows (used for completion)."""
        return self._choices.get(variable)

    @property
    def uri_template(self) -> str:
        return self.template.template

    def definition(self) -> ResourceTemplate:
        return ResourceTemplate(
            uri_template=self.template.template,
            name=self.name,
            title=self.title,
            description=self.description,
            mime_type=self.mime_type,
            icons=self.icons,
            annotations=self.annotations,
            meta=self.meta,
        )

    def match(self, uri: str) -> dict[str, Any] | None:
        """The converted arguments for ``uri``, or None when the template does not fit it."""
        values = self.template.match(uri)
        if values is None or not self._required <= values.keys():
            return None
        kwargs: dict[str, Any] = {}
        for name, value in values.items():
            try:
                kwargs[name] = self._converters[name](value)
            except ValidationError:
                return None  # e.g. "abc" for an int variable: not one of ours
        return kwargs

    async def read(self, uri: str, kwargs: dict[str, Any], ctx: Context) -> list[Any]:
        return await self._produce(uri, dict(kwargs), ctx)


def _require_canonical(what: str, given: str, text: str) -> None:
    """Reads are looked up by canonical URI (:mod:`trimcp.protocol.uris`): a registration
    in another form could never be reached, so it is refused with the form to write."""
    canonical = canonical_uri(text)  # AmbiguousUri (a ValueError) names what is wrong
    if canonical != text:
        raise ValueError(
            f"{what} {given!r} is not in canonical form: write {text!r} as {canonical!r} "
            "(lower-case scheme, no escapes of letters, digits or '-._~', upper-case hex)"
        )


def contents_for(uri: str, value: Any, mime_type: str | None) -> list[ResourceContents]:
    """The contents list for what a resource function returned (see the module docs)."""
    if isinstance(value, ReadResourceResult):
        return list(value.contents)
    if isinstance(value, list | tuple) and value and all(_is_single(v) for v in value):
        return [_single(uri, v, mime_type) for v in value]
    return [_single(uri, value, mime_type)]


def _is_single(value: Any) -> bool:
    return isinstance(value, str | bytes | bytearray | TextResourceContents | BlobResourceContents)


def _single(uri: str, value: Any, mime_type: str | None) -> ResourceContents:
    if isinstance(value, TextResourceContents | BlobResourceContents):
        return value
    if isinstance(value, str):
        return TextResourceContents(uri=uri, text=value, mime_type=mime_type or "text/plain")
    if isinstance(value, bytes | bytearray):
        return BlobResourceContents(
            uri=uri,
            blob=base64.b64encode(bytes(value)).decode("ascii"),
            mime_type=mime_type or "application/octet-stream",
        )
    text = json.dumps(to_json(value), ensure_ascii=False)
    return TextResourceContents(uri=uri, text=text, mime_type=mime_type or "application/json")
