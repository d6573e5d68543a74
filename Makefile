# The verbs people type. `make test` and `make conformance` work on a fresh Debian 12 machine:
# they install what is missing first (apt packages need root; sudo is used when not root).

GUEST_DIR ?= $(CURDIR)/.guest
DISTRO_DIR ?= $(CURDIR)/.guest-distro
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CARGO ?= cargo
STOAT := $(CURDIR)/target/debug/stoat
CONFORMANCE := $(CURDIR)/target/debug/stoat-conformance
# Runs a step and prints how long it took (a CI log shows where the time went)
STEP := $(CURDIR)/conformance/testing/step.sh
# A ramfs (no user.* xattrs) for ERRORS.no-xattr; `make test` mounts it when run as root
NO_XATTR_DIR := $(CURDIR)/target/no-xattr

.PHONY: setup host-deps guest mcp-client mcp-inspector report-consumers toolchain build dist lint test test-fast conformance golden fuzz bench docs clean \
  distro-guest test-distro bench-distro

## setup: host packages (QEMU 10 from bookworm-backports, xorriso, ssh), the test guest,
## the report consumers and the toolchain components `make lint` uses
setup: host-deps guest mcp-client mcp-inspector report-consumers toolchain

toolchain:
	if command -v rustup >/dev/null; then rustup component add clippy rustfmt; fi

host-deps:
	$(SUDO) conformance/guest/install-host-deps.sh

guest: host-deps
	$(SUDO) conformance/guest/build.sh $(GUEST_DIR)

## distro-guest: a real Debian cloud image (systemd, cloud-init) from Debian packages
distro-guest: host-deps
	$(SUDO) conformance/guest/distro/install-deps.sh
	$(SUDO) conformance/guest/distro/build.sh $(DISTRO_DIR)

## mcp-client: the Python MCP SDK (a real client no one here wrote) in target/mcp-venv
mcp-client:
	impl/cli/tests/mcp_client/setup.sh

## mcp-inspector: the official MCP Inspector CLI and a Node.js 22 from npm, in target/mcp-inspector
## (about 60 MB to download, 15-30 s in CI; a second run only compares the lock file)
mcp-inspector:
	impl/cli/tests/mcp_inspector/setup.sh

## report-consumers: prove's and npm's TAP readers, two JUnit parsers, an XSD validator and
## chromium, under target/report-consumers (tests/report_consumers.rs and the HTML screenshots)
report-consumers:
	conformance/tests/consumers/setup.sh

## dist: the suite's release tarball (stoat-conformance + stoat-fake) and its sha256 in target/dist
dist:
	ci-kit/dist.sh target/dist

## build: every binary (stoat, stoat-conformance, stoat-fake)
build:
	$(STEP) $(CARGO) build --workspace --bins

## install: the binaries, a man page per command and bash/zsh/fish completions under PREFIX
## (default /usr/local; DESTDIR for packaging). PROFILE=debug installs the debug build;
## BIN_DIR names built binaries to install as they are (no cargo run)
PREFIX ?= /usr/local
PROFILE ?= release
BIN_DIR ?=
INSTALL_BINS ?= stoat stoat-conformance stoat-fake
install:
	$(if $(BIN_DIR),,$(CARGO) build --workspace --bins $(if $(filter release,$(PROFILE)),--release))
	set -e; bins="$(or $(BIN_DIR),$(CURDIR)/target/$(PROFILE))"; dest="$(DESTDIR)$(PREFIX)"; \
	  install -d "$$dest/bin" "$$dest/share/man/man1" "$$dest/share/bash-completion/completions" \
	    "$$dest/share/zsh/site-functions" "$$dest/share/fish/vendor_completions.d"; \
	  for bin in $(INSTALL_BINS); do install -m 0755 "$$bins/$$bin" "$$dest/bin/$$bin"; done; \
	  "$$bins/stoat" man --dir "$$dest/share/man/man1" >/dev/null; \
	  "$$bins/stoat" completions bash > "$$dest/share/bash-completion/completions/stoat"; \
	  "$$bins/stoat" completions zsh > "$$dest/share/zsh/site-functions/_stoat"; \
	  "$$bins/stoat" completions fish > "$$dest/share/fish/vendor_completions.d/stoat.fish"

## lint: formatting and clippy, warnings as errors, the fuzz targets (outside the workspace)
## still compile, and no file-level circle in the suite's crates
## (conformance/testing/modgraph.py lists any; --floors draws the layers)
lint:
	$(CARGO) fmt --all --check
	$(STEP) $(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTC_BOOTSTRAP=1 $(STEP) $(CARGO) check --manifest-path fuzz/Cargo.toml --bins
	python3 conformance/testing/modgraph.py conformance/src
	python3 conformance/testing/modgraph.py conformance/fakes/src
	python3 conformance/testing/modgraph.py impl/core/src --folders
	python3 conformance/testing/modgraph.py impl/cli/src

## test: every tier: pure and fake everywhere, the ignored real tier (needs the built guest),
## the report consumers required, a short fuzz smoke, then the distro tier (test-distro: builds
## the Debian cloud image the first time). The quote tests need the contract texts, which live
## outside this repository: STOAT_SHARED_DIR=DIR cargo test --test catalog_lint -- --ignored.
## The ten-runs verdict check (30 whole runs, about 10 minutes) is a long check of its own:
## cargo test -p stoat-conformance --test verdicts -- --ignored
## The cargo tests run without backtraces, so the end of a CI log keeps a failure's message.
test: setup build lint
	conformance/testing/no-xattr-dir.sh $(NO_XATTR_DIR)
	RUST_BACKTRACE=0 STOAT_REAL_GUEST=$(GUEST_DIR) STOAT_REPORT_CONSUMERS=$(CURDIR)/target/report-consumers $(STEP) $(CARGO) test --workspace -- --include-ignored --skip test_distro:: --skip quote_is_verbatim --skip ten_runs_without_a_seed
	STOAT_CONFORMANCE_NO_XATTR_DIR=$(NO_XATTR_DIR) $(STEP) $(CONFORMANCE) run --guest $(GUEST_DIR) -- $(STOAT)
	$(STEP) $(CONFORMANCE) explore --out target/explore-failures -- $(STOAT)
	$(STEP) $(CONFORMANCE) explore --concurrent 3 --out target/explore-failures -- $(STOAT)
	FUZZ_BUILD=dev $(STEP) fuzz/smoke.sh 3
	$(STEP) $(MAKE) test-distro

## test-fast: pure and fake tiers only (no apt, no guest); the real tier shows as ignored
test-fast:
	$(CARGO) test --workspace

## test-distro: stoat's lifecycle on the Debian cloud image, then the suite's real tier on it
## (docs/distro-guest.md); one booting run at a time on this host
test-distro: distro-guest build
	STOAT_DISTRO_GUEST=$(DISTRO_DIR) flock /tmp/stoat-guest.lock \
	  $(STEP) $(CARGO) test -p stoat-cli --test cli test_distro:: -- --include-ignored --test-threads=1
	flock /tmp/stoat-guest.lock $(STEP) $(CONFORMANCE) run --tier real --guest $(DISTRO_DIR) -- $(STOAT)

## conformance: the suite against the reference stoat
conformance: setup build
	$(CONFORMANCE) run --guest $(GUEST_DIR) --report-json target/conformance-report.json --html target/conformance-report.html -- $(STOAT)

## bench: fixed costs of stoat, printed as ratios against named baselines
bench:
	$(CARGO) bench -p stoat-cli --bench invocation
	impl/cli/benches/pull_vs_curl.sh
	impl/cli/benches/clone_vs_copy.sh
	GUEST=$(GUEST_DIR) impl/cli/benches/runtime_vs_raw.sh
	GUEST=$(GUEST_DIR) impl/cli/benches/net_guard.sh
	DISTRO_GUEST=$(DISTRO_DIR) impl/cli/benches/distro_boot.sh
	$(CARGO) build -p stoat-cli && $(CARGO) bench -p stoat-conformance --bench suite

## bench-distro: boot-to-reachable of the Debian image, stoat vs raw QEMU, first and second boot
bench-distro: distro-guest
	DISTRO_GUEST=$(DISTRO_DIR) impl/cli/benches/distro_boot.sh

## golden: replay every golden transcript against the reference (docs/golden.md)
golden: build
	$(CONFORMANCE) golden verify --reference -- $(STOAT)

## fuzz: every cargo-fuzz target for FUZZ_SECONDS each (docs/fuzzing.md)
FUZZ_SECONDS ?= 300
fuzz:
	fuzz/smoke.sh $(FUZZ_SECONDS)

docs:
	$(CONFORMANCE) list --format md > docs/checks.md

clean:
	-if [ "$$(stat -f -c %T $(NO_XATTR_DIR) 2>/dev/null)" = ramfs ]; then $(SUDO) umount $(NO_XATTR_DIR); fi
	$(CARGO) clean
