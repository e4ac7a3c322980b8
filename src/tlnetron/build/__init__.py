"""Stage 4, building: the drawing into Netron's ONNX-JSON artifact, its model metadata, the
metrics companion, the export id that pairs them, and their serialization."""
