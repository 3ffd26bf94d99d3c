"""Rows: one row of the report's ``targets`` per hardware target, and the recommendation between them.

When it runs: for every projection. `project` builds the rows of targets that run replicas, `layout_rows` those
of tensor/pipeline layouts, both from the parts in `row_parts`: the step priced (`projection.pricing`) and
scaled (`projection.parallel`), its band from the measured error of its regime (`bands`, `band_table.json`
written by `benchmarks/band_table.py`), the whole run's time with the target's own one-off time (`one_off`),
memory fit (`memory`) and price (`cost`). `advice` picks the recommendation from the rows.

What it may touch: the other projection rooms and `report_parts.TargetRow`; the rows are handed back to
`projection.project_report`, which writes them into the report.
"""
