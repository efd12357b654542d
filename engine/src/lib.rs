//! Documents → sections → chunks → vectors → HNSW, on disk (issue: document index). Empty until then.
