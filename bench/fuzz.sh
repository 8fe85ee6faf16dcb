#!/usr/bin/env bash
# Fuzzes one of Magpie's parsers with AFL++ and SharpFuzz for N minutes, then prints a table row and a JSON line.
#   bash bench/fuzz.sh <rql|sql|pgwire|pgextended|bulk|patch|studio> <minutes> [output-dir]
# studio: Studio's rendering fuzzed in Chromium (magpie/Studio/Files/fuzz.js) for that long; no AFL++ needed.
# Needs Debian's afl++ (apt-get install afl++) and the sharpfuzz tool (dotnet tool install --global SharpFuzz.CommandLine);
# installs both when missing. Seeds: tests/Magpie.Fuzz/corpus/<target>. A crash is saved under <output-dir>/default/crashes:
# reproduce it with `dotnet <bin>/Magpie.Fuzz.dll <target> <file>`, then copy it to tests/Magpie.Fuzz/crashes/<target>/ so
# FuzzRegressionTests replays it forever.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: rql, sql, pgwire, pgextended, bulk, patch or studio}
minutes=${2:?minutes}
if [ "$target" = studio ]; then
  MAGPIE_FUZZ_MINUTES=$minutes exec dotnet test tests/Magpie.Tests -c Release --logger "console;verbosity=normal" \
    --filter "FullyQualifiedName~StudioRenderingFuzzTests.Random_strings_render_as_the_same_text_in_every_context"
fi
out=${3:-$(mktemp -d "/tmp/magpie-fuzz-$target-XXXX")}
command -v afl-fuzz >/dev/null || { apt-get update -qq && apt-get install -y -qq afl++ >/dev/null; }
export PATH="$PATH:$HOME/.dotnet/tools"
command -v sharpfuzz >/dev/null || dotnet tool install --global SharpFuzz.CommandLine >/dev/null

bin="$out/bin"
dotnet build -c Release tests/Magpie.Fuzz -o "$bin" -v quiet -nologo >/dev/null
# Coverage comes from instrumented assemblies: Magpie's parsers and the JSON Patch library.
for dll in Magpie.Query.dll Magpie.Ingest.dll Microsoft.AspNetCore.JsonPatch.SystemTextJson.dll; do sharpfuzz "$bin/$dll" >/dev/null; done

export AFL_SKIP_BIN_CHECK=1 AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1
# -t: a .NET input can take a while on its first JIT; hangs past 5 s are saved separately.
afl-fuzz -V $((minutes * 60)) -t 5000 -m none -i "tests/Magpie.Fuzz/corpus/$target" -o "$out" -- dotnet "$bin/Magpie.Fuzz.dll" "$target" >"$out/afl.log" 2>&1 || {
  echo "afl-fuzz failed; see $out/afl.log" >&2; tail -20 "$out/afl.log" >&2; exit 1; }

stat() { grep -E "^$1 +:" "$out/default/fuzzer_stats" | sed 's/.*: *//'; }
printf '| target | minutes | executions | exec/s | corpus | crashes | hangs | findings |\n|---|---|---|---|---|---|---|---|\n'
printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$target" "$minutes" "$(stat execs_done)" "$(stat execs_per_sec)" "$(stat corpus_count)" \
  "$(stat saved_crashes)" "$(stat saved_hangs)" "$out/default"
printf '{"target":"%s","minutes":%s,"executions":%s,"execs_per_sec":%s,"corpus":%s,"crashes":%s,"hangs":%s}\n' "$target" "$minutes" \
  "$(stat execs_done)" "$(stat execs_per_sec)" "$(stat corpus_count)" "$(stat saved_crashes)" "$(stat saved_hangs)"
