"""Validation told as a user fixes it: pydantic errors (field, problem, value given), and
the one rule for text that Evalboard refuses to store."""

from __future__ import annotations

import re

from pydantic import ValidationError

__all__ = ["bad_text", "describe_validation_error"]

# A NUL (PostgreSQL's text cannot store one) or a lone UTF-16 surrogate (not encodable as
# UTF-8): refused at the HTTP edge and in dataset files alike.
_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def bad_text(value: str) -> bool:
    """Whether ``value`` holds a NUL or a lone surrogate.

    >>> bad_text("caf\\u00e9"), bad_text("x\\x00"), bad_text("\\ud800")
    (False, True, True)
    """
    return _BAD_TEXT.search(value) is not None


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
