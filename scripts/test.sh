#!/usr/bin/env bash
# The whole test suite, from a fresh clone: fetch the models the tests use (skipped when present
# and verified), then run every test of the workspace.
#
# Tests read the shared goldens and data sets from ../shared beside the repository; set
# WALKRAG_GOLDEN / WALKRAG_DATA to point elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh minilm smollm2-135m qwen2.5-coder-0.5b
cargo test --workspace --all-targets
