"""Reading an OpenAPI document: its text (JSON, or YAML when PyYAML is installed), its
version, its local ``$ref``s inlined, and its schemas as JSON Schema.

Only local references (``#/components/schemas/Pet``) are followed; one to another file or
URL is refused, and so is a schema that refers to itself (directly or through others):
the tools' input and output schemas are sent whole, without references. The schemas of
one operation may not grow past :data:`MAX_SCHEMA_NODES` once inlined (a small document
whose references fan out cannot make a huge tool). OpenAPI 3.0's schema dialect is turned
into JSON Schema: ``nullable`` becomes a ``"null"`` type, boolean ``exclusiveMinimum``/
``exclusiveMaximum`` become numbers, ``example`` becomes ``examples``, and the keywords
JSON Schema does not know (``discriminator``, ``xml``, ``externalDocs``) are dropped. In
a request, ``readOnly`` properties are left out; in a response, ``writeOnly`` ones.

Pure functions; no I/O (fetching a document by URL is in :mod:`.provider`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Final, Literal
from urllib.parse import unquote

#: Bytes of one OpenAPI document, read from a file or fetched.
MAX_DOCUMENT_BYTES: Final = 16 * 1024 * 1024
#: Nodes (objects, arrays, values) of one operation's schemas once ``$ref``s are inlined.
MAX_SCHEMA_NODES: Final = 20_000

Mode = Literal["request", "response"]

_DROPPED: Final = frozenset({"discriminator", "xml", "externalDocs", "nullable", "example"})


class OpenApiError(ValueError):
    """The document cannot be served: it says what, where, and what to do instead."""


class Unsupported(OpenApiError):
    """One operation uses something trimcp does not serve (see the module docs of
    :mod:`trimcp.server.openapi`)."""


def parse_text(text: str, source: str) -> dict[str, Any]:
    """The document in ``text`` (JSON; YAML when PyYAML is installed). Raises
    :class:`OpenApiError` naming ``source``."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise OpenApiError(f"{source} is not valid JSON: {exc}") from None
    else:
        data = _yaml(text, source)
    if not isinstance(data, dict):
        raise OpenApiError(f"{source} is not an OpenAPI document (not a JSON object)")
    check_version(data, source)
    return data


def _yaml(text: str, source: str) -> Any:
    try:  # PyYAML is optional: trimcp does not depend on it
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise OpenApiError(
            f"{source} is not JSON; reading YAML needs PyYAML (pip install pyyaml), or "
            "convert the document to JSON"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise OpenApiError(f"{source} is neither JSON nor valid YAML: {exc}") from None


def check_version(document: Mapping[str, Any], source: str) -> None:
    """Refuse what is not OpenAPI 3.0 or 3.1."""
    version = document.get("openapi")
    if "swagger" in document:
        raise OpenApiError(
            f"{source} is Swagger {document.get('swagger')} (OpenAPI 2); trimcp reads OpenAPI "
            "3.0 and 3.1: convert it first (e.g. with swagger2openapi)"
        )
    if not isinstance(version, str) or not version.startswith(("3.0.", "3.1.")):
        raise OpenApiError(
            f"{source}: openapi {version!r} is not supported; trimcp reads OpenAPI 3.0 and 3.1"
        )
    if not isinstance(document.get("paths", {}), Mapping):
        raise OpenApiError(f"{source}: 'paths' must be an object")


class Refs:
    """Resolves the local references of one document."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def target(self, ref: object, where: str) -> Any:
        """What the reference ``ref`` points at (one step). Raises :class:`Unsupported`."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise Unsupported(
                f"{where}: the reference {ref!r} is not local to the document; bundle the "
                "referenced files into one document"
            )
        node: Any = self.document
        for raw in ref[1:].split("/")[1:] if ref != "#" else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise Unsupported(f"{where}: the reference {ref!r} points at nothing")
        return node

    def follow(self, node: Any, where: str) -> Any:
        """``node``, or what its ``$ref`` chain ends at (parameters, request bodies,
        responses: objects that are not schemas)."""
        seen: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise Unsupported(f"{where}: the reference {ref!r} refers to itself")
            seen.append(ref)
            node = self.target(ref, where)
        return node

    def schema(self, node: Any, where: str, mode: Mode, budget: list[int]) -> Any:
        """``node`` as JSON Schema with every reference inlined (see the module docs).
        ``budget`` holds the nodes still allowed; raises :class:`Unsupported`."""
        return _Inliner(self, where, mode, budget).convert(node, ())


class _Inliner:
    def __init__(self, refs: Refs, where: str, mode: Mode, budget: list[int]) -> None:
        self.refs = refs
        self.where = where
        self.mode = mode
        self.budget = budget

    def _spend(self) -> None:
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise Unsupported(
                f"{self.where}: its schemas hold more than {MAX_SCHEMA_NODES} nodes once "
                "their references are inlined"
            )

    def convert(self, node: Any, trail: tuple[str, ...]) -> Any:
        self._spend()
        if isinstance(node, list):
            return [self.convert(item, trail) for item in node]
        if not isinstance(node, Mapping):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in trail:
                chain = " -> ".join((*trail[trail.index(ref) :], ref))
                raise Unsupported(
                    f"{self.where}: the schema {ref} refers to itself ({chain}); recursive "
                    "schemas are not supported"
                )
            resolved = self.convert(self.refs.target(ref, self.where), (*trail, ref))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if not siblings or not isinstance(resolved, dict):
                return resolved
            return {**resolved, **self._object(siblings, trail)}
        return self._object(node, trail)

    def _object(self, node: Mapping[str, Any], trail: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key == "properties" and isinstance(value, Mapping):
                out[key] = {
                    name: self.convert(schema, trail)
                    for name, schema in value.items()
                    if not self._hidden(schema)
                }
            elif isinstance(value, Mapping | list) and key not in ("enum", "const", "default"):
                out[key] = self.convert(value, trail)  # items, allOf, additionalProperties...
            else:
                out[key] = value
        self._dialect(node, out)
        if "required" in out and isinstance(out.get("properties"), dict):
            kept = [name for name in out["required"] if name in out["properties"]]
            if kept:
                out["required"] = kept
            else:
                del out["required"]
        return out

    def _hidden(self, schema: Any) -> bool:
        """A property the other side never sees: readOnly in a request, writeOnly in a
        response."""
        if isinstance(schema, Mapping) and "$ref" in schema:
            schema = self.refs.follow(schema, self.where)
        if not isinstance(schema, Mapping):
            return False
        flag = "readOnly" if self.mode == "request" else "writeOnly"
        return schema.get(flag) is True

    @staticmethod
    def _dialect(node: Mapping[str, Any], out: dict[str, Any]) -> None:
        """OpenAPI 3.0's words for what JSON Schema says otherwise."""
        if node.get("nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif isinstance(kind, list) and "null" not in kind:
                out["type"] = [*kind, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(node.get(exclusive), bool):  # 3.0: a flag on the bound
                del out[exclusive]
                if node[exclusive] and bound in out:
                    out[exclusive] = out.pop(bound)
        if "example" in node and "examples" not in node:
            out["examples"] = [node["example"]]


def server_url(document: Mapping[str, Any]) -> str | None:
    """The first server's URL, its variables replaced by their defaults (None: none)."""
    servers = document.get("servers")
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], Mapping):
        return None
    url = servers[0].get("url")
    if not isinstance(url, str):
        return None
    variables = servers[0].get("variables")
    if isinstance(variables, Mapping):
        for name, variable in variables.items():
            if isinstance(variable, Mapping) and "default" in variable:
                url = url.replace("{" + str(name) + "}", str(variable["default"]))
    return url
