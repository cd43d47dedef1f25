"""Working with a filter run's result (SPEC F6): moving its cut and comparing two runs.

A run has one shape outside the engine: the dict :meth:`FilterRun.to_dict
<docmaster_core.filtering.run.FilterRun.to_dict>` writes, which is also what the
workspace saves (``Workspace.runs("filter")[i]["result"]``) and what ``docmaster filter
--json`` prints::

    {"run_id", "condition", "strategy", "strategies", "params", "backend", "matches",
     "matches_by_strategy", "three_way", "tokens", "timings", "usage", "warnings",
     "cuts": {strategy: Cut.to_dict()},
     "documents": [{"doc_id", "file", "decisions": {strategy: Decision.to_dict()},
                    "evidence": {strategy: [Evidence.to_dict()]}}]}

The app renders it as it is; the command line and the app move the cut with
:func:`move_cut` and compare two runs with :func:`compare_runs`.
"""
from __future__ import annotations

from typing import Any, Mapping

__all__ = ["move_cut", "compare_runs", "three_way_counts", "is_offline_run", "run_ranking", "run_evidence_nodes"]


def is_offline_run(run: Mapping[str, Any]) -> bool:
    """True when the run was decided by the offline evidence score (backend
    ``offline-...``): its decisions *are* the cut of the ranking, so moving the cut
    changes them. An LLM-decided run keeps the model's decisions."""
    return str(run.get("backend", "")).startswith("offline")


def run_ranking(run: Mapping[str, Any], strategy: str | None = None) -> list[str]:
    """doc_ids of a run dict in the order of ``strategy``'s (default the run's) evidence-score
    ranking, best first; documents without a rank (not candidates) last, in run order.
    The order a review asks in (:mod:`docmaster_core.filtering.review`)."""
    s = strategy or run.get("strategy", "combined")
    docs = list(run.get("documents", []))
    big = len(docs) + 1

    def rank(d) -> int:
        r = ((d.get("decisions") or {}).get(s) or {}).get("rank")
        return int(r) if r is not None else big

    return [d["doc_id"] for d in sorted(docs, key=rank)]


def run_evidence_nodes(run: Mapping[str, Any], strategy: str | None = None) -> dict[str, list[int]]:
    """``{doc_id: [node ids]}``: the tree nodes of each document's ``strategy`` (default the
    run's) evidence in a run dict (flat chunks, node id -1, left out): what a review's
    relevance feedback describes each document by
    (:meth:`~docmaster_core.retrieval.corpus.CorpusView.evidence_vectors`)."""
    s = strategy or run.get("strategy", "combined")
    return {d["doc_id"]: [int(e["node_id"]) for e in ((d.get("evidence") or {}).get(s) or [])
                          if int(e.get("node_id", -1)) >= 0]
            for d in run.get("documents", [])}


def three_way_counts(run: Mapping[str, Any], strategy: str | None = None) -> dict[str, int]:
    """``{"kept", "uncertain", "dropped", "undecided"}`` of ``strategy`` (default the
    run's) counted from a run dict, as :meth:`FilterRun.three_way
    <docmaster_core.filtering.run.FilterRun.three_way>` counts them."""
    s = strategy or run.get("strategy", "combined")
    out = {"kept": 0, "uncertain": 0, "dropped": 0, "undecided": 0}
    for d in run.get("documents", []):
        dec = (d.get("decisions") or {}).get(s)
        if dec is None or dec.get("decision") is None:
            out["undecided"] += dec is not None
        elif dec.get("uncertain"):
            out["uncertain"] += 1
        else:
            out["kept" if dec["decision"] else "dropped"] += 1
    return out


def move_cut(run: Mapping[str, Any], kept: int | None, strategy: str | None = None) -> dict[str, Any]:
    """The run with the cut of ``strategy``'s ranking moved to keep its ``kept``
    best-ranked documents; nothing is retrieved or decided again.

    An offline-decided run (:func:`is_offline_run`) gets the strategy's decisions =
    ``rank <= kept`` (a decision that changes says so in its rationale) and its
    ``matches``, ``matches_by_strategy`` and ``three_way`` follow; an LLM-decided run
    keeps the model's decisions (the cut of the ranking is then read beside them:
    ``rank <= cuts[strategy]["moved_to"]``).

    Args:
        run: A run dict as decided (:meth:`FilterRun.to_dict
            <docmaster_core.filtering.run.FilterRun.to_dict>` or a saved run's
            ``result``), not one whose cut was already moved.
        kept: Documents kept (clamped to 0..D); None: the suggested cut (the run as
            decided).
        strategy: The ranking whose cut moves (default: the run's deciding strategy).

    Returns:
        A new run dict (the given one is not changed; the evidence lists are shared
        with it, not copied) whose ``cuts[strategy]`` gains
        ``moved_to`` (documents kept, int) and ``suggested`` (the suggested cut's count).
    """
    s = strategy or run.get("strategy", "combined")
    # copied where it changes (the evidence, its largest part, is shared with ``run``)
    out = dict(run)
    docs = []
    for d in run.get("documents", []):
        decs = dict(d.get("decisions") or {})
        if decs.get(s) is not None:
            decs[s] = dict(decs[s])
        docs.append({**d, "decisions": decs})
    out["documents"] = docs
    for key in ("cuts", "matches_by_strategy", "three_way"):
        if isinstance(run.get(key), dict):
            out[key] = dict(run[key])
    cuts = out.setdefault("cuts", {})
    cut = dict(cuts.get(s) or {})
    decided = [(d.get("decisions") or {}).get(s) or {} for d in docs]
    suggested = int(cut.get("kept", sum(dec.get("decision") is True for dec in decided)))
    k = suggested if kept is None else max(0, min(int(kept), len(docs)))
    if is_offline_run(run) and kept is not None:
        for dec in decided:
            if dec.get("decision") is None:
                continue
            inside = dec.get("rank") is not None and int(dec["rank"]) <= k
            if inside != dec["decision"]:
                dec["rationale"] = (f"{'Kept' if inside else 'Not kept'} by the moved cut (top {k}); the suggested "
                                    f"cut (top {suggested}) said: {dec.get('rationale', '')}")
            dec["decision"] = inside
        matches = [d["doc_id"] for d, dec in zip(docs, decided) if dec.get("decision") is True]
        if s == out.get("strategy", "combined"):
            out["matches"] = matches
        if isinstance(out.get("matches_by_strategy"), dict):
            out["matches_by_strategy"][s] = matches
        if isinstance(out.get("three_way"), dict):
            out["three_way"][s] = three_way_counts(out, s)
    cut["moved_to"] = k
    cut["suggested"] = suggested
    cuts[s] = cut
    return out


def _decisions(run: Mapping[str, Any], strategy: str) -> dict[str, tuple[bool | None, str, dict[str, bool | None]]]:
    return {d["doc_id"]: ((d.get("decisions") or {}).get(strategy, {}).get("decision"), d.get("file", ""),
                          {k: (v or {}).get("decision") for k, v in (d.get("decisions") or {}).items()})
            for d in run.get("documents", [])}


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any], strategy: str | None = None, *,
                 documents: bool = False) -> dict[str, Any]:
    """Compare two filter runs (saved runs ``{"run_id", "params", "result"}`` as
    ``Workspace.runs("filter")`` gives them, or run dicts; a run whose cut was moved by
    :func:`move_cut` is compared as moved).

    Args:
        a, b: The runs.
        strategy: Strategy compared (default: each run's own deciding strategy).
        documents: Also list every document of either run side by side.

    Returns:
        ``{"a": run_id, "b": run_id, "strategy": [sa, sb], "params_changed": {name: [a, b]},
        "only_a": [...], "only_b": [...], "both": [...], "agreement": fraction of the
        common documents with the same decision}``; document entries are
        ``{"doc_id", "file"}``. With ``documents``, also ``"documents"``: one entry per
        document of either run (a's order, then b's new ones) ``{"doc_id", "file",
        "a": bool | None, "b": bool | None`` (the compared strategy's decisions; None:
        undecided or not in that run), ``"a_decisions", "b_decisions": {strategy: bool |
        None}``, ``"differs"``: the compared decision differs, or a strategy decided in
        both runs does``}``.
    """
    ra = a.get("result", a)
    rb = b.get("result", b)
    pa = a.get("params", ra.get("params", {}))
    pb = b.get("params", rb.get("params", {}))
    sa = strategy or ra.get("strategy", "combined")
    sb = strategy or rb.get("strategy", "combined")

    da, db = _decisions(ra, sa), _decisions(rb, sb)
    common = sorted(set(da) & set(db))
    only_a = [{"doc_id": i, "file": da[i][1]} for i in common if da[i][0] is True and db[i][0] is not True]
    only_b = [{"doc_id": i, "file": db[i][1]} for i in common if db[i][0] is True and da[i][0] is not True]
    both = [{"doc_id": i, "file": da[i][1]} for i in common if da[i][0] is True and db[i][0] is True]
    same = sum(da[i][0] == db[i][0] for i in common)
    changed = {}
    flat_a, flat_b = _flatten(pa), _flatten(pb)
    for key in sorted(set(flat_a) | set(flat_b)):
        if flat_a.get(key) != flat_b.get(key):
            changed[key] = [flat_a.get(key), flat_b.get(key)]
    out = {
        "a": a.get("run_id", ra.get("run_id")),
        "b": b.get("run_id", rb.get("run_id")),
        "strategy": [sa, sb],
        "params_changed": changed,
        "only_a": only_a,
        "only_b": only_b,
        "both": both,
        "agreement": same / len(common) if common else 1.0,
    }
    if documents:
        rows = []
        for doc_id in list(da) + [x for x in db if x not in da]:
            xa, xb = da.get(doc_id), db.get(doc_id)
            deca, decb = (xa[2] if xa else {}), (xb[2] if xb else {})
            va, vb = (xa[0] if xa else None), (xb[0] if xb else None)
            differs = va != vb or any(deca[s] != decb[s] for s in deca if s in decb)
            rows.append({"doc_id": doc_id, "file": (xa or xb)[1] or doc_id, "a": va, "b": vb,
                         "a_decisions": deca, "b_decisions": decb, "differs": bool(differs)})
        out["documents"] = rows
    return out


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
    else:
        out[prefix[:-1]] = d
    return out
