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
	$(GO) vet -tags $(TAGS) ./...
	$(GO) test -race $(RACE_PKGS)
	$(GO) test -tags $(TAGS) $$($(GO) list ./... | grep -v -e '/engine' -e '/storage' -e '^heed/e2e$$')
	$(GO) test -tags $(TAGS) -count=1 ./e2e

# bench runs the Go benchmarks, profiles cases (a), (b) and (c) in-process
# (and the plain Go client on case (a), to set beside Heed), then times
# Heed against curl, wget2, aria2c and a plain Go client on loopback demo
# hosts (bench/cmd/e2e) and writes BENCHMARKS.md from what it measured.
# Scratch files (downloads, databases, profiles) go to $(BENCH_TMP), and the
# Go benchmarks' temporary folders too (TMPDIR), so that their databases sit on
# the same file system whatever TMPDIR the caller has. The profiled runs'
# downloads (about 1.6 GB) are kept until the comparison has ended, then removed.
BENCH_PKGS := curl wget2 aria2
BENCH_TMP  ?= /tmp/heed-bench
BENCH_SETTLE ?= 370
BENCH_ARGS ?=

bench: deps
	$(call apt_install,$(BENCH_PKGS))
	rm -rf $(BENCH_TMP) && mkdir -p $(BENCH_TMP)
	cut -d' ' -f1-3 /proc/loadavg > $(BENCH_TMP)/load-before
	mkdir -p $(BENCH_TMP)/gotmp
	TMPDIR=$(BENCH_TMP)/gotmp $(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem ./engine/... ./storage/... ./ui/... 2>&1 | tee $(BENCH_TMP)/gobench.txt
	! grep -E '^(FAIL|--- FAIL|panic:)' $(BENCH_TMP)/gobench.txt
	$(GO) test -c -o $(BENCH_TMP)/bench.test ./bench/
	@echo "waiting $(BENCH_SETTLE) s for the files deleted so far to age out (see bench.Settle)"
	sync && sleep $(BENCH_SETTLE)
	for c in A:EngineCaseA P:PlainCaseA B:EngineCaseB C:EngineManyHosts; do \
	  HEED_BENCH_KEEP=$(BENCH_TMP)/profiles $(BENCH_TMP)/bench.test -test.run '^$$' -test.bench "$${c#*:}" -test.benchtime 1x \
	    -test.cpuprofile $(BENCH_TMP)/case$${c%%:*}.cpu || exit 1; \
	  { echo '$$ go tool pprof -top -nodecount 20 -ignore demo.Start (the demo hosts starting up)'; \
	    $(GO) tool pprof -top -nodecount 20 -ignore 'demo\.Start$$' $(BENCH_TMP)/bench.test $(BENCH_TMP)/case$${c%%:*}.cpu 2>/dev/null; echo; \
	    echo '$$ go tool pprof -top -cum -nodecount 45 -ignore demo.Start'; \
	    $(GO) tool pprof -top -cum -nodecount 45 -ignore 'demo\.Start$$' $(BENCH_TMP)/bench.test $(BENCH_TMP)/case$${c%%:*}.cpu 2>/dev/null; \
	  } > $(BENCH_TMP)/case$${c%%:*}.top || exit 1; \
	done
	for c in A P; do \
	  $(GO) tool pprof -traces -ignore 'demo\.Start$$' $(BENCH_TMP)/bench.test $(BENCH_TMP)/case$$c.cpu > $(BENCH_TMP)/case$$c.traces 2>/dev/null || exit 1; \
	done
	$(GO) run ./bench/cmd/e2e -tmp $(BENCH_TMP)/e2e -settle 5s -waited $(BENCH_SETTLE)s -out BENCHMARKS.md -gobench $(BENCH_TMP)/gobench.txt \
	  -profile $(BENCH_TMP)/caseA.top -profile-b $(BENCH_TMP)/caseB.top -profile-c $(BENCH_TMP)/caseC.top \
	  -traces-a $(BENCH_TMP)/caseA.traces -traces-plain $(BENCH_TMP)/caseP.traces -load-before "$$(cat $(BENCH_TMP)/load-before)" $(BENCH_ARGS)
	@echo "removing the profiled runs' downloads ($$(du -sh $(BENCH_TMP)/profiles 2>/dev/null | cut -f1)); the profiles stay in $(BENCH_TMP)"
	rm -rf $(BENCH_TMP)/profiles $(BENCH_TMP)/gotmp

# screenshot runs `heed demo` on a virtual display and saves in shots/ the hosts
# view at 1240×760 and 900×600 (heed-hosts.png, heed-hosts-small.png), the jobs
# view with a running download (heed-jobs.png), a host's settings form
# (heed-edit.png) and the Add URLs dialog (heed-paste.png), in about two
# minutes; copy them to docs/ to update the README's pictures.
screenshot: build
	$(call apt_install,$(SHOT_PKGS))
	mkdir -p shots
	./scripts/screenshot.sh ./$(BIN) shots

package: deps
	$(GO) run fyne.io/tools/cmd/fyne@v1.7.4 package -os linux -name Heed -icon assets/icon.png -tags $(TAGS)

clean:
	rm -rf $(BIN) shots dist Heed.tar.xz
