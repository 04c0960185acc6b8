#!/usr/bin/env bash
# Lays out the root file system of the container image (the runtime stage of Containerfile,
# which is FROM scratch), from a built volcanic-bot and the host's own files. The container test
# (bot/tests/e2e/container.rs) runs it on the test build, so what it checks is what ships.
#
# Usage: scripts/container-rootfs.sh BINARY OUT
#   OUT/rootfs  /usr/local/bin/volcanic-bot; bash and busybox's commands (the agents' `bash`
#               tool, skill hooks and watchers run shell commands); every library `ldd` names for
#               them, at the path it names; CA certificates; zoneinfo; /etc/passwd and /etc/group
#               with the user `volcanic` (uid and gid 10001); /tmp.
#   OUT/state   the empty /var/lib/volcanic (data/, workspaces/), which the Containerfile copies
#               owned by 10001 (a scratch image has no RUN to chown it).
# Needs: ldd, bash, busybox (Debian's busybox-static), /etc/ssl/certs/ca-certificates.crt
# (ca-certificates), /usr/share/zoneinfo (tzdata).
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 BINARY OUT" >&2; exit 2; }
binary=$1
out=$2
root=$out/rootfs
for need in ldd bash busybox; do
  command -v "$need" > /dev/null || { echo "$0: needs $need on PATH" >&2; exit 1; }
done
for need in /etc/ssl/certs/ca-certificates.crt /usr/share/zoneinfo/UTC; do
  [ -e "$need" ] || { echo "$0: needs $need (apt-get install ca-certificates tzdata)" >&2; exit 1; }
done
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc/ssl/certs,etc/volcanic,usr/share,var/lib}
install -m 755 "$binary" "$root/usr/local/bin/volcanic-bot"
install -m 755 "$(command -v bash)" "$root/bin/bash"
install -m 755 "$(command -v busybox)" "$root/bin/busybox"

# The libraries of each dynamic program, copied (links followed) to the path ldd names: the
# loader finds them where the program was linked to look. A static busybox has none.
libraries() {
  ldd "$1" 2> /dev/null | sed -n -e 's/^.*=> \(\/[^ ]*\) (0x.*$/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (0x.*$/\1/p' || true
}
for program in "$root/usr/local/bin/volcanic-bot" "$root/bin/bash"; do
  for lib in $(libraries "$program"); do
    [ -e "$root$lib" ] || install -D -m 755 "$(readlink -f "$lib")" "$root$lib"
  done
done
[ -n "$(libraries "$root/usr/local/bin/volcanic-bot")" ] || {
  echo "$0: ldd found no libraries for $binary (not a dynamic Linux program?)" >&2
  exit 1
}

# busybox's commands (ls, cat, grep, sed, sh, ...) as links, except where a program is already
# (and its /linuxrc, which is for booting).
for applet in $(busybox --list-full); do
  case "$applet" in */*) ;; *) continue ;; esac
  [ -e "$root/$applet" ] || [ -L "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
cp -a /usr/share/zoneinfo "$root/usr/share/"
cat > "$root/etc/passwd" << 'EOF'
root:x:0:0:root:/root:/sbin/nologin
volcanic:x:10001:10001:Volcanic:/var/lib/volcanic:/sbin/nologin
EOF
cat > "$root/etc/group" << 'EOF'
root:x:0:
volcanic:x:10001:
EOF
install -d -m 1777 "$root/tmp"
install -d -m 700 "$out/state" "$out/state/data" "$out/state/workspaces"
