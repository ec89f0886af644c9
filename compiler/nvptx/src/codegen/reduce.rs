//! Reductions and scans (warp shuffles to scalars, shared memory otherwise),
//! and `tl.dot` on CUDA cores for the dtypes tensor cores do not take yet.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    pub(super) fn combine(
        &mut self,
        c: Combine,
        acc: BasicValueEnum<'ctx>,
        x: BasicValueEnum<'ctx>,
        d: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let op = match c {
            Combine::Add => BinOp::Add,
            Combine::Mul => BinOp::Mul,
            Combine::Max => BinOp::Max,
            Combine::Min => BinOp::Min,
            Combine::And => BinOp::And,
            Combine::Or => BinOp::Or,
            _ => BinOp::Xor,
        };
        let r = self.binary(op, acc, x, d)?;
        match d {
            Some(dt) if matches!(c, Combine::Add | Combine::Mul) => self.round_to(r, dt),
            _ => Ok(r),
        }
    }

    /// A loop `for j in lo..hi` (i32) carrying `init` values through phis.
    #[allow(clippy::type_complexity)]
    pub(super) fn counted_loop(
        &mut self,
        lo: i64,
        hi: IntValue<'ctx>,
        init: Vec<BasicValueEnum<'ctx>>,
        body: &mut dyn FnMut(
            &mut Self,
            IntValue<'ctx>,
            Vec<BasicValueEnum<'ctx>>,
        ) -> R<Vec<BasicValueEnum<'ctx>>>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "loop");
        let body_b = self.ctx.append_basic_block(self.func, "body");
        let exit = self.ctx.append_basic_block(self.func, "exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let iv = self.b.build_phi(self.ctx.i32_type(), "j")?;
        iv.add_incoming(&[(&self.i32c(lo), pre)]);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let j = iv.as_basic_value().into_int_value();
        let c = self.b.build_int_compare(IntPredicate::SLT, j, hi, "")?;
        self.b.build_conditional_branch(c, body_b, exit)?;
        self.b.position_at_end(body_b);
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        let next = body(self, j, cur.clone())?;
        let latch = self.current_block()?;
        let j2 = self.b.build_int_add(j, self.i32c(1), "")?;
        iv.add_incoming(&[(&j2, latch)]);
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        Ok(cur)
    }

    pub(super) fn reduce(&mut self, op: &Op, axis: usize, combine: Combine) -> R<()> {
        let srcs = op.args.clone();
        let st = self.ty(srcs[0]).clone();
        let rt = self.ty(op.results[0]).clone();
        let dtype = st.dtype();
        let l_in = self.layout(&st);
        let simple = matches!(
            combine,
            Combine::Add
                | Combine::Max
                | Combine::Min
                | Combine::Mul
                | Combine::And
                | Combine::Or
                | Combine::Xor
        );
        let shuffleable = simple
            && !rt.is_block()
            && !l_in.replicated()
            && self.shuffles(dtype.unwrap_or(DType::F32));
        if shuffleable {
            return self.reduce_to_scalar(op, combine);
        }
        if self.reduce_rows(op, axis, combine, simple)? {
            return Ok(());
        }
        // General path: every output element reads its row from shared memory.
        let mut base_bytes = 0;
        self.barrier()?;
        let mut bases = vec![];
        for &s in &srcs {
            bases.push(base_bytes);
            base_bytes += self.spill(s, base_bytes)?;
        }
        self.barrier()?;
        let n = st.shape[axis];
        let inner: usize = st.shape[axis + 1..].iter().product();
        let l_out = self.layout(&rt);
        let region = op.regions.first().cloned();
        let elems: Vec<Elem> = srcs.iter().map(|&s| self.ty(s).elem).collect();
        let mut outs: Vec<Vec<BasicValueEnum>> = vec![vec![]; op.results.len()];
        for reg in 0..l_out.regs() {
            let e = if rt.is_block() {
                self.elem_index(&l_out, reg)?
            } else {
                self.i32c(0)
            };
            let outer = self
                .b
                .build_int_unsigned_div(e, self.i32c(inner as i64), "")?;
            let in_idx = self
                .b
                .build_int_unsigned_rem(e, self.i32c(inner as i64), "")?;
            let base = self
                .b
                .build_int_mul(outer, self.i32c((n * inner) as i64), "")?;
            let base = self.b.build_int_add(base, in_idx, "")?;
            let mut init = vec![];
            for (i, b0) in bases.iter().enumerate() {
                init.push(self.smem_load(*b0, base, elems[i])?);
            }
            let with_index = matches!(combine, Combine::ArgMax | Combine::ArgMin);
            if with_index {
                init.push(self.i32c(0).into());
            }
            let hi = self.i32c(n as i64);
            let bases2 = bases.clone();
            let elems2 = elems.clone();
            let region2 = region.clone();
            let result = self.counted_loop(1, hi, init, &mut |g, j, cur| {
                let off = g.b.build_int_mul(j, g.i32c(inner as i64), "")?;
                let at = g.b.build_int_add(base, off, "")?;
                let xs: Vec<_> = bases2
                    .iter()
                    .zip(&elems2)
                    .map(|(b0, e)| g.smem_load(*b0, at, *e))
                    .collect::<R<_>>()?;
                match combine {
                    Combine::Region => {
                        let r = region2
                            .as_ref()
                            .ok_or_else(|| GenError("combine region".into()))?;
                        let k = xs.len();
                        for (i, &arg) in r.args.iter().enumerate() {
                            let v = if i < k { cur[i] } else { xs[i - k] };
                            g.set(arg, Reg::S(v));
                        }
                        let ys = g.region(r)?;
                        ys.iter().map(|&y| g.scalar(y)).collect()
                    }
                    Combine::ArgMax | Combine::ArgMin => {
                        let better = if dtype.is_some_and(DType::is_float) {
                            let p = if combine == Combine::ArgMax {
                                FloatPredicate::OGT
                            } else {
                                FloatPredicate::OLT
                            };
                            g.b.build_float_compare(
                                p,
                                xs[0].into_float_value(),
                                cur[0].into_float_value(),
                                "",
                            )?
                        } else {
                            let u = unsigned(dtype);
                            let p = match (combine == Combine::ArgMax, u) {
                                (true, false) => IntPredicate::SGT,
                                (true, true) => IntPredicate::UGT,
                                (false, false) => IntPredicate::SLT,
                                (false, true) => IntPredicate::ULT,
                            };
                            g.b.build_int_compare(
                                p,
                                xs[0].into_int_value(),
                                cur[0].into_int_value(),
                                "",
                            )?
                        };
                        let v = g.b.build_select(better, xs[0], cur[0], "")?;
                        let i = g.b.build_select(better, j, cur[1].into_int_value(), "")?;
                        Ok(vec![v, i])
                    }
                    _ => Ok(vec![g.combine(combine, cur[0], xs[0], dtype)?]),
                }
            })?;
            if with_index {
                outs[0].push(result[1]);
            } else {
                for (i, v) in result.iter().enumerate().take(op.results.len()) {
                    outs[i].push(*v);
                }
            }
        }
        self.barrier()?;
        for (i, &r) in op.results.iter().enumerate() {
            let regs = std::mem::take(&mut outs[i]);
            self.set(
                r,
                if rt.is_block() {
                    Reg::B(regs)
                } else {
                    Reg::S(regs[0])
                },
            );
        }
        Ok(())
    }

    /// Whether values of `d` travel through one 32-bit warp shuffle (fp32,
    /// int32 and what is held as them).
    fn shuffles(&self, d: DType) -> bool {
        let t = scalar_type(self.ctx, d);
        t == self.ctx.f32_type().into() || t == self.ctx.i32_type().into()
    }

    /// `acc` combined over aligned groups of `lanes` lanes (a power of two
    /// up to 32) by butterfly shuffles; every lane of a group gets the result.
    fn butterfly(
        &mut self,
        mut acc: BasicValueEnum<'ctx>,
        lanes: usize,
        combine: Combine,
        d: Option<DType>,
    ) -> R<BasicValueEnum<'ctx>> {
        let name = if acc.get_type() == self.ctx.f32_type().into() {
            "llvm.nvvm.shfl.sync.bfly.f32"
        } else {
            "llvm.nvvm.shfl.sync.bfly.i32"
        };
        let full = self.ctx.i32_type().const_all_ones();
        let mut off = lanes / 2;
        while off > 0 {
            let args = [
                full.into(),
                acc,
                self.i32c(off as i64).into(),
                self.i32c(31).into(),
            ];
            let other = self.intrinsic(name, &[], &args)?;
            acc = self.combine(combine, acc, other, d)?;
            off /= 2;
        }
        Ok(acc)
    }

    /// A reduction over the last axis where each row's elements sit in runs
    /// of whole `vec`s across `g = n / vec` neighbouring lanes of one warp
    /// (the blocked layout of a `[rows, n]` block with `n <= 32 * vec`):
    /// each thread combines its runs, a butterfly over the `g` lanes
    /// combines the row, one lane per row writes it to shared memory and
    /// every thread reads its result registers back, `rows` words in all.
    /// The general path writes the whole block to shared memory and reads
    /// `n` words per result (attention's backward `delta`, a `[64, 64]`
    /// row sum: 140 us for Triton's 35 on the H200, bench/NOTES.md session
    /// 46). Returns false (nothing emitted) where the layout does not fit.
    fn reduce_rows(&mut self, op: &Op, axis: usize, combine: Combine, simple: bool) -> R<bool> {
        let [src] = op.args[..] else {
            return Ok(false);
        };
        let st = self.ty(src).clone();
        let rt = self.ty(op.results[0]).clone();
        let d = st.dtype();
        let l = self.layout(&st);
        let n = st.shape.get(axis).copied().unwrap_or(0);
        let fits = simple
            && d.is_some_and(|d| self.shuffles(d))
            && rt.is_block()
            && axis + 1 == st.shape.len()
            && op.results.len() == 1
            && l.threads == self.threads
            && !l.replicated()
            && l.is_pow2()
            && n.is_power_of_two()
            && n % l.vec == 0
            && n / l.vec <= 32;
        if !fits {
            return Ok(false);
        }
        let g = n / l.vec;
        let regs = self.regs(src, l.regs())?;
        let mut sums = vec![];
        for (j, run) in regs.chunks(l.vec).enumerate() {
            let mut acc = run[0];
            for &x in &run[1..] {
                acc = self.combine(combine, acc, x, d)?;
            }
            acc = self.butterfly(acc, g, combine, d)?;
            let e = self.elem_index(&l, j * l.vec)?;
            let row =
                self.b
                    .build_right_shift(e, self.i32c(n.trailing_zeros() as i64), false, "")?;
            sums.push((row, acc));
        }
        let lead = self.b.build_and(self.tid, self.i32c(g as i64 - 1), "")?;
        let lead = self
            .b
            .build_int_compare(IntPredicate::EQ, lead, self.i32c(0), "")?;
        self.barrier()?;
        let elem = rt.elem;
        self.guarded(Some(lead), vec![], &mut |g| {
            for &(row, acc) in &sums {
                g.smem_store(0, row, elem, acc)?;
            }
            Ok(vec![])
        })?;
        self.need_smem(rt.numel() * self.slot_size(elem));
        self.barrier()?;
        let lo = self.layout(&rt);
        let mut out = vec![];
        for r in 0..lo.regs() {
            let e = self.elem_index(&lo, r)?;
            out.push(self.smem_load(0, e, elem)?);
        }
        self.barrier()?;
        self.set(op.results[0], Reg::B(out));
        Ok(true)
    }

    /// A whole 1-D block to a scalar: registers, then a butterfly across the
    /// warp's lanes, then the warps' partials through shared memory.
    pub(super) fn reduce_to_scalar(&mut self, op: &Op, combine: Combine) -> R<()> {
        let src = op.args[0];
        let st = self.ty(src).clone();
        let d = st.dtype();
        let l = self.layout(&st);
        let regs = self.regs(src, l.regs())?;
        let mut acc = regs[0];
        for &x in &regs[1..] {
            acc = self.combine(combine, acc, x, d)?;
        }
        acc = self.butterfly(acc, 32, combine, d)?;
        let warps = self.threads / 32;
        if warps > 1 {
            let warp = self.b.build_int_unsigned_div(self.tid, self.i32c(32), "")?;
            let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
            let first = self
                .b
                .build_int_compare(IntPredicate::EQ, lane, self.i32c(0), "")?;
            self.barrier()?;
            let a2 = acc;
            self.guarded(Some(first), vec![], &mut |g| {
                g.smem_store(0, warp, st.elem, a2)?;
                Ok(vec![])
            })?;
            self.need_smem(warps * 4);
            self.barrier()?;
            acc = self.smem_load(0, self.i32c(0), st.elem)?;
            for w in 1..warps {
                let x = self.smem_load(0, self.i32c(w as i64), st.elem)?;
                acc = self.combine(combine, acc, x, d)?;
            }
            self.barrier()?;
        }
        self.set(op.results[0], Reg::S(acc));
        Ok(())
    }

    pub(super) fn scan(&mut self, op: &Op, axis: usize, combine: Combine, reverse: bool) -> R<()> {
        let (src, r) = (op.args[0], op.results[0]);
        let st = self.ty(src).clone();
        let d = st.dtype();
        self.barrier()?;
        self.spill(src, 0)?;
        self.barrier()?;
        let n = st.shape[axis];
        let inner: usize = st.shape[axis + 1..].iter().product();
        let l = self.layout(&st);
        let mut out = vec![];
        for reg in 0..l.regs() {
            let e = self.elem_index(&l, reg)?;
            let pos = self
                .b
                .build_int_unsigned_div(e, self.i32c(inner as i64), "")?;
            let pos = self
                .b
                .build_int_unsigned_rem(pos, self.i32c(n as i64), "")?;
            let off = self.b.build_int_mul(pos, self.i32c(inner as i64), "")?;
            let base = self.b.build_int_sub(e, off, "")?;
            // Inclusive prefix over positions 0..=pos (or pos..n reversed).
            let own = self.smem_load(0, e, st.elem)?;
            let (lo_count, hi) = if reverse {
                let cnt = self.b.build_int_sub(self.i32c(n as i64 - 1), pos, "")?;
                (Some(pos), cnt)
            } else {
                (None, pos)
            };
            let v = self.counted_loop(0, hi, vec![own], &mut |g, j, cur| {
                let k = match lo_count {
                    Some(p) => {
                        let t = g.b.build_int_add(p, j, "")?;
                        g.b.build_int_add(t, g.i32c(1), "")?
                    }
                    None => j,
                };
                let o = g.b.build_int_mul(k, g.i32c(inner as i64), "")?;
                let at = g.b.build_int_add(base, o, "")?;
                let x = g.smem_load(0, at, st.elem)?;
                Ok(vec![g.combine(combine, cur[0], x, d)?])
            })?;
            out.push(v[0]);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    pub(super) fn dot(&mut self, op: &Op) -> R<()> {
        if let Some(l) = self.mma.get(&op.results[0]).copied() {
            return self.dot_mma(op, &l);
        }
        let (a, bm, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
        let at = self.ty(a).clone();
        let bt = self.ty(bm).clone();
        let rt = self.ty(r).clone();
        let (kdim, n) = (at.shape[1], bt.shape[1]);
        let da = at.dtype().unwrap_or(DType::F32);
        let dr = rt.dtype().unwrap_or(DType::F32);
        let tf32 = da == DType::F32 && matches!(op.kind, OpKind::Dot { tf32: true });
        self.barrier()?;
        let a_bytes = self.spill(a, 0)?;
        self.spill(bm, a_bytes)?;
        self.barrier()?;
        let l = self.layout(&rt);
        let accs = self.regs(acc, l.regs())?;
        let mut out = vec![];
        for (reg, init) in accs.iter().enumerate() {
            let e = self.elem_index(&l, reg)?;
            let row = self.b.build_int_unsigned_div(e, self.i32c(n as i64), "")?;
            let col = self.b.build_int_unsigned_rem(e, self.i32c(n as i64), "")?;
            let arow = self.b.build_int_mul(row, self.i32c(kdim as i64), "")?;
            let kk = self.i32c(kdim as i64);
            let (ae, be) = (at.elem, bt.elem);
            let v = self.counted_loop(0, kk, vec![*init], &mut |g, j, cur| {
                let ai = g.b.build_int_add(arow, j, "")?;
                let bi = g.b.build_int_mul(j, g.i32c(n as i64), "")?;
                let bi = g.b.build_int_add(bi, col, "")?;
                let mut x = g.smem_load(0, ai, ae)?;
                let mut y = g.smem_load(a_bytes, bi, be)?;
                if tf32 {
                    x = g.round_tf32(x)?;
                    y = g.round_tf32(y)?;
                }
                let s = if da == DType::I8 {
                    let i32t = g.ctx.i32_type();
                    let xi =
                        g.b.build_int_cast_sign_flag(x.into_int_value(), i32t, true, "")?;
                    let yi =
                        g.b.build_int_cast_sign_flag(y.into_int_value(), i32t, true, "")?;
                    let p = g.b.build_int_mul(xi, yi, "")?;
                    g.b.build_int_add(cur[0].into_int_value(), p, "")?.into()
                } else {
                    let (xf, yf) = (x, y);
                    g.intrinsic("llvm.fma", &[xf.get_type()], &[xf, yf, cur[0]])?
                };
                Ok(vec![s])
            })?;
            let res = if matches!(dr, DType::F16 | DType::BF16) {
                self.round_to(v[0], dr)?
            } else {
                v[0]
            };
            out.push(res);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }
}
