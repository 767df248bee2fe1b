"""Image classification end to end with the `edge` command: train, convert for a Pi and an MCU, run, evaluate,
profile on the QEMU board.

    .venv/bin/python examples/image_classification/classify.py [--out out/examples/image_classification]
        [--epochs 40] [--images 10] [--skip-profile]

1. train    the small CNN of examples/digits/train.py on scikit-learn's bundled 8x8 digits (numpy, seeded) and
            export it to ONNX; write the held-out split (test.npz), calibration samples from the training split
            (calib.npy) and a few held-out digits as PNG files (images/)
2. convert  `edge convert` twice: int8 with float32 input/output for a Raspberry Pi 4 (raspberry-pi-4), and
            full-integer int8 for an STM32F746 Discovery (stm32f746-disco); each is checked against its profile
3. run      `edge run` on the PNG files (top-3 labels)
4. evaluate `edge evaluate`: accuracy, ECE and NLL of the int8 model beside the float ONNX model, and a
            reliability diagram (the Pi model has the same int8 layers with float32 I/O: the same figures)
5. profile  `edge flash` the MCU model to the QEMU Cortex-M4 board, `edge profile` it over serial (per-op table,
            trace JSON, CSV, plot; outputs checked against the host bit for bit), `edge board stop`.
            Skipped with --skip-profile, or with a message when qemu-system-arm / the Arm toolchain is missing.

Every command is printed before it runs, as you would type it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from examples._cli import edge, show

DIGITS = ROOT / "examples" / "digits"
QEMU_TARGET = "qemu-mps2-an386"
DEVICE_PACKAGES = "qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi"


def train_module():
    spec = importlib.util.spec_from_file_location("digits_train", DIGITS / "train.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def step_train(out: Path, epochs: int, n_images: int, calib: int) -> dict:
    from PIL import Image

    print(f"== 1. train the digits CNN ({epochs} epochs) and export it to ONNX", flush=True)
    tr = train_module()
    params, accuracy = tr.train(epochs=epochs)
    onnx_path = out / "digits_cnn.onnx"
    tr.export_onnx(params, onnx_path)
    labels = out / "labels.txt"
    labels.write_text("\n".join(tr.LABELS) + "\n")
    x_train, _, x_test, y_test = tr.load_split()
    np.savez(out / "test.npz", x=x_test, y=y_test)
    np.save(out / "calib.npy", x_train[:calib])
    images = out / "images"
    shutil.rmtree(images, ignore_errors=True)
    images.mkdir()
    paths = []
    for i in range(min(n_images, len(y_test))):
        pixels = np.round(x_test[i, 0] * 255).astype(np.uint8)  # the dataset's 0..16 scaled to 0..255
        path = images / f"{i:02d}_digit{y_test[i]}.png"
        Image.fromarray(pixels, "L").resize((32, 32), Image.NEAREST).save(path)  # 32x32: big enough to look at
        paths.append(path)
    print(f"held-out top-1 (float, numpy) {100 * accuracy:.2f}% -> {show(onnx_path)}")
    print(f"wrote {show(out / 'test.npz')} ({len(y_test)} held-out digits), {show(out / 'calib.npy')} "
          f"({calib} training digits), {len(paths)} PNGs in {show(images)}/\n")
    return {"onnx": onnx_path, "labels": labels, "images": paths}


def step_convert(out: Path, d: dict) -> dict:
    print("== 2. convert for a Raspberry Pi 4 and for an STM32F746 (int8, calibrated on training digits)", flush=True)
    pi, mcu = out / "digits_pi4.tflite", out / "digits_stm32f746.tflite"
    common = ["--calib", out / "calib.npy", "--labels", d["labels"]]
    edge("convert", d["onnx"], "-o", pi, "--target", "raspberry-pi-4", "--io", "float32", *common)
    print()
    edge("convert", d["onnx"], "-o", mcu, "--target", "stm32f746-disco", *common)
    print()
    return {"pi": pi, "mcu": mcu}


def step_run(d: dict, models: dict) -> None:
    print("== 3. run the MCU model on the PNG files", flush=True)
    edge("run", models["mcu"], *d["images"], "--top-k", "3")
    print()


def step_evaluate(out: Path, d: dict, models: dict) -> None:
    print("== 4. evaluate: the int8 model vs the float ONNX model on the held-out split", flush=True)
    print("(the Pi model has the same int8 layers, with float32 input/output: the same figures)")
    edge("evaluate", models["mcu"], "--data", out / "test.npz", "--reference", d["onnx"],
         "--plot", out / "reliability.png")
    print()


def step_profile(out: Path, models: dict) -> None:
    print(f"== 5. flash the MCU model to the QEMU board ({QEMU_TARGET}) and profile it over serial", flush=True)
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc", "make") if shutil.which(t) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} not found; install with: sudo apt-get install {DEVICE_PACKAGES}")
        return
    flashed = json.loads(edge("flash", models["mcu"], "--target", QEMU_TARGET, "--build-dir", out / "firmware",
                              "--json", capture=True))
    port = flashed["port"]
    print(f"QEMU board on {port} (firmware {show(flashed['elf'])}: text {flashed['text_bytes']} B, "
          f"arena {flashed['arena_bytes']} B)")
    try:
        edge("profile", models["mcu"], "--target", QEMU_TARGET, "--port", port, "--runs", "5",
             "--trace", out / "profile_trace.json", "--csv", out / "profile_ops.csv", "--plot", out / "profile_ops.png")
    finally:
        edge("board", "stop", port)
    print()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "out" / "examples" / "image_classification"))
    parser.add_argument("--epochs", type=int, default=40, help="training epochs (default 40; 2 for a quick look)")
    parser.add_argument("--images", type=int, default=10, help="held-out digits written as PNG (default 10)")
    parser.add_argument("--calib", type=int, default=300, help="calibration samples (default 300)")
    parser.add_argument("--skip-profile", action="store_true", help="skip flashing and profiling on QEMU")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    d = step_train(out, args.epochs, args.images, args.calib)
    models = step_convert(out, d)
    step_run(d, models)
    step_evaluate(out, d, models)
    if args.skip_profile:
        print("== 5. profile on the QEMU board: skipped (--skip-profile)")
    else:
        step_profile(out, models)
    print(f"done: everything is in {show(out)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
