"""The OpenAI-compatible LLM backend's tasks (OpenAI, Azure, Ollama, vLLM, LM Studio):
summaries, anchor-pair labels, paragraph grouping, filter decisions and answers, each a
structured request validated against its schema (:mod:`docmaster_core.llm.prompts`).

Transport (client, retries, budget, usage, cache, structured outputs, key scrubbing)
is :class:`~docmaster_core.llm.transport.OpenAITransport`; see its module docstring.
The API key is passed to the client only; it is never logged, never put in an
exception message and never stored in the cache.
"""
from __future__ import annotations

import re
import time
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import LLMError, LLMUnreachable
from ..model import Answer, Citation, Decision, Evidence
from . import prompts
from ..text.words import normalize_ws, split_sentences, truncate_words
from .cache import make_key
from .transport import PRICES_PER_MTOK, OpenAITransport, estimate_cost

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



class OpenAILLM(OpenAITransport):
    """The LLM facade over an OpenAI-compatible Chat Completions endpoint: the typed
    tasks of :class:`~docmaster_core.llm.base.LLM` on :class:`OpenAITransport`.

    Raises:
        ConfigError: on first use when no API key is available for api.openai.com.
    """

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
        if self._unreachable:
            raise LLMUnreachable(self._unreachable)
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
                unreachable = None if parts else self._unreachable_reason(err)
                if unreachable:
                    self._unreachable = unreachable
                    raise LLMUnreachable(unreachable) from None
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
