//! A vector add in the tile language, launched from Rust:
//! `cargo run --example vector_add` (the GPU when there is one, else the
//! CPU backend; `TILEBOOK_DEVICE=cpu` picks the CPU backend).

use tilebook::{Session, Tensor};

const SOURCE: &str = r#"
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)
"#;

fn main() -> Result<(), tilebook::Error> {
    let device = std::env::var("TILEBOOK_DEVICE").unwrap_or_else(|_| "auto".into());
    let session = Session::with_device(&device)?;
    println!("device: {}", session.device());
    let kernel = session.kernel(SOURCE)?;

    let n = 98_432usize;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
    let x = Tensor::from_slice(&xs).to_device("cuda")?;
    let y = Tensor::from_slice(&ys).to_device("cuda")?;
    let out = Tensor::zeros::<f32>(&[n])?.to_device("cuda")?;

    let block = 1024;
    kernel.launch(
        n.div_ceil(block),
        (&x, &y, &out, n),
        &[("BLOCK_SIZE", block)],
    )?;

    let got = out.to_vec::<f32>()?;
    let max_diff = got
        .iter()
        .zip(xs.iter().zip(&ys))
        .map(|(g, (a, b))| (g - (a + b)).abs())
        .fold(0.0f32, f32::max);
    println!("out[..4] = {:?}", &got[..4]);
    println!("{n} elements, max |out - (x + y)| = {max_diff}");
    if max_diff != 0.0 {
        return Err(tilebook::Error::new(
            "AssertionError",
            "the kernel's sum differs from x + y",
        ));
    }
    println!(
        "tile IR of the launched specialization: {} lines",
        kernel.tile_ir().map_or(0, |t| t.lines().count())
    );
    if let Some(ptx) = kernel.ptx() {
        println!("PTX: {} lines", ptx.lines().count());
    }
    Ok(())
}
