"""Print the collection clustering of a workspace as a markdown table of cluster names.

    python scripts/cluster_names_table.py -w WORKSPACE_COPY [--force]

The collection index at the default parameters (alpha, k, K, w from the settings) is
built when missing (``--force``: rebuilt) and each cluster is named as the Clusters page
names it (``DocMaster.name_clusters`` with each passage's document). Writes to the
workspace: run it on a copy. Used for the cluster-name tables of docs/results/app.md.
"""
from __future__ import annotations

import argparse
import time


def main() -> None:
    """Build (or load) the collection clustering and print its named clusters."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workspace", required=True)
    ap.add_argument("--force", action="store_true", help="rebuild the collection index")
    a = ap.parse_args()

    from docmaster_core.config import get_settings
    from docmaster_core.pipeline import DocMaster

    dm = DocMaster(a.workspace, get_settings(llm={"backend": "offline"}))
    t0 = time.perf_counter()
    stats = dm.index_collection(force=a.force)
    coll = dm.load_collection_index()
    secs = time.perf_counter() - t0
    trees = {d: dm.ws.load_tree(d) for d in coll.doc_ids}
    doc_of = [coll.doc_ids[int(j)] for j in coll.node_doc]
    texts = [trees[d].nodes[int(i)].content for d, i in zip(doc_of, coll.node_ids)]
    labels = [int(c) for c in coll.labels]
    names = dm.name_clusters(texts, labels, doc_ids=doc_of)
    print(f"{len(coll.doc_ids)} documents, {len(labels)} passages clustered, "
          f"{stats.get('boilerplate_left_out', 0)} left out as boilerplate {stats.get('boilerplate_by_reason', {})}, "
          f"documents alike {stats.get('documents_alike')}, centered {stats.get('centered')}, {secs:.1f} s")
    print("| cluster | passages | documents | telling words |")
    print("|---|---|---|---|")
    for c in sorted(set(labels)):
        members = [i for i, x in enumerate(labels) if x == c]
        n_docs = len({doc_of[i] for i in members})
        print(f"| C{c} | {len(members)} | {n_docs} | {', '.join(names.get(c) or []) or '(none)'} |")


if __name__ == "__main__":
    main()
