# Quick start: `make run` (the main job) and `make test` (all tests).
# Both install missing Debian packages (as root), configure and build first.
# Other targets: build, install (PREFIX, default /usr/local; DESTDIR to
# stage), asan-test (ASan+UBSan build of the tests, without the VM tests,
# which `make test` runs once), mutants (every mutant of
# tests/mutants/mutants.txt built and caught by its tests), abi-baseline
# (abi/libsmart.abi rewritten from this build's libsmart.so, after an
# intended ABI change: docs/design.md §12), clean.
BUILD      ?= build
ASAN_BUILD ?= build-asan
MUTANT_BUILD ?= build-mutants
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=
RUN_SECONDS ?= 3
PREFIX     ?= /usr/local
DESTDIR    ?=

.PHONY: all deps build run test install asan-test mutants abi-baseline clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
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
	tests/mutants/run.sh -B $(MUTANT_BUILD)

abi-baseline: build
	@cmake --build $(BUILD) --target abi-baseline

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(MUTANT_BUILD)
