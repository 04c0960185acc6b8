#!/usr/bin/env bash
# The one test command (README.md): installs the pinned test peers, then runs every test.
#   - npm: @copilotkit/aimock (a third-party model API mock) and @mariozechner/pi-coding-agent
#     (pi itself, to read our session files), pinned in .testdeps/package-lock.json;
#   - python3 (3.11, stdlib only) runs ../shared/bench/gen_pi_session.py for the session tests.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d .testdeps/node_modules ] || ! cmp -s .testdeps/package-lock.json .testdeps/node_modules/.package-lock.json; then
  npm ci --prefix .testdeps --no-audit --no-fund --loglevel=error
fi
cargo test --workspace
