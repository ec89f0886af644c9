// Present so that cargo builds the host dependencies Cargo.toml lists.
fn main() {}
