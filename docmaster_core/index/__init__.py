"""The structure-aware semantic index (SPEC F3-F5, DocMaster Sec. 2.3).

* :mod:`.sec` - Structural Entropy Correlation (Eq. (1)) and top-k anchor pairs;
* :mod:`.pckmeans` - pairwise-constrained k-means (Basu et al. 2004, Eq. (2));
* :mod:`.hyperedges` - LLM-grouped paragraphs per section and their must-links;
* :mod:`.builder` - the per-document and collection index builders.

Importing this package is cheap: scipy.sparse and scikit-learn load on first use.
"""
from __future__ import annotations

from .builder import CollectionIndex, DocumentIndex, build_collection_index, build_document_index, label_anchor_pairs
from .hyperedges import (
    HyperEdgeSet,
    assign_hyperedge_clusters,
    build_hyperedges,
    group_hyperedges,
    link_hyperedges,
    unlinked_hyperedges,
    text_sections,
)
from .pckmeans import PCKMeans
from .sec import (
    TreeStructure,
    pairwise_lca,
    pairwise_path_entropy,
    path_entropy_terms,
    sec_matrix,
    top_k_anchor_pairs,
    top_k_sec_pairs,
)

__all__ = [
    "CollectionIndex",
    "DocumentIndex",
    "HyperEdgeSet",
    "PCKMeans",
    "TreeStructure",
    "assign_hyperedge_clusters",
    "build_collection_index",
    "build_document_index",
    "build_hyperedges",
    "group_hyperedges",
    "label_anchor_pairs",
    "link_hyperedges",
    "unlinked_hyperedges",
    "pairwise_lca",
    "pairwise_path_entropy",
    "path_entropy_terms",
    "sec_matrix",
    "text_sections",
    "top_k_anchor_pairs",
    "top_k_sec_pairs",
]
