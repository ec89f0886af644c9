//! Loop-carried and region-result block values: binding values to region
//! arguments (copies between frame slots) and, for `for` loops, giving a
//! yielded block its argument's slot so the copy disappears.

use crate::codegen::Gen;
use crate::elem::reg_ty;
use cranelift_codegen::ir::{InstBuilder, Value as CV};
use std::collections::HashSet;
use tilebook_tir::{Op, OpKind, Region, Value};

/// Every op of `ops` and of the regions inside them.
fn visit(ops: &[Op], f: &mut dyn FnMut(&Op)) {
    for op in ops {
        f(op);
        for r in &op.regions {
            visit(&r.ops, f);
        }
    }
}

impl Gen<'_, '_> {
    /// A `for` body's yielded blocks that can be computed straight into the
    /// slot of the argument they replace: the yielded value is made by an op
    /// of the body itself (not a slot alias), has the argument's type, is
    /// yielded once, and nothing after its op reads the argument (or a
    /// reshape of it), so overwriting the argument early changes nothing.
    pub(crate) fn coalesce_yields(&mut self, body: &Region) {
        let Some(y) = body.ops.last().filter(|o| o.kind == OpKind::Yield) else {
            return;
        };
        let yields = y.args.clone();
        for (i, &v) in yields.iter().enumerate() {
            let Some(&arg) = body.args.get(i + 1) else {
                continue;
            };
            if v == arg
                || !self.ty(v).is_block()
                || self.ty(v) != self.ty(arg)
                || self.slots.contains_key(&v)
                || yields.iter().filter(|&&w| w == v).count() > 1
            {
                continue;
            }
            let Some(def) = body.ops.iter().position(|o| o.results.contains(&v)) else {
                continue;
            };
            if matches!(
                body.ops[def].kind,
                OpKind::Reshape | OpKind::ExpandDims(_) | OpKind::For | OpKind::If | OpKind::While
            ) {
                continue;
            }
            // The argument and every value that shares its slot.
            let mut names: HashSet<Value> = HashSet::from([arg]);
            visit(&body.ops, &mut |o| {
                if matches!(o.kind, OpKind::Reshape | OpKind::ExpandDims(_))
                    && names.contains(&o.args[0])
                {
                    names.extend(o.results.iter().copied());
                }
            });
            // (The yield itself counts: it may hand the argument on.)
            let mut read_later = false;
            visit(&body.ops[def + 1..], &mut |x| {
                read_later |= x.args.iter().any(|a| names.contains(a));
            });
            if !read_later {
                let s = self.slot(arg);
                self.slots.insert(v, s);
            }
        }
    }

    /// Copy a whole block from one value's slot to another's.
    pub(crate) fn copy_block(&mut self, from: Value, to: Value) {
        let n = self.ty(from).numel() as i64;
        if self.slot(from) == self.slot(to) {
            return;
        }
        let bytes = n * reg_ty(self.ty(from).elem).bytes() as i64;
        let (src, dst) = (self.slot_addr(from), self.slot_addr(to));
        self.copy_bytes(src, dst, bytes);
    }

    /// Bind values to region arguments (blocks: copy into the argument's slot).
    pub(crate) fn bind_args(&mut self, args: &[Value], vals: &[Value]) {
        let arg_slots: Vec<Option<u32>> = args
            .iter()
            .map(|&a| {
                if self.ty(a).is_block() {
                    Some(self.slot(a))
                } else {
                    None
                }
            })
            .collect();
        let hazard = vals.iter().enumerate().any(|(i, &v)| {
            self.slots.get(&v).is_some_and(|s| {
                arg_slots
                    .iter()
                    .enumerate()
                    .any(|(j, a)| j != i && *a == Some(*s))
            })
        });
        let scalars: Vec<Option<CV>> = vals
            .iter()
            .map(|&v| {
                if self.ty(v).is_block() {
                    None
                } else {
                    Some(self.get(v))
                }
            })
            .collect();
        if hazard {
            // Copy through fresh temporaries so swapped values are not clobbered.
            let mut temps = vec![];
            for &v in vals {
                if self.ty(v).is_block() {
                    let bytes =
                        (self.ty(v).numel() * reg_ty(self.ty(v).elem).bytes() as usize) as u32;
                    temps.push(Some(self.alloc_raw(bytes)));
                } else {
                    temps.push(None);
                }
            }
            for (i, &v) in vals.iter().enumerate() {
                if let Some(off) = temps[i] {
                    self.copy_raw(v, off);
                }
            }
            for (i, &a) in args.iter().enumerate() {
                if let Some(off) = temps[i] {
                    self.copy_raw_to(off, a);
                }
            }
        } else {
            for (&a, &v) in args.iter().zip(vals) {
                if self.ty(a).is_block() {
                    self.copy_block(v, a);
                }
            }
        }
        for (&a, s) in args.iter().zip(scalars) {
            if let Some(x) = s {
                self.set_var(a, x);
            }
        }
    }

    fn copy_raw(&mut self, from: Value, to_off: u32) {
        let bytes = (self.ty(from).numel() * reg_ty(self.ty(from).elem).bytes() as usize) as i64;
        let src = self.slot_addr(from);
        let dst = self.b.ins().iadd_imm(self.frame, to_off as i64);
        self.copy_bytes(src, dst, bytes);
    }

    fn copy_raw_to(&mut self, from_off: u32, to: Value) {
        let bytes = (self.ty(to).numel() * reg_ty(self.ty(to).elem).bytes() as usize) as i64;
        let src = self.b.ins().iadd_imm(self.frame, from_off as i64);
        let dst = self.slot_addr(to);
        self.copy_bytes(src, dst, bytes);
    }

    fn copy_bytes(&mut self, src: CV, dst: CV, bytes: i64) {
        let n = self.iconst(bytes);
        self.call("tb_copy", &[dst, src, n]);
    }

    pub(crate) fn alias(&mut self, result: Value, carried: Value) {
        if self.ty(carried).is_block() {
            let s = self.slot(carried);
            self.slots.insert(result, s);
        } else {
            let v = self.var(carried);
            self.vars.insert(result, v);
        }
    }
}
