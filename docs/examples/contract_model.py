"""A complete model that speaks Evalboard's container contract, with the standard library only.

No evalboard import, no shell: copy it into any image with Python 3 and make it the
entrypoint. It answers every classification request with word-list sentiment.

    ARG BASE_IMAGE=python:3.11-slim
    FROM ${BASE_IMAGE}
    COPY contract_model.py /app/contract_model.py
    ENTRYPOINT ["python3", "/app/contract_model.py"]

(offline: ``docker build --build-arg BASE_IMAGE=evalboard/base:bookworm ...``, the
platform's own base image, as the project's Dockerfiles do).

Then ``docker save IMAGE -o image.tar`` and a bundle with ``runtime: image`` and
``image: image.tar``. See docs/contract.md.
"""

import json
import os
import socket
import sys

POSITIVE = {"good", "great", "love", "excellent", "fun", "wonderful", "best"}
NEGATIVE = {"bad", "awful", "hate", "terrible", "boring", "worst", "poor"}


def classify(text):
    words = set(text.lower().split())
    score = len(words & POSITIVE) - len(words & NEGATIVE)
    if score > 0:
        probs = {"negative": 0.1, "neutral": 0.2, "positive": 0.7}
    elif score < 0:
        probs = {"negative": 0.7, "neutral": 0.2, "positive": 0.1}
    else:
        probs = {"negative": 0.2, "neutral": 0.6, "positive": 0.2}
    return {"label": max(probs, key=probs.get), "probs": probs}


def open_channel():
    """The socket the platform listens on, or stdin/stdout when there is none."""
    path = os.environ.get("EVALBOARD_SOCKET")
    if path:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        return sock.makefile("rb"), sock.makefile("wb")
    return sys.stdin.buffer, sys.stdout.buffer


def main():
    reader, writer = open_channel()

    def send(message):
        writer.write(json.dumps(message).encode() + b"\n")
        writer.flush()

    send(
        {
            "type": "hello",
            "name": "contract-example",
            "runtime": "image",
            "batch_size": 16,
            "metadata": {"language": "python", "contract": 1},
        }
    )
    for line in reader:
        message = json.loads(line)
        if message.get("type") == "shutdown":
            break
        texts = [" ".join(str(v) for k, v in x.items() if k != "uid") for x in message["inputs"]]
        send({"id": message["id"], "outputs": [classify(t) for t in texts]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
