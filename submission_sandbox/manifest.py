"""The bundle manifest, ``evalboard.yaml``: what a model is and how to run it."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path, PurePosixPath
from string import Formatter
from typing import Annotated, Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from evalboard.core.errors import InvalidBundle
from evalboard.core.validation import describe_validation_error

__all__ = [
    "MANIFEST_NAME",
    "Manifest",
    "ModelCard",
    "Runtime",
    "check_bundle_task",
    "load_manifest",
    "parse_manifest",
    "task_mismatch",
]

MANIFEST_NAME = "evalboard.yaml"

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=64)]


class Runtime(StrEnum):
    """How the in-container runner loads a bundle."""

    PYTHON = "python"  # entry: module:Class with predict(batch) -> outputs
    ONNX = "onnx"  # model: an .onnx file (+ tokenizer.json for text models)
    TRANSFORMERS = "transformers"  # model: a save_pretrained directory
    IMAGE = "image"  # image: a `docker save` tarball that speaks the contract


def _relative_path(value: str, field: str) -> str:
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or not value.strip():
        raise ValueError(f"{field} must be a path inside the bundle, got {value!r}")
    return value


def _web_url(value: str | None, info: Any) -> str | None:
    if value is None:
        return value
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{info.field_name} must be an http(s) URL, got {value!r}")
    return value


def prompt_fields(prompt: str) -> list[str]:
    """The field names a prompt template fills, in order (``ValueError`` if it does not
    parse)."""
    return [name for _, name, _spec, _conv in Formatter().parse(prompt) if name is not None]


def _check_prompt(prompt: str) -> None:
    """A prompt template must format: plain ``{field}`` names, literal braces doubled."""
    try:
        bad = [name for name in prompt_fields(prompt) if not name.isidentifier()]
    except ValueError as exc:
        raise ValueError(
            f"prompt {prompt[:60]!r} does not format ({exc}); double literal braces"
        ) from None
    if bad:
        raise ValueError(
            f"prompt names {bad[0]!r}; name input fields only, as {{question}} "
            "(no attributes, indexes or positions)"
        )


class ModelCard(BaseModel):
    """What a model is, for the people reading the board: the optional metadata of
    ``evalboard.yaml``, which its submitter may edit after upload (Dynabench's model card).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    params: int | None = Field(
        None, ge=1, le=10**13, description="Number of parameters, if known (filters by size)."
    )
    license: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9.+-]*$",
        max_length=64,
        description="The model's license as an SPDX id, e.g. apache-2.0, mit, cc-by-4.0.",
    )
    source_url: str | None = Field(
        None, max_length=500, description="Where the model's code or weights live (http/https)."
    )
    paper_url: str | None = Field(None, max_length=500, description="The paper (http/https).")
    languages: list[Annotated[str, Field(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")]] = Field(
        default_factory=list, max_length=50, description="Language codes, e.g. en, de, pt-BR."
    )
    card: str = Field(
        "", max_length=20000, description="Free text in Markdown, shown on the model's page."
    )
    anonymous: bool = Field(
        False, description="Hide the submitter's name on the public board and API."
    )

    @field_validator("source_url", "paper_url")
    @classmethod
    def _http_url(cls, value: str | None, info: Any) -> str | None:
        return _web_url(value, info)

    @classmethod
    def of(cls, data: dict[str, Any]) -> ModelCard:
        """The card fields of a manifest (or of a stored card), other keys ignored."""
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})


class Manifest(ModelCard):
    """``evalboard.yaml``; see docs/researchers-bundles.md. The model card's fields
    (:class:`ModelCard`) are optional keys of the same mapping."""

    name: Slug = Field(description="The model's name: lowercase letters, digits and dashes.")
    task: Slug = Field(description="The task id the model is for.")
    runtime: Runtime = Field(description="python | onnx | transformers | image.")
    entry: str | None = Field(
        None, description="python runtime: `module:Class` of a file in the bundle."
    )
    model: str | None = Field(
        None, description="onnx: the .onnx file; transformers: the saved model directory."
    )
    image: str | None = Field(
        None, description="image runtime: a `docker save` tarball in the bundle."
    )
    labels: list[str] | None = Field(
        None, description="onnx runtime: the class names, in the order of the model's outputs."
    )
    prompt: str | None = Field(
        None,
        min_length=1,
        max_length=4000,
        description="transformers runtime, text tasks: the prompt built from an input, its "
        "fields named in braces (`{context}\\nQ: {question}\\nA:`); default: the input "
        "fields, one a line.",
    )
    stop: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list,
        max_length=8,
        description="transformers runtime, text tasks: strings that end a generated text "
        "(not kept in it).",
    )
    batch_size: int = Field(32, ge=1, le=4096, description="Examples per request.")
    gpus: int = Field(0, ge=0, le=1, description=">0 asks for a GPU worker (one device).")
    description: str = Field("", max_length=2000, description="Free text for the leaderboard.")
    release_of: StrictInt | None = Field(
        None,
        ge=1,
        le=2**31 - 1,
        description="The submission id of the model this is a new release of (its lineage's "
        "owner only); `evalboard model upload --release-of ID` says the same.",
    )

    @field_validator("entry")
    @classmethod
    def _entry_form(cls, value: str | None) -> str | None:
        if value is None:
            return value
        module, sep, attr = value.partition(":")
        if not sep or not module or not attr:
            raise ValueError(
                f"entry must look like module:Class (e.g. handler:Model), got {value!r}"
            )
        if not all(part.isidentifier() for part in [*module.split("."), attr]):
            raise ValueError(f"entry {value!r} is not a valid module:Class name")
        return value

    @field_validator("model", "image")
    @classmethod
    def _inside_bundle(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else _relative_path(value, info.field_name)

    @property
    def prompt_fields(self) -> list[str]:
        """The input fields the prompt names (none without a prompt)."""
        return prompt_fields(self.prompt) if self.prompt is not None else []

    @model_validator(mode="after")
    def _runtime_fields(self) -> Manifest:
        needed = {
            Runtime.PYTHON: "entry",
            Runtime.ONNX: "model",
            Runtime.TRANSFORMERS: "model",
            Runtime.IMAGE: "image",
        }[self.runtime]
        if getattr(self, needed) is None:
            raise ValueError(f"runtime {self.runtime.value} needs `{needed}`")
        if self.runtime is not Runtime.TRANSFORMERS and (self.prompt or self.stop):
            raise ValueError(
                "`prompt` and `stop` are for the transformers runtime; a python or image "
                "bundle builds its own prompt"
            )
        if self.prompt is not None:
            _check_prompt(self.prompt)
        if self.runtime is Runtime.ONNX and not self.labels:
            raise ValueError("runtime onnx needs `labels`: the class names in output order")
        return self


def parse_manifest(data: Any, *, source: str = MANIFEST_NAME) -> Manifest:
    """Validate a parsed manifest; errors name the field, the value and the allowed values."""
    if not isinstance(data, dict):
        raise InvalidBundle(
            f"{source} must be a YAML mapping with name, task, runtime...; "
            f"got {type(data).__name__}"
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise InvalidBundle(
            f"{source} is not a valid manifest:\n{describe_validation_error(exc)}"
        ) from None


def task_mismatch(manifest: Manifest, task_id: str) -> str | None:
    """Why a bundle with this manifest is not for task ``task_id``; None where it is (its
    ``task:`` names it). The one wording of that rule, for errors and warnings alike."""
    if manifest.task == task_id:
        return None
    return (
        f"The bundle is a model of task {manifest.task!r} (`task:` in its {MANIFEST_NAME}), "
        f"not of task {task_id!r}: a model is made for one task's inputs and outputs; use it "
        f"with task {manifest.task!r}, or fix `task:` if it was made for {task_id!r}"
    )


def check_bundle_task(manifest: Manifest, task_id: str) -> None:
    """Check that a bundle is for task ``task_id`` before it is used there.

    Raises:
        InvalidBundle: its manifest names another task (:func:`task_mismatch` says how).
    """
    if (mismatch := task_mismatch(manifest, task_id)) is not None:
        raise InvalidBundle(mismatch)


def load_manifest(bundle_dir: Path) -> Manifest:
    """Read ``evalboard.yaml`` from an unpacked bundle."""
    path = bundle_dir / MANIFEST_NAME
    if not path.is_file():
        raise InvalidBundle(
            f"{bundle_dir} has no {MANIFEST_NAME}; create one (see "
            "`evalboard model init --task T DIR`)"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidBundle(f"{path} is not valid YAML: {exc}") from None
    return parse_manifest(data, source=str(path))
