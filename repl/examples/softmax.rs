//! Row-wise softmax in the tile language, launched from Rust and checked
//! against a softmax computed here: `cargo run --example softmax`.

use tilebook::{Session, Tensor};

const SOURCE: &str = r#"
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float('inf'))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)
"#;

fn main() -> Result<(), tilebook::Error> {
    let device = std::env::var("TILEBOOK_DEVICE").unwrap_or_else(|_| "auto".into());
    let session = Session::with_device(&device)?;
    println!("device: {}", session.device());
    let kernel = session.kernel(SOURCE)?;

    let (rows, cols) = (1823usize, 781usize);
    let data: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0)
        .collect();
    let x = Tensor::from_vec(data.clone(), &[rows, cols])?.to_device("cuda")?;
    let y = Tensor::zeros::<f32>(&[rows, cols])?.to_device("cuda")?;
    let block = cols.next_power_of_two();
    kernel.launch(
        rows,
        (&y, &x, cols, cols, cols),
        &[("BLOCK_SIZE", block), ("num_warps", 8)],
    )?;

    let got = y.to_vec::<f32>()?;
    let mut max_err = 0.0f64;
    for r in 0..rows {
        let row = &data[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max) as f64;
        let den: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for c in 0..cols {
            let want = (row[c] as f64 - m).exp() / den;
            max_err = max_err.max((got[r * cols + c] as f64 - want).abs());
        }
    }
    println!("{rows}x{cols}: max |softmax - reference| = {max_err:.2e}");
    if max_err > 1e-6 {
        return Err(tilebook::Error::new(
            "AssertionError",
            format!("softmax differs from the reference by {max_err}"),
        ));
    }
    Ok(())
}
