#!/usr/bin/env bash
# Reproduces the comparison tables of README.md.
#
# Queue mode (the default): runs every queue scenario over converge,
# client-go and controller-runtime at full size in one `go test -bench` run,
# keeps the raw output in queue_bench.txt (for benchstat), and prints the
# Markdown table (medians over COUNT runs).
#
#   reconcile/internal/bench/run.sh                  # COUNT=5 runs of everything
#   COUNT=1 reconcile/internal/bench/run.sh -bench 'QueueS4' -queue.scale=0.1
#
# e2e mode: runs the end-to-end controller benchmark (store-only baseline,
# converge, client-go loop) twice, first over the memory store's default
# history and watch lag, then with -e2e.history=1000000 so that no watch
# lags or re-lists; raw output in e2e_bench.txt and e2e_bench_history.txt.
#
#   reconcile/internal/bench/run.sh e2e              # COUNT=5 runs of each variant
#   COUNT=1 reconcile/internal/bench/run.sh e2e -e2e.objects=10000
#
# httpload mode: runs the store load benchmark (CAS clients and verified
# watchers over the HTTP store on bolt, etcdstore on embedded etcd, and the
# context targets) through cmd/httpload; raw per-run lines in
# httpload_runs.txt, the Markdown table of medians on standard output.
#
#   reconcile/internal/bench/run.sh httpload         # 3 runs × {8, 64} clients × 6 targets, 10 s each (~8 minutes)
#   reconcile/internal/bench/run.sh httpload -targets http-bolt,etcd -clients 8 -runs 1 -duration 2s
#
# costcurve mode: measures time, allocations and framework memory per object
# of every end-to-end implementation at 10k, 100k and 1M objects (3 timed
# runs and 1 memory run each, interleaved) through cmd/costcurve, twice:
# over the memory store's defaults (costcurve.csv, costcurve.png, per-run
# lines in costcurve_runs.txt), then with -history 2000000 so that no watch
# lags or re-lists (costcurve_history.*); the Markdown tables on standard
# output (see costcurve.md). Extra arguments go to cmd/costcurve.
#
#   reconcile/internal/bench/run.sh costcurve        # ~30 minutes on 2 cores
#   reconcile/internal/bench/run.sh costcurve -sizes 1000,10000 -runs 1 -csv /tmp/c.csv -png /tmp/c.png
#
# batch mode: the batch-reconcile benchmark (one key per call against
# batches of 100, a world costing 1 ms per call) in the root module; etcd
# mode: etcdstore's compare-and-swap against the raw clientv3 transaction on
# 3 etcd processes (store/etcdstore/BENCHMARKS.md); page mode: the debug
# page over 100,000 keys (reconcile/observe/debugpage). Their figures are in the
# doc comments and files the table of README.md points to.
#
#   reconcile/internal/bench/run.sh batch            # ~2 minutes
#   reconcile/internal/bench/run.sh etcd             # ~3 minutes
#   reconcile/internal/bench/run.sh page             # ~1 minute
#
# all mode runs every mode above in turn (queue, e2e, costcurve, httpload,
# batch, etcd, page: about an hour and a half on 2 cores), each one's
# output in run_all/MODE.txt:
#
#   reconcile/internal/bench/run.sh all
#
# Extra arguments go to `go test` (to cmd/httpload in httpload mode) after
# the defaults, so they win.
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-5}

if [[ ${1:-} == all ]]; then
	shift
	mkdir -p run_all
	for mode in queue e2e costcurve httpload batch etcd page; do
		echo "## $mode, started $(date -u '+%Y-%m-%d %H:%M:%S UTC'), load average:$(uptime | sed 's/.*load average://')" >&2
		arg=$mode
		[[ $mode == queue ]] && arg=
		./run.sh $arg >"run_all/$mode.txt"
	done
	exit
fi

if [[ ${1:-} == batch ]]; then
	shift
	(cd ../../.. && go test ./reconcile -run '^$' -bench BatchAgainst -benchtime 1x -count 3 "$@")
	exit
fi

if [[ ${1:-} == etcd ]]; then
	shift
	(cd ../../../store/etcdstore && CONVERGE_ETCD_PROCS_BENCH=1 CONVERGE_ETCD_PROCS_BENCH_PHASE=400ms go test -run '^$' -bench BenchmarkCASProcs -benchtime 60x "$@" .)
	exit
fi

if [[ ${1:-} == page ]]; then
	shift
	(cd ../../.. && go test ./reconcile/observe/debugpage -run '^$' -bench Page -benchmem -count 3 "$@")
	exit
fi

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

if [[ ${1:-} == httpload ]]; then
	shift
	# The table goes to standard output (kept as fd 3); the header and
	# the per-run lines to standard error and httpload_runs.txt.
	exec 3>&1
	{
		echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores; $(go version); load average:$(uptime | sed 's/.*load average://')"
		go run ./cmd/httpload "$@" 2>&1 >&3
	} | tee httpload_runs.txt >&2
	exit
fi

if [[ ${1:-} == costcurve ]]; then
	shift
	exec 3>&1
	for variant in default history; do
		out=costcurve
		args=()
		if [[ $variant == history ]]; then
			out=costcurve_history
			args=(-history 2000000 -csv costcurve_history.csv -png costcurve_history.png)
		fi
		echo "### $variant store" >&3
		{
			echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'); $(nproc) cores; $(go version); load average:$(uptime | sed 's/.*load average://')"
			go run ./cmd/costcurve "${args[@]}" "$@" 2>&1 >&3
			echo "# done $(date -u '+%Y-%m-%d %H:%M:%S UTC'); load average:$(uptime | sed 's/.*load average://')"
		} | tee "${out}_runs.txt" >&2
	done
	exit
fi

raw=queue_bench.txt

go test -run '^$' -bench '^BenchmarkQueue' -benchmem -count "$count" -timeout 2h "$@" . | tee "$raw" >&2
go run ./cmd/queuetable < "$raw"
