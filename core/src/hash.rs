//! File checksums, for model files and index manifests.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The sha256 of a file's contents, as 64 lowercase hex digits.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_known_content() {
        let path = std::env::temp_dir().join(format!("walkrag-hash-{}", std::process::id()));
        std::fs::write(&path, b"abc").unwrap();
        let sum = super::sha256_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            sum,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
