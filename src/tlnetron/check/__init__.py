"""Stage 5, checking: the published schemas, the companion's rules, matching a pair, the onnx
checker (split where it is quadratic) and the advisories an export warns with."""
