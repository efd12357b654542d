#!/usr/bin/env bash
# The walkrag demo, from a fresh clone: fetch the default models (skipped when present and
# verified), build, index a long standard (NIST SP 800-63-3, four volumes, in demo/sp800-63),
# walk a question whose answer needs two sections, write the walk's trace, and ask the same
# question with `single`, one search and one model call, to compare.
#
# Everything it makes goes to target/demo/; a second run reuses the index (nothing changed,
# nothing is embedded again). DEMO_QUESTION="..." scripts/demo.sh asks your own question.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
timings=()
# Runs a step, printing its title first and remembering how long it took.
step() {
  local title=$1
  shift
  printf '\n== %s\n' "$title" >&2
  local t0=$SECONDS status=0
  "$@" || status=$?
  timings+=("$(printf '%5ds  %s' $((SECONDS - t0)) "$title")")
  # `walkrag ask` exits 1 when the model finds no answer: a result, not a failure.
  if [ "$status" -gt 1 ]; then
    exit "$status"
  fi
}

step "models (fetched once, checked by sha256)" scripts/fetch-models.sh minilm qwen2.5-coder-0.5b qwen2.5-coder-1.5b
# Only the walkrag binary, in the `quick` profile (Cargo.toml): the crates a question spends
# its time in are optimised, the rest is not, so a cold build takes about half of `dev`'s.
# The tests, benches and examples are left to scripts/test.sh, which builds them when it runs.
step "build" cargo build -p walkrag --bin walkrag --profile quick
walkrag=target/quick/walkrag
out=target/demo
mkdir -p "$out"

question=${DEMO_QUESTION:-"How often must a subscriber be reauthenticated at the authenticator assurance level that agencies must select at minimum when self-asserted personal information is made available online?"}

step "index demo/sp800-63 into $out/index (only new or changed text is embedded)" \
  "$walkrag" index demo/sp800-63 --index "$out/index"

printf '\nquestion: %s\n' "$question" >&2
step "walk: facts and leads stream below, then the cited answer" \
  "$walkrag" ask "$question" --index "$out/index" --max-cycles 2 --trace "$out/walk.html"
printf '\nThe walk drawn as a graph (open it in a browser): %s\n' "$PWD/$out/walk.html" >&2

step "single: the same question, one search and one model call" \
  "$walkrag" ask "$question" --strategy single --index "$out/index"

printf '\n== timings\n' >&2
printf '%s\n' "${timings[@]}" >&2
printf '%5ds  in all\n' $((SECONDS - started)) >&2
