"""Measuring single ops on this machine's GPU, for `prenet collect`: the grid of cases and the timer."""
