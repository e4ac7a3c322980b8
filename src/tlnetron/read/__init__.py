"""Stage 1, reading: the TorchLens trace into the IR (the one module that reads torchlens),
its tensors' statistics, the buffer classification, a baseline run's diff, and the artifact
and companion files other surfaces are handed (``files``)."""
