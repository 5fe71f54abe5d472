#!/usr/bin/env bash
# Builds release binaries and copies them into OUT_DIR. The one place the release build is
# written down: the Dockerfile runs it (one process per image) and CI runs it (all four), so
# what CI checks is what the images contain.
#
# Usage: deploy/docker/build-release.sh OUT_DIR [PACKAGE ...]
#   PACKAGE: core-service, auth-service, edge-rest, edge-graphql (default: all four)
# Environment: CARGO_TARGET_DIR (cargo's default when unset), CARGO_BUILD_JOBS.
set -euo pipefail

ALL=(core-service auth-service edge-rest edge-graphql)
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR [PACKAGE ...]" >&2; exit 2; }
OUT="$1"; shift
PKGS=("$@")
[[ ${#PKGS[@]} -gt 0 ]] || PKGS=("${ALL[@]}")

ARGS=()
for p in "${PKGS[@]}"; do
  case " ${ALL[*]} " in *" $p "*) ARGS+=(-p "$p") ;; *) echo "unknown package: $p" >&2; exit 2 ;; esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# --locked: the image is built from exactly the committed Cargo.lock.
cargo build --release --locked "${ARGS[@]}"
TARGET="${CARGO_TARGET_DIR:-target}"
mkdir -p "$OUT"
for p in "${PKGS[@]}"; do
  install -m 0755 "$TARGET/release/$p" "$OUT/$p"
done
echo "built ${PKGS[*]} into $OUT"
