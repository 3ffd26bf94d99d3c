"""Forecast: the whole fit's wall time on this device, from the run plan and what was measured.

When it runs: the plan (`plan`) is read once when training starts; `eta.predict_fit` runs at each prediction
(the first, a few steps in, and each refinement) and at the end. It adds the time spent, the remaining steps at
the measured step time, the validation runs still to come (`eta_validation` estimates one before any has run),
saves and epoch boundaries, each with its uncertainty, which gives the band; `estimators` keeps the running
figures it reads.

What it may touch: plain numbers only (the plan, `RunMeasurements`); no clock, no model, no report.
"""
