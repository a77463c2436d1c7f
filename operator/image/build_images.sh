#!/usr/bin/env bash
# Build the operator's image (Dockerfile) and the publisher's (spark/Dockerfile) without a Docker engine:
# buildah (chroot isolation, vfs storage under .cache/images/storage), on a stand-in for python:3.11-slim
# made from Debian bookworm's packages by mmdebstrap (no image registry is reachable here).
#
# The stand-in is a test-bed substitute, not the upstream image: Debian's python3 (3.11) at /usr/bin, with
# /usr/local/bin/python3 and pip linked to it, Debian's PEP 668 marker removed (the upstream image has
# none, and spark/Dockerfile runs pip system-wide), apt pointed at this machine's Debian mirror. The
# Dockerfiles stay unchanged for users. Each image is rebuilt only when the digest of its Dockerfile and
# the files it copies changes (a stamp under .cache/images), so a second run takes seconds.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=$root/.cache/images
storage=(--root "$cache/storage" --runroot "$cache/run" --storage-driver vfs)
base=docker.io/library/python:3.11-slim
mkdir -p "$cache"

install_builder() {
    if command -v buildah >/dev/null && command -v mmdebstrap >/dev/null; then return; fi
    if [[ $(id -u) -ne 0 ]]; then
        echo "build_images.sh: buildah and mmdebstrap are missing and installing them needs root" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends buildah=1.28.2+ds1-3+deb12u1+b3 mmdebstrap=1.3.5-7 \
        fuse-overlayfs uidmap
}

# digest PATH...: the sha256 over the named files and directories' contents (sorted, ignoring caches), the
# paths relative to the repository's root, so that another checkout of the same files hits the same cache
digest() {
    (cd "$root" && find "$@" -type f -not -path '*/__pycache__/*' -not -path '*.egg-info/*' -print0 | sort -z \
        | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}

build_base() {
    local stamp=$cache/base.stamp key
    key=$(printf 'bookworm python3 python3-venv python3-pip ca-certificates v1' | sha256sum | cut -d' ' -f1)
    if [[ -f $stamp && $(cat "$stamp") == "$key" ]] && buildah "${storage[@]}" inspect "$base" >/dev/null 2>&1; then
        echo "base $base: up to date"; return
    fi
    rm -f "$cache/base.tar"
    mmdebstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        --customize-hook='rm -f "$1"/usr/lib/python3.11/EXTERNALLY-MANAGED' \
        --customize-hook='ln -sf /usr/bin/python3 "$1"/usr/local/bin/python3; ln -sf /usr/bin/python3 "$1"/usr/local/bin/python; ln -sf /usr/bin/pip3 "$1"/usr/local/bin/pip' \
        --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1"/etc/ssl/certs/ca-certificates.crt' \
        bookworm "$cache/base.tar" http://deb.debian.org/debian
    local ctr
    ctr=$(buildah "${storage[@]}" from scratch)
    buildah "${storage[@]}" add "$ctr" "$cache/base.tar" /
    buildah "${storage[@]}" config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
        --cmd python3 "$ctr"
    buildah "${storage[@]}" commit --rm "$ctr" "$base"
    echo "$key" > "$stamp"
}

# build NAME DOCKERFILE: build the image from the repository root when its inputs changed
build_image() {
    local name=$1 dockerfile=$2 stamp key
    stamp=$cache/$(echo "$name" | tr '/:' '__').stamp
    key=$(digest "$dockerfile" planner spark operator)
    if [[ -f $stamp && $(cat "$stamp") == "$key" ]] && buildah "${storage[@]}" inspect "$name" >/dev/null 2>&1; then
        echo "$name: up to date"; return
    fi
    buildah "${storage[@]}" bud --isolation chroot --network host --pull=never --layers \
        -f "$root/$dockerfile" -t "$name" "$root"
    echo "$key" > "$stamp"
}

# tag_bookworm: the publisher's Dockerfile names its Debian release (python:3.11-slim-bookworm) and installs a
# JRE version that Debian ships from bookworm-security; the upstream image's apt sources list bookworm,
# bookworm-updates and bookworm-security, so the stand-in under that tag is the base with those sources
tag_bookworm() {
    if buildah "${storage[@]}" inspect "$base-bookworm" >/dev/null 2>&1 \
        && [[ -f $cache/bookworm.stamp && $(cat "$cache/bookworm.stamp") == "$(cat "$cache/base.stamp")-v1" ]]; then
        echo "base $base-bookworm: up to date"; return
    fi
    local ctr mnt
    ctr=$(buildah "${storage[@]}" from --pull-never "$base")
    mnt=$(buildah "${storage[@]}" mount "$ctr")
    rm -f "$mnt/etc/apt/sources.list"
    printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm bookworm-updates' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' '' \
        'Types: deb' 'URIs: http://deb.debian.org/debian-security' 'Suites: bookworm-security' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
        > "$mnt/etc/apt/sources.list.d/debian.sources"
    buildah "${storage[@]}" umount "$ctr" >/dev/null
    buildah "${storage[@]}" commit --rm "$ctr" "$base-bookworm"
    echo "$(cat "$cache/base.stamp")-v1" > "$cache/bookworm.stamp"
}

# IMAGES: which to build, "operator publisher" (the default) or one of them (make test needs the operator's only)
IMAGES=${IMAGES:-operator publisher}
for name in $IMAGES; do
    case "$name" in
        operator|publisher) ;;
        *) echo "IMAGES: unknown image '$name' (expected operator, publisher)" >&2; exit 2 ;;
    esac
done

install_builder
build_base
for name in $IMAGES; do
    if [ "$name" = operator ]; then
        build_image stormscale/operator:0.1.0 Dockerfile
    else
        tag_bookworm
        build_image stormscale/publisher:0.1.0 spark/Dockerfile
    fi
done
