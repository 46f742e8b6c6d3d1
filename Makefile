# The two entry points for a fresh Debian/Ubuntu machine. Each installs what is missing first.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup bench

setup:
	bash scripts/setup.sh

## Two simulated NICs doing SEND, WRITE, READ and atomics through the verbs.
demo: setup
	cargo run --release --quiet -- demo

## The whole test suite (what CI runs).
test: setup
	cargo test --release --workspace --all-targets

## Model speed and bandwidth figures for BENCHMARKS.md.
bench: setup
	bash scripts/bench.sh
