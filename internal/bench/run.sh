#!/usr/bin/env bash
# Reproduces the queue comparison table of README.md: runs every queue
# scenario over converge, client-go and controller-runtime at full size in one
# `go test -bench` run, keeps the raw output in queue_bench.txt (for
# benchstat), and prints the Markdown table (medians over COUNT runs).
#
#   internal/bench/run.sh                  # COUNT=5 runs of everything
#   COUNT=1 internal/bench/run.sh -bench 'QueueS4' -queue.scale=0.1
#
# Extra arguments go to `go test` after the defaults, so they win.
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-5}
raw=queue_bench.txt

go test -run '^$' -bench '^BenchmarkQueue' -benchmem -count "$count" -timeout 2h "$@" . | tee "$raw" >&2
go run ./cmd/queuetable < "$raw"
