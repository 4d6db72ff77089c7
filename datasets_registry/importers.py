"""Read example files (JSON lines, CSV, TSV, SQuAD JSON) into plain rows.

Importers only read and map columns; checking rows against a task is ``examples.py``'s job.
Every error names the line, so a user can find it in their editor.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from evalboard.core.errors import InvalidDataset

__all__ = ["MAX_LINE_BYTES", "Format", "RawRow", "detect_format", "read_rows"]

Format = Literal["jsonl", "csv", "tsv", "squad"]
#: One row (line number, fields) as read from the file, before mapping and checks.
RawRow = tuple[int, dict[str, Any]]

#: Longest line (one example) accepted; real examples are far below this.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: Largest SQuAD JSON document (read whole).
MAX_SQUAD_BYTES = 512 * 1024 * 1024

_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "squad",
}


def detect_format(path: Path) -> Format:
    """The format a file's suffix names; ``.json`` means the official SQuAD layout."""
    try:
        return _SUFFIXES[path.suffix.lower()]
    except KeyError:
        raise InvalidDataset(
            f"Cannot tell the format of {path.name} from its suffix; use one of "
            f"{', '.join(sorted(_SUFFIXES))} or pass --format jsonl|csv|tsv|squad"
        ) from None


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Lines of a UTF-8 text file, refusing binary files and absurdly long lines."""
    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InvalidDataset(
                    f"{path.name}, line {number}: longer than {MAX_LINE_BYTES // 1024**2} MiB; "
                    "one example per line is expected. Is this the right file?"
                )
            if b"\x00" in raw:
                raise InvalidDataset(
                    f"{path.name}, line {number}: contains NUL bytes; this looks like a binary "
                    "file, not JSON lines, CSV or TSV text"
                )
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidDataset(
                    f"{path.name}, line {number}: not UTF-8 text; re-save the file as UTF-8"
                ) from None


def _read_jsonl(path: Path) -> Iterator[RawRow]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidDataset(
                f"{path.name}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}); "
                "each line must be one JSON object"
            ) from None
        if not isinstance(row, dict):
            raise InvalidDataset(
                f"{path.name}, line {number}: a JSON {type(row).__name__}, expected an object "
                'like {"uid": ..., "statement": ..., "label": ...}'
            )
        yield number, row


def _read_delimited(path: Path, delimiter: str) -> Iterator[RawRow]:
    # Our own line reader does the binary and line-length checks; csv parses the fields.
    text = io.StringIO("".join(line for _, line in _text_lines(path)))
    csv.field_size_limit(MAX_LINE_BYTES)  # the default (128 KiB) refuses long QA contexts
    reader = csv.DictReader(text, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL)
    kind = "TSV" if delimiter == "\t" else "CSV"
    try:
        if not reader.fieldnames:
            return
        header = reader.fieldnames
        if len(set(header)) != len(header):
            raise InvalidDataset(f"{path.name}, line 1: repeated column names in {header}")
        for row in reader:
            if None in row:
                raise InvalidDataset(
                    f"{path.name}, line {reader.line_num}: more fields than the header's "
                    f"{len(header)}; check the {kind} quoting"
                )
            yield reader.line_num, dict(row)
    except csv.Error as exc:
        raise InvalidDataset(f"{path.name}, line {reader.line_num}: bad {kind}: {exc}") from None


def _read_squad(path: Path) -> Iterator[RawRow]:
    if path.stat().st_size > MAX_SQUAD_BYTES:
        raise InvalidDataset(f"{path.name}: larger than {MAX_SQUAD_BYTES // 1024**2} MiB")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidDataset(f"{path.name}: not UTF-8 text; re-save the file as UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InvalidDataset(
            f"{path.name}, line {exc.lineno}: not valid JSON ({exc.msg})"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise InvalidDataset(
            f"{path.name}: not the SQuAD layout (an object with a `data` list of articles); "
            "for one example per line use .jsonl"
        )
    number = 0
    for article in document["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context", "")
            for qa in paragraph.get("qas", []):
                number += 1
                answers = [] if qa.get("is_impossible") else qa.get("answers", [])
                yield (
                    number,
                    {
                        "uid": qa.get("id"),
                        "context": context,
                        "question": qa.get("question"),
                        "answers": [
                            {"text": a.get("text"), "answer_start": a.get("answer_start")}
                            for a in answers
                        ],
                    },
                )


def read_rows(path: Path, format: Format | None = None) -> Iterator[RawRow]:
    """Rows of a dataset file with their line numbers (question numbers for SQuAD)."""
    if not path.is_file():
        raise InvalidDataset(f"{path} does not exist or is not a file")
    kind = format or detect_format(path)
    if kind == "jsonl":
        return _read_jsonl(path)
    if kind == "csv":
        return _read_delimited(path, ",")
    if kind == "tsv":
        return _read_delimited(path, "\t")
    return _read_squad(path)
