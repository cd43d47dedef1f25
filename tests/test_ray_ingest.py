"""The Ray executor of ingest (issue 18) against the local one, on PDFs made here.

The tests connect to the Ray head at ``DOCMASTER_TEST_RAY_ADDRESS`` when it is set
(``.ci/run`` starts one on 127.0.0.1 with 2 CPUs), else they start a local in-process
Ray instance with 2 CPUs; either way Ray is started once for this module. Summaries use
the offline LLM; the semantic index is built only in the resume test.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from docmaster_core import cli
from docmaster_core.config import get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import ConfigError
from docmaster_core.pipeline import DocMaster
from docmaster_core.store.workspace import Workspace
from support.net import closed_port

try:
    from support.pdf_factory import make_paper_pdf, make_simple_pdf, make_truncated_pdf
except ImportError:  # tests imported as a package
    from tests.pdf_factory import make_paper_pdf, make_simple_pdf, make_truncated_pdf

RAY_ADDRESS = os.environ.get("DOCMASTER_TEST_RAY_ADDRESS") or None
SECRET = "sk-test-never-leaves-the-driver-5f3a"
GOOD = ["paper.pdf", "rivers.pdf", "storage.pdf"]


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ray_pdfs")
    make_paper_pdf(d / "paper.pdf")
    make_simple_pdf(d / "rivers.pdf", "A report on rivers and the bridges that cross them. " * 20)
    make_simple_pdf(d / "storage.pdf", "Tablets of a distributed storage system are split by size. " * 18)
    make_truncated_pdf(d / "broken.pdf")
    return d


def _settings(**llm):
    return get_settings(llm={"backend": "offline", **llm}, parsing={"parser": "pymupdf"})


# ------------------------------------------------------------------ errors before any Ray is started
def test_unknown_executor_and_bad_addresses_are_one_line_config_errors(pdfs, tmp_path, embedder):
    dm = DocMaster(tmp_path / "ws", _settings(), embedder=embedder)
    with pytest.raises(ConfigError, match="unknown ingest executor 'spark'"):
        dm.ingest([pdfs / "rivers.pdf"], executor="spark")
    with pytest.raises(ConfigError, match=r"bad Ray address 'nohost': expected auto or HOST:PORT"):
        dm.ingest([pdfs / "rivers.pdf"], executor="ray", ray_address="nohost")
    with pytest.raises(ConfigError, match="only used by the ray executor"):
        dm.ingest([pdfs / "rivers.pdf"], executor="local", ray_address="127.0.0.1:6379")
    # the facade's embedder must be the settings' one: that is what the actors load
    with pytest.raises(ConfigError, match="settings' embedder"):
        DocMaster(tmp_path / "ws", _settings(), embedder=HashingEmbedder()).ingest([pdfs / "rivers.pdf"], executor="ray")
    assert dm.ws.documents() == [] and dm.ws.failures() == []


def test_missing_ray_package_is_a_config_error(pdfs, tmp_path, embedder, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # import ray -> ImportError
    dm = DocMaster(tmp_path / "ws", _settings(), embedder=embedder)
    with pytest.raises(ConfigError, match=r"needs the ray package: pip install ray=="):
        dm.ingest([pdfs / "rivers.pdf"], executor="ray")
    assert dm.ws.documents() == []


def test_unreachable_address_cli_one_line_naming_it(pdfs, tmp_path, capsys):
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # pragma: no cover - only when run after the module's Ray fixture
        pytest.skip("this process is already connected to Ray (the address would not be used)")
    addr = f"127.0.0.1:{closed_port()}"
    rc = cli.main(["ingest", str(pdfs / "rivers.pdf"), "-w", str(tmp_path / "ws"), "--executor", "ray",
                   "--ray-address", addr, "--no-index", "--no-summaries"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1
    assert err == [err[-1]] and err[0].startswith(f"error: cannot reach the Ray cluster at {addr}:"), err
    assert Workspace(tmp_path / "ws", create=False).documents() == []


def test_settings_from_env(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("DOCMASTER_INGEST__EXECUTOR", "ray")
    monkeypatch.setenv("DOCMASTER_INGEST__RAY_ADDRESS", "10.0.0.5:6379")
    monkeypatch.setenv("DOCMASTER_INGEST__RAY_ACTORS", "3")
    s = get_settings()
    assert (s.ingest.executor, s.ingest.ray_address, s.ingest.ray_actors) == ("ray", "10.0.0.5:6379", 3)
    monkeypatch.setenv("DOCMASTER_INGEST__EXECUTOR", "spark")
    rc = cli.main(["ingest", str(tmp_path / "x.pdf"), "-w", str(tmp_path / "ws")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1
    assert err[0].startswith("error: invalid setting ingest.executor (DOCMASTER_INGEST__EXECUTOR):"), err


# ------------------------------------------------------------------ Ray runs (one Ray for the module: conftest.ray_cluster)


@pytest.fixture(scope="module")
def local_run(pdfs, tmp_path_factory, embedder):
    dm = DocMaster(tmp_path_factory.mktemp("local") / "ws", _settings(), embedder=embedder)
    events = []
    results = dm.ingest([pdfs / n for n in GOOD] + [pdfs / "broken.pdf"], build_index=False, on_progress=events.append)
    return dm, results, events


@pytest.fixture(scope="module")
def ray_run(pdfs, tmp_path_factory, embedder, ray_cluster):
    """A Ray ingest whose settings hold an API key; the arguments of every task and
    actor the driver creates are recorded (actor calls carry only node texts)."""
    sent: list = []

    class Spy:
        def __init__(self, remote):
            self._remote = remote

        def remote(self, *args, **kwargs):
            sent.append((args, kwargs))
            return self._remote.remote(*args, **kwargs)

    real_remote = ray_cluster.remote

    def spy_remote(*args, **kwargs):
        deco = real_remote(*args, **kwargs)
        return lambda fn: Spy(deco(fn))

    settings = _settings(api_key=SECRET)
    assert settings.llm.api_key.get_secret_value() == SECRET
    dm = DocMaster(tmp_path_factory.mktemp("ray") / "ws", settings, embedder=embedder)
    events = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ray_cluster, "remote", spy_remote)
        results = dm.ingest([pdfs / n for n in GOOD] + [pdfs / "broken.pdf"], build_index=False,
                            on_progress=events.append, executor="ray", ray_address=RAY_ADDRESS)
    return dm, results, events, sent


@pytest.mark.slow
def test_ray_ingest_equals_local_node_for_node(local_run, ray_run):
    ldm, lres, _ = local_run
    rdm, rres, _, _ = ray_run
    assert [r.status for r in rres] == [r.status for r in lres] == ["ingested"] * 3 + ["failed"]
    assert [r.doc_id for r in rres] == [r.doc_id for r in lres]
    for lr, rr in zip(lres[:3], rres[:3]):
        a, b = ldm.ws.document(lr.doc_id), rdm.ws.document(rr.doc_id)
        assert (b.file_name, b.title, b.n_pages, b.n_nodes, b.counts, b.parser, b.page_sizes, b.embedding_model) == \
               (a.file_name, a.title, a.n_pages, a.n_nodes, a.counts, a.parser, a.page_sizes, a.embedding_model)
        ta, tb = ldm.ws.load_tree(lr.doc_id), rdm.ws.load_tree(rr.doc_id)
        assert len(tb.nodes) == len(ta.nodes) >= (10 if b.file_name == "paper.pdf" else 2)
        for na, nb in zip(ta.nodes, tb.nodes):
            assert (nb.type, nb.content, nb.page_start, nb.page_end, nb.bboxes, nb.section_path, nb.summary,
                    nb.parent, nb.depth, nb.level, nb.extra) == \
                   (na.type, na.content, na.page_start, na.page_end, na.bboxes, na.section_path, na.summary,
                    na.parent, na.depth, na.level, na.extra)
        assert any(n.summary.strip() for n in tb.nodes)
        va, vb = ldm.ws.load_embeddings(lr.doc_id), rdm.ws.load_embeddings(rr.doc_id)
        assert vb.dtype == np.float32 and vb.shape == va.shape == (len(ta.nodes), 384)
        if getattr(ldm.embedder, "backend", "torch") in ("torch", "onnx"):  # float32: equal to rounding
            np.testing.assert_allclose(vb, va, atol=1e-5)
        else:  # bfloat16 / int8 kernels round differently with the worker's thread count
            cos = (np.asarray(va) * np.asarray(vb)).sum(1)
            assert cos.min() >= 0.9999, cos.min()
    assert rdm.ws.check() == []


@pytest.mark.slow
def test_bad_file_fails_with_the_local_one_line_reason(local_run, ray_run):
    _, lres, _ = local_run
    rdm, rres, _, _ = ray_run
    bad = rres[3]
    assert Path(bad.file).name == "broken.pdf" and bad.status == "failed"
    assert bad.reason == lres[3].reason and bad.reason.startswith("broken.pdf: ") and "\n" not in bad.reason
    assert [f["file_name"] for f in rdm.ws.failures()] == ["broken.pdf"]
    assert sorted(d.file_name for d in rdm.ws.documents()) == sorted(GOOD)


@pytest.mark.slow
def test_results_and_events_have_the_local_shape(local_run, ray_run):
    _, lres, levents = local_run
    _, rres, revents, _ = ray_run
    for lr, rr in zip(lres, rres):
        assert rr.to_dict().keys() == lr.to_dict().keys()
        assert (rr.file, rr.status, rr.pages, rr.nodes, rr.counts, rr.llm_gaps) == \
               (lr.file, lr.status, lr.pages, lr.nodes, lr.counts, lr.llm_gaps)
        assert set(rr.timings) == set(lr.timings)
        if rr.status == "ingested":
            assert set(rr.timings) >= {"parse", "tree", "embed", "summarise", "store", "total"}

    def stages(events, name):
        return [e.stage for e in events if Path(e.file).name == name]

    for name in GOOD + ["broken.pdf"]:
        assert stages(revents, name) == stages(levents, name), name
    assert stages(revents, "paper.pdf") == ["parsing", "embedding", "summarising", "storing", "done"]
    assert stages(revents, "broken.pdf") == ["parsing", "failed"]
    assert all(e.total == 4 and e.elapsed >= 0 for e in revents)


@pytest.mark.slow
def test_no_llm_settings_or_key_reach_ray(ray_run):
    _, _, _, sent = ray_run
    parse_args = [a for a, _ in sent if len(a) == 3 and isinstance(a[0], str)]
    assert sorted(Path(a[0]).name for a in parse_args) == sorted(GOOD + ["broken.pdf"])
    assert all(a[2] == _settings().parsing.model_dump() for a in parse_args)
    actor_args = [a for a, _ in sent if len(a) == 1 and isinstance(a[0], dict)]
    assert actor_args and all(a[0] == _settings().embedding.model_dump() for a in actor_args)
    blob = pickle.dumps(sent)
    assert SECRET.encode() not in blob and b"api_key" not in blob and b"base_url" not in blob


@pytest.mark.slow
def test_resume_after_an_interrupted_ray_ingest_with_the_cli(pdfs, tmp_path, embedder, ray_cluster, capsys):
    ws = tmp_path / "ws"
    files = [pdfs / n for n in GOOD]

    def stop_after_first_store(ev):
        if ev.stage == "done":
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C once one document was stored

    with pytest.raises(KeyboardInterrupt):
        DocMaster(ws, _settings(), embedder=embedder).ingest(
            files, build_index=False, on_progress=stop_after_first_store, executor="ray", ray_address=RAY_ADDRESS)
    stored = Workspace(ws, create=False).documents()
    assert len(stored) == 1
    assert Workspace(ws, create=False).check() == []

    # run it again with the CLI (the lock was released): the stored one is skipped, the
    # other two are stored and indexed (LLM steps on the driver), the broken file fails
    cmd = ["ingest", *map(str, files), str(pdfs / "broken.pdf"), "-w", str(ws), "--executor", "ray", "--llm", "offline",
           "--parser", "pymupdf"]
    rc = cli.main(cmd + (["--ray-address", RAY_ADDRESS] if RAY_ADDRESS else []))
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0, out
    assert out[-1] == "2 ingested, 1 already present, 1 failed"
    assert f"skipped  {stored[0].file_name}  " in "\n".join(out) and "(already in workspace; its semantic index was completed)" in "\n".join(out)
    assert sum(line.startswith("ingested ") for line in out) == 2
    assert [line for line in out if line.startswith("failed ")][0].startswith("failed   broken.pdf: ")
    w = Workspace(ws, create=False)
    assert sorted(d.file_name for d in w.documents()) == sorted(GOOD)
    assert w.document(stored[0].doc_id).added_at == stored[0].added_at  # not stored twice
    params = DocMaster(w, _settings(), embedder=embedder).index_params()
    assert all(w.load_index(d.doc_id, params) is not None for d in w.documents())
    assert w.check() == []
