"""The tools' input schemas as ``tools/list`` publishes them: as strict as pydantic makes
them (types, enums, bounds, no other properties), in fewer characters.

An agent reads the tool list in every session. pydantic titles every property
(``"title": "Top K"``), gives every optional one ``"default": null`` and writes
``X | None`` as ``{"anyOf": [{"type": "X"}, {"type": "null"}]}``. Here a title
goes, a null default goes (leaving the argument out means the same), and an
``anyOf`` of plain types becomes one schema with a list of types
(``{"type": ["string", "null"]}``), which JSON Schema reads alike; an argument
that defaults to null is just not required. The SDK checks arguments against the
pydantic model, not this text, so nothing accepted changes.
"""

from __future__ import annotations

from typing import Any

#: The keywords that apply to one JSON type only: a union of plain types keeps each.
_OWN = {
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"additionalProperties"}),
    "string": frozenset({"minLength", "maxLength"}),
    "integer": frozenset({"minimum", "maximum"}),
    "number": frozenset({"minimum", "maximum"}),
    "boolean": frozenset(),
    "null": frozenset(),
}


def tighten(schema: dict[str, Any]) -> None:
    """``schema`` (a tool's input schema), in place, in fewer characters. An argument
    whose default is null is published as optional (not required), not as nullable:
    what JSON Schema and most MCP servers mean by an argument that may be left out (the
    model still takes an explicit null as "left out")."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        optional = "default" in prop and prop["default"] is None
        _tighten(prop)
        kinds = prop.get("type")
        if optional and isinstance(kinds, list) and "null" in kinds:
            kinds.remove("null")
            prop["type"] = kinds[0] if len(kinds) == 1 else kinds


def _tighten(node: dict[str, Any]) -> None:
    node.pop("title", None)
    if "default" in node and node["default"] is None:
        del node["default"]
    for member in node.get("anyOf", ()):
        _tighten(member)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _tighten(node[key])
    merged = _one_of_types(node.get("anyOf", ()))
    if merged is not None:
        del node["anyOf"]
        node.update(merged)


def _one_of_types(members: list[dict[str, Any]]) -> dict[str, Any] | None:
    """An ``anyOf`` of plain types (each with only its own keywords, none shared, no two
    numeric types bounded) as one schema; None when it is not one."""
    if not members:
        return None
    types: list[str] = []
    merged: dict[str, Any] = {}
    for member in members:
        kind = member.get("type")
        if not isinstance(kind, str) or kind not in _OWN:
            return None
        rest = {k: v for k, v in member.items() if k != "type"}
        if not rest.keys() <= _OWN[kind] or rest.keys() & merged.keys():
            return None
        types.append(kind)
        merged.update(rest)
    if {"integer", "number"} <= set(types) and merged.keys() & _OWN["number"]:
        return None  # (a bound of one would bind the other)
    return {"type": types, **merged}
