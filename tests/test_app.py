"""App tests: every page of the Streamlit app driven with ``streamlit.testing.v1.AppTest``
on a small workspace ingested through the Upload page, plus the glue in ``ui/``.

The workspace root, the workspace and ``DOCMASTER_UI_UMAP=off`` (PCA only: a cold UMAP
compiles numba for ~30 s) are passed through the environment, as a deployment would.
"""
from __future__ import annotations

import csv
import io
import json
import re

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from docmaster_core.errors import ConfigError  # noqa: E402
from ui.filtering import deciding, doc_match, evidence_list, run_cut  # noqa: E402
from ui.plain import GROUPS_LABEL, PASSAGES_LABEL, TOPICS_LABEL  # noqa: E402

from support.app import APP, TIMEOUT, collection_table, doc_key, make_pdf, open_app, page_texts, run_app  # noqa: E402,F401



# ------------------------------------------------------------------------ pages
def test_upload_ingests_lists_collection_and_failures(app_env, app_uploaded):
    at = app_uploaded
    coll = collection_table(at)
    assert sorted(coll["file"]) == ["retrieval_paper.pdf", "storage.pdf"]
    assert (coll["pages"] == 2).all() and (coll["texts"] > 0).all()
    assert set(coll["status"]) == {"indexed"}
    errors = " ".join(e.value for e in at.error)
    assert "broken" in errors  # the failure is listed with its reason; the others went on
    uploads = app_env["ws"] / "uploads"
    assert sorted(p.name for p in uploads.iterdir()) == ["broken.pdf", "retrieval_paper.pdf", "storage.pdf"]
    assert not (app_env["root"] / "retrieval paper.pdf").exists()
    # the uploader starts empty after the ingest (no "Ingest 3 files" left to press again),
    # and the last upload says what happened in one line
    assert not [b for b in at.button if b.key == "w_upload_ingest"]
    assert any(c.value.startswith("2 of 3 files added to the workspace; 1 failed") for c in at.caption)


def test_reopened_workspace_shows_collection_at_once(app_uploaded, app_env):
    from docmaster_core.store.workspace import Workspace

    at = open_app("pages/upload.py")
    coll = collection_table(at)
    assert len(coll) == 2
    newest_first = sorted(Workspace(app_env["ws"], create=False).documents(), key=lambda d: -d.added_at)
    assert list(coll["doc_id"]) == [d.doc_id for d in newest_first]  # the newest documents first
    assert set(coll["title"]) == {"Dense Retrieval for Open-Domain QA", "A Distributed Storage System"}
    assert "LLM: offline (extractive)" in page_texts(at)


def test_workspace_outside_root_is_refused(app_uploaded, app_env):
    at = open_app("pages/upload.py")
    at.text_input(key="w_upload_workspace").set_value("/etc")
    run_app(at)
    assert any("outside the allowed root" in e.value for e in at.error)
    assert at.session_state["dm_workspace"] == str(app_env["ws"].resolve())


def test_a_reload_keeps_the_chosen_workspace(app_uploaded, app_env):
    """A reload starts a new session with the page's address: the workspace the user chose comes back
    from it (a newcomer reloaded and every page said the workspace was empty); a folder outside the
    root, or one that is no workspace, is ignored."""
    from docmaster_core.store.workspace import Workspace

    Workspace(app_env["root"] / "other").close()
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    run_app(at)
    assert at.session_state["dm_workspace"] == str(app_env["ws"].resolve())
    assert at.query_params["workspace"] in ("ws", ["ws"])  # the address carries the workspace
    for name, want in (("other", app_env["root"] / "other"), ("/etc", app_env["ws"]), ("missing", app_env["ws"])):
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        at.query_params["workspace"] = name
        run_app(at)
        assert at.session_state["dm_workspace"] == str(want.resolve()), name


def test_tree_page_select_node_shows_content_page_and_embedding(app_uploaded):
    at = open_app("pages/tree.py")
    sb = at.selectbox(key=doc_key(at, "w_tree_node"))
    assert len(sb.options) >= 6
    table_opts = [o for o in sb.options if "▦" in o]
    target = table_opts[0] if table_opts else [o for o in sb.options if "¶" in o][0]
    sb.select(target)
    run_app(at)
    node_id = at.session_state[doc_key(at, "w_tree_node")]
    assert any(f"#{node_id}" in s.value for s in at.subheader)
    if table_opts:
        assert any(len(df.value) >= 2 for df in at.dataframe)  # the table's rows as a table
    # lazy tabs: the page image and the embedding are drawn only when their tab is open
    tabs = doc_key(at, "w_tree_tabs")
    assert len(at.image) == 0 and not any(m.label == "dimensions" for m in at.metric)
    at.session_state[tabs] = "Page region"
    run_app(at)
    assert len(at.image) >= 1  # page rendered with the node's box
    at.session_state[tabs] = "Embedding"
    run_app(at)
    assert any(m.label == "dimensions" and m.value == "384" for m in at.metric)
    at.toggle(key="w_tree_full_vector").set_value(True)
    run_app(at)
    assert any(c.language == "json" and c.value.startswith("[") for c in at.code)


def test_hyperedge_page_select_hyperedge(app_uploaded):
    at = open_app("pages/hyperedges.py")
    sb = at.selectbox(key=doc_key(at, "w_he_select"))
    last = sb.options[-1]
    sb.select(last)
    run_app(at)
    he = at.session_state[doc_key(at, "w_he_select")]
    assert any(m.value.startswith(f"**Group {he}**") for m in at.markdown)
    assert any(m.label == GROUPS_LABEL and int(m.value) == len(sb.options) for m in at.metric)
    # the members' page is rendered only once its expander is opened
    assert len(at.image) == 0
    at.session_state[doc_key(at, "w_he_region")] = True
    run_app(at)
    assert len(at.image) == 1


def test_hyperedge_legend_lists_every_colour_drawn(app_uploaded):
    """The legend said "1 topics drawn" while the dots had 3 colours: with the passages shown, it
    lists their topics too, and its count is its number of rows."""
    at = open_app("pages/hyperedges.py")
    at.radio(key=doc_key(at, "w_he_view")).set_value("all")
    at.toggle(key=doc_key(at, "w_he_passages")).set_value(True)
    run_app(at)
    title = next(e.label for e in at.expander if e.label.startswith("Topic colours"))
    n = int(re.search(r"\((\d+) drawn\)", title).group(1))
    legend = next(df.value for df in at.dataframe if "passages" in getattr(df.value, "columns", [])
                  and "colour" in df.value.columns)
    assert len(legend) == n and int(legend["groups"].sum()) == len(at.selectbox(key=doc_key(at, "w_he_select")).options)
    # the selected group's passages: each one's topic is a legend row
    words = [str(t).split(" · ", 1)[-1] for t in legend["topic"]]
    plain = [e.label.replace("\\", "") for e in at.expander]  # the labels are Markdown-escaped
    members = [re.search(r"topic: (.*?) · ", x).group(1) for x in plain if re.match(r"#\d+ · p\. ", x)]
    assert members and all(m == "no topic" and "no topic" in legend["topic"].tolist() or
                           any(w.startswith(m) for w in words) for m in members), (members, words)


def test_one_section_view_draws_the_selected_groups_partners_of_other_sections(app_uploaded):
    """One section drawn alone showed "0 of 64 links between groups drawn" (a newcomer): the page's main
    idea, groups of different sections on one topic, was not in its default view. The selected group's
    most similar groups of other sections are drawn beside its section, with their links; none when
    the links slider is at 0; a click on one of them brings its own section."""
    at = open_app("pages/hyperedges.py")
    sel = at.session_state[doc_key(at, "w_he_select")]
    at.radio(key=doc_key(at, "w_he_view")).set_value("section")
    run_app(at)

    def drawn() -> tuple[int, int, int]:
        line = next(c.value for c in at.caption if "links between groups drawn" in c.value)
        n, total = map(int, re.match(r"(\d+) of (\d+)", line).groups())
        beside = re.search(r"and (\d+) of the selected Group \d+'s \d+ most similar groups of other sections", line)
        return n, total, int(beside.group(1)) if beside else 0

    partners = any("similarity" in getattr(df.value, "columns", []) for df in at.dataframe)
    if not partners:
        pytest.skip("the selected group of this fixture has no partner in another section")
    # the sections narrower than the whole document that hold the selected group: in the narrowest, its
    # partners of other sections are drawn beside it
    seen = []
    for sid in [o for o in at.selectbox(key=doc_key(at, "w_he_scope_section")).options if o != 0]:
        at.selectbox(key=doc_key(at, "w_he_scope_section")).set_value(sid)
        run_app(at)
        groups_line = next(c.value for c in at.caption if c.value.startswith("Groups drawn:"))
        if "outside the drawn part" not in groups_line:
            seen.append(drawn())
    assert seen, "no section holds the selected group"
    n, total, beside = max(seen, key=lambda t: t[2])
    assert beside >= 1 and n >= beside, seen
    at.slider(key="w_he_top_links").set_value(0)
    run_app(at)
    assert drawn() == (0, total, 0)
    assert at.session_state[doc_key(at, "w_he_select")] == sel


def test_hyperedge_page_builds_a_missing_index(app_uploaded):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_index_params"] = {"alpha": 0.5, "k": 5, "K": 3, "w": 2.0}
    run_app(at)
    at.switch_page("pages/hyperedges.py")
    run_app(at)
    assert any("No semantic index" in i.value for i in at.info)
    at.button(key="w_he_build").click()
    run_app(at)
    assert at.selectbox(key=doc_key(at, "w_he_select")).options
    assert any(m.label == TOPICS_LABEL and int(m.value) <= 3 for m in at.metric)


def test_a_reload_of_the_clusters_page_keeps_its_settings(app_uploaded):
    """A reload starts a new session with the page's address: K, alpha and the scope come back from it
    (a newcomer found K back at 8 after a reload); values outside the sliders' ranges are ignored."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    run_app(at)
    at.switch_page("pages/clusters.py")
    at.query_params.update({"K": "3", "alpha": "0.4", "k": "500", "w": "inf", "scope": "collection"})
    run_app(at)
    assert at.slider(key="w_clusters_K").value == 3 and at.slider(key="w_clusters_alpha").value == 0.4
    assert at.slider(key="w_clusters_k").value == 20  # 500 is out of range: the default stays
    assert at.slider(key="w_clusters_w").value == 1.0  # and "inf" is no value
    assert at.radio(key="w_clusters_mode").value == "collection"
    assert at.session_state["dm_index_params"]["K"] == 3  # the Hyper-edge graph follows the same settings


def test_a_reload_of_the_clusters_page_draws_the_same_topic_numbers(app_uploaded, app_env):
    """Topic numbers (and colours) matched across slider moves are kept over a reload, which starts a new
    session (a newcomer saw them change): the numbers drawn last are saved in the workspace and drawn again
    for the same clustering; a saved numbering that no longer fits (another K) is not used."""
    from docmaster_core.pipeline import DocMaster
    from ui.indexing import TOPIC_NUMBERS_PREFERENCE

    key, view = "dm_cluster_names_collection", "collection"
    at = open_app("pages/clusters.py")
    at.radio(key="w_clusters_mode").set_value("collection")
    run_app(at)
    at.slider(key="w_clusters_K").set_value(3)
    run_app(at)
    first = dict(at.session_state[key])
    assert len(set(first.values())) >= 2, first
    dm = DocMaster(app_env["ws"])
    saved = dm.preference(TOPIC_NUMBERS_PREFERENCE + view)
    assert saved["params"][2] == 3 and sorted(i for _, i in saved["ids"]) == sorted(set(first.values()))
    # the workspace's numbering, reversed, is what the next session draws (label order would be drawn without it)
    top = max(i for _, i in saved["ids"])
    dm.save_preference(TOPIC_NUMBERS_PREFERENCE + view, {**saved, "ids": [[c, top - i] for c, i in saved["ids"]]})

    def reload(K: str) -> AppTest:
        again = AppTest.from_file(APP, default_timeout=TIMEOUT)
        run_app(again)
        again.switch_page("pages/clusters.py")
        again.query_params.update({"K": K, "scope": "collection"})
        return run_app(again)

    assert dict(reload("3").session_state[key]) == {k: top - i for k, i in first.items()}
    # another K: the saved numbering does not fit, the clusters are numbered afresh and saved
    assert set(dict(reload("2").session_state[key]).values()) <= {0, 1}
    assert dm.preference(TOPIC_NUMBERS_PREFERENCE + view)["params"][2] == 2


def test_cluster_sliders_rebuild_and_collection_mode(app_uploaded):
    at = open_app("pages/clusters.py")
    first = {m.label: m.value for m in at.metric}
    at.slider(key="w_clusters_K").set_value(2)
    run_app(at)
    now = {m.label: m.value for m in at.metric}
    assert int(now[TOPICS_LABEL]) <= 2 and now[PASSAGES_LABEL] == first[PASSAGES_LABEL]
    assert at.session_state["dm_index_params"]["K"] == 2
    # the page says where the settings apply and how long they hold (a newcomer asked); its address carries them
    assert any("a reload of this page keeps them" in c.value and "starts at 8 topics" in c.value for c in at.caption)
    assert at.query_params["K"] == ["2"] or at.query_params["K"] == "2"
    at.slider(key="w_clusters_alpha").set_value(0.3)
    run_app(at)
    at.radio(key="w_clusters_mode").set_value("collection")
    run_app(at)
    coll = {m.label: m.value for m in at.metric}
    assert int(coll[PASSAGES_LABEL]) > int(first[PASSAGES_LABEL])


def test_filter_two_configurations_and_export(app_uploaded, app_env):
    at = open_app("pages/filter.py")
    at.text_area(key="w_filter_condition").set_value("The paper evaluates dense passage retrieval on question answering benchmarks.")
    run_app(at)
    at.multiselect(key="w_filter_B_strategies").set_value(["semantic", "flat"])
    run_app(at)
    at.selectbox(key="w_filter_B_decide_by").set_value("flat")
    run_app(at)
    at.button(key="w_filter_run").click()
    run_app(at)
    runs = at.session_state["dm_filter_runs"]
    assert set(runs) == {"A", "B"}
    for name, run in runs.items():
        assert len(run["documents"]) == 2
        for d in run["documents"]:
            assert doc_match(run, d) in (True, False) and evidence_list(d), name
    assert set(runs["A"]["documents"][0]["decisions"]) == {"tree", "semantic", "hyperedge", "combined"}
    assert set(runs["B"]["documents"][0]["decisions"]) == {"semantic", "flat"}
    keep_a = {d["file"]: doc_match(runs["A"], d) for d in runs["A"]["documents"]}
    assert keep_a["retrieval_paper.pdf"] is True
    assert any("Differences between A and B" in s.value for s in at.subheader)
    assert len(at.download_button) == 2
    # the evidence of the chosen document, with its page image and boxes
    assert len(at.image) >= 1
    # the page image shows one strategy's boxes at a time, the deciding strategy first
    boxes = at.radio(key="w_filter_boxes")
    assert boxes.value == at.session_state["dm_filter_runs"][at.radio(key="w_filter_which").value]["strategy"]
    other = next(o for o in boxes.options if o != boxes.value)
    boxes.set_value(other)
    run_app(at)
    assert at.radio(key="w_filter_boxes").value == other and len(at.image) >= 1
    # highlight for the tree explorer
    assert at.session_state["dm_highlight"]
    # what "sure" and "uncertain" mean is said under the tables (a newcomer asked)
    assert any("Certainty: \"sure\": the score is far from the cut" in c.value for c in at.caption)
    # ... once, under both tables (a newcomer read the same 150 words under A and again under B)
    assert sum("How to read the tables" in c.value for c in at.caption) == 1
    # issue 36: the form and the tables in plain words (a newcomer read "Ways of finding the evidence", "Weight of
    # deep sections", "below the similarity floor", "ways saying yes" and the evidence codes "[T2]" as jargon)
    shown = [*(w.label for w in [*at.multiselect, *at.slider, *at.selectbox]), *page_texts(at)]
    assert not [t for t in shown if re.search(r"Ways of finding|Weight of deep|similarity floor|ways saying yes", t)]
    assert at.multiselect(key="w_filter_A_strategies").format_func("tree") == "tree: walks down the sections"
    for run in runs.values():
        for d in run["documents"]:
            why = deciding(run, d).get("rationale", "")
            assert why and not re.search(r"\[[A-Z]\d+\]", why), why  # "p. 3 (evidence T2)", no bare "[T2] p.3"
    # each run says which configuration made it, and the Chat page says it answers from A's run
    from docmaster_core.pipeline import DocMaster
    from docmaster_core.store.workspace import Workspace
    from ui.citations import filter_run_words

    saved = Workspace(app_env["ws"], create=False).runs("filter")
    assert [r["params"].get("app_configuration") for r in saved[:2]] == ["A", "B"]  # A is saved last
    dm = DocMaster(app_env["ws"])
    assert filter_run_words(dm, saved[0]["run_id"]).startswith(
        f"filter run #{saved[0]['run_id']} (configuration A of the Filter page")


def test_app_and_cli_give_the_same_decisions_and_answers(app_uploaded, app_env, capsys):
    """One engine: the Filter page's configuration A and ``docmaster filter`` (same
    default parameters), and the Chat page and ``docmaster ask``, agree exactly."""
    from docmaster_core import cli

    cond = "The paper measures read latency of a distributed storage system."
    at = open_app("pages/filter.py")
    at.text_area(key="w_filter_condition").set_value(cond)
    run_app(at)
    at.button(key="w_filter_run").click()
    run_app(at)
    app_run = at.session_state["dm_filter_runs"]["A"]
    assert cli.main(["filter", cond, "--workspace", str(app_env["ws"]), "--json", "--no-save"]) == 0
    cli_run = json.loads(capsys.readouterr().out)
    by_file = {d["file"]: d for d in cli_run["documents"]}
    assert sorted(by_file) == sorted(d["file"] for d in app_run["documents"])
    for d in app_run["documents"]:
        c = by_file[d["file"]]["decisions"]
        assert {s: v["decision"] for s, v in d["decisions"].items()} == {s: v["decision"] for s, v in c.items()}, d["file"]
        assert deciding(app_run, d)["evidence_score"] == c["combined"]["evidence_score"]
        assert deciding(app_run, d)["rank"] == c["combined"]["rank"]
    assert any(doc_match(app_run, d) for d in app_run["documents"])
    assert not all(doc_match(app_run, d) for d in app_run["documents"])

    question = "Which benchmarks are used to evaluate retrieval accuracy?"
    at = open_app("pages/chat.py")
    at.radio(key="w_chat_scope").set_value("all")
    run_app(at)
    at.chat_input(key="w_chat_input").set_value(question)
    run_app(at)
    app_answer = at.session_state["dm_chat_history"][-1]
    # the conversation is the chat log, not a saved run per question: filter run numbers do not jump by the
    # questions asked between two runs (newcomers 15 and 16 asked why "A became run #16")
    from docmaster_core.store.workspace import Workspace

    saved_ws = Workspace(app_env["ws"], create=False)
    assert saved_ws.runs("ask") == [] and saved_ws.runs("filter")
    files = [d["file"] for d in app_run["documents"]]
    assert cli.main(["ask", question, "--workspace", str(app_env["ws"]), "--docs", *files, "--json"]) == 0
    cli_answer = json.loads(capsys.readouterr().out)["answer"]
    assert app_answer["text"] == cli_answer["text"]
    key = ("doc_id", "node_id", "page", "quote")
    assert [tuple(c[k] for k in key) for c in app_answer["citations"]] == \
        [tuple(c[k] for k in key) for c in cli_answer["citations"]]


def test_filter_cut_slider_moves_kept_set_without_new_retrieval(app_uploaded, app_env, monkeypatch):
    """The Filter page lists the documents ranked by evidence score with the suggested
    cut; moving the cut slider changes "kept N of M" and the decisions, and runs no new
    retrieval (no engine call, no new saved run)."""
    import docmaster_core.filtering.run as core_filter
    from docmaster_core.store.workspace import Workspace

    at = open_app("pages/filter.py")
    at.text_area(key="w_filter_condition").set_value("Does the paper describe a distributed storage system?")
    run_app(at)
    at.button(key="w_filter_run").click()
    run_app(at)
    run_a = at.session_state["dm_filter_runs"]["A"]
    ranks = sorted(deciding(run_a, d)["rank"] for d in run_a["documents"])
    assert ranks == [1, 2] and all(deciding(run_a, d)["evidence_score"] is not None for d in run_a["documents"])
    top = next(d for d in run_a["documents"] if deciding(run_a, d)["rank"] == 1)
    assert top["file"].startswith("storage")
    suggested = run_cut(run_a)["kept"]
    assert any(f"**kept {suggested} of 2 documents**" in m.value for m in at.markdown)

    n_runs = len(Workspace(app_env["ws"], create=False).runs("filter"))
    calls = []
    monkeypatch.setattr(core_filter, "collect_evidence", lambda *a, **k: calls.append(1) or (_ for _ in ()).throw(
        AssertionError("retrieval must not run when the cut moves")))
    key = f"w_filter_cut_A_{run_a['run_id']}"
    assert at.slider(key=key).value == suggested
    for k in (0, 2):
        at.slider(key=key).set_value(k)
        run_app(at)
        assert any(f"**kept {k} of 2 documents**" in m.value for m in at.markdown), k
        assert calls == []
    assert len(Workspace(app_env["ws"], create=False).runs("filter")) == n_runs
    # at 2 every document is kept; the stored run itself is unchanged
    assert run_cut(at.session_state["dm_filter_runs"]["A"])["kept"] == suggested
    assert "moved_to" not in run_cut(at.session_state["dm_filter_runs"]["A"])


def test_filter_condition_restored_in_a_new_session(app_uploaded, app_env):
    """A browser reload starts a new session: the Filter page shows the condition of the
    workspace's last saved filter run instead of an empty box."""
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(app_env["ws"], create=False)
    last = ws.last_run_params("filter")
    assert last is not None, "the filter test above saves its runs"
    saved = {r["params"]["app_configuration"]: r for r in ws.runs("filter")[:2]}
    assert set(saved) == {"A", "B"} and saved["A"]["run_id"] == last[0]
    at = open_app("pages/filter.py")
    assert at.text_area(key="w_filter_condition").value == last[1]["condition"]
    assert any(f"#{last[0]}" in t and "restored" in t for t in page_texts(at))
    # ... and the results of that press of "Run filter": both tables, their evidence whole
    shown = at.session_state["dm_filter_runs"]
    assert {n: r["run_id"] for n, r in shown.items()} == {n: r["run_id"] for n, r in saved.items()}
    texts = [e["text"] for d in shown["A"]["documents"] for es in d["evidence"].values() for e in es]
    assert texts and not any(t.endswith(" ...") for t in texts) and "evidence_text_chars" not in shown["A"]
    assert sum("kept" in m.value and "of 2 documents" in m.value for m in at.markdown) == 2
    # once edited, the user's text is kept (no second restore in the same session)
    at.text_area(key="w_filter_condition").set_value("Does the paper describe a storage system?")
    run_app(at)
    at.switch_page("pages/upload.py")
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    assert at.text_area(key="w_filter_condition").value == "Does the paper describe a storage system?"


def test_chat_question_gives_cited_answer(app_uploaded):
    at = open_app("pages/chat.py")
    at.radio(key="w_chat_scope").set_value("all")
    run_app(at)
    at.chat_input(key="w_chat_input").set_value("Which benchmarks are used to evaluate retrieval accuracy?")
    run_app(at)
    hist = at.session_state["dm_chat_history"]
    assert [m["role"] for m in hist] == ["user", "assistant"]
    cites = hist[1]["citations"]
    assert cites and all(c["text"] and c["page"] >= 1 for c in cites)
    assert any(t.startswith("[E") for t in page_texts(at))
    # the conversation is kept for the session
    at.switch_page("pages/upload.py")
    run_app(at)
    at.switch_page("pages/chat.py")
    run_app(at)
    assert len(at.chat_message) == 2


def test_an_opened_source_shows_its_passage_once_with_the_quote_in_bold():
    """Chat's "Open a source" printed the quote and then the passage holding it (a
    newcomer read the clause twice): now the passage once, the quoted words in bold;
    document text stays escaped (no markup of its own)."""
    from ui.citations import passage_with_quote

    text = "The term is one year.\nIt renews *automatically* unless either party objects."
    md = passage_with_quote(text, "It renews *automatically* unless either party objects.")
    assert md.count("renews") == 1
    assert md.endswith("**It renews \\*automatically\\* unless either party objects\\.**")
    assert md.startswith("The term is one year\\.")
    assert passage_with_quote(text, "not in it").startswith(r"Quote\: not in it")
    assert passage_with_quote("", "") == "(passage text unavailable)"


def test_chat_document_chooser_filters_by_file_name_and_offers_no_select_all(app_uploaded):
    """Issue 35 item 4: in "documents I choose", typing part of a file name lists the files
    that contain it ("contains" filtering) and there is no "select all matches" action,
    so typing a name and pressing Enter cannot select every match; choosing one file asks
    over that file alone."""
    at = open_app("pages/chat.py")
    at.radio(key="w_chat_scope").set_value("chosen")
    run_app(at)
    ms = at.multiselect(key="w_chat_docs")
    assert not ms.proto.select_all  # no "Select all N matches" option
    assert "FILTER_MODE_CONTAINS" in str(ms.proto)  # an exact substring of the file name, not a fuzzy match
    assert ms.value == []  # nothing chosen until the user picks a file
    doc_id = _doc_id_of(at, ms.options[0])
    ms.set_value([doc_id])
    run_app(at)
    assert at.multiselect(key="w_chat_docs").value == [doc_id]
    assert any("1 chosen document" in t for t in page_texts(at))


def _doc_id_of(at, label: str) -> str:
    """The document id whose file name the chooser shows as ``label``."""
    from docmaster_core.store.workspace import Workspace

    for d in Workspace(at.session_state["dm_workspace"]).documents():
        if d.file_name == label:
            return d.doc_id
    raise AssertionError(label)


def test_every_page_runs_without_exception(app_uploaded):
    at = open_app()
    for page in ("upload", "tree", "hyperedges", "clusters", "filter", "chat"):
        at.switch_page(f"pages/{page}.py")
        run_app(at)
        assert "LLM: offline (extractive)" in page_texts(at), page


def test_pages_on_an_empty_workspace_point_to_upload(app_env, monkeypatch):
    monkeypatch.setenv("DOCMASTER_WORKSPACE", str(app_env["root"] / "empty"))
    at = open_app()
    for page in ("tree", "hyperedges", "clusters", "filter", "chat"):
        at.switch_page(f"pages/{page}.py")
        run_app(at)
        assert any("No documents in this workspace yet" in t for t in page_texts(at)), page
        assert not at.button, page  # the page stopped before drawing its controls


def _sidebar_only():
    from ui.sidebar import render_sidebar
    from ui.state import init_state

    init_state()
    render_sidebar()


def test_sidebar_backend_label_and_api_key_never_shown(app_uploaded, monkeypatch):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    sb = AppTest.from_function(_sidebar_only, default_timeout=TIMEOUT)
    run_app(sb)
    assert "LLM: offline (extractive)" in page_texts(sb)
    sb.radio(key="w_sidebar_backend").set_value("openai")
    run_app(sb)
    sb.text_input(key="w_sidebar_base_url").set_value("http://user:pw@localhost:11434/v1?token=abc")
    run_app(sb)
    texts = page_texts(sb) + [str(e.value) for e in sb.text_input]
    assert "LLM: gpt-4o-mini (OpenAI-compatible, http://localhost:11434/v1)" in texts  # no credentials shown
    assert any("found in the environment" in t for t in texts)
    assert not any(secret in t for t in texts)
    assert not any(secret in repr(sb.session_state[k]) for k in ("dm_llm_backend", "dm_llm_model", "dm_llm_base_url"))

    # every page names the active backend; the key appears nowhere
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_llm_backend"] = "openai"
    run_app(at)
    for page in ("tree", "filter", "chat"):
        at.switch_page(f"pages/{page}.py")
        run_app(at)
        texts = page_texts(at)
        assert any(t.startswith("LLM: gpt-4o-mini (OpenAI-compatible") for t in texts), page
        assert not any(secret in t for t in texts), page


# ------------------------------------------------------------------------ ui glue
def test_sanitize_filename_never_yields_a_path():
    from ui.ingest import sanitize_filename

    assert sanitize_filename("../../etc/passwd.pdf") == "passwd.pdf"
    assert sanitize_filename("C:\\Users\\x\\My Paper (v2).PDF") == "My_Paper_v2.pdf"
    assert sanitize_filename(".hidden.pdf") == "hidden.pdf"
    assert sanitize_filename("-rf.pdf") == "rf.pdf"
    assert sanitize_filename("a\x00b\nc.pdf") == "ab_c.pdf"
    assert sanitize_filename("paper_content_list.json") == "paper_content_list.json"
    assert sanitize_filename("....pdf") == "upload.pdf"
    long = sanitize_filename("x" * 500 + ".pdf")
    assert len(long) <= 120 and long.endswith(".pdf")
    for name in ("../a.pdf", "a/../../b.pdf", "\u202eevil.pdf", "ｆｕｌｌ.pdf"):
        out = sanitize_filename(name)
        assert "/" not in out and "\\" not in out and not out.startswith(".")


def test_save_uploads_unique_names_inside_folder(tmp_path):
    from ui.ingest import save_uploads

    out = save_uploads(tmp_path / "uploads", [("../x.pdf", b"one"), ("x.pdf", b"two"), ("x.pdf", b"one")])
    assert out[0].name == "x.pdf" and out[1].name.startswith("x-") and out[1].suffix == ".pdf"
    assert len(out) == 2  # identical bytes reuse the first file
    assert all(p.parent == (tmp_path / "uploads").resolve() for p in out)
    assert out[1].read_bytes() == b"two"


def test_resolve_workspace_guard(tmp_path):
    from ui.resources import resolve_workspace

    root = tmp_path / "root"
    root.mkdir()
    assert resolve_workspace("ws", root) == root / "ws"
    assert resolve_workspace(str(root / "a" / "b"), root) == root / "a" / "b"
    for bad in ("../outside", "/", str(tmp_path), "ws/../../x", ""):
        with pytest.raises(ConfigError):
            resolve_workspace(bad, root)
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(ConfigError):
        resolve_workspace("link/escape", root)
    (root / "file").write_text("x")
    with pytest.raises(ConfigError):
        resolve_workspace("file", root)


def test_md_escape_shows_markup_literally():
    from ui.text import looks_like_latex, md_escape

    import re

    raw = "**bold** [x](javascript:alert(1)) <b>hi</b> $x$ :red[y] # h `c` ~~s~~ ![i](http://e/x.png)"
    s = md_escape(raw)
    # every Markdown-significant character is backslash-escaped, and unescaping gives the text back
    assert not re.search(r"(?<!\\)[*\[\]()<>$:#`~!]", s)
    assert re.sub(r"\\(.)", r"\1", s) == raw
    assert md_escape("a\u202eb\x07c") == "abc"
    assert looks_like_latex(r"\frac{a}{b} + x^{2}") and not looks_like_latex("E = mc2 (1)")


def test_filter_compare_and_export_from_engine_run():
    from docmaster_core.filtering.results import compare_runs
    from ui.filtering import decision_rows, difference_rows, doc_match, evidence_list, export_csv, export_json

    def doc(doc_id, comb, sem):
        ev = {"doc_id": doc_id, "node_id": 3, "strategy": "semantic", "score": 0.5, "text": "t", "page": 1,
              "bbox": [1, 2, 3, 4], "section_path": ["1 Intro"], "node_type": "TEXT"}
        return {"doc_id": doc_id, "file": f"{doc_id}.pdf",
                "decisions": {"combined": {"decision": comb, "rationale": "r", "tokens": 5},
                              "semantic": {"decision": sem, "rationale": "s", "tokens": 2}},
                "evidence": {"combined": [{**ev, "evidence_id": "C1"}], "semantic": [{**ev, "evidence_id": "S1"}]}}

    # the app renders the engine's run dict as it is (no second layout)
    a = {"strategy": "combined", "condition": "c", "documents": [doc("d1", True, True), doc("d2", False, True)]}
    b = {"strategy": "combined", "condition": "c", "documents": [doc("d1", True, False), doc("d2", False, True)]}
    assert doc_match(a, a["documents"][0]) is True and len(evidence_list(a["documents"][0])) == 2
    assert decision_rows(a)[0]["tokens"] == 7
    from docmaster_core.pipeline import DocMaster

    comp = difference_rows(DocMaster, a, b)  # the facade's comparison (a static method)
    assert [r["differs"] for r in comp] == [True, False]
    assert [r["A strategies"] for r in comp] == ["search ✓ yes · all ✓ yes", "search ✓ yes · all ✗ no"]  # each way in plain words
    assert compare_runs(a, b, documents=True)["documents"][0]["b_decisions"] == {"combined": True, "semantic": False}
    rows = list(csv.DictReader(io.StringIO(export_csv({"A": a, "B": b}))))
    assert len(rows) == 4 and rows[0]["combined"] == "true" and rows[0]["tree"] == ""
    # best ranked first, and the passages a decision cites are in the export itself (a newcomer found only ids)
    ranked = {"strategy": "combined", "condition": "c", "documents": [doc("d2", False, True), doc("d1", True, True)]}
    ranked["documents"][0]["decisions"]["combined"].update(rank=2)
    ranked["documents"][1]["decisions"]["combined"].update(rank=1, evidence_ids=["C1"])
    ranked["documents"][1]["evidence"]["combined"][0]["text"] = "Liability is capped at the fees paid.  " * 20
    out = list(csv.DictReader(io.StringIO(export_csv({"A": ranked}))))
    assert [r["doc_id"] for r in out] == ["d1", "d2"]
    assert out[0]["cited_passages"].startswith("[C1 p.1] Liability is capped at the fees paid. Liability")
    assert len(out[0]["cited_passages"]) <= 320 and out[1]["cited_passages"] == ""
    assert json.loads(export_json({"A": a}))["A"]["documents"][1]["decisions"]["combined"]["decision"] is False
    # a download is named by its condition and runs, so a second export never clashes with the first
    from ui.filtering import export_file_name

    named = export_file_name({"A": {**a, "condition": "Caps liability at the fees paid!", "run_id": 8},
                              "B": {**b, "run_id": 7}}, "csv")
    assert named == "docmaster_filter_caps-liability-at-the-fees_run-8-7.csv"


def test_with_cut_and_ranked_rows_from_engine_run():
    """The ranked table and the movable cut on a run dict as the engine writes it: an
    offline run's decisions follow the cut; an LLM run keeps the model's decisions and
    shows the cut of the ranking beside them."""
    from docmaster_core.filtering.results import move_cut
    from ui.filtering import by_score, deciding, doc_match, export_csv, ranked_rows, run_cut

    def doc(doc_id, score, rank, dec):
        return {"doc_id": doc_id, "file": f"{doc_id}.pdf", "evidence": {},
                "decisions": {"combined": {"decision": dec, "rationale": "r", "tokens": 0,
                                           "evidence_score": score, "rank": rank}}}

    raw = {"strategy": "combined", "condition": "c", "backend": "offline-calibrated",
           "cuts": {"combined": {"rule": "best_fraction", "threshold": 3.0, "kept": 1, "of": 3, "best": 9.0}},
           "documents": [doc("d1", 1.0, 3, False), doc("d2", 9.0, 1, True), doc("d3", 2.5, 2, False)]}
    run = raw
    assert run_cut(run)["kept"] == 1
    assert [r["file"] for r in ranked_rows(run)] == ["d2.pdf", "d3.pdf", "d1.pdf"]
    moved = move_cut(run, 2)  # the engine moves the cut
    assert {d["doc_id"]: doc_match(moved, d) for d in moved["documents"]} == {"d1": False, "d2": True, "d3": True}
    assert run_cut(moved)["moved_to"] == 2 and run_cut(moved)["suggested"] == 1
    d3 = next(d for d in moved["documents"] if d["doc_id"] == "d3")
    assert deciding(moved, d3)["rationale"].startswith("Kept by the moved cut (top 2)")  # the text follows the moved cut
    assert [doc_match(run, d) for d in move_cut(run, None)["documents"]] == [False, True, False]
    assert doc_match(run, run["documents"][2]) is False  # the run itself is untouched
    csv_rows = list(csv.DictReader(io.StringIO(export_csv({"A": moved}))))
    assert [(r["doc_id"], r["rank"], r["match"]) for r in csv_rows] == [("d2", "1", "true"), ("d3", "2", "true"),
                                                                       ("d1", "3", "false")]  # best ranked first
    llm = {**raw, "backend": "gpt-4o-mini"}
    moved = move_cut(llm, 2)
    assert [doc_match(moved, d) for d in moved["documents"]] == [False, True, False]  # the model's decisions
    assert [by_score(moved, d) for d in moved["documents"]] == [False, True, True]
    assert "by score" in ranked_rows(moved)[0]


def test_filter_review_answers_update_counts_and_survive_a_reload(app_uploaded, app_env):
    """The Filter page's Review: the user answers the document it shows (Match / No match), the
    counts and the next document change, the answers are stored in the workspace, a new
    session finds them, and the next filter run is decided by them."""
    from docmaster_core.store.workspace import Workspace

    cond = "Does the paper describe a distributed storage system?"
    at = open_app("pages/filter.py")
    at.text_area(key="w_filter_condition").set_value(cond)
    run_app(at)
    at.button(key="w_filter_run").click()
    run_app(at)
    at.toggle(key="w_review_on").set_value(True)
    run_app(at)
    assert any("takes about" in i.value for i in at.info)  # the expected cost, before any answer
    first = next(m.value for m in at.markdown if m.value.startswith("Next\\: "))
    at.button(key="w_review_match").click()
    run_app(at)
    assert any("**1 answered · 1 match · 0 no match**" in m.value for m in [*at.markdown, *at.success])
    second = [m.value for m in at.markdown if m.value.startswith("Next\\: ")]
    assert second and second[0] != first
    at.button(key="w_review_no").click()
    run_app(at)
    texts = [m.value for m in [*at.markdown, *at.success]]
    assert any("2 answered · 1 match · 1 no match" in t for t in texts)
    assert any("relative to your answers" in t for t in texts)
    # the tables above were decided before the answers: the page says so instead of contradicting them
    assert any("2 of your review answers are not in these tables yet" in i.value for i in at.info)
    ws = Workspace(app_env["ws"], create=False)
    stored = ws.judgements(cond)
    assert sorted(v for v, _ in stored.values()) == [False, True]
    # a new session: the answers are there, and a new run is decided by them
    again = open_app("pages/filter.py")
    again.text_area(key="w_filter_condition").set_value(cond)
    run_app(again)
    again.button(key="w_filter_run").click()
    run_app(again)
    run_a = again.session_state["dm_filter_runs"]["A"]
    by_user = {d["doc_id"]: deciding(run_a, d)["decision"] for d in run_a["documents"]
               if deciding(run_a, d).get("decided_by") == "user"}
    assert by_user == {d: v for d, (v, _) in stored.items()}
    # both documents answered: the count says so (it said "the others by the top 1", with no others)
    assert any("**kept 1 of 2 documents** (all 2 decided by your answers)" in m.value for m in again.markdown)
    # ... and the cut by score, which decides none of them, cannot be moved (it showed "top 6" beside "kept 5")
    cut_a = next(sl for sl in again.slider if sl.label.startswith("Configuration A: keep the top N"))
    assert cut_a.disabled and "Your review answers decide every document" in cut_a.help
    assert not any("not in these tables yet" in i.value for i in again.info)
    again.toggle(key="w_review_on").set_value(True)
    run_app(again)
    assert any("2 answered" in m.value for m in [*again.markdown, *again.success])


_JARGON = re.compile(r"\b(hyper-?edges?|clusters?|TEXT nodes?|must-links?|cannot-links?|SEC|PC-KMeans|anchor)\b|"
                     r"\bH\d+\b|\bC\d+\b", re.IGNORECASE)


def test_graph_and_clusters_pages_say_it_in_plain_words(app_uploaded):
    """Issue 36: the Hyper-edge graph and Clusters pages say what they show ("What am I
    looking at?"), and their metric labels, choices and table columns are plain words
    (the paper's names only in help texts)."""
    from ui.plain import CHECKED_COLUMNS, GOOD_FOR_CLUSTERS, SLIDERS
    from ui.graph import GOOD_FOR_GRAPH
    from ui.layout import WHAT_LEAD
    from ui.plain import GROUP_RE, WHAT_CLUSTERS, WHAT_GRAPH

    at = open_app("pages/hyperedges.py")
    assert any(c.value == WHAT_LEAD + WHAT_GRAPH for c in at.caption)
    assert any(c.value == GOOD_FOR_GRAPH for c in at.caption)  # what the page is good for, under it
    labels = [m.label for m in at.metric]
    assert labels and not [x for x in labels if _JARGON.search(x)], labels
    sb = at.selectbox(key=doc_key(at, "w_he_select"))
    assert sb.label == "Group of passages"
    for opt in sb.options:
        assert GROUP_RE.match(opt) and " · topic: " in opt, opt
        assert not re.match(r"H\d+ ", opt)
    he = at.session_state[doc_key(at, "w_he_select")]
    assert any(m.value.startswith(f"**Group {he}** · topic: ") for m in at.markdown)
    assert not any(_JARGON.search(s.label) for s in at.slider)

    at.switch_page("pages/clusters.py")
    run_app(at)
    assert any(c.value == WHAT_LEAD + WHAT_CLUSTERS for c in at.caption)
    assert any(c.value == GOOD_FOR_CLUSTERS for c in at.caption)
    labels = [m.label for m in at.metric]
    assert labels and not [x for x in labels if _JARGON.search(x)], labels
    # "marked together", "marks broken": what they are for the user (a colleague asked)
    assert {"checked: same topic", "checked: different topics", "checks the topics break"} <= set(labels)
    # the sliders say what they do, the setting to move first first; the paper's symbols only in the help
    assert [s.label for s in at.slider] == [SLIDERS[k][0] for k in ("K", "k", "w", "alpha")]
    assert at.slider[0].label == "Number of topics"
    for sl, sym in zip(at.slider, ("(The paper's K", "(The paper's k", "(The paper's w", "(The paper's alpha")):
        assert not re.search(r"\((?:K|k|w|alpha)\)", sl.label) and sym in sl.help, sl.label
    assert not any(re.search(r"SEC|Eq\. \d|PC-KMeans|\bw =", c.value) for c in at.caption)
    # nor the paper's symbols and names on the page itself (a newcomer read "the paper's K, k, w, alpha" and "the
    # paper's hyper-edge" there): they are in the help texts
    shown = page_texts(at)
    at.switch_page("pages/hyperedges.py")
    run_app(at)
    shown += page_texts(at)
    assert not [t for t in shown if re.search(r"the paper's|hyper-edge|\balpha\b", t)], shown
    at.switch_page("pages/clusters.py")
    run_app(at)
    pairs = [df for df in at.dataframe if "checked as" in getattr(df.value, "columns", [])]
    assert pairs, "no table of checked pairs"
    assert list(pairs[0].value.columns) == list(CHECKED_COLUMNS)
    assert set(pairs[0].value["checked as"]) <= {"same topic", "different topics"}
    # the whole collection: a line says what the topics leave out and follow
    at.radio(key="w_clusters_mode").set_value("collection")
    run_app(at)
    assert any("the topics follow" in c.value for c in at.caption)
    assert not [m.label for m in at.metric if _JARGON.search(m.label)]


def test_the_count_line_names_how_many_the_cut_decided_beside_the_answers():
    from ui.review import count_line, decided_by_user

    def dec(v, who="offline"):
        return {"decisions": {"combined": {"decision": v, "decided_by": who, "uncertain": False}}}

    run = {"backend": "offline", "strategy": "combined",
           "documents": [dec(True, "user"), dec(False, "user"), dec(True), dec(False), dec(False)]}
    line = count_line(run, run, 1, 1)
    assert "**kept 2 of 5 documents** (2 decided by your answers, the other 3 by the top 1 by evidence score" in line
    assert "your answers do not move the cut" not in line  # nothing kept below a "no match" answer
    # "no match" for the top 2, rank 3 unanswered and kept by a top-3 cut: the line says why it is still kept
    ranked = {"backend": "offline", "strategy": "combined", "documents": [
        {"decisions": {"combined": {"decision": False, "decided_by": "user", "rank": 1}}},
        {"decisions": {"combined": {"decision": False, "decided_by": "user", "rank": 2}}},
        {"decisions": {"combined": {"decision": True, "decided_by": "offline", "rank": 3}}},
        {"decisions": {"combined": {"decision": False, "decided_by": "offline", "rank": 4}}}]}
    assert ("your answers do not move the cut, so 1 document you have not answered is still kept by it"
            in count_line(ranked, ranked, 3, 3))
    # only "match" answers, and ranked documents kept by the cut (a newcomer's crash: a list summed with ints)
    matches = {**ranked, "documents": [
        {"decisions": {"combined": {"decision": True, "decided_by": "user", "rank": 1}}},
        {"decisions": {"combined": {"decision": True, "decided_by": "offline", "rank": 2}}},
        {"decisions": {"combined": {"decision": False, "decided_by": "offline", "rank": 3}}}]}
    line = count_line(matches, matches, 2, 2)
    assert "**kept 2 of 3 documents** (1 decided by your answers" in line and "do not move the cut" not in line
    everyone = {**run, "documents": run["documents"][:2]}
    assert "(all 2 decided by your answers)" in count_line(everyone, everyone, 1, 1)
    assert (decided_by_user(run), decided_by_user(everyone)) == (2, 2)
    # every kept document uncertain: the line says from which score one would be sure (a newcomer asked)
    unsure = {"backend": "offline", "strategy": "combined", "cuts": {"combined": {"kept": 1, "sure_yes": 6.0021}},
              "documents": [{"decisions": {"combined": {"decision": True, "uncertain": True}}}, dec(False)]}
    assert "0 sure and 1 uncertain kept" in count_line(unsure, unsure, 1, 1)
    assert "a document is sure from a score of 6.0" in count_line(unsure, unsure, 1, 1)
    # none sure at the suggested cut: why a cut is suggested at all when nothing may meet the condition
    assert "none kept is sure: the suggested cut keeps the documents scoring at least 0.35 x the best" in count_line(
        unsure, unsure, 1, 1, 0.35)
    assert "none kept is sure" not in count_line(unsure, unsure, 2, 1)  # the user's own cut
    # with the cut's score beside it: kept from one score, sure from another (the evidence text says the first)
    unsure["cuts"]["combined"]["threshold"] = 0.72
    assert "(a document is kept from a score of 0.7, sure from a score of 6.0 when its passages" in count_line(
        unsure, unsure, 1, 1)


def test_a_topic_of_mostly_reference_list_passages_says_so():
    """One paper's topics can hold its reference list ("lewis, aleksandra, piktus"): such a topic
    is named "reference list" first; a body topic keeps its words."""
    from ui.plain import mark_back_matter_topics

    terms = {0: ["lewis", "aleksandra", "piktus"], 1: ["retrieval", "passages", "generator"]}
    labels = [0, 0, 0, 1, 1, 0]
    paths = [["References"], ["References"], ["7 References"], ["3 Method"], ["4 Experiments"], ["3 Method"]]
    got = mark_back_matter_topics(terms, labels, paths)
    assert got[0] == ["reference list", "lewis", "aleksandra"]
    assert got[1] == ["retrieval", "passages", "generator"]
    assert terms[0] == ["lewis", "aleksandra", "piktus"]  # the input is not changed
