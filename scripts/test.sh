#!/usr/bin/env bash
# The one test command (README.md): installs the pinned test peers, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets
