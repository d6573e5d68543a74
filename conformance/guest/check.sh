#!/usr/bin/env bash
# check.sh OUTDIR: boot what build.sh made, once per variant, under TCG.
#
# Cloud variant: the way stoat boots a cloud VM (qcow2 overlay on the image,
# resized to 8G; a NoCloud seed ISO in stoat's #cloud-config-archive shape with
# the user, key, console password, 9p mounts and one recipe; -daemonize,
# -pidfile, QMP and monitor sockets, serial to a file). Then: ssh as stoat,
# sudo, the 9p work share, the recipe's marker, binary-safe stdout, and power
# off through QMP system_powerdown. Fast variant: -kernel vmlinux, ssh as root.
# Prints timings. Every QEMU it starts is stopped by its own PID on any exit.
set -euo pipefail

die() { echo "guest/check: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: $0 OUTDIR"
OUT=$(cd "$1" && pwd)
for tool in qemu-system-x86_64 qemu-img xorriso ssh python3; do
  command -v "$tool" > /dev/null || die "missing tool: $tool (run install-host-deps.sh)"
done
C=$(mktemp -d /tmp/stoat-guest-check.XXXXXX)
QPID=
cleanup() {
  if [ -n "$QPID" ] && kill -0 "$QPID" 2> /dev/null; then kill "$QPID"; fi
  rm -rf "$C"
}
trap cleanup EXIT
# A QEMU that exited stays a zombie until PID 1 reaps it, which on these
# machines takes ~1.6 s: kill -0 still succeeds then. Alive means "not a zombie".
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ]
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
FAILS=0
expect() {  # description expected actual
  if [ "$2" = "$3" ]; then echo "  ok: $1"; else echo "  FAIL: $1: expected [$2], got [$3]"; FAILS=$((FAILS + 1)); fi
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
qmp() {  # SOCKET COMMAND [JSON-ARGS]: prints the return value, or the error's desc
  python3 - "$@" << 'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); f = s.makefile("rw")
f.readline()
def cmd(name, args=None):
    msg = {"execute": name}
    if args: msg["arguments"] = args
    f.write(json.dumps(msg) + "\n"); f.flush()
    while True:          # skip events until the reply
        r = json.loads(f.readline())
        if "return" in r or "error" in r: return r
cmd("qmp_capabilities")
r = cmd(sys.argv[2], json.loads(sys.argv[3]) if len(sys.argv) > 3 else None)
print(r["error"]["desc"] if "error" in r else json.dumps(r["return"]))
PY
}
# Both waits run in $(...): their die ends only that subshell, so callers
# assign the result (ms=$(...)), which makes set -e stop the script.
BOOT_TIMEOUT_MS=180000   # a loaded 2-core machine has needed 34 s; keep a wide margin
wait_ready() {  # CONSOLE START_MS: until STOAT-GUEST-READY, then prints ms
  while [ $(($(now_ms) - $2)) -lt $BOOT_TIMEOUT_MS ]; do
    grep -qa STOAT-GUEST-READY "$1" 2> /dev/null && { echo $(($(now_ms) - $2)); return 0; }
    alive "$QPID" || { cat "$1" >&2; die "QEMU exited during boot"; }
    sleep 0.05
  done
  cat "$1" >&2; die "guest not ready after $((BOOT_TIMEOUT_MS / 1000)) s"
}
wait_ssh() {  # START_MS SSH...: until ssh true works, then prints ms
  local start=$1; shift
  for _ in $(seq 1 100); do
    "$@" true 2> /dev/null && { echo $(($(now_ms) - start)); return 0; }
    sleep 0.1
  done
  die "ssh did not answer"
}
power_off() {  # SOCKET: system_powerdown, then wait for the PID to go
  local t0; t0=$(now_ms)
  qmp "$1" system_powerdown > /dev/null
  for _ in $(seq 1 400); do alive "$QPID" || break; sleep 0.025; done
  alive "$QPID" && die "guest ignored system_powerdown"
  QPID=
  echo "  powerdown to QEMU exit: $(($(now_ms) - t0)) ms"
}

# ---------------------------------------------------------------- cloud variant
echo "cloud variant: $OUT/stoat-testguest-cloud.qcow2"
V=$C/vm; mkdir -p "$V/ovl/seed" "$C/shared/vm"; chmod 700 "$C/shared/vm"
PUB=$(cat "$OUT/id_ed25519.pub")
cat > "$V/ovl/seed/user-data" << EOF
#cloud-config-archive
- type: text/cloud-config
  content: |
    #cloud-config
    merge_how: "list(append)+dict(recurse_list)"
    users:
      - name: stoat
        sudo: "ALL=(ALL) NOPASSWD:ALL"
        shell: /bin/bash
        ssh_authorized_keys:
          - $PUB
        lock_passwd: false
        plain_text_passwd: "stoat"
    ssh_pwauth: false
- type: text/cloud-config
  content: |
    #cloud-config
    merge_how: "list(append)+dict(recurse_list)"
    mounts:
      - [ work, /mnt/work, 9p, "trans=virtio,version=9p2000.L,rw,_netdev,nofail", "0", "0" ]
- type: text/cloud-config
  content: |
    #cloud-config
    merge_how: "list(append)+dict(recurse_list)"
    write_files:
      - path: /var/lib/stoat/recipes/hello.sh
        permissions: "0755"
        content: |
          #!/bin/sh
          echo "hello from the hello recipe"
    runcmd:
      - /var/lib/stoat/recipes/hello.sh && mkdir -p /var/lib/stoat/.applied && touch /var/lib/stoat/.applied/hello
EOF
printf 'instance-id: "stoat-vm"\nlocal-hostname: "vm"\n' > "$V/ovl/seed/meta-data"
xorriso -as mkisofs -o "$V/ovl/seed.iso" -V CIDATA -J -r "$V/ovl/seed" 2> /dev/null
qemu-img create -q -f qcow2 -b "$OUT/stoat-testguest-cloud.qcow2" -F qcow2 "$V/disk.qcow2"
qemu-img resize -q "$V/disk.qcow2" 8G
PORT=$(free_port)
SSH=(ssh -p "$PORT" -i "$OUT/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
  -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=5 stoat@127.0.0.1)
B0=$(now_ms)
qemu-system-x86_64 -accel tcg -cpu max -m 256 -smp 1 -daemonize -pidfile "$V/qemu.pid" \
  -monitor unix:"$V/monitor.sock",server=on,wait=off -qmp unix:"$V/qmp.sock",server=on,wait=off \
  -chardev file,id=con0,path="$V/console.log",append=on -serial chardev:con0 \
  -netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$PORT"-:22 -device virtio-net,netdev=n0 \
  -display none -vnc unix:"$V/vnc.sock" -device qemu-xhci,id=xhci -device usb-tablet \
  -virtfs local,path="$C/shared/vm",mount_tag=work,security_model=mapped-xattr \
  -drive file="$V/disk.qcow2",if=virtio -drive file="$V/ovl/seed.iso",media=cdrom
QPID=$(cat "$V/qemu.pid")
echo "  QEMU started (pid $QPID) in $(($(now_ms) - B0)) ms"
ms=$(wait_ready "$V/console.log" "$B0"); echo "  STOAT-GUEST-READY on serial: $ms ms"
ms=$(wait_ssh "$B0" "${SSH[@]}"); echo "  boot-to-ssh: $ms ms"
expect "id + binary stdout (hex)" \
  "$(printf 'uid=1000(stoat) gid=1000(stoat) groups=1000(stoat)\n\377\376' | od -An -tx1 | tr -d ' \n')" \
  "$("${SSH[@]}" 'id; printf "\xff\xfe"' | od -An -tx1 | tr -d ' \n')"
expect "sudo -n" root "$("${SSH[@]}" 'sudo -n id -un')"
expect "9p work at /mnt/work" 9p "$("${SSH[@]}" 'awk "\$2 == \"/mnt/work\" {print \$3}" /proc/mounts')"
"${SSH[@]}" 'echo from-guest | sudo tee /mnt/work/guest.txt > /dev/null'
expect "9p write visible on the host" from-guest "$(cat "$C/shared/vm/guest.txt" 2> /dev/null)"
expect "write_files + runcmd marker" hello "$("${SSH[@]}" 'ls /var/lib/stoat/.applied')"
expect "cloud-init status" "status: done" "$("${SSH[@]}" 'cloud-init status')"
expect "hostname from meta-data" vm "$("${SSH[@]}" hostname)"
expect "QMP query-status" '"running"' "$(qmp "$V/qmp.sock" query-status | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["status"]))')"
power_off "$V/qmp.sock"

# ---------------------------------------------------------------- fast variant
echo "fast variant: $OUT/vmlinux + $OUT/initramfs-fast.cpio.gz"
F=$C/fast; mkdir -p "$F"
PORT=$(free_port)
SSH=(ssh -p "$PORT" -i "$OUT/id_ed25519" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
  -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=5 root@127.0.0.1)
B0=$(now_ms)
qemu-system-x86_64 -accel tcg -cpu max -m 256 -smp 1 -daemonize -pidfile "$F/qemu.pid" \
  -qmp unix:"$F/qmp.sock",server=on,wait=off -display none \
  -kernel "$OUT/vmlinux" -initrd "$OUT/initramfs-fast.cpio.gz" -append "console=ttyS0 quiet panic=-1 no_timer_check" \
  -chardev file,id=con0,path="$F/console.log",append=on -serial chardev:con0 \
  -netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$PORT"-:22 -device virtio-net,netdev=n0 \
  -virtfs local,path="$C/shared/vm",mount_tag=work,security_model=mapped-xattr
QPID=$(cat "$F/qemu.pid")
ms=$(wait_ready "$F/console.log" "$B0"); echo "  STOAT-GUEST-READY on serial: $ms ms"
ms=$(wait_ssh "$B0" "${SSH[@]}"); echo "  boot-to-ssh: $ms ms"
expect "9p tag mounted at /mnt/work" from-guest "$("${SSH[@]}" 'cat /mnt/work/guest.txt')"
power_off "$F/qmp.sock"

[ "$FAILS" = 0 ] || die "$FAILS check(s) failed"
echo "check passed"
