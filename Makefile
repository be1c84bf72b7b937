# statesim: every target works on a fresh machine with Go installed;
# .ci/run installs Go first when it is missing.
GO      ?= go
BIN     := bin/statesim
FUZZTIME ?= 5s

.PHONY: all build run test vet fuzz bench clean

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

# A short run of every fuzz target (one -fuzz pattern per invocation, as go test requires).
fuzz:
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzAzureCSV$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s -parallel 1
	$(GO) test ./trace -run '^$$' -fuzz '^FuzzJSONL$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s -parallel 1

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

clean:
	rm -rf bin out
