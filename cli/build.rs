//! Names the commit the binary was built from, for `walkrag --version`.
//!
//! Read from the repository's own files (no `git` process needed); a build outside a git
//! checkout (a source tarball) says "unknown".

use std::path::{Path, PathBuf};

fn main() {
    let git = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.git");
    let commit = head_commit(&git).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=WALKRAG_COMMIT={commit}");
}

/// The short hash HEAD points at, telling cargo to build again when it moves.
fn head_commit(git: &Path) -> Option<String> {
    let head_file = git.join("HEAD");
    println!("cargo:rerun-if-changed={}", head_file.display());
    let head = std::fs::read_to_string(&head_file).ok()?;
    let hash = match head.trim().strip_prefix("ref: ") {
        None => head.trim().to_string(),
        Some(name) => {
            let loose: PathBuf = git.join(name);
            let packed = git.join("packed-refs");
            // Only paths that exist: cargo runs a script again on every build while a path
            // it watches is missing. A directory is watched through every file inside it.
            for watched in [git.join("refs/heads"), packed.clone()] {
                if watched.exists() {
                    println!("cargo:rerun-if-changed={}", watched.display());
                }
            }
            match std::fs::read_to_string(&loose) {
                Ok(hash) => hash.trim().to_string(),
                Err(_) => std::fs::read_to_string(&packed)
                    .ok()?
                    .lines()
                    .find_map(|line| {
                        line.strip_suffix(name)?
                            .strip_suffix(' ')
                            .map(str::to_string)
                    })?,
            }
        }
    };
    let short = hash.get(..7)?;
    short
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then(|| short.to_string())
}
