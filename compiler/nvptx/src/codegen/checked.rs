//! Checked GPU mode: every load, store and atomic is checked against the
//! byte range of the tensor its pointer derives from (the provenance the CPU
//! backend uses, `tilebook_tir::provenance`), or, where that is unknown
//! (addresses loaded from memory), against every live allocation the launch
//! lists. An access outside is not performed (a load gives its `other`, or
//! zero), and the first one of the launch is recorded with the op's line and
//! column, the program id and the address, so the runtime can name it.
//!
//! The kernel then takes, after its own parameters, the record's address
//! (`i64`) and a `[lo, hi)` pair of `i64`s per parameter (zeros for
//! non-pointers); see [`crate::record`] for the record's layout.

use super::*;
use crate::record;
use tilebook_tir::provenance::{provenance, Provenance};

pub(super) struct Check<'ctx> {
    /// The record's address.
    record: IntValue<'ctx>,
    /// `[lo, hi)` byte range of each pointer parameter.
    bounds: HashMap<usize, (IntValue<'ctx>, IntValue<'ctx>)>,
    prov: Provenance,
    /// `tb_in_any(record, addr, bytes)`, built on first use.
    any: Option<FunctionValue<'ctx>>,
    /// The current op's accesses, each `(outside and wanted, address)`,
    /// until `report_checks` records the first with one branch for them all.
    batch: Vec<(IntValue<'ctx>, IntValue<'ctx>)>,
}

/// The extra parameters a checked kernel takes after its own.
pub(super) fn extra_params<'ctx>(ctx: &'ctx Context, k: &Kernel) -> Vec<BasicTypeEnum<'ctx>> {
    vec![ctx.i64_type().into(); 1 + 2 * k.params.len()]
}

impl<'ctx> Gen<'ctx, '_> {
    /// Read the checked mode's parameters at entry.
    pub(super) fn start_checks(&mut self) -> R<()> {
        let n = self.k.params.len() as u32;
        let param = |i: u32| {
            self.func
                .get_nth_param(i)
                .map(|p| p.into_int_value())
                .ok_or_else(|| GenError("missing check parameter".into()))
        };
        let record = param(n)?;
        let mut bounds = HashMap::new();
        for (i, p) in self.k.params.iter().enumerate() {
            if self.k.ty(p.value).elem.is_ptr() {
                let j = n + 1 + 2 * i as u32;
                bounds.insert(i, (param(j)?, param(j + 1)?));
            }
        }
        self.check = Some(Check {
            record,
            bounds,
            prov: provenance(self.k),
            any: None,
            batch: vec![],
        });
        Ok(())
    }

    /// In checked mode, the condition under which an access of `bytes` bytes
    /// at `ptr` (made by `op`, whose first argument is the pointer) goes
    /// ahead: `cond` and inside its tensor; an access that `cond` lets
    /// through but that lies outside is left for `report_checks` to record.
    /// Without checks, `cond` unchanged.
    pub(super) fn check_access(
        &mut self,
        op: &Op,
        ptr: PointerValue<'ctx>,
        bytes: usize,
        cond: Option<IntValue<'ctx>>,
    ) -> R<Option<IntValue<'ctx>>> {
        let size = self.i32c(bytes as i64);
        self.check_access_sized(op, ptr, size, cond)
    }

    /// `check_access` of an access whose size (`i32` bytes) is known only
    /// at run time.
    pub(super) fn check_access_sized(
        &mut self,
        op: &Op,
        ptr: PointerValue<'ctx>,
        bytes: IntValue<'ctx>,
        cond: Option<IntValue<'ctx>>,
    ) -> R<Option<IntValue<'ctx>>> {
        let Some(check) = &self.check else {
            return Ok(cond);
        };
        let i64t = self.ctx.i64_type();
        let param = check.prov.get(&op.args[0]).copied().flatten();
        let known = param.and_then(|p| check.bounds.get(&p).copied());
        let record = check.record;
        let addr = self.b.build_ptr_to_int(ptr, i64t, "")?;
        let size = self.b.build_int_z_extend(bytes, i64t, "")?;
        let inside = match known {
            Some((lo, hi)) => {
                let last = self.b.build_int_sub(hi, size, "")?;
                let a = self.b.build_int_compare(IntPredicate::UGE, addr, lo, "")?;
                let b = self
                    .b
                    .build_int_compare(IntPredicate::ULE, addr, last, "")?;
                let c = self.b.build_int_compare(IntPredicate::UGE, hi, size, "")?;
                let ab = self.b.build_and(a, b, "")?;
                self.b.build_and(ab, c, "")?
            }
            None => {
                let f = self.in_any_fn()?;
                self.b
                    .build_call(f, &[record.into(), addr.into(), size.into()], "")?
                    .try_as_basic_value()
                    .basic()
                    .ok_or_else(|| GenError("tb_in_any returns nothing".into()))?
                    .into_int_value()
            }
        };
        let outside = self.b.build_not(inside, "")?;
        let bad = match cond {
            Some(c) => self.b.build_and(c, outside, "")?,
            None => outside,
        };
        if let Some(c) = self.check.as_mut() {
            c.batch.push((bad, addr));
        }
        Ok(Some(match cond {
            Some(c) => self.b.build_and(c, inside, "")?,
            None => inside,
        }))
    }

    /// In checked mode, note a zero `divisor` of an integer `//` or `%`
    /// (`index`: the element's index in its block, where known) for
    /// `report_checks` to record; the division itself gives its defined
    /// value (`binary`).
    pub(super) fn check_divisor(
        &mut self,
        divisor: IntValue<'ctx>,
        index: Option<IntValue<'ctx>>,
    ) -> R<()> {
        if self.check.is_none() {
            return Ok(());
        }
        let i64t = self.ctx.i64_type();
        let zero = divisor.get_type().const_zero();
        let bad = self
            .b
            .build_int_compare(IntPredicate::EQ, divisor, zero, "")?;
        let at = match index {
            Some(i) => self.b.build_int_z_extend(i, i64t, "")?,
            None => i64t.const_all_ones(),
        };
        if let Some(c) = self.check.as_mut() {
            c.batch.push((bad, at));
        }
        Ok(())
    }

    /// After the accesses of `op` (checked by `check_access`): if any lay
    /// outside, record the first (one branch per op, off the fast path).
    pub(super) fn report_checks(&mut self, op: &Op, what: u64) -> R<()> {
        let Some(check) = self.check.as_mut() else {
            return Ok(());
        };
        let batch = std::mem::take(&mut check.batch);
        let record = check.record;
        let param = check.prov.get(&op.args[0]).copied().flatten();
        let Some(&(first_bad, first_addr)) = batch.first() else {
            return Ok(());
        };
        let i64t = self.ctx.i64_type();
        let esize = self
            .ty(op.args[0])
            .elem
            .pointee()
            .map_or(1, |d| d.size_bytes());
        // The first bad access's address: later ones only where none before was bad.
        let (mut any, mut addr) = (first_bad, first_addr);
        for &(bad, a) in &batch[1..] {
            let take = self.b.build_not(any, "")?;
            let take = self.b.build_and(take, bad, "")?;
            addr = self.b.build_select(take, a, addr, "")?.into_int_value();
            any = self.b.build_or(any, bad, "")?;
        }
        let report = self.ctx.append_basic_block(self.func, "oob");
        let write = self.ctx.append_basic_block(self.func, "oob_first");
        let cont = self.ctx.append_basic_block(self.func, "checked");
        self.b.build_conditional_branch(any, report, cont)?;
        self.b.position_at_end(report);
        let global = self.ctx.ptr_type(AddressSpace::from(1u16));
        let word = |g: &Self, i: u64| -> R<PointerValue<'ctx>> {
            let a =
                g.b.build_int_add(record, i64t.const_int(8 * i, false), "")?;
            Ok(g.b.build_int_to_ptr(a, global, "")?)
        };
        let i32t = self.ctx.i32_type();
        let flag = word(self, record::FLAG)?;
        let old = self
            .b
            .build_cmpxchg(
                flag,
                i32t.const_zero(),
                i32t.const_int(1, false),
                inkwell::AtomicOrdering::Monotonic,
                inkwell::AtomicOrdering::Monotonic,
            )?
            .as_basic_value_enum()
            .into_struct_value();
        let won = self.b.build_extract_value(old, 1, "")?.into_int_value();
        self.b.build_conditional_branch(won, write, cont)?;
        self.b.position_at_end(write);
        let pid = [
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.x")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.y")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.z")?,
        ];
        let c64 = |v: u64| i64t.const_int(v, false);
        let loc = (u64::from(op.loc.line) << 32) | u64::from(op.loc.col);
        let mut fields = vec![
            (record::LOC, c64(loc)),
            (record::WHAT, c64(what)),
            (record::PARAM, c64(param.map_or(u64::MAX, |p| p as u64))),
            (record::ADDR, addr),
            (record::ELEM, c64(esize as u64)),
        ];
        for (i, p) in pid.into_iter().enumerate() {
            let v = self.b.build_int_z_extend(p, i64t, "")?;
            fields.push((record::PID + i as u64, v));
        }
        for (i, v) in fields {
            let p = word(self, i)?;
            self.b.build_store(p, v)?;
        }
        self.b.build_unconditional_branch(cont)?;
        self.b.position_at_end(cont);
        Ok(())
    }

    /// `i1 tb_in_any(i64 record, i64 addr, i64 bytes)`: whether the access
    /// lies inside one of the allocations listed in the record.
    fn in_any_fn(&mut self) -> R<FunctionValue<'ctx>> {
        if let Some(f) = self.check.as_ref().and_then(|c| c.any) {
            return Ok(f);
        }
        let ctx = self.ctx;
        let i64t = ctx.i64_type();
        let ty = ctx
            .bool_type()
            .fn_type(&[i64t.into(), i64t.into(), i64t.into()], false);
        let f = self
            .module
            .add_function("tb_in_any", ty, Some(Linkage::Internal));
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(f, "entry");
        let head = ctx.append_basic_block(f, "head");
        let body = ctx.append_basic_block(f, "body");
        let found = ctx.append_basic_block(f, "found");
        let none = ctx.append_basic_block(f, "none");
        let arg = |i: u32| -> R<IntValue<'ctx>> {
            f.get_nth_param(i)
                .map(|p| p.into_int_value())
                .ok_or_else(|| GenError("tb_in_any parameter".into()))
        };
        let (rec, addr, bytes) = (arg(0)?, arg(1)?, arg(2)?);
        let global = ctx.ptr_type(AddressSpace::from(1u16));
        let at = |b: &Builder<'ctx>, word: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            let off = b.build_int_mul(word, i64t.const_int(8, false), "")?;
            let a = b.build_int_add(rec, off, "")?;
            let p = b.build_int_to_ptr(a, global, "")?;
            Ok(b.build_load(i64t, p, "")?.into_int_value())
        };
        b.position_at_end(entry);
        let n = at(&b, i64t.const_int(record::ALLOCATIONS, false))?;
        let end = b.build_int_add(addr, bytes, "")?;
        b.build_unconditional_branch(head)?;
        b.position_at_end(head);
        let i = b.build_phi(i64t, "i")?;
        i.add_incoming(&[(&i64t.const_zero(), entry)]);
        let iv = i.as_basic_value().into_int_value();
        let more = b.build_int_compare(IntPredicate::ULT, iv, n, "")?;
        b.build_conditional_branch(more, body, none)?;
        b.position_at_end(body);
        let w = b.build_int_mul(iv, i64t.const_int(2, false), "")?;
        let w = b.build_int_add(w, i64t.const_int(record::ALLOCATIONS + 1, false), "")?;
        let lo = at(&b, w)?;
        let w1 = b.build_int_add(w, i64t.const_int(1, false), "")?;
        let hi = at(&b, w1)?;
        let a = b.build_int_compare(IntPredicate::UGE, addr, lo, "")?;
        let c = b.build_int_compare(IntPredicate::ULE, end, hi, "")?;
        let ok = b.build_and(a, c, "")?;
        let next = b.build_int_add(iv, i64t.const_int(1, false), "")?;
        i.add_incoming(&[(&next, body)]);
        b.build_conditional_branch(ok, found, head)?;
        b.position_at_end(found);
        b.build_return(Some(&ctx.bool_type().const_int(1, false)))?;
        b.position_at_end(none);
        b.build_return(Some(&ctx.bool_type().const_zero()))?;
        if let Some(c) = self.check.as_mut() {
            c.any = Some(f);
        }
        Ok(f)
    }
}
