#!/usr/bin/env bash
# Builds librdkafka 2.15.1 (the version Confluent.Kafka 2.15.1 is made for) into ~/.cache/magpie.
# Why: the NuGet mirror has no librdkafka.redist, and Debian's librdkafka1 (2.0.2) lacks symbols
# Confluent.Kafka 2.15 calls. The sources come from Confluent's own npm package, which vendors them.
# Needs: npm, a C compiler, make, zlib headers (libssl-dev optional: TLS support when present).
set -euo pipefail
VERSION=2.15.1
NPM_PACKAGE=@confluentinc/kafka-javascript@1.10.1   # vendors librdkafka 2.15.1 in deps/librdkafka
DEST=${MAGPIE_NATIVE_DIR:-$HOME/.cache/magpie/librdkafka-$VERSION}

if [ -f "$DEST/librdkafka.so.1" ]; then
  echo "librdkafka $VERSION: $DEST/librdkafka.so.1"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building librdkafka $VERSION from $NPM_PACKAGE (about a minute)…"
(cd "$work" && npm pack --silent "$NPM_PACKAGE" >/dev/null && tar xzf ./*.tgz)
src="$work/package/deps/librdkafka"
grep -q "RD_KAFKA_VERSION 0x020f01ff" "$src/src/rdkafka.h" || { echo "unexpected librdkafka version in $NPM_PACKAGE" >&2; exit 1; }
(cd "$src" && ./configure --disable-gssapi --disable-curl > "$work/configure.log" 2>&1 \
  && make -j"$(nproc)" libs > "$work/make.log" 2>&1) || { tail -40 "$work"/*.log >&2; exit 1; }
mkdir -p "$DEST"
cp "$src/src/librdkafka.so.1" "$DEST/librdkafka.so.1.tmp"
mv "$DEST/librdkafka.so.1.tmp" "$DEST/librdkafka.so.1"
echo "librdkafka $VERSION: $DEST/librdkafka.so.1"
