//! Criterion benchmarks for walkrag live in `benches/`; this library is empty on purpose.
