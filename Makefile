# Heed's build. `make run` opens the window, `make test` runs every test;
# both first install the Debian packages that cgo, Fyne and go-sqlite3 need.

GO      ?= go
BIN     ?= heed
TAGS    ?= migrated_fynedo
# Under C.UTF-8, Fyne prints a locale error as it starts. heed itself is
# spared (heed/clocale), but the UI's test binaries start Fyne without it.
export LANG := en_US.UTF-8
export CGO_ENABLED := 1

DEB_PKGS := gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev \
            libxinerama-dev libxi-dev libxxf86vm-dev
# Only for `make test`: PostgreSQL, of which the tests start a throwaway cluster of their own
# (storage/postgres/pgtest); HEED_TEST_PG=off skips those tests, HEED_TEST_PG=postgres://… uses
# that server instead.
TEST_PKGS := postgresql
# Only for `make screenshot`: a virtual display and something to capture it.
SHOT_PKGS := xvfb imagemagick

# Packages that test fast with the race detector (no Fyne, no display).
RACE_PKGS := ./engine/... ./storage/...

.PHONY: deps build run test bench screenshot package clean

# deps installs the missing Debian packages, and nothing when all are there.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing:$$missing"; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(DEB_PKGS))

build: deps
	$(GO) build -tags $(TAGS) -o $(BIN) .

run: build
	./$(BIN)

# test runs e2e every time (-count=1): it builds heed with go build, which
# go test's cache cannot see.
test: deps
	$(call apt_install,$(TEST_PKGS))
	$(GO) vet -tags $(TAGS) ./...
	$(GO) test -race $(RACE_PKGS)
	$(GO) test -tags $(TAGS) $$($(GO) list ./... | grep -v -e '/engine' -e '/storage' -e '^heed/e2e$$')
	$(GO) test -tags $(TAGS) -count=1 ./e2e

# bench runs bench/make-bench.sh: on a file system made for the run (ext4 with
# its journal, on a sparse file $(BENCH_IMG) loop-mounted at $(BENCH_TMP), and
# unmounted and removed afterwards even when the run fails; a plain folder, said
# so in the report, when that cannot be made), the Go benchmarks of engine,
# storage and ui, in-process profiles of cases (a), (b) and (c), then bench/cmd/e2e
# (a module of its own: Heed's go test ./... does not build it): Heed beside curl,
# wget2, aria2c and a plain Go client on loopback demo hosts, the frontier over
# databases of $(BENCH_FRONTIER) queued jobs (cached in $(BENCH_FIXTURES) by size
# and schema), and, when BENCH_OLD names a worktree of an older commit (git
# worktree add ../old COMMIT), its BenchmarkDispatch and BenchmarkEnqueue beside
# this tree's, in turns. It writes BENCHMARKS.md from what it measured
# (BENCH_COMMIT names the measured tree there when it is not a git checkout).
BENCH_PKGS     := curl wget2 aria2 e2fsprogs
BENCH_TMP      ?= /tmp/heed-bench
BENCH_IMG      ?= /var/tmp/heed-bench.img
BENCH_FS_SIZE  ?= 16G
BENCH_FIXTURES ?= /var/tmp/heed-bench-fixtures
BENCH_FRONTIER ?= 100000,1000000,10000000
BENCH_OLD      ?=
BENCH_ARGS     ?=
BENCH_COMMIT   ?=

bench: deps
	$(call apt_install,$(BENCH_PKGS))
	GO='$(GO)' TAGS='$(TAGS)' BENCH_TMP='$(BENCH_TMP)' BENCH_IMG='$(BENCH_IMG)' BENCH_FS_SIZE='$(BENCH_FS_SIZE)' \
	  BENCH_FIXTURES='$(BENCH_FIXTURES)' BENCH_FRONTIER='$(BENCH_FRONTIER)' BENCH_OLD='$(BENCH_OLD)' \
	  BENCH_ARGS='$(BENCH_ARGS)' BENCH_COMMIT='$(BENCH_COMMIT)' bash bench/make-bench.sh

# screenshot runs `heed demo` on a virtual display and saves in shots/ the hosts
# view at 1240×760 and 900×600 (heed-hosts.png, heed-hosts-small.png), the jobs
# view with a running download (heed-jobs.png), a host's settings form
# (heed-edit.png), the Add URLs dialog (heed-paste.png), the Crawl… dialog, the
# Crawls tab and a host's robots.txt (heed-crawl-dialog.png, heed-crawls.png,
# heed-robots.png), and the window on a PostgreSQL queue with its workers
# (heed-workers.png), in a few minutes; copy them to docs/ to update the README.
screenshot: build
	$(call apt_install,$(SHOT_PKGS))
	mkdir -p shots
	./scripts/screenshot.sh ./$(BIN) shots
	$(call apt_install,$(TEST_PKGS))
	./scripts/fleet-screenshot.sh ./$(BIN) shots

package: deps
	$(GO) run fyne.io/tools/cmd/fyne@v1.7.4 package -os linux -name Heed -icon assets/icon.png -tags $(TAGS)

clean:
	rm -rf $(BIN) shots dist Heed.tar.xz
