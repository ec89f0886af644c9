//! fp16 and bf16 in registers without helper calls: rounding an f32 to
//! their precision, and fp16's bits to and from f32. Each is a few integer
//! and float instructions, exactly what the `half` crate computes (round to
//! nearest even, overflow to infinity, fp16 subnormals, NaN payloads as
//! `half` keeps them); `compiler/cpu/tests/narrow.rs` compares all 65 536
//! fp16 bit patterns and a sweep of f32 values with `half`.
//! The rounding works on `f32` and on `f32x4` alike.

use crate::codegen::Gen;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, InstBuilder, MemFlags, Type as CT, Value as CV};

impl Gen<'_, '_> {
    /// An i32 constant of type `t` (`i32` or `i32x4`).
    fn int_k(&mut self, t: CT, v: u32) -> CV {
        let x = self.b.ins().iconst(types::I32, v as i32 as i64);
        if t.is_vector() {
            self.b.ins().splat(t, x)
        } else {
            x
        }
    }

    fn f32_k(&mut self, t: CT, v: f32) -> CV {
        let x = self.b.ins().f32const(v);
        if t.is_vector() {
            self.b.ins().splat(t, x)
        } else {
            x
        }
    }

    /// `c ? a : b` for scalar or lane-wise (`c` from an `icmp` of the same shape).
    fn pick(&mut self, c: CV, a: CV, b: CV) -> CV {
        if self.b.func.dfg.value_type(a).is_vector() {
            self.b.ins().bitselect(c, a, b)
        } else {
            self.b.ins().select(c, a, b)
        }
    }

    fn ucmp(&mut self, cc: IntCC, x: CV, k: u32) -> CV {
        let t = self.b.func.dfg.value_type(x);
        let k = self.int_k(t, k);
        self.b.ins().icmp(cc, x, k)
    }

    fn and_k(&mut self, x: CV, k: u32) -> CV {
        let t = self.b.func.dfg.value_type(x);
        let k = self.int_k(t, k);
        self.b.ins().band(x, k)
    }

    fn or_k(&mut self, x: CV, k: u32) -> CV {
        let t = self.b.func.dfg.value_type(x);
        let k = self.int_k(t, k);
        self.b.ins().bor(x, k)
    }

    fn add_k(&mut self, x: CV, k: u32) -> CV {
        let t = self.b.func.dfg.value_type(x);
        let k = self.int_k(t, k);
        self.b.ins().iadd(x, k)
    }

    fn shr_k(&mut self, x: CV, n: i64) -> CV {
        let n = self.b.ins().iconst(types::I32, n);
        self.b.ins().ushr(x, n)
    }

    fn shl_k(&mut self, x: CV, n: i64) -> CV {
        let n = self.b.ins().iconst(types::I32, n);
        self.b.ins().ishl(x, n)
    }

    /// The integer type of the same lanes as float type `t`.
    fn bits_ty(t: CT) -> CT {
        if t.is_vector() {
            types::I32X4
        } else {
            types::I32
        }
    }

    /// `x` (f32 or f32x4) rounded to the nearest fp16 value, ties to even.
    pub(crate) fn round_f16_inline(&mut self, x: CV) -> CV {
        let ft = self.b.func.dfg.value_type(x);
        let it = Self::bits_ty(ft);
        let f = MemFlags::new();
        let b = self.b.ins().bitcast(it, f, x);
        let a = self.and_k(b, 0x7FFF_FFFF);
        let sign = self.and_k(b, 0x8000_0000);
        // Normal fp16 range: round away the low 13 mantissa bits.
        let lsb = self.shr_k(b, 13);
        let lsb = self.and_k(lsb, 1);
        let r = self.add_k(b, 0xFFF);
        let r = self.b.ins().iadd(r, lsb);
        let r = self.and_k(r, !0x1FFF);
        let ra = self.and_k(r, 0x7FFF_FFFF);
        let over = self.ucmp(IntCC::UnsignedGreaterThan, ra, 0x477F_E000);
        let inf = self.or_k(sign, 0x7F80_0000);
        let normal = self.pick(over, inf, r);
        // Below fp16's smallest normal: a multiple of 2^-24 (exact scaling).
        let up = self.f32_k(ft, 16_777_216.0);
        let down = self.f32_k(ft, 1.0 / 16_777_216.0);
        let s = self.b.ins().fmul(x, up);
        let s = self.b.ins().nearest(s);
        let tiny = self.b.ins().fmul(s, down);
        let tiny = self.b.ins().bitcast(it, f, tiny);
        let is_tiny = self.ucmp(IntCC::UnsignedLessThan, a, 0x3880_0000);
        let r = self.pick(is_tiny, tiny, normal);
        // NaN: quiet, the top ten payload bits kept.
        let is_nan = self.ucmp(IntCC::UnsignedGreaterThan, a, 0x7F80_0000);
        let nan = self.and_k(b, 0x807F_E000);
        let nan = self.or_k(nan, 0x7FC0_0000);
        let r = self.pick(is_nan, nan, r);
        self.b.ins().bitcast(ft, f, r)
    }

    /// `x` (f32 or f32x4) rounded to the nearest bf16 value, ties to even.
    pub(crate) fn round_bf16_inline(&mut self, x: CV) -> CV {
        let ft = self.b.func.dfg.value_type(x);
        let it = Self::bits_ty(ft);
        let f = MemFlags::new();
        let b = self.b.ins().bitcast(it, f, x);
        let a = self.and_k(b, 0x7FFF_FFFF);
        let lsb = self.shr_k(b, 16);
        let lsb = self.and_k(lsb, 1);
        let r = self.add_k(b, 0x7FFF);
        let r = self.b.ins().iadd(r, lsb);
        let r = self.and_k(r, 0xFFFF_0000);
        let is_nan = self.ucmp(IntCC::UnsignedGreaterThan, a, 0x7F80_0000);
        let nan = self.and_k(b, 0xFFFF_0000);
        let nan = self.or_k(nan, 0x0040_0000);
        let r = self.pick(is_nan, nan, r);
        self.b.ins().bitcast(ft, f, r)
    }

    /// fp16 bits (i16) of an f32, rounded first.
    pub(crate) fn f16_bits_inline(&mut self, x: CV) -> CV {
        let r = self.f16_bits_wide(x);
        self.b.ins().ireduce(types::I16, r)
    }

    /// The fp16 bits of four f32 lanes (rounded first), packed into an i64
    /// in lane order: what a store of four fp16 elements writes.
    pub(crate) fn f16x4_bits_inline(&mut self, x: CV) -> CV {
        let r = self.f16_bits_wide(x);
        let p = self.b.ins().unarrow(r, r);
        let w = self.b.ins().bitcast(
            types::I64X2,
            MemFlags::new().with_endianness(cranelift_codegen::ir::Endianness::Little),
            p,
        );
        self.b.ins().extractlane(w, 0)
    }

    /// fp16 bits of `x` (f32 or f32x4) in the low 16 bits of each i32 lane.
    fn f16_bits_wide(&mut self, x: CV) -> CV {
        let x = self.round_f16_inline(x);
        let ft = self.b.func.dfg.value_type(x);
        let it = Self::bits_ty(ft);
        let f = MemFlags::new();
        let b = self.b.ins().bitcast(it, f, x);
        let a = self.and_k(b, 0x7FFF_FFFF);
        let sign = self.shr_k(b, 16);
        let sign = self.and_k(sign, 0x8000);
        // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits.
        let normal = self.add_k(a, (-0x3800_0000i32) as u32);
        let normal = self.shr_k(normal, 13);
        // Subnormal: the value counts multiples of 2^-24.
        let ax = self.b.ins().fabs(x);
        let up = self.f32_k(ft, 16_777_216.0);
        let s = self.b.ins().fmul(ax, up);
        let sub = self.b.ins().fcvt_to_uint_sat(it, s);
        let is_sub = self.ucmp(IntCC::UnsignedLessThan, a, 0x3880_0000);
        let r = self.pick(is_sub, sub, normal);
        // Infinity, and NaN with the quiet bit and the top payload bits.
        let payload = self.shr_k(a, 13);
        let payload = self.and_k(payload, 0x3FF);
        let nan = self.or_k(payload, 0x7E00);
        let inf = self.int_k(it, 0x7C00);
        let is_nan = self.ucmp(IntCC::UnsignedGreaterThan, a, 0x7F80_0000);
        let special = self.pick(is_nan, nan, inf);
        let is_special = self.ucmp(IntCC::UnsignedGreaterThanOrEqual, a, 0x7F80_0000);
        let r = self.pick(is_special, special, r);
        self.b.ins().bor(r, sign)
    }

    /// The f32 value of fp16 bits (i16).
    pub(crate) fn f16_value_inline(&mut self, bits: CV) -> CV {
        let h = self.b.ins().uextend(types::I32, bits);
        let sign = self.and_k(h, 0x8000);
        let sign = self.shl_k(sign, 16);
        let e = self.and_k(h, 0x7C00);
        let m = self.and_k(h, 0x3FF);
        let mag = self.and_k(h, 0x7FFF);
        let normal = self.shl_k(mag, 13);
        let normal = self.add_k(normal, 0x3800_0000);
        let mf = self.b.ins().fcvt_from_uint(types::F32, m);
        let down = self.b.ins().f32const(1.0 / 16_777_216.0);
        let sub = self.b.ins().fmul(mf, down);
        let sub = self.b.ins().bitcast(types::I32, MemFlags::new(), sub);
        let pm = self.shl_k(m, 13);
        let nan = self.or_k(pm, 0x7FC0_0000);
        let inf = self.b.ins().iconst(types::I32, 0x7F80_0000);
        let is_nan = self.ucmp(IntCC::NotEqual, m, 0);
        let special = self.b.ins().select(is_nan, nan, inf);
        let is_special = self.ucmp(IntCC::Equal, e, 0x7C00);
        let r = self.b.ins().select(is_special, special, normal);
        let is_sub = self.ucmp(IntCC::Equal, e, 0);
        let r = self.b.ins().select(is_sub, sub, r);
        let r = self.b.ins().bor(r, sign);
        self.b.ins().bitcast(types::F32, MemFlags::new(), r)
    }
}
