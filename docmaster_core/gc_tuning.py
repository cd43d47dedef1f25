"""The cyclic garbage collector's thresholds for a process that holds a collection.

CPython's collector scans every tracked container object of a generation when that
generation's allocation count passes its threshold (``gc.get_threshold()``, default
``(700, 10, 10)``). A process that has opened a large workspace and loaded the models
holds about a million such objects (modules, the corpus view, per-document caches), and a
filter allocates hundreds of thousands of short-lived ones (evidence, passages, results),
so the default thresholds run the youngest collection ~500-900 times a filter and the
full one several times: at 20,000 documents ~0.6-1.5 s of a 2-4 s warm filter (issue 37,
measured with ``gc.callbacks``). A first-generation threshold of 20,000 (Python 3.13
itself raised the default to 2,000) runs them ~15-30 times, ~0.05-0.35 s, and frees the
same garbage: reference counting frees almost everything, the collector only cycles.

:func:`tune_collector` sets this once per process, when the facade opens a workspace,
and leaves thresholds alone that someone already changed. ``DOCMASTER_GC_THRESHOLD``
("20000,20,20" by default; "default" keeps Python's) overrides it.
"""
from __future__ import annotations

import gc
import os
import threading

__all__ = ["tune_collector", "GC_THRESHOLD", "PYTHON_DEFAULT"]

#: The thresholds set by :func:`tune_collector` (generation 0, 1, 2).
GC_THRESHOLD = (20_000, 20, 20)
#: CPython's own default, the only state :func:`tune_collector` changes.
PYTHON_DEFAULT = (700, 10, 10)

_DONE = False
_LOCK = threading.Lock()


def _wanted() -> tuple[int, int, int] | None:
    raw = os.environ.get("DOCMASTER_GC_THRESHOLD", "").strip()
    if not raw:
        return GC_THRESHOLD
    if raw.lower() == "default":
        return None
    try:
        parts = tuple(int(x) for x in raw.split(","))
    except ValueError:
        raise ValueError(f"DOCMASTER_GC_THRESHOLD must be three integers like '20000,20,20' or 'default', "
                         f"got {raw!r}") from None
    if len(parts) != 3 or min(parts) < 1:
        raise ValueError(f"DOCMASTER_GC_THRESHOLD must be three positive integers, got {raw!r}")
    return parts  # type: ignore[return-value]


def tune_collector() -> tuple[int, int, int]:
    """Raise the collector's thresholds to :data:`GC_THRESHOLD` once per process.

    Nothing changes when the thresholds are no longer :data:`PYTHON_DEFAULT` (an
    application tuned them itself) or ``DOCMASTER_GC_THRESHOLD=default``.

    Returns:
        The thresholds in force afterwards (``gc.get_threshold()``).

    Raises:
        ValueError: ``DOCMASTER_GC_THRESHOLD`` is not three positive integers or "default".
    """
    global _DONE
    with _LOCK:
        if not _DONE:
            want = _wanted()
            if want is not None and gc.get_threshold() == PYTHON_DEFAULT:
                gc.set_threshold(*want)
            _DONE = True
        return gc.get_threshold()
