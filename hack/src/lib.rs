//! Empty: see `Cargo.toml` (this crate only unifies dependency features).
