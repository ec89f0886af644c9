//! Atomics on the GPU: `tl.atomic_*` become PTX `atom` instructions with the
//! kernel's `sem=` and `scope=` (Triton's defaults: `acq_rel`, `gpu`),
//! written as inline PTX because LLVM's `atomicrmw` has no PTX scopes.
//! Float max/min use the sign trick (signed max on the bits of a
//! non-negative operand, unsigned min on a negative one). Where a block is
//! replicated across threads (fewer elements than threads, scalars), the
//! first holder of each element does the atomic and hands the old value to
//! the other holders through shared memory.

use super::*;
use tilebook_tir::{AtomicOp, MemScope, MemSem};

fn qualifiers(sem: MemSem, scope: MemScope) -> String {
    let s = match sem {
        MemSem::Relaxed => "relaxed",
        MemSem::Acquire => "acquire",
        MemSem::Release => "release",
        MemSem::AcqRel => "acq_rel",
    };
    let c = match scope {
        MemScope::Cta => "cta",
        MemScope::Gpu => "gpu",
        MemScope::Sys => "sys",
    };
    format!(".{s}.{c}")
}

/// What an operand of `d` is in inline PTX: its register class and LLVM type width.
fn constraint(d: DType) -> (&'static str, u32) {
    match d {
        DType::F16 | DType::BF16 | DType::I16 | DType::U16 => ("h", 16),
        DType::I64 | DType::U64 | DType::F64 => ("l", 64),
        _ => ("r", 32),
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// `atomic` (with `Some(op)`) and `atomic_cas` (with `None`).
    pub(super) fn atomic(
        &mut self,
        op: &Op,
        kind: Option<AtomicOp>,
        sem: MemSem,
        scope: MemScope,
        mask: bool,
    ) -> R<()> {
        let pt = self.ty(op.args[0]).clone();
        let d = pt.elem.pointee().unwrap_or(DType::I32);
        let l = self.layout(&pt);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let first = self.regs(op.args[1], n)?;
        let second = if kind.is_none() {
            Some(self.regs(op.args[2], n)?)
        } else {
            None
        };
        let masks = if mask {
            Some(self.regs(op.args[2], n)?)
        } else {
            None
        };
        let owner = self.first_holder(&l)?;
        let zero = self.constant(Const::Int(0), Elem::Scalar(d))?;
        let q = qualifiers(sem, scope);
        let mut out = vec![];
        for r in 0..n {
            let mut c = masks.as_ref().map(|m| m[r].into_int_value());
            if let Some(o) = owner {
                c = Some(match c {
                    Some(m) => self.b.build_and(m, o, "")?,
                    None => o,
                });
            }
            let p = ptrs[r].into_pointer_value();
            let c = self.check_access(op, p, d.size_bytes(), c)?;
            let (x, y) = (first[r], second.as_ref().map(|s| s[r]));
            let old = self.guarded(c, vec![zero], &mut |g| {
                let addr = g.b.build_ptr_to_int(p, g.ctx.i64_type(), "")?;
                Ok(vec![g.atomic_one(kind, d, &q, addr, x, y)?])
            })?;
            out.push(old[0]);
        }
        self.report_checks(op, crate::record::ATOMIC)?;
        // Holders other than the first need the old value only if something
        // reads it (a lock's release, a counter bump, do not).
        let res_v = op.results[0];
        let mut read = false;
        tilebook_tir::walk_ops(&self.k.body, &mut |o| read |= o.args.contains(&res_v));
        if let (Some(o), true) = (owner, read) {
            out = self.share_from_first_holder(&l, o, out, d)?;
        }
        let res = op.results[0];
        self.set(
            res,
            if pt.is_block() {
                Reg::B(out)
            } else {
                Reg::S(out[0])
            },
        );
        Ok(())
    }

    /// Every holder of a replicated element gets the first holder's value.
    fn share_from_first_holder(
        &mut self,
        l: &Layout,
        owner: IntValue<'ctx>,
        vals: Vec<BasicValueEnum<'ctx>>,
        d: DType,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let size = self.slot_size(Elem::Scalar(d));
        self.need_smem(l.n * size);
        let ty = self.reg_type(Elem::Scalar(d));
        self.barrier()?;
        let mut addrs = vec![];
        for (r, v) in vals.iter().enumerate() {
            let idx = self.elem_index(l, r)?;
            let a = self.smem_addr(0, idx, size)?;
            let v = *v;
            self.guarded(Some(owner), vec![], &mut |g| {
                g.b.build_store(a, v)?;
                Ok(vec![])
            })?;
            addrs.push(a);
        }
        self.barrier()?;
        let mut out = vec![];
        for a in addrs {
            out.push(self.b.build_load(ty, a, "")?);
        }
        self.barrier()?;
        Ok(out)
    }

    fn int_of(&self, bits: u32) -> inkwell::types::IntType<'ctx> {
        match bits {
            16 => self.ctx.i16_type(),
            32 => self.ctx.i32_type(),
            _ => self.ctx.i64_type(),
        }
    }

    /// A register value as the integer bits inline PTX takes.
    fn as_operand(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let (_, bits) = constraint(d);
        let int = self.int_of(bits);
        Ok(match d {
            DType::F16 | DType::BF16 => {
                let m = self.encode_mem(v, d)?;
                self.b.build_bit_cast(m, int, "")?
            }
            DType::F32 | DType::F64 => self.b.build_bit_cast(v, int, "")?,
            _ => v,
        })
    }

    fn operand_value(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match d {
            DType::F16 | DType::BF16 => {
                let m = self.b.build_bit_cast(v, self.mem_type(d), "")?;
                self.decode_mem(m, d)?
            }
            DType::F32 | DType::F64 => {
                self.b
                    .build_bit_cast(v, self.reg_type(Elem::Scalar(d)), "")?
            }
            _ => v,
        })
    }

    /// The atomic on one element at `addr`; returns the old element.
    fn atomic_one(
        &mut self,
        kind: Option<AtomicOp>,
        d: DType,
        q: &str,
        addr: IntValue<'ctx>,
        x: BasicValueEnum<'ctx>,
        y: Option<BasicValueEnum<'ctx>>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (reg, bits) = constraint(d);
        let int = self.int_of(bits);
        let xb = self.as_operand(x, d)?;
        let cons = |n: usize| {
            let mut c = format!("={reg},l");
            for _ in 0..n {
                c.push_str(&format!(",{reg}"));
            }
            c + ",~{memory}"
        };
        let Some(op) = kind else {
            let yb = self.as_operand(y.unwrap_or(x), d)?;
            let old = self.ptx_value(
                &format!("atom{q}.global.cas.b{bits} $0, [$1], $2, $3;"),
                &cons(2),
                int.into(),
                true,
                &[addr.into(), xb, yb],
            )?;
            return self.operand_value(old, d);
        };
        if d.is_float() && matches!(op, AtomicOp::Max | AtomicOp::Min) {
            return self.float_extremum(op == AtomicOp::Max, d, q, addr, xb);
        }
        let ty = match (op, d) {
            (AtomicOp::Add, DType::F16) => "noftz.f16".to_string(),
            (AtomicOp::Add, DType::BF16) => "noftz.bf16".to_string(),
            (AtomicOp::Add, DType::F32 | DType::F64) => format!("f{bits}"),
            (AtomicOp::Add, _) => format!("u{bits}"),
            (AtomicOp::Max | AtomicOp::Min, _) if d.is_signed_int() => format!("s{bits}"),
            (AtomicOp::Max | AtomicOp::Min, _) => format!("u{bits}"),
            _ => format!("b{bits}"),
        };
        let name = match op {
            AtomicOp::Add => "add",
            AtomicOp::Max => "max",
            AtomicOp::Min => "min",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Xchg => "exch",
        };
        // Float add takes float registers; everything else integer bits.
        let (xa, rty, c): (BasicValueEnum<'ctx>, BasicTypeEnum<'ctx>, String) = match d {
            DType::F32 if op == AtomicOp::Add => {
                (x, self.ctx.f32_type().into(), "=f,l,f,~{memory}".into())
            }
            DType::F64 if op == AtomicOp::Add => {
                (x, self.ctx.f64_type().into(), "=d,l,d,~{memory}".into())
            }
            _ => (xb, int.into(), cons(1)),
        };
        let old = self.ptx_value(
            &format!("atom{q}.global.{name}.{ty} $0, [$1], $2;"),
            &c,
            rty,
            true,
            &[addr.into(), xa],
        )?;
        if matches!(d, DType::F32 | DType::F64) && op == AtomicOp::Add {
            return Ok(old);
        }
        self.operand_value(old, d)
    }

    /// Float max/min on integer atomics: for a non-negative operand the
    /// float order is the signed order of the bits, for a negative one the
    /// reverse of the unsigned order.
    fn float_extremum(
        &mut self,
        max: bool,
        d: DType,
        q: &str,
        addr: IntValue<'ctx>,
        bits_v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (_, bits) = constraint(d);
        let int = self.int_of(bits);
        let nonneg = self.b.build_int_compare(
            IntPredicate::SGE,
            bits_v.into_int_value(),
            int.const_zero(),
            "",
        )?;
        let (pos, neg) = if max { ("max", "min") } else { ("min", "max") };
        let pos_b = self.ctx.append_basic_block(self.func, "fext_pos");
        let neg_b = self.ctx.append_basic_block(self.func, "fext_neg");
        let merge = self.ctx.append_basic_block(self.func, "fext_merge");
        self.b.build_conditional_branch(nonneg, pos_b, neg_b)?;
        let r = if bits == 32 { "r" } else { "l" };
        let c = format!("={r},l,{r},~{{memory}}");
        self.b.position_at_end(pos_b);
        let a = self.ptx_value(
            &format!("atom{q}.global.{pos}.s{bits} $0, [$1], $2;"),
            &c,
            int.into(),
            true,
            &[addr.into(), bits_v],
        )?;
        let pos_end = self.current_block()?;
        self.b.build_unconditional_branch(merge)?;
        self.b.position_at_end(neg_b);
        let b = self.ptx_value(
            &format!("atom{q}.global.{neg}.u{bits} $0, [$1], $2;"),
            &c,
            int.into(),
            true,
            &[addr.into(), bits_v],
        )?;
        let neg_end = self.current_block()?;
        self.b.build_unconditional_branch(merge)?;
        self.b.position_at_end(merge);
        let phi = self.b.build_phi(int, "")?;
        phi.add_incoming(&[(&a, pos_end), (&b, neg_end)]);
        self.operand_value(phi.as_basic_value(), d)
    }
}
