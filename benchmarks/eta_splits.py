"""The ETA workloads, declared in two splits (issue 39): what the model was tuned on, and what it was not.

DEVELOPMENT holds every workload the ETA model's constants were chosen on: the Lightning sets of
`workloads.py` (default, validation-heavy, compiled), the `transformers.Trainer` workloads of
`hf_workloads.py`, the `Tracker` loops of `loop_workloads.py` and (since 2026-12-06) three DeepSpeed loops of
`deepspeed_workloads.py`. `_TRAIN_DRIFT`
(`prenet_callbacks/forecast/eta.py`) was fitted on the pace drift of 21 of these runs and `_HOST_DRIFT` on every
repeat of this split run by `eta_protocol.py` (`band_drift_choice.py`, 2026-12-06), the `UNCERTAINTY` table and the
validation rule (`prenet_callbacks/forecast/eta_validation.py`, `benchmarks/validation_rules.py`) on the
validation-heavy set, and the band's allocator reach and subnormal note were checked on the loops and the
default set. Their coverage says how well the constants fit the runs they were chosen on, nothing more.

HELD_OUT holds workloads written after those constants were frozen (at ``b86e3c5``) and never used to choose
anything: `heldout_workloads.py` (Lightning, Trainer, Tracker) and `deepspeed_workloads.py` (a raw DeepSpeed
loop with `attach()`), transformers, RNNs (GRU, LSTM), CNNs and MLPs in all four frameworks, each fit
20-60 s. A constant of the ETA model may change only on DEVELOPMENT, chosen by its worst case there; the
held-out figures are then reported as they come, every run kept (`eta_protocol.py`).

Each entry is ``(framework, workload)``; framework is ``lightning``, ``hf``, ``loop`` or ``deepspeed``.
"""
from __future__ import annotations

DEVELOPMENT: tuple[tuple[str, str], ...] = (
    *(("lightning", name) for name in (
        # default set
        "cnn_val_every_epoch", "cnn_loader_workers", "mlp_accumulate_val_every_n_steps",
        "transformer_val_fraction", "lstm_val_every_epoch",
        # validation-heavy set (the validation rule and UNCERTAINTY were scored on these)
        "cnn_two_blocks_issue24", "cnn_big_validation_batches", "cnn_dropout_eval_4x_metrics",
        "mlp_validation_every_200", "mlp_bn_dropout_many_eval_batches_no_sanity",
        "transformer_validation_half_epoch", "transformer_eval_half_batch_few_batches",
        "lstm_eval_half_batch_no_sanity", "lstm_eval_same_batch_metrics",
        # compiled set
        "compiled_mlp", "compiled_cnn", "compiled_transformer", "compiled_mlp_recompiles")),
    *(("hf", name) for name in (
        "causal_lm_eval_steps_checkpoints", "classifier_epoch_eval_accumulate", "max_steps_mid_epoch",
        "causal_lm_accumulate_eval_checkpoints")),
    *(("loop", name) for name in (
        "loop_encoder_eval_checkpoints", "loop_lstm_accelerate_accumulate", "loop_encoder_loader_epochs",
        "loop_encoder_loader_epochs_workers")),
    # added on 2026-12-06 (`deepspeed_workloads.DEVELOPMENT`), so that this split has DeepSpeed fits too
    *(("deepspeed", name) for name in ("ds_cnn_zero0_checkpoints", "ds_gru_zero1_accumulate", "ds_mlp_dropout_zero2")),
)

HELD_OUT: tuple[tuple[str, str], ...] = (
    ("lightning", "ho_bigru_sgd_checkpoints"),          # RNN
    ("lightning", "ho_residual_cnn_groupnorm"),         # CNN
    ("lightning", "ho_causal_transformer_max_steps"),   # transformer
    ("hf", "ho_hf_distilbert_epochs_save"),             # transformer
    ("hf", "ho_hf_gru_lm_eval_steps"),                  # RNN
    ("loop", "ho_loop_cnn_eval_checkpoints"),           # CNN
    ("loop", "ho_loop_mlp_loader_epochs"),              # MLP
    ("deepspeed", "ds_mlp_zero2_accumulate"),           # MLP
    ("deepspeed", "ds_transformer_zero1"),              # transformer
    ("deepspeed", "ds_lstm_zero0"),                     # RNN
)

SPLITS: dict[str, tuple[tuple[str, str], ...]] = {"development": DEVELOPMENT, "held_out": HELD_OUT}
