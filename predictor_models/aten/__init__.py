"""Captured aten calls, from the dispatch mode to an `OpSpec`, in steps with one job each.

- `call`: `OpCall`, a captured call reduced to names, shapes, dtypes and a few scalar arguments;
- `taxonomy`: which op class an op name belongs to (one name -> class table, plus a few rules);
- `record`: the profiler's hot path, a live call -> `OpCall` (no tensor references kept);
- `costs`: an `OpCall` -> `OpSpec` (FLOPs, bytes, shape features), once per distinct signature.

`unmodelled` counts the calls `costs` could not describe. `predictor_models.aten_ops` re-exports
the public names.
"""
