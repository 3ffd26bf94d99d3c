"""Demo: a small GPT-2 trained by the Hugging Face `Trainer` with PreNeT's callback (CPU, about a minute).

    python examples/hf_trainer.py [--steps 600] [--eval-steps 150] [--save-steps 300] [--targets A100 "8x H100"]

The model is built from a config (2 layers, 128 wide: no download) and learns synthetic token
chains. The Trainer evaluates every ``--eval-steps`` steps and saves a checkpoint every
``--save-steps`` steps. A few optimizer steps in, PreNeT prints its prediction of the whole
``trainer.train()`` call; at the end it compares that with the measured time. Under
``torchrun --nproc_per_node 2 examples/hf_trainer.py`` each process trains a shard and the main
process alone prints and writes the report.
"""
from __future__ import annotations

import argparse

import torch
from torch.utils.data import Dataset

VOCAB = 512


class TokenChains(Dataset):
    """Sequences that follow a fixed random successor table (learnable, deterministic, no download)."""

    def __init__(self, samples: int, seq_len: int = 64, *, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(1234)  # the same table for training and evaluation
        successor = torch.randint(0, VOCAB, (VOCAB,), generator=generator)
        tokens = torch.empty(samples, seq_len, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, VOCAB, (samples,), generator=torch.Generator().manual_seed(seed))
        for position in range(1, seq_len):
            tokens[:, position] = successor[tokens[:, position - 1]]
        self.tokens = tokens

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.tokens[index], "labels": self.tokens[index]}


def build_model(layers: int = 2, width: int = 128, seq_len: int = 64) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB, n_positions=seq_len, n_embd=width, n_layer=layers, n_head=4,
                        bos_token_id=0, eos_token_id=0)
    return GPT2LMHeadModel(config)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=600, help="optimizer steps (TrainingArguments.max_steps)")
    parser.add_argument("--eval-steps", type=int, default=150)
    parser.add_argument("--save-steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--accumulate", type=int, default=1, help="gradient accumulation steps")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 keeps timing steady)")
    parser.add_argument("--targets", nargs="*", default=None, help="other hardware, e.g. A100 '8x H100'")
    parser.add_argument("--out", default="runs/hf_trainer_demo", help="output_dir of the Trainer (and the report)")
    args = parser.parse_args(argv)

    from transformers import Trainer, TrainingArguments

    from prenet_callbacks import PreNeTTrainerCallback

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    training = TrainingArguments(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.batch_size, gradient_accumulation_steps=args.accumulate,
        eval_strategy="steps", eval_steps=args.eval_steps, save_strategy="steps", save_steps=args.save_steps,
        save_total_limit=2, logging_steps=50, learning_rate=1e-3, report_to="none", disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(), seed=0,
    )
    prenet = PreNeTTrainerCallback(targets=args.targets)
    trainer = Trainer(model=build_model(width=args.width), args=training,
                      train_dataset=TokenChains(2000, seed=1), eval_dataset=TokenChains(64, seed=2),
                      callbacks=[prenet])
    trainer.train()

    report = prenet.report
    if trainer.is_world_process_zero() and report.actual:
        # PreNeT's own last line compared its first prediction with the time train() took
        print(f"Report: {args.out}/prenet_report.json  (re-render: prenet report {args.out}/prenet_report.json)")
    return report.to_dict()


if __name__ == "__main__":
    main()
