//! Element semantics for the CPU backend: register types, arithmetic with
//! Triton's integer and float rules, conversions, and checked memory access.

use crate::codegen::{Gen, Iter};
use crate::runtime::Site;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, InstBuilder, MemFlags, Type as CT, Value as CV};
pub use tilebook_tir::provenance::{provenance, Provenance};
use tilebook_tir::{BinOp, CmpPred, Combine, DType, Elem, Op, OpKind, UnOp, Value};

/// The Cranelift type holding one element.
pub fn reg_ty(e: Elem) -> CT {
    match e {
        Elem::Ptr(_) => types::I64,
        Elem::Scalar(d) => match d {
            DType::I1 | DType::I8 | DType::U8 => types::I8,
            DType::I16 | DType::U16 => types::I16,
            DType::I32 | DType::U32 => types::I32,
            DType::I64 | DType::U64 => types::I64,
            DType::F64 => types::F64,
            _ => types::F32,
        },
    }
}

fn is_unsigned(d: Option<DType>) -> bool {
    d.is_some_and(|d| d.is_unsigned_int() || d == DType::I1)
}

impl Gen<'_, '_> {
    /// Round an f32 register to a narrower float dtype's precision.
    pub fn round_to(&mut self, x: CV, d: DType) -> CV {
        let f = match d {
            DType::F16 => return self.round_f16_inline(x),
            DType::BF16 => return self.round_bf16_inline(x),
            DType::F8E5 => "tb_round_e5",
            DType::F8E4NV => "tb_round_e4",
            _ => return x,
        };
        self.call(f, &[x]).expect("helper result")
    }

    /// One element of an elementwise op, given its operands' elements.
    pub fn elementwise(&mut self, op: &Op, args: &[CV]) -> CV {
        let rt = self.ty(op.results[0]).clone();
        let d = rt.dtype();
        let in_d = self.ty(op.args[0]).dtype();
        let float = d.is_some_and(DType::is_float);
        let is64 = reg_ty(rt.elem) == types::F64;
        let x = match &op.kind {
            OpKind::Unary(u) => {
                let a = args[0];
                match u {
                    UnOp::Neg if float => self.b.ins().fneg(a),
                    UnOp::Neg => self.b.ins().ineg(a),
                    UnOp::Not if d == Some(DType::I1) => self.b.ins().bxor_imm(a, 1),
                    UnOp::Not => self.b.ins().bnot(a),
                    UnOp::Abs if float => self.b.ins().fabs(a),
                    UnOp::Abs => self.b.ins().iabs(a),
                    // `tl.sqrt` in fp32 gives the GPU's `sqrt.approx` bits.
                    UnOp::SqrtApprox if d == Some(DType::F32) => self
                        .call("tb_sqrt_approx_f32", &[a])
                        .expect("helper result"),
                    UnOp::Sqrt | UnOp::SqrtApprox => self.b.ins().sqrt(a),
                    UnOp::Rsqrt => {
                        let s = self.b.ins().sqrt(a);
                        let one = if is64 {
                            self.b.ins().f64const(1.0)
                        } else {
                            self.b.ins().f32const(1.0)
                        };
                        self.b.ins().fdiv(one, s)
                    }
                    UnOp::Lib(f) => {
                        let i = self.b.ins().iconst(types::I32, f.index() as i64);
                        let name = if is64 { "tb_lib1_f64" } else { "tb_lib1_f32" };
                        self.call(name, &[i, a]).expect("helper result")
                    }
                    UnOp::Floor => self.b.ins().floor(a),
                    UnOp::Ceil => self.b.ins().ceil(a),
                    UnOp::Exp | UnOp::Exp2 | UnOp::Log | UnOp::Log2 | UnOp::Sin | UnOp::Cos => {
                        let name = match (u, is64) {
                            (UnOp::Exp, false) => "tb_exp_f32",
                            (UnOp::Exp2, false) => "tb_exp2_f32",
                            (UnOp::Log, false) => "tb_log_f32",
                            (UnOp::Log2, false) => "tb_log2_f32",
                            (UnOp::Sin, false) => "tb_sin_f32",
                            (UnOp::Cos, false) => "tb_cos_f32",
                            (UnOp::Exp, true) => "tb_exp_f64",
                            (UnOp::Exp2, true) => "tb_exp2_f64",
                            (UnOp::Log, true) => "tb_log_f64",
                            (UnOp::Log2, true) => "tb_log2_f64",
                            (UnOp::Sin, true) => "tb_sin_f64",
                            _ => "tb_cos_f64",
                        };
                        self.call(name, &[a]).expect("helper result")
                    }
                }
            }
            OpKind::Binary(b) => self.binary(*b, args[0], args[1], d),
            OpKind::Cmp(p) => {
                let (a, b) = (args[0], args[1]);
                if in_d.is_some_and(DType::is_float) {
                    let cc = match p {
                        CmpPred::Eq => FloatCC::Equal,
                        CmpPred::Ne => FloatCC::NotEqual,
                        CmpPred::Lt => FloatCC::LessThan,
                        CmpPred::Le => FloatCC::LessThanOrEqual,
                        CmpPred::Gt => FloatCC::GreaterThan,
                        CmpPred::Ge => FloatCC::GreaterThanOrEqual,
                    };
                    self.b.ins().fcmp(cc, a, b)
                } else {
                    let u = is_unsigned(in_d) || in_d.is_none();
                    let cc = match (p, u) {
                        (CmpPred::Eq, _) => IntCC::Equal,
                        (CmpPred::Ne, _) => IntCC::NotEqual,
                        (CmpPred::Lt, false) => IntCC::SignedLessThan,
                        (CmpPred::Le, false) => IntCC::SignedLessThanOrEqual,
                        (CmpPred::Gt, false) => IntCC::SignedGreaterThan,
                        (CmpPred::Ge, false) => IntCC::SignedGreaterThanOrEqual,
                        (CmpPred::Lt, true) => IntCC::UnsignedLessThan,
                        (CmpPred::Le, true) => IntCC::UnsignedLessThanOrEqual,
                        (CmpPred::Gt, true) => IntCC::UnsignedGreaterThan,
                        (CmpPred::Ge, true) => IntCC::UnsignedGreaterThanOrEqual,
                    };
                    self.b.ins().icmp(cc, a, b)
                }
            }
            OpKind::Select => self.b.ins().select(args[0], args[1], args[2]),
            OpKind::Fma => self.b.ins().fma(args[0], args[1], args[2]),
            OpKind::Cast => return self.cast(args[0], self.ty(op.args[0]).elem, rt.elem),
            OpKind::Bitcast => return self.bitcast(args[0], in_d, d),
            OpKind::AddPtr => {
                let size = rt.elem.pointee().map(DType::size_bytes).unwrap_or(1) as i64;
                let od = self.ty(op.args[1]).dtype();
                let off = self.widen_to_i64(args[1], od);
                let bytes = self.b.ins().imul_imm(off, size);
                return self.b.ins().iadd(args[0], bytes);
            }
            OpKind::MultipleOf(_) | OpKind::MaxContiguous(_) => return args[0],
            other => panic!("not an elementwise op: {other:?}"),
        };
        // Narrow floats are computed in f32 and rounded to their precision.
        match d {
            Some(dt) if matches!(op.kind, OpKind::Unary(_) | OpKind::Binary(_) | OpKind::Fma) => {
                self.round_to(x, dt)
            }
            _ => x,
        }
    }

    pub(crate) fn widen_to_i64(&mut self, x: CV, d: Option<DType>) -> CV {
        let t = self.b.func.dfg.value_type(x);
        if t == types::I64 {
            return x;
        }
        if is_unsigned(d) {
            self.b.ins().uextend(types::I64, x)
        } else {
            self.b.ins().sextend(types::I64, x)
        }
    }

    fn binary(&mut self, op: BinOp, a: CV, b: CV, d: Option<DType>) -> CV {
        let float = d.is_some_and(DType::is_float);
        let unsigned = is_unsigned(d);
        let is64 = self.b.func.dfg.value_type(a) == types::F64;
        match op {
            BinOp::Add if float => self.b.ins().fadd(a, b),
            BinOp::Add => self.b.ins().iadd(a, b),
            BinOp::Sub if float => self.b.ins().fsub(a, b),
            BinOp::Sub => self.b.ins().isub(a, b),
            BinOp::Mul if float => self.b.ins().fmul(a, b),
            BinOp::Mul => self.b.ins().imul(a, b),
            BinOp::Div | BinOp::DivFull if float => self.b.ins().fdiv(a, b),
            BinOp::Rem if float => {
                let f = if is64 { "tb_fmod_f64" } else { "tb_fmod_f32" };
                self.call(f, &[a, b]).expect("helper result")
            }
            BinOp::Div | BinOp::DivFull | BinOp::Rem => {
                self.safe_divrem(op != BinOp::Rem, a, b, unsigned)
            }
            BinOp::And => self.b.ins().band(a, b),
            BinOp::Or => self.b.ins().bor(a, b),
            BinOp::Xor => self.b.ins().bxor(a, b),
            BinOp::Shl | BinOp::Shr => self.shift(op == BinOp::Shl, a, b, unsigned),
            BinOp::Min | BinOp::Max if float => self.min_max_num(op == BinOp::Max, a, b),
            BinOp::Min if unsigned => self.b.ins().umin(a, b),
            BinOp::Max if unsigned => self.b.ins().umax(a, b),
            BinOp::Min => self.b.ins().smin(a, b),
            BinOp::Max => self.b.ins().smax(a, b),
            BinOp::UMulHi => self.b.ins().umulhi(a, b),
            BinOp::Pow => {
                let f = if is64 { "tb_pow_f64" } else { "tb_pow_f32" };
                self.call(f, &[a, b]).expect("helper result")
            }
            BinOp::Lib(f) => {
                let i = self.b.ins().iconst(types::I32, f.index() as i64);
                let name = if is64 { "tb_lib2_f64" } else { "tb_lib2_f32" };
                self.call(name, &[i, a, b]).expect("helper result")
            }
        }
    }

    /// A shift as PTX and numpy define it: by the width or more (or a
    /// negative amount, read unsigned) it gives 0, or the sign for an
    /// arithmetic right shift; Cranelift's would take the amount modulo
    /// the width (the GPU backend makes the same choice explicit).
    fn shift(&mut self, left: bool, a: CV, b: CV, unsigned: bool) -> CV {
        let t = self.b.func.dfg.value_type(a);
        let width = self.b.ins().iconst(t, t.bits() as i64);
        let fits = self.b.ins().icmp(IntCC::UnsignedLessThan, b, width);
        if !left && !unsigned {
            let top = self.b.ins().iconst(t, t.bits() as i64 - 1);
            let amount = self.b.ins().select(fits, b, top);
            return self.b.ins().sshr(a, amount);
        }
        let r = if left {
            self.b.ins().ishl(a, b)
        } else {
            self.b.ins().ushr(a, b)
        };
        let zero = self.b.ins().iconst(t, 0);
        self.b.ins().select(fits, r, zero)
    }

    /// Integer division without traps: x/0 gives 0 (x%0 gives x), MIN/-1 wraps.
    fn safe_divrem(&mut self, div: bool, a: CV, b: CV, unsigned: bool) -> CV {
        let t = self.b.func.dfg.value_type(a);
        let zero = self.b.ins().iconst(t, 0);
        let one = self.b.ins().iconst(t, 1);
        let is_zero = self.b.ins().icmp(IntCC::Equal, b, zero);
        if unsigned {
            let safe = self.b.ins().select(is_zero, one, b);
            let r = if div {
                self.b.ins().udiv(a, safe)
            } else {
                self.b.ins().urem(a, safe)
            };
            let fallback = if div { zero } else { a };
            return self.b.ins().select(is_zero, fallback, r);
        }
        let minus_one = self.b.ins().iconst(t, -1);
        let is_m1 = self.b.ins().icmp(IntCC::Equal, b, minus_one);
        let bad = self.b.ins().bor(is_zero, is_m1);
        let safe = self.b.ins().select(bad, one, b);
        let r = if div {
            self.b.ins().sdiv(a, safe)
        } else {
            self.b.ins().srem(a, safe)
        };
        let neg = self.b.ins().ineg(a);
        let m1_result = if div { neg } else { zero };
        let r = self.b.ins().select(is_m1, m1_result, r);
        let z_result = if div { zero } else { a };
        self.b.ins().select(is_zero, z_result, r)
    }

    /// Value conversion between element types.
    pub fn cast(&mut self, x: CV, from: Elem, to: Elem) -> CV {
        let (Some(fd), Some(td)) = (from.dtype(), to.dtype()) else {
            return x;
        };
        let (ft, tt) = (reg_ty(from), reg_ty(to));
        if td == DType::I1 {
            return if fd.is_float() {
                let z = if ft == types::F64 {
                    self.b.ins().f64const(0.0)
                } else {
                    self.b.ins().f32const(0.0)
                };
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            } else {
                self.b.ins().icmp_imm(IntCC::NotEqual, x, 0)
            };
        }
        match (fd.is_float(), td.is_float()) {
            (false, false) => {
                if tt.bits() > ft.bits() {
                    if is_unsigned(Some(fd)) {
                        self.b.ins().uextend(tt, x)
                    } else {
                        self.b.ins().sextend(tt, x)
                    }
                } else if tt.bits() < ft.bits() {
                    self.b.ins().ireduce(tt, x)
                } else {
                    x
                }
            }
            (false, true) => {
                let wide = if ft.bits() < 32 {
                    if is_unsigned(Some(fd)) {
                        self.b.ins().uextend(types::I32, x)
                    } else {
                        self.b.ins().sextend(types::I32, x)
                    }
                } else {
                    x
                };
                let f = if is_unsigned(Some(fd)) {
                    self.b.ins().fcvt_from_uint(tt, wide)
                } else {
                    self.b.ins().fcvt_from_sint(tt, wide)
                };
                self.round_to(f, td)
            }
            (true, false) => {
                let wide_t = if tt.bits() < 32 { types::I32 } else { tt };
                let i = if is_unsigned(Some(td)) {
                    self.b.ins().fcvt_to_uint_sat(wide_t, x)
                } else {
                    self.b.ins().fcvt_to_sint_sat(wide_t, x)
                };
                if wide_t != tt {
                    self.b.ins().ireduce(tt, i)
                } else {
                    i
                }
            }
            (true, true) => {
                let y = if ft == tt {
                    x
                } else if tt == types::F64 {
                    self.b.ins().fpromote(types::F64, x)
                } else {
                    self.b.ins().fdemote(types::F32, x)
                };
                if fd == td {
                    y
                } else {
                    self.round_to(y, td)
                }
            }
        }
    }

    fn bitcast(&mut self, x: CV, from: Option<DType>, to: Option<DType>) -> CV {
        let (Some(fd), Some(td)) = (from, to) else {
            return x;
        };
        let bits = self.encode_bits(x, fd);
        self.decode_bits(bits, td)
    }

    /// A register's value as the integer bits of dtype `d` (its memory form).
    pub(crate) fn encode_bits(&mut self, x: CV, d: DType) -> CV {
        match d {
            DType::F16 => self.f16_bits_inline(x),
            DType::BF16 => {
                // Registers hold values exactly representable in bf16: the top half is exact.
                let i = self.b.ins().bitcast(types::I32, MemFlags::new(), x);
                let s = self.b.ins().ushr_imm(i, 16);
                self.b.ins().ireduce(types::I16, s)
            }
            DType::F8E5 => self.call("tb_f32_to_e5", &[x]).expect("helper"),
            DType::F8E4NV => self.call("tb_f32_to_e4", &[x]).expect("helper"),
            DType::F32 => self.b.ins().bitcast(types::I32, MemFlags::new(), x),
            DType::F64 => self.b.ins().bitcast(types::I64, MemFlags::new(), x),
            _ => x,
        }
    }

    /// The register value of integer bits of dtype `d` (the inverse of `encode_bits`).
    pub(crate) fn decode_bits(&mut self, bits: CV, d: DType) -> CV {
        match d {
            DType::F16 => self.f16_value_inline(bits),
            DType::BF16 => {
                let w = self.b.ins().uextend(types::I32, bits);
                let s = self.b.ins().ishl_imm(w, 16);
                self.b.ins().bitcast(types::F32, MemFlags::new(), s)
            }
            DType::F8E5 => self.call("tb_e5_to_f32", &[bits]).expect("helper"),
            DType::F8E4NV => self.call("tb_e4_to_f32", &[bits]).expect("helper"),
            DType::F32 => self.b.ins().bitcast(types::F32, MemFlags::new(), bits),
            DType::F64 => self.b.ins().bitcast(types::F64, MemFlags::new(), bits),
            _ => bits,
        }
    }

    /// `tl.maximum`/`tl.minimum` (and the `tl.max`/`tl.min` reductions) as
    /// the GPU computes them (`max.f32`, Triton's `maxnumf`): a NaN operand
    /// gives the other one, NaN only when both are. Cranelift's `fmax` would
    /// return the NaN.
    fn min_max_num(&mut self, max: bool, a: CV, b: CV) -> CV {
        let m = if max {
            self.b.ins().fmax(a, b)
        } else {
            self.b.ins().fmin(a, b)
        };
        let a_nan = self.b.ins().fcmp(FloatCC::Unordered, a, a);
        let b_nan = self.b.ins().fcmp(FloatCC::Unordered, b, b);
        let m = self.b.ins().select(b_nan, a, m);
        self.b.ins().select(a_nan, b, m)
    }

    /// `acc ⊕ x` for builtin combine kinds.
    pub fn combine(&mut self, c: Combine, acc: CV, x: CV, d: Option<DType>) -> CV {
        let op = match c {
            Combine::Add => BinOp::Add,
            Combine::Mul => BinOp::Mul,
            Combine::Max => BinOp::Max,
            Combine::Min => BinOp::Min,
            Combine::And => BinOp::And,
            Combine::Or => BinOp::Or,
            _ => BinOp::Xor,
        };
        let r = self.binary(op, acc, x, d);
        match d {
            Some(dt) if matches!(c, Combine::Add | Combine::Mul) => self.round_to(r, dt),
            _ => r,
        }
    }

    /// `x > cur` (argmax) or `x < cur` (argmin), so ties keep the first index.
    pub fn strictly_better(&mut self, max: bool, x: CV, cur: CV, d: Option<DType>) -> CV {
        if d.is_some_and(DType::is_float) {
            self.b.ins().fcmp(
                if max {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                },
                x,
                cur,
            )
        } else if is_unsigned(d) {
            self.b.ins().icmp(
                if max {
                    IntCC::UnsignedGreaterThan
                } else {
                    IntCC::UnsignedLessThan
                },
                x,
                cur,
            )
        } else {
            self.b.ins().icmp(
                if max {
                    IntCC::SignedGreaterThan
                } else {
                    IntCC::SignedLessThan
                },
                x,
                cur,
            )
        }
    }

    // ------------------------------------------------------------ memory

    pub(crate) fn new_site(
        &mut self,
        op: &Op,
        what: &'static str,
        ptr: Value,
    ) -> (i64, Option<usize>, usize) {
        let param = self.prov.get(&ptr).copied().flatten();
        let elem_size = self
            .ty(ptr)
            .elem
            .pointee()
            .map(DType::size_bytes)
            .unwrap_or(1);
        let shape = self.ty(ptr).shape.clone();
        self.sites.push(Site {
            loc: op.loc,
            what,
            param,
            elem_size,
            message: String::new(),
            shape,
        });
        (self.sites.len() as i64 - 1, param, elem_size)
    }

    /// Branch to an error exit unless `[addr, addr+size)` is inside the tensor
    /// (only where `mask` is set, when there is one).
    pub(crate) fn check_bounds(
        &mut self,
        site: i64,
        param: Option<usize>,
        size: usize,
        addr: CV,
        mask: Option<CV>,
    ) {
        if !self.checked {
            return;
        }
        let inside = match param.and_then(|p| self.bounds.get(&p).copied()) {
            Some((lo, hi)) => {
                // `hi - size` is loop-invariant; Cranelift hoists it.
                let last = self.b.ins().iadd_imm(hi, -(size as i64));
                let a = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThanOrEqual, addr, lo);
                let b = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedLessThanOrEqual, addr, last);
                self.b.ins().band(a, b)
            }
            None => {
                let sz = self.iconst(size as i64);
                let args = [self.ctx, addr, sz];
                self.call("tb_check_any", &args).expect("helper result")
            }
        };
        let ok = match mask {
            Some(m) => {
                let off = self.b.ins().bxor_imm(m, 1);
                self.b.ins().bor(inside, off)
            }
            None => inside,
        };
        // Every failed check jumps to one shared exit that reports it: no
        // call inside the loops, so their values stay in registers.
        self.check_or_exit(ok, site, param, addr, 1, size);
    }

    /// Continue in a new block when `ok`, else leave for the shared
    /// out-of-bounds exit, reporting the first bad element of the `lanes`
    /// elements of `size` bytes from `addr` (the runtime finds it).
    pub(crate) fn check_or_exit(
        &mut self,
        ok: CV,
        site: i64,
        param: Option<usize>,
        addr: CV,
        lanes: i64,
        size: usize,
    ) {
        let exit = self.oob_exit();
        let cont = self.b.create_block();
        let p = self.iconst(param.map(|p| p as i64).unwrap_or(-1));
        let s = self.iconst(site);
        let n = self.iconst(lanes);
        let sz = self.iconst(size as i64);
        let args = [s.into(), addr.into(), p.into(), n.into(), sz.into()];
        self.b.ins().brif(ok, cont, &[], exit, &args);
        self.b.switch_to_block(cont);
    }

    /// The kernel's shared out-of-bounds exit (site, address, parameter,
    /// lanes, element size),
    /// filled in by `finish_exits`.
    fn oob_exit(&mut self) -> cranelift_codegen::ir::Block {
        if let Some(b) = self.oob_block {
            return b;
        }
        let b = self.b.create_block();
        self.b.set_cold_block(b);
        for _ in 0..5 {
            self.b.append_block_param(b, types::I64);
        }
        self.oob_block = Some(b);
        b
    }

    /// Emit the shared exits (after the kernel's last block).
    pub(crate) fn finish_exits(&mut self) {
        if let Some(b) = self.oob_block {
            self.b.switch_to_block(b);
            let p = self.b.block_params(b).to_vec();
            let args = [self.ctx, self.pids, p[0], p[1], p[2], p[3], p[4]];
            self.call("tb_oob", &args);
            let one = self.b.ins().iconst(types::I32, 1);
            self.b.ins().return_(&[one]);
        }
    }

    /// Report one lane to `tb_trace` (traced kernels): `mask` is the lane's
    /// mask, if the access has one.
    fn trace_lane(&mut self, site: i64, addr: CV, mask: Option<CV>) {
        if !self.trace {
            return;
        }
        let active = match mask {
            Some(m) => self.b.ins().uextend(types::I64, m),
            None => self.iconst(1),
        };
        let s = self.iconst(site);
        let args = [self.ctx, self.pids, s, addr, active];
        self.call("tb_trace", &args);
    }

    pub(crate) fn mem_load(&mut self, addr: CV, d: DType) -> CV {
        let f = MemFlags::trusted();
        match d {
            DType::I1 => {
                let x = self.b.ins().load(types::I8, f, addr, 0);
                self.b.ins().icmp_imm(IntCC::NotEqual, x, 0)
            }
            DType::F16 | DType::BF16 | DType::F8E5 | DType::F8E4NV => {
                let mem = if d.bits() == 16 {
                    types::I16
                } else {
                    types::I8
                };
                let bits = self.b.ins().load(mem, f, addr, 0);
                self.decode_bits(bits, d)
            }
            _ => self.b.ins().load(reg_ty(Elem::Scalar(d)), f, addr, 0),
        }
    }

    pub(crate) fn mem_store(&mut self, addr: CV, x: CV, d: DType) {
        let v = match d {
            DType::F16 | DType::BF16 | DType::F8E5 | DType::F8E4NV => self.encode_bits(x, d),
            _ => x,
        };
        self.b.ins().store(MemFlags::trusted(), v, addr, 0);
    }

    /// A gather; masked-off lanes take `other` (or 0). A branch per lane
    /// measured faster than a branchless select (see bench/NOTES.md).
    pub fn load_op(&mut self, op: &Op, mask: bool, other: bool, it: &Iter) -> CV {
        let ptr = op.args[0];
        let d = self.ty(ptr).elem.pointee().unwrap_or(DType::I8);
        let (site, param, size) = self.new_site(op, "load", ptr);
        let addr = self.operand(ptr, it);
        if !mask {
            self.trace_lane(site, addr, None);
            self.check_bounds(site, param, size, addr, None);
            return self.mem_load(addr, d);
        }
        let m = self.operand(op.args[1], it);
        self.trace_lane(site, addr, Some(m));
        let rt = reg_ty(Elem::Scalar(d));
        let fallback = if other {
            self.operand(op.args[2], it)
        } else if rt == types::F32 {
            self.b.ins().f32const(0.0)
        } else if rt == types::F64 {
            self.b.ins().f64const(0.0)
        } else {
            self.b.ins().iconst(rt, 0)
        };
        let result = self.b.declare_var(rt);
        self.b.def_var(result, fallback);
        let do_load = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(m, do_load, &[], done, &[]);
        self.b.switch_to_block(do_load);
        self.check_bounds(site, param, size, addr, None);
        let x = self.mem_load(addr, d);
        self.b.def_var(result, x);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.use_var(result)
    }

    /// A scatter; masked-off lanes are skipped.
    pub fn store_op(&mut self, op: &Op, mask: bool, it: &Iter) {
        let ptr = op.args[0];
        let d = self.ty(ptr).elem.pointee().unwrap_or(DType::I8);
        let (site, param, size) = self.new_site(op, "store", ptr);
        let addr = self.operand(ptr, it);
        let x = self.operand(op.args[1], it);
        if !mask {
            self.trace_lane(site, addr, None);
            self.check_bounds(site, param, size, addr, None);
            self.mem_store(addr, x, d);
            return;
        }
        let m = self.operand(op.args[2], it);
        self.trace_lane(site, addr, Some(m));
        let do_store = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(m, do_store, &[], done, &[]);
        self.b.switch_to_block(do_store);
        self.check_bounds(site, param, size, addr, None);
        self.mem_store(addr, x, d);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }
}
