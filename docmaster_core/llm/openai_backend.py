"""The OpenAI-compatible LLM backend (OpenAI, Azure, Ollama, vLLM, LM Studio).

Built on the official ``openai`` client with its own retries switched off
(``max_retries=0``); this module retries itself so that every request is counted
against the per-run budget and recorded in the usage log:

* retries on HTTP 408/409/429/5xx, timeouts and connection errors, at most
  ``settings.max_retries`` times, with exponential backoff and jitter
  (``backoff_base * 2**attempt * U(0.5, 1.5)`` seconds, capped at ``backoff_max``);
  a ``Retry-After`` / ``retry-after-ms`` header of a 429/503 reply is honoured
  (capped at ``backoff_max``);
* JSON mode (``response_format={"type": "json_object"}``) for every structured task;
  the reply is validated strictly against the task's pydantic schema
  (:mod:`docmaster_core.llm.prompts`); an invalid reply gets exactly ONE repair
  request that quotes the validation error, then :class:`LLMResponseError`;
* a per-run budget (``max_calls`` requests, ``max_tokens_budget`` tokens): a request
  that would exceed it is not sent, :class:`LLMBudgetExceeded` is raised instead;
  every HTTP request sent (retries and repairs included) counts as one call; a
  request that could not connect at all (connection refused, DNS failure; not a
  timeout) is neither counted as a call nor against the budget;
* at most ``max_concurrency`` requests in flight (a semaphore; callers may use threads);
* usage per task and per document (calls, prompt/completion tokens, cost estimate
  for models in :data:`PRICES_PER_MTOK`) in memory and in the workspace usage log;
* responses cached by content hash (:mod:`docmaster_core.llm.cache`).

The API key is passed to the client only; it is never logged, never put in an
exception message (messages are scrubbed) and never stored in the cache.
"""
from __future__ import annotations

import json
import logging
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
from pydantic import ValidationError

from ..config import LLMSettings
from ..errors import ConfigError, LLMBudgetExceeded, LLMError, LLMResponseError
from ..model import Answer, Citation, Decision, Evidence
from . import prompts
from .base import UsageTracker, normalize_ws, split_sentences, truncate_words
from .cache import LLMCache, make_key

__all__ = ["OpenAILLM", "PRICES_PER_MTOK", "estimate_cost", "NO_EVIDENCE_ANSWER"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: US dollars per 1M (prompt, completion) tokens; matched by model-name prefix
#: (``gpt-4o-mini-2024-07-18`` uses ``gpt-4o-mini``). Source: OpenAI price list.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4o": (2.50, 10.00),
}

#: Answer text when no evidence was retrieved (no call is made).
NO_EVIDENCE_ANSWER = "No passages were retrieved, so the question cannot be answered from the documents."

_PAIR_BATCH = 50  # anchor pairs per label_pairs request
_GROUP_WINDOW = 40  # paragraphs per group_paragraphs request
_RETRY_STATUS = {408, 409, 429}
_KEYLIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{6,}")


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Estimated cost in US dollars, or ``None`` when the model's price is unknown."""
    m = (model or "").lower()
    for name in sorted(PRICES_PER_MTOK, key=len, reverse=True):
        if m == name or m.startswith(name + "-"):
            p_in, p_out = PRICES_PER_MTOK[name]
            return (prompt_tokens * p_in + completion_tokens * p_out) / 1e6
    return None


def _strip_fences(content: str) -> str:
    s = content.strip()
    if s.startswith("```"):
        s = re.sub(r"^```[a-zA-Z]*\s*", "", s)
        s = re.sub(r"\s*```$", "", s)
    return s


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
        page=e.page,
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


class OpenAILLM:
    """The LLM facade over an OpenAI-compatible Chat Completions endpoint.

    Args:
        settings: LLM settings (model, base URL, key, temperature, timeout in seconds,
            max_retries, max_concurrency, max_calls, max_tokens_budget).
        cache: Response cache and usage log; ``None`` = no persistence.
        backoff_base: First retry delay in seconds (before jitter).
        backoff_max: Cap of any retry delay in seconds (also caps ``Retry-After``).
        seed: Seed of the private jitter generator (no global random state).

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
    ):
        self.settings = settings
        self.backend_name = settings.model
        self.model = settings.model
        self.max_concurrency = int(settings.max_concurrency)
        self.cache = cache
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.usage = UsageTracker()
        self._rng = random.Random(seed)
        self._sem = threading.BoundedSemaphore(self.max_concurrency)
        self._budget_lock = threading.Lock()
        self._calls_sent = 0
        self._tokens_used = 0
        self._client = None
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAILLM(model={self.model!r}, base_url={self.settings.resolved_base_url()!r})"

    # ------------------------------------------------------------------ plumbing
    @property
    def calls_sent(self) -> int:
        """HTTP requests sent by this instance (this run)."""
        return self._calls_sent

    @property
    def tokens_used(self) -> int:
        """Tokens counted against the budget by this instance (this run)."""
        return self._tokens_used

    def check_ready(self) -> None:
        """Cheap up-front check (no request sent): an API key is available, or a
        ``base_url`` names a local endpoint that needs none.

        Raises:
            ConfigError: no API key for api.openai.com.
        """
        if not self.settings.resolved_api_key() and not self.settings.resolved_base_url():
            raise ConfigError(
                "no API key for the OpenAI backend: set OPENAI_API_KEY or DOCMASTER_LLM__API_KEY, "
                "or set a base_url for a local endpoint"
            )

    def _get_client(self):
        if self._client is not None:
            return self._client
        with self._client_lock:
            if self._client is None:
                try:
                    from openai import OpenAI
                except ImportError as e:  # pragma: no cover - install problem
                    raise ConfigError("the openai package is not installed (pip install openai)") from e
                self.check_ready()
                base_url = self.settings.resolved_base_url()
                key = self.settings.resolved_api_key()
                if not key:
                    key = "not-needed"  # local OpenAI-compatible servers ignore the key
                self._client = OpenAI(base_url=base_url, api_key=key, timeout=self.settings.timeout, max_retries=0)
        return self._client

    def _scrub(self, text: str) -> str:
        key = self.settings.resolved_api_key()
        if key:
            text = text.replace(key, "***")
        return _KEYLIKE.sub(r"\1-***", text)

    def _without_key(self, text: str) -> str:
        """``text`` with the exact API key replaced by ``***`` (an endpoint that echoes
        the key must not get it into summaries, the cache or the workspace)."""
        key = self.settings.resolved_api_key()
        return text.replace(key, "***") if key and len(key) >= 8 and key in text else text

    def _describe(self, err: Exception) -> str:
        import openai

        if isinstance(err, openai.APITimeoutError):
            return f"request timed out after {self.settings.timeout:g} s"
        if isinstance(err, openai.APIConnectionError):
            cause = err.__cause__ or err
            return "connection error: " + self._scrub(f"{type(cause).__name__}: {cause}")[:200]
        if isinstance(err, openai.APIStatusError):
            return f"HTTP {err.status_code}: " + self._scrub(str(getattr(err, "message", "") or err))[:200]
        return self._scrub(f"{type(err).__name__}: {err}")[:200]

    def _retryable(self, err: Exception) -> bool:
        import openai

        if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
            return True
        if isinstance(err, openai.APIStatusError):
            return err.status_code in _RETRY_STATUS or err.status_code >= 500
        return False

    def _delay(self, attempt: int, err: Exception) -> float:
        """Seconds to wait before retry ``attempt + 1`` (Retry-After honoured, capped)."""
        headers = getattr(getattr(err, "response", None), "headers", None)
        if headers is not None:
            for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
                val = headers.get(name)
                if val is not None:
                    try:
                        return max(0.0, min(float(val) / div, self.backoff_max))
                    except ValueError:
                        pass
        return min(self.backoff_max, self.backoff_base * (2**attempt) * (0.5 + self._rng.random()))

    @staticmethod
    def _estimate_tokens(messages: Sequence[dict[str, str]]) -> int:
        return sum(len(m.get("content") or "") for m in messages) // 4 + 8 * len(messages)

    def _reserve(self, estimate: int) -> None:
        """Count one request against the budget before it is sent; raise when over budget."""
        s = self.settings
        with self._budget_lock:
            if s.max_calls is not None and self._calls_sent + 1 > s.max_calls:
                raise LLMBudgetExceeded(f"call budget spent: {self._calls_sent} of {s.max_calls} calls used")
            if s.max_tokens_budget is not None and self._tokens_used + estimate > s.max_tokens_budget:
                raise LLMBudgetExceeded(
                    f"token budget spent: {self._tokens_used} of {s.max_tokens_budget} tokens used, "
                    f"next request needs about {estimate}"
                )
            self._calls_sent += 1
            self._tokens_used += estimate

    def _unreserve(self) -> None:
        """Give back the call counted by :meth:`_reserve` for a request that never
        reached the server (its tokens were already given back by :meth:`_settle`)."""
        with self._budget_lock:
            self._calls_sent = max(0, self._calls_sent - 1)

    @staticmethod
    def _never_reached(err: Exception) -> bool:
        """True for a connection error (refused, DNS, reset before a reply) that is not a
        timeout: the request got no response and is not counted as a call. A timeout
        may have been processed (and billed) by the server, so it still counts."""
        try:
            import openai
        except ImportError:  # pragma: no cover - install problem
            return False
        return isinstance(err, openai.APIConnectionError) and not isinstance(err, openai.APITimeoutError)

    def _settle(self, estimate: int, actual: int) -> None:
        with self._budget_lock:
            self._tokens_used += actual - estimate

    def _record(self, task: str, doc_id: str | None, pt: int, ct: int, *, calls: int = 1, cached: bool = False) -> None:
        cost = None if cached else estimate_cost(self.model, pt, ct)
        if cached:
            cost = 0.0
        self.usage.record(task, doc_id, calls=calls, prompt_tokens=pt, completion_tokens=ct, cost=cost, cached=cached)
        if self.cache is not None:
            self.cache.log_usage(
                task, doc_id, self.model, calls=calls, prompt_tokens=pt, completion_tokens=ct, cost=cost, cached=cached
            )

    def _send(self, task: str, doc_id: str | None, messages: list[dict[str, str]]) -> tuple[str, int]:
        """One chat completion in JSON mode with retries; returns (content, tokens).

        Raises:
            LLMBudgetExceeded: before a request that would exceed the budget.
            LLMError: after the retries, or at once on a non-retryable HTTP error.
        """
        client = self._get_client()
        estimate = self._estimate_tokens(messages)
        attempts = self.settings.max_retries + 1
        last: Exception | None = None
        for attempt in range(attempts):
            self._reserve(estimate)
            try:
                with self._sem:
                    resp = client.chat.completions.create(
                        model=self.model,
                        messages=messages,
                        temperature=self.settings.temperature,
                        response_format={"type": "json_object"},
                    )
            except Exception as err:  # noqa: BLE001 - classified below, re-raised as LLMError
                self._settle(estimate, 0)
                if self._never_reached(err):
                    self._unreserve()  # no connection: not a call, not counted against the budget
                else:
                    self._record(task, doc_id, 0, 0)
                if not self._is_openai_error(err):
                    raise
                if not self._retryable(err):
                    raise LLMError(f"{task}: {self.model} request failed: {self._describe(err)}") from None
                last = err
                if attempt + 1 < attempts:
                    delay = self._delay(attempt, err)
                    logger.warning(
                        "%s: %s (attempt %d/%d), retrying in %.2f s", task, self._describe(err), attempt + 1, attempts, delay
                    )
                    time.sleep(delay)
                continue
            usage = getattr(resp, "usage", None)
            pt = int(getattr(usage, "prompt_tokens", 0) or 0)
            ct = int(getattr(usage, "completion_tokens", 0) or 0)
            self._settle(estimate, pt + ct)
            self._record(task, doc_id, pt, ct)
            try:
                content = resp.choices[0].message.content or ""
            except (AttributeError, IndexError, TypeError):
                content = ""
            return self._without_key(content), pt + ct
        assert last is not None
        raise LLMError(
            f"{task}: {self.model} failed after {attempts} attempt(s): {self._describe(last)}"
        ) from None

    @staticmethod
    def _is_openai_error(err: Exception) -> bool:
        import openai

        return isinstance(err, openai.OpenAIError)

    def _json_task(
        self,
        task: str,
        doc_id: str | None,
        messages: list[dict[str, str]],
        payload: Any,
        validate: Callable[[Any], T],
    ) -> tuple[T, int]:
        """Cached, validated, once-repaired structured call; returns (result, tokens spent)."""
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
        content, tokens = self._send(task, doc_id, messages)
        try:
            obj = json.loads(_strip_fences(content))
            result = validate(obj)
        except (ValueError, ValidationError) as err:
            why = self._scrub(_short_error(err))
            logger.info("%s: invalid reply (%s), one repair attempt", task, why)
            repair = [*messages, {"role": "assistant", "content": content[:4000]}, prompts.repair_message(why, spec)]
            content2, tokens2 = self._send(task, doc_id, repair)
            tokens += tokens2
            try:
                obj = json.loads(_strip_fences(content2))
                result = validate(obj)
            except (ValueError, ValidationError) as err2:
                raise LLMResponseError(
                    f"{task}: {self.model} reply did not match the schema after one repair: "
                    + self._scrub(_short_error(err2))
                ) from None
        if self.cache is not None:
            self.cache.put(key, task, self.model, spec.version, obj)
        return result, tokens

    # ------------------------------------------------------------------ tasks
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
        given = {e.evidence_id for e in evidence}

        def validate(obj: Any) -> prompts.DecisionOut:
            return prompts.DecisionOut.model_validate(obj)

        try:
            out, tokens = self._json_task(
                "decide",
                doc_id,
                prompts.decide_messages(condition, evidence),
                {"condition": condition, "evidence": _evidence_payload(evidence)},
                validate,
            )
        except LLMError as e:
            return Decision(None, "", [], 0.0, 0, self.backend_name, error=str(e))
        ids = [i for i in dict.fromkeys(out.evidence_ids) if i in given]
        conf = out.confidence if out.confidence is not None else (1.0 if out.decision else 0.0)
        return Decision(
            decision=bool(out.decision),
            rationale=truncate_words(normalize_ws(out.rationale), 80) or ("satisfied" if out.decision else "not satisfied"),
            evidence_ids=ids,
            score=float(conf),
            tokens=int(tokens),
            backend=self.backend_name,
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

        Retries transient errors only before the first piece arrived; an HTTP 400
        (endpoints without ``stream_options`` support) is retried once without usage
        reporting. A connection dropped mid-stream, or a stream that ends without a
        finish reason, raises :class:`LLMError` (never a raw transport exception). The
        full text is cached.

        Raises:
            LLMError, LLMBudgetExceeded.
        """
        if not evidence:
            yield NO_EVIDENCE_ANSWER
            return
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
        client = self._get_client()
        estimate = self._estimate_tokens(messages)
        attempts = self.settings.max_retries + 1
        attempt = 0
        include_usage = True
        while True:
            self._reserve(estimate)
            parts: list[str] = []
            finish = None
            pt = ct = 0
            extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
            try:
                with self._sem:
                    stream = client.chat.completions.create(
                        model=self.model,
                        messages=messages,
                        temperature=self.settings.temperature,
                        stream=True,
                        **extra,
                    )
                    try:
                        for chunk in stream:
                            usage = getattr(chunk, "usage", None)
                            if usage is not None:
                                pt = int(getattr(usage, "prompt_tokens", 0) or 0)
                                ct = int(getattr(usage, "completion_tokens", 0) or 0)
                            for choice in chunk.choices or []:
                                piece = getattr(choice.delta, "content", None) if choice.delta else None
                                if piece:
                                    parts.append(piece)
                                    yield piece
                                if choice.finish_reason:
                                    finish = choice.finish_reason
                    finally:
                        stream.close()
            except Exception as err:  # noqa: BLE001 - classified below, re-raised as LLMError
                self._settle(estimate, 0)
                if not parts and self._never_reached(err):
                    self._unreserve()  # no connection: not a call, not counted against the budget
                else:
                    self._record(task, doc_id, 0, 0)
                if not self._is_openai_error(err):
                    raise
                if not parts and include_usage and getattr(err, "status_code", None) == 400:
                    include_usage = False  # endpoint without stream_options support: ask again without
                    continue
                if parts or not self._retryable(err) or attempt + 1 >= attempts:
                    where = "mid-stream" if parts else "before the first token"
                    raise LLMError(f"{task}: {self.model} stream failed {where}: {self._describe(err)}") from None
                time.sleep(self._delay(attempt, err))
                attempt += 1
                continue
            self._settle(estimate, pt + ct)
            self._record(task, doc_id, pt, ct)
            if finish is None:
                raise LLMError(f"{task}: {self.model} stream ended before the model finished")
            if self.cache is not None:
                self.cache.put(key, task, self.model, spec.version, {"text": self._without_key("".join(parts))})
            return

    # ------------------------------------------------------------------ batch helpers
    def map_threads(self, fn: Callable[[Any], T], items: Sequence[Any]) -> list[T]:
        """Apply ``fn`` to ``items`` on up to ``max_concurrency`` threads, order kept.

        Exceptions propagate (the first one raised in item order).
        """
        if len(items) <= 1 or self.max_concurrency <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(fn, items))


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
