# The two entry points for a fresh Debian/Ubuntu machine. Each installs what is missing first.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: demo test setup bench mutants

setup:
	bash scripts/setup.sh

## Two simulated NICs doing SEND, WRITE, READ and atomics through the verbs.
demo: setup
	cargo run --release --quiet -- demo

## The whole test suite (what CI runs): formatting, every test (the driver's on both hardware profiles), then
## clippy (it reuses the release build).
test: setup
	cargo fmt --all --check
	cargo test --release --workspace --all-targets
	FERRITE_PROFILE=large cargo test --release -p ferrite-driver --tests
	cargo clippy --release --workspace --all-targets -- -D warnings

## Model speed and bandwidth figures for BENCHMARKS.md.
bench: setup
	bash scripts/bench.sh

## Mutation testing of wire and the NIC engine with cargo-mutants (a benchmark, not CI). Narrow it with, e.g.,
## make mutants MUTANTS_SCOPE="-f model/src/nic/dcqcn.rs" MUTANTS_TESTS=ferrite-model
MUTANTS_SCOPE ?= -f 'wire/src/**/*.rs' -f 'model/src/nic/**/*.rs'
MUTANTS_TESTS ?= ferrite-wire,ferrite-model,ferrite-driver,ferrite-testbench
mutants: setup
	command -v cargo-mutants >/dev/null 2>&1 || cargo install cargo-mutants --locked
	cargo mutants --no-config --workspace --profile mutants $(MUTANTS_SCOPE) --test-package $(MUTANTS_TESTS) $(MUTANTS_ARGS)
