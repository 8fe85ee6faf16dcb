#!/usr/bin/env bash
# The test command (README): runs every test. Kafka tests start a
# local single-node KRaft broker from $KAFKA_HOME (default ../shared/kafka) unless
# KAFKA_BOOTSTRAP_SERVERS names one; a Docker engine, when one answers, is used instead of KAFKA_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${KAFKA_HOME:-}" ] && [ -d ../shared/kafka/libs ]; then export KAFKA_HOME="$(cd ../shared/kafka && pwd)"; fi
# The benchmarks share the tests' fixtures: keep them building (dotnet test does not build them).
dotnet build bench/Magpie.Bench -c Release -nologo -v q
out=$(mktemp)
set +e
dotnet test Magpie.sln -c Release --logger "console;verbosity=normal" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
set -e
count() { grep -oE "^ *$1: +[0-9]+" "$out" | awk '{s+=$2} END {print s+0}' || true; }
passed=$(count Passed)
failed=$(count Failed)
skipped=$(count Skipped)
# CI keeps only the end of this output: repeat each failure (name, message, the top of its stack) last.
if [ "$failed" != 0 ]; then
  echo "---- failures ----"
  awk '/^  Failed /{on=1; n=0} /^  (Passed|Skipped) |^\[xUnit/{on=0} on && n++ < 70' "$out"
fi
rm -f "$out"
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
