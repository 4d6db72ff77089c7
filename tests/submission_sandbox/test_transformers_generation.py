"""The ``transformers`` runtime generating text in the docker sandbox: the demo's GPT-2
(causal, left padding, a stop string) and a tiny seeded T5 (sequence to sequence) made in
the torch image from GPT-2's tokenizer, under generation settings given as a task gives
them (``generation=``, which reaches the runner as ``EVALBOARD_GENERATION``)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from datasets_registry import OutputSpec, output_problems
from evalboard.core.limits import SandboxLimits
from evalboard.core.settings import get_settings
from submission_sandbox import open_sandbox, run_offline

pytestmark = pytest.mark.docker

LIMITS = SandboxLimits(cpus=2, memory="2g", timeout_s=300)
INPUTS = [
    {
        "uid": str(i),
        "context": f"Mira Tolan was born in Vesk in {1800 + 7 * i}. The river Oda flows "
        f"through Brell. Kas Umer wrote the book The Lorn{'e' * i}.",
        "question": question,
    }
    for i, question in enumerate(
        ["Where was Mira Tolan born?", "Who wrote the book The Lorn?", "When was she born?"] * 2
    )
]

_MAKE_T5 = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import torch
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    out = Path(sys.argv[1])
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(out / "gpt2")
    config = T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=2,
        decoder_start_token_id=tokenizer.pad_token_id, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    T5ForConditionalGeneration(config).save_pretrained(out / "t5" / "model")
    tokenizer.save_pretrained(out / "t5" / "model")
    for path in out.rglob("*"):
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
    """
)


def _generate(bundle: Path, client: Any, **generation: Any) -> list[str]:
    with open_sandbox(
        bundle, kind="docker", limits=LIMITS, client=client, generation=generation
    ) as box:
        outputs = box.predict(INPUTS)
    assert output_problems(OutputSpec(type="text"), INPUTS, outputs) == []
    return [output["text"] for output in outputs]


@pytest.fixture(scope="module")
def t5_bundle(
    docker_engine: Any, gpt2_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:

    out = tmp_path_factory.mktemp("t5")
    out.chmod(0o777)
    shutil.copytree(gpt2_bundle / "model", out / "gpt2")
    (out / "make_t5.py").write_text(_MAKE_T5)
    run_offline(
        get_settings().torch_image,
        ["python3", "/out/make_t5.py", "/out"],
        mount=out,
        timeout_s=180,
        label="making the test T5",
        client=docker_engine,
    )
    (out / "t5" / "evalboard.yaml").write_text(
        "name: tiny-t5\ntask: generative-qa\nruntime: transformers\nmodel: model\n"
        'prompt: "question: {question} context: {context}"\nbatch_size: 4\n'
    )
    return out / "t5"


def test_greedy_gpt2_answers_grow_with_max_new_tokens_and_stop_at_a_new_line(
    gpt2_bundle: Path, docker_client: Any
) -> None:
    short = _generate(gpt2_bundle, docker_client, max_new_tokens=1, greedy=True, seed=None)
    long = _generate(gpt2_bundle, docker_client, max_new_tokens=32, greedy=True, seed=None)
    # Greedy decoding: the first token is the same whatever the limit, so each short
    # answer begins its long one; the limit is the task's, not the bundle's default (64).
    assert all(b.startswith(a) for a, b in zip(short, long, strict=True)), (short, long)
    assert short != long
    assert all("\n" not in text for text in long)


def test_seq2seq_sampling_with_the_task_seed_reproduces(
    t5_bundle: Path, docker_client: Any
) -> None:
    first = _generate(t5_bundle, docker_client, max_new_tokens=6, greedy=False, seed=7)
    again = _generate(t5_bundle, docker_client, max_new_tokens=6, greedy=False, seed=7)
    greedy = _generate(t5_bundle, docker_client, max_new_tokens=6, greedy=True, seed=None)
    assert first == again
    assert first != greedy  # sampling did sample
