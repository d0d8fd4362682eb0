# decodelab - build, test and inspect. `make help` lists the targets.
#
# Knobs (override on the command line, e.g. `make GPU_ARCH=... CUDA=0`):
#   CUDA      auto | 1 | 0   build gpu/ with nvcc (auto: when nvcc is found)
#   GPU_ARCH  nvcc -gencode flags (default: Hopper sm_90a, needed for wgmma)
#   OPT       -O2 | -O3 | -O0 ...   host optimisation level
#   SAN       '' | asan | ubsan | asan,ubsan   sanitizer build of the host code, in its own
#             directory build-<san> (e.g. build-asan-ubsan), without CUDA unless CUDA=1
#   FUZZ_SECONDS  seconds per target for `make fuzz-smoke` (default 60)
#   STATIC    0 | 1          link HDF5/OpenBLAS/zlib statically (for the lent GPU machine)
#   PLANT     '' | skip_last_token   plant a known bug in the streaming kernels (tests/README.md)
#   DIAG      0 | 1          compile the streaming kernels' diagnosis paths (DL_STREAM_DRY, gpu/NOTES.md);
#             off by default so that they cannot change the production kernels' code; build it apart
#             (e.g. `make static BUILD=build-diag DIAG=1`)
#   STREAM_PRODUCERS  per-consumer | one   producer warps of the warp-consumer streaming kernels
#             (per-consumer, the default: one per consumer warp, issue 10's attempt #11; one: one per CTA,
#             the design before 2026-12-02, kept for A/B runs; gpu/NOTES.md)
#   STREAM_SHAPE  W,S        consumer warps per CTA and stages per consumer of the warp-consumer streaming
#             kernels whose rings fit in 200 KB (issue 10, attempt #21, an experiment; unset: the rule in
#             decode_stream.cu's stream_shape), e.g. `make static BUILD=build-s51 STREAM_SHAPE=5,1 STREAM_PRODUCERS=one`
#   STREAM_WG_S  2..4        stages a consumer warpgroup of the wgmma kernels (default 2; issue 10, attempt #55,
#             an experiment, 3 measured slower; rings that would pass 200 KB keep 2)
#   STREAM_SETMAXNREG  0 | 1   with STREAM_SHAPE=4,S: the producers' warpgroup gives its registers to the
#             consumers' (setmaxnreg), 2 CTAs per SM (attempt #22, an experiment)
#   STREAM_CLUSTER  0 | 1    compile the tile rings' merge inside a thread-block cluster (DL_STREAM_MERGE=cluster;
#             issue 10, attempt #61, an experiment), e.g. `make static BUILD=build-a61 STREAM_CLUSTER=1`
#   STREAM_CLAIM    0 | 1    compile the split tasks' run-time tile claims (DL_STREAM_CLAIM; issue 10, attempt #71,
#             an experiment), e.g. `make static BUILD=build-a71 STREAM_CLAIM=1`

CC       ?= gcc
CUDA     ?= auto
GPU_ARCH ?= -gencode=arch=compute_90a,code=sm_90a
OPT      ?= -O2
SAN      ?=
STATIC   ?= 0
BUILD    ?= build

# Sanitizer builds never mix objects with the plain build: build-<san> unless BUILD is given.
comma := ,
ifeq ($(filter $(SAN),'' asan ubsan asan$(comma)ubsan ubsan$(comma)asan fuzz),)
ifneq ($(SAN),)
$(error SAN must be asan, ubsan, asan,ubsan (or fuzz, used by make fuzz), not '$(SAN)')
endif
endif
ifneq ($(SAN),)
  ifeq ($(origin BUILD),file)
    BUILD := build-$(subst $(comma),-,$(SAN))
  endif
  # host code only: the GPU side is checked with compute-sanitizer (make test-gpu-sanitize)
  ifeq ($(CUDA),auto)
    CUDA := 0
  endif
endif

CUDA_HOME ?= /usr/local/cuda
NVCC_FOUND := $(shell command -v nvcc 2>/dev/null || ( test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc ))
NVCC ?= $(if $(NVCC_FOUND),$(NVCC_FOUND),nvcc)

ifeq ($(filter $(CUDA),auto 0 1),)
$(error CUDA must be auto, 0 or 1, not '$(CUDA)')
endif
ifeq ($(filter $(STATIC),0 1),)
$(error STATIC must be 0 or 1, not '$(STATIC)')
endif
ifeq ($(CUDA),auto)
  HAVE_CUDA := $(if $(NVCC_FOUND),1,0)
else
  HAVE_CUDA := $(CUDA)
endif

PKGS      := hdf5 openblas libconfig
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ifeq ($(STATIC),1)
  LIBDIR  := /usr/lib/x86_64-linux-gnu
  PKG_LIBS := $(LIBDIR)/hdf5/serial/libhdf5.a $(LIBDIR)/openblas-pthread/libopenblas.a \
              $(LIBDIR)/libsz.a $(LIBDIR)/libaec.a $(LIBDIR)/libz.a $(LIBDIR)/libconfig.a -lpthread -ldl -lm
else
  PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
endif
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)

SAN_FLAGS :=
ifneq ($(findstring asan,$(SAN)),)
  SAN_FLAGS += -fsanitize=address -fno-omit-frame-pointer
endif
ifneq ($(findstring ubsan,$(SAN)),)
  SAN_FLAGS += -fsanitize=undefined -fno-sanitize-recover=undefined
endif
ifeq ($(SAN),fuzz)
  SAN_FLAGS += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif

GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)

CFLAGS  ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wno-unused-parameter -fopenmp \
           -D_DEFAULT_SOURCE -DDL_GIT_COMMIT='"$(GIT_COMMIT)"' -DDL_HAVE_CUDA=$(HAVE_CUDA) \
           $(PKG_CFLAGS) $(SAN_FLAGS) -MMD -MP
LDFLAGS ?=
LDFLAGS += -fopenmp $(SAN_FLAGS)
NVCCFLAGS ?= -O3 -std=c++17 $(GPU_ARCH) -Xcompiler -Wall -lineinfo -DDL_HAVE_CUDA=1 \
             --expt-relaxed-constexpr -Xptxas -v
# PLANT=skip_last_token plants a bug in the streaming kernels (each sequence's last token is
# dropped) so that `make test-gpu` can be shown to fail; build it apart (BUILD=build-plant).
PLANT ?=
ifneq ($(PLANT),)
  ifeq ($(filter $(PLANT),skip_last_token),)
    $(error PLANT must be skip_last_token, not '$(PLANT)')
  endif
  NVCCFLAGS += -DDL_PLANT_SKIP_LAST_TOKEN=1
endif
# flag01 SETTING,MACRO: a 0|1 build setting (anything else is an error naming it); 1 defines MACRO=1
define flag01
ifneq ($$(filter-out 0 1,$$($(1))),)
  $$(error $(1) must be 0 or 1, not '$$($(1))')
endif
ifeq ($$($(1)),1)
  NVCCFLAGS += -D$(2)=1
endif
endef
DIAG ?= 0
$(eval $(call flag01,DIAG,DL_STREAM_DIAG))
STREAM_PRODUCERS ?= per-consumer
ifeq ($(filter one per-consumer,$(STREAM_PRODUCERS)),)
  $(error STREAM_PRODUCERS must be one or per-consumer, not '$(STREAM_PRODUCERS)')
endif
ifeq ($(STREAM_PRODUCERS),one)
  NVCCFLAGS += -DDL_STREAM_PRODUCER_PER_CONSUMER=0
endif
STREAM_SETMAXNREG ?= 0
$(eval $(call flag01,STREAM_SETMAXNREG,DL_STREAM_SETMAXNREG))
# CHAIN_EARLY_COPIES=1 (issue 10, attempt #60, an experiment): in run --chain the warp-consumer kernels' producers copy
# before the previous layer's kernel completes (a bound: wrong where that kernel writes KV the copies read)
CHAIN_EARLY_COPIES ?= 0
$(eval $(call flag01,CHAIN_EARLY_COPIES,DL_STREAM_EARLY_COPIES))
# STREAM_CLUSTER=1 (issue 10, attempt #61, an experiment): the tile rings' kernels can merge split tasks inside a
# thread-block cluster (DL_STREAM_MERGE=cluster picks it at run time); 0 compiles none of it
STREAM_CLUSTER ?= 0
$(eval $(call flag01,STREAM_CLUSTER,DL_STREAM_CLUSTER))
# STREAM_CLAIM=1 (issue 10, attempt #71, an experiment): a split task's segments claim their tiles at run time and take
# the last unclaimed ones of the task's other segments (gpu/dl_claim.h; DL_STREAM_CLAIM picks it); 0 compiles none of it
STREAM_CLAIM ?= 0
$(eval $(call flag01,STREAM_CLAIM,DL_STREAM_CLAIM))
# a numeric knob: $(1) unset, or matching the regex $(2), passed to nvcc as -D$(3); $(1)_MUST says what it must be
define flagnum
ifneq ($$($(1)),)
  ifeq ($$(shell echo '$$($(1))' | grep -Ex '$(2)'),)
    $$(error $(1) must be $$($(1)_MUST), not '$$($(1))')
  endif
  NVCCFLAGS += -D$(3)=$$($(1))
endif
endef
STREAM_PAGE_S ?=
STREAM_PAGE_S_MUST := the page stage's ring in stages, 8 or 12 (a multiple of 4)
$(eval $(call flagnum,STREAM_PAGE_S,8|12,DL_STREAM_PAGE_S))
# STREAM_PAGE_HEADS (attempt #70's build flag) is gone: every build holds both page stages (DL_STREAM_STAGE=page2)
ifneq ($(STREAM_PAGE_HEADS),)
  $(error STREAM_PAGE_HEADS is gone: every build holds the two-head page stage; ask for it at run time with DL_STREAM_STAGE=page2)
endif
STREAM_WG_S ?=
STREAM_WG_S_MUST := the wgmma kernels' stages a warpgroup, 2, 3 or 4
$(eval $(call flagnum,STREAM_WG_S,[2-4],DL_STREAM_WG_S))
STREAM_SHAPE ?=
ifneq ($(STREAM_SHAPE),)
  ifeq ($(shell echo '$(STREAM_SHAPE)' | grep -Ex '[1-8],[1-4]'),)
    $(error STREAM_SHAPE must be W,S (consumer warps 1-8, stages 1-4), not '$(STREAM_SHAPE)')
  endif
  NVCCFLAGS += -DDL_STREAM_W=$(word 1,$(subst $(comma), ,$(STREAM_SHAPE))) -DDL_STREAM_S=$(word 2,$(subst $(comma), ,$(STREAM_SHAPE)))
endif
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lrt -lpthread

# ---- sources: every ref/*.c and harness/*.c except the CLI entry is the library
REF_SRC     := $(wildcard ref/*.c)
HARNESS_SRC := $(filter-out harness/main.c,$(wildcard harness/*.c))
GPU_C_SRC   := $(wildcard gpu/*.c)
GPU_CU_SRC  := $(wildcard gpu/*.cu)
LIB_OBJ     := $(patsubst %.c,$(BUILD)/%.o,$(REF_SRC) $(HARNESS_SRC) $(GPU_C_SRC))
ifeq ($(HAVE_CUDA),1)
  CU_OBJ    := $(patsubst %.cu,$(BUILD)/%.o,$(GPU_CU_SRC))
  LINK_CUDA := $(CUDA_LIBS)
else
  CU_OBJ    :=
  LINK_CUDA :=
endif
TEST_SRC    := $(wildcard tests/test_*.c)
TEST_BIN    := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))

LIB := $(BUILD)/libdecodelab.a
BIN := $(BUILD)/decodelab

.PHONY: all help test test-unit test-nv demo sass ptx clean test-gpu static fuzz fuzz-smoke test-valgrind \
        test-gpu-sanitize test-slurm test-local-sweep test-docs
all: $(BIN)

help:
	@echo "make            build $(BIN) (CPU library + CLI; gpu/ too when nvcc is found: CUDA=$(HAVE_CUDA))"
	@echo "make test       every Check suite, the nvcc host-side format checker, test-notebooks, test-slurm,"
	@echo "                test-local-sweep, test-docs and test-gpu-script (optional tools missing: SKIP, printed)"
	@echo "make demo       the main job: golden data for the seed's GQA case, verified and summarised"
	@echo "make test-gpu   on a GPU machine: every variant on the nasty-case matrix (see tests/README.md)"
	@echo "make test-slurm experiments/slurm_sweep.sh on a one-node Slurm it starts (SKIP without slurm-wlm/munge/root)"
	@echo "make test-local-sweep  experiments/local_sweep.sh (a sweep's shards as processes of this host), CPU only"
	@echo "make test-docs  the README's verdict tables match the committed verdicts.csv (experiments/verdict_table.py)"
	@echo "make test SAN=asan,ubsan  the Check suites under ASan+UBSan (objects in build-asan-ubsan)"
	@echo "make fuzz-smoke the libFuzzer targets (tests/fuzz) for FUZZ_SECONDS each (default 60), regressions first"
	@echo "make test-valgrind  the HDF5 paths (test_golden, golden+check round trip) under valgrind memcheck"
	@echo "make test-gpu-sanitize  on a GPU machine: compute-sanitizer memcheck/racecheck/synccheck, every variant"
	@echo "make static     $(BUILD)-static/decodelab with HDF5/OpenBLAS linked statically (for the lent H200)"
	@echo "make sass|ptx   disassemble the GPU kernels into $(BUILD)/gpu/*.sass / *.ptx"
	@echo "knobs: CUDA=auto|0|1 GPU_ARCH='$(GPU_ARCH)' OPT=$(OPT) SAN=asan|ubsan STATIC=0|1 PLANT=skip_last_token BUILD=$(BUILD)"
	@echo "streaming-family build settings (README, 'Tuning the streaming family'): DIAG=0|1 STREAM_PRODUCERS=per-consumer|one"
	@echo "       STREAM_SHAPE=W,S STREAM_WG_S=2..4 STREAM_PAGE_S=8|12 STREAM_SETMAXNREG=0|1 CHAIN_EARLY_COPIES=0|1"
	@echo "       STREAM_CLUSTER=0|1 STREAM_CLAIM=0|1"

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# nvcc writes no dependency files here: every .cu object depends on every gpu/ header (and the
# variant list), so an edit of a shared header (dl_dequant.cuh, dl_dispatch.cuh...) rebuilds the kernels.
# A change of nvcc or its flags (STREAM_PRODUCERS, DIAG, PLANT, GPU_ARCH...) rebuilds the kernels.
GPU_HDR := $(wildcard gpu/*.cuh gpu/*.h gpu/*.def) ref/dl_common.h
NVCC_STAMP := $(BUILD)/nvcc_flags.stamp
$(NVCC_STAMP): FORCE
	@mkdir -p $(BUILD); echo '$(NVCC) $(NVCCFLAGS)' | cmp -s - $@ || echo '$(NVCC) $(NVCCFLAGS)' > $@
$(BUILD)/gpu/%.o: gpu/%.cu $(GPU_HDR) $(NVCC_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@ 2> $(BUILD)/gpu/$*.ptxas.txt || { cat $(BUILD)/gpu/$*.ptxas.txt; exit 1; }
	@awk '/Function properties for/ { f = $$NF } /[Ww]arning/ { print } \
	     /spill stores/ && !/ 0 bytes spill stores/ { print "  spills in " f ":" $$0 }' $(BUILD)/gpu/$*.ptxas.txt | \
	   { c++filt 2>/dev/null || cat; } | sed -e '/^  spills in /{s/(anonymous namespace):://g; s/in void /in /; s/([^()]*): */: /;}'

# The generator string names the git commit: rebuild golden.o whenever the commit (or dirtiness) changes.
GIT_STAMP := $(BUILD)/git_commit.stamp
$(GIT_STAMP): FORCE
	@mkdir -p $(BUILD); echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
$(BUILD)/harness/golden.o: $(GIT_STAMP)
FORCE:

$(LIB): $(LIB_OBJ) $(CU_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(BUILD)/harness/main.o $(LIB)
	$(CC) $(LDFLAGS) $< $(LIB) $(PKG_LIBS) $(LINK_CUDA) -o $@

# Every Check suite is linked with the shared helpers of tests/dl_test.c.
$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/dl_test.o $(LIB) tests/dl_test.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/tests/dl_test.o $(LIB) $(PKG_LIBS) $(LINK_CUDA) $(CHECK_LIBS) $(LDFLAGS) -o $@

# experiments/exp_sensitivity.sh (issue 11): the CPU reference rebuilt with a perturbed expf,
# to measure how far a correct kernel with another exp may sit from its model.
$(BUILD)/exp_sensitivity: experiments/exp_sensitivity.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-shadow $< $(LIB) $(PKG_LIBS) $(LINK_CUDA) $(LDFLAGS) -o $@

# The NVIDIA host-side conversion checker (no GPU needed): nvcc compiles host code only.
# (nvcc applies its last -x to every input, so the C file is compiled on its own, without
# the sanitizer/OpenMP flags of the library build.)
$(BUILD)/tests/nv_format_check: tests/nv_format_check.cu ref/dl_formats.c ref/dl_formats.h ref/dl_rng.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -c ref/dl_formats.c -o $(BUILD)/tests/nv_dl_formats.o
	$(NVCC) -O2 -std=c++17 tests/nv_format_check.cu $(BUILD)/tests/nv_dl_formats.o -o $@

test: test-unit test-nv test-notebooks test-slurm test-local-sweep test-docs test-gpu-script

# The README's generated verdict tables are those of the committed runs (experiments/verdict_table.py).
test-docs:
	@if ! command -v python3 >/dev/null 2>&1; then echo "SKIP test-docs: python3 not found"; \
	else python3 experiments/verdict_table.py --readme README.md --check && \
	  n=$$(python3 experiments/verdict_table.py results/h200_2026-12-01b results/h100_2026-12-08 | \
	       grep -c '^| E3 H1 (h[0-9]*_2026-12-0[0-9]b*) |') && [ "$$n" = 2 ] || \
	  { echo "FAIL test-docs: verdict_table.py over two runs of E3 must name each row's folder"; exit 1; }; \
	  echo "PASS test-docs"; fi

test-unit: $(BIN) $(TEST_BIN)
	@fail=0; for t in $(TEST_BIN); do \
	  echo "== $$t"; DL_BIN=$(abspath $(BIN)) DL_ROOT=$(CURDIR) $$t || fail=1; done; \
	  if [ $$fail -ne 0 ]; then echo "SOME TESTS FAILED"; exit 1; fi; echo "all Check suites passed"

ifeq ($(NVCC_FOUND),)
test-nv:
	@echo "SKIP nv_format_check: nvcc not found (install the CUDA toolkit to compare against cuda_fp8.h)"
	@echo "SKIP nv_tile_off_check: nvcc not found"
else
test-nv: $(BUILD)/tests/nv_format_check $(BUILD)/tests/nv_tile_off_check
	$(BUILD)/tests/nv_format_check
	$(BUILD)/tests/nv_tile_off_check
endif

# The streaming kernels' shared-memory offset identities, on the host (gpu/dl_tile_off.cuh)
$(BUILD)/tests/nv_tile_off_check: tests/nv_tile_off_check.cu gpu/dl_tile_off.cuh
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -std=c++17 -Igpu tests/nv_tile_off_check.cu -o $@

# The nasty-case matrix on a GPU machine (tests/gpu/nasty_matrix.sh). With DECODELAB=path
# nothing is built: a prebuilt (e.g. `make static`) binary runs where HDF5 headers and Check are absent.
test-gpu: $(if $(DECODELAB),,$(BIN))
	DECODELAB=$(if $(DECODELAB),$(DECODELAB),$(BIN)) bash tests/gpu/nasty_matrix.sh

# test-gpu's verdict logic (PASS, FAIL, XFAIL of tests/gpu/known_failures.txt, MISSING) on a stub binary:
# no GPU needed (tests/test_gpu_script.sh). Part of `make test`.
.PHONY: test-gpu-script
test-gpu-script:
	bash tests/test_gpu_script.sh

# FlashInfer side by side (issue 6; tests/gpu/flashinfer_compare.sh): on a GPU machine with the
# wheels carried in .whl/ (harness/baselines/README.md). DECODELAB=path as for test-gpu.
.PHONY: compare-flashinfer
compare-flashinfer: $(if $(DECODELAB),,$(BIN))
	DECODELAB=$(if $(DECODELAB),$(DECODELAB),$(BIN)) bash tests/gpu/flashinfer_compare.sh

# The notebooks, executed headless on the committed sample results (results/sample/); a failing cell
# fails the target, and the last cell of each asserts what its figures must show (an empty or wrong
# results folder fails; DL_NB_ASSERT=0 turns the assertions off for exploring other data). `make test`
# (hence .ci/run, which installs Jupyter) runs it. Figures go to $(BUILD)/notebooks/figures (the committed ones: notebooks/figures/).
NB_OUT := $(BUILD)/notebooks
.PHONY: test-notebooks
test-notebooks:
	@if ! jupyter nbconvert --version >/dev/null 2>&1; then \
	  echo "SKIP test-notebooks: jupyter nbconvert not found (pip install nbconvert ipykernel matplotlib pandas)"; \
	else mkdir -p $(NB_OUT) && for nb in notebooks/*.ipynb; do echo "== $$nb"; \
	  DL_RESULTS=$(CURDIR)/results/sample DL_FIGURES=$(abspath $(NB_OUT))/figures \
	  jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 --output-dir $(NB_OUT) $$nb \
	  || { echo "notebook $$nb FAILED"; exit 1; }; done && echo "notebooks: all executed"; fi

# A sharded sweep through experiments/slurm_sweep.sh on a real one-node Slurm cluster the test starts and
# stops (tests/test_slurm.sh): a 3-task array, one task cancelled part-way and resubmitted, merged, equal to
# the one-piece run. SKIP (printed) without slurm-wlm/munge or root; part of `make test` (not of a
# sanitizer build's: the plain build runs it).
test-slurm: $(BIN)
ifeq ($(SAN),)
	DECODELAB=$(BIN) bash tests/test_slurm.sh
else
	@echo "SKIP test-slurm: sanitizer build (SAN=$(SAN)); the plain make test runs it"
endif

# A sharded sweep through experiments/local_sweep.sh on this host (tests/test_local_sweep.sh): E5 as 3 CPU
# processes at once (one killed part-way and resumed), one after another (interrupted and resumed), and 3
# shards over 2 GPU ids; each merged and equal to the one-piece run. About 10 s. Part of `make test`
# (not of a sanitizer build's, as test-slurm).
test-local-sweep: $(BIN)
ifeq ($(SAN),)
	DECODELAB=$(BIN) bash tests/test_local_sweep.sh
else
	@echo "SKIP test-local-sweep: sanitizer build (SAN=$(SAN)); the plain make test runs it"
endif

DEMO_OUT ?= $(BUILD)/llama3-8b_b64_l1024_e4m3.h5
demo: $(BIN)
	$(BIN) golden --preset llama3-8b --batch 64 --seq-len 1024 --kv-dtype e4m3 --out $(DEMO_OUT) --force
	$(BIN) check $(DEMO_OUT)
	$(BIN) inspect $(DEMO_OUT)
	$(BIN) run $(DEMO_OUT)
	rm -rf $(BUILD)/E3_gqa_fp8_dequant # each demo is a fresh run (the experiment refuses a used --out)
	$(BIN) experiment experiments/E3_gqa_fp8_dequant.cfg --out $(BUILD)/E3_gqa_fp8_dequant

static:
	$(MAKE) STATIC=1 BUILD=$(BUILD)-static $(BUILD)-static/decodelab

# the tools where `decodelab sass` looks for them: PATH, $(CUDA_HOME)/bin, $$DL_CUOBJDUMP, then PyPI's nvidia/cu*/bin
SITE_TOOL = python3 -c 'import glob, site, sys; d = site.getsitepackages() + [site.getusersitepackages()]; \
	f = [x for p in d for x in sorted(glob.glob(p + "/nvidia/cu*/bin/" + sys.argv[1]))]; print(f[0] if f else "")'
sass: $(CU_OBJ)
	@t=$$(command -v cuobjdump || ls $(CUDA_HOME)/bin/cuobjdump $${DL_CUOBJDUMP:-/nonexistent} 2>/dev/null | head -1); \
	[ -n "$$t" ] || t=$$($(SITE_TOOL) cuobjdump 2>/dev/null); \
	[ -n "$$t" ] || { echo "make sass: cuobjdump not found (PATH, $(CUDA_HOME)/bin, DL_CUOBJDUMP; or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)" >&2; exit 2; }; \
	n=$$(command -v nvdisasm || $(SITE_TOOL) nvdisasm 2>/dev/null); [ -z "$$n" ] || PATH="$$(dirname $$n):$$PATH"; \
	for o in $(CU_OBJ); do "$$t" -sass $$o > $${o%.o}.sass.tmp && mv $${o%.o}.sass.tmp $${o%.o}.sass && echo "wrote $${o%.o}.sass" \
	  || { rm -f $${o%.o}.sass.tmp; echo "make sass: $$t -sass $$o failed" >&2; exit 2; }; done
ptx:
	@mkdir -p $(BUILD)/gpu
	@for f in $(GPU_CU_SRC); do b=$$(basename $$f .cu); $(NVCC) $(NVCCFLAGS) -ptx $$f -o $(BUILD)/gpu/$$b.ptx && echo "wrote $(BUILD)/gpu/$$b.ptx"; done

# ---- robustness (tests/README.md) ----

# libFuzzer targets: the library rebuilt with clang + fuzzer instrumentation + ASan/UBSan in build-fuzz.
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build-fuzz
FUZZ_TARGETS := golden cli results experiment
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))
FUZZ_CFLAGS  := -std=c11 -O1 -g -fopenmp -D_DEFAULT_SOURCE $(PKG_CFLAGS) \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

ifneq ($(BUILD),$(FUZZ_BUILD))
$(FUZZ_BUILD)/libdecodelab.a: FORCE
	@$(MAKE) --no-print-directory CC=clang SAN=fuzz CUDA=0 BUILD=$(FUZZ_BUILD) $(FUZZ_BUILD)/libdecodelab.a
endif

$(FUZZ_BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_BUILD)/libdecodelab.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $< $(FUZZ_BUILD)/libdecodelab.a $(PKG_LIBS) -o $@

fuzz: $(FUZZ_BINS)

# Each target: replay tests/fuzz/regressions/<target>/* (every input kept from a finding), then
# fuzz for FUZZ_SECONDS from a scratch copy of tests/fuzz/corpus/<target>. Fails on any finding
# (the crashing input is left in $(FUZZ_BUILD)/artifacts/). Prints executions per target.
fuzz-smoke: $(FUZZ_BINS)
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/smoke.sh $(FUZZ_TARGETS)

# Valgrind memcheck over the HDF5 paths: the golden suite (no fork) and a golden+check CLI round trip.
VALGRIND := valgrind --tool=memcheck --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
            --suppressions=tests/valgrind.supp --quiet
test-valgrind: $(BIN) $(BUILD)/tests/test_golden
	CK_FORK=no OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 DL_BIN=$(abspath $(BIN)) DL_ROOT=$(CURDIR) \
	  $(VALGRIND) $(BUILD)/tests/test_golden
	@d=$$(mktemp -d /tmp/dl_valgrind.XXXXXX) && \
	  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 $(VALGRIND) $(BIN) golden --batch 3 --seq-len 1,17,40 \
	    --num-qo-heads 8 --num-kv-heads 2 --head-dim 32 --page-size 16 --out $$d/v.h5 > /dev/null && \
	  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 $(VALGRIND) $(BIN) check $$d/v.h5 > /dev/null && \
	  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 $(VALGRIND) $(BIN) inspect $$d/v.h5 > /dev/null; \
	  rc=$$?; rm -rf $$d; if [ $$rc -ne 0 ]; then echo "test-valgrind: FAILED"; exit 1; fi; \
	  echo "test-valgrind: golden, check and inspect clean under memcheck"

# compute-sanitizer memcheck, racecheck and synccheck over every variant on fresh nasty cases
# (GPU machine; DECODELAB=path to use a prebuilt binary, as for test-gpu).
test-gpu-sanitize: $(if $(DECODELAB),,$(BIN))
	DECODELAB=$(if $(DECODELAB),$(DECODELAB),$(BIN)) bash tests/gpu/sanitize.sh

clean:
	rm -rf $(BUILD) $(BUILD)-static build-asan build-ubsan build-asan-ubsan build-ubsan-asan $(FUZZ_BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
