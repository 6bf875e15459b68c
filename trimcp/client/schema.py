"""A small JSON Schema validator for the subset tool output schemas use.

Why our own: ``jsonschema`` is a test-only dependency, and a client only needs to check
``structuredContent`` against a tool's ``outputSchema``. The schema comes from the server,
so it is untrusted: evaluation is bounded in steps and depth, and keywords that could cost
unbounded time on hostile input (``pattern``, ``patternProperties``: regular expressions)
are not evaluated.

Supported (draft 2020-12 meaning, which MCP uses by default): boolean schemas, ``type``
(one name or a list), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties`` (skipped when ``patternProperties`` is present), ``minProperties``,
``maxProperties``, ``items`` (a schema; a list of schemas is read as the older tuple form),
``prefixItems``, ``minItems``, ``maxItems``, ``uniqueItems``, ``minLength``, ``maxLength``,
``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` (numbers, or the
draft-4 booleans), ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, and
``$ref`` to ``#`` or a JSON pointer inside the same document (``$defs``, ``definitions``).
Every other keyword (``format``, ``pattern``, ``multipleOf``, remote ``$ref`` ...) is
ignored, so the validator errs on the side of accepting.
"""

from __future__ import annotations

import math
from typing import Any, Final

#: Subschemas evaluated per validation before giving up (bounds anyOf/oneOf blow-ups).
DEFAULT_MAX_STEPS: Final = 100_000
#: Nesting of subschema evaluation (data depth plus $ref hops) before giving up.
DEFAULT_MAX_DEPTH: Final = 200

_TYPE_NAMES: Final = frozenset(
    {"null", "boolean", "integer", "number", "string", "array", "object"}
)


class SchemaViolation(ValueError):
    """The instance does not match the schema.

    ``path`` locates the first bad value (``"items[2].name"``; ``""`` for the value itself)
    and ``reason`` says what is wrong; ``str(e) == f"{path}: {reason}"``.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SchemaUnsupported(ValueError):
    """The schema cannot be evaluated: malformed, an unresolvable ``$ref``, or too costly."""


def validate(
    instance: Any,
    schema: Any,
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> None:
    """Check ``instance`` (plain JSON data) against ``schema`` (a JSON Schema as plain data).

    Raises :class:`SchemaViolation` for the first mismatch found, and
    :class:`SchemaUnsupported` when the schema cannot be evaluated within the bounds.
    """
    _Validator(schema, max_steps, max_depth).check(instance)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON defines it: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and bool(a == b)


def _is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and not (
        type(value) is float and not math.isfinite(value)
    )


def _has_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return type(value) is bool
    if name == "integer":
        return type(value) is int or (type(value) is float and value.is_integer())
    if name == "number":
        return _is_number(value)
    if name == "string":
        return type(value) is str
    if name == "array":
        return type(value) is list
    if name == "object":
        return type(value) is dict
    raise SchemaUnsupported(f"unknown type {name!r}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) is int:
        return "integer"
    if type(value) is float:
        return "number"
    if type(value) is str:
        return "string"
    if type(value) is list:
        return "array"
    if type(value) is dict:
        return "object"
    return type(value).__name__


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    if part.isidentifier():
        return f"{path}.{part}" if path else part
    shown = part if len(part) <= 40 else part[:37] + "..."
    return f'{path}["{shown}"]'


def _number(schema: dict[str, Any], key: str) -> float | None:
    value = schema.get(key)
    if value is None or type(value) is bool:
        return None
    if not _is_number(value):
        raise SchemaUnsupported(f"{key} must be a number")
    return float(value)


def _count(schema: dict[str, Any], key: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise SchemaUnsupported(f"{key} must be a non-negative integer")
    return value


def _schemas(schema: dict[str, Any], key: str) -> list[Any]:
    value = schema[key]
    if type(value) is not list or not value:
        raise SchemaUnsupported(f"{key} must be a non-empty list of schemas")
    return value


class _Validator:
    """One validation run: the root (for ``$ref``) and the remaining budget."""

    __slots__ = ("max_depth", "root", "steps_left")

    def __init__(self, root: Any, max_steps: int, max_depth: int) -> None:
        self.root = root
        self.steps_left = max_steps
        self.max_depth = max_depth

    def check(self, instance: Any) -> None:
        error = self._errors(instance, self.root, "", 0)
        if error is not None:
            raise error

    # Every subschema evaluation goes through here: it charges the budget and the depth.
    def _errors(self, value: Any, schema: Any, path: str, depth: int) -> SchemaViolation | None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise SchemaUnsupported("schema evaluation exceeded its step budget")
        if depth > self.max_depth:
            raise SchemaUnsupported("schema evaluation nested too deeply")
        if schema is True:
            return None
        if schema is False:
            return SchemaViolation(path, "no value is allowed here")
        if type(schema) is not dict:
            raise SchemaUnsupported(f"a schema must be an object or a boolean, not {_kind(schema)}")
        depth += 1
        return (
            self._ref(value, schema, path, depth)
            or self._generic(value, schema, path)
            or self._combinators(value, schema, path, depth)
            or self._by_kind(value, schema, path, depth)
        )

    def _ref(
        self, value: Any, schema: dict[str, Any], path: str, depth: int
    ) -> SchemaViolation | None:
        ref = schema.get("$ref")
        if ref is None:
            return None
        if type(ref) is not str:
            raise SchemaUnsupported("$ref must be a string")
        return self._errors(value, self._resolve(ref), path, depth)

    def _resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        if not ref.startswith("#/"):
            raise SchemaUnsupported(f"cannot resolve $ref {ref!r} (only local refs)")
        node: Any = self.root
        for raw in ref[2:].split("/"):
            part = raw.replace("%25", "%").replace("~1", "/").replace("~0", "~")
            if type(node) is dict and part in node:
                node = node[part]
            elif type(node) is list and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaUnsupported(f"cannot resolve $ref {ref!r}")
        return node

    def _generic(self, value: Any, schema: dict[str, Any], path: str) -> SchemaViolation | None:
        expected = schema.get("type")
        if expected is not None:
            names = [expected] if type(expected) is str else expected
            if type(names) is not list or not all(type(n) is str for n in names):
                raise SchemaUnsupported("type must be a string or a list of strings")
            if not any(_has_type(value, name) for name in names):
                wanted = " or ".join(names)
                return SchemaViolation(path, f"expected {wanted}, got {_kind(value)}")
        if "enum" in schema:
            options = schema["enum"]
            if type(options) is not list:
                raise SchemaUnsupported("enum must be a list")
            self.steps_left -= len(options)
            if not any(json_equal(value, option) for option in options):
                return SchemaViolation(path, "value is not one of the allowed values")
        if "const" in schema and not json_equal(value, schema["const"]):
            return SchemaViolation(path, "value is not the required constant")
        return None

    def _combinators(
        self, value: Any, schema: dict[str, Any], path: str, depth: int
    ) -> SchemaViolation | None:
        if "allOf" in schema:
            for sub in _schemas(schema, "allOf"):
                error = self._errors(value, sub, path, depth)
                if error is not None:
                    return error
        if "anyOf" in schema:
            subs = _schemas(schema, "anyOf")
            if all(self._errors(value, sub, path, depth) is not None for sub in subs):
                return SchemaViolation(path, "value matches none of the anyOf schemas")
        if "oneOf" in schema:
            subs = _schemas(schema, "oneOf")
            matches = sum(1 for sub in subs if self._errors(value, sub, path, depth) is None)
            if matches != 1:
                return SchemaViolation(
                    path, f"value matches {matches} of the oneOf schemas (exactly 1 required)"
                )
        if "not" in schema and self._errors(value, schema["not"], path, depth) is None:
            return SchemaViolation(path, "value matches the schema under 'not'")
        if "if" in schema:
            branch = "then" if self._errors(value, schema["if"], path, depth) is None else "else"
            if branch in schema:
                return self._errors(value, schema[branch], path, depth)
        return None

    def _by_kind(
        self, value: Any, schema: dict[str, Any], path: str, depth: int
    ) -> SchemaViolation | None:
        if type(value) is dict:
            return self._object(value, schema, path, depth)
        if type(value) is list:
            return self._array(value, schema, path, depth)
        if type(value) is str:
            return self._string(value, schema, path)
        if _is_number(value):
            return self._numeric(value, schema, path)
        return None

    def _object(
        self, value: dict[str, Any], schema: dict[str, Any], path: str, depth: int
    ) -> SchemaViolation | None:
        required = schema.get("required", ())
        if type(required) not in (list, tuple):
            raise SchemaUnsupported("required must be a list")
        for name in required:
            if name not in value:
                return SchemaViolation(_join(path, str(name)), "required property missing")
        least, most = _count(schema, "minProperties"), _count(schema, "maxProperties")
        if least is not None and len(value) < least:
            return SchemaViolation(path, f"fewer than {least} properties")
        if most is not None and len(value) > most:
            return SchemaViolation(path, f"more than {most} properties")
        properties = schema.get("properties", {})
        if type(properties) is not dict:
            raise SchemaUnsupported("properties must be an object")
        extra = schema.get("additionalProperties", True)
        if "patternProperties" in schema:
            extra = True  # which names the patterns cover is unknown to us; accept
        for name, item in value.items():
            if name in properties:
                sub = properties[name]
            elif extra is True:
                continue
            elif extra is False:
                return SchemaViolation(_join(path, name), "additional property not allowed")
            else:
                sub = extra
            error = self._errors(item, sub, _join(path, name), depth)
            if error is not None:
                return error
        return None

    def _array(
        self, value: list[Any], schema: dict[str, Any], path: str, depth: int
    ) -> SchemaViolation | None:
        least, most = _count(schema, "minItems"), _count(schema, "maxItems")
        if least is not None and len(value) < least:
            return SchemaViolation(path, f"fewer than {least} items")
        if most is not None and len(value) > most:
            return SchemaViolation(path, f"more than {most} items")
        prefix: Any = schema.get("prefixItems", [])
        rest: Any = schema.get("items", True)
        if type(rest) is list:  # the pre-2020 tuple form of items
            prefix, rest = rest, schema.get("additionalItems", True)
        if type(prefix) is not list:
            raise SchemaUnsupported("prefixItems must be a list of schemas")
        for index, item in enumerate(value):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is True:
                continue
            error = self._errors(item, sub, _join(path, index), depth)
            if error is not None:
                return error
        if schema.get("uniqueItems") is True:
            # Quadratic, so charge the budget for it before doing the work.
            self.steps_left -= len(value) * len(value) // 2
            if self.steps_left < 0:
                raise SchemaUnsupported("schema evaluation exceeded its step budget")
            for i, item in enumerate(value):
                for j in range(i):
                    if json_equal(item, value[j]):
                        return SchemaViolation(_join(path, i), f"duplicate of item {j}")
        return None

    def _string(self, value: str, schema: dict[str, Any], path: str) -> SchemaViolation | None:
        least, most = _count(schema, "minLength"), _count(schema, "maxLength")
        if least is not None and len(value) < least:
            return SchemaViolation(path, f"shorter than {least} characters")
        if most is not None and len(value) > most:
            return SchemaViolation(path, f"longer than {most} characters")
        return None

    def _numeric(self, value: float, schema: dict[str, Any], path: str) -> SchemaViolation | None:
        low, high = _number(schema, "minimum"), _number(schema, "maximum")
        low_x, high_x = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if low is not None:
            if low_x is True and not value > low:  # draft-4 boolean form
                return SchemaViolation(path, f"must be greater than {low:g}")
            if value < low:
                return SchemaViolation(path, f"must be at least {low:g}")
        if high is not None:
            if high_x is True and not value < high:
                return SchemaViolation(path, f"must be less than {high:g}")
            if value > high:
                return SchemaViolation(path, f"must be at most {high:g}")
        low_x, high_x = _number(schema, "exclusiveMinimum"), _number(schema, "exclusiveMaximum")
        if low_x is not None and not value > low_x:
            return SchemaViolation(path, f"must be greater than {low_x:g}")
        if high_x is not None and not value < high_x:
            return SchemaViolation(path, f"must be less than {high_x:g}")
        return None
