//! `gather[axis] src, index` on the GPU: the source block goes through
//! shared memory (as a transpose does) and each thread reads its result
//! elements at the indexed positions. An index outside `0..n` reads element
//! 0 of its row instead of memory outside the block; the CPU backend, the
//! reference, reports such an index as an error.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    pub(super) fn gather(&mut self, op: &Op, axis: usize) -> R<()> {
        let (src, index, r) = (op.args[0], op.args[1], op.results[0]);
        let st = self.ty(src).clone();
        let rt = self.ty(r).clone();
        let unsigned = self
            .ty(index)
            .dtype()
            .is_some_and(|d| d.is_unsigned_int() || d == DType::I1);
        let l = self.layout(&rt);
        let idx_regs = self.regs(index, l.regs())?;
        self.barrier()?;
        self.spill(src, 0)?;
        self.barrier()?;
        let sstr = Self::strides(&st.shape);
        let i64t = self.ctx.i64_type();
        let n = i64t.const_int(st.shape[axis] as u64, false);
        let mut out = vec![];
        for (reg, raw) in idx_regs.iter().enumerate() {
            let coords = self.elem_coords(&l, reg, &rt.shape)?;
            let j = raw.into_int_value();
            let j = if unsigned {
                self.b.build_int_z_extend_or_bit_cast(j, i64t, "")?
            } else {
                self.b.build_int_s_extend_or_bit_cast(j, i64t, "")?
            };
            let ok = self.b.build_int_compare(IntPredicate::ULT, j, n, "")?;
            let j = self.b.build_select(ok, j, i64t.const_zero(), "")?;
            let j = self
                .b
                .build_int_truncate(j.into_int_value(), self.ctx.i32_type(), "")?;
            let mut s = self.b.build_int_mul(j, self.i32c(sstr[axis] as i64), "")?;
            for (d, i) in coords.iter().enumerate() {
                if d == axis || st.shape[d] == 1 {
                    continue;
                }
                let t = self.b.build_int_mul(*i, self.i32c(sstr[d] as i64), "")?;
                s = self.b.build_int_add(s, t, "")?;
            }
            out.push(self.smem_load(0, s, st.elem)?);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }
}
