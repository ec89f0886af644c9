//! Rewrites of LLVM's PTX text before the driver's JIT sees it, for what
//! no LLVM option reaches. Each one keeps the PTX's meaning exactly.

/// Writes LLVM's `mul.wide.s32 d, a, 2^k` (the byte offset of an `i32`
/// element index: `sext(a) * size`) as `cvt.s64.s32 d, a` and `shl.b64 d,
/// d, k`, and the `.u32` form with `cvt.u64.u32`.
///
/// Why: `ptxas` keeps a `mul.wide` out of a loop only as its 32-bit operand
/// and redoes it inside as an `IMAD.WIDE` with the pointer it is added to.
/// In a `wgmma` K loop those are the copy phase's address adds, and Nsight
/// Compute showed that phase held by dispatch stalls: the tutorial matmul
/// at 128x256x64 (8 warps, 3 stages) had 2.19 of them per issued
/// instruction against 0.61 for Triton's PTX of the same config, whose
/// offsets are `cvt` + `shl`. With this rewrite ptxas keeps the offsets in
/// 64-bit registers (`IADD3` + `IADD3.X` in the loop; 232 registers
/// instead of 246), and the kernel went from 625 to 680 TFLOPS at 4096^3
/// on the H200, Triton's PTX 669 in the same run (the PTX edited alone:
/// 583 to 674 at 8192^3, Triton's 644; `bench/results/h200-2026-11-29-s46/`).
///
/// The product of a sign- (or zero-) extended 32-bit value and `2^k` for
/// `k <= 30` fits 64 bits, so the shift is the same number; any other
/// form of the instruction (a register or a non-power-of-two multiplier,
/// a predicate guard) is left as it is.
pub fn unfuse_wide_shifts(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + ptx.len() / 16);
    for line in ptx.split_inclusive('\n') {
        match wide_shift(line) {
            Some((ext, d, a, k)) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!(
                    "{indent}cvt.{ext}64.{ext}32 \t{d}, {a};\n{indent}shl.b64 \t{d}, {d}, {k};\n"
                ));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `(s|u, d, a, k)` of a line `mul.wide.{s,u}32 d, a, 2^k;` with `1 <= k <= 30`.
fn wide_shift(line: &str) -> Option<(&str, &str, &str, u32)> {
    let body = line.trim().strip_suffix(';')?;
    let rest = body.strip_prefix("mul.wide.")?;
    let (ext, rest) = if let Some(r) = rest.strip_prefix("s32") {
        ("s", r)
    } else {
        ("u", rest.strip_prefix("u32")?)
    };
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let ops: Vec<&str> = rest.split(',').map(str::trim).collect();
    let [d, a, m] = ops[..] else {
        return None;
    };
    let m: u64 = m.parse().ok()?;
    let reg = |r: &str, p: &str| {
        r.strip_prefix(p)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    if !(reg(d, "%rd") && reg(a, "%r") && m.is_power_of_two()) {
        return None;
    }
    let k = m.trailing_zeros();
    (1..=30).contains(&k).then_some((ext, d, a, k))
}

#[cfg(test)]
mod tests {
    use super::unfuse_wide_shifts;

    #[test]
    fn power_of_two_multipliers_become_an_extension_and_a_shift() {
        let ptx = "\tmul.wide.s32 \t%rd5, %r236, 2;\n\tmul.wide.u32 \t%rd9, %r7, 1024;\n";
        assert_eq!(
            unfuse_wide_shifts(ptx),
            "\tcvt.s64.s32 \t%rd5, %r236;\n\tshl.b64 \t%rd5, %rd5, 1;\n\
             \tcvt.u64.u32 \t%rd9, %r7;\n\tshl.b64 \t%rd9, %rd9, 10;\n"
        );
    }

    #[test]
    fn other_multiplies_and_lines_stay() {
        let keep = "\tmul.wide.s32 \t%rd5, %r236, 3;\n\
                    \tmul.wide.s32 \t%rd5, %r236, %r7;\n\
                    \tmul.wide.s32 \t%rd5, %r236, 1;\n\
                    \tmul.wide.s32 \t%rd5, %r236, 2147483648;\n\
                    \t@%p1 mul.wide.s32 \t%rd5, %r236, 2;\n\
                    \tmul.wide.s16 \t%r5, %rs2, 2;\n\
                    \tmul.lo.s64 \t%rd5, %rd4, 2;\n\
                    // mul.wide.s32 in a comment, 2;\n\
                    \tadd.s64 \t%rd272, %rd291, %rd5;";
        assert_eq!(unfuse_wide_shifts(keep), keep);
    }
}
