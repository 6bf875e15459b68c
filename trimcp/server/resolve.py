"""Which registration serves a resource URI, and the canonical name it is served under.

Every place that looks a resource up (``resources/read``, ``resources/subscribe``,
``subscriptions/listen``, ``ctx.read_resource``, cache hints) goes through :func:`resolve`,
so lookup and authorization decide on the same name:

- the URI as asked is put in canonical form first (:func:`trimcp.protocol.uris.canonical_uri`;
  a URI with no single reading is ``-32602`` naming it), and the lookup uses that form: a
  static resource by its (canonical) registered URI, else the first enabled template that
  matches;
- a template's values are percent-decoded when matched, so two spellings can reach the same
  values (``files://a%2Fb`` and ``files://a/b`` under ``files://{+path}``). The *served
  name* is the template expanded again with those values, in canonical form; when matching
  that name does not give the same values back, the URI is ``-32602`` too (it has no single
  reading). :func:`check_scopes` asks the caller's scope rules about the URI as asked *and*
  the served name, so no spelling reaches more than the served name allows.

Pure functions over the registries; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import attrs

from trimcp.auth.principal import AuthInfo
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.uris import AmbiguousUri, canonical_uri
from trimcp.server.resources import RegisteredResource, RegisteredTemplate


class Resources(Protocol):
    """Static resources by (canonical) URI: a registry, or a server's providers."""

    def get(self, key: str) -> RegisteredResource | None: ...


@attrs.frozen
class Resolved:
    """``uri``: the URI asked for, canonical; ``name``: the canonical URI of what is served
    (the static resource's URI, or the template expanded with the matched values)."""

    uri: str
    name: str
    resource: RegisteredResource | None = None
    template: RegisteredTemplate | None = None
    arguments: dict[str, Any] = attrs.field(factory=dict)


def ambiguous(uri: str, reason: str) -> McpError:
    return McpError(
        INVALID_PARAMS,
        f"Invalid params: the resource URI {uri[:200]!r} is ambiguous: {reason}",
        {"uri": uri},
    )


def canonical(uri: str) -> str:
    """``uri`` in canonical form, or ``McpError(-32602)`` naming it."""
    try:
        return canonical_uri(uri)
    except AmbiguousUri as exc:
        raise ambiguous(uri, exc.reason) from None


def resolve(
    uri: str,
    resources: Resources,
    templates: Iterable[RegisteredTemplate],
) -> Resolved | None:
    """What serves ``uri`` (None: nothing), or ``McpError(-32602)`` when it is ambiguous."""
    asked = canonical(uri)
    resource = resources.get(asked)
    if resource is not None:
        return Resolved(asked, asked, resource=resource)
    for template in templates:
        arguments = template.match(asked)
        if arguments is not None:
            return Resolved(asked, _served_name(uri, asked, template), None, template, arguments)
    return None


def _served_name(uri: str, asked: str, template: RegisteredTemplate) -> str:
    pattern = template.template
    values = pattern.match(asked)
    if values is None:  # template.match() found it; only a changed registry gets here
        raise ambiguous(uri, f"the template {pattern.template!r} no longer matches it")
    try:
        name = canonical_uri(pattern.expand(values))
    except (AmbiguousUri, ValueError, TypeError) as exc:
        raise ambiguous(
            uri, f"written back by {pattern.template!r} it is not a URI: {exc}"
        ) from None
    # Without a '%' in a value, matching reads back what expansion wrote (uri_template's
    # docstring); with one, a {+x} value's "%XX" would be decoded on the way back.
    if _has_percent(values) and pattern.match(name) != values:
        raise ambiguous(
            uri,
            f"{pattern.template!r} reads it as {values!r}, and those values written back "
            f"({name[:200]!r}) read differently; send the URI without escapes of '%'",
        )
    return name


def _has_percent(values: dict[str, str | list[str]]) -> bool:
    return any(
        "%" in value if isinstance(value, str) else any("%" in v for v in value)
        for value in values.values()
    )


def check_scopes(resolved: Resolved, method: str, auth: AuthInfo | None) -> None:
    """Refuse (``-32602``) a ``method`` request for ``resolved`` when ``auth``'s scope
    rules ask, for the URI as asked or for the served name, a scope it lacks."""
    if auth is None or auth.rules is None:
        return
    rules = auth.rules
    needed = rules(method, resolved.uri) | rules(method, resolved.name)
    if auth.has_scopes(needed):
        return
    missing = " ".join(sorted(needed - auth.scopes))
    served = "" if resolved.name == resolved.uri else f" (served as {resolved.name[:200]!r})"
    raise McpError(
        INVALID_PARAMS,
        f"Invalid params: the resource {resolved.uri[:200]!r}{served} needs scope {missing}; "
        "ask for it by its canonical URI with a token that has it",
        {"uri": resolved.uri, "canonical": resolved.name, "scopes": sorted(needed)},
    )
