# cni-multi: one static binary for every CNI plugin.
#   make               static release binary: target/cni-multi for x86_64 (ARCH=amd64),
#                      target/arm64/cni-multi for aarch64 (ARCH=arm64), on any machine;
#                      ARCH defaults to this machine's (amd64 unless it is aarch64)
#   make install       binary + one stub per plugin into $(DESTDIR)$(BINDIR),
#                      a link to it in $(DESTDIR)$(PREFIX)/bin (on PATH),
#                      and the systemd units (dhcp daemon, doctor) into $(DESTDIR)$(SYSTEMDDIR)
#   make test          THE test command: installs missing system packages, then
#                      fmt, clippy, unit + integration tests, static install check,
#                      the README's first run (tests/first-run.sh)
#   make test-runtimes the installed plugins under real runtimes: containerd's CRI
#                      and podman, each in its own netns (tests/runtimes/run.sh;
#                      PLUGIN_DIR=/usr/lib/cni for the reference, RUNTIMES=...)
#   make test-flanneld the flanneld lane: a real etcd cluster (three members) and
#                      nodes as network namespaces on one underlay segment, pods
#                      added through the flannel plugin (tests/it/flanneld*.rs, whose
#                      tests are #[ignore]d by `make test`; installs etcd)
#   make test-kernel   the whole suite inside a VM booted from Debian's stock kernel
#                      (ipvlan, 8021q, dummy, vrf, VLAN filtering, SCTP), where a
#                      skip fails (tests/kernel/run.sh)
#   make fuzz-smoke    every cargo-fuzz target briefly over its corpus (fuzz/smoke.sh)
#   make bench         benchmark (docs/benchmarks.md)
#   make hot-layout    regenerate bench/hot-text.ld, the link order of plugin code
#   make deb           Debian package $(DEB) (dpkg-deb): /usr/lib/cni, /opt/cni/bin,
#                      systemd units, manual pages; replaces containernetworking-plugins
#                      (ARCH=arm64: target/arm64/cni-multi.deb)
#   make test-deb      the package into a throwaway root: files, scripts, lintian
#   make man           manual pages from the binary's clap definitions into target/man
#   make image         OCI archive $(IMAGE): for each of $(IMAGE_ARCHES), the static
#                      binary alone, entrypoint `cni-multi install --dir /host/opt/cni/bin`,
#                      under one multi-arch index (buildah, no registry; the DaemonSet
#                      in contrib/kubernetes runs it)
#   make test-arm64    the arm64 build under qemu-user: static aarch64 ELF, every
#                      plugin answers VERSION, loopback ADD in a netns, the arm64 .deb
#                      (tests/arm64.sh)

# ARCH: amd64 (x86_64) or arm64 (aarch64), as Debian and OCI name them.
MACHINE := $(shell uname -m)
ARCH ?= $(if $(filter aarch64,$(MACHINE)),arm64,amd64)
ifneq ($(filter $(ARCH),amd64 x86_64),)
override ARCH := amd64
RUST_ARCH := x86_64
else ifneq ($(filter $(ARCH),arm64 aarch64),)
override ARCH := arm64
RUST_ARCH := aarch64
else
$(error ARCH=$(ARCH): amd64 or arm64)
endif
# Each architecture's outputs; amd64's where they have always been.
BIN_amd64 := target/cni-multi
BIN_arm64 := target/arm64/cni-multi
DEB_amd64 := target/cni-multi.deb
DEB_arm64 := target/arm64/cni-multi.deb

# musl when its Rust target can be installed (smaller binary and RSS
# per plugin run), else glibc with +crt-static. Either way the result is $(BIN).
ifeq ($(origin TARGET), undefined)
TARGET := $(shell (rustup target list --installed 2>/dev/null | grep -qx $(RUST_ARCH)-unknown-linux-musl \
            || rustup target add $(RUST_ARCH)-unknown-linux-musl >/dev/null 2>&1) \
            && echo $(RUST_ARCH)-unknown-linux-musl || echo $(RUST_ARCH)-unknown-linux-gnu)
endif
ifeq ($(filter $(RUST_ARCH)-%,$(TARGET)),)
$(error TARGET=$(TARGET) does not build ARCH=$(ARCH))
endif
ifneq ($(RUST_ARCH),$(MACHINE))
# Another architecture than this machine's: rust-lld (shipped with Rust) links
# with the musl target's own start files and libc, so no cross gcc is needed;
# glibc's static libraries would need one. qemu-user runs the result here.
ifeq ($(filter $(RUST_ARCH)-unknown-linux-musl,$(TARGET)),)
$(error ARCH=$(ARCH) on $(MACHINE) needs TARGET=$(RUST_ARCH)-unknown-linux-musl: rustup target add $(RUST_ARCH)-unknown-linux-musl)
endif
RELR    := -C link-arg=-zpack-relative-relocs
LINK    := -C linker=rust-lld $(RELR) -C link-arg=-T$(CURDIR)/bench/hot-text.ld
QEMU    := qemu-$(RUST_ARCH)-static
else
RELR    := -C link-arg=-Wl,-z,pack-relative-relocs
LINK    := $(RELR) -C link-arg=-Wl,-T,$(CURDIR)/bench/hot-text.ld
QEMU    :=
endif
# ring (rustls's primitives, for flanneld's etcd TLS) compiles C and assembly
# for the target: musl x86_64 with this machine's gcc, aarch64 with clang
# (one compiler for every target, so no cross gcc either).
CC_ENV_x86_64-unknown-linux-musl  := CC_x86_64_unknown_linux_musl=gcc
CC_ENV_aarch64-unknown-linux-musl := CC_aarch64_unknown_linux_musl=clang \
	CFLAGS_aarch64_unknown_linux_musl=--target=aarch64-linux-musl
CC_ENV  := $(CC_ENV_$(TARGET))
BINDIR  ?= /opt/cni/bin
# `make install` also links $(PREFIX)/bin/cni-multi to the binary, so it is on PATH.
PREFIX  ?= /usr/local
# The units of contrib/systemd (dhcp daemon, doctor, flanneld); ExecStart names $(BINDIR).
SYSTEMDDIR ?= /usr/lib/systemd/system
DESTDIR ?=
CARGO   ?= cargo
BIN     := $(BIN_$(ARCH))
IMAGE   := target/cni-multi-image.tar
IMAGE_ARCHES ?= amd64 arm64
DEB     := $(DEB_$(ARCH))

.PHONY: all build install image deb man test-deb test-arm64 test deps lint unit install-check test-flanneld test-runtimes test-kernel fuzz-smoke bench hot-layout clean

all: build

# +crt-static needs an explicit --target, or proc-macro crates fail to build
# (musl links statically by default; the flag is harmless there).
# bench/hot-text.ld links the code plugin runs execute, and the read-only data it
# references, ahead of the rest, so a run maps ~1.4 MB of the binary instead of
# nearly all of it (`make hot-layout`). Its patterns are section names, traced
# on x86_64; linked into arm64 too, where a loopback ADD then runs code from
# ~30% fewer pages. RELR: the start-up relocation of x86_64's static PIE reads
# a table of a few KB instead of one entry (24 bytes) per pointer (~130 KB);
# arm64's static binary is not position-independent and has none to pack.
build:
	$(CC_ENV) RUSTFLAGS="-C target-feature=+crt-static $(LINK)" \
		$(CARGO) build --release --locked --target $(TARGET)
	mkdir -p $(dir $(BIN))
	cp target/$(TARGET)/release/cni-multi $(BIN)

# `cni-multi install`: atomic, idempotent, keeps what it replaces (--rollback).
# The plugin stubs run $(BINDIR)/cni-multi, where the files end up.
# Then $(PREFIX)/bin/cni-multi, a link to the installed binary, puts it on PATH;
# there only a link to a cni-multi (an earlier install's) is replaced, and that
# is checked before anything is installed.
PATHLINK = $(DESTDIR)$(PREFIX)/bin/cni-multi
install: build
	@case "$(BINDIR)" in /*) ;; *) echo "make install: BINDIR must be absolute (the link on PATH points to it)" >&2; exit 1 ;; esac; \
	if [ -e "$(PATHLINK)" ] || [ -L "$(PATHLINK)" ]; then \
		case "$$(readlink "$(PATHLINK)")" in /*/cni-multi) ;; \
		*) echo "make install: $(PATHLINK) exists and is not a link to a cni-multi; not replacing it (remove it, or set PREFIX)" >&2; exit 1 ;; \
		esac; \
	fi
	$(BIN) install --dir "$(DESTDIR)$(BINDIR)" --host-dir "$(BINDIR)"
	install -d "$(DESTDIR)$(PREFIX)/bin"
	ln -sfn "$(BINDIR)/cni-multi" "$(PATHLINK)"
	install -d "$(DESTDIR)$(SYSTEMDDIR)"
	for unit in contrib/systemd/*.service contrib/systemd/*.socket contrib/systemd/*.timer; do \
		sed 's|@BINDIR@|$(BINDIR)|g' "$$unit" > "$(DESTDIR)$(SYSTEMDDIR)/$$(basename "$$unit")" && \
		chmod 0644 "$(DESTDIR)$(SYSTEMDDIR)/$$(basename "$$unit")" || exit 1; \
	done

# One build per architecture, then one index over their images.
image:
	for arch in $(IMAGE_ARCHES); do $(MAKE) build ARCH=$$arch || exit 1; done
	./contrib/image/build.sh $(IMAGE) $(foreach arch,$(IMAGE_ARCHES),$(arch)=$(BIN_$(arch)))

# A binary of another architecture answers --version and --list through qemu-user.
deb: build
	DEB_ARCH=$(ARCH) QEMU=$(QEMU) ./contrib/deb/build.sh $(BIN) $(DEB)

# The binary writes them from its own command line (the package build does too).
man: build
	rm -rf $(dir $(BIN))man
	$(QEMU) $(BIN) --generate-man $(dir $(BIN))man

test-deb: deb
	./tests/deb-check.sh $(DEB) $(BIN)

# Installs qemu-user-static and the Rust target when missing.
test-arm64:
	./tests/arm64.sh

deps:
	./tests/install-deps.sh

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

# --nocapture: tests that skip on this kernel print why, and CI logs show it.
# tests/leftovers.sh fails the run if it left a file, mount or process behind.
unit:
	./tests/leftovers.sh $(CARGO) test --locked -- --nocapture

install-check: build
	./tests/install-check.sh

# The README's "A first run" verbatim, as root in a throwaway mount and network
# namespace on empty /opt/cni, /etc/cni, /var/lib/cni, /usr/local/bin
# (tests/first-run.sh); after `build`, so its own `make` finds the build current.
.PHONY: first-run
first-run: build
	./tests/first-run.sh

test: deps lint install-check first-run unit

# Every test of the modules tests/it/flanneld*.rs, the ignored ones included
# (a plain `cargo test` skips them: they need etcd-server and seconds each).
FLANNELD_TESTS := $(foreach t,$(sort $(wildcard tests/it/flanneld*.rs)),$(basename $(notdir $(t)))::)
test-flanneld: deps
	$(CARGO) test --locked --test it -- --include-ignored $(FLANNELD_TESTS)

# Builds and installs cni-multi itself (into a temp dir) unless PLUGIN_DIR is set.
test-runtimes:
	./tests/runtimes/run.sh

# Builds the test binaries here and runs them in the VM (KVM when it works, else TCG).
test-kernel:
	./tests/kernel/run.sh

fuzz-smoke:
	./fuzz/smoke.sh

# Speed, memory, size, scale: bench/run.sh (REF_DIR=/usr/lib/cni for side-by-side ratios).
bench: build
	./bench/run.sh

# The order `build` links the code plugin runs execute in (bench/hot-text.ld,
# bench/layout.rs): traces plugin runs of an unstripped build, as root. Run it
# after changes that move much code, then `make bench` for the peak RSS.
# Built with `build`'s very RUSTFLAGS: they are part of each crate's metadata
# hash, and so of the names of its constants the script lists. Only the binary
# itself (`cargo rustc`) keeps its symbols and writes its link map
# (cni-multi.map beside it), which names the data's input sections.
HOT_BIN := target/hot-layout/$(TARGET)/release/cni-multi
hot-layout:
	$(CC_ENV) RUSTFLAGS="-C target-feature=+crt-static $(LINK)" CARGO_TARGET_DIR=target/hot-layout \
		$(CARGO) rustc --release --locked --target $(TARGET) --bin cni-multi -- \
		-C strip=none -C link-arg=-Wl,-Map=$(CURDIR)/$(HOT_BIN).map
	BENCH_BIN=$(HOT_BIN) BENCH_LAYOUT=bench/hot-text.ld ./bench/run.sh

clean:
	$(CARGO) clean
