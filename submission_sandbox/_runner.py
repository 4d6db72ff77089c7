"""The in-sandbox runner: loads a bundle by its runtime and speaks the container contract.

Copied into every per-submission image as /opt/evalboard/runner.py (and run as a plain
subprocess by the ``local`` sandbox). Standard library only, plus what the runtime needs
(numpy, onnxruntime, tokenizers; torch and transformers for ``transformers``): it must
not import evalboard, which is not in the image.

Environment:
    EVALBOARD_BUNDLE   the unpacked bundle (default: the working directory)
    EVALBOARD_CHANNEL  ``unix:/run/evalboard/model.sock`` (connect there) or ``stdio``

The contract (docs/contract.md), JSON lines both ways:
    model -> host   {"type": "hello", "name", "runtime", "batch_size", "metadata"}
    host -> model   {"id": 1, "inputs": [{"uid": ..., <input fields>}, ...]}
    model -> host   {"id": 1, "outputs": [{...}, ...]}   (one per input, same order)
                    or {"id": 1, "error": "message"} and exit
    host -> model   {"type": "shutdown"}                  then exit 0
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, BinaryIO

CONTRACT_VERSION = 1


def _manifest(bundle: Path) -> dict[str, Any]:
    # The host validated the manifest; a tiny reader avoids needing PyYAML in the image.
    text = (bundle / "evalboard.yaml").read_text(encoding="utf-8")
    try:
        import yaml

        data = yaml.safe_load(text)
        if isinstance(data, dict):
            return data
    except ImportError:
        pass
    data = {}
    key = None
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "-")) and key == "labels":
            data.setdefault("labels", []).append(line.strip().lstrip("-").strip().strip("'\""))
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if value.startswith("[") and value.endswith("]"):
            data[key] = [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
        elif value:
            data[key] = value.strip("'\"")
    return data


def _softmax(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = sum(exps)
    return [v / total for v in exps]


def _as_probs(row: list[float]) -> list[float]:
    if all(0.0 <= v <= 1.0 for v in row) and abs(sum(row) - 1.0) < 1e-3:
        return row
    return _softmax(row)


def _texts(batch: list[dict[str, Any]]) -> list[list[str]]:
    return [[str(v) for k, v in example.items() if k != "uid"] for example in batch]


class OnnxModel:
    """An .onnx classifier; text via tokenizer.json next to it, or a string input."""

    def __init__(self, bundle: Path, manifest: dict[str, Any]) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        threads = int(os.environ.get("EVALBOARD_THREADS", "0") or 0)
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle worker threads spin by default; under a CPU quota the spinning is billed
        # and the sandbox gets throttled (measured: batch-32 throughput 0.57 of in-process).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(bundle / manifest["model"]), options, providers=["CPUExecutionProvider"]
        )
        self.labels = list(manifest["labels"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer = None
        tokenizer_file = (bundle / manifest["model"]).parent / "tokenizer.json"
        if not tokenizer_file.is_file():
            tokenizer_file = bundle / "tokenizer.json"
        if tokenizer_file.is_file():
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
            self.tokenizer.enable_padding()
            self.tokenizer.enable_truncation(int(manifest.get("max_length", 256) or 256))

    def _feed(self, batch: list[dict[str, Any]]) -> dict[str, Any]:
        import numpy as np

        texts = _texts(batch)
        if self.tokenizer is None:
            joined = np.array([[" ".join(parts)] for parts in texts], dtype=object)
            return {self.inputs[0]: joined}
        pairs = [tuple(parts[:2]) if len(parts) > 1 else parts[0] for parts in texts]
        encodings = self.tokenizer.encode_batch(pairs)
        arrays = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        return {name: arrays[name] for name in self.inputs}

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        result = self.session.run(None, self._feed(batch))
        scores = None
        for output in result:
            if isinstance(output, list) and output and isinstance(output[0], dict):
                scores = [
                    [float(row.get(label, row.get(i, 0.0))) for i, label in enumerate(self.labels)]
                    for row in output
                ]
                break
            if getattr(output, "ndim", 0) == 2 and output.shape[1] == len(self.labels):
                scores = output.tolist()
                break
        if scores is None:
            raise ValueError(
                f"no output of the ONNX model has shape [batch, {len(self.labels)}] "
                f"(one score per label {self.labels})"
            )
        outputs = []
        for row in scores:
            probs = _as_probs([float(v) for v in row])
            best = max(range(len(probs)), key=probs.__getitem__)
            probs_by_label = dict(zip(self.labels, probs, strict=True))
            outputs.append({"label": self.labels[best], "probs": probs_by_label})
        return outputs


class TransformersModel:
    """A saved transformers classifier or extractive QA model."""

    def __init__(self, bundle: Path, manifest: dict[str, Any]) -> None:
        import torch
        from transformers import AutoConfig, pipeline

        threads = int(os.environ.get("EVALBOARD_THREADS", "0") or 0)
        if threads:
            torch.set_num_threads(threads)
        path = str(bundle / manifest["model"])
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        archs = " ".join(config.architectures or [])
        self.qa = "QuestionAnswering" in archs
        device = 0 if os.environ.get("NVIDIA_VISIBLE_DEVICES") and torch.cuda.is_available() else -1
        task = "question-answering" if self.qa else "text-classification"
        self.pipe = pipeline(task, model=path, tokenizer=path, device=device)

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.qa:
            outputs = []
            for example in batch:
                question = " ".join(
                    str(v) for k, v in example.items() if k not in ("uid", "context")
                )
                answer = self.pipe(question=question, context=str(example["context"]))
                outputs.append({"answer": answer["answer"], "conf": float(answer["score"])})
            return outputs
        texts = _texts(batch)
        inputs: list[Any] = [
            {"text": p[0], "text_pair": p[1]} if len(p) > 1 else p[0] for p in texts
        ]
        results = self.pipe(inputs, top_k=None, batch_size=len(batch))
        outputs = []
        for scores in results:
            probs = {item["label"]: float(item["score"]) for item in scores}
            outputs.append({"label": max(probs, key=probs.__getitem__), "probs": probs})
        return outputs


def load_model(bundle: Path, manifest: dict[str, Any]) -> Any:
    runtime = manifest.get("runtime")
    if runtime == "python":
        sys.path.insert(0, str(bundle))
        module_name, _, class_name = str(manifest["entry"]).partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        return cls(str(bundle))
    if runtime == "onnx":
        return OnnxModel(bundle, manifest)
    if runtime == "transformers":
        return TransformersModel(bundle, manifest)
    raise ValueError(f"the runner cannot load runtime {runtime!r}")


def _open_channel() -> tuple[BinaryIO, BinaryIO, socket.socket | None]:
    channel = os.environ.get("EVALBOARD_CHANNEL", "stdio")
    if channel.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(channel[len("unix:") :])
        return sock.makefile("rb"), sock.makefile("wb"), sock
    # stdio: keep the real stdout for the contract and send the model's prints to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return sys.stdin.buffer, out, None


try:  # orjson is in the runtime images: JSON is most of the channel's cost per batch.
    import orjson as _orjson
except ImportError:  # the standard library serves wherever orjson is absent
    _orjson = None  # type: ignore[assignment]


def _encode(message: dict[str, Any]) -> bytes:
    if _orjson is not None:
        data: bytes = _orjson.dumps(message)
        # orjson writes NaN and infinities as null; the standard library refuses them by
        # name, so any null takes that path (models rarely answer null).
        if b"null" not in data:
            return data + b"\n"
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def _decode(line: bytes) -> Any:
    return _orjson.loads(line) if _orjson is not None else json.loads(line)


def _send(out: BinaryIO, message: dict[str, Any]) -> None:
    out.write(_encode(message))
    out.flush()


def _error(request_id: Any) -> bytes:
    traceback.print_exc()
    return _encode({"id": request_id, "error": traceback.format_exc(limit=-8)})


def serve(model: Any, reader: BinaryIO, writer: BinaryIO) -> int:
    """Answer requests in order, one at a time, in this thread: 0 at a shutdown or EOF, 1
    once an answer failed (reported as the request's error)."""
    for line in reader:
        message = _decode(line)
        if message.get("type") == "shutdown":
            return 0
        request_id = message.get("id")
        try:
            data = _encode({"id": request_id, "outputs": list(model.predict(message["inputs"]))})
        except BaseException:  # noqa: BLE001 - the model's failure, reported as its error
            data = _error(request_id)
            writer.write(data)
            writer.flush()
            return 1
        writer.write(data)
        writer.flush()
    return 0


def main() -> int:
    started = time.monotonic()
    bundle = Path(os.environ.get("EVALBOARD_BUNDLE", ".")).resolve()
    reader, writer, _sock = _open_channel()
    manifest = _manifest(bundle)
    try:
        model = load_model(bundle, manifest)
    except BaseException:
        traceback.print_exc()
        _send(
            writer,
            {
                "type": "error",
                "error": "the model failed to load:\n" + traceback.format_exc(limit=-8),
            },
        )
        return 1
    _send(
        writer,
        {
            "type": "hello",
            "name": str(manifest.get("name", "")),
            "runtime": str(manifest.get("runtime", "")),
            "batch_size": int(manifest.get("batch_size", 32) or 32),
            "metadata": {
                "contract": CONTRACT_VERSION,
                "python": platform.python_version(),
                "load_s": round(time.monotonic() - started, 4),
            },
        },
    )
    return serve(model, reader, writer)


def _exit(code: int) -> None:
    """Leave at once, streams flushed: the answers are written (``serve`` flushed each),
    and interpreter teardown (a model's thread pools, say) must neither hold the exit
    up nor crash it. A model's ``atexit`` hooks do not run (the sandbox is removed
    right after; nothing they wrote would be kept)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    try:
        _code = main()
    except SystemExit as exc:
        _code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
        _code = 1
    _exit(_code)
