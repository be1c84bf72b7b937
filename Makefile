# statesim: every target works on a fresh machine with Go installed;
# .ci/run installs Go first when it is missing.
GO      ?= go
BIN     := bin/statesim
# Fuzz budgets are execution counts, not durations: Go 1.26's coordinator
# can fail a target with a bare "context deadline exceeded" when a
# time-based -fuzztime expires (golang/go#75804, fixed in Go 1.27), and a
# count has no deadline to race. 30000 executions take 2-5 s per target
# here; `make fuzz-long` is the longer, time-based run for people.
FUZZTIME    ?= 30000x
FUZZMINTIME ?= 2000x

.PHONY: all build run test long vet fuzz fuzz-long bench bench-prefix bench-prefix-instructions bugtable clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/statesim

# The main job: replay the seeds' incident (bug A) and name the imposter.
# statesim exits 1 when it finds violations, which is the expected outcome.
run: build
	./$(BIN) run imposter || test $$? -eq 1

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt needed"; exit 1; }

test: vet
	$(GO) test ./...
	$(MAKE) fuzz

# Every search of docs/bugs.md's table, live release and fix: 31 searches,
# 48 s wall on the 2-core dev VM, 11 s with JOBS=16 on the 16-core GPU host
# (docs/bugs.md has the runs).
bugtable: build
	scripts/bugtable.sh -b $(BIN) $(if $(JOBS),-j $(JOBS))

# The long tier: the suite with $$STATESIM_LONG set, for a change to the
# engine or the scheduler before it lands. The tests whose sizes `go test`
# cuts run in full: every sweep cell against the golden tables, every
# output hash through the command (the gigabyte traces and the 100k cut
# included; the full million also wants STATESIM_HASH_1M=1), and the
# property and numeric searches at their old sizes, and the bug-b-rollouts
# regressions replayed on the mock (side by side: 21 minutes on the shared
# 2-core VM, docs/performance.md). Minutes, not seconds.
long:
	STATESIM_LONG=1 $(GO) test -count=1 -timeout 60m ./...

# A short run of every fuzz target (one -fuzz pattern per invocation, as go test requires).
fuzz:
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzMarshalRoundTrip$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./setup -run '^$$' -fuzz '^FuzzSettle$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzAzureCSV$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzJSONL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./model -run '^$$' -fuzz '^FuzzFromHFConfig$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzCSVMapped$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./prop -run '^$$' -fuzz '^FuzzSummaryParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzJSONLNested$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzMooncakeHashIDs$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./sweep -run '^$$' -fuzz '^FuzzSweepParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./plot -run '^$$' -fuzz '^FuzzReadTrace$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./vllmargs -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1
	$(GO) test ./vllmargs -run '^$$' -fuzz '^FuzzConfigFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -parallel 1

# Every fuzz target for a minute each, by the clock. Under Go 1.26 a run can
# end in the coordinator's spurious "context deadline exceeded" (no input
# written: golang/go#75804, fixed in Go 1.27): rerun it. A real failure
# always writes its input under testdata/fuzz.
fuzz-long:
	$(MAKE) fuzz FUZZTIME=60s FUZZMINTIME=10s

# Replay benchmarks (one replay per op, 5 runs: quote the median), the
# trace readers and the sketch, then wall time and peak RSS of the binary
# (scripts/bench-rss.sh). About two minutes on a quiet machine.
bench:
	$(GO) test -run '^$$' -bench 'Replay(AzureConv|Synthetic1M)$$' -benchtime 1x -benchmem -count 5 ./engine
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./trace ./sketch
	./scripts/bench-rss.sh 5

# Issue 15's target: each prefix-caching pair's on/off user CPU per replay
# (docs/performance.md, "Targets"); about ten minutes.
bench-prefix:
	./scripts/prefix-ratios.sh 5 5

# The same pairs in instructions (needs valgrind; about 10 minutes).
bench-prefix-instructions:
	./scripts/prefix-instructions.sh

clean:
	rm -rf bin out

# The README's and docs/sweeps.md's figures (docs/img/): charts of the
# imposter and wrap32 runs and the built-in sweeps' charts. Sweeps resume
# from finished cells, so their output directories are cleared first.
.PHONY: figures
figures: build
	rm -rf out/figures
	./$(BIN) plot imposter --out out/figures
	./$(BIN) plot wrap32 --out out/figures
	./$(BIN) sweep bug-a-memory --quiet --out out/figures/bug-a-memory
	./$(BIN) sweep bug-b-rollouts --quiet --out out/figures/bug-b-rollouts
	./$(BIN) sweep bug-b-memory --quiet --out out/figures/bug-b-memory
	mkdir -p docs/img
	cp out/figures/imposter-budget.png out/figures/imposter-cache.png out/figures/wrap32-cache.png docs/img/
	cp out/figures/bug-a-memory/bug-a-memory-incidence.png out/figures/bug-b-rollouts/bug-b-rollouts-incidence.png \
	   out/figures/bug-b-memory/bug-b-memory-incidence.png docs/img/

# ---- CUDA backend (tag cuda; see GPU.md). Build here with `make cuda`;
# run `make confirm` and `make kernel-bench` on a GPU machine. ----
NVCC        ?= $(shell command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_DIR    := $(CURDIR)/.cuda
CUDA_ENV    := CGO_CFLAGS=-I$(CUDA_DIR)/usr/include CGO_LDFLAGS=-L$(CUDA_DIR)/usr/lib/x86_64-linux-gnu/stubs
CONFIRM_OUT ?= docs
# The commit the binary is built from, named in gpu-confirmation.md.
CUDA_REV    := $(shell git describe --always --dirty --abbrev=12 2>/dev/null)

.PHONY: cuda ptx confirm kernel-bench

$(CUDA_DIR)/usr/include/cuda.h:
	scripts/gpu/cuda-headers.sh $(CUDA_DIR)

# The cuda-tagged binary, bin/statesim-cuda (links the driver's libcuda.so.1):
# the backend (backend/cuda), the experiments (gpuconfirm) and the command.
cuda: $(CUDA_DIR)/usr/include/cuda.h
	$(CUDA_ENV) $(GO) vet -tags cuda ./backend/cuda ./gpuconfirm ./cmd/statesim
	$(CUDA_ENV) $(GO) build -tags cuda -ldflags "-X statesim/gpuconfirm.revision=$(CUDA_REV)" -o bin/statesim-cuda ./cmd/statesim

# Regenerate kernels/*.ptx (sm_90) where nvcc is; commit the result.
ptx:
	NVCC=$(NVCC) NVCCFLAGS="$(NVCCFLAGS)" scripts/gpu/ptx.sh

# GPU parity, bug A and bug B on real kernels: writes docs/gpu-confirmation.{md,json}.
confirm:
	@test -x bin/statesim-cuda || { echo "no bin/statesim-cuda: run 'make cuda' on a machine with Go and copy the binary here"; exit 2; }
	bin/statesim-cuda gpu-confirm --out $(CONFIRM_OUT)

# Decode state update and prefill scan against copy bandwidth and PyTorch: writes docs/kernel-bench.md.
kernel-bench:
	NVCC=$(NVCC) scripts/gpu/kernel-bench.sh out/kernel-bench
	cp out/kernel-bench/kernel-bench.md docs/kernel-bench.md
