"""The lexicon model: VADER's rule-based scores, mapped to three classes (python runtime).

VADER (Hutto and Gilbert, 2014; MIT licence) scores a text from a hand-built lexicon with
rules for negation, intensifiers and "but". It needs no training, starts fast and is
cheap; it misses sarcasm and most domain words. Sandboxes have no network and the runtime
images carry no vaderSentiment, so the bundle copies the package (code and lexicons) in.
"""

from __future__ import annotations

import shutil
from importlib import util
from pathlib import Path

from evalboard.core.errors import PlatformError

__all__ = ["HANDLER", "build_lexicon_bundle"]

# The bundle's entry point; standard library only besides the copied vaderSentiment.
HANDLER = '''\
"""VADER lexicon sentiment, three-way (an Evalboard demo model)."""

import math

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

LABELS = ("negative", "neutral", "positive")
# VADER's own convention: compound >= 0.05 is positive, <= -0.05 negative, else neutral.
# Logits k*[-c, 0.1 - |c|, c] put the argmax on exactly those thresholds.
SHARPNESS = 5.0


def compound_to_probs(compound):
    logits = [-SHARPNESS * compound, SHARPNESS * (0.1 - abs(compound)), SHARPNESS * compound]
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [v / total for v in exps]


class Model:
    def __init__(self, model_dir):
        self.analyzer = SentimentIntensityAnalyzer()

    def predict(self, batch):
        outputs = []
        for example in batch:
            text = " ".join(str(v) for k, v in example.items() if k != "uid")
            probs = compound_to_probs(self.analyzer.polarity_scores(text)["compound"])
            best = max(range(3), key=probs.__getitem__)
            outputs.append({"label": LABELS[best], "probs": dict(zip(LABELS, probs))})
        return outputs
'''

_FILES = ("__init__.py", "vaderSentiment.py", "vader_lexicon.txt", "emoji_utf8_lexicon.txt")


def _vader_dir() -> Path:
    spec = util.find_spec("vaderSentiment")
    if spec is None or not spec.submodule_search_locations:
        raise PlatformError(
            "vaderSentiment is not installed; install the demo extra: pip install 'evalboard[demo]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def build_lexicon_bundle(target: Path, *, task_id: str) -> Path:
    """Write the bundle directory ``target`` (handler, manifest, vaderSentiment copy)."""
    target.mkdir(parents=True, exist_ok=True)
    package = target / "vaderSentiment"
    package.mkdir(exist_ok=True)
    source = _vader_dir()
    for name in _FILES:
        shutil.copyfile(source / name, package / name)
    (target / "handler.py").write_text(HANDLER, encoding="utf-8")
    (target / "NOTICE").write_text(
        "vaderSentiment (c) C.J. Hutto, MIT licence; copied unchanged from its PyPI release.\n",
        encoding="utf-8",
    )
    (target / "evalboard.yaml").write_text(
        "name: vader-lexicon\n"
        f"task: {task_id}\n"
        "runtime: python\n"
        "entry: handler:Model\n"
        "batch_size: 32\n"
        "description: >-\n"
        "  VADER's rule-based lexicon (no training), compound score mapped to three classes\n"
        "  at VADER's own +-0.05 thresholds. Fast and small; blind to sarcasm.\n",
        encoding="utf-8",
    )
    return target
