"""The error answers every operation can give, and drf-spectacular's hook that adds them to the schema
(capbench/settings/base.py names it)."""

from __future__ import annotations

from rest_framework import serializers

from api.documentation.base import Schema


class Problem(Schema):
    detail = serializers.CharField(help_text="what went wrong, in words")


LOCATED_PROBLEMS = {
    "type": "object",
    "description": (
        "Each problem under the name of the field it is about (`detail`: about the request as a whole): a "
        "message, a list of messages, or for a list field the messages under each position. An uploaded "
        "file's messages name the file, line and field; nothing was stored."
    ),
    "additionalProperties": {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        ]
    },
    "example": {"results": ["results.json: line 3: field `image_id`: no item '999' in dataset demo"]},
}

RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before trying again"}}

ERROR_RESPONSES = {
    "400": ("LocatedProblems", "Invalid input: each problem under its field, nothing stored."),
    "401": ("Problem", "Credentials missing (on a write) or not valid (`Authorization: Token …`)."),
    "403": ("Problem", "Signed in but not allowed (staff only, or a session without its CSRF token)."),
    "404": ("Problem", "No such object, or not one the caller may see (a private one reads the same)."),
    "429": ("RateLimited", "Too many requests: wait the `Retry-After` seconds."),
    "503": ("RateLimited", "The rate limiter cannot be reached: try again after `Retry-After` seconds."),
}


def error_components() -> dict[str, dict]:
    problem = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
    limited = {
        "type": "object",
        "properties": {
            "detail": {"type": "string"},
            "retry_after": {"type": "integer", "description": "seconds to wait (also the Retry-After header)"},
            "retry_at": {"type": "string", "format": "date-time", "description": "a quota: when it is renewed"},
        },
        "required": ["detail"],
    }
    return {"Problem": problem, "RateLimited": limited, "LocatedProblems": LOCATED_PROBLEMS}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular's post-processing hook: every operation may answer 401 (a token that is not
    valid), 429 and 503 (every request is rate-limited, `Retry-After` set); one with a path
    parameter 404; one with a body or query parameters 400; a write 403. An operation's own
    declaration of a status wins."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in error_components().items():
        schemas.setdefault(name, schema)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for code in _error_codes(path, method, operation):
                responses.setdefault(code, _error_answer(code))
    return result


def _error_codes(path: str, method: str, operation: dict) -> list[str]:
    if path.endswith("/schema/"):
        return ["404", "429", "503"]  # (404: an unknown ?format=)
    codes = ["401", "429", "503"]
    if "{" in path:
        codes.append("404")
    if operation.get("requestBody") or any(p.get("in") == "query" for p in operation.get("parameters", [])):
        codes.append("400")
    if method != "get":
        codes.append("403")
    return codes


def _error_answer(code: str) -> dict:
    component, description = ERROR_RESPONSES[code]
    answer: dict = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
    }
    if code in ("429", "503"):
        answer["headers"] = RETRY_AFTER
    return answer
