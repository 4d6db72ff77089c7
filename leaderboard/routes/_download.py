"""Downloads: a body the browser saves as a file rather than shows."""

from __future__ import annotations

from fastapi import Response

__all__ = ["attachment"]


def attachment(body: str | bytes, media_type: str, filename: str) -> Response:
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(body, media_type=media_type, headers=headers)
