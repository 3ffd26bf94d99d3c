"""The session: one fit, from the adapter's first call to its last.

When it runs: at construction (`arguments` checks what the user passed, `config` keeps it), at fit start
(`run_info`, `model_parallel_run`, `run_record`), and at every event the adapter forwards (batch ends,
validation, saves, the end): `machine.PredictionSession` receives them and decides, step by step
(`schedule`), when the other rooms measure, predict and write. `facts` keeps what the adapter learns late
(batch sizes, the optimizer, the state's size), `predictions` the history of predictions, `lifecycle` how a
run starts and ends, `own_time` what PreNeT itself costs the run, and `guard` makes every event step aside on
an error instead of breaking training.

What it may touch: the other rooms (`measure`, `forecast`, `projection`, `outputs`) and the report; never a
framework (adapters translate their framework's state into the plain data it takes).
"""
