"""An OpenAPI operation as a tool: its name, its input and output schemas, and how its
arguments become an HTTP request.

Names: the ``operationId``, with anything but letters, digits, ``_``, ``-`` and ``.``
replaced by ``_`` (at most 128 characters); an operation without one is named by its
method and path: ``GET /pets/{petId}/photos`` -> ``get_pets_petId_photos``.

Input schema: one object. Path, query and header parameters are properties under their
own names; a JSON request body whose schema is an object with ``properties`` is spread
beside them (its properties become the tool's), unless one of its names is a
parameter's, in which case the whole body is one property, ``body``. Header parameters
named ``Accept``, ``Content-Type`` or ``Authorization`` are left out, as OpenAPI says.

Output schema: the schema of the first 2xx response with JSON content (an object as is;
anything else wrapped as ``{"result": ...}``); none when that response has no JSON schema.

Arguments are serialized as OpenAPI's default styles say (path ``simple``, query ``form``
exploded or not, ``spaceDelimited``, ``pipeDelimited`` and ``deepObject``, header
``simple``); a missing required argument, an unknown one or a value of the wrong shape is
a tool error naming it, before any request is sent. Pure functions; no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal
from urllib.parse import quote

import attrs

from trimcp._record import Record
from trimcp.server.openapi.document import MAX_SCHEMA_NODES, Refs, Unsupported
from trimcp.server.tools import ToolError
from trimcp.types import ToolAnnotations

METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9_.\-]+")
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})
_STYLES: Final[Mapping[str, frozenset[str]]] = {
    "path": frozenset({"simple"}),
    "query": frozenset({"form", "spaceDelimited", "pipeDelimited", "deepObject"}),
    "header": frozenset({"simple"}),
}
_DEFAULT_STYLE: Final = {"path": "simple", "query": "form", "header": "simple"}
Location = Literal["path", "query", "header"]
_LOCATIONS: Final[Mapping[str, Location]] = {"path": "path", "query": "query", "header": "header"}


@attrs.frozen(repr=False, eq=False)
class Parameter(Record):
    """One path, query or header parameter."""

    name: str
    location: Location
    required: bool
    style: str
    explode: bool


@attrs.frozen(repr=False, eq=False)
class Operation(Record):
    """One operation, as a tool calls it."""

    name: str
    method: str
    path: str
    parameters: tuple[Parameter, ...]
    #: The argument holding the whole JSON body, when it is not spread.
    body_key: str | None
    #: The arguments that are the body's properties, when it is spread.
    body_fields: frozenset[str]
    body_required: bool
    body_media: str | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wrap_result: bool
    title: str | None
    description: str | None
    tags: tuple[str, ...]
    annotations: ToolAnnotations

    @property
    def label(self) -> str:
        """``GET /pets/{petId}``: how messages name it."""
        return f"{self.method} {self.path}"


@attrs.frozen(repr=False, eq=False)
class HttpCall(Record):
    """What one call sends: the method, the path and query (relative to the base URL),
    the parameter headers, and the body (empty: none)."""

    method: str
    target: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


def tool_name(operation: Mapping[str, Any], method: str, path: str) -> str:
    """The tool's name (see the module docs)."""
    given = operation.get("operationId")
    if isinstance(given, str) and given.strip():
        base = given.strip()
    else:
        parts = [part.strip("{}") for part in path.split("/") if part]
        base = "_".join([method, *parts])
    name = _NAME_CHARS.sub("_", base).strip("_") or method
    return name[:128]


def read_operations(document: Mapping[str, Any], refs: Refs) -> tuple[list[Operation], list[str]]:
    """Every operation of ``document``, and what could not be read (one line each, naming
    the operation). Operations come in document order."""
    operations: list[Operation] = []
    problems: list[str] = []
    by_name: dict[str, Operation] = {}
    for path, item in document.get("paths", {}).items():
        item = refs.follow(item, f"path {path}")
        if not isinstance(item, Mapping):
            problems.append(f"path {path}: not an object")
            continue
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            label = f"{method.upper()} {path}"
            try:
                read = _operation(refs, str(path), method, item, operation, label)
            except Unsupported as exc:
                problems.append(str(exc))
                continue
            clash = by_name.get(read.name)
            if clash is not None:
                problems.append(
                    f"{label}: its tool name {read.name!r} is also {clash.label}'s; give one "
                    "of them another operationId"
                )
                continue
            by_name[read.name] = read
            operations.append(read)
    return operations, problems


def _operation(
    refs: Refs,
    path: str,
    method: str,
    item: Mapping[str, Any],
    operation: Mapping[str, Any],
    label: str,
) -> Operation:
    if operation.get("callbacks"):
        raise Unsupported(f"{label}: callbacks are not supported (the API would call back)")
    budget = [MAX_SCHEMA_NODES]
    properties: dict[str, Any] = {}
    required: list[str] = []
    parameters = _parameters(refs, item, operation, label)
    for parameter, raw in parameters:
        schema = refs.schema(raw.get("schema", {}), label, "request", budget)
        if not isinstance(schema, dict):
            schema = {}
        description = raw.get("description")
        if isinstance(description, str) and description:
            schema = {**schema, "description": description}
        if raw.get("deprecated") is True:
            schema = {**schema, "deprecated": True}
        properties[parameter.name] = schema
        if parameter.required:
            required.append(parameter.name)
    body = _body(refs, operation, label, budget, set(properties))
    body_key, body_fields, body_required, body_media = None, frozenset[str](), False, None
    if body is not None:
        body_media, schema, body_required, spread = body
        if spread:
            body_fields = frozenset(schema["properties"])
            properties.update(schema["properties"])
            if body_required:
                required += [name for name in schema.get("required", []) if name in body_fields]
        else:
            body_key = "body" if "body" not in properties else "requestBody"
            if body_key in properties:
                raise Unsupported(f"{label}: parameters named 'body' and 'requestBody' clash")
            properties[body_key] = schema
            if body_required:
                required.append(body_key)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    output_schema, wrap = _output(refs, operation, label, budget)
    path_names = set(re.findall(r"{([^}]+)}", path))
    declared = {p.name for p, _ in parameters if p.location == "path"}
    if path_names - declared:
        missing = ", ".join(sorted(path_names - declared))
        raise Unsupported(f"{label}: the path names {missing}, which no parameter describes")
    summary = _text(operation.get("summary"))
    description = _text(operation.get("description")) or summary
    if operation.get("deprecated") is True:
        description = f"Deprecated. {description or ''}".strip()
    tags = operation.get("tags")
    return Operation(
        name=tool_name(operation, method, path),
        method=method.upper(),
        path=path,
        parameters=tuple(p for p, _ in parameters),
        body_key=body_key,
        body_fields=body_fields,
        body_required=body_required,
        body_media=body_media,
        input_schema=input_schema,
        output_schema=output_schema,
        wrap_result=wrap,
        title=summary if summary != description else None,
        description=description,
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        annotations=_annotations(method),
    )


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _annotations(method: str) -> ToolAnnotations:
    safe = method in ("get", "head", "options")
    return ToolAnnotations(
        read_only_hint=safe,
        destructive_hint=method == "delete" if not safe else None,
        idempotent_hint=method in ("get", "head", "options", "put", "delete"),
        open_world_hint=True,
    )


def _parameters(
    refs: Refs, item: Mapping[str, Any], operation: Mapping[str, Any], label: str
) -> list[tuple[Parameter, Mapping[str, Any]]]:
    """The path item's parameters overridden by the operation's, by (name, location)."""
    chosen: dict[tuple[str, str], Mapping[str, Any]] = {}
    for source in (item.get("parameters"), operation.get("parameters")):
        for raw in source if isinstance(source, list) else []:
            raw = refs.follow(raw, label)
            if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
                raise Unsupported(f"{label}: a parameter without a name")
            chosen[(raw["name"], str(raw.get("in")))] = raw
    found: list[tuple[Parameter, Mapping[str, Any]]] = []
    names: set[str] = set()
    for (name, location), raw in chosen.items():
        where = f"{label}: the {location} parameter {name!r}"
        if location == "cookie":
            raise Unsupported(f"{where}: cookie parameters are not supported")
        place = _LOCATIONS.get(location)
        if place is None:
            raise Unsupported(f"{where}: 'in' must be path, query, header or cookie")
        if location == "header" and name.lower() in _IGNORED_HEADERS:
            continue
        if "content" in raw:
            raise Unsupported(f"{where} is described by 'content'; only 'schema' is supported")
        style = raw.get("style", _DEFAULT_STYLE[location])
        if style not in _STYLES[location]:
            raise Unsupported(f"{where}: style {style!r} is not supported")
        if name in names:
            raise Unsupported(f"{where}: another parameter has the same name")
        names.add(name)
        explode = raw.get("explode", style == "form")
        parameter = Parameter(
            name=name,
            location=place,
            required=location == "path" or raw.get("required") is True,
            style=str(style),
            explode=explode is True,
        )
        found.append((parameter, raw))
    return found


def is_json(media: str) -> bool:
    """``application/json``, or a ``+json`` type (``application/merge-patch+json``)."""
    media = media.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json") or media == "*/*"


def _body(
    refs: Refs, operation: Mapping[str, Any], label: str, budget: list[int], taken: set[str]
) -> tuple[str, Any, bool, bool] | None:
    """(media type, schema, required, spread) of the JSON request body; None: none."""
    raw = operation.get("requestBody")
    if raw is None:
        return None
    body = refs.follow(raw, label)
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        return None
    media = next((m for m in content if is_json(str(m))), None)
    if media is None:
        kinds = ", ".join(sorted(str(m) for m in content))
        raise Unsupported(
            f"{label}: its request body is {kinds}; only JSON request bodies are supported"
        )
    entry = content[media]
    source = entry.get("schema", {}) if isinstance(entry, Mapping) else {}
    schema = refs.schema(source, label, "request", budget)
    if not isinstance(schema, dict):
        schema = {}
    properties = schema.get("properties")
    spread = (
        isinstance(properties, dict)
        and bool(properties)
        and schema.get("type", "object") == "object"
        and not any(key in schema for key in ("allOf", "anyOf", "oneOf", "not"))
        and not taken.intersection(properties)
    )
    sent = "application/json" if media == "*/*" else str(media)
    return sent, schema, body.get("required") is True, spread


def _output(
    refs: Refs, operation: Mapping[str, Any], label: str, budget: list[int]
) -> tuple[dict[str, Any] | None, bool]:
    responses = operation.get("responses")
    if not isinstance(responses, Mapping):
        return None, False
    codes = sorted(str(code) for code in responses if str(code).startswith("2"))
    for code in codes:
        response = refs.follow(responses[code], label)
        content = response.get("content") if isinstance(response, Mapping) else None
        if not isinstance(content, Mapping) or not content:
            return None, False  # the first success says nothing: no output schema
        media = next((m for m in content if is_json(str(m))), None)
        entry = content[media] if media is not None else None
        if not isinstance(entry, Mapping) or "schema" not in entry:
            return None, False
        schema = refs.schema(entry["schema"], label, "response", budget)
        if not isinstance(schema, dict):
            return None, False
        if schema.get("type") == "object" or (
            "type" not in schema and isinstance(schema.get("properties"), dict)
        ):
            return {"type": "object", **schema}, False
        return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True
    return None, False


# --- arguments -> request -------------------------------------------------------------


def build_call(operation: Operation, arguments: Mapping[str, Any]) -> HttpCall:
    """The request for ``arguments``. Raises :class:`ToolError` naming what is wrong."""
    _check_arguments(operation, arguments)
    path = operation.path
    query: list[str] = []
    headers: list[tuple[str, str]] = []
    for parameter in operation.parameters:
        value = arguments.get(parameter.name)
        if value is None:
            continue
        if parameter.location == "path":
            path = path.replace("{" + parameter.name + "}", _simple(parameter, value, _q))
        elif parameter.location == "query":
            query += _query_pairs(parameter, value)
        else:
            headers.append((parameter.name, _header_value(parameter, value)))
    body = b""
    if operation.body_key is not None and arguments.get(operation.body_key) is not None:
        body = _json(arguments[operation.body_key])
    elif operation.body_fields:
        fields = {k: v for k, v in arguments.items() if k in operation.body_fields}
        if fields or operation.body_required:
            body = _json(fields)
    target = path + ("?" + "&".join(query) if query else "")
    return HttpCall(operation.method, target, tuple(headers), body)


def _check_arguments(operation: Operation, arguments: Mapping[str, Any]) -> None:
    known = operation.input_schema["properties"]
    unknown = [name for name in arguments if name not in known]
    if unknown:
        raise ToolError(
            f"Unknown argument(s) {', '.join(map(repr, unknown))}; {operation.name} takes "
            f"{', '.join(known) or 'none'}"
        )
    missing = [
        name for name in operation.input_schema.get("required", ()) if arguments.get(name) is None
    ]
    if missing:
        raise ToolError(f"Missing required argument(s): {', '.join(missing)}")


def _json(value: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ToolError(f"The request body is not JSON: {exc}") from None


def _scalar(parameter: Parameter, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ToolError(
        f"Argument {parameter.name!r}: a string, number or boolean, not {type(value).__name__}"
    )


def _texts(parameter: Parameter, value: list[Any]) -> list[str]:
    return [_scalar(parameter, item) for item in value]


def _pairs(parameter: Parameter, value: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(str(k), _scalar(parameter, v)) for k, v in value.items() if v is not None]


def _q(text: str) -> str:
    return quote(text, safe="")


def _simple(parameter: Parameter, value: Any, encode: Callable[[str], str]) -> str:
    """The ``simple`` style: ``a,b`` for an array, ``k,v`` (``k=v`` exploded) for an
    object, each part encoded."""
    if isinstance(value, list):
        return ",".join(encode(text) for text in _texts(parameter, value))
    if isinstance(value, Mapping):
        joint = "=" if parameter.explode else ","
        return ",".join(f"{encode(k)}{joint}{encode(v)}" for k, v in _pairs(parameter, value))
    return encode(_scalar(parameter, value))


def _header_value(parameter: Parameter, value: Any) -> str:
    text = _simple(parameter, value, str)
    if any(c in text for c in "\r\n\0"):
        raise ToolError(f"Argument {parameter.name!r}: a header value holds a line break")
    return text


def _query_pairs(parameter: Parameter, value: Any) -> list[str]:
    name = _q(parameter.name)
    style = parameter.style
    if isinstance(value, Mapping):
        pairs = _pairs(parameter, value)
        if style == "deepObject":
            return [f"{name}%5B{_q(k)}%5D={_q(v)}" for k, v in pairs]
        if parameter.explode:
            return [f"{_q(k)}={_q(v)}" for k, v in pairs]
        return [f"{name}=" + ",".join(f"{_q(k)},{_q(v)}" for k, v in pairs)]
    if style == "deepObject":
        raise ToolError(f"Argument {parameter.name!r}: an object")
    if not isinstance(value, list):
        return [f"{name}={_q(_scalar(parameter, value))}"]
    texts = _texts(parameter, value)
    if style == "form" and parameter.explode:
        return [f"{name}={_q(text)}" for text in texts]
    separator = {"form": ",", "spaceDelimited": "%20", "pipeDelimited": "|"}[style]
    return [f"{name}={separator.join(_q(text) for text in texts)}"]
