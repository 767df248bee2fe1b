"""edge-sdk converters: ONNX / float TFLite in, int8 / fp16 TFLite out."""
