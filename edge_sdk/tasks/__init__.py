"""The whole inference procedure around a model: pre-processing, post-processing, generation.

    from edge_sdk.tasks.pipeline import ImageClassifier, Detector, AudioClassifier
    from edge_sdk.tasks.generate import Generator

What lives here: ``preprocess`` (one description of an image model's input pre-processing, used by
calibration, the manifest and the runtime), ``pipeline`` (classifiers, detectors with box decoding and NMS,
audio windows; scores and calibration of confidence) and ``generate`` (text generation with a KV cache).

May import: the standard library, numpy, pillow, edge_sdk.errors / log / resources / timeouts,
edge_sdk.model, edge_sdk.runtime. Nothing from targets, device, tools, the CLI or converters.
"""
