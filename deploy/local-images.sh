#!/usr/bin/env bash
# Stand-ins for the images compose.yaml and the Dockerfile name, built here from Debian's packages, this machine's .NET and
# ../shared/kafka, for a machine with a container engine (podman) but no image registry. Each is tagged with the exact name
# the files use, so they run unchanged; postgres:15 too, for the tests' Testcontainers branch. An image already built is
# kept (FORCE=1 builds them all again).
#   bash deploy/local-images.sh
# Grafana has no Debian package: compose runs here without its grafana service.
set -euo pipefail
cd "$(dirname "$0")/.."
here=deploy/local-images
shared=${MAGPIE_SHARED:-../shared}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
minbase=localhost/magpie-local/debian-minbase:bookworm
base=localhost/magpie-local/debian:bookworm
work=$(mktemp -d /var/tmp/magpie-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

# podman on these machines: runc (crun refuses the host's hybrid cgroups) and no default ulimits (setting them needs a
# capability the sandbox lacks). Root reads /etc/containers, a user ~/.config/containers.
conf=$([ "$(id -u)" = 0 ] && echo /etc/containers/containers.conf || echo "${XDG_CONFIG_HOME:-$HOME/.config}/containers/containers.conf")
if [ ! -f "$conf" ]; then
  mkdir -p "$(dirname "$conf")"
  printf '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n' > "$conf"
fi

# One build at a time per machine: a second caller (CI's early build, then the compose test) waits, then keeps what it made.
exec 9>/var/tmp/magpie-local-images.lock
flock 9

have() { [ -z "${FORCE:-}" ] && podman image exists "$1"; }
build() {   # name, Containerfile, context
  have "$1" && { echo "kept  $1"; return; }
  local started=$SECONDS
  podman build --network host -q -t "$1" -f "$here/$2" "$3" >/dev/null
  echo "built $1 in $((SECONDS - started)) s"
}

total=$SECONDS
if ! have "$minbase"; then
  started=$SECONDS
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >/dev/null
  tar -C "$work/rootfs" -c . | podman import -q - "$minbase" >/dev/null
  rm -rf "$work/rootfs"
  echo "built $minbase in $((SECONDS - started)) s"
fi
mkdir -p "$work/base/ca"
cp /usr/local/share/ca-certificates/*.crt "$work/base/ca/" 2>/dev/null || true
build "$base" base.Containerfile "$work/base"

dotnet_root=$(dirname "$(readlink -f "$(command -v dotnet)")")
mkdir -p "$work/sdk" "$work/aspnet/dotnet/shared" "$work/kafka" "$work/postgres" "$work/empty"
have mcr.microsoft.com/dotnet/sdk:10.0 || cp -a "$dotnet_root" "$work/sdk/dotnet"
# The runtime image: the host and the two shared runtimes the app runs on, not the SDK.
if ! have mcr.microsoft.com/dotnet/aspnet:10.0; then
  cp -a "$dotnet_root/dotnet" "$dotnet_root/host" "$work/aspnet/dotnet/"
  cp -a "$dotnet_root/shared/Microsoft.NETCore.App" "$dotnet_root/shared/Microsoft.AspNetCore.App" "$work/aspnet/dotnet/shared/"
fi
have docker.io/apache/kafka:3.9.1 || cp -a "$shared/kafka/libs" "$here/kafka-bin" "$work/kafka/"
have docker.io/library/postgres:15 || cp -a "$here/postgres-bin" "$work/postgres/"

# One after another: side by side (tried) took longer on two cores, package unpacking contending for the disk.
build mcr.microsoft.com/dotnet/sdk:10.0 sdk.Containerfile "$work/sdk"
build mcr.microsoft.com/dotnet/aspnet:10.0 aspnet.Containerfile "$work/aspnet"
build docker.io/apache/kafka:3.9.1 kafka.Containerfile "$work/kafka"
build docker.io/library/rabbitmq:3.13-management rabbitmq.Containerfile "$work/empty"
build docker.io/library/postgres:15 postgres.Containerfile "$work/postgres"
build docker.io/curlimages/curl:8.11.1 curl.Containerfile "$work/empty"
build docker.io/prom/prometheus:v2.55.1 prometheus.Containerfile "$work/empty"
podman tag docker.io/library/rabbitmq:3.13-management docker.io/library/rabbitmq:3.13   # the test fixtures' name
echo "images ready in $((SECONDS - total)) s"
