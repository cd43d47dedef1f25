"""Exact scoring of a filter's candidates on Ray (issue 37) against the local path.

The tests connect to the Ray head at ``DOCMASTER_TEST_RAY_ADDRESS`` when it is set
(``.ci/run`` starts one on 127.0.0.1 with 2 CPUs), else they start a local Ray instance
with 2 CPUs, once for this module (``conftest.ray_cluster``). The workspace is a generated collection of 40
documents; the candidate stage is forced (``min_docs=0``) so that 40 documents take the
path of a collection at scale.
"""
from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest

from docmaster_core.config import CandidateSettings, get_settings
from docmaster_core.errors import ConfigError
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION
from docmaster_core.filtering.ray_scoring import SETTINGS_SENT, shard_of
from docmaster_core.pipeline import DocMaster
from support.toy import build_toy_workspace, generated_docs
from test_filter_qa import CONDITIONS

SECRET = "sk-test-scoring-never-leaves-the-driver-81c2"
CALIB = replace(DEFAULT_CALIBRATION, pool=8)
STRATS = ("tree", "semantic", "hyperedge", "combined")


@pytest.fixture(scope="module")
def generated(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("gen_ray") / "ws"
    build_toy_workspace(path, embedder, generated_docs(40)).close()
    return path




def _dm(path, embedder, **llm):
    return DocMaster(path, get_settings(llm={"backend": "offline", **llm}), embedder=embedder)


def _candidates(**kw):
    return CandidateSettings(min_docs=0, pool_docs=16, **kw)


def test_shards_are_stable_and_cover_every_document():
    ids = [f"doc-{i:03d}" for i in range(200)]
    a, b = shard_of(ids, 3), shard_of(list(reversed(ids)), 3)
    assert np.array_equal(a, b[::-1]) and set(a.tolist()) == {0, 1, 2}


def test_bad_ray_settings_are_one_line_config_errors(generated, embedder):
    dm = _dm(generated, embedder)
    with pytest.raises(ConfigError, match=r"bad Ray address 'nohost'"):
        dm.filter(CONDITIONS[0], decider="calibrated", save=False,
                  candidates=_candidates(executor="ray", ray_address="nohost"))
    with pytest.raises(ConfigError, match="only used with candidates.executor = ray"):
        dm.filter(CONDITIONS[0], decider="calibrated", save=False,
                  candidates=_candidates(ray_address="127.0.0.1:6379"))


@pytest.mark.slow
def test_ray_scoring_gives_the_local_decisions_evidence_and_cuts(generated, embedder, ray_cluster):
    local, on_ray = _dm(generated, embedder), _dm(generated, embedder)
    try:
        for c in CONDITIONS:
            a = local.filter(c, decider="calibrated", save=False, calibration=CALIB, candidates=_candidates())
            b = on_ray.filter(c, decider="calibrated", save=False, calibration=CALIB,
                              candidates=_candidates(executor="ray", ray_workers=2))
            assert b.params["scored_on"] == "ray (2 workers)" and "scored_on" not in a.params
            assert a.candidates["candidates"] == b.candidates["candidates"] < len(a.documents)
            assert [d.doc_id for d in a.documents] == [d.doc_id for d in b.documents]
            for da, db in zip(a.documents, b.documents):
                for s in STRATS:
                    x, y = da.decisions[s], db.decisions[s]
                    assert (x.decision, x.rank, x.evidence_ids, x.decided_by) == \
                           (y.decision, y.rank, y.evidence_ids, y.decided_by), (c, da.doc_id, s)
                    # cosines of a shard's rows may differ from the whole view's in the last
                    # float32 bit (BLAS blocking): scores agree to 1e-6, decisions exactly
                    assert y.evidence_score == pytest.approx(x.evidence_score, abs=1e-6)
                    assert [(e.node_id, e.text) for e in da.evidence[s]] == [(e.node_id, e.text) for e in db.evidence[s]]
                    assert [e.score for e in db.evidence[s]] == pytest.approx([e.score for e in da.evidence[s]],
                                                                              abs=1e-6)
            for s in STRATS:
                x, y = a.cuts[s], b.cuts[s]
                assert (x.rule, x.kept, x.of, x.uncertain, x.none_meets) == (y.rule, y.kept, y.of, y.uncertain,
                                                                              y.none_meets)
                assert np.array_equal(x.eligible, y.eligible) and y.threshold == pytest.approx(x.threshold, abs=1e-6)
    finally:
        on_ray.close()


@pytest.mark.slow
def test_no_llm_settings_or_key_reach_the_scoring_actors(generated, embedder, ray_cluster, monkeypatch):
    sent: list = []
    real_remote = ray_cluster.remote

    class Spy:  # records the arguments every actor is made with
        def __init__(self, cls):
            self._cls = cls

        def remote(self, *args, **kwargs):
            sent.append(args)
            return self._cls.remote(*args, **kwargs)

    def spy_remote(*args, **kwargs):
        deco = real_remote(*args, **kwargs)
        return lambda cls: Spy(deco(cls))

    monkeypatch.setattr(ray_cluster, "remote", spy_remote)
    dm = _dm(generated, embedder, api_key=SECRET)
    assert dm.settings.llm.api_key.get_secret_value() == SECRET
    try:
        run = dm.filter(CONDITIONS[1], decider="calibrated", save=False, calibration=CALIB,
                        candidates=_candidates(executor="ray", ray_workers=2))
    finally:
        dm.close()
    assert run.params["scored_on"] == "ray (2 workers)"
    assert len(sent) == 2 and sorted(sent[0][1]) == sorted(SETTINGS_SENT)
    blob = pickle.dumps(sent)
    assert SECRET.encode() not in blob and b"api_key" not in blob and b"base_url" not in blob


@pytest.mark.slow
def test_a_run_without_the_candidate_stage_is_scored_here_and_says_so(generated, embedder, ray_cluster):
    dm = _dm(generated, embedder)
    try:
        run = dm.filter(CONDITIONS[0], decider="calibrated", save=False, calibration=CALIB,
                        candidates=CandidateSettings(executor="ray", ray_workers=2))  # 40 <= min_docs 500
    finally:
        dm.close()
    assert run.params["scored_on"] == "local" and run.candidates == {}
    assert any("Scored in this process, not on Ray" in w for w in run.warnings)
