"""Build hook (setuptools only; the project's metadata lives in pyproject.toml).

A wheel carries the device profiles and the C runtime's sources inside the package, as
``edge_sdk/_bundled/device_profiles`` and ``edge_sdk/_bundled/firmware_c``: build_py copies the files
``edge_sdk.resources.bundle_files`` selects (sources only, no build outputs) into the build tree. A checkout
and an editable install keep using the top-level ``device_profiles/`` and ``firmware_c/`` (edge_sdk.resources
looks for the bundled copy first, then for the checkout's folders).
"""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _resources():
    # by path: edge_sdk/__init__ imports numpy, which a build environment need not have
    spec = importlib.util.spec_from_file_location("_edge_sdk_resources", HERE / "edge_sdk" / "resources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithBundle(build_py):
    """build_py, plus device_profiles/ and firmware_c/ copied under edge_sdk/_bundled/."""

    def _bundle(self):
        if getattr(self, "editable_mode", False):
            return []  # an editable install reads the checkout's folders directly
        res = _resources()
        return [(src, Path(self.build_lib, *res.BUNDLE_ARC.split("/"), rel)) for src, rel in res.bundle_files(HERE)]

    def run(self):
        super().run()
        for src, dst in self._bundle():
            self.mkpath(str(dst.parent))
            self.copy_file(str(src), str(dst), preserve_mode=True)

    def get_outputs(self, include_bytecode=1):
        return list(super().get_outputs(include_bytecode)) + [str(dst) for _, dst in self._bundle()]


setup(cmdclass={"build_py": BuildPyWithBundle})
