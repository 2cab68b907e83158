#!/usr/bin/env bash
# What `make bench` runs (the Makefile passes its variables in the environment):
#
#  1. makes the scratch folder $BENCH_TMP a file system made for this run: ext4, with its
#     journal, on a sparse file ($BENCH_IMG, $BENCH_FS_SIZE) mounted through a loop device —
#     or, when that is impossible, a plain folder, which the report then says;
#  2. runs the Go benchmarks of Heed's packages (engine, storage, ui) from the root, their
#     temporary folders on that file system;
#  3. profiles cases (a), (b) and (c) in-process (bench.test) and the plain client on case (a);
#  4. runs bench/cmd/e2e: Heed beside curl, wget2, aria2c and the plain clients, the frontier
#     over databases of $BENCH_FRONTIER queued jobs (fixtures cached in $BENCH_FIXTURES), the crawl
#     of issue #31 (heed crawl beside wget2 -r over a loopback site of 2,000 hosts), and,
#     when $BENCH_OLD names a worktree of an older commit, its BenchmarkDispatch and
#     BenchmarkEnqueue beside this tree's; e2e writes BENCHMARKS.md;
#  5. unmounts the file system and removes its file, whether or not the run succeeded.
#
# Why a file system made for the run: the figures then carry no earlier run's deletions and no
# other disk use. Why ext4 on a loop device rather than a tmpfs: Heed syncs every file it
# downloads and every commit, the other tools sync nothing, and a tmpfs would make a sync free;
# on the loop device a sync reaches the machine's disk. Why with a journal: an ext4 without one
# (as this machine's own disk is) checks every recently freed inode on each create, so for
# minutes after thousands of deletions a create costs 10–30 times more.
set -euo pipefail

GO=${GO:-go}
TAGS=${TAGS:-migrated_fynedo}
BENCH_TMP=${BENCH_TMP:-/tmp/heed-bench}
BENCH_IMG=${BENCH_IMG:-/var/tmp/heed-bench.img}
BENCH_FS_SIZE=${BENCH_FS_SIZE:-16G}
BENCH_FIXTURES=${BENCH_FIXTURES:-/var/tmp/heed-bench-fixtures}
BENCH_FRONTIER=${BENCH_FRONTIER:-100000,1000000,10000000}
BENCH_OLD=${BENCH_OLD:-}
BENCH_ARGS=${BENCH_ARGS:-}
# What the measured tree is, for the report, when it is not a git checkout of its own.
BENCH_COMMIT=${BENCH_COMMIT:-}

root=$(cd "$(dirname "$0")/.." && pwd)
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo

mounted=""
cleanup() {
	status=$?
	cd "$root"
	if [ -n "$mounted" ]; then
		echo "unmounting $BENCH_TMP and removing $BENCH_IMG"
		$sudo umount "$BENCH_TMP" || $sudo umount -l "$BENCH_TMP" || true
	fi
	rm -f "$BENCH_IMG"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A run that was killed may have left its file system mounted.
if mountpoint -q "$BENCH_TMP" 2>/dev/null; then
	$sudo umount "$BENCH_TMP"
fi
rm -rf "$BENCH_TMP"
mkdir -p "$BENCH_TMP"

fresh=""
why=""
rm -f "$BENCH_IMG"
mkdir -p "$(dirname "$BENCH_IMG")"
if ! out=$(truncate -s "$BENCH_FS_SIZE" "$BENCH_IMG" 2>&1); then
	why="truncate: $out"
elif ! out=$(mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 -L heed-bench "$BENCH_IMG" 2>&1); then
	why="mkfs.ext4: $out"
elif ! out=$($sudo mount -o loop,noatime "$BENCH_IMG" "$BENCH_TMP" 2>&1); then
	why="mount: $out"
else
	mounted=1
	fresh=1
	[ -z "$sudo" ] || $sudo chown "$(id -u):$(id -g)" "$BENCH_TMP"
fi
if [ -n "$fresh" ]; then
	fsinfo="ext4 with a journal, made for this run (mkfs.ext4 on a sparse $BENCH_FS_SIZE file, loop-mounted, noatime)"
else
	fstype=$(df -T --output=fstype "$BENCH_TMP" 2>/dev/null | tail -1 | tr -d ' ')
	fsinfo="a plain folder on the machine's ${fstype:-unknown} file system, not one made for the run (${why//|/ })"
	echo "could not make a file system for the run, measuring in a plain folder: $why" >&2
	rm -f "$BENCH_IMG"
fi
echo "scratch folder $BENCH_TMP: $fsinfo"

cut -d' ' -f1-3 /proc/loadavg >"$BENCH_TMP/load-before"
gotmp=$BENCH_TMP/gotmp
mkdir -p "$gotmp"

# 2. The Go benchmarks of Heed's own packages, from the root module.
(cd "$root" && TMPDIR=$gotmp $GO test -tags "$TAGS" -run '^$' -bench . -benchmem ./engine/... ./storage/... ./ui/...) 2>&1 |
	tee "$BENCH_TMP/gobench.txt" || true
# A failed Go benchmark is listed in the report, and make bench fails once the report is written.
gofailed=""
if grep -E '^(FAIL|--- FAIL|panic:)' "$BENCH_TMP/gobench.txt"; then
	gofailed=1
	echo "a Go benchmark failed; going on, the report lists it, and make bench fails at the end" >&2
fi
rm -rf "$gotmp" && mkdir -p "$gotmp"

# 3. The in-process profiles, from the bench module.
cd "$root/bench"
$GO test -c -o "$BENCH_TMP/bench.test" .
for c in A:EngineCaseA P:PlainCaseA B:EngineCaseB C:EngineManyHosts; do
	id=${c%%:*}
	TMPDIR=$gotmp "$BENCH_TMP/bench.test" -test.run '^$' -test.bench "${c#*:}" -test.benchtime 1x \
		-test.cpuprofile "$BENCH_TMP/case$id.cpu"
	{
		echo '$ go tool pprof -top -nodecount 20 -ignore demo.Start (the demo hosts starting up)'
		$GO tool pprof -top -nodecount 20 -ignore 'demo\.Start$' "$BENCH_TMP/bench.test" "$BENCH_TMP/case$id.cpu" 2>/dev/null
		echo
		echo '$ go tool pprof -top -cum -nodecount 45 -ignore demo.Start'
		$GO tool pprof -top -cum -nodecount 45 -ignore 'demo\.Start$' "$BENCH_TMP/bench.test" "$BENCH_TMP/case$id.cpu" 2>/dev/null
	} >"$BENCH_TMP/case$id.top"
	rm -rf "$gotmp" && mkdir -p "$gotmp"
done
for id in A P; do
	$GO tool pprof -traces -ignore 'demo\.Start$' "$BENCH_TMP/bench.test" "$BENCH_TMP/case$id.cpu" >"$BENCH_TMP/case$id.traces" 2>/dev/null
done

# 4. The comparison, the frontier, the crawl and the old/new table; e2e writes BENCHMARKS.md.
freshflag=()
[ -z "$fresh" ] || freshflag=(-fresh-fs)
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
TMPDIR=$gotmp $GO run ./cmd/e2e -repo "$root" -tmp "$BENCH_TMP/e2e" -out "$root/BENCHMARKS.md" \
	-gobench "$BENCH_TMP/gobench.txt" -profile "$BENCH_TMP/caseA.top" -profile-b "$BENCH_TMP/caseB.top" \
	-profile-c "$BENCH_TMP/caseC.top" -traces-a "$BENCH_TMP/caseA.traces" -traces-plain "$BENCH_TMP/caseP.traces" \
	-load-before "$(cat "$BENCH_TMP/load-before")" -fs "$fsinfo" "${freshflag[@]}" \
	-old "$BENCH_OLD" -fixtures "$BENCH_FIXTURES" -frontier "$BENCH_FRONTIER" -commit "$BENCH_COMMIT" $BENCH_ARGS
if [ -n "$gofailed" ]; then
	echo "BENCHMARKS.md is written, but a Go benchmark failed (listed there)" >&2
	exit 1
fi
