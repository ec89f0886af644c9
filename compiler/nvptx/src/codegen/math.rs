//! Math functions through NVIDIA's libdevice (see `libdevice.rs`): which
//! unary ops go there, and the calls to `__nv_*` — also of the math
//! library functions (`lib.asin`, `lib.atan2`: `libdevice.*` in kernels),
//! which only libdevice provides; without a toolkit they stay external
//! calls in the PTX).

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Whether `u` on values of type `ft` goes to libdevice: log, log2, sin
    /// and cos in fp32 when libdevice is there (Triton does the same; else
    /// the `approx` instructions), exp and exp2 in fp32 never (`ex2.approx`,
    /// as Triton), everything in fp64 (the GPU has no fp64 approximations;
    /// without a toolkit the calls stay external).
    pub(super) fn libdevice_math(&self, u: UnOp, ft: BasicTypeEnum<'ctx>) -> bool {
        let f64 = ft == self.ctx.f64_type().into();
        f64 || (self.libdevice && matches!(u, UnOp::Log | UnOp::Log2 | UnOp::Sin | UnOp::Cos))
    }

    /// A call of libdevice's version of `u` (`__nv_logf`, `__nv_log`, ...).
    pub(super) fn libdevice_unary(
        &self,
        u: UnOp,
        x: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let base = match u {
            UnOp::Exp => "exp",
            UnOp::Exp2 => "exp2",
            UnOp::Log => "log",
            UnOp::Log2 => "log2",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            _ => return fail(format!("internal: no libdevice function for {u:?}")),
        };
        self.libdevice_call(base, &[x])
    }

    /// A call of libdevice's `__nv_<base>f` (fp32) or `__nv_<base>` (fp64)
    /// on `args`, all of one float type.
    pub(super) fn libdevice_call(
        &self,
        base: &str,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        // Without a toolkit the call stays an external declaration in the
        // PTX (`.extern .func`): the PTX is complete for inspection, and a
        // load on a GPU reports the missing libdevice (`kernels` runtime).
        let ty = args[0].get_type();
        let name = if ty == self.ctx.f64_type().into() {
            format!("__nv_{base}")
        } else {
            format!("__nv_{base}f")
        };
        let f = self.module.get_function(&name).unwrap_or_else(|| {
            let params: Vec<_> = args.iter().map(|a| a.get_type().into()).collect();
            self.module
                .add_function(&name, ty.fn_type(&params, false), None)
        });
        let call_args: Vec<_> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b.build_call(f, &call_args, "")?;
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError(format!("{name} returned nothing")))
    }

    /// One call of the user's PTX per element (`tl.inline_asm_elementwise`
    /// with `pack=1`): `$0` is the result, `$1...` the operands.
    pub(super) fn inline_ptx(
        &self,
        asm: &str,
        constraints: &str,
        pure: bool,
        ret: Elem,
        a: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        self.ptx_value(asm, constraints, self.reg_type(ret), !pure, a)
    }

    pub(super) fn binary(
        &self,
        op: BinOp,
        x: BasicValueEnum<'ctx>,
        y: BasicValueEnum<'ctx>,
        d: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if d.is_some_and(DType::is_float) {
            let (p, q) = (x.into_float_value(), y.into_float_value());
            return Ok(match op {
                BinOp::Add => b.build_float_add(p, q, "")?.into(),
                BinOp::Sub => b.build_float_sub(p, q, "")?.into(),
                BinOp::Mul => b.build_float_mul(p, q, "")?.into(),
                BinOp::Div => b.build_float_div(p, q, "")?.into(),
                // Triton's fp32 `/` (within 2 ulp; no slow path for
                // operands near the ends of the range).
                BinOp::DivFull if x.get_type() == self.ctx.f32_type().into() => {
                    let f32e = Elem::Scalar(DType::F32);
                    self.inline_ptx("div.full.f32 $0, $1, $2;", "=f,f,f", true, f32e, &[x, y])?
                }
                BinOp::DivFull => b.build_float_div(p, q, "")?.into(),
                BinOp::Rem => b.build_float_rem(p, q, "")?.into(),
                BinOp::Min => self.intrinsic("llvm.minnum", &[x.get_type()], &[x, y])?,
                BinOp::Max => self.intrinsic("llvm.maxnum", &[x.get_type()], &[x, y])?,
                BinOp::Pow if x.get_type() == self.ctx.f64_type().into() => {
                    self.libdevice_call("pow", &[x, y])?
                }
                BinOp::Pow => {
                    // x ** y = 2^(y * log2 x), as Triton's fast path does.
                    let l = self.float_intrinsic("llvm.nvvm.lg2.approx.f", x)?;
                    let m = b.build_float_mul(l.into_float_value(), q, "")?;
                    self.float_intrinsic("llvm.nvvm.ex2.approx.f", m.into())?
                }
                BinOp::Lib(f) => self.libdevice_call(f.base(), &[x, y])?,
                other => return fail(format!("{other:?} on floats")),
            });
        }
        let u = unsigned(d);
        let (p, q) = (x.into_int_value(), y.into_int_value());
        Ok(match op {
            BinOp::Add => b.build_int_add(p, q, "")?.into(),
            BinOp::Sub => b.build_int_sub(p, q, "")?.into(),
            BinOp::Mul => b.build_int_mul(p, q, "")?.into(),
            BinOp::Div | BinOp::Rem => {
                // Defined results where LLVM has none: x/0 = 0, x%0 = x, MIN/-1 wraps.
                let t = p.get_type();
                let zero = t.const_zero();
                let one = t.const_int(1, false);
                let is_zero = b.build_int_compare(IntPredicate::EQ, q, zero, "")?;
                let m1 = t.const_all_ones();
                let is_m1 = b.build_int_compare(IntPredicate::EQ, q, m1, "")?;
                let bad = if u {
                    is_zero
                } else {
                    b.build_or(is_zero, is_m1, "")?
                };
                let safe = b.build_select(bad, one, q, "")?.into_int_value();
                let r = match (op, u) {
                    (BinOp::Div, true) => b.build_int_unsigned_div(p, safe, "")?,
                    (BinOp::Div, false) => b.build_int_signed_div(p, safe, "")?,
                    (_, true) => b.build_int_unsigned_rem(p, safe, "")?,
                    (_, false) => b.build_int_signed_rem(p, safe, "")?,
                };
                let r = if u {
                    r
                } else {
                    let m1v = if op == BinOp::Div {
                        b.build_int_neg(p, "")?
                    } else {
                        zero
                    };
                    b.build_select(is_m1, m1v, r, "")?.into_int_value()
                };
                let z = if op == BinOp::Div { zero } else { p };
                b.build_select(is_zero, z, r, "")?
            }
            BinOp::And => b.build_and(p, q, "")?.into(),
            BinOp::Or => b.build_or(p, q, "")?.into(),
            BinOp::Xor => b.build_xor(p, q, "")?.into(),
            BinOp::Shl | BinOp::Shr => {
                // Defined results where LLVM has none (a shift by the width
                // or more, or by a negative amount): PTX's and numpy's, 0,
                // or the sign for an arithmetic right shift. A constant
                // amount in range folds the select away.
                let t = p.get_type();
                let width = t.const_int(t.get_bit_width() as u64, false);
                let fits = b.build_int_compare(IntPredicate::ULT, q, width, "")?;
                if op == BinOp::Shr && !u {
                    let top = t.const_int(t.get_bit_width() as u64 - 1, false);
                    let amount = b.build_select(fits, q, top, "")?.into_int_value();
                    b.build_right_shift(p, amount, true, "")?.into()
                } else {
                    let r = if op == BinOp::Shl {
                        b.build_left_shift(p, q, "")?
                    } else {
                        b.build_right_shift(p, q, false, "")?
                    };
                    b.build_select(fits, r, t.const_zero(), "")?
                }
            }
            BinOp::Min | BinOp::Max => {
                let pred = match (op, u) {
                    (BinOp::Min, true) => IntPredicate::ULT,
                    (BinOp::Min, false) => IntPredicate::SLT,
                    (_, true) => IntPredicate::UGT,
                    (_, false) => IntPredicate::SGT,
                };
                let c = b.build_int_compare(pred, p, q, "")?;
                b.build_select(c, p, q, "")?
            }
            BinOp::UMulHi => {
                let bits = p.get_type().get_bit_width();
                let name = if bits == 64 {
                    "llvm.nvvm.mulhi.ull"
                } else {
                    "llvm.nvvm.mulhi.ui"
                };
                self.intrinsic(name, &[], &[x, y])?
            }
            BinOp::Pow => return fail("** on integers"),
            BinOp::DivFull => return fail("div_full on integers"),
            BinOp::Lib(f) => return fail(format!("{} on integers", f.ir_name())),
        })
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// `exp`, `exp2`, `log`, `log2` in fp32 by the `approx` instructions
    /// (where `libdevice_math` does not send them to libdevice).
    pub(super) fn approx_exp_log(
        &self,
        u: UnOp,
        v: BasicValueEnum<'ctx>,
        ft: BasicTypeEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        match u {
            UnOp::Exp | UnOp::Exp2 => {
                let arg = if u == UnOp::Exp {
                    let k = self.ctx.f32_type().const_float(std::f64::consts::LOG2_E);
                    if ft != self.ctx.f32_type().into() {
                        return fail("exp: fp64 is not supported by the GPU backend yet");
                    }
                    b.build_float_mul(v.into_float_value(), k, "")?.into()
                } else {
                    v
                };
                // `exp2` flushes subnormal results to zero as Triton's does
                // (libdevice's `exp2f` under its FTZ setting): one
                // instruction, where the IEEE `ex2.approx.f32` adds a range
                // check and two scalings around it. `exp` keeps them, as
                // Triton's does.
                let name = if u == UnOp::Exp2 {
                    "llvm.nvvm.ex2.approx.ftz.f"
                } else {
                    "llvm.nvvm.ex2.approx.f"
                };
                self.float_intrinsic(name, arg)
            }
            _ => {
                let l2 = self.float_intrinsic("llvm.nvvm.lg2.approx.f", v)?;
                if u == UnOp::Log {
                    let k = self.ctx.f32_type().const_float(std::f64::consts::LN_2);
                    Ok(b.build_float_mul(l2.into_float_value(), k, "")?.into())
                } else {
                    Ok(l2)
                }
            }
        }
    }

    pub(super) fn constant(&self, c: Const, e: Elem) -> R<BasicValueEnum<'ctx>> {
        let t = self.reg_type(e);
        Ok(match t {
            BasicTypeEnum::FloatType(f) => f.const_float(c.as_f64()).into(),
            BasicTypeEnum::IntType(i) => i.const_int(c.as_i64() as u64, true).into(),
            _ => return fail("a constant of pointer type"),
        })
    }

    /// Round an f32 register to fp16/bf16 precision (fp8 is not supported yet).
    pub(super) fn round_to(&self, x: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let narrow = match d {
            DType::F16 => self.ctx.f16_type(),
            DType::BF16 => self.ctx.bf16_type(),
            DType::F8E5 | DType::F8E4NV => {
                let byte = self.encode_fp8(x, d)?;
                return self.decode_fp8(byte, d);
            }
            _ => return Ok(x),
        };
        let t = self.b.build_float_trunc(x.into_float_value(), narrow, "")?;
        Ok(self.b.build_float_ext(t, self.ctx.f32_type(), "")?.into())
    }

    pub(super) fn float_intrinsic(
        &self,
        name32: &str,
        x: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if x.get_type() == self.ctx.f64_type().into() {
            return fail(format!(
                "{name32}: fp64 transcendental functions are not supported by the GPU backend yet"
            ));
        }
        self.intrinsic(name32, &[], &[x])
    }
}
