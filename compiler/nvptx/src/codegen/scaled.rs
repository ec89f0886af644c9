//! Scaled scores without their scaling multiplies (FlashAttention's
//! `max(qk) * scale`).
//!
//! Attention scales a dot's scores by a scalar and then takes each row's
//! maximum and subtracts it: `s = dot * c; m = max(s, 1); p = exp2(s - m)`.
//! Written so, every score costs a multiply for the maximum and another
//! rounding for the subtraction. For `0 < c < inf` the row maximum of `s` is
//! the row maximum of `dot` times `c`, exactly: rounding is monotonic, so
//! `max_i rn(dot_i * c) = rn(max_i(dot_i) * c)` (the same holds for the
//! minimum). The subtraction then becomes one `fma(dot, c, -m)` per score,
//! the contraction Triton's `enable_fp_fusion` (our default) allows. Other
//! values of `c` take the original code behind a uniform branch, unless `c`
//! is proven positive and finite from the launch's specialization
//! (`scale_proven`: attention's `sm_scale * 1.44269504` with `sm_scale`
//! specialized `fp32:pos`), when there is no branch at all.
//!
//! Only where the scaled block lives in an MMA layout and its every user is a
//! row maximum or minimum (`rows_reduce`) or an add or subtract in the same
//! layout (whose other operand is no product: it must have registers): its
//! registers are then never built on the fast path; and not where one
//! warpgroup holds more than 32 scores a thread (measured slower there),
//! unless it holds 128 or more and the scale is proven (measured faster).
//! With `TILEBOOK_FP_FUSION=0` (every operation rounded on its own) nothing
//! changes.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Find the scaled blocks (`m = x * splat(c)`) this module rewrites.
    pub(super) fn plan_scaled(&mut self) {
        if std::env::var("TILEBOOK_FP_FUSION").is_ok_and(|v| v == "0") {
            return;
        }
        let mut users: HashMap<Value, Vec<&Op>> = HashMap::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            for &a in &op.args {
                users.entry(a).or_default().push(op);
            }
        });
        let mut found = vec![];
        for (&m, op) in &self.defs {
            if op.kind != OpKind::Binary(BinOp::Mul) || self.ty(m).dtype() != Some(DType::F32) {
                continue;
            }
            let Some(&l) = self.mma.get(&m) else {
                continue;
            };
            let split = |x: Value, s: Value| {
                let d = self.defs.get(&s)?;
                let c = *d.args.first()?;
                let scalar = !self.ty(c).is_block() && self.ty(c).dtype() == Some(DType::F32);
                (d.kind == OpKind::Splat && scalar && self.mma.get(&x) == Some(&l))
                    .then_some((x, c))
            };
            let [a, b] = op.args[..] else {
                continue;
            };
            let Some((x, c)) = split(a, b).or_else(|| split(b, a)) else {
                continue;
            };
            // Not where one warpgroup holds more than 32 scores a thread:
            // every such config in the benchmark's lists lost on the H200
            // (5-11 %; (128, 64, 4, 2) at D = 128 half, with spills), where
            // two-warpgroup configs gained 0-13 % and 64-row ones 0-5 %
            // (bench/NOTES.md, session 49). Session 50: still 5-10 % slower
            // with the slow path's products interleaved and no spills, so
            // not the registers.
            let per_thread = self.ty(m).numel() / self.threads.max(1);
            // Session 50 measured the one-warpgroup configs again with the
            // scale proven (no branch): 64 scores a thread -10 % to +2 %,
            // 128 a thread ((128, 128, 4, 3) at D = 64) +2-6 %.
            let proven_wide = per_thread >= 128 && self.scale_proven(c);
            if self.threads <= 128 && per_thread > 32 && !proven_wide {
                continue;
            }
            let us = users.get(&m).map(Vec::as_slice).unwrap_or_default();
            let reduced = us.iter().any(|u| matches!(u.kind, OpKind::Reduce { .. }));
            let fits = us.iter().all(|u| match u.kind {
                OpKind::Reduce {
                    combine: Combine::Max | Combine::Min,
                    ..
                } => u.args.len() == 1 && self.rows.contains_key(&u.results[0]),
                OpKind::Binary(BinOp::Add | BinOp::Sub) => {
                    let product = |a: &Value| {
                        self.defs
                            .get(a)
                            .is_some_and(|d| d.kind == OpKind::Binary(BinOp::Mul))
                    };
                    let other = u.args.iter().find(|a| **a != m);
                    other.is_some_and(|o| !product(o)) && self.mma.get(&u.results[0]) == Some(&l)
                }
                _ => false,
            });
            if reduced && fits {
                found.push((m, (x, c)));
            }
        }
        self.scaled.extend(found);
    }

    /// Whether `0 < c < inf` holds for every launch of this specialization:
    /// `c` is a product or quotient of positive constants and float
    /// parameters specialized as `fp32:pos` (in `[2^-60, 2^60]`), and the
    /// bounds of that range, carried through with a bit of rounding slack
    /// per operation, stay within fp32's normal numbers. Attention's
    /// `qk_scale = sm_scale * 1.44269504` is such a value; the row maxima
    /// then need no branch (the branch cost one-warpgroup kernels 5-10 %).
    fn scale_proven(&self, c: Value) -> bool {
        self.log2_range(c, 8)
            .is_some_and(|(lo, hi)| lo > -125.0 && hi < 127.0)
    }

    /// Bounds of `log2(v)` for a positive `v`, when known.
    fn log2_range(&self, v: Value, depth: usize) -> Option<(f64, f64)> {
        if let Some(p) = self.k.params.iter().find(|p| p.value == v) {
            let (lo, hi) = tilebook_tir::POSITIVE_RANGE;
            return p.attrs.positive.then_some((lo as f64, hi as f64));
        }
        let op = self.defs.get(&v)?;
        if depth == 0 || self.ty(v).is_block() || self.ty(v).dtype() != Some(DType::F32) {
            return None;
        }
        match &op.kind {
            OpKind::Const(k) => {
                let k = k.as_f64();
                (k.is_finite() && k > 0.0).then(|| (k.log2(), k.log2()))
            }
            OpKind::Binary(kind @ (BinOp::Mul | BinOp::Div)) => {
                let [a, b] = op.args[..] else {
                    return None;
                };
                let (a0, a1) = self.log2_range(a, depth - 1)?;
                let (b0, b1) = self.log2_range(b, depth - 1)?;
                let slack = 1e-6;
                Some(if *kind == BinOp::Mul {
                    (a0 + b0 - slack, a1 + b1 + slack)
                } else {
                    (a0 - b1 - slack, a1 - b0 + slack)
                })
            }
            _ => None,
        }
    }

    /// `0 < c < inf`, the condition of the fast path.
    fn scale_ok(&self, c: Value) -> R<(IntValue<'ctx>, inkwell::values::FloatValue<'ctx>)> {
        let c = self.scalar(c)?.into_float_value();
        let f32t = self.ctx.f32_type();
        let pos = self
            .b
            .build_float_compare(FloatPredicate::OGT, c, f32t.const_zero(), "")?;
        let finite = self.b.build_float_compare(
            FloatPredicate::OLT,
            c,
            f32t.const_float(f64::INFINITY),
            "",
        )?;
        Ok((self.b.build_and(pos, finite, "")?, c))
    }

    /// Each row of the unscaled registers combined, then scaled by `c`.
    fn rows_then_scale(
        &mut self,
        l: &MmaLayout,
        regs: &[BasicValueEnum<'ctx>],
        c: inkwell::values::FloatValue<'ctx>,
        combine: Combine,
        d: Option<DType>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        self.rows_combine(l, regs, None, combine, d)?
            .into_iter()
            .map(|r| Ok(self.b.build_float_mul(r.into_float_value(), c, "")?.into()))
            .collect()
    }

    /// A row maximum or minimum of a scaled block: of the unscaled block,
    /// then scaled, where `0 < c < inf`; else of the scaled block.
    pub(super) fn scaled_rows_reduce(&mut self, op: &Op, combine: Combine) -> R<()> {
        let (x, c) = self.scaled[&op.args[0]];
        let l = self.mma[&x];
        let d = self.ty(op.results[0]).dtype();
        let regs = self.raw(x)?;
        if self.scale_proven(c) {
            let c = self.scalar(c)?.into_float_value();
            let out = self.rows_then_scale(&l, &regs, c, combine, d)?;
            self.set(op.results[0], Reg::B(out));
            return Ok(());
        }
        let (ok, c) = self.scale_ok(c)?;
        // In order after the current block, so the loop body stays in one piece.
        let here = self
            .b
            .get_insert_block()
            .ok_or_else(|| GenError("no insertion block".into()))?;
        let join = self.ctx.insert_basic_block_after(here, "scaled_join");
        let slow = self.ctx.insert_basic_block_after(here, "scaled_slow");
        let fast = self.ctx.insert_basic_block_after(here, "scaled_fast");
        self.b.build_conditional_branch(ok, fast, slow)?;
        self.b.position_at_end(fast);
        let fast_out = self.rows_then_scale(&l, &regs, c, combine, d)?;
        let fast_end = self.current_block()?;
        self.b.build_unconditional_branch(join)?;
        self.b.position_at_end(slow);
        let slow_out = self.rows_combine(&l, &regs, Some(c), combine, d)?;
        let slow_end = self.current_block()?;
        self.b.build_unconditional_branch(join)?;
        self.b.position_at_end(join);
        let mut out = vec![];
        for (f, s) in fast_out.iter().zip(&slow_out) {
            let phi = self.b.build_phi(self.ctx.f32_type(), "")?;
            phi.add_incoming(&[(f, fast_end), (s, slow_end)]);
            out.push(phi.as_basic_value());
        }
        self.set(op.results[0], Reg::B(out));
        Ok(())
    }

    /// The scaled operand of an add or subtract, if it has one, and its position.
    pub(super) fn scaled_operand(&self, op: &Op) -> Option<usize> {
        if !matches!(op.kind, OpKind::Binary(BinOp::Add | BinOp::Sub)) {
            return None;
        }
        op.args.iter().position(|a| self.scaled.contains_key(a))
    }

    /// `x * c + o`, `x * c - o` or `o - x * c` as one `fma` a register.
    pub(super) fn scaled_add(&mut self, op: &Op, pos: usize) -> R<()> {
        let (x, c) = self.scaled[&op.args[pos]];
        let l = self.mma[&op.results[0]];
        let mut unscaled = op.clone();
        unscaled.args[pos] = x;
        let all = self.mma_operands(&unscaled, &l)?;
        let c = self.scalar(c)?;
        let sub = op.kind == OpKind::Binary(BinOp::Sub);
        let mut out = vec![];
        for (xr, o) in all[pos].iter().zip(&all[1 - pos]) {
            let (xr, o) = (xr.into_float_value(), o.into_float_value());
            let (a, addend) = match (sub, pos) {
                (false, _) => (xr, o),
                (true, 0) => (xr, self.b.build_float_neg(o, "")?),
                (true, _) => (self.b.build_float_neg(xr, "")?, o),
            };
            out.push(self.intrinsic(
                "llvm.fma",
                &[self.ctx.f32_type().into()],
                &[a.into(), c, addend.into()],
            )?);
        }
        self.set(op.results[0], Reg::B(out));
        Ok(())
    }
}
