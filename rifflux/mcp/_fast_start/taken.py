"""Which client lines the front hands to ``early`` before the SDK has loaded: the
``search_rifflux`` calls whose arguments the tool's published input schema accepts as
they are, and the ``notifications/cancelled`` that cancel them. Standard library only:
the front decides in its reader thread, before anything else has loaded.

The arguments are checked against the schema the client was given (the snapshot's
``tools/list``), not against a copy of its bounds: exact JSON types (no value the SDK
would convert), enums, bounds, lengths, items, and no argument it does not declare. A
null stands for an argument left out where its default is null, as the SDK reads it.
A schema using a keyword not checked here takes nothing: the SDK answers those calls.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["accepts", "cancelled_id", "early_search"]

#: The keywords ``accepts`` checks; a schema using another is not checked here.
_KNOWN = frozenset({"type", "enum", "minimum", "maximum", "minLength", "maxLength",
                    "minItems", "maxItems", "items", "properties", "required",
                    "additionalProperties", "default", "description", "title"})


def early_search(message: dict[str, Any], schema: dict[str, Any]) -> bool:
    """A ``tools/call`` of ``search_rifflux`` (without ``_meta``: a progress token or an
    envelope is the SDK's) whose arguments ``schema`` accepts as they are."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return False
    if params.get("name") != "search_rifflux" or set(params) - {"name", "arguments"}:
        return False
    args = params.get("arguments", {})
    return isinstance(args, dict) and accepts(schema, args)


def cancelled_id(line: str) -> Any:
    """The request id a ``notifications/cancelled`` line cancels (None: not one)."""
    if "notifications/cancelled" not in line:
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return None
    params = message.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return None if isinstance(request_id, bool) else request_id


def accepts(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is valid under ``schema`` with no conversion."""
    if not isinstance(schema, dict) or not schema.keys() <= _KNOWN:
        return False
    kinds = schema.get("type")
    if kinds is not None:
        if not any(_is(kind, value) for kind in ([kinds] if isinstance(kinds, str) else kinds)):
            return False
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        return False
    if _number(value):
        if "minimum" in schema and value < schema["minimum"]:
            return False
        if "maximum" in schema and value > schema["maximum"]:
            return False
    if isinstance(value, str) and not (schema.get("minLength", 0) <= len(value)
                                       <= schema.get("maxLength", len(value))):
        return False
    if isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        items = schema.get("items")
        if items is not None and not all(accepts(items, v) for v in value):
            return False
    if isinstance(value, dict):
        return _object(schema, value)
    return True


def _object(schema: dict[str, Any], value: dict[str, Any]) -> bool:
    properties: dict[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    if any(name not in value or value[name] is None for name in required):
        return False
    extra = schema.get("additionalProperties", True)
    for name, given in value.items():
        declared = properties.get(name)
        if declared is None:
            if extra is False or (isinstance(extra, dict) and not accepts(extra, given)):
                return False
        elif given is None:  # left out, where leaving it out means null (its default)
            if name in required or "default" in declared:
                return False
        elif not accepts(declared, given):
            return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is(kind: str, value: Any) -> bool:
    match kind:
        case "string":
            return isinstance(value, str)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return _number(value)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
        case "null":
            return value is None
    return False


def _same(value: Any, member: Any) -> bool:
    return type(value) is type(member) and value == member
