"""Hardware catalog, static op features and the pretrained per-op time predictor.

This layer knows nothing of Lightning or DeepSpeed; `prenet_callbacks` builds on it.
"""
