//! CPU backend benchmark: vector add at 2^24 fp32 in GB/s against this
//! machine's memcpy bandwidth, and the tutorial matmul at 512^3 fp32 in GFLOPS.
//! Run with `cargo run --release -p tilebook-bench --bin cpu-bench`; it prints
//! a table and writes `bench/results/cpu.json`.

use std::time::Instant;
use tilebook_session::Session;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Seconds per run of a cell (median of `reps`, after one warm-up).
fn time_cell(s: &mut Session, cell: &str, reps: usize) -> f64 {
    let r = s.run_cell(cell);
    assert!(r.ok, "{}", r.text());
    let mut times = vec![];
    for _ in 0..reps {
        let t = Instant::now();
        let r = s.run_cell(cell);
        times.push(t.elapsed().as_secs_f64());
        assert!(r.ok, "{}", r.text());
    }
    median(times)
}

/// Bytes per second of copying a 2^24-float buffer (read + write counted), all cores.
fn memcpy_bandwidth() -> f64 {
    let n = 1usize << 24;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let mut times = vec![];
    for _ in 0..11 {
        let t = Instant::now();
        let chunk = n.div_ceil(threads);
        std::thread::scope(|sc| {
            for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                sc.spawn(move || d.copy_from_slice(s));
            }
        });
        times.push(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&dst);
    (2 * n * 4) as f64 / median(times)
}

/// The same vector add written in Rust (auto-vectorised by rustc), all cores: the practical ceiling.
fn native_add_bandwidth() -> f64 {
    let n = 1usize << 24;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let x = vec![1.0f32; n];
    let y = vec![2.0f32; n];
    let mut out = vec![0.0f32; n];
    let mut times = vec![];
    for _ in 0..11 {
        let t = Instant::now();
        let chunk = n.div_ceil(threads);
        std::thread::scope(|sc| {
            for ((o, a), b) in out
                .chunks_mut(chunk)
                .zip(x.chunks(chunk))
                .zip(y.chunks(chunk))
            {
                sc.spawn(move || {
                    for i in 0..o.len() {
                        o[i] = a[i] + b[i];
                    }
                });
            }
        });
        times.push(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(&out);
    (3 * n * 4) as f64 / median(times)
}

const VADD: &str = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)

n = 2 ** 24
x = torch.rand(n, device='cuda')
y = torch.rand(n, device='cuda')
out = torch.empty_like(x)
"#;

/// The tutorial kernel (one copy, shared with the tests) and the host setup.
const MATMUL_KERNEL: &str = include_str!("../../tests/ir/matmul.py");
const MATMUL: &str = r#"
S = 512
a = torch.randn((S, S), device='cuda')
b = torch.randn((S, S), device='cuda')
c = torch.empty((S, S), device='cuda', dtype=torch.float16)
def mm(BM, BN, BK):
    grid = (triton.cdiv(S, BM) * triton.cdiv(S, BN), )
    matmul_kernel[grid](a, b, c, S, S, S, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=8, ACTIVATION='')
"#;

fn main() {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mut s = Session::new();
    s.announce = false;
    let r = s.run_cell(VADD);
    assert!(r.ok, "{}", r.text());
    let mem = memcpy_bandwidth();
    let t = time_cell(
        &mut s,
        "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)",
        11,
    );
    let vadd = (3 * (1usize << 24) * 4) as f64 / t;
    let r = s.run_cell("assert torch.allclose(out, x + y)");
    assert!(r.ok, "{}", r.text());
    println!("machine: {threads} threads");
    println!("memcpy bandwidth           {:8.2} GB/s", mem / 1e9);
    let native = native_add_bandwidth();
    println!(
        "native Rust add 2^24 fp32  {:8.2} GB/s   (ceiling for context)",
        native / 1e9
    );
    println!("vector add 2^24 fp32       {:8.2} GB/s   ratio to memcpy {:.2} (target >= 0.6), to native Rust {:.2}", vadd / 1e9, vadd / mem, vadd / native);
    // Host time per launch of a small kernel (what `%timeit` of a
    // 10 000-element add shows): 1000 launches in one cell.
    let r = s.run_cell(
        "xs = torch.rand(10000, device='cuda')\nys = torch.rand(10000, device='cuda')\nzs = torch.empty_like(xs)",
    );
    assert!(r.ok, "{}", r.text());
    let launch = time_cell(
        &mut s,
        "for _ in range(1000):\n    add_kernel[(10,)](xs, ys, zs, 10000, BLOCK_SIZE=1024)",
        5,
    ) / 1000.0;
    println!(
        "launch of a 10 000 add     {:8.2} us     (target <= 10)",
        launch * 1e6
    );

    let kernel: String = MATMUL_KERNEL
        .split("# expect:")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.starts_with("# test"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = s.run_cell(&kernel);
    assert!(r.ok, "{}", r.text());
    let r = s.run_cell(MATMUL);
    assert!(r.ok, "{}", r.text());
    let mut best = (0.0, String::new());
    for (bm, bn, bk) in [
        (32, 64, 32),
        (64, 64, 32),
        (64, 128, 32),
        (128, 128, 32),
        (32, 32, 32),
    ] {
        let t = time_cell(&mut s, &format!("mm({bm}, {bn}, {bk})"), 5);
        let gflops = 2.0 * 512f64.powi(3) / t / 1e9;
        println!("matmul 512^3 fp32 {bm:>3}x{bn:>3}x{bk:>2} {gflops:8.2} GFLOPS");
        if gflops > best.0 {
            best = (gflops, format!("{bm}x{bn}x{bk}"));
        }
    }
    let r =
        s.run_cell("mm(64, 64, 32)\nassert torch.allclose(c.float(), a @ b, atol=5e-2, rtol=1e-2)");
    assert!(r.ok, "{}", r.text());
    println!(
        "matmul 512^3 fp32 best     {:8.2} GFLOPS ({}) (target >= 60)",
        best.0, best.1
    );
    // A host statement's round trip through the session engine (parse,
    // evaluate, outputs), as the REPL and the Jupyter kernel run it.
    let rt = time_cell(&mut s, "y0 = 1 + 2 * 3", 1001);
    println!(
        "host statement round trip  {:8.3} ms   (target < 1 ms)",
        rt * 1e3
    );
    let json = serde_json::json!({
        "host_roundtrip_ms": rt * 1e3,
        "machine_threads": threads,
        "memcpy_gbps": mem / 1e9,
        "vadd_2p24_gbps": vadd / 1e9,
        "launch_10k_add_us": launch * 1e6,
        "vadd_ratio_to_memcpy": vadd / mem,
        "native_rust_add_gbps": native / 1e9,
        "matmul_512_gflops": best.0,
        "matmul_512_best_blocks": best.1,
    });
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(
        dir.join("cpu.json"),
        serde_json::to_string_pretty(&json).unwrap() + "\n",
    );
}
