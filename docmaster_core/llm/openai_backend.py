"""The OpenAI-compatible LLM backend's tasks (OpenAI, Azure, Ollama, vLLM, LM Studio):
summaries, anchor-pair labels, paragraph grouping, filter decisions and answers, each a
structured request validated against its schema (:mod:`docmaster_core.llm.prompts`).

The backend holds a transport (:class:`~docmaster_core.llm.transport.Transport`, by
default :class:`~docmaster_core.llm.transport.OpenAITransport`: client, retries, budget,
structured outputs, key scrubbing; see its module docstring) and sends every request,
streamed or not, through its one method ``handle``. The backend itself keeps the
response cache, the usage records and the validation (with one repair) of structured
replies.
The API key is passed to the client only; it is never logged, never put in an
exception message and never stored in the cache.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
from pydantic import ValidationError

from ..config import LLMSettings
from ..errors import LLMContextError, LLMError, LLMResponseError
from ..model import Answer, Citation, Decision, Evidence
from . import prompts
from .reading import read_decision
from ..text.words import normalize_ws, split_sentences, truncate_words
from .base import UsageTracker
from .cache import LLMCache, make_key
from .transport import (
    PRICES_PER_MTOK,
    ChatRequest,
    OpenAITransport,
    Transport,
    complete,
    estimate_cost,
    scrub_key,
)

logger = logging.getLogger("docmaster_core.llm.openai_backend")

T = TypeVar("T")

__all__ = ["OpenAILLM", "PRICES_PER_MTOK", "estimate_cost", "NO_EVIDENCE_ANSWER"]

#: Answer text when no evidence was retrieved (no call is made).
NO_EVIDENCE_ANSWER = "No passages were retrieved, so the question cannot be answered from the documents."

_PAIR_BATCH = 50  # anchor pairs per label_pairs request
_GROUP_WINDOW = 40  # paragraphs per group_paragraphs request


def _pieces(text: str, words: int = 4) -> Iterator[str]:
    toks = text.split(" ")
    for i in range(0, len(toks), words):
        chunk = " ".join(toks[i : i + words])
        yield chunk if i + words >= len(toks) else chunk + " "


def _evidence_payload(evidence: Sequence[Evidence]) -> list[list[Any]]:
    return [[e.evidence_id, e.text, e.page, list(e.section_path), e.node_type] for e in evidence]


def citation_for(e: Evidence, quote: str) -> Citation:
    """A :class:`Citation` pointing at evidence ``e`` with ``quote``."""
    return Citation(
        evidence_id=e.evidence_id,
        doc_id=e.doc_id,
        node_id=e.node_id,
        page=e.page_of(quote),
        section_path=list(e.section_path),
        quote=quote,
    )


def _verbatim_quote(quote: str, text: str, max_words: int = 40) -> str:
    """The model's quote when it occurs in ``text`` (whitespace-insensitive), else the passage head."""
    q = normalize_ws(quote)
    if q and q.lower() in normalize_ws(text).lower():
        return truncate_words(q, max_words)
    sents = split_sentences(text)
    return truncate_words(sents[0] if sents else text, max_words) if (sents or text) else ""



def _strip_fences(content: str) -> str:
    s = content.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[a-zA-Z]*\s*", "", s)
        s = re.sub(r"\s*```$", "", s)
    return s


def _short_error(err: Exception) -> str:
    if isinstance(err, ValidationError):
        parts = []
        for e in err.errors()[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ())) or "(root)"
            parts.append(f"{loc}: {e.get('msg')}")
        return "; ".join(parts)
    if isinstance(err, json.JSONDecodeError):
        return f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"
    return str(err)[:300]


class OpenAILLM:
    """The LLM facade over an OpenAI-compatible Chat Completions endpoint: the typed
    tasks of :class:`~docmaster_core.llm.base.LLM`, sent through the transport it holds.

    Args:
        settings: LLM settings (model, base URL, key, temperature, timeout in seconds,
            max_retries, max_concurrency, max_calls, max_tokens_budget).
        cache: Response cache and usage log; ``None`` = no persistence.
        backoff_base, backoff_max, seed: Retry delays (seconds) and jitter seed of the
            default :class:`~docmaster_core.llm.transport.OpenAITransport`.
        transport: The :class:`~docmaster_core.llm.transport.Transport` requests go
            through (default: an :class:`~docmaster_core.llm.transport.OpenAITransport`
            for ``settings`` that reports every request to this backend's usage records).

    Raises:
        ConfigError: on first use when no API key is available for api.openai.com.
    """

    is_offline = False

    def __init__(
        self,
        settings: LLMSettings,
        *,
        cache: LLMCache | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        seed: int | None = None,
        transport: Transport | None = None,
    ):
        self.settings = settings
        self.backend_name = settings.model
        self.model = settings.model
        self.max_concurrency = int(settings.max_concurrency)
        self.cache = cache
        self.usage = UsageTracker()
        self._local = threading.local()
        self.transport: Transport = transport if transport is not None else OpenAITransport(
            settings, on_request=self._request_sent, backoff_base=backoff_base, backoff_max=backoff_max, seed=seed)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAILLM(model={self.model!r}, base_url={self.settings.resolved_base_url()!r})"

    # ------------------------------------------------------------------ the transport's state
    @property
    def calls_sent(self) -> int:
        """HTTP requests sent by this backend's transport (this run)."""
        return int(getattr(self.transport, "calls_sent", 0))

    @property
    def tokens_used(self) -> int:
        """Tokens counted against the budget by this backend's transport (this run)."""
        return int(getattr(self.transport, "tokens_used", 0))

    @property
    def endpoint(self) -> str:
        """The endpoint for messages: scheme, host, port and path, never credentials."""
        return str(getattr(self.transport, "endpoint", ""))

    def check_ready(self) -> None:
        """Cheap up-front check (no request sent): an API key is available, or a
        ``base_url`` names a local endpoint that needs none.

        Raises:
            ConfigError: no API key for api.openai.com.
        """
        check = getattr(self.transport, "check_ready", None)
        if check is not None:
            check()

    def check_reachable(self, timeout: float = 3.0) -> None:
        """Probe the endpoint with one TCP connection before a run (see
        :meth:`OpenAITransport.check_reachable <docmaster_core.llm.transport.OpenAITransport.check_reachable>`).

        Raises:
            ConfigError: the base URL has no host.
            LLMUnreachable: refused, unresolvable or timed out (one line naming the endpoint).
        """
        check = getattr(self.transport, "check_reachable", None)
        if check is not None:
            check(timeout)

    # ------------------------------------------------------------------ usage and structured calls
    def _request_sent(self, task: str, doc_id: str | None, pt: int, ct: int) -> None:
        self._record(task, doc_id, pt, ct)

    def _record(self, task: str, doc_id: str | None, pt: int, ct: int, *, calls: int = 1, cached: bool = False) -> None:
        cost = 0.0 if cached else estimate_cost(self.model, pt, ct)
        self.usage.record(task, doc_id, calls=calls, prompt_tokens=pt, completion_tokens=ct, cost=cost, cached=cached)
        if self.cache is not None:
            self.cache.log_usage(
                task, doc_id, self.model, calls=calls, prompt_tokens=pt, completion_tokens=ct, cost=cost, cached=cached
            )

    def _scrub(self, text: str) -> str:
        return scrub_key(text, self.settings.resolved_api_key())

    def _json_task(
        self,
        task: str,
        doc_id: str | None,
        messages: list[dict[str, str]],
        payload: Any,
        validate: Callable[[Any], T],
        lenient: Callable[[str], dict | None] | None = None,
    ) -> tuple[T, int]:
        """Cached, validated, once-repaired structured call; returns (result, tokens spent).

        ``lenient`` reads a reply that is not the schema's JSON (a small local model's
        "Yes."): it returns the schema-shaped object, or None when it cannot read the
        reply either; the object then stands for the reply (no repair request). A
        reply that neither validates nor reads, after the one repair, raises
        :class:`LLMResponseError` with the last reply's text as ``err.reply``."""
        spec = prompts.SPECS[task]
        key = make_key(task, self.model, spec.version, payload)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    result = validate(hit)
                except (ValueError, ValidationError):
                    result = None  # stale or corrupt entry: ask again
                if result is not None:
                    self._record(task, doc_id, 0, 0, calls=0, cached=True)
                    return result, 0
        reply = complete(self.transport, ChatRequest(task, doc_id, messages, spec.json_schema))
        content, tokens = reply.content, reply.tokens
        try:
            obj = json.loads(_strip_fences(content))
            result = validate(obj)
        except (ValueError, ValidationError) as err:
            loose = lenient(content) if lenient is not None else None
            if loose is not None:
                obj = loose
                result = validate(obj)
                if self.cache is not None:
                    self.cache.put(key, task, self.model, spec.version, obj)
                return result, tokens
            why = self._scrub(_short_error(err))
            logger.info("%s: invalid reply (%s), one repair attempt", task, why)
            repair = [*messages, {"role": "assistant", "content": content[:4000]}, prompts.repair_message(why, spec)]
            reply2 = complete(self.transport, ChatRequest(task, doc_id, repair, spec.json_schema))
            content2 = reply2.content
            tokens += reply2.tokens
            try:
                obj = json.loads(_strip_fences(content2))
                result = validate(obj)
            except (ValueError, ValidationError) as err2:
                loose = lenient(content2) if lenient is not None else None
                if loose is None:
                    failure = LLMResponseError(
                        f"{task}: {self.model} reply did not match the schema after one repair: "
                        + self._scrub(_short_error(err2))
                    )
                    failure.reply = content2
                    raise failure from None
                obj = loose
                result = validate(obj)
        if self.cache is not None:
            self.cache.put(key, task, self.model, spec.version, obj)
        return result, tokens

    # ------------------------------------------------------------------ fitting the context
    def last_context_note(self) -> str | None:
        """The note of this thread's last :meth:`answer` / :meth:`answer_stream` /
        :meth:`decide`: what was trimmed to fit ``llm.context_tokens``, or None."""
        return getattr(self._local, "note", None)

    @staticmethod
    def _prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
        """A cautious prompt size in tokens: 3 characters a token (English text runs
        about 4 in the small models' tokenizers) plus 8 per message for the chat template."""
        return sum(len(m.get("content") or "") for m in messages) // 3 + 8 * len(messages)

    def _fit_evidence(self, task: str, evidence: Sequence[Evidence],
                      build: Callable[[Sequence[Evidence]], list[dict[str, str]]]) -> tuple[list[Evidence], str | None]:
        """The evidence whose prompt fits ``settings.context_tokens`` less the reply's
        room (``max_tokens``, else a quarter of the window up to 512 tokens): whole
        passages are left out from the end (the lowest-ranked), never cut mid-passage.

        Returns:
            ``(evidence sent, note)``; the note (one line, for the user) is None when
            nothing was left out or no context size is set.

        Raises:
            LLMContextError: even the first passage alone does not fit (names the window).
        """
        ctx = self.settings.context_tokens
        kept = list(evidence)
        self._local.note = None
        if not ctx or not kept:
            return kept, None
        reserve = int(self.settings.max_tokens or min(512, ctx // 4))
        room = ctx - reserve
        size = self._prompt_tokens(build(kept))
        while kept and size > room:
            kept.pop()
            size = self._prompt_tokens(build(kept)) if kept else size
        if not kept:
            raise LLMContextError(
                f"{task}: the prompt with only the best passage needs about {size} tokens, more than the model's "
                f"context window of {ctx} tokens (llm.context_tokens) less {reserve} for the reply; "
                "raise the server's context size or lower retrieval.evidence_chars", ctx)
        if len(kept) == len(evidence):
            return kept, None
        left = len(evidence) - len(kept)
        note = (f"evidence trimmed to fit the model's context window of {ctx} tokens: {len(kept)} of "
                f"{len(evidence)} passages sent, the {left} lowest-ranked left out whole")
        self._local.note = note
        logger.info("%s: %s", task, note)
        return kept, note

    def map_threads(self, fn: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
        """Apply ``fn`` to ``items`` on up to ``max_concurrency`` threads, order kept.

        Exceptions propagate (the first one raised in item order).
        """
        if len(items) <= 1 or self.max_concurrency <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(fn, items))

    # ------------------------------------------------------------------ tasks
    def summarize_many(self, texts: Sequence[str], *, doc_id: str | None = None, max_words: int = 50) -> list[str]:
        """:meth:`summarize` of each text on up to ``max_concurrency`` threads, order kept.

        Raises:
            LLMError: the first failure (in item order).
        """
        return self.map_threads(lambda t: self.summarize(t, doc_id=doc_id, max_words=max_words), list(texts))

    def summarize_section_many(self, items: Sequence[tuple[str, list[str]]], *, doc_id: str | None = None,
                               max_words: int = 80) -> list[str]:
        """:meth:`summarize_section` of each ``(title, child_summaries)``, order kept.

        Raises:
            LLMError: the first failure (in item order).
        """
        return self.map_threads(
            lambda it: self.summarize_section(it[0], it[1], doc_id=doc_id, max_words=max_words), list(items))

    def summarize(self, text: str, *, doc_id: str | None = None, max_words: int = 50) -> str:
        """Summary of a passage in at most ``max_words`` words (longer replies are cut).

        Raises:
            LLMError, LLMBudgetExceeded, LLMResponseError.
        """
        text = text or ""
        if not text.strip():
            return ""

        def validate(obj: Any) -> str:
            out = normalize_ws(prompts.SummaryOut.model_validate(obj).summary)
            if not out:
                raise ValueError("summary is empty")
            return truncate_words(out, max_words)

        result, _ = self._json_task(
            "summarize", doc_id, prompts.summarize_messages(text, max_words), {"text": text, "max_words": max_words}, validate
        )
        return result

    def summarize_section(
        self, title: str, child_summaries: list[str], *, doc_id: str | None = None, max_words: int = 80
    ) -> str:
        """Section summary from its children's summaries, at most ``max_words`` words.

        With no child summaries the title itself is returned (no call).

        Raises:
            LLMError, LLMBudgetExceeded, LLMResponseError.
        """
        children = [normalize_ws(s) for s in child_summaries if s and s.strip()]
        if not children:
            return normalize_ws(title)

        def validate(obj: Any) -> str:
            out = normalize_ws(prompts.SummaryOut.model_validate(obj).summary)
            if not out:
                raise ValueError("summary is empty")
            return truncate_words(out, max_words)

        result, _ = self._json_task(
            "summarize_section",
            doc_id,
            prompts.section_messages(title, children, max_words),
            {"title": title, "children": children, "max_words": max_words},
            validate,
        )
        return result

    def label_pairs(
        self,
        pairs: list[tuple[str, str]],
        *,
        cosines: np.ndarray | None = None,
        doc_id: str | None = None,
    ) -> list[bool]:
        """Must-link (True) / cannot-link (False) labels of SEC anchor pairs.

        One request per batch of 50 pairs (one call for the default k = 20), so k pairs
        cost ceil(k / 50) <= k calls.
        ``cosines`` is ignored (the model reads the texts).

        Raises:
            LLMError, LLMBudgetExceeded, LLMResponseError (labels must cover every pair
            exactly once).
        """
        out: list[bool] = []
        for start in range(0, len(pairs), _PAIR_BATCH):
            batch = [(a or "", b or "") for a, b in pairs[start : start + _PAIR_BATCH]]
            k = len(batch)

            def validate(obj: Any, k: int = k) -> list[bool]:
                labels = prompts.PairLabelsOut.model_validate(obj).labels
                seen = [lab.pair for lab in labels]
                missing = sorted(set(range(k)) - set(seen))
                extra = sorted({p for p in seen if p >= k})
                dup = sorted({p for p in seen if seen.count(p) > 1})
                if missing or extra or dup:
                    raise ValueError(
                        f"labels must cover pairs 0..{k - 1} exactly once (missing {missing}, unknown {extra}, duplicated {dup})"
                    )
                by_pair = {lab.pair: lab.must_link for lab in labels}
                return [by_pair[i] for i in range(k)]

            res, _ = self._json_task(
                "label_pairs", doc_id, prompts.label_pairs_messages(batch), {"pairs": [list(p) for p in batch]}, validate
            )
            out.extend(res)
        return out

    def group_paragraphs(
        self, texts: list[str], *, embeddings: np.ndarray | None = None, doc_id: str | None = None
    ) -> list[tuple[list[int], str]]:
        """Group a section's paragraphs into hyper-edges with 30-50 word summaries.

        Sections with more than 40 paragraphs are grouped in windows of 40 (one request
        each; groups never span windows). Summaries longer than 50 words are cut. A
        single paragraph forms one group without a grouping call: its own text when it
        has at most 50 words, else its :meth:`summarize` summary.

        Raises:
            LLMError, LLMBudgetExceeded, LLMResponseError (groups must partition the indices).
        """
        n = len(texts)
        if n == 0:
            return []
        if n == 1:
            only = normalize_ws(texts[0])
            if len(only.split()) <= 50:
                return [([0], only)]
            return [([0], self.summarize(only, doc_id=doc_id, max_words=50) or truncate_words(only, 50))]
        groups: list[tuple[list[int], str]] = []
        for start in range(0, n, _GROUP_WINDOW):
            window = [t or "" for t in texts[start : start + _GROUP_WINDOW]]
            m = len(window)

            def validate(obj: Any, m: int = m) -> list[tuple[list[int], str]]:
                parsed = prompts.GroupsOut.model_validate(obj).groups
                members = [i for g in parsed for i in g.members]
                missing = sorted(set(range(m)) - set(members))
                extra = sorted({i for i in members if not 0 <= i < m})
                dup = sorted({i for i in members if members.count(i) > 1})
                if missing or extra or dup:
                    raise ValueError(
                        f"groups must partition indices 0..{m - 1} (missing {missing}, unknown {extra}, duplicated {dup})"
                    )
                res = []
                for g in parsed:
                    summary = truncate_words(normalize_ws(g.summary), 50)
                    if not summary:
                        raise ValueError("group summary is empty")
                    res.append((sorted(g.members), summary))
                return sorted(res, key=lambda x: x[0][0])

            res, _ = self._json_task(
                "group_paragraphs", doc_id, prompts.group_messages(window), {"texts": window}, validate
            )
            groups.extend(([start + i for i in idx], s) for idx, s in res)
        return groups

    def decide(self, condition: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Decision:
        """Filter decision on one document from its evidence.

        Document text is delimited and marked as untrusted data in the prompt, so
        instructions inside it are not followed. Evidence ids the model invents are
        dropped. No evidence gives ``decision=False`` without a call. Any
        :class:`LLMError` (budget, transport, schema) gives ``decision=None`` with
        ``error`` set.

        Raises:
            ConfigError: when no API key is configured for api.openai.com.
        """
        if not evidence:
            return Decision(False, "No evidence was retrieved for this document.", [], 0.0, 0, self.backend_name)
        try:
            evidence, note = self._fit_evidence("decide", evidence, lambda ev: prompts.decide_messages(condition, ev))
        except LLMContextError as e:
            return Decision(None, "", [], 0.0, 0, self.backend_name, error=str(e))
        given = {e.evidence_id for e in evidence}
        loose: dict[str, str] = {}

        def validate(obj: Any) -> prompts.DecisionOut:
            return prompts.DecisionOut.model_validate(obj)

        def lenient(text: str) -> dict | None:
            r = read_decision(text)
            if r.decision is None:
                return None
            loose["how"] = r.how
            return {"decision": r.decision, "rationale": r.rationale, "evidence_ids": list(r.evidence_ids),
                    "confidence": r.confidence, "read": r.how}

        try:
            out, tokens = self._json_task(
                "decide",
                doc_id,
                prompts.decide_messages(condition, evidence),
                {"condition": condition, "evidence": _evidence_payload(evidence)},
                validate,
                lenient,
            )
        except LLMResponseError as e:
            reply = getattr(e, "reply", "") or ""
            r = read_decision(reply)
            why = {"empty": "was empty", "refusal": "was a refusal"}.get(r.how, "says neither yes nor no")
            return Decision(None, truncate_words(self._scrub(r.rationale), 80), [], 0.0, 0, self.backend_name,
                            error=f"{e}; the last reply {why}: left undecided", note=note)
        except LLMError as e:
            return Decision(None, "", [], 0.0, 0, self.backend_name, error=str(e), note=note)
        ids = [i for i in dict.fromkeys(out.evidence_ids) if i in given]
        conf = out.confidence if out.confidence is not None else (1.0 if out.decision else 0.0)
        if loose:
            read = f"read from a reply that was not the asked-for JSON ({loose['how']})"
            note = f"{note}; {read}" if note else read
        return Decision(
            decision=bool(out.decision),
            rationale=truncate_words(normalize_ws(out.rationale), 80) or ("satisfied" if out.decision else "not satisfied"),
            evidence_ids=ids,
            score=float(conf),
            tokens=int(tokens),
            backend=self.backend_name,
            note=note,
        )

    def answer(self, question: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Answer:
        """Cited answer from the evidence; citations only to given evidence ids.

        Ids cited inline as ``[E3]`` count as citations too; quotes not found verbatim
        in the passage are replaced by the passage's first sentence. A reply with
        ``"found": false`` gives ``outcome="not_found"``, no supporting citation, and the
        passages it named as ``closest`` (``supports=False``). Any
        :class:`LLMError` gives an answer with empty text and ``error`` set.

        Raises:
            ConfigError: when no API key is configured for api.openai.com.
        """
        if not evidence:
            return Answer(NO_EVIDENCE_ANSWER, [], 0, self.backend_name)
        try:
            evidence, _ = self._fit_evidence("answer", evidence, lambda ev: prompts.answer_messages(question, ev))
        except LLMContextError as e:
            return Answer("", [], 0, self.backend_name, error=str(e))
        by_id = {e.evidence_id: e for e in evidence}

        def validate(obj: Any) -> prompts.AnswerOut:
            return prompts.AnswerOut.model_validate(obj)

        try:
            out, tokens = self._json_task(
                "answer",
                doc_id,
                prompts.answer_messages(question, evidence),
                {"question": question, "evidence": _evidence_payload(evidence)},
                validate,
            )
        except LLMError as e:
            return Answer("", [], 0, self.backend_name, error=str(e))
        text = out.answer.strip()
        cites = self._citations(text, out.citations, by_id)
        if not out.found:  # explicit "not found": nothing cited as support
            for c in cites:
                c.supports = False
            return Answer(text, [], int(tokens), self.backend_name, outcome="not_found", closest=cites,
                          reason="the model found no answer in the passages")
        return Answer(text, cites, int(tokens), self.backend_name)

    @staticmethod
    def _citations(text: str, cited: Sequence[prompts.CitationOut], by_id: dict[str, Evidence]) -> list[Citation]:
        quotes: dict[str, str] = {}
        for c in cited:
            if c.evidence_id in by_id and c.evidence_id not in quotes:
                quotes[c.evidence_id] = c.quote
        for eid in re.findall(r"\[([A-Za-z]+\d+)\]", text):
            if eid in by_id and eid not in quotes:
                quotes[eid] = ""
        return [citation_for(by_id[eid], _verbatim_quote(q, by_id[eid].text)) for eid, q in quotes.items()]

    def answer_stream(self, question: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Iterator[str]:
        """Stream a plain-text cited answer (``stream=True``, server-sent events).

        Sent through the transport's one method like every other request (same
        retries, budget and unreachable-endpoint handling): transient errors are
        retried only before the first piece arrived; an HTTP 400 (endpoints without
        ``stream_options`` support) is retried once without usage reporting. A
        connection dropped mid-stream, or a stream that ends without a finish reason,
        raises :class:`LLMError` (never a raw transport exception). The full text is
        cached.

        Raises:
            LLMError, LLMBudgetExceeded.
        """
        if not evidence:
            yield NO_EVIDENCE_ANSWER
            return
        evidence, _ = self._fit_evidence("answer_stream", evidence,
                                         lambda ev: prompts.answer_stream_messages(question, ev))
        task = "answer_stream"
        spec = prompts.SPECS[task]
        payload = {"question": question, "evidence": _evidence_payload(evidence)}
        key = make_key(task, self.model, spec.version, payload)
        if self.cache is not None:
            hit = self.cache.get(key)
            if isinstance(hit, dict) and isinstance(hit.get("text"), str):
                self._record(task, doc_id, 0, 0, calls=0, cached=True)
                yield from _pieces(hit["text"])
                return
        messages = prompts.answer_stream_messages(question, evidence)
        # the same retry, budget and unreachable-endpoint loop as every other request
        reply = yield from self.transport.handle(ChatRequest(task, doc_id, messages, stream=True))
        if self.cache is not None:
            self.cache.put(key, task, self.model, spec.version, {"text": reply.content})
