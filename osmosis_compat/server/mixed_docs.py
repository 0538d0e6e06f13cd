"""``/docs`` and ``/openapi.json`` of the mixed server: one OpenAPI document for every agent it hosts.

Each (agent, protocol) app of a :class:`~.mixed_app.MixedRolloutApp` is a FastAPI app with its own schema; the
mixed app is a plain ASGI router, so it had no ``/docs`` (a multi-agent server answered 404 there). The merged
document lists each app's paths under ``/agents/<name>`` (tagged with the agent's name) and, for the default
agent, at the root paths too. Schemas of the same name and content are shared; a name two apps define
differently is prefixed with the agent and protocol (``calc_legacy_RolloutRequest``), references included.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["merged_openapi", "serve_docs"]

_REF = "#/components/schemas/"


def merged_openapi(app: Any, *, title: str = "Osmosis RolloutServer (osmosis-compat, mixed)") -> dict[str, Any]:
    """The OpenAPI document of every agent app of ``app`` (a ``MixedRolloutApp``)."""
    from osmosis_compat import __version__

    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for name, by_protocol in app.apps.items():
        for protocol, sub_app in by_protocol.items():
            openapi = getattr(sub_app, "openapi", None)
            if openapi is None:
                continue
            document = json.loads(json.dumps(openapi()))  # a private copy: FastAPI caches its schema
            renames = _merge_schemas(schemas, document.get("components", {}).get("schemas", {}), f"{name}_{protocol}_")
            document = _rename_refs(document, renames)
            prefixes = [f"/agents/{name}"] + ([""] if name == app.default else [])
            for path, operations in document.get("paths", {}).items():
                for prefix in prefixes:
                    tagged = {}
                    for method, operation in operations.items():
                        operation = dict(operation)
                        operation["tags"] = [name if prefix else f"{name} (default agent, root paths)"]
                        operation["operationId"] = f"{(prefix or '/root').strip('/').replace('/', '_')}_" \
                                                   f"{protocol}_{operation.get('operationId', method)}"
                        tagged[method] = operation
                    paths.setdefault(prefix + path, {}).update(tagged)
    paths["/health"] = {"get": {"summary": "Every agent: protocols, endpoints and health", "tags": ["server"],
                                "operationId": "mixed_health",
                                "responses": {"200": {"description": "Successful Response"}}}}
    description = "Agents: " + ", ".join(
        f"{name} ({agent.kind}; {', '.join(app.endpoints(name).values())})" for name, agent in app.agents.items())
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": title, "version": __version__, "description": description},
        "paths": dict(sorted(paths.items())),
    }
    if schemas:
        document["components"] = {"schemas": schemas}
    return document


def _merge_schemas(merged: dict[str, Any], incoming: dict[str, Any], prefix: str) -> dict[str, str]:
    """Add ``incoming`` to ``merged``; return ``{old name: new name}`` for names that clashed with other content."""
    renames: dict[str, str] = {}
    for schema_name in incoming:
        if schema_name in merged and merged[schema_name] != incoming[schema_name]:
            renames[schema_name] = prefix + schema_name
    for schema_name, schema in incoming.items():
        merged.setdefault(renames.get(schema_name, schema_name), _rename_refs(schema, renames))
    return renames


def _rename_refs(value: Any, renames: dict[str, str]) -> Any:
    if not renames:
        return value
    if isinstance(value, dict):
        return {k: (_REF + renames.get(v[len(_REF):], v[len(_REF):]) if k == "$ref" and isinstance(v, str)
                    and v.startswith(_REF) else _rename_refs(v, renames)) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_refs(v, renames) for v in value]
    return value


async def serve_docs(app: Any, path: str, scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer ``GET /openapi.json`` (the merged document) or ``GET /docs`` (Swagger UI over it)."""
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import JSONResponse

    if path == "/openapi.json":
        response: Any = JSONResponse(merged_openapi(app))
    else:
        root = scope.get("root_path", "")
        response = get_swagger_ui_html(openapi_url=f"{root}/openapi.json",
                                       title="Osmosis RolloutServer (osmosis-compat, mixed) - Swagger UI")
    await response(scope, receive, send)
