//! Benchmarks of validate, plan and hash on a maximal document (filled in below).
fn main() {}
