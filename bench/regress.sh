#!/usr/bin/env bash
# A quick regression check for the hot paths: index, facets, pg and map-reduce at a size that runs in a few
# minutes, each figure printed beside its target and the latest full-size figure of docs/BENCHMARKS.md. Run it before and
# after a change that touches a hot path, in the same sitting, and compare the two prints (small sizes swing more than the
# full runs BENCHMARKS.md records: compare ratios, not absolute rates).
#   bash bench/regress.sh            # default size: 100,000 posts
#   DOCS=300000 bash bench/regress.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DOCS=${DOCS:-100000}
RUNS=${RUNS:-10}
dotnet build bench/Magpie.Bench -c Release -v q -nologo >/dev/null
out=$(mktemp -d)
run() { local name=$1; shift; echo "== $name $*" >&2; dotnet run -c Release --no-build --project bench/Magpie.Bench -- "$name" "$@" > "$out/$name.txt" 2>&1 || { tail -20 "$out/$name.txt"; exit 1; }; }
run index --docs "$DOCS" --kafka-docs 0
run facets --docs "$DOCS" --runs "$RUNS"
run pg --docs "$DOCS" --runs "$RUNS"
run map-reduce --docs "$DOCS"
python3 - "$out" <<'PY'
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def last_json(name):
    lines = [l for l in (out / f"{name}.txt").read_text().splitlines() if l.startswith("{") and '"benchmark"' in l]
    return json.loads(lines[-1])
def latest(label):
    """The 'current' column of docs/BENCHMARKS.md's summary row whose first cell starts with label."""
    for line in pathlib.Path("docs/BENCHMARKS.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith(label): return cells[1]
    return "(not in BENCHMARKS.md)"
rows = []
i = last_json("index")
rows.append(("embedded indexing / raw Lucene.Net", f"{i['embedded_docs_per_s'] / i['raw_docs_per_s']:.2f}", "≥ 0.85", latest("indexing, embedded")))
f = last_json("facets")
cases = {c["case"]: c for c in f["cases"]}
for name, c in cases.items():
    rows.append((f"facets p50, {name}", f"{c['facets_p50_ms']} ms", "match-all ≤ 40 ms", latest("facets, match-all")))
every = next((c for n, c in cases.items() if "all" in n.lower()), None)
tenth = next((c for n, c in cases.items() if re.search(r"10 ?%", n)), None)
if every and tenth:
    rows.append(("facets p50, 10 % filter / match-all", f"{tenth['facets_p50_ms'] / every['facets_p50_ms']:.2f}", "≤ 0.3", latest("facets, match-all")))
p = last_json("pg")
rows.append(("PostgreSQL time-grouped aggregate p50", f"{p['grouped_p50_ms']} ms", "≤ 40 ms (1M)", latest("PostgreSQL time-grouped")))
rows.append(("PostgreSQL stream, stored fields / documents", f"{p['stored_ratio']:.2f}", "≥ 3", latest("PostgreSQL streamed SELECT")))
m = last_json("map-reduce")
rows.append(("map/reduce / plain map", f"{m['ratio']:.2f}", "≥ 0.6", latest("map/reduce vs plain map")))
width = max(len(r[0]) for r in rows)
print(f"\n{'measure':<{width}}  {'now':>10}  {'target':<18} latest full run (docs/BENCHMARKS.md)")
for name, now, target, full in rows:
    print(f"{name:<{width}}  {now:>10}  {target:<18} {full}")
PY
