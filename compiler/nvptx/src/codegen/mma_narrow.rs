//! `tl.dot` on tensor cores for fp32 inputs under `input_precision="tf32"`
//! (`mma.sync.m16n8k8…tf32`, fp32 accumulators) and for int8
//! (`mma.sync.m16n8k32…s8`, int32 accumulators). (fp8 dots run on `wgmma`
//! or on the fp16 instructions, `mma.rs`.)
//!
//! The operands reach shared memory from registers in their own element type
//! (fp32 rounded to tf32, or one int8 byte), A as `M x K` and B transposed as `N x K`:
//! both K-contiguous with padded rows (`MmaLayout::row_k`). A thread's
//! fragment registers are then plain 32-bit shared loads — one tf32 value, or
//! four int8 values along K — at
//!
//! ```text
//! A: (row0 | row0 + 8, k0 + t * per [+ step / 2])      row0 = slab + 16 * rep_m + g
//! B: (col, k0 + t * per [+ step / 2])                   col = slab + 8 * rep_n + g
//! ```
//!
//! with `g = lane / 4`, `t = lane % 4`, `per` the elements in a register
//! (1 or 4) and `step` the instruction's K (8 or 32): the fragment layouts of
//! the PTX ISA for these shapes. The accumulator fragment is the one the
//! fp16 path uses, so `mma_to_blocked` and loop-carried accumulators are
//! shared with it.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Round an fp32 register to tf32 (10 mantissa bits), to nearest with
    /// ties away from zero — `cvt.rna.tf32.f32`, done with integer operations
    /// so that LLVM sees through it. NaN passes unchanged. The CPU backend
    /// rounds the same way, which makes every product exact on both.
    pub(super) fn round_tf32(&self, x: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let i32t = self.ctx.i32_type();
        let f = x.into_float_value();
        let bits = self.b.build_bit_cast(f, i32t, "")?.into_int_value();
        let up = self.b.build_int_add(bits, self.i32c(0x1000), "")?;
        let cut = self
            .b
            .build_and(up, i32t.const_int(0xFFFF_E000, false), "")?;
        let r = self.b.build_bit_cast(cut, self.ctx.f32_type(), "")?;
        let nan = self
            .b
            .build_float_compare(inkwell::FloatPredicate::UNO, f, f, "")?;
        Ok(self.b.build_select(nan, x, r, "")?)
    }

    /// The byte shift of this dot's copy of the operand tiles: successive
    /// dots alternate between two copies, so writing tile i+1 cannot disturb
    /// readers of tile i and one barrier per dot suffices. Every dot of the
    /// kernel counts on one counter and the copies are `dot_stride` bytes
    /// apart (the largest dot's tiles): with a counter and a size of its own
    /// per dot, two dots in one loop both took copy 0, then both copy 1, and
    /// the second overwrote the first's tiles while slower warps still read
    /// them (wrong, varying sums on the H100).
    pub(super) fn dot_buffer_shift(&self) -> R<IntValue<'ctx>> {
        let slot = match self.dot_counter.get() {
            Some(slot) => slot,
            None => {
                let slot = self.counter_slot()?;
                self.dot_counter.set(Some(slot));
                slot
            }
        };
        let stride = self.dot_stride;
        let count = self
            .b
            .build_load(i32_type(self.ctx), slot, "")?
            .into_int_value();
        let parity = self.b.build_and(count, self.i32c(1), "")?;
        let shift = self.b.build_int_mul(parity, self.i32c(stride as i64), "")?;
        let next = self.b.build_int_add(count, self.i32c(1), "")?;
        self.b.build_store(slot, next)?;
        self.need_smem(2 * stride);
        Ok(shift)
    }

    /// After this thread wrote its part of the operand tiles at `shift`:
    /// wait for the others, and give the byte offsets of A's and B's tiles.
    pub(super) fn operand_tiles_written(
        &self,
        shift: IntValue<'ctx>,
        l: &MmaLayout,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        self.operand_tiles_written_at(shift, l.b_base())
    }

    /// `operand_tiles_written` with B's tile `b_base` bytes after A's.
    pub(super) fn operand_tiles_written_at(
        &self,
        shift: IntValue<'ctx>,
        b_base: usize,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        self.smem_shift.set(None);
        self.barrier()?;
        let a_off = self
            .b
            .build_int_add(shift, self.i32c(self.scratch as i64), "")?;
        let b_off = self.b.build_int_add(a_off, self.i32c(b_base as i64), "")?;
        Ok((a_off, b_off))
    }

    /// Store one operand element at element index `idx` of the tile at
    /// `base` (tf32: rounded fp32; int8: one byte).
    fn store_narrow(
        &self,
        base: usize,
        idx: IntValue<'ctx>,
        x: BasicValueEnum<'ctx>,
        kind: MmaKind,
    ) -> R<()> {
        let p = self.smem_addr(base, idx, kind.elem_bytes())?;
        let i8t = self.ctx.i8_type();
        let v: BasicValueEnum = match kind {
            MmaKind::I8 => self
                .b
                .build_int_truncate_or_bit_cast(x.into_int_value(), i8t, "")?
                .into(),
            MmaKind::Tf32 => self.round_tf32(x)?,
            _ => return Err(GenError(format!("no mma.sync operand of kind {kind:?}"))),
        };
        self.b.build_store(p, v)?;
        Ok(())
    }

    /// A 32-bit shared load at byte `off` of the dynamic shared memory.
    fn smem_word(&self, off: IntValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        // SAFETY: `off` stays inside the operand tiles sized by `smem_bytes`.
        let p = unsafe {
            self.b
                .build_gep(self.ctx.i8_type(), self.smem, &[off], "")?
        };
        let ld = self.b.build_load(self.ctx.i32_type(), p, "")?;
        let _ = ld.as_instruction_value().map(|i| i.set_alignment(4));
        Ok(ld)
    }

    pub(super) fn dot_mma_narrow(&mut self, op: &Op, l: &MmaLayout) -> R<()> {
        let (a, bm, acc, r) = (op.args[0], op.args[1], op.args[2], op.results[0]);
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
        let eb = l.kind.elem_bytes();
        let shift = self.dot_buffer_shift()?;
        self.smem_shift.set(Some(shift));
        for (i, x) in a_regs.iter().enumerate() {
            let rc = self.elem_coords(&la, i, &[l.m, l.k])?;
            let idx = self.b.build_int_mul(rc[0], self.i32c(rk as i64), "")?;
            let idx = self.b.build_int_add(idx, rc[1], "")?;
            self.store_narrow(0, idx, *x, l.kind)?;
        }
        for (i, x) in b_regs.iter().enumerate() {
            // B (K x N) goes in transposed: row n, column k.
            let rc = self.elem_coords(&lb, i, &[l.k, l.n])?;
            let idx = self.b.build_int_mul(rc[1], self.i32c(rk as i64), "")?;
            let idx = self.b.build_int_add(idx, rc[0], "")?;
            self.store_narrow(l.b_base(), idx, *x, l.kind)?;
        }
        let (a_off, b_off) = self.operand_tiles_written(shift, l)?;

        let step = l.kind.k_step();
        let per = 4 / eb;
        let [wm, wn, g, t] = self.mma_coords(l)?;
        // This lane's first byte in its A and B rows (rep 0, k0 = 0).
        let kcol = self.b.build_int_mul(t, self.i32c((per * eb) as i64), "")?;
        let lane_off =
            |slab: IntValue<'ctx>, span: usize, off: IntValue<'ctx>| -> R<IntValue<'ctx>> {
                let row = self.b.build_int_mul(slab, self.i32c(span as i64), "")?;
                let row = self.b.build_int_add(row, g, "")?;
                let o = self.b.build_int_mul(row, self.i32c((rk * eb) as i64), "")?;
                let o = self.b.build_int_add(o, kcol, "")?;
                Ok(self.b.build_int_add(o, off, "")?)
            };
        let a_lane = lane_off(wm, l.m / l.wm, a_off)?;
        let b_lane = lane_off(wn, l.n / l.wn, b_off)?;
        let row_bytes = rk * eb;
        let word = |base: IntValue<'ctx>, bytes: usize| -> R<BasicValueEnum<'ctx>> {
            let at = self.b.build_int_add(base, self.i32c(bytes as i64), "")?;
            self.smem_word(at)
        };

        let f32t: BasicTypeEnum = self.ctx.f32_type().into();
        let (acc_ty, instr) = match l.kind {
            MmaKind::Tf32 => (f32t, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
            MmaKind::I8 => (
                self.ctx.i32_type().into(),
                "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
            ),
            k => return Err(GenError(format!("no narrow mma.sync of kind {k:?}"))),
        };
        let mma = self.mma_sync_asm(instr, acc_ty);
        let second = step / 2 * eb;
        for k0 in (0..l.k).step_by(step) {
            let k0b = k0 * eb;
            let mut afrag = vec![];
            for rm in 0..l.reps_m() {
                let r0 = rm * 16 * row_bytes + k0b;
                let r1 = r0 + 8 * row_bytes;
                afrag.push([
                    word(a_lane, r0)?,
                    word(a_lane, r1)?,
                    word(a_lane, r0 + second)?,
                    word(a_lane, r1 + second)?,
                ]);
            }
            for rn in 0..l.reps_n() {
                let c0 = rn * 8 * row_bytes + k0b;
                let b = [word(b_lane, c0)?, word(b_lane, c0 + second)?];
                for (rm, af) in afrag.iter().enumerate() {
                    let base = (rm * l.reps_n() + rn) * 4;
                    self.mma_call(mma, af, &b, &mut accs[base..base + 4])?;
                }
            }
        }
        self.set(r, Reg::B(accs));
        Ok(())
    }
}
