"""Reading OpenAPI documents: versions, YAML, local $refs (cycles and external ones
refused), the 3.0 schema dialect, and what an operation becomes (names, schemas, the
HTTP request its arguments make)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from examples.openapi.bookshelf import spec
from trimcp.server.openapi import OpenApiError, OpenApiProvider, api_message, headers_from_env
from trimcp.server.openapi.document import MAX_SCHEMA_NODES, Refs, Unsupported, parse_text
from trimcp.server.openapi.operations import Operation, build_call, read_operations, tool_name
from trimcp.server.tools import ToolError

BASE = "http://127.0.0.1:9"


def document(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": BASE}],
        "paths": paths,
        "components": {"schemas": schemas or {}},
    }


def one(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> Operation:
    doc = document(paths, schemas)
    operations, problems = read_operations(doc, Refs(doc))
    assert problems == []
    [operation] = operations
    return operation


def problems_of(paths: dict[str, Any], schemas: dict[str, Any] | None = None) -> list[str]:
    doc = document(paths, schemas)
    return read_operations(doc, Refs(doc))[1]


def ok(schema: Any) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


# --- the document -----------------------------------------------------------------------


def test_only_openapi_3_0_and_3_1_are_read() -> None:
    with pytest.raises(OpenApiError, match=r"is Swagger 2\.0 .* convert it first"):
        parse_text('{"swagger": "2.0", "paths": {}}', "old.json")
    with pytest.raises(OpenApiError, match=r"openapi '4\.0\.0' is not supported"):
        parse_text('{"openapi": "4.0.0"}', "new.json")
    with pytest.raises(OpenApiError, match="not an OpenAPI document"):
        parse_text("[1, 2]", "list.json")
    assert parse_text('{"openapi": "3.0.3", "paths": {}}', "x")["openapi"] == "3.0.3"


def test_yaml_is_read_when_pyyaml_is_installed() -> None:
    text = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n"
    assert parse_text(text, "api.yaml")["info"] == {"title": "t", "version": "1"}
    with pytest.raises(OpenApiError, match=r"api\.yaml is neither JSON nor valid YAML"):
        parse_text("openapi: [unclosed", "api.yaml")


def test_without_pyyaml_a_yaml_document_is_refused_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(OpenApiError, match=r"needs PyYAML \(pip install pyyaml\)"):
        parse_text("openapi: 3.1.0\n", "api.yaml")
    assert parse_text('{"openapi": "3.1.0"}', "api.json")["openapi"] == "3.1.0"  # JSON still


def test_local_refs_are_inlined_everywhere() -> None:
    doc = document(
        {
            "/x/{id}": {
                "parameters": [{"$ref": "#/components/parameters/Id"}],
                "get": {
                    "operationId": "getX",
                    "responses": {"200": {"$ref": "#/components/responses/X"}},
                },
            }
        },
        {
            "X": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Y"}}},
            "Y": {"type": "string", "description": "leaf"},
        },
    )
    doc["components"]["parameters"] = {
        "Id": {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    }
    doc["components"]["responses"] = {
        "X": {
            "description": "ok",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/X"}}},
        }
    }
    [operation], problems = read_operations(doc, Refs(doc))
    assert problems == []
    assert operation.input_schema["properties"] == {"id": {"type": "string"}}
    assert operation.output_schema == {
        "type": "object",
        "properties": {"child": {"type": "string", "description": "leaf"}},
    }


def test_a_ref_with_siblings_keeps_them_and_pointer_escapes_are_read() -> None:
    operation = one(
        {
            "/a": {
                "get": {
                    "operationId": "a",
                    "responses": ok(
                        {"$ref": "#/components/schemas/a~1b", "description": "overridden"}
                    ),
                }
            }
        },
        {"a/b": {"type": "object", "description": "original", "properties": {}}},
    )
    assert operation.output_schema == {
        "type": "object",
        "description": "overridden",
        "properties": {},
    }


def test_recursive_schemas_are_refused_naming_the_cycle() -> None:
    [problem] = problems_of(
        {
            "/tree": {
                "get": {
                    "operationId": "tree",
                    "responses": ok({"$ref": "#/components/schemas/Node"}),
                }
            }
        },
        {
            "Node": {
                "type": "object",
                "properties": {
                    "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Kid"}}
                },
            },
            "Kid": {"$ref": "#/components/schemas/Node"},
        },
    )
    assert problem == (
        "GET /tree: the schema #/components/schemas/Node refers to itself "
        "(#/components/schemas/Node -> #/components/schemas/Kid -> #/components/schemas/Node); "
        "recursive schemas are not supported"
    )


def test_a_schema_used_twice_is_not_a_cycle() -> None:
    operation = one(
        {
            "/p": {
                "get": {
                    "operationId": "p",
                    "responses": ok(
                        {
                            "type": "object",
                            "properties": {
                                "a": {"$ref": "#/components/schemas/S"},
                                "b": {"$ref": "#/components/schemas/S"},
                            },
                        }
                    ),
                }
            }
        },
        {"S": {"type": "integer"}},
    )
    assert operation.output_schema is not None
    assert operation.output_schema["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    }


def test_external_and_dangling_refs_are_refused() -> None:
    external = problems_of(
        {"/e": {"get": {"operationId": "e", "responses": ok({"$ref": "other.json#/Pet"})}}}
    )
    assert external == [
        "GET /e: the reference 'other.json#/Pet' is not local to the document; bundle the "
        "referenced files into one document"
    ]
    dangling = problems_of(
        {
            "/d": {
                "get": {"operationId": "d", "responses": ok({"$ref": "#/components/schemas/Nope"})}
            }
        }
    )
    assert dangling == ["GET /d: the reference '#/components/schemas/Nope' points at nothing"]


def test_references_that_fan_out_are_bounded() -> None:
    # Each level refers to the next twice: 2**30 nodes once inlined, from 30 small schemas.
    schemas = {
        f"L{i}": {
            "type": "object",
            "properties": {
                "a": {"$ref": f"#/components/schemas/L{i + 1}"},
                "b": {"$ref": f"#/components/schemas/L{i + 1}"},
            },
        }
        for i in range(30)
    }
    schemas["L30"] = {"type": "string"}
    [problem] = problems_of(
        {
            "/big": {
                "get": {"operationId": "big", "responses": ok({"$ref": "#/components/schemas/L0"})}
            }
        },
        schemas,
    )
    assert problem == (
        f"GET /big: its schemas hold more than {MAX_SCHEMA_NODES} nodes once their references "
        "are inlined"
    )


def test_the_3_0_dialect_becomes_json_schema() -> None:
    doc = spec()
    doc["components"]["schemas"]["Odd"] = {
        "type": "object",
        "properties": {
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "nullable": True},
            "level": {"type": "string", "enum": ["a", "b"], "nullable": True, "example": "a"},
            "secret": {"type": "string", "writeOnly": True},
        },
        "discriminator": {"propertyName": "level"},
        "xml": {"name": "odd"},
    }
    doc["paths"]["/odd"] = {
        "get": {"operationId": "odd", "responses": ok({"$ref": "#/components/schemas/Odd"})}
    }
    operations, _ = read_operations(doc, Refs(doc))
    odd = next(op for op in operations if op.name == "odd")
    assert odd.output_schema == {
        "type": "object",
        "properties": {
            "ratio": {"type": ["number", "null"], "exclusiveMinimum": 0},
            "level": {"type": ["string", "null"], "enum": ["a", "b", None], "examples": ["a"]},
        },
    }


# --- operations -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "method", "path", "expected"),
    [
        ({"operationId": "getPetById"}, "get", "/pets/{id}", "getPetById"),
        ({"operationId": "pets/list all"}, "get", "/pets", "pets_list_all"),
        ({}, "get", "/pets/{petId}/photos", "get_pets_petId_photos"),
        ({}, "post", "/", "post"),
        ({"operationId": "x" * 200}, "get", "/", "x" * 128),
    ],
)
def test_tool_names(operation: dict[str, Any], method: str, path: str, expected: str) -> None:
    assert tool_name(operation, method, path) == expected


def test_the_same_tool_name_twice_is_refused() -> None:
    problems = problems_of(
        {
            "/a": {"get": {"operationId": "same", "responses": {}}},
            "/b": {"get": {"operationId": "same", "responses": {}}},
        }
    )
    assert problems == [
        "GET /b: its tool name 'same' is also GET /a's; give one of them another operationId"
    ]


def test_what_is_not_supported_is_refused_naming_the_operation() -> None:
    multipart = {"content": {"multipart/form-data": {"schema": {"type": "object"}}}}
    problems = problems_of(
        {
            "/upload": {"post": {"operationId": "upload", "requestBody": multipart}},
            "/hook": {"post": {"operationId": "hook", "callbacks": {"done": {}}}},
            "/c": {"get": {"operationId": "c", "parameters": [{"name": "s", "in": "cookie"}]}},
            "/m/{x}": {
                "get": {
                    "operationId": "m",
                    "parameters": [
                        {"name": "x", "in": "path", "required": True, "style": "matrix"}
                    ],
                }
            },
            "/q": {
                "get": {
                    "operationId": "q",
                    "parameters": [
                        {"name": "f", "in": "query", "content": {"application/json": {}}}
                    ],
                }
            },
            "/fine": {"get": {"operationId": "fine"}},
        }
    )
    assert problems == [
        "POST /upload: its request body is multipart/form-data; only JSON request bodies are "
        "supported",
        "POST /hook: callbacks are not supported (the API would call back)",
        "GET /c: the cookie parameter 's': cookie parameters are not supported",
        "GET /m/{x}: the path parameter 'x': style 'matrix' is not supported",
        "GET /q: the query parameter 'f' is described by 'content'; only 'schema' is supported",
    ]
    doc = document({"/upload": {"post": {"operationId": "upload", "requestBody": multipart}}})
    with pytest.raises(OpenApiError, match=r"1 operation\(s\) cannot be served:\n  POST /upload"):
        OpenApiProvider(doc)
    doc["paths"]["/fine"] = {"get": {"operationId": "fine"}}
    skipping = OpenApiProvider(doc, unsupported="skip")
    assert list(skipping.operations) == ["fine"]


def test_a_body_clashing_with_a_parameter_is_one_body_argument() -> None:
    body = {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                }
            }
        },
    }
    operation = one(
        {
            "/things/{id}": {
                "put": {
                    "operationId": "put",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "requestBody": body,
                }
            }
        }
    )
    assert list(operation.input_schema["properties"]) == ["id", "body"]
    assert operation.input_schema["required"] == ["id", "body"]
    call = build_call(operation, {"id": "a b", "body": {"id": "x", "name": "y"}})
    assert (call.method, call.target, call.body) == (
        "PUT",
        "/things/a%20b",
        b'{"id": "x", "name": "y"}',
    )


def test_arguments_are_serialized_in_the_documented_styles() -> None:
    def param(name: str, where: str, **extra: Any) -> dict[str, Any]:
        return {"name": name, "in": where, "schema": {}, **extra}

    operation = one(
        {
            "/s/{list}/{obj}": {
                "get": {
                    "operationId": "s",
                    "parameters": [
                        param("list", "path", required=True),
                        param("obj", "path", required=True, explode=True),
                        param("many", "query"),
                        param("csv", "query", explode=False),
                        param("pipes", "query", style="pipeDelimited"),
                        param("filter", "query", style="deepObject"),
                        param("flag", "query"),
                        param("X-Trace", "header"),
                        param("Accept", "header"),  # ignored, as OpenAPI says
                    ],
                }
            }
        }
    )
    assert "Accept" not in operation.input_schema["properties"]
    call = build_call(
        operation,
        {
            "list": ["a", "b/c"],
            "obj": {"k": "v"},
            "many": [1, 2],
            "csv": ["x", "y,z"],
            "pipes": ["p", "q"],
            "filter": {"name": "n m"},
            "flag": True,
            "X-Trace": "t-1",
        },
    )
    assert call.target == (
        "/s/a,b%2Fc/k=v?many=1&many=2&csv=x,y%2Cz&pipes=p|q&filter%5Bname%5D=n%20m&flag=true"
    )
    assert call.headers == (("X-Trace", "t-1"),)
    with pytest.raises(ToolError, match="a header value holds a line break"):
        build_call(operation, {"list": [], "obj": {}, "X-Trace": "a\r\nb"})
    with pytest.raises(ToolError, match=r"Missing required argument\(s\): list, obj"):
        build_call(operation, {})


def test_an_optional_body_is_sent_only_with_some_of_it() -> None:
    body = {
        "content": {
            "application/merge-patch+json": {
                "schema": {"type": "object", "properties": {"note": {"type": "string"}}}
            }
        }
    }
    operation = one({"/n": {"patch": {"operationId": "n", "requestBody": body}}})
    assert build_call(operation, {}).body == b""
    call = build_call(operation, {"note": "hi"})
    assert (call.body, operation.body_media) == (b'{"note": "hi"}', "application/merge-patch+json")


def test_api_messages_are_found_where_apis_put_them() -> None:
    assert api_message(b'{"message": "no such pet"}') == "no such pet"
    assert api_message(b'{"error": {"code": 7, "message": "quota"}}') == "quota"
    assert api_message(b'{"errors": [{"detail": "a"}, {"detail": "b"}]}') == "a; b"
    assert api_message(b'{"code": 9}') == '{"code": 9}'
    assert api_message(b"  Service\n  Unavailable ") == "Service Unavailable"
    assert api_message(b"x" * 5000).endswith("…")
    assert len(api_message(b"x" * 5000)) == 1000


def test_credentials_from_the_environment() -> None:
    headers, token = headers_from_env(
        {"TRIMCP_OPENAPI_HEADERS": "X-Api-Key: k1\nX-Tenant: acme\n", "TRIMCP_OPENAPI_TOKEN": "t"}
    )
    assert (headers, token) == ({"X-Api-Key": "k1", "X-Tenant": "acme"}, "t")
    with pytest.raises(OpenApiError, match="one 'Name: value' per line"):
        headers_from_env({"TRIMCP_OPENAPI_HEADERS": "just-a-value"})
    assert headers_from_env({}) == ({}, None)


def test_the_bookshelf_document_is_served_whole() -> None:
    provider = OpenApiProvider(copy.deepcopy(spec(openapi="3.1.0", base_url=BASE)))
    assert len(provider.operations) == 12
    with pytest.raises(Unsupported):
        Refs({}).target("#/nothing", "here")


def test_the_example_document_is_the_example_apis() -> None:
    written = Path(__file__).resolve().parents[2] / "examples" / "openapi" / "bookshelf.json"
    assert json.loads(written.read_text()) == spec(base_url="http://127.0.0.1:8080")
