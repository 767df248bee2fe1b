"""What the example scripts share: run this checkout's `edge` CLI the way a user types it, echoing the command.

Examples put the repository root on sys.path, so they import this as `from examples._cli import edge, show`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def show(path) -> str:
    """A path as the user would type it: relative to the working directory when it is below it."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def edge(*args, capture: bool = False) -> str:
    """Run `edge ARGS...` (this checkout's CLI, with this Python), echoing the command; stop on failure.
    With capture=True the command's standard output is returned instead of shown."""
    words = [show(a) if isinstance(a, Path) else str(a) for a in args]
    print(f"$ edge {' '.join(shlex.quote(w) for w in words)}", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", "edge_sdk.cli", *words], check=False, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
        raise SystemExit(f"`edge {words[0]}` failed with exit status {proc.returncode}")
    return proc.stdout if capture else ""
