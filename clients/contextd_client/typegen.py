"""Writes types.py, the client's TypedDicts of contextd's results and notification bodies,
from the daemon's models (contextd.results.json_schema()): the client's types are generated,
never kept by hand. tests/client/test_client_types.py regenerates them and fails on any
difference. Regenerate: python -m contextd_client.typegen > clients/contextd_client/types.py
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Iterator
from typing import Any

from contextd.results import json_schema

HEADER = '''"""The shapes of contextd's results and notifications, as the daemon sends them (camelCase).

Generated from the daemon's models (contextd.results) by contextd_client.typegen: do not
edit. These are TypedDicts: the values are the plain dicts from the wire, and nothing is
renamed on the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

if TYPE_CHECKING:  # for the type checker only: importing pydantic took most of a command's start
    from pydantic import JsonValue

Message = dict[str, "JsonValue"]
"""A neutral message (`role` user | assistant | toolResult), see protocol.md; the daemon
validates it."""
'''

SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


def python_type(schema: dict[str, Any]) -> str:
    """The annotation a value of `schema` has."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    if "anyOf" in schema:
        return " | ".join(python_type(branch) for branch in schema["anyOf"])
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return f"Literal[{', '.join(json.dumps(value) for value in values)}]"
    kind = schema.get("type")
    if kind in SCALARS:
        return SCALARS[kind]
    if kind == "array":
        return f"list[{python_type(schema.get('items', {}))}]"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"dict[str, {python_type(schema['additionalProperties'])}]"
    return "dict[str, JsonValue]" if kind == "object" else "JsonValue"


def referenced(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        if "$ref" in schema:
            yield schema["$ref"].rsplit("/", 1)[1]
        for value in schema.values():
            yield from referenced(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from referenced(value)


def reachable(definitions: dict[str, Any], roots: list[str]) -> list[str]:
    """The definitions `roots` use, themselves included, in the schema's order."""
    found: set[str] = set()
    waiting = list(roots)
    while waiting:
        name = waiting.pop()
        if name not in found:
            found.add(name)
            waiting.extend(referenced(definitions[name]))
    return [name for name in definitions if name in found]


def docstring(text: str, indent: str) -> list[str]:
    lines = text.strip().splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *(f"{indent}{line}" if line else "" for line in lines[1:]), f'{indent}"""']


def wrapped(opening: str, items: list[str], closing: str) -> str:
    """`opening` items `closing` on one line, or an item a line when that would be too long."""
    line = f"{opening}{', '.join(items)}{closing}"
    if len(line) <= 100:
        return line
    return "\n".join([opening, *(f"    {item}," for item in items), closing])


def field_annotation(field: str, schema: dict[str, Any], required: set[str]) -> str:
    annotation = python_type(schema)
    return annotation if field in required else f"NotRequired[{annotation}]"


def typed_dict(name: str, schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    if any(keyword.iskeyword(field) for field in properties):  # `from`: only the call form takes it
        fields = [f'"{field}": {field_annotation(field, value, required)}' for field, value in properties.items()]
        return [wrapped(f'{name} = TypedDict("{name}", {{', fields, "})")]
    lines = [f"class {name}(TypedDict):"]
    if "description" in schema:
        lines += [*docstring(schema["description"], "    "), ""]
    for field, value in properties.items():
        lines.append(f"    {field}: {field_annotation(field, value, required)}")
        if "description" in value:
            lines += docstring(value["description"], "    ")
    if not schema.get("properties"):
        lines.append("    pass")
    return lines


def constant_name(method: str) -> str:
    """`contextd/workspace/activity` -> WORKSPACE_ACTIVITY, `contextd/tokenUsage` -> TOKEN_USAGE."""
    words = method.removeprefix("contextd/").replace("/", "_")
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", words).upper()


def types_module(schema: dict[str, Any]) -> str:
    """types.py for `schema` (contextd.results.json_schema()): every named literal, the
    TypedDict of every object a result or notification body holds, the notifications' names."""
    definitions = schema["$defs"]
    roots = [
        name
        for part in ("results", "notifications")
        for name in referenced(schema["properties"][part]["properties"])
    ]
    aliases = [name for name, value in definitions.items() if "enum" in value]
    shapes = [name for name in reachable(definitions, roots) if definitions[name].get("type") == "object"]
    parts = [HEADER]
    parts += [wrapped(f"{name} = Literal[", [json.dumps(v) for v in definitions[name]["enum"]], "]") for name in aliases]
    parts += ["\n".join(typed_dict(name, definitions[name])) for name in shapes]
    notifications = list(schema["properties"]["notifications"]["properties"])
    parts.append("\n".join(f'{constant_name(method)} = "{method}"' for method in notifications))
    parts.append(wrapped("NOTIFICATIONS = (", [constant_name(method) for method in notifications], ")"))
    return "\n\n\n".join(part.strip("\n") for part in parts) + "\n"


if __name__ == "__main__":
    print(types_module(json_schema()), end="")
