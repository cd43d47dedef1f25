"""Cached, read-only resources of the app and the workspace-root guard.

``st.cache_resource`` holds one :class:`~docmaster_core.config.Settings`, one
embedder and one :class:`~docmaster_core.pipeline.DocMaster` per (workspace, LLM
choice); they are shared by all sessions of this server process and never mutated
by the pages (the facade itself serialises writes with the workspace lock).

The LLM API key is read from the environment (``DOCMASTER_LLM__API_KEY`` or
``OPENAI_API_KEY``) or ``st.secrets["OPENAI_API_KEY"]`` inside the cached builder:
it is never a cache key, never put in session state, never shown and never logged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from docmaster_core.errors import ConfigError

from . import state
from .state import allowed_root

__all__ = [
    "allowed_root",
    "resolve_workspace",
    "secret_api_key",
    "api_key_available",
    "default_model",
    "get_app_settings",
    "get_embedder_cached",
    "get_docmaster",
    "current_docmaster",
    "backend_label",
]

ROOT_ENV = "DOCMASTER_WORKSPACE_ROOT"


def resolve_workspace(text: str, root: Path | None = None) -> Path:
    """Turn the workspace text input into a resolved directory under the allowed root.

    A relative path is taken relative to the root. Symlinks are followed before the
    check, so a link pointing outside the root is refused too.

    Args:
        text: What the user typed.
        root: The allowed root (default :func:`allowed_root`).

    Returns:
        The resolved path (it may not exist yet; the workspace creates it).

    Raises:
        ConfigError: empty input, or the path lies outside the allowed root.
    """
    root = (root or allowed_root()).resolve()
    raw = (text or "").strip()
    if not raw:
        raise ConfigError("enter a workspace folder")
    if "\x00" in raw:
        raise ConfigError("the workspace path contains a NUL character")
    p = Path(raw).expanduser()
    if not p.is_absolute():
        p = root / p
    p = p.resolve()
    if p != root and not p.is_relative_to(root):
        raise ConfigError(
            f"workspace {p} is outside the allowed root {root}; choose a folder under it "
            f"(set {ROOT_ENV} to allow another root)"
        )
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{p} exists and is not a folder")
    return p


def secret_api_key() -> str | None:
    """The API key of the settings tree (``DOCMASTER_LLM__API_KEY``, else
    ``OPENAI_API_KEY``), else ``st.secrets["OPENAI_API_KEY"]``; None when absent.

    Never display or log the return value.
    """
    from docmaster_core.config import get_settings

    key = get_settings().llm.resolved_api_key()
    if key:
        return key
    try:
        from streamlit.errors import StreamlitSecretNotFoundError
    except ImportError:  # pragma: no cover - older streamlit
        StreamlitSecretNotFoundError = FileNotFoundError  # type: ignore[misc,assignment]
    try:
        val = st.secrets.get("OPENAI_API_KEY")
    except (StreamlitSecretNotFoundError, FileNotFoundError, KeyError):
        return None
    return str(val) if val else None


def default_model() -> str:
    """The LLM model name of the settings tree (``DOCMASTER_LLM__MODEL``)."""
    from docmaster_core.config import get_settings

    return get_settings().llm.model


def api_key_available() -> bool:
    """True when an API key can be found (the key itself is not returned)."""
    return secret_api_key() is not None


@st.cache_resource(show_spinner=False)
def get_app_settings(backend: str, model: str, base_url: str):
    """Settings from the environment with the sidebar's LLM choice applied.

    Args:
        backend: ``"offline"`` or ``"openai"``.
        model: Model name for the OpenAI-compatible backend.
        base_url: Endpoint base URL; ``""`` keeps the env/settings default.

    Returns:
        :class:`docmaster_core.config.Settings` (shared; do not mutate).
    """
    from docmaster_core.config import get_settings

    llm: dict[str, Any] = {"backend": backend}
    if backend == "openai":
        llm["model"] = model or default_model()
        if base_url:
            llm["base_url"] = base_url
        key = secret_api_key()
        if key:
            from pydantic import SecretStr

            llm["api_key"] = SecretStr(key)
    return get_settings(llm=llm)


@st.cache_resource(show_spinner="Loading the embedding model ...")
def get_embedder_cached(model: str):
    """The shared sentence embedder (all-MiniLM-L6-v2, 384-d; ``"hashing"`` for tests)."""
    from docmaster_core.config import EmbeddingSettings, get_settings
    from docmaster_core.embedding.embedders import get_embedder

    es = get_settings().embedding
    emb = get_embedder(EmbeddingSettings(**{**es.model_dump(), "model": model}))
    _warm_up_in_background(emb)
    return emb


def _warm_up_in_background(emb: Any) -> None:
    """Load the model weights in a daemon thread so that the first query encoding (a
    filter, a chat question) does not pay the ~10 s import and load; an encode that
    comes earlier waits on the embedder's own load lock. A failure is left for the
    first real encode to report."""
    import threading

    from docmaster_core.errors import DocMasterError

    def _run() -> None:
        try:
            emb.encode(["warm-up"])
        except DocMasterError:
            pass

    threading.Thread(target=_run, name="docmaster-embedder-warmup", daemon=True).start()


#: Libraries the pages draw with, imported on first use by one page each (Altair: the Semantic
#: clusters chart; scikit-learn's text features and SciPy's sparse matrices: the topic names of
#: the clusters and graph pages). Imported in the server's first seconds instead, they no longer
#: add ~0.3 s (Altair) and ~0.1 s to the first paint of their page (docs/results/app.md).
#: streamlit-agraph is not among them: it declares its component when imported, which must
#: happen in a script run (imported in this thread, the graph never drew).
PAGE_LIBRARIES = ("altair", "sklearn.feature_extraction.text", "scipy.sparse")


@st.cache_resource(show_spinner=False)
def preload_page_libraries() -> Any:
    """Import :data:`PAGE_LIBRARIES` in a daemon thread, once per server process (a cached
    resource), so that no page's first paint pays for them. A page that imports one earlier
    waits on Python's import lock for the same module, no longer than it would have. A library
    that fails to import is left for its page to report.

    Returns:
        The started :class:`threading.Thread` (named ``docmaster-page-libraries``).
    """
    import importlib
    import threading

    def _run() -> None:
        for name in PAGE_LIBRARIES:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the page importing it reports the failure
                pass

    th = threading.Thread(target=_run, name="docmaster-page-libraries", daemon=True)
    th.start()
    return th


@st.cache_resource(show_spinner=False, max_entries=8)
def get_docmaster(workspace: str, backend: str, model: str, base_url: str):
    """The DocMaster facade for one workspace and LLM choice (shared resource).

    Raises:
        WorkspaceError: the workspace database is unreadable or too new.
    """
    from docmaster_core.pipeline import DocMaster

    settings = get_app_settings(backend, model, base_url)
    return DocMaster(workspace, settings, embedder=get_embedder_cached(settings.embedding.model))


def current_docmaster():
    """The facade for the session's workspace and LLM choice.

    Raises:
        ConfigError: the session's workspace lies outside the allowed root.
        WorkspaceError: the workspace cannot be opened.
    """
    ws = str(resolve_workspace(state.get(state.WORKSPACE, "")))
    return get_docmaster(
        ws,
        state.get(state.LLM_BACKEND, "offline"),
        state.get(state.LLM_MODEL, "") or default_model(),
        state.get(state.LLM_BASE_URL, "") or "",
    )


def backend_label(backend: str | None = None, model: str | None = None, base_url: str | None = None) -> str:
    """The human label of the active LLM backend, e.g. ``"LLM: offline (extractive)"``."""
    backend = backend or state.get(state.LLM_BACKEND, "offline")
    if backend != "openai":
        return "LLM: offline (extractive)"
    from docmaster_core.config import get_settings

    model = model or state.get(state.LLM_MODEL, "") or default_model()
    base_url = base_url if base_url is not None else (state.get(state.LLM_BASE_URL, "") or "")
    from docmaster_core.llm.transport import display_url

    where = display_url(base_url or get_settings().llm.resolved_base_url() or "") or "api.openai.com"
    return f"LLM: {model} (OpenAI-compatible, {where})"
