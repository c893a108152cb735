#!/usr/bin/env bash
# Reproduces the comparison tables of README.md.
#
# Queue mode (the default): runs every queue scenario over converge,
# client-go and controller-runtime at full size in one `go test -bench` run,
# keeps the raw output in queue_bench.txt (for benchstat), and prints the
# Markdown table (medians over COUNT runs).
#
#   internal/bench/run.sh                  # COUNT=5 runs of everything
#   COUNT=1 internal/bench/run.sh -bench 'QueueS4' -queue.scale=0.1
#
# e2e mode: runs the end-to-end controller benchmark (store-only baseline,
# converge, client-go loop) twice, first over the memory store's default
# history and watch lag, then with -e2e.history=1000000 so that no watch
# lags or re-lists; raw output in e2e_bench.txt and e2e_bench_history.txt.
#
#   internal/bench/run.sh e2e              # COUNT=5 runs of each variant
#   COUNT=1 internal/bench/run.sh e2e -e2e.objects=10000
#
# Extra arguments go to `go test` after the defaults, so they win.
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-5}

if [[ ${1:-} == e2e ]]; then
	shift
	go test -run '^$' -bench '^BenchmarkE2E' -benchmem -count "$count" -timeout 2h "$@" . | tee e2e_bench.txt >&2
	echo "### default store (history 10 000, watch lag 1 000)"
	echo
	go run ./cmd/queuetable < e2e_bench.txt
	go test -run '^$' -bench '^BenchmarkE2E' -benchmem -count "$count" -timeout 2h -e2e.history=1000000 "$@" . | tee e2e_bench_history.txt >&2
	echo "### store with -e2e.history=1000000 (no lagging watch, no re-list)"
	echo
	go run ./cmd/queuetable < e2e_bench_history.txt
	exit
fi

raw=queue_bench.txt

go test -run '^$' -bench '^BenchmarkQueue' -benchmem -count "$count" -timeout 2h "$@" . | tee "$raw" >&2
go run ./cmd/queuetable < "$raw"
