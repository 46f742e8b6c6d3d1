#!/usr/bin/env bash
# Figures for BENCHMARKS.md: each line prints the command and its JSON result.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
F=./target/release/ferrite
run() { echo "\$ $*"; "$@"; echo; }
run $F profile board --json
run $F profile large --json
for p in board large; do
    run $F perf write --size 1048576 --iters 50 --profile $p --json
    run $F perf write --size 1048576 --iters 50 --pmtu 4096 --profile $p --json
    run $F perf write --size 1048576 --iters 20 --loss 0.01 --profile $p --json
    run $F perf read --size 65536 --iters 200 --profile $p --json
    run $F perf send --size 4096 --iters 2000 --profile $p --json
    run $F perf atomic --iters 2000 --qps 4 --profile $p --json
    run $F perf write --size 65536 --iters 200 --qps 8 --profile $p --json
    run $F perf write --size 64 --iters 20000 --profile $p --json
done
run $F incast --senders 4 --json
run $F incast --senders 8 --json
# The soak on both profiles, and the follower's self-test (a few minutes each).
run $F soak --scenarios 1000 --json
run $F soak --scenarios 1000 --profile large --json
run $F soak --scenarios 1000 --follow exact --json
run $F soak --scenarios 1000 --follow perturb --json
# Model speed: simulated bytes x 8 over wall seconds of the measured loop (wall_s), longer runs.
speed() {
    "$@" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.1f simulated Gb per CPU second (wall_s %.3f)" % (d["bytes"]*8/d["wall_s"]/1e9, d["wall_s"]))' \
        | sed "s|^|\$ $* -> |"
}
speed $F perf write --size 1048576 --iters 200 --json
speed $F perf write --size 1048576 --iters 200 --pmtu 4096 --json
speed $F perf write --size 65536 --iters 2000 --qps 8 --json
speed $F perf send --size 4096 --iters 20000 --pmtu 4096 --json
