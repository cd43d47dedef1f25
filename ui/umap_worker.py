"""Standalone UMAP worker: ``python umap_worker.py IN.npy OUT.npy``.

Reads float32 embeddings (n, d) from ``IN.npy``, writes the (n, 2) float32 UMAP
coordinates (McInnes, Healy and Melville 2018; cosine metric, 15 neighbours capped at
n - 1, min_dist 0.1, random_state 0) to ``OUT.npy`` atomically (temp file + rename),
then removes ``IN.npy``. Runs in its own process so numba's first-use compilation
(~30 s) never holds the app's interpreter lock. Exit code 0 on success, 1 on failure
(the reason on stderr).
"""
from __future__ import annotations

import os
import sys
import warnings

import numpy as np


def main(argv: list[str]) -> int:
    """Entry point; returns the exit code."""
    if len(argv) != 2:
        print("usage: umap_worker.py IN.npy OUT.npy", file=sys.stderr)
        return 2
    src, dst = argv
    try:
        X = np.load(src, allow_pickle=False).astype(np.float32, copy=False)
        n = X.shape[0]
        warnings.simplefilter("ignore")
        import umap

        reducer = umap.UMAP(
            n_components=2,
            n_neighbors=max(2, min(15, n - 1)),
            min_dist=0.1,
            metric="cosine",
            random_state=0,
            init="random" if n < 16 else "spectral",
        )
        Y = np.asarray(reducer.fit_transform(X), dtype=np.float32)
        tmp = f"{dst}.{os.getpid()}.tmp.npy"
        with open(tmp, "wb") as f:
            np.save(f, Y, allow_pickle=False)
        os.replace(tmp, dst)
    except Exception as e:  # noqa: BLE001 - any failure is reported to the app through the exit code
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        try:
            os.remove(src)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
