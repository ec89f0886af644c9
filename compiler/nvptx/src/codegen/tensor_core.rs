//! `tl.dot` on tensor cores: MMA-layout coordinates and conversions, the
//! double-buffered operand tiles, `ldmatrix` and `mma.sync`.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    // ------------------------------------------------------------ tensor cores

    /// (warp_m, warp_n, g = lane / 4, t = lane % 4) of this thread.
    pub(super) fn mma_coords(&self, l: &MmaLayout) -> R<[IntValue<'ctx>; 4]> {
        let warp = self.b.build_int_unsigned_div(self.tid, self.i32c(32), "")?;
        let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
        let wm = self
            .b
            .build_int_unsigned_rem(warp, self.i32c(l.wm as i64), "")?;
        let wn = self
            .b
            .build_int_unsigned_div(warp, self.i32c(l.wm as i64), "")?;
        let g = self.b.build_int_unsigned_div(lane, self.i32c(4), "")?;
        let t = self.b.build_int_unsigned_rem(lane, self.i32c(4), "")?;
        Ok([wm, wn, g, t])
    }

    /// Row and column of MMA register `(rep_m, rep_n, r)`.
    pub(super) fn mma_pos(
        &self,
        l: &MmaLayout,
        c: &[IntValue<'ctx>; 4],
        rm: usize,
        rn: usize,
        r: usize,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let [wm, wn, g, t] = *c;
        let row = self
            .b
            .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
        let row = self.b.build_int_add(row, g, "")?;
        let row = self
            .b
            .build_int_add(row, self.i32c((rm * 16 + 8 * (r / 2)) as i64), "")?;
        let col = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let col = self
            .b
            .build_int_add(col, self.b.build_int_mul(t, self.i32c(2), "")?, "")?;
        let col = self
            .b
            .build_int_add(col, self.i32c((rn * 8 + r % 2) as i64), "")?;
        Ok((row, col))
    }

    pub(super) fn mma_linear(
        &self,
        l: &MmaLayout,
        c: &[IntValue<'ctx>; 4],
        idx: usize,
    ) -> R<IntValue<'ctx>> {
        let (rep, r) = (idx / 4, idx % 4);
        let (rm, rn) = (rep / l.reps_n(), rep % l.reps_n());
        let (row, col) = self.mma_pos(l, c, rm, rn, r)?;
        let lin = self.b.build_int_mul(row, self.i32c(l.n as i64), "")?;
        Ok(self.b.build_int_add(lin, col, "")?)
    }

    pub(super) fn mma_to_blocked(&self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        if let Some((_, _, regs)) = self.converted.borrow().iter().find(|(_, x, _)| *x == v) {
            return Ok(regs.clone());
        }
        let regs = self.raw(v)?;
        let t = self.ty(v).clone();
        let c = self.mma_coords(l)?;
        self.barrier()?;
        for (i, x) in regs.iter().enumerate() {
            let lin = self.mma_linear(l, &c, i)?;
            self.smem_store(0, lin, t.elem, *x)?;
        }
        self.need_smem(l.m * l.n * 4);
        self.barrier()?;
        let bl = self.layout(&t);
        let mut out = vec![];
        for r in 0..bl.regs() {
            let e = self.elem_index(&bl, r)?;
            out.push(self.smem_load(0, e, t.elem)?);
        }
        self.barrier()?;
        self.converted
            .borrow_mut()
            .push((self.depth, v, out.clone()));
        Ok(out)
    }

    pub(super) fn blocked_to_mma(
        &mut self,
        v: Value,
        l: &MmaLayout,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let t = self.ty(v).clone();
        // A constant (the usual zero accumulator) is the same in every layout.
        if let Some(OpKind::Const(c)) = self.defs.get(&v).map(|op| &op.kind) {
            let x = self.constant(*c, t.elem)?;
            return Ok(vec![x; l.regs()]);
        }
        self.barrier()?;
        self.spill(v, 0)?;
        self.barrier()?;
        let c = self.mma_coords(l)?;
        let mut out = vec![];
        for i in 0..l.regs() {
            let lin = self.mma_linear(l, &c, i)?;
            out.push(self.smem_load(0, lin, t.elem)?);
        }
        self.barrier()?;
        Ok(out)
    }

    /// Write a blocked operand tile as halves into a padded row-major tile,
    /// one 8-byte vector per run of four elements.
    pub(super) fn store_tile(
        &self,
        base: usize,
        lay: &Layout,
        regs: &[BasicValueEnum<'ctx>],
        cols: usize,
        row_len: usize,
        bf16: bool,
    ) -> R<()> {
        let h = if bf16 {
            self.ctx.bf16_type()
        } else {
            self.ctx.f16_type()
        };
        let w = if lay.vec >= 4 && cols.is_multiple_of(4) && !lay.replicated() {
            4
        } else {
            1
        };
        for g0 in (0..regs.len()).step_by(w) {
            let e = self.elem_index(lay, g0)?;
            let row = self
                .b
                .build_int_unsigned_div(e, self.i32c(cols as i64), "")?;
            let col = self
                .b
                .build_int_unsigned_rem(e, self.i32c(cols as i64), "")?;
            if w == 1 {
                self.store_half(base, row, col, row_len, regs[g0], bf16)?;
                continue;
            }
            let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
            let idx = self.b.build_int_add(idx, col, "")?;
            let p = self.smem_addr(base, idx, 2)?;
            let vt = h.vec_type(4);
            let mut v = vt.get_undef();
            for j in 0..4 {
                let x = self
                    .b
                    .build_float_trunc(regs[g0 + j].into_float_value(), h, "")?;
                v = self.b.build_insert_element(v, x, self.i32c(j as i64), "")?;
            }
            let st = self.b.build_store(p, v)?;
            let _ = st.set_alignment(8);
        }
        Ok(())
    }

    /// `ldmatrix.x2.trans` of two 8x8 half matrices at rows `krow` (this lane's
    /// row, lanes 0..15) and column `n0`: the B fragment of `mma.m16n8k16`.
    pub(super) fn ldmatrix_x2_trans(
        &self,
        base: usize,
        krow: IntValue<'ctx>,
        n0: IntValue<'ctx>,
        row_len: usize,
    ) -> R<[BasicValueEnum<'ctx>; 2]> {
        let idx = self.b.build_int_mul(krow, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, n0, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let addr = self.b.build_ptr_to_int(p, self.ctx.i32_type(), "")?;
        let i32t = self.ctx.i32_type();
        let ret = self.ctx.struct_type(&[i32t.into(), i32t.into()], false);
        let fn_ty = ret.fn_type(&[i32t.into()], false);
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0, $1}, [$2];".into(),
            "=r,=r,r".into(),
            true,
            false,
            None,
            false,
        );
        let call = self
            .b
            .build_indirect_call(fn_ty, asm, &[addr.into()], "ldm")?;
        let s = call
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError("ldmatrix result".into()))?
            .into_struct_value();
        Ok([
            self.b.build_extract_value(s, 0, "")?,
            self.b.build_extract_value(s, 1, "")?,
        ])
    }

    /// Store one operand element as a half at `(row, col)` of a padded tile.
    pub(super) fn store_half(
        &self,
        base: usize,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
        row_len: usize,
        x: BasicValueEnum<'ctx>,
        bf16: bool,
    ) -> R<()> {
        let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, col, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let h = if bf16 {
            self.ctx.bf16_type()
        } else {
            self.ctx.f16_type()
        };
        let v = self.b.build_float_trunc(x.into_float_value(), h, "")?;
        self.b.build_store(p, v)?;
        Ok(())
    }

    /// Two consecutive halves at `(row, col)` as one 32-bit register.
    pub(super) fn load_pair(
        &self,
        base: usize,
        row: IntValue<'ctx>,
        col: IntValue<'ctx>,
        row_len: usize,
    ) -> R<BasicValueEnum<'ctx>> {
        let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
        let idx = self.b.build_int_add(idx, col, "")?;
        let p = self.smem_addr(base, idx, 2)?;
        let x = self.b.build_load(self.ctx.i32_type(), p, "")?;
        if let Some(i) = x.as_instruction_value() {
            let _ = i.set_alignment(4);
        }
        Ok(x)
    }

    pub(super) fn dot_mma(&mut self, op: &Op, l: &MmaLayout) -> R<()> {
        let (a, bm, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
        // The accumulator in MMA registers (converting first, before smem holds the operands).
        let mut accs = if self.mma.contains_key(&acc) {
            self.raw(acc)?
        } else {
            self.blocked_to_mma(acc, l)?
        };
        let (at, bt) = (self.ty(a).clone(), self.ty(bm).clone());
        let (la, lb) = (self.layout(&at), self.layout(&bt));
        let a_regs = self.regs(a, la.regs())?;
        let b_regs = self.regs(bm, lb.regs())?;
        let rk = l.row_k();
        let rn = l.row_n();
        let b_base = l.b_base();
        // Double buffering: successive dots alternate between two copies of
        // the operand tiles, so writing tile i+1 cannot disturb readers of
        // tile i; one barrier per dot remains (between writing and reading).
        let slot = self.dot_counter()?;
        let count = self
            .b
            .build_load(i32_type(self.ctx), slot, "")?
            .into_int_value();
        let parity = self.b.build_and(count, self.i32c(1), "")?;
        let shift = self
            .b
            .build_int_mul(parity, self.i32c(l.smem_bytes() as i64), "")?;
        let next = self.b.build_int_add(count, self.i32c(1), "")?;
        self.b.build_store(slot, next)?;
        self.need_smem(2 * l.smem_bytes());
        self.smem_shift.set(Some(shift));
        self.store_tile(0, &la, &a_regs, l.k, rk, l.bf16)?;
        self.store_tile(b_base, &lb, &b_regs, l.n, rn, l.bf16)?;
        self.barrier()?;
        let [wm, wn, g, t] = self.mma_coords(l)?;
        let f32t = self.ctx.f32_type();
        let i32t = self.ctx.i32_type();
        let ret = self.ctx.struct_type(&[f32t.into(); 4], false);
        let fn_ty = ret.fn_type(
            &[
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                f32t.into(),
                f32t.into(),
                f32t.into(),
                f32t.into(),
            ],
            false,
        );
        let ty = if l.bf16 { "bf16" } else { "f16" };
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, {{$10,$11,$12,$13}};"),
            "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3".into(),
            false,
            false,
            None,
            false,
        );
        let t2 = self.b.build_int_mul(t, self.i32c(2), "")?;
        let row0 = self
            .b
            .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
        let row0 = self.b.build_int_add(row0, g, "")?;
        // ldmatrix: lanes 0..15 address the 16 rows (k) of the two 8x8 matrices.
        let ncol0 = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let lane = self.b.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
        let lane16 = self.b.build_int_unsigned_rem(lane, self.i32c(16), "")?;
        for k0 in (0..l.k).step_by(16) {
            let ka = self.b.build_int_add(t2, self.i32c(k0 as i64), "")?;
            let kb = self.b.build_int_add(ka, self.i32c(8), "")?;
            let mut afrag = vec![];
            for rm in 0..l.reps_m() {
                let r0 = self
                    .b
                    .build_int_add(row0, self.i32c((rm * 16) as i64), "")?;
                let r8 = self.b.build_int_add(r0, self.i32c(8), "")?;
                afrag.push([
                    self.load_pair(0, r0, ka, rk)?,
                    self.load_pair(0, r8, ka, rk)?,
                    self.load_pair(0, r0, kb, rk)?,
                    self.load_pair(0, r8, kb, rk)?,
                ]);
            }
            for rep_n in 0..l.reps_n() {
                let rn_i = rep_n;
                let n0 = self
                    .b
                    .build_int_add(ncol0, self.i32c((rn_i * 8) as i64), "")?;
                let krow = self.b.build_int_add(lane16, self.i32c(k0 as i64), "")?;
                let [b0, b1] = self.ldmatrix_x2_trans(b_base, krow, n0, rn)?;
                for (rm, af) in afrag.iter().enumerate() {
                    let base = (rm * l.reps_n() + rn_i) * 4;
                    let args: Vec<_> = af
                        .iter()
                        .chain([&b0, &b1])
                        .chain(accs[base..base + 4].iter())
                        .map(|v| (*v).into())
                        .collect();
                    let call = self.b.build_indirect_call(fn_ty, asm, &args, "mma")?;
                    let res = call
                        .try_as_basic_value()
                        .basic()
                        .ok_or_else(|| GenError("mma result".into()))?
                        .into_struct_value();
                    for j in 0..4 {
                        accs[base + j] = self.b.build_extract_value(res, j as u32, "")?;
                    }
                }
            }
        }
        self.smem_shift.set(None);
        self.set(r, Reg::B(accs));
        Ok(())
    }

    /// A per-thread counter of tensor-core dots (for the double buffer), kept
    /// in a stack slot that LLVM promotes to registers.
    pub(super) fn dot_counter(&self) -> R<PointerValue<'ctx>> {
        let entry = self
            .func
            .get_first_basic_block()
            .ok_or_else(|| GenError("no entry block".into()))?;
        let tb = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tb.position_before(&i),
            None => tb.position_at_end(entry),
        }
        let slot = tb.build_alloca(i32_type(self.ctx), "dot_count")?;
        tb.build_store(slot, self.i32c(0))?;
        Ok(slot)
    }
}
