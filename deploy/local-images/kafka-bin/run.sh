#!/bin/sh
# What the official image's entry point does, for the settings compose.yaml uses: every KAFKA_X_Y variable becomes the
# broker setting x.y, the storage is formatted on first start (CLUSTER_ID, else a fixed id), then the broker runs.
set -eu
config=/opt/kafka/config/server.properties
mkdir -p /opt/kafka/config
: > "$config"
env | grep '^KAFKA_' | grep -v '^KAFKA_HEAP_OPTS=' | while IFS='=' read -r name value; do
  key=$(echo "${name#KAFKA_}" | tr 'A-Z' 'a-z' | tr '_' '.')
  echo "$key=$value" >> "$config"
done
grep -q '^log.dirs=' "$config" || echo "log.dirs=/var/lib/kafka/data" >> "$config"
classpath="/opt/kafka/libs/*"
if [ ! -f /var/lib/kafka/data/meta.properties ]; then
  java -cp "$classpath" kafka.tools.StorageTool format -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$config"
fi
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} -Dlog4j.configuration=file:/opt/kafka/bin/log4j.properties -cp "$classpath" kafka.Kafka "$config"
