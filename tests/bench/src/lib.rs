//! Home of hookgate's criterion benchmarks (`benches/`); no library code.
//! See `Cargo.toml` for why they live in their own crate.
