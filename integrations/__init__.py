"""Framework adapters: Lightning callback and DeepSpeed engine attach. They import downwards only."""
