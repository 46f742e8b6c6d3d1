#!/usr/bin/env bash
# Installs what ferrite needs on a fresh Debian/Ubuntu machine, and nothing that is already there.
# Today that is a Rust toolchain and a C compiler (for crates that build C). Later issues add Verilator,
# a venv with the synthesis tools and QEMU here.
set -euo pipefail

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: no Rust toolchain found; install one with rustup (https://rustup.rs), then re-run" >&2
    exit 1
  fi
fi
echo "setup: $(cargo --version)"
