#!/bin/sh
exec java -Xmx128m -cp "/opt/kafka/libs/*" kafka.admin.BrokerApiVersionsCommand "$@"
