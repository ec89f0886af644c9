//! Nothing here: the test in `evcxr.rs` is the point of this crate (a
//! crate of its own so that only it builds evcxr and rust-analyzer).
