"""The public names of ``docmaster_core`` and its exception tree are a contract: a
change here is a change of the API and must be deliberate (update this test with it)."""
from __future__ import annotations

import inspect

import docmaster_core
from docmaster_core import errors

PUBLIC = {
    "DocMaster", "FilterOptions", "Settings", "get_settings", "Workspace", "IndexParams",
    "Answer", "Citation", "Decision", "DocumentTree", "Element", "Evidence", "HyperEdge", "Node", "NodeType",
    "ParsedDocument",
    "LLM", "Embedder", "CorpusReader", "RunRecorder",
    "DocMasterError", "ConfigError", "ParseError", "WorkspaceError", "WorkspaceLockedError", "EmbeddingError",
    "LLMError", "LLMBudgetExceeded", "LLMResponseError", "LLMUnreachable", "LLMContextError", "IndexBuildError", "RetrievalError",
}

#: exception -> its parent
TREE = {
    "DocMasterError": "Exception",
    "ConfigError": "DocMasterError",
    "ParseError": "DocMasterError",
    "EncryptedPDFError": "ParseError",
    "EmptyDocumentError": "ParseError",
    "WorkspaceError": "DocMasterError",
    "WorkspaceLockedError": "WorkspaceError",
    "EmbeddingError": "DocMasterError",
    "LLMError": "DocMasterError",
    "LLMBudgetExceeded": "LLMError",
    "LLMResponseError": "LLMError",
    "LLMUnreachable": "LLMError",
    "LLMContextError": "LLMError",
    "IndexBuildError": "DocMasterError",
    "RetrievalError": "DocMasterError",
}


def test_public_names_are_exactly_the_contract():
    assert set(docmaster_core.__all__) == PUBLIC
    for name in docmaster_core.__all__:
        obj = getattr(docmaster_core, name)  # lazy names resolve
        assert getattr(obj, "__name__", name) == name, name
        assert not name.startswith("_")


def test_exception_tree():
    found = {n: c for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, Exception)}
    assert set(found) == set(TREE) == set(errors.__all__)
    for name, parent in TREE.items():
        assert found[name].__bases__[0].__name__ == parent, name
        assert found[name].__doc__, f"{name} needs a docstring"


def test_facade_is_the_one_way_in():
    """The facade offers every operation the CLI and the app use."""
    from docmaster_core.pipeline import DocMaster

    for member in ("documents", "document", "tree", "ingest", "resummarize", "repair_vectors", "index", "index_document", "build_index", "load_index",
                   "has_index", "indexed_documents", "wait_for_saves", "index_collection", "load_collection_index",
                   "index_params", "retrieval_settings", "retriever", "filter", "ask", "check_llm", "remove"):
        assert callable(getattr(DocMaster, member)), member
