#!/usr/bin/env bash
# Run DocMaster's built-in evaluations and write their results (JSON + a text summary).
#
# Usage: scripts/eval_all.sh CORPUS_WS [BENCH_WS] [OUT_DIR]
#
#   CORPUS_WS  workspace holding the 88 PDFs of ../shared/corpus/pdf (offline backend)
#   BENCH_WS   workspace holding the MMLongBench-Doc and FinanceBench PDFs of
#              ../shared/corpus/bench (skipped when absent)
#   OUT_DIR    where results go (default: eval-results/)
#
# Figures produced:
#   filter.json / filter.txt        P/R/F1, AP and leave-one-condition-out F1 per condition and
#                                   macro, every strategy, over P1-P12 and Q1-Q12 (SPEC F6)
#   calibrate_A.json, calibrate_B.json
#                                   the offline decider's rule chosen on one half of the
#                                   conditions and reported on the other (both directions)
#   retrieval_<bench>.json          evidence-page recall@5, every strategy
#   latency.json / latency.txt      filter latency per condition (scripts/bench_filter.py)
#
# Environment: DOCMASTER_BIN (default: .venv/bin/docmaster, else docmaster on PATH),
#              PYTHON (default: .venv/bin/python, else python3), SHARED (default ../shared).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
corpus="${1:?usage: scripts/eval_all.sh CORPUS_WS [BENCH_WS] [OUT_DIR]}"
bench="${2:-}"
out="${3:-eval-results}"
shared="${SHARED:-$here/../shared}"
dm="${DOCMASTER_BIN:-$here/.venv/bin/docmaster}"
[ -x "$dm" ] || dm="docmaster"
py="${PYTHON:-$here/.venv/bin/python}"
[ -x "$py" ] || py="python3"
mkdir -p "$out"

cases="$shared/eval/filter_cases.tsv"
conds="$shared/eval/filter_conditions.tsv"
cases_q="$shared/eval/filter_cases_q.tsv"
conds_q="$shared/eval/filter_conditions_q.tsv"

echo "== filter evaluation ($corpus)"
# both public sets (P1-P12, Q1-Q12): leave-one-condition-out needs many conditions
"$dm" eval filter -w "$corpus" --cases "$cases" "$cases_q" --conditions "$conds" "$conds_q" --json > "$out/filter.json"
"$py" - "$out/filter.json" > "$out/filter.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
S = r["strategies"]
print(f"{'condition':10} {'n':>3} {'pos':>3}  " + "  ".join(f"{s[:9]:>9}" for s in S) + "   (F1)")
for k, c in r["conditions"].items():
    print(f"{k:10} {c['n']:>3} {c['positives']:>3}  " + "  ".join(f"{c[s]['f1']:9.3f}" for s in S))
for m in ("precision", "recall", "f1", "ap", "best_f1"):
    print(f"{'macro ' + m:18}  " + "  ".join(f"{r['macro'][s][m]:9.3f}" for s in S))
if r.get("loco"):
    print(f"{'LOCO f1':18}  " + "  ".join(f"{r['loco']['macro'][s]:9.3f}" for s in S))
lat = r["latency"]
print(f"retrieval per condition: mean {lat['embed_retrieve_mean']:.3f} s (first condition builds the caches)")
PY
cat "$out/filter.txt"

echo "== offline decider calibration (half A -> B, and B -> A)"
"$dm" eval calibrate -w "$corpus" --cases "$cases" --conditions "$conds" --json > "$out/calibrate_A.json"
half_b=$("$py" -c "import csv,sys; k=[r['condition'] for r in csv.DictReader(open(sys.argv[1]), delimiter='\t')]; print(' '.join(k[1::2]))" "$conds")
# shellcheck disable=SC2086
"$dm" eval calibrate -w "$corpus" --cases "$cases" --conditions "$conds" --calibrate-on $half_b --json > "$out/calibrate_B.json"
for f in "$out/calibrate_A.json" "$out/calibrate_B.json"; do
  "$py" - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["best"]
print("chosen on " + ",".join(r["calibrate_on"]) + f": rel_rho={b['rel_rho']} rel_z_min={b['rel_z_min']}")
for s, f in r["f1"].items():
    print(f"  {s:10} calibration {f['calibration']:.3f}  held-out {f['held_out']:.3f}  all {f['all']:.3f}")
PY
done | tee "$out/calibrate.txt"

if [ -n "$bench" ]; then
  for b in mmlongbench financebench; do
    echo "== evidence-page recall@5: $b ($bench)"
    "$dm" eval retrieval -w "$bench" --bench "$b" --k 5 --strategy tree semantic hyperedge combined flat keyword \
      --json > "$out/retrieval_$b.json"
    "$py" - "$out/retrieval_$b.json" <<'PY' | tee "$out/retrieval_$b.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['bench']}: {r['questions']} questions over {r['documents']} documents")
for s, v in r["recall"].items():
    print(f"  {s:10} recall@{r['k']} {v:.3f}  hit@{r['k']} {r['hit'][s]:.3f}")
PY
  done
fi

echo "== filter latency"
"$py" "$here/scripts/bench_filter.py" -w "$corpus" --conditions "$conds" --json "$out/latency.json" | tee "$out/latency.txt"
echo "results in $out/"
