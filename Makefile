# Quick start: `make run` (the main job) and `make test` (all tests).
# Both install missing Debian packages (as root) and configure first;
# `make run` builds only smart-bench, `make test` everything.  `make help`
# lists the targets and the variables.
# Other targets: build, install (PREFIX, default /usr/local; DESTDIR to
# stage), asan-test (ASan+UBSan build of the tests, without the VM tests,
# which `make test` runs once), mutants (every mutant of
# tests/mutants/mutants.txt built and caught by its tests, in MUTANT_LANES
# lanes at once), abi-baseline
# (abi/libsmart.abi rewritten from this build's libsmart.so, after an
# intended ABI change: docs/design.md §12), clean.
BUILD      ?= build
ASAN_BUILD ?= build-asan
MUTANT_BUILD ?= build-mutants
MUTANT_LANES ?= 2
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=
RUN_SECONDS ?= 3
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps configure build run test install asan-test mutants \
	abi-baseline clean help

# make's "Entering directory" lines are noise here: one build, one place
MAKEFLAGS += --no-print-directory

all: build

help:
	@echo "make run          build smart-bench only and run YCSB-A for RUN_SECONDS ($(RUN_SECONDS)) s"
	@echo "make test         build everything and run every test (ctest)"
	@echo "make build        build the library, the tools and the tests into BUILD ($(BUILD))"
	@echo "make install      install into PREFIX ($(PREFIX)); DESTDIR= to stage"
	@echo "make asan-test    the tests under ASan+UBSan, in ASAN_BUILD ($(ASAN_BUILD))"
	@echo "make mutants      every mutant of tests/mutants/mutants.txt, built and caught"
	@echo "make abi-baseline rewrite abi/ from this build (after an intended ABI change)"
	@echo "make deps         install the Debian packages the build needs (as root)"
	@echo "make clean        remove the build directories"
	@echo "variables: BUILD ASAN_BUILD MUTANT_BUILD MUTANT_LANES JOBS ($(JOBS)) CMAKE_FLAGS RUN_SECONDS PREFIX DESTDIR"

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# only what it runs: the library and smart-bench, not the 46 test programs
run: configure
	@cmake --build $(BUILD) -j$(JOBS) --target smart-bench
	$(BUILD)/bin/smart-bench ycsb --ds ht --workload a --keys 100000 \
		--threads 2 --coros 8 --seconds $(RUN_SECONDS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j2

# Headers, libsmart.a, libsmart.so, smart.pc and the tools into $(PREFIX);
# the loader's cache is refreshed when installing for real as root.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

asan-test: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
		-DSMART_SANITIZE=address,undefined $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(ASAN_BUILD) --output-on-failure -j2 -LE vm

# docs/design.md §10.4: each guard removed in turn must make its tests fail.
mutants: deps
	tests/mutants/run.sh -B $(MUTANT_BUILD) -j $(MUTANT_LANES)

abi-baseline: build
	@cmake --build $(BUILD) --target abi-baseline

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(MUTANT_BUILD) $(MUTANT_BUILD)-lane*
