"""Outputs: where a session's results go, and how a report reads to people.

When it runs: after each prediction (logger metrics, the panel and its lines) and at the end (the closing line,
the report on disk, publishers such as the HTML page of `prenet_callbacks.html` and TensorBoard); also from the
CLI, which renders a saved report. `session_outputs` is the session's sink; `render` builds the `rich` panel,
`fitted_table` lays its tables out for the width they are printed at, `terminal` prints (the one width rule, a
line of its own beside progress bars), and `report_view` reads a report's parts the way every output words them.

What it may touch: the report (read only), the console, the loggers and files the user configured; nothing of
the run itself.
"""
