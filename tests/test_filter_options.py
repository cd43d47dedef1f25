"""One options object per filter run (FilterOptions), and settings sections that reject
unknown keys."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from docmaster_core import FilterOptions
from docmaster_core.config import get_settings
from docmaster_core.errors import RetrievalError
from docmaster_core.filtering.review import ReviewTargets
from docmaster_core.pipeline import DocMaster
from support.toy import build_toy_workspace

CONDITION = "Does the paper address fact-checking or claim verification?"


def test_options_validate_and_merge():
    o = FilterOptions(strategies=["tree", "combined"], doc_ids=["a", "b"])
    assert o.strategies == ("tree", "combined") and o.doc_ids == ("a", "b")
    assert FilterOptions.of(o, top_k=3).top_k == 3 and o.top_k is None  # frozen: a new value
    assert FilterOptions(strategy="flat").strategy_list(["tree"]) == ["tree", "flat"]
    assert FilterOptions().resolved_decide() == "per-strategy"
    assert FilterOptions(review=ReviewTargets()).resolved_decide() == "combined-only"
    assert FilterOptions(review=ReviewTargets(), decide="per-strategy").resolved_decide() == "per-strategy"
    with pytest.raises(TypeError, match="unknown filter option 'topk'"):
        FilterOptions.of(topk=3)
    for bad in ({"strategy": "bm25"}, {"strategies": ("tree", "x")}, {"decider": "gpt"}, {"decide": "some"},
                {"top_k": 0}, {"strategies": "tree"}):
        with pytest.raises(RetrievalError):
            FilterOptions(**bad)


def test_facade_takes_one_options_object(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "w", embedder)
    dm = DocMaster(ws, embedder=embedder)
    opts = FilterOptions(strategies=("semantic", "combined"), top_k=4, decider="calibrated", save=False)
    a = dm.filter(CONDITION, opts)
    b = dm.filter(CONDITION, strategies=["semantic", "combined"], top_k=4, decider="calibrated", save=False)
    assert a.params["top_k"] == 4 and a.strategies == ["semantic", "combined"]
    assert [(d.doc_id, d.decision("combined")) for d in a.documents] == \
           [(d.doc_id, d.decision("combined")) for d in b.documents]
    assert dm.filter(CONDITION, opts, top_k=2).params["top_k"] == 2  # an override replaces the field
    with pytest.raises(RetrievalError, match="unknown filter option"):
        dm.filter(CONDITION, opts, topk=2)


def test_settings_sections_reject_unknown_keys(tmp_path, monkeypatch, capsys):
    with pytest.raises(ValidationError, match="parserr"):
        get_settings(parsing={"parserr": "fast"})
    from docmaster_core.cli import main
    from docmaster_core.store import Workspace

    Workspace(tmp_path / "ws")  # an empty workspace
    monkeypatch.setenv("DOCMASTER_LLM__MODLE", "gpt-4o-mini")  # a typo of MODEL
    assert main(["docs", "--workspace", str(tmp_path / "ws")]) != 0
    err = capsys.readouterr().err
    assert "llm.modle" in err and "DOCMASTER_LLM__MODLE" in err


def test_review_targets_are_built_one_way_for_the_cli_and_the_app():
    """``docmaster filter --review ...`` and the Filter page's review form build their
    options with the one engine function (the CLI's seed included); the old cascade flags
    map onto it or stop with a message naming the new ones."""
    import argparse
    from types import SimpleNamespace

    from docmaster_core.cli.review import add_review_arguments
    from docmaster_core.cli.review import review_options as cli_options
    from docmaster_core.filtering.options import review_options
    from ui.filtering import default_config, run_filter

    ap = argparse.ArgumentParser()
    add_review_arguments(ap)
    ap.add_argument("--decider", default="auto")
    args = ap.parse_args(["--review", "--recall-target", "0.8", "--review-seed", "4"])
    assert cli_options(args) == review_options(review=True, recall=0.8, seed=4) \
        == {"review": ReviewTargets(recall=0.8, seed=4)}
    old = ap.parse_args(["--cascade", "--recall-target", "0.8", "--cascade-seed", "4"])
    assert cli_options(old) == {"review": ReviewTargets(recall=0.8, seed=4)}
    with pytest.raises(RetrievalError, match="--max-calls"):
        cli_options(ap.parse_args(["--cascade", "--sample-budget", "30"]))
    with pytest.raises(RetrievalError, match="precision 1 relative to the oracle"):
        cli_options(ap.parse_args(["--cascade", "--precision-target", "0.8"]))
    with pytest.raises(RetrievalError, match="needs an LLM decider"):
        cli_options(ap.parse_args(["--review", "--decider", "calibrated"]))
    with pytest.raises(RetrievalError, match="recall target"):
        review_options(review=True, recall=1.5)
    with pytest.raises(TypeError, match="replaced by the rank-order review"):
        FilterOptions.of(cascade=True)

    seen = {}

    class FakeFacade:  # what ui.filtering.run_filter uses of the facade
        path = "unused"
        llm = SimpleNamespace(is_offline=False)

        def retrieval_settings(self, **kw):
            return get_settings().retrieval.model_copy(update=kw)

        def filter(self, condition, options):
            seen["options"] = options
            raise RetrievalError("stop here")

    cfg = {**default_config("A"), "review": True, "recall_target": 0.8, "delta": 0.2}
    with pytest.raises(RetrievalError, match="stop here"):
        run_filter(FakeFacade(), CONDITION, cfg)
    assert seen["options"].review == review_options(review=True, recall=0.8, delta=0.2)["review"]


def test_facade_state_is_declared_and_preferences_persist(tmp_path, embedder):
    """The facade declares its state in ``__init__`` (no mixin sets it up lazily), and a
    preference saved through it is read back by a new facade on the same workspace."""
    dm = DocMaster(tmp_path / "w", embedder=embedder)
    assert {"_retrievers", "_index_lock", "_group_cache", "_pending_saves"} <= set(vars(dm))
    assert dm.retriever() is dm.retriever() and len(dm._retrievers) == 1
    assert dm.preference("filter_config_B") is None and dm.preference("x", 3) == 3
    assert dm.save_preference("filter_config_B", {"top_k": 3, "strategies": ["semantic"]})
    assert DocMaster(tmp_path / "w", embedder=embedder).preference("filter_config_B") == \
        {"top_k": 3, "strategies": ["semantic"]}
