//! `gather[axis] src, index` on the CPU backend: a loop over the result
//! reading `src` through the index block. An index outside `0..n` stops the
//! launch with an `IndexError` naming the line (the GPU clamps it instead,
//! so the CPU backend, the reference, is where a bad index is reported).

use crate::codegen::{row_major_strides, Gen};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::InstBuilder;
use tilebook_tir::Op;

impl Gen<'_, '_> {
    pub(crate) fn gather(&mut self, op: &Op, axis: usize) {
        let (src, index, r) = (op.args[0], op.args[1], op.results[0]);
        let sshape = self.ty(src).shape.clone();
        let sstr = row_major_strides(&sshape);
        let rshape = self.ty(r).shape.clone();
        let idtype = self.ty(index).dtype();
        let n = sshape[axis] as i64;
        let msg =
            format!("tl.gather index out of range: indices along axis {axis} must lie in 0..{n}");
        let site = self.check_site(op, "gather", &msg);
        self.loop_nest(&rshape, &mut |g, idx, lin| {
            let raw = g.load_elem(index, lin);
            let j = g.widen_to_i64(raw, idtype);
            let ok = g.b.ins().icmp_imm(IntCC::UnsignedLessThan, j, n);
            g.fail_unless(ok, site, lin);
            let mut s = g.b.ins().imul_imm(j, sstr[axis] as i64);
            for (d, &i) in idx.iter().enumerate() {
                if d != axis {
                    let t = g.b.ins().imul_imm(i, sstr[d] as i64);
                    s = g.b.ins().iadd(s, t);
                }
            }
            let x = g.load_elem(src, s);
            g.store_elem(r, lin, x);
        });
    }
}
