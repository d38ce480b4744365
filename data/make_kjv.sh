#!/usr/bin/env bash
# data/make_kjv.sh: regenerates data/kjv.txt.zst, the bundled default corpus (see data/README.md).
# Needs Debian's bible-kjv package (scripts/install_deps.sh installs it) and zstd.
set -euo pipefail
cd "$(dirname "$0")"
bible Gen1:1-Rev22:21 | zstd -19 -q -f -o kjv.txt.zst
