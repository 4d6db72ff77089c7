"""The in-sandbox runner: loads a bundle by its runtime and speaks the container contract.

Copied into every per-submission image as /opt/evalboard/runner.py (and run as a plain
subprocess by the ``local`` sandbox). Standard library only, plus what the runtime needs
(numpy, onnxruntime, tokenizers; torch and transformers for ``transformers``): it must
not import evalboard, which is not in the image.

Environment:
    EVALBOARD_BUNDLE   the unpacked bundle (default: the working directory)
    EVALBOARD_CHANNEL  ``unix:/run/evalboard/model.sock`` (connect there) or ``stdio``
    EVALBOARD_MANIFEST the bundle's manifest as the host validated it, JSON (default:
                       ``evalboard.yaml`` read here)

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

#: The manifest's keys this runner reads: all the host passes (EVALBOARD_MANIFEST), so a
#: model card of 20,000 characters neither reaches the model's environment nor makes it
#: larger than the kernel allows one variable (128 KiB).
MANIFEST_KEYS = ("name", "runtime", "entry", "model", "labels", "prompt", "stop", "batch_size")


def _manifest(bundle: Path) -> dict[str, Any]:
    # The host validated the manifest and passes it as JSON: no YAML parser to load at
    # every start (PyYAML was 21 ms of a 52 ms local start; benchmarks/bench_startup.py).
    given = os.environ.get("EVALBOARD_MANIFEST")
    if given:
        data = json.loads(given)
        if isinstance(data, dict):
            return data
    # Started without it (by hand): read the file. A tiny reader avoids needing PyYAML in
    # the image.
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
        if line.startswith((" ", "-")) and key in ("labels", "stop"):
            data.setdefault(key, []).append(_scalar(line.strip().lstrip("-").strip()))
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if value.startswith(("[", '"')):
            try:  # a flow list or a double-quoted string, escapes and all ("\n")
                data[key] = json.loads(value)
                continue
            except ValueError:
                pass
        if value.startswith("[") and value.endswith("]"):
            data[key] = [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
        elif value:
            data[key] = value.strip("'\"")
    return data


def _scalar(value: str) -> str:
    if value.startswith('"'):
        try:
            return str(json.loads(value))
        except ValueError:
            pass
    return value.strip("'\"")


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


#: The task's settings where the platform gave none (GenerationSettings' defaults).
DEFAULT_GENERATION = {"max_new_tokens": 64, "greedy": True, "seed": None}


def generation_settings() -> dict[str, Any]:
    """The task's generation settings, from ``EVALBOARD_GENERATION`` (JSON)."""
    given = json.loads(os.environ.get("EVALBOARD_GENERATION") or "{}")
    return {**DEFAULT_GENERATION, **given}


class TextGenerator:
    """A saved causal (GPT-2 style) or sequence-to-sequence (T5 style) language model that
    answers a text task with ``generate()``, one call per request.

    The prompt is the manifest's ``prompt`` template filled with the input's fields (by
    default the fields, one a line); causal models pad on the left, so every prompt of a
    batch ends where generation begins, and keep a prompt's end when it is too long.
    Decoding follows the task's settings (``EVALBOARD_GENERATION``): at most
    ``max_new_tokens`` new tokens, greedy, or sampled with the torch generator seeded with
    the task's ``seed`` before each request. The text ends at the first of the manifest's
    ``stop`` strings (not kept) or at the model's end-of-sequence token.
    """

    def __init__(self, path: str, manifest: dict[str, Any], config: Any, device: Any) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        self.settings = generation_settings()
        self.prompt = manifest.get("prompt") or None
        self.stop = [str(s) for s in manifest.get("stop") or [] if s]
        self.device = device
        self.seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        cls = AutoModelForSeq2SeqLM if self.seq2seq else AutoModelForCausalLM
        self.model = cls.from_pretrained(path, local_files_only=True).to(device).eval()
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not self.seq2seq:
            tokenizer.padding_side = "left"
        tokenizer.truncation_side = "left"
        self.tokenizer = tokenizer
        limits = [tokenizer.model_max_length, 4096]
        for name in ("n_positions", "max_position_embeddings"):
            positions = getattr(config, name, None)
            if isinstance(positions, int) and positions > 0:
                limits.append(positions)
                break
        room = min(limits) - (0 if self.seq2seq else int(self.settings["max_new_tokens"]))
        if room < 1:
            raise ValueError(
                f"the model takes {min(limits)} positions, too few for the task's "
                f"max_new_tokens={self.settings['max_new_tokens']} and a prompt"
            )
        self.max_prompt_tokens = room
        self.torch = torch

    def _prompt(self, example: dict[str, Any]) -> str:
        fields = {k: v for k, v in example.items() if k != "uid"}
        if self.prompt is None:
            return "\n".join(str(v) for v in fields.values())
        return str(self.prompt).format_map(fields)

    def _cut(self, text: str) -> str:
        for stop in self.stop:
            text = text.split(stop, 1)[0]
        return text.strip()

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        torch = self.torch
        encoded = self.tokenizer(
            [self._prompt(example) for example in batch],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.max_prompt_tokens,
        )
        inputs = {
            k: v.to(self.device) for k, v in encoded.items() if k in ("input_ids", "attention_mask")
        }
        greedy = bool(self.settings["greedy"])
        options: dict[str, Any] = {
            "max_new_tokens": int(self.settings["max_new_tokens"]),
            "do_sample": not greedy,
            "num_beams": 1,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if self.stop:
            options.update(stop_strings=self.stop, tokenizer=self.tokenizer)
        if not greedy:
            torch.manual_seed(int(self.settings["seed"]))
        with torch.no_grad():
            generated = self.model.generate(**inputs, **options)
        if not self.seq2seq:  # a causal model's output begins with its (padded) prompt
            generated = generated[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(generated, skip_special_tokens=True)
        return [{"text": self._cut(text)} for text in texts]


def _generative(config: Any) -> bool:
    archs = " ".join(config.architectures or [])
    causal = any(part in archs for part in ("ForCausalLM", "LMHeadModel"))
    return causal or "ForConditionalGeneration" in archs or "Seq2SeqLM" in archs


class TransformersModel:
    """A saved transformers classifier, extractive QA model or text generator."""

    # The defaults of the question-answering pipeline that transformers 5.3.0 removed.
    max_answer_tokens = 15
    max_seq_tokens = 384
    doc_stride = 128

    def __init__(self, bundle: Path, manifest: dict[str, Any]) -> None:
        import torch
        from transformers import AutoConfig

        threads = int(os.environ.get("EVALBOARD_THREADS", "0") or 0)
        if threads:
            torch.set_num_threads(threads)
        path = str(bundle / manifest["model"])
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        archs = " ".join(config.architectures or [])
        self.qa = "QuestionAnswering" in archs
        gpu = bool(os.environ.get("NVIDIA_VISIBLE_DEVICES")) and torch.cuda.is_available()
        self.generator: TextGenerator | None = None
        if _generative(config):
            device = torch.device("cuda" if gpu else "cpu")
            self.generator = TextGenerator(path, manifest, config, device)
        elif self.qa:
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer

            self.device = torch.device("cuda" if gpu else "cpu")
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForQuestionAnswering.from_pretrained(path, local_files_only=True)
            self.model = model.to(self.device).eval()
            limits = [self.max_seq_tokens, self.tokenizer.model_max_length]
            positions = getattr(config, "max_position_embeddings", None)
            if isinstance(positions, int) and positions > 0:
                limits.append(positions)
            self.max_length = min(limits)
        else:
            from transformers import pipeline

            self.pipe = pipeline(
                "text-classification", model=path, tokenizer=path, device=0 if gpu else -1
            )

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.generator is not None:
            return self.generator.predict(batch)
        if self.qa:
            outputs = []
            for example in batch:
                question = " ".join(
                    str(v) for k, v in example.items() if k not in ("uid", "context")
                )
                answer, conf = self._answer(question, str(example["context"]))
                outputs.append({"answer": answer, "conf": conf})
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

    def _answer(self, question: str, context: str) -> tuple[str, float]:
        """The best span of ``context``, as the removed question-answering pipeline chose it.

        Long contexts are cut into overlapping windows. In each, the span (start <= end <
        start + 15, context tokens only) with the greatest start + end logit wins; ``conf``
        is softmax(start)[s] * softmax(end)[e], the softmax taken over the window's context
        tokens and its [CLS] (the pipeline's "no answer" mass, so scores match 5.2.0's).
        Like the pipeline's default, a span is always given, never the empty answer.
        """
        import torch

        tokenizer = self.tokenizer
        # Tokenizers that pad on the left (XLNet) take the context first, as the pipeline did.
        question_first = tokenizer.padding_side == "right"
        pair = (question, context) if question_first else (context, question)
        room = (
            self.max_length
            - len(tokenizer(question, add_special_tokens=False)["input_ids"])
            - tokenizer.num_special_tokens_to_add(pair=True)
        )
        encoded = tokenizer(
            *pair,
            truncation="only_second" if question_first else "only_first",
            max_length=self.max_length,
            stride=max(0, min(self.doc_stride, room // 2)),
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding=True,
            return_tensors="pt",
        )
        offsets = encoded.pop("offset_mapping").tolist()
        encoded.pop("overflow_to_sample_mapping", None)
        inputs = {k: v.to(self.device) for k, v in encoded.items()}
        with torch.no_grad():
            result = self.model(**inputs)
        context_id = 1 if question_first else 0
        best: tuple[float, str] | None = None
        for window in range(len(offsets)):
            start, end = result.start_logits[window].float(), result.end_logits[window].float()
            ids = encoded.sequence_ids(window)
            inside = torch.tensor([i == context_id for i in ids], device=start.device)
            if not bool(inside.any()):
                continue
            counted = inside.clone()
            cls_id = tokenizer.cls_token_id
            if cls_id is not None:
                counted |= encoded["input_ids"][window].to(start.device) == cls_id
            start_p = start.masked_fill(~counted, -math.inf).softmax(-1)
            end_p = end.masked_fill(~counted, -math.inf).softmax(-1)
            n = start.shape[0]
            allowed = (
                torch.ones(n, n, dtype=torch.bool, device=start.device)
                .triu()
                .tril(self.max_answer_tokens - 1)
            )
            allowed &= inside[:, None] & inside[None, :]
            sums = (start[:, None] + end[None, :]).masked_fill(~allowed, -math.inf)
            s, e = divmod(int(sums.argmax()), n)
            conf = float(start_p[s] * end_p[e])
            if best is None or conf > best[0]:
                best = (conf, context[offsets[window][s][0] : offsets[window][e][1]])
        if best is None:  # an empty context: nothing to point at
            return "", 0.0
        return best[1], best[0]


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
