#!/usr/bin/env bash
# tests/install/test_deb.sh: the .deb as a user gets it. Builds it (scripts/make_deb.sh), makes a
# clean Debian 12 root with debootstrap, installs the package there with apt (which pulls in its
# dependencies from Debian), and as an ordinary user with nothing else installed: `archipelago
# --version`, `info`, and 20 steps of training on the bundled corpus from /usr/bin/archipelago. Then
# checks that no file was written outside that user's data directory, and that the man page, the
# bash completion and the systemd unit are where they belong. Needs root and debootstrap; skips (exit
# 77, with the reason) without them. The chroot is removed at the end, whatever happens.
set -euo pipefail
SRC=$(pwd)
skip() { echo "SKIPPED: $1"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap and chroot)"
command -v debootstrap > /dev/null || skip "debootstrap is missing (apt-get install debootstrap)"
# Debian's mirror, as this machine's apt is configured (deb822 or one-line sources).
MIRROR=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$MIRROR" ] || MIRROR=$(sed -n 's/^deb \+\(\[[^]]*\] \+\)\?\([^ ]*\) \+bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
[ -n "$MIRROR" ] || skip "no Debian mirror in this machine's apt sources"

WORK=$(mktemp -d /tmp/arch-deb.XXXXXX)
ROOT=$WORK/root
cleanup() {
  for m in proc dev; do mountpoint -q "$ROOT/$m" && umount -l "$ROOT/$m"; done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== packing the .deb from ${ARCH_BUILD_DIR:-a new CPU-only build}"
DEB=$(bash scripts/make_deb.sh "${ARCH_BUILD_DIR:-$WORK/build}" OFF | grep '/archipelago_.*\.deb$')
dpkg-deb --field "$DEB" Package Version Depends
dpkg-deb --field "$DEB" Depends | grep -q cuda && { echo "FAIL: the package depends on CUDA"; exit 1; }

echo "== debootstrap bookworm (minbase) from $MIRROR"
CACHE=/var/cache/archipelago-tests/debootstrap  # kept between runs on this machine, to save downloads
mkdir -p "$CACHE"
timeout 1200 debootstrap --variant=minbase --cache-dir="$CACHE" bookworm "$ROOT" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 ||
  { tail -n 30 "$WORK/debootstrap.log"; echo "FAIL: debootstrap"; exit 1; }
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
in_root() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

echo "== apt-get install ./$(basename "$DEB")"
cp "$DEB" "$ROOT/tmp/"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$DEB")" \
  > "$WORK/apt.log" 2>&1 || { tail -n 30 "$WORK/apt.log"; echo "FAIL: apt-get install"; exit 1; }
in_root useradd --create-home tester
touch "$ROOT/tmp/before-run"
sleep 1
as_user() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/home/tester OMP_NUM_THREADS=2 \
  /usr/sbin/runuser -u tester -- /bin/sh -c "cd /home/tester && $1"; }

echo "== as a user: --version, info, train 20 steps"
as_user "/usr/bin/archipelago --version" | tee "$WORK/version.txt"
grep -q "^archipelago [0-9]" "$WORK/version.txt"
as_user "/usr/bin/archipelago info" | tee "$WORK/info.txt"
grep -q "/usr/share/archipelago" "$WORK/info.txt"
as_user "/usr/bin/archipelago train --steps 20 --val-every 10 --log-format jsonl" > "$WORK/train.jsonl" 2> "$WORK/train.err" ||
  { tail -n 20 "$WORK/train.err"; echo "FAIL: train"; exit 1; }
tail -n 3 "$WORK/train.err"
python3 - "$WORK/train.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(rows) == 20, f"expected 20 step rows, got {len(rows)}"
assert rows[-1]["step"] == 20 and rows[-1]["loss"] < rows[0]["loss"], (rows[0], rows[-1])
print(f"20 steps: loss {rows[0]['loss']:.3f} -> {rows[-1]['loss']:.3f}, val {rows[-1]['val_loss']:.3f}")
PY

echo "== nothing written outside the user's data directory"
DATA=home/tester/.local/share/archipelago
test -f "$ROOT/$DATA/runs/train/model.bin"
test -f "$ROOT/$DATA/corpus/kjv/DONE"
strays=$(cd "$ROOT" && find . -xdev -newer tmp/before-run -type f -not -path "./$DATA/*" -not -path ./tmp/before-run -print)
if [ -n "$strays" ]; then echo "FAIL: files written outside $DATA:"; echo "$strays"; exit 1; fi

echo "== man page, bash completion, systemd unit"
test -f "$ROOT/usr/share/man/man1/archipelago.1.gz"
grep -q "_archipelago" "$ROOT/usr/share/bash-completion/completions/archipelago"
grep -q -- "--log-level" "$ROOT/usr/share/bash-completion/completions/archipelago"
UNIT=$ROOT/usr/lib/systemd/system/archipelago-peer.service
grep -q "^ExecStart=/usr/bin/archipelago peer --invite /etc/archipelago/invite" "$UNIT"
# systemd's own check of the unit, inside the root (systemd is installed there for it, after the
# checks above, since the package itself does not need it).
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd > "$WORK/apt-systemd.log" 2>&1 ||
  { tail -n 20 "$WORK/apt-systemd.log"; echo "FAIL: apt-get install systemd"; exit 1; }
in_root systemd-analyze verify --man=no /usr/lib/systemd/system/archipelago-peer.service
echo "test_deb: 1 passed, 0 failed"
