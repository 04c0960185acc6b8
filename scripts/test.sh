#!/usr/bin/env bash
# The one test command (README.md): installs the pinned test peers, then checks formatting, lints
# and the documentation and runs every test.
#   - npm: @copilotkit/aimock (a third-party model API mock) and @mariozechner/pi-coding-agent
#     (pi itself, to read our session files), @modelcontextprotocol/server-everything (an MCP
#     server for the MCP client's tests), @modelcontextprotocol/conformance with node@22 (the
#     runner needs Node 22), @a2a-js/sdk with express (an A2A peer written by others), pinned in
#     .testdeps/package-lock.json;
#   - Python (.testdeps/venv): a2a-sdk, uvicorn and mcp, every package pinned in
#     .testdeps/requirements.txt;
#   - Debian: espeak-ng and opus-tools (opusenc), which the voice tests speak real notes with;
#     podman, busybox-static and binutils (objcopy), with which the container test builds the
#     image (bot/tests/e2e/container.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
# The voice and container tests' Debian packages, when missing: `apt-get update` once, then
# install. Without root or apt those tests fail, naming what to install.
missing=""
command -v espeak-ng > /dev/null || missing="$missing espeak-ng"
command -v opusenc > /dev/null || missing="$missing opus-tools"
command -v podman > /dev/null || missing="$missing podman"
command -v busybox > /dev/null || missing="$missing busybox-static"
command -v objcopy > /dev/null || missing="$missing binutils"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
  else
    echo "voice and container tests need:$missing (apt-get install$missing, as root)" >&2
  fi
fi
# Reinstall only when the lock file changed since the last install.
if ! cmp -s .testdeps/package-lock.json .testdeps/node_modules/.volcanic-installed-lock; then
  npm ci --prefix .testdeps --no-audit --no-fund --loglevel=error
  cp .testdeps/package-lock.json .testdeps/node_modules/.volcanic-installed-lock
fi
if ! cmp -s .testdeps/requirements.txt .testdeps/venv/.volcanic-installed-requirements; then
  rm -rf .testdeps/venv
  python3 -m venv .testdeps/venv
  .testdeps/venv/bin/pip install --quiet --disable-pip-version-check -r .testdeps/requirements.txt
  cp .testdeps/requirements.txt .testdeps/venv/.volcanic-installed-requirements
fi
cargo fmt --all -- --check
# The example host feature is built into the binary the end-to-end tests run (a release build
# leaves it out); clippy checks the code with and without it.
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy --workspace --all-targets --quiet --features volcanic-bot/example-feature -- -D warnings
# The documentation: rustdoc with warnings denied (a broken intra-doc link fails), and every
# relative link in README.md and docs/*.md names a file that exists.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --quiet
broken=$(for md in README.md docs/*.md; do
  grep -o '](\([^)]*\))' "$md" | sed -e 's/^](//' -e 's/)$//' -e 's/#.*//' | while read -r target; do
    case "$target" in '' | http://* | https://* | mailto:*) continue ;; esac
    [ -e "$(dirname "$md")/$target" ] || echo "$md: $target"
  done || true
done)
if [ -n "$broken" ]; then
  printf 'Broken links in the docs:\n%s\n' "$broken" >&2
  exit 1
fi
cargo test --workspace --no-fail-fast --features volcanic-bot/example-feature
