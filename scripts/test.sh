#!/usr/bin/env bash
# The one test command (README.md): installs the pinned test peers, then runs every test.
#   - npm: @copilotkit/aimock (a third-party model API mock) and @mariozechner/pi-coding-agent
#     (pi itself, to read our session files), @modelcontextprotocol/server-everything (an MCP
#     server for the MCP client's tests), pinned in .testdeps/package-lock.json;
set -euo pipefail
cd "$(dirname "$0")/.."
# Reinstall only when the lock file changed since the last install.
if ! cmp -s .testdeps/package-lock.json .testdeps/node_modules/.volcanic-installed-lock; then
  npm ci --prefix .testdeps --no-audit --no-fund --loglevel=error
  cp .testdeps/package-lock.json .testdeps/node_modules/.volcanic-installed-lock
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --no-fail-fast
