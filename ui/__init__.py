"""Streamlit glue shared by the DocMaster pages.

Modules:
    state        the session-state keys (the one module that owns them)
    resources    cached resources (settings, DocMaster facade, embedder) and the
                 workspace-root guard
    layout       per-page header (title, backend label) and the router fallback
    sidebar      the settings panel drawn on every page
    widgets      document chooser, cached tree loader, outline labels
    text         escaping of document text for Markdown
    ingest       upload saving, ingest with per-document progress, collection table
    render       node content, page images with boxes, evidence passages
    cluster_chart  the cluster view's scatter of passages (Vega-Lite), topic colours
    cluster_colors the topics' stable ids across redraws
    projection   the cluster view's coordinates: the engine's stored UMAP layouts
                 (docmaster_core.index.layout), PCA while they are computed
    indexing     semantic-index access for the hyper-edge and cluster pages
    filtering    the filter-configuration form, runs, comparison and export
    chat         retrieval + cited answers for the chat page

Nothing under ``docmaster_core`` imports this package.
"""
