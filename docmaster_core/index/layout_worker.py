"""The background layout worker: ``python -m docmaster_core.index.layout_worker LAYOUTS_DIR [PARENT_PID]``.

Drains ``LAYOUTS_DIR/queue/`` (job files ``<priority>~<seq>~<name>.npy`` holding
float32 (n, d) embeddings, priority ``0`` = someone is waiting for it, ``1`` =
background), lowest priority digit and oldest first, re-listing the queue after every
job so an urgent job overtakes the background ones. For each job it writes the UMAP
coordinates (:func:`docmaster_core.index.layout.umap_2d`) to ``LAYOUTS_DIR/<name>.npy``
(temporary file + rename) or, on failure, the one-line reason to ``<name>.failed``,
then deletes the job file. One worker per workspace: a second one exits at once
(``LAYOUTS_DIR/worker.lock``, ``flock``). Runs at a lower CPU priority (nice +10).
With ``PARENT_PID`` it stops after the current job once that process (the app that
started it) has gone, leaving the rest of the queue for the next start: it never
outlives the app as an orphan. Exit code 0 when the queue is empty or the parent has
gone, 2 on bad arguments.
"""
from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import numpy as np


def _next_job(queue: Path) -> Path | None:
    jobs = sorted(p for p in queue.glob("*~*.npy"))
    return jobs[0] if jobs else None


def run(layouts: Path, parent: int | None = None) -> int:
    """Drain the queue of ``layouts`` (stopping early once process ``parent`` has
    gone); returns the number of layouts written."""
    from .layout import umap_2d

    queue = layouts / "queue"
    done = 0
    seen: set[str] = set()
    with open(layouts / "worker.lock", "a+b") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another worker drains this queue
        while True:
            if parent is not None and os.getppid() != parent:
                return done  # the app that started us has gone: leave the rest for its next start
            job = _next_job(queue)
            if job is None:
                return done
            name = job.name.split("~", 2)[2][: -len(".npy")]
            if name in seen:  # its job file could not be deleted: stop rather than loop
                return done
            seen.add(name)
            out = layouts / f"{name}.npy"
            if not out.is_file():
                try:
                    X = np.load(job, allow_pickle=False)
                    Y = umap_2d(X)
                    tmp = layouts / f".{name}.{os.getpid()}.tmp.npy"
                    with open(tmp, "wb") as f:
                        np.save(f, Y, allow_pickle=False)
                    os.replace(tmp, out)
                    done += 1
                except Exception as e:  # noqa: BLE001 - any failure is reported through <name>.failed
                    try:
                        (layouts / f"{name}.failed").write_text(f"{type(e).__name__}: {e}"[:500])
                    except OSError:
                        pass
            for p in queue.glob(f"*~{name}.npy"):  # this job and any duplicate of it
                try:
                    p.unlink()
                except OSError:
                    pass


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code."""
    if len(argv) not in (1, 2) or not Path(argv[0]).is_dir() or (len(argv) == 2 and not argv[1].isdigit()):
        print("usage: python -m docmaster_core.index.layout_worker LAYOUTS_DIR [PARENT_PID]", file=sys.stderr)
        return 2
    try:
        os.nice(10)
    except OSError:
        pass
    run(Path(argv[0]), int(argv[1]) if len(argv) == 2 else None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
