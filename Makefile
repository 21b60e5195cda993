# ri -- Recoverable Invocation.  See README.md.
#
#   make              lib/libri.a, bin/ri-*, examples/bin/*
#   make test         every suite (C unit tests, then bats over the real binaries)
#   make test-pg      the suites that reach the backend, against a throwaway PostgreSQL
#   make check        the whole suite again under ASan + UBSan (build/san)
#   BATS_JOBS=N       make test, check and valgrind run N bats tests at a time
#                     (default 1; CI passes 2 to all three)
#   make bench        benchmarks, reported as ratios against baselines
#   make lint, tidy   cppcheck, clang's static analyzer (a warning fails)
#   make tla, parity  TLC over tla/; every twin and its C negative control (tla/parity)
#   make install      PREFIX=/usr/local DESTDIR=   (make uninstall undoes it)
#
# CFLAGS, CPPFLAGS and LDFLAGS are honoured (a packager's hardening flags are
# added to ours); warnings are errors only with WERROR=1, as CI builds.
# Variables a sub-build overrides: BUILD (objects), LIBA, BINDIR, EXBINDIR,
# GEN (generated headers: the PREFIX-dependent ones), SAN (sanitizer
# flags), EXTRA_CFLAGS (tests/negative/run's -DRI_NC_RUNTIME, below).
#
# STATIC=1 (the default where glibc's libc.a is installed, as Debian's
# libc6-dev installs it) links each command statically: a command is a
# short process, and loading and relocating the shared libc and libm at
# every start, with the page faults of their pages, cost ~0.45 ms of
# each one on the machine issue 15 measured (a pair 7.3 -> 6.3 ms; bench/01).
# Never with SAN, and `make valgrind` builds its own dynamic tree
# (memcheck replaces malloc only in a dynamic program).  The caveat, which
# glibc's linker prints as a notice at each static link ("Using 'dlopen'
# in statically linked applications requires..."): getpwuid (ri-seal's
# operator name; "unknown" without it) and the dlopen of a PostgreSQL
# journal's libpq.so.5 (lib/store/pg/pq.c; SQLite's extension loading is
# never enabled) load glibc's shared objects at run time, which must be
# those of the glibc the commands were linked with -- rebuild after a
# glibc upgrade, or build with STATIC=0 (as a distribution packages it,
# with DEPS_STATIC=0).  make test-pg passes on the static build.
# STATIC=0: DEPS_STATIC (below) still links SQLite, libsodium and jansson
# into each command, libc shared.

# The one version: --version of every command, the pages' .TH, NEWS and
# debian/changelog say it (tests/packaging.bats holds them to it).
VERSION  := 0.2.0
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
OPT      ?= -O2 -g
WERROR   ?=
SAN      ?=
BUILD    ?= build/default
LIBA     ?= lib/libri.a
BINDIR   ?= bin
EXBINDIR ?= examples/bin

# -DRI_NC_RUNTIME makes a build in which $RI_NC switches a safety mechanism
# off (lib/util/nc.h): tests/negative/run's own, under build/nc.  Never the
# tree's build, never installed -- the default build cannot switch one.
ifneq (,$(findstring RI_NC_RUNTIME,$(EXTRA_CFLAGS) $(CFLAGS) $(CPPFLAGS)))
ifneq (,$(filter build/default bin examples/bin lib/libri.a,$(BUILD) $(BINDIR) $(EXBINDIR) $(LIBA))$(filter install,$(MAKECMDGOALS)))
$(error -DRI_NC_RUNTIME is a negative-control build (lib/util/nc.h): never into the tree's own build dirs, never installed)
endif
endif

GEN      ?= $(BUILD)/gen
CPPFLAGS_RI = -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DRI_VERSION='"$(VERSION)"' -Ilib -I$(GEN) \
	$(PQ_CFLAGS) $(CPPFLAGS)
CFLAGS_RI   = -std=c11 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) $(OPT) $(SAN) $(EXTRA_CFLAGS) $(CFLAGS)
PQ_CFLAGS  ?= $(shell pkg-config --cflags libpq 2>/dev/null || echo -I$$(pg_config --includedir))
LIBC_A   := $(findstring /,$(shell $(CC) -print-file-name=libc.a 2>/dev/null))
STATIC   ?= $(if $(LIBC_A),1,0)
# libpq's headers only: lib/store/pg/pq.c loads libpq.so.5 when a PostgreSQL
# journal is opened (dlopen), so a SQLite host's commands never load it
# DEPS_STATIC=1 (the default where the three archives are installed, as
# Debian's -dev packages install them): SQLite, libsodium and jansson are
# linked into each command, libc stays shared.  A command is a short
# process, and resolving three shared libraries' symbols at every start
# cost ~0.5 ms of a pair's ~4 ms (issue 15: ~1.4 M instructions a
# process).  DEPS_STATIC=0 links them shared, as a distribution packages
# them.
DEPS_FOUND  := $(foreach l,libsqlite3.a libsodium.a libjansson.a,$(findstring /,$(shell $(CC) -print-file-name=$(l) 2>/dev/null)))
DEPS_STATIC ?= $(if $(filter 3,$(words $(DEPS_FOUND))),1,0)
LDDEPS_1    = -Wl,-Bstatic -lsqlite3 -lsodium -ljansson -Wl,-Bdynamic -lm
LDDEPS_0    = -lsqlite3 -lsodium -ljansson
LDDEPS      = $(if $(and $(filter 1,$(DEPS_STATIC)),$(filter-out 1,$(STATIC))),$(LDDEPS_1),$(LDDEPS_0))
LDLIBS_RI   = $(LDFLAGS) $(LDDEPS) -ldl -lpthread
LDSTATIC    = $(if $(and $(filter 1,$(STATIC)),$(if $(SAN),,1)),-static)

# glibc's linker notes at every static link that dlopen and getpwuid need
# its shared objects at run time -- the caveat stated once above, not 33
# times in the build's output.  A failed link shows all it said; a good
# one everything but those notes (each with its "in function" line).
LINK_NOTES = 2>$@.ld || { cat $@.ld >&2; rm -f $@.ld; exit 1; }; \
	awk '/in statically linked applications requires at runtime/ { held = ""; next } \
	    held != "" { print held; held = "" } /: in function / { held = $$0; next } { print } \
	    END { if (held != "") print held }' $@.ld >&2; rm -f $@.ld

LIB_SRC  := $(sort $(wildcard lib/*/*.c lib/*/*/*.c))
LIB_OBJ  := $(LIB_SRC:lib/%.c=$(BUILD)/lib/%.o)
CMD_SRC  := $(sort $(wildcard cmd/ri-*.c))
CMDS     := $(CMD_SRC:cmd/%.c=$(BINDIR)/%)
EX_SRC   := $(sort $(wildcard examples/*.c))
EXAMPLES := $(EX_SRC:examples/%.c=$(EXBINDIR)/%)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/unit/%)
TOOL_SRC := $(sort $(wildcard tests/tools/*.c))
TOOLS    := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
BENCH_SRC:= $(sort $(wildcard bench/*.c))
BENCHES  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
HDRS     := $(wildcard lib/*.h lib/*/*.h lib/*/*/*.h lib/*/*.def)

.PHONY: all test test-pg unit bats check bench install uninstall clean lint-docs reliability negative-controls parity fuzz lint tidy valgrind

all: $(LIBA) $(CMDS) $(EXAMPLES)

$(BUILD)/lib/%.o: lib/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -c -o $@ $<

$(LIBA): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $(LIB_OBJ)

$(BINDIR)/%: cmd/%.c $(LIBA) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LIBA) $(LDSTATIC) $(LDLIBS_RI) $(if $(LDSTATIC),-lm) $(LINK_NOTES)

# ri-init --example-config prints examples/ri.json.example, compiled in,
# its paths under $(PREFIX) as make install writes it; the build remembers
# PREFIX, so a build for another one remakes it
.PHONY: FORCE
$(GEN)/prefix: FORCE
	@mkdir -p $(@D)
	@echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' >$@

$(GEN)/example_config.h: examples/ri.json.example $(GEN)/prefix
	@mkdir -p $(@D)
	$(PREFIXED) examples/ri.json.example | \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' >$@

$(BINDIR)/ri-init: $(GEN)/example_config.h

# the version is compiled into instance.o: a new VERSION remakes it
$(GEN)/version: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION)' | cmp -s - $@ || echo '$(VERSION)' >$@
$(BUILD)/lib/protocol/instance.o: $(GEN)/version

$(EXBINDIR)/%: examples/%.c $(LIBA) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LIBA) $(LDSTATIC) $(LDLIBS_RI) $(if $(LDSTATIC),-lm) $(LINK_NOTES)

$(BUILD)/unit/%: tests/unit/%.c $(LIBA) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LIBA) $(LDLIBS_RI)

$(BUILD)/tools/%: tests/tools/%.c $(LIBA) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LIBA) $(LDLIBS_RI)

$(BUILD)/bench/%: bench/%.c $(LIBA) $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LIBA) $(LDLIBS_RI)

# The physical floor of bench/01-pair.sh: a bare process, linked to nothing
# of ours (an explicit rule: it wins over the pattern above).
$(BUILD)/bench/floor: bench/floor.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $<

# Its SQLite twin (a diagnostic): linked as the commands are, SQLite alone.
$(BUILD)/bench/sqlite_floor: bench/sqlite_floor.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_RI) $(CFLAGS_RI) -o $@ $< $(LDSTATIC) $(LDLIBS_RI) $(if $(LDSTATIC),-lm) $(LINK_NOTES)

# The suites run the binaries named by RI_BIN / RI_EXAMPLES, so `make check`
# runs the very same tests over the sanitized build.
BATS_JOBS ?= 1
unit: $(UNITS)
	@set -e; for t in $(UNITS); do echo "unit: $$t"; RI_BIN=$(abspath $(BINDIR)) $$t; done

# The tests' own directories (each test makes its instance under TMPDIR)
# go to a fresh directory on a tmpfs where there is one (/dev/shm), removed
# after the run: a journal's fsync there costs no disk wait, which was a
# third of a command's time on CI's disk.  What durability needs is proved
# by the syscalls the tests trace, not by the disk's speed.  BATS_TMP=DIR
# chooses another parent (BATS_TMP=/tmp: the disk).
BATS_TMP ?= $(if $(wildcard /dev/shm/.),/dev/shm,/tmp)
# The suites a file at a time, two files at once: the longest start first,
# so no long file starts last and leaves a core idle at the end.  Measured
# with bats --timing (seconds of tests, plain build, two at a time):
# invocation 199, audit 183, schemas 134, sweep 128, run 43, auth 39, and
# every other file under 35 -- schemas.bats, left to its alphabetical
# turn, was the run's last 2 minutes on one core.
BATS_LONG  := tests/invocation.bats tests/audit.bats tests/schemas.bats tests/sweep.bats tests/run.bats tests/auth.bats
BATS_FILES := $(BATS_LONG) $(filter-out $(BATS_LONG),$(sort $(wildcard tests/*.bats)))
bats: all $(TOOLS)
	@d=$$(mktemp -d "$(BATS_TMP)/ri-bats.XXXXXX") || exit 1; \
	TMPDIR=$$d RI_BIN=$(abspath $(BINDIR)) RI_EXAMPLES=$(abspath $(EXBINDIR)) RI_TOOLS=$(abspath $(BUILD)/tools) \
	    bats --timing $(if $(filter-out 1,$(BATS_JOBS)),--jobs $(BATS_JOBS) --no-parallelize-within-files) $(BATS_FILES); \
	rc=$$?; rm -rf "$$d"; exit $$rc

# The build first, a job a core; then the suites, in order.
NPROC := $(shell nproc 2>/dev/null || echo 1)
.PHONY: test-build
test-build: all $(UNITS) $(TOOLS)
test:
	$(MAKE) -j$(NPROC) test-build
	$(MAKE) unit bats

# LeakSanitizer runs over the unit tests, where the store's code runs in
# one long process; over the bats suites it is off: its exit-time scan
# cost 45 ms a process here (ASan's start 25 ms, a plain start 2 ms), a
# seventh of make check, for processes that live milliseconds.  Leaks in
# the commands are memcheck's (make valgrind: --leak-check=full over the
# walkthrough and the every-path audit).  The sanitizers' runtimes are
# linked in statically (gcc's -static-libasan, clang's -static-libsan):
# a process then starts with ~15% less CPU here, no shared runtime to
# load and relocate, over the thousands of processes the suites start.
SAN_LD = $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),-static-libsan,-static-libasan -static-libubsan)
SAN_MAKE = $(MAKE) BUILD=build/san LIBA=build/san/libri.a BINDIR=build/san/bin \
	    EXBINDIR=build/san/examples OPT="-O1 -g -fno-omit-frame-pointer" \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" LDFLAGS="$(SAN_LD)"
# The suites under the sanitizers run against journals of CHECK_SHARDS
# shards (tests/lib/common.bash, RI_TEST_SHARDS; docs/SHARDS.md): make
# test runs the whole suite on the default one shard, make check the same
# suite on four, so both are the whole suite's and CI pays for neither
# twice.  CHECK_SHARDS=1: make check as one shard.  CHECK_LOOPS: the
# rounds its stress loops run, a percentage (tests/lib/common.bash,
# loops): a third, for CI's time; make test runs them whole.
CHECK_SHARDS ?= 4
CHECK_LOOPS ?= 34
check:
	$(SAN_MAKE) -j$(NPROC) test-build
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(SAN_MAKE) unit
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 RI_TEST_SHARDS=$(CHECK_SHARDS) RI_TEST_LOOPS=$(CHECK_LOOPS) \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(SAN_MAKE) bats

bench: all $(BENCHES)
	RI_BIN=$(abspath $(BINDIR)) RI_EXAMPLES=$(abspath $(EXBINDIR)) \
	    RI_BENCH=$(abspath $(BUILD)/bench) bench/run

# The same suites against a throwaway PostgreSQL server (issue 13), and the
# multi-node tests (tests/pg/*.bats); first, against the same server, the
# unit tests that open a journal (issue 42: test_store and
# test_store_common, each journal a new schema of it).
# PG_SUITES: the bats files (or unit binaries) to run against the server
# (default: those unit tests, and every suite whose header says
# "# test-pg: backend" or "alone"; CI runs those); last, the suites among
# them marked "# test-pg-pooler: yes" once more through PgBouncer in
# transaction pooling mode (issue 43, pooler-ready; PG_BOUNCER=0 skips it)
PG_SUITES ?=
UNITS_PG := $(BUILD)/unit/test_store $(BUILD)/unit/test_store_common $(BUILD)/unit/test_store_engine
test-pg: all $(TOOLS) $(UNITS_PG)
	RI_BIN=$(abspath $(BINDIR)) RI_EXAMPLES=$(abspath $(EXBINDIR)) RI_TOOLS=$(abspath $(BUILD)/tools) \
	    RI_UNIT=$(abspath $(BUILD)/unit) tests/pg/run $(PG_SUITES)

reliability: all
	RI_BIN=$(abspath $(BINDIR)) RI_EXAMPLES=$(abspath $(EXBINDIR)) tests/reliability/run

negative-controls:
	tests/negative/run

# memcheck sees each malloc only in a dynamic program: its own tree
valgrind: $(TOOLS)
	$(MAKE) -j$(NPROC) STATIC=0 BUILD=build/dyn LIBA=build/dyn/libri.a BINDIR=build/dyn/bin \
	    EXBINDIR=build/dyn/examples all
	BATS_JOBS=$(BATS_JOBS) RI_VG_BIN=$(abspath build/dyn/bin) RI_VG_EXAMPLES=$(abspath build/dyn/examples) tests/valgrind/run

# The commands, their pages, the schemas, a config template, the systemd
# units, the example adopter (its sources and examples under share/doc, its
# programs and the demo under libexec/ri -- no binary under share/doc) and
# the cron and logrotate snippets.  Test-only tools (tests/tools) are never
# installed.  Every installed file that names a path names it under
# $(PREFIX): /usr/local in the sources becomes $(PREFIX) (PREFIXED).
# make uninstall removes every file it installed, then ri's own
# directories (share/ri, share/doc/ri, libexec/ri) once they are empty.
BINDIR_I  = $(DESTDIR)$(PREFIX)/bin
MANDIR    = $(DESTDIR)$(PREFIX)/share/man
SHAREDIR  = $(DESTDIR)$(PREFIX)/share/ri
DOCDIR    = $(DESTDIR)$(PREFIX)/share/doc/ri
EXDIR     = $(DOCDIR)/examples
LIBEXECDIR= $(DESTDIR)$(PREFIX)/libexec/ri
UNITDIR  ?= $(PREFIX)/lib/systemd/system
UNITDIR_I = $(DESTDIR)$(UNITDIR)
MANPAGES  = $(wildcard man/*.1 man/*.5 man/*.7)
SCHEMAS   = $(wildcard schemas/*.json schemas/README.md)
EXFILES   = $(wildcard examples/*.c examples/*.h examples/*.md)
UNITS_SRC = $(wildcard examples/systemd/*)
PREFIXED  = sed -e 's\#/usr/local/\#$(PREFIX)/\#g'
INSTALL_DIRS = $(BINDIR_I) $(MANDIR)/man1 $(MANDIR)/man5 $(MANDIR)/man7 $(SHAREDIR)/schemas \
	$(EXDIR)/cron.d $(EXDIR)/logrotate $(LIBEXECDIR) $(UNITDIR_I)

install: all
	install -d $(INSTALL_DIRS)
	install -m 0755 $(CMDS) $(BINDIR_I)
	install -m 0644 $(wildcard man/*.1) $(MANDIR)/man1
	install -m 0644 $(wildcard man/*.5) $(MANDIR)/man5
	install -m 0644 $(wildcard man/*.7) $(MANDIR)/man7
	install -m 0644 $(SCHEMAS) $(SHAREDIR)/schemas
	$(PREFIXED) examples/ri.json.example >$(SHAREDIR)/ri.json.example && chmod 0644 $(SHAREDIR)/ri.json.example
	install -m 0644 $(EXFILES) $(EXDIR)
	install -m 0755 $(EXAMPLES) $(LIBEXECDIR)
	$(PREFIXED) examples/demo.sh >$(LIBEXECDIR)/demo.sh && chmod 0755 $(LIBEXECDIR)/demo.sh
	for f in $(UNITS_SRC); do $(PREFIXED) $$f >$(UNITDIR_I)/$${f##*/} && chmod 0644 $(UNITDIR_I)/$${f##*/}; done
	$(PREFIXED) examples/cron.d/ri-sweep >$(EXDIR)/cron.d/ri-sweep && chmod 0644 $(EXDIR)/cron.d/ri-sweep
	$(PREFIXED) examples/logrotate/ri >$(EXDIR)/logrotate/ri && chmod 0644 $(EXDIR)/logrotate/ri
	install -m 0644 README.md RELIABILITY.md LICENSE NEWS $(DOCDIR)

uninstall:
	rm -f $(addprefix $(BINDIR_I)/,$(notdir $(CMDS)))
	rm -f $(addprefix $(MANDIR)/man1/,$(notdir $(wildcard man/*.1)))
	rm -f $(addprefix $(MANDIR)/man5/,$(notdir $(wildcard man/*.5)))
	rm -f $(addprefix $(MANDIR)/man7/,$(notdir $(wildcard man/*.7)))
	rm -f $(addprefix $(SHAREDIR)/schemas/,$(notdir $(SCHEMAS))) $(SHAREDIR)/ri.json.example
	rm -f $(addprefix $(EXDIR)/,$(notdir $(EXFILES))) $(EXDIR)/cron.d/ri-sweep $(EXDIR)/logrotate/ri
	rm -f $(addprefix $(LIBEXECDIR)/,$(notdir $(EXAMPLES))) $(LIBEXECDIR)/demo.sh
	rm -f $(addprefix $(UNITDIR_I)/,$(notdir $(UNITS_SRC)))
	rm -f $(addprefix $(DOCDIR)/,README.md RELIABILITY.md LICENSE NEWS)
	@# ri's own directories, deepest first, each only if now empty (the
	@# shared ones -- bin, share/man/man1, ... -- are not ri's to remove)
	for d in $(SHAREDIR)/schemas $(SHAREDIR) $(EXDIR)/cron.d $(EXDIR)/logrotate $(EXDIR) $(DOCDIR) \
	    $(LIBEXECDIR); do [ ! -d $$d ] || rmdir --ignore-fail-on-non-empty $$d; done

# Fuzzing (libFuzzer; needs clang and its compiler-rt).  The library is
# compiled again, instrumented, into $(FUZZ_BUILD) -- never the gcc lib/libri.a.
#   make fuzz-build                 build/fuzz/fuzz_* (one per tests/fuzz/fuzz_*.c)
#   make fuzz FUZZ_SECONDS=N        run each harness N seconds (tests/fuzz/run)
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build/fuzz
FUZZ_CFLAGS   = -std=c11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra \
               -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS    := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_LIB_OBJ := $(LIB_SRC:lib/%.c=$(FUZZ_BUILD)/lib/%.o)

.PHONY: fuzz-build
.SECONDARY: $(FUZZ_LIB_OBJ)

$(FUZZ_BUILD)/lib/%.o: lib/%.c $(HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS_RI) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ) $(HDRS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS_RI) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(LDLIBS_RI)

fuzz-build: $(FUZZ_BINS)

fuzz:
	FUZZ_BUILD=$(FUZZ_BUILD) MAKE="$(MAKE)" tests/fuzz/run $(FUZZ_SECONDS)

# The pages and the shipped scripts: mandoc's lint (warnings and up),
# shellcheck, and the rule index -- ri-rules(7) current, every rule the
# code enforces tested and every rule a test proves enforced
# (tools/rules-index) -- all clean (CI runs this).
lint-docs:
	mandoc -Tlint -Wwarning $(MANPAGES)
	shellcheck examples/demo.sh .ci/run .ci/deb debian/ri.postinst
	tools/rules-index --check

# The TLA+ model (tla/README.md): TLC over the clean model, every buggy twin
# and every probe.  Says so and exits 0 without Java or the jar.
TLA2TOOLS ?= ../shared/tools/tla/tla2tools.jar
.PHONY: tla
tla:
	TLA2TOOLS="$(TLA2TOOLS)" tla/run

# Twin parity (tla/README.md, tla/parity): every twin rejected by TLC and
# its bug planted in C (a negative control) caught by a test; one table.
.PHONY: parity
parity:
	TLA2TOOLS="$(TLA2TOOLS)" tla/parity-run

lint: $(GEN)/example_config.h
	@# the layers (docs/ARCHITECTURE.md): every import downward, no circle
	tests/tools/layers lib
	cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
	    --inline-suppr -Ilib -I$(BUILD)/gen --include=/usr/include/jansson.h -D_POSIX_C_SOURCE=200809L \
	    lib cmd examples tests/tools bench
	@# a command's jansson has its own allocator (lib/util/mem.h): json_dumps'
	@# text is freed only through ri_json_dumps (util.c)
	@if grep -nE '(^|[^_[:alnum:]])json_dumps[[:space:]]*\(' $(LIB_SRC) cmd/*.c tests/tools/*.c | \
	    grep -v '^lib/util/util\.c:'; then \
	    echo "lint: json_dumps outside ri_json_dumps: its text must not reach free() (lib/util/mem.h)" >&2; exit 1; fi

# clang's static analyzer (.clang-tidy says which checks, and why one
# family is off) over every C source we ship or test with, two at a time;
# a warning fails.
TIDY_SRC := $(sort $(wildcard $(LIB_SRC) cmd/*.c examples/*.c bench/*.c tests/tools/*.c tests/unit/*.c \
	tests/fuzz/*.c))
tidy: $(GEN)/example_config.h
	@printf '%s\n' $(TIDY_SRC) | xargs -P2 -I{} clang-tidy --quiet {} -- $(CPPFLAGS_RI) -std=c11 \
	    >$(BUILD)/tidy.log 2>&1; rc=$$?; grep -v ' warnings* generated\.$$' $(BUILD)/tidy.log || true; \
	    if [ $$rc -ne 0 ]; then echo "tidy: the analyzer warned (above)" >&2; exit 1; fi; \
	    echo "tidy: $(words $(TIDY_SRC)) files, no warning"

clean:
	rm -rf build $(LIBA) $(BINDIR)/ri-* $(EXBINDIR)
