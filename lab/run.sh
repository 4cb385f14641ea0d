#!/usr/bin/env bash
# mcpsift traffic lab: install what the lab needs (on a fresh Debian machine, as root) and
# regenerate every capture into lab/captures/.
#
#   lab/run.sh                      # all scenarios
#   lab/run.sh sse_cut_ts stdio_py  # only these
#   LAB_SKIP_INSTALL=1 lab/run.sh   # reuse what is installed
#
# Everything runs on 127.0.0.1 (ports 18080-18082), except the impaired_net_* scenarios, which run
# in three network namespaces of their own (mcpsift-lab-{c,b,s}, 10.77.0.0/24 inside them only);
# every process is started and stopped by PID (tools/run_lab.py); a trap stops the runner and
# deletes those three namespaces if this script is interrupted.
set -euo pipefail
LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$LAB"

log() { echo "[run.sh] $*" >&2; }

install() {
  local apt_pkgs=()
  command -v tcpdump >/dev/null || apt_pkgs+=(tcpdump)
  command -v tshark >/dev/null || apt_pkgs+=(tshark)
  command -v ethtool >/dev/null || apt_pkgs+=(ethtool)   # impaired_net_*: offloads off on the lab's veths
  command -v node >/dev/null || apt_pkgs+=(nodejs)
  command -v npm >/dev/null || apt_pkgs+=(npm)
  python3 -c 'import venv, ensurepip' 2>/dev/null || apt_pkgs+=(python3-venv)
  if ((${#apt_pkgs[@]})); then
    log "apt-get install ${apt_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark's package asks whether non-root users may capture; answer without a prompt
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
  fi
  if [ ! -x .venv-mcp/bin/python ]; then python3 -m venv .venv-mcp; fi
  if [ ! -x .venv-mitm/bin/python ]; then python3 -m venv .venv-mitm; fi
  log "pip: requirements.txt -> .venv-mcp, requirements-mitm.txt -> .venv-mitm"
  .venv-mcp/bin/pip install -q --disable-pip-version-check -r requirements.txt
  .venv-mitm/bin/pip install -q --disable-pip-version-check -r requirements-mitm.txt
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci (package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
  # The Rust SDK (rmcp) peers: one release build from peers/rust/Cargo.lock into peers/rust/target
  # (git-ignored; not part of the mcpsift build). cargo skips it when nothing changed.
  command -v cargo >/dev/null || { log "cargo is needed for the rmcp peers (peers/rust)"; exit 2; }
  log "cargo build --release --locked (peers/rust, rmcp)"
  cargo build --release --locked --quiet --manifest-path peers/rust/Cargo.toml
}

[ "$(id -u)" = 0 ] || { log "run as root (tcpdump/dumpcap capture on lo, apt-get)"; exit 2; }
[ "${LAB_SKIP_INSTALL:-}" = 1 ] || install

runner=""
cleanup() {
  if [ -n "$runner" ] && kill -0 "$runner" 2>/dev/null; then
    kill -TERM "$runner" 2>/dev/null || true   # run_lab.py stops the processes it started, by PID
    wait "$runner" 2>/dev/null || true
  fi
  # the runner deletes its namespaces itself; this catches a runner that could not (killed hard)
  for ns in mcpsift-lab-c mcpsift-lab-b mcpsift-lab-s; do
    if ip netns list 2>/dev/null | grep -qx "$ns\( .*\)\?"; then ip netns del "$ns" 2>/dev/null || true; fi
  done
}
trap cleanup EXIT INT TERM

python3 tools/run_lab.py "$@" &
runner=$!
set +e
wait "$runner"
rc=$?
runner=""
set -e
du -sh captures >&2
exit "$rc"
