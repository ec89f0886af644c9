//! fp16 and bf16 conversions in generated code against the `half` crate,
//! bit for bit: every fp16 bit pattern decoded, and a sweep of f32 values
//! (every exponent, rounding ties, subnormals, overflow, NaN payloads)
//! rounded to fp16 and bf16 and encoded as fp16, through both the
//! four-lane loop (blocks of 64) and the scalar one (blocks of 2).

use half::{bf16, f16};
use tilebook_cpu::{compile, CpuOptions};
use tilebook_tir::parse::parse_kernel;

fn kernel(block: usize) -> String {
    format!(
        r#"kernel @conv(%0: *fp16 "h", %1: *fp32 "f", %2: *fp32 "x", %3: *fp32 "r16", %4: *fp16 "e16", %5: *fp32 "rbf") {{
  %6 = program_id[0] : i32
  %7 = const[{block}] : i32
  %8 = mul %6, %7 : i32
  %9 = arange[0, {block}] : <{block}xi32>
  %10 = splat %8 : <{block}xi32>
  %11 = add %10, %9 : <{block}xi32>
  %12 = splat %0 : <{block}x*fp16>
  %13 = addptr %12, %11 : <{block}x*fp16>
  %14 = load %13 : <{block}xfp16>
  %15 = cast %14 : <{block}xfp32>
  %16 = splat %1 : <{block}x*fp32>
  %17 = addptr %16, %11 : <{block}x*fp32>
  store %17, %15
  %18 = splat %2 : <{block}x*fp32>
  %19 = addptr %18, %11 : <{block}x*fp32>
  %20 = load %19 : <{block}xfp32>
  %21 = cast %20 : <{block}xfp16>
  %22 = cast %21 : <{block}xfp32>
  %23 = splat %3 : <{block}x*fp32>
  %24 = addptr %23, %11 : <{block}x*fp32>
  store %24, %22
  %25 = splat %4 : <{block}x*fp16>
  %26 = addptr %25, %11 : <{block}x*fp16>
  store %26, %21
  %27 = cast %20 : <{block}xbf16>
  %28 = cast %27 : <{block}xfp32>
  %29 = splat %5 : <{block}x*fp32>
  %30 = addptr %29, %11 : <{block}x*fp32>
  store %30, %28
}}
"#
    )
}

fn bounds<T>(v: &[T]) -> [u64; 2] {
    let lo = v.as_ptr() as u64;
    [lo, lo + std::mem::size_of_val(v) as u64]
}

/// f32 values that exercise every branch of the conversions.
fn sweep() -> Vec<f32> {
    let mut bits: Vec<u32> = vec![];
    for e in 0..256u32 {
        for m in [
            0u32, 1, 0xFFF, 0x1000, 0x1001, 0x2000, 0x3000, 0x5000, 0x7FFF, 0x8000, 0x8001,
            0x18000, 0x7FE000, 0x7FF000, 0x7FFFFF, 0x400000, 0x3FFFFF, 0x12345,
        ] {
            for s in [0u32, 0x8000_0000] {
                bits.push(s | e << 23 | m);
            }
        }
    }
    // A pseudo-random spread over all bit patterns.
    let mut x = 0x1234_5678u32;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        bits.push(x);
    }
    // fp16's edges: max, the midpoint above it, the smallest normal and subnormals.
    for v in [
        65504.0f32,
        65519.99,
        65520.0,
        65536.0,
        6.1035156e-5,
        5.9604645e-8,
        2.9802322e-8,
    ] {
        bits.push(v.to_bits());
        bits.push((-v).to_bits());
    }
    bits.into_iter().map(f32::from_bits).collect()
}

fn check(block: usize) {
    let k = parse_kernel(&kernel(block)).unwrap();
    tilebook_tir::verify::verify(&k).unwrap();
    let ck = compile(&k, &CpuOptions::default()).unwrap();
    let mut x = sweep();
    x.resize(x.len().div_ceil(65536) * 65536, 1.0);
    let n = x.len();
    let h: Vec<u16> = (0..n).map(|i| (i % 65536) as u16).collect();
    let f = vec![0f32; n];
    let r16 = vec![0f32; n];
    let e16 = vec![0u16; n];
    let rbf = vec![0f32; n];
    let args = [
        h.as_ptr() as u64,
        f.as_ptr() as u64,
        x.as_ptr() as u64,
        r16.as_ptr() as u64,
        e16.as_ptr() as u64,
        rbf.as_ptr() as u64,
    ];
    let b = [
        bounds(&h),
        bounds(&f),
        bounds(&x),
        bounds(&r16),
        bounds(&e16),
        bounds(&rbf),
    ];
    ck.launch([(n / block) as u32, 1, 1], &args, &b, vec![])
        .unwrap();
    for i in 0..n {
        let want = f16::from_bits(h[i]).to_f32().to_bits();
        assert_eq!(f[i].to_bits(), want, "decode {:#06x} (block {block})", h[i]);
        let want = f16::from_f32(x[i]).to_f32().to_bits();
        assert_eq!(
            r16[i].to_bits(),
            want,
            "round to fp16 of {:#010x} (block {block})",
            x[i].to_bits()
        );
        let want = f16::from_f32(x[i]).to_bits();
        assert_eq!(
            e16[i],
            want,
            "encode fp16 of {:#010x} (block {block})",
            x[i].to_bits()
        );
        let want = bf16::from_f32(x[i]).to_f32().to_bits();
        assert_eq!(
            rbf[i].to_bits(),
            want,
            "round to bf16 of {:#010x} (block {block})",
            x[i].to_bits()
        );
    }
}

#[test]
fn fp16_and_bf16_in_four_lanes_equal_half() {
    check(64);
}

#[test]
fn fp16_and_bf16_one_lane_at_a_time_equal_half() {
    check(2);
}
