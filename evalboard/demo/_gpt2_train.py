"""Train a small GPT-2 from scratch on generative QA examples, deterministically (internal).

Run as a script where torch and transformers are installed (the torch runtime image:
evalboard itself is not there)::

    python3 _gpt2_train.py OUT   # OUT/train.jsonl in, OUT/model/ (a transformers folder) out

A byte-level BPE tokenizer is trained on the examples with ``tokenizers`` (no hub), a
two-layer GPT-2 learns to continue ``{context}\\nQ: {question}\\nA:`` with `` {answer}``
and the end-of-text token (the loss on the answer's tokens only), and both are saved with
``save_pretrained``. Fixed seeds, deterministic torch algorithms and a fixed thread count
make the same weights from the same examples. OUT/train.json records the time taken.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

PROMPT = "{context}\nQ: {question}\nA:"
EOS = "<|endoftext|>"
SEED = 0
#: One thread: the same sums in the same order on every machine, and no OpenMP workers
#: spinning for cores a loaded machine does not give them (two were several times slower).
THREADS = 1
VOCAB = 768
POSITIONS = 256
STEPS = 500
BATCH = 16
WIDTH = 64


def _tokenizer(texts: list[str]):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=EOS,
        bos_token=EOS,
        unk_token=EOS,
        pad_token=EOS,
        model_max_length=POSITIONS,
    )


def main(out: Path) -> None:
    started = time.monotonic()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    torch.use_deterministic_algorithms(True)
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines() if line]
    prompts = [PROMPT.format(context=r["context"], question=r["question"]) for r in rows]
    answers = [" " + r["references"][0] for r in rows]
    tokenizer = _tokenizer([p + a for p, a in zip(prompts, answers, strict=True)])
    eos = tokenizer.eos_token_id
    examples = []
    prompt_ids = tokenizer(prompts)["input_ids"]
    answer_ids = tokenizer(answers)["input_ids"]
    for p, answer in zip(prompt_ids, answer_ids, strict=True):
        a = [*answer, eos]
        ids = (p + a)[-POSITIONS:]
        labels = ([-100] * len(p) + a)[-POSITIONS:]
        examples.append((ids, labels))
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=POSITIONS,
        n_embd=WIDTH,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=3e-3, total_steps=STEPS, pct_start=0.1
    )
    order = random.Random(SEED)
    model.train()
    losses = []
    for _ in range(STEPS):
        batch = order.sample(examples, BATCH)
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((BATCH, width), eos)
        labels = torch.full((BATCH, width), -100)
        mask = torch.zeros((BATCH, width), dtype=torch.long)
        for row, (x, y) in enumerate(batch):
            ids[row, : len(x)] = torch.tensor(x)
            labels[row, : len(y)] = torch.tensor(y)
            mask[row, : len(x)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if len(losses) % 100 == 0:
            elapsed = time.monotonic() - started
            sys.stderr.write(f"step {len(losses)} loss {losses[-1]:.3f} {elapsed:.0f} s\n")
    model.eval()
    model.generation_config.pad_token_id = eos
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    report = {
        "seconds": round(time.monotonic() - started, 1),
        "steps": STEPS,
        "batch": BATCH,
        "examples": len(examples),
        "parameters": sum(p.numel() for p in model.parameters()),
        "first_loss": round(sum(losses[:20]) / 20, 4),
        "last_loss": round(sum(losses[-20:]) / 20, 4),
        "threads": THREADS,
        "torch": torch.__version__,
    }
    (out / "train.json").write_text(json.dumps(report, indent=2) + "\n")
    for path in out.rglob("*"):  # save_pretrained writes 0600 files: readable by the sandbox
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
