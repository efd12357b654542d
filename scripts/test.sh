#!/usr/bin/env bash
# The whole test suite, from a fresh clone: fetch the models the tests use (skipped when present
# and verified), then run every test of the workspace (extra arguments go to cargo test:
# scripts/test.sh --no-fail-fast).
#
# Tests read the shared goldens and data sets from ../shared beside the repository; set
# WALKRAG_GOLDEN / WALKRAG_DATA to point elsewhere.
#
# The Postgres store's tests run against a real server: WALKRAG_TEST_POSTGRES if set, else a
# throwaway one from scripts/postgres.sh, stopped afterwards (also when a test fails) unless
# it was already running.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh minilm smollm2-135m qwen2.5-coder-0.5b
if [[ -z "${WALKRAG_TEST_POSTGRES:-}" ]]; then
    if ! scripts/postgres.sh url >/dev/null 2>&1; then
        trap 'scripts/postgres.sh stop' EXIT
    fi
    WALKRAG_TEST_POSTGRES="$(scripts/postgres.sh start)"
    export WALKRAG_TEST_POSTGRES
fi
# No incremental state (a fresh clone never reuses it, and it took 1.1 GB of the 4.5 GB a
# cold test build left on disk) unless the caller asks for it.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo test --workspace --all-targets "$@"
