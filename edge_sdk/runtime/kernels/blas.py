"""The one place that controls how many threads BLAS (numpy's matmul) uses while our kernels run.

The interpreter enters a limit once per invoke (``Interpreter(num_threads=N)``, default 1 like LiteRT's
single-threaded reference kernels) and leaves it afterwards, so numpy code outside invoke keeps its own
setting::

    token = blas.enter(1)
    try:
        ...                 # every GEMM in here runs on at most one thread
    finally:
        blas.leave(token)

Why: the GEMMs of edge models are small. With OpenBLAS's default pool (one thread per core) a product above
OpenBLAS's threading threshold runs several times slower than on one thread as soon as the machine is
busy (the pool's threads wait for each other), and timings become erratic; on an idle machine the pool
gains little on these sizes.

How: numpy's wheels bundle OpenBLAS (``numpy.libs/*openblas*``), which exports
``openblas_set_num_threads_local(n) -> previous`` (0 = "no local setting, use the global count"). We call it
through ctypes; when no such library is found (another BLAS, a numpy built differently) every call here is a
no-op. In the bundled pthreads build that setting is shared by all threads of the process rather than kept
per thread, so ``enter``/``leave`` keep a count of active limits under a lock: the first ``enter`` saves
the previous value, concurrent invokes run with the smallest limit any of them asked for, and the last
``leave`` restores the saved value. Where the library keeps it per thread (probed once, on first use), each
thread sets and restores its own.
"""

from __future__ import annotations

import threading

_UNSET = object()
_setter = _UNSET  # the ctypes function, None when unavailable; found on first use
_per_thread = False  # whether the library keeps the setting per thread
_lock = threading.Lock()
_active: dict[int, int] = {}  # limit -> how many enters hold it (process-wide mode)
_saved = 0  # the value before the first active enter (process-wide mode)
_current = 0  # the value we set (process-wide mode)


def _find_setter():
    """``openblas_set_num_threads_local`` from numpy's bundled OpenBLAS, or None."""
    try:
        import ctypes
        import glob
        import os

        import numpy as np

        libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
        for path in sorted(glob.glob(os.path.join(libs, "*openblas*"))):
            # PyDLL keeps the GIL across the call (the function only stores an int): about 3x quicker than
            # CDLL's release and re-acquire. Python ints pass as C ints; the result is a C int by default.
            fn = getattr(ctypes.PyDLL(path), "openblas_set_num_threads_local", None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return fn
    except (OSError, AttributeError, ImportError):
        pass
    return None


def _probe_per_thread(fn) -> bool:
    """Set a value here and read it back from another thread: if the other thread does not see it, the
    library keeps the setting per thread."""
    mine = fn(7)
    seen = []

    def other():
        seen.append(fn(3))
        fn(seen[0])

    t = threading.Thread(target=other)
    t.start()
    t.join()
    fn(mine)
    return seen[0] != 7


def _setup():
    global _setter, _per_thread
    with _lock:
        if _setter is _UNSET:
            fn = _find_setter()
            _per_thread = fn is not None and _probe_per_thread(fn)
            _setter = fn
    return _setter


def available() -> bool:
    """Whether BLAS threads can be limited here (numpy's bundled OpenBLAS was found)."""
    return (_setup() if _setter is _UNSET else _setter) is not None


def enter(threads: int | None):
    """Limit BLAS to ``threads`` (None: no limit) until the matching ``leave(token)``. Cheap: one ctypes call
    when the effective value changes, nothing when BLAS cannot be controlled or ``threads`` is None."""
    global _saved, _current
    fn = _setup() if _setter is _UNSET else _setter
    if fn is None or threads is None:
        return None
    if _per_thread:
        return (True, fn(threads))
    _lock.acquire()
    try:
        if not _active:
            _saved = fn(threads)
            _current = threads
        elif threads < _current:
            fn(threads)
            _current = threads
        _active[threads] = _active.get(threads, 0) + 1
    finally:
        _lock.release()
    return (False, threads)


def leave(token) -> None:
    """Undo the ``enter`` that returned ``token``."""
    global _current
    if token is None:
        return
    per_thread, value = token
    fn = _setter
    if per_thread:
        fn(value)
        return
    _lock.acquire()
    try:
        left = _active[value] - 1
        if left:
            _active[value] = left
        else:
            del _active[value]
        if not _active:
            fn(_saved)
            _current = _saved
        else:
            smallest = min(_active)
            if smallest != _current:
                fn(smallest)
                _current = smallest
    finally:
        _lock.release()


def current_limit() -> int:
    """The value in force for this thread (0 = the library's own default; -1 when BLAS cannot be limited)."""
    fn = _setup() if _setter is _UNSET else _setter
    if fn is None:
        return -1
    with _lock:
        value = fn(0)
        fn(value)
    return value
