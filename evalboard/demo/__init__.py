"""``evalboard demo``: the embedded default end to end, on the project's own data.

Creates a three-way sentiment task with datasets written for the project, builds three
models with different trade-offs (a lexicon, a bag-of-words linear model in ONNX, MiniLM
embeddings with a trained head in ONNX), evaluates them through the server's job path,
runs a collection round with simulated annotators, and ranks them; then a generative QA
task (:mod:`evalboard.demo.generative`) with two text models, a GPT-2 trained from scratch
and a template n-gram model, evaluated and ranked beside it.
"""

from evalboard.demo.collection import RoundSummary, simulate_round
from evalboard.demo.data import DEMO_TASK_ID, LABELS, demo_task_spec
from evalboard.demo.models import DEMO_MODELS, BuiltModel, DemoModel, build_model, build_models
from evalboard.demo.run import DemoResult, Reporter, StepTime, choose_sandbox, run_demo

__all__ = [
    "DEMO_MODELS",
    "DEMO_TASK_ID",
    "LABELS",
    "BuiltModel",
    "DemoModel",
    "DemoResult",
    "Reporter",
    "RoundSummary",
    "StepTime",
    "build_model",
    "build_models",
    "choose_sandbox",
    "demo_task_spec",
    "run_demo",
    "simulate_round",
]
