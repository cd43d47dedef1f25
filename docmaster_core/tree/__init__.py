"""The document tree (SPEC F2): built from parsed elements (:mod:`.build`), summarised
bottom-up (:mod:`.summaries`), and its sections' roles (abstract, related work,
references; :mod:`.roles`)."""
from .build import build_tree, page_of_text, split_long_text, split_sentences

__all__ = ["build_tree", "page_of_text", "split_long_text", "split_sentences"]
