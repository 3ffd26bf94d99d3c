"""What Hugging Face users pass to `estimate()`: small BERT, GPT-2 (gradient checkpointing, ``use_cache=False``),
Llama, T5 and ViT configs, with no mask, an all-ones mask and a padded mask, captured on ``meta`` (the model on
meta, the batch real or meta) and for real (model and batch on the CPU).

    python benchmarks/hf_mask_capture.py [--json benchmarks/results/hf_mask_capture.json]

Per case: the H100 row's step time and the notes about value reads (`projection/ops/meta_values.py`), or the error.
A meta capture answers the mask's reads as for a batch without padding (one note), so its padded cases equal its
all-ones ones; the real capture of a padded batch runs attention with an explicit mask, and the difference
between the two is what that assumption leaves out. Built from configs, nothing downloaded.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
BATCH, SEQ = 4, 32
MODELS = ("bert", "gpt2", "llama", "t5", "vit")


def build(name: str, device: str) -> torch.nn.Module:
    import transformers as tf

    torch.manual_seed(0)
    with torch.device(device):
        if name == "bert":
            model = tf.BertForMaskedLM(tf.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2,
                                                     num_attention_heads=4, intermediate_size=128))
        elif name == "gpt2":
            model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=512, n_embd=64, n_layer=2, n_head=4, n_positions=128,
                                                     use_cache=False))
            model.gradient_checkpointing_enable()
        elif name == "llama":
            model = tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2,
                                                       num_attention_heads=4, num_key_value_heads=2,
                                                       intermediate_size=128, max_position_embeddings=128,
                                                       use_cache=False))
        elif name == "t5":   # a pretrained T5 config carries the decoder's start token; a fresh one needs it
            model = tf.T5ForConditionalGeneration(tf.T5Config(vocab_size=512, d_model=64, d_kv=16, d_ff=128,
                                                              num_layers=2, num_heads=4, decoder_start_token_id=0,
                                                              pad_token_id=0, use_cache=False))
        else:
            model = tf.ViTForImageClassification(tf.ViTConfig(image_size=32, patch_size=8, hidden_size=64,
                                                              num_hidden_layers=2, num_attention_heads=4,
                                                              intermediate_size=128, num_labels=10))
    return model.train()


def batch(name: str, mask: str) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    if name == "vit":
        return {"pixel_values": torch.randn(BATCH, 3, 32, 32, generator=generator),
                "labels": torch.randint(0, 10, (BATCH,), generator=generator)}
    ids = torch.randint(1, 512, (BATCH, SEQ), generator=generator)
    found = {"input_ids": ids, "labels": ids.clone()}
    if mask != "none":
        found["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.long)
        if mask == "padded":
            found["attention_mask"][1, 20:] = 0
            found["attention_mask"][3, 10:] = 0
    return found


def case(name: str, mask: str, capture: str) -> dict:
    from prenet_callbacks import estimate

    model = build(name, "cpu" if capture == "real" else "meta")
    inputs = batch(name, mask)
    if capture == "meta model, meta batch":
        inputs = {k: v.to("meta") for k, v in inputs.items()}
    try:
        result = estimate(model, inputs, targets=["H100"])
    except Exception as error:  # noqa: BLE001 - a failure is a result here
        return {"error": f"{type(error).__name__}: {error}"[:400]}
    notes = [n for n in result.notes if "'meta'" in n]
    return {"h100_step_s": result.rows[0]["step_s"], "value_notes": notes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/hf_mask_capture.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    import transformers

    rows = []
    for name in MODELS:
        for mask in (("none",) if name == "vit" else ("none", "ones", "padded")):
            for capture in ("meta model, real batch", "meta model, meta batch", "real"):
                rows.append({"model": name, "mask": mask, "capture": capture, **case(name, mask, capture)})
                print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for name in MODELS:
        def step(mask, capture):
            return next((r.get("h100_step_s") for r in rows if (r["model"], r["mask"], r["capture"]) == (name, mask, capture)), None)
        if name == "vit":
            summary[name] = {"meta_over_real": round(step("none", "meta model, real batch") / step("none", "real"), 4)}
            continue
        summary[name] = {
            "ones_over_none_meta": round(step("ones", "meta model, real batch") / step("none", "meta model, real batch"), 4),
            "meta_over_real_ones": round(step("ones", "meta model, real batch") / step("ones", "real"), 4),
            "real_padded_over_real_ones": round(step("padded", "real") / step("ones", "real"), 4),
            "meta_padded_over_real_padded": round(step("padded", "meta model, real batch") / step("padded", "real"), 4)}
    summary["errors"] = sum(1 for r in rows if "error" in r)
    print(json.dumps(summary, indent=1))
    Path(args.json).write_text(json.dumps({"benchmark": "hf_mask_capture", "command": "python benchmarks/hf_mask_capture.py",
                                           "date": time.strftime("%Y-%m-%d %H:%M"), "transformers": transformers.__version__,
                                           "torch": torch.__version__, "summary": summary, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
