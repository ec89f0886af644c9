//! Host time per `Kernel::launch` from Rust on the CPU backend, against the
//! same launch written in a session cell: `cargo run --release --example launch_time`.

use std::time::Instant;
use tilebook::{Session, Tensor};

const SOURCE: &str = r#"
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(output_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)
"#;

fn main() -> Result<(), tilebook::Error> {
    let session = Session::cpu();
    session.run("%timing off")?;
    let kernel = session.kernel(SOURCE)?;
    let n = 1024usize;
    let x = Tensor::from_slice(&vec![1.0f32; n]);
    let y = Tensor::from_slice(&vec![2.0f32; n]);
    let out = Tensor::zeros::<f32>(&[n])?;
    let launches = 2000;
    for _ in 0..100 {
        kernel.launch(1, (&x, &y, &out, n), &[("BLOCK_SIZE", 1024)])?;
    }
    let t = Instant::now();
    for _ in 0..launches {
        kernel.launch(1, (&x, &y, &out, n), &[("BLOCK_SIZE", 1024)])?;
    }
    let api = t.elapsed().as_secs_f64() / launches as f64 * 1e6;
    session.set("x", x.clone())?;
    session.set("y", y.clone())?;
    session.set("out", out.clone())?;
    session.run(&format!(
        "import time\nfor _ in range(100):\n    add_kernel[(1,)](x, y, out, {n}, BLOCK_SIZE=1024)\n\
         t = time.perf_counter()\nfor _ in range({launches}):\n    add_kernel[(1,)](x, y, out, {n}, BLOCK_SIZE=1024)\n\
         cell_us = (time.perf_counter() - t) / {launches} * 1e6"
    ))?;
    let cell: f64 = session.get("cell_us")?;
    println!("host time per launch of a {n}-element add: Kernel::launch {api:.1} µs, in a cell {cell:.1} µs");
    Ok(())
}
