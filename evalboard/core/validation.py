"""Pydantic validation errors, told as a user fixes them: field, problem, value given."""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["describe_validation_error"]

_SHOWN = 80


def describe_validation_error(error: ValidationError) -> str:
    """One indented line per problem: ``field.path: what is wrong (got VALUE)``.

    Example:
        >>> from pydantic import BaseModel
        >>> class Spec(BaseModel):
        ...     size: int
        >>> try:
        ...     Spec(size="big")
        ... except ValidationError as exc:
        ...     print(describe_validation_error(exc))
          size: Input should be a valid integer, unable to parse string as an integer (got 'big')
    """
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] in ("literal_error", "enum"):
            message = message.replace("Input should be", "allowed values are")
        if item["type"] == "extra_forbidden":
            message = "unknown field; remove it or check its spelling"
        value = item.get("input")
        shown = "{...}" if isinstance(value, dict) else repr(value)
        if len(shown) > _SHOWN:
            shown = shown[: _SHOWN - 3] + "..."
        lines.append(f"  {where}: {message}" + (f" (got {shown})" if item["loc"] else ""))
    return "\n".join(lines)
