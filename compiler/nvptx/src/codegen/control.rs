//! Structured control flow (`for`, `if`, `while` as LLVM loops and phis) and
//! the debugging ops (`device_print` through `vprintf`, `device_assert`).

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    // ------------------------------------------------------------ debugging

    pub(super) fn declare(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        params: &[BasicTypeEnum<'ctx>],
    ) -> FunctionValue<'ctx> {
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let ps: Vec<_> = params.iter().map(|p| (*p).into()).collect();
        let ty = match ret {
            Some(r) => r.fn_type(&ps, false),
            None => self.ctx.void_type().fn_type(&ps, false),
        };
        self.module.add_function(name, ty, None)
    }

    pub(super) fn cstring(&self, s: &str) -> R<PointerValue<'ctx>> {
        Ok(self.b.build_global_string_ptr(s, "")?.as_pointer_value())
    }

    /// `tl.device_print`: one `vprintf` per element, in Triton's line format.
    pub(super) fn print_op(&mut self, op: &Op, prefix: &str) -> R<()> {
        let generic = self.ctx.ptr_type(AddressSpace::default());
        let vprintf = self.declare(
            "vprintf",
            Some(self.ctx.i32_type().into()),
            &[generic.into(), generic.into()],
        );
        let pids = [
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.x")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.y")?,
            self.sreg("llvm.nvvm.read.ptx.sreg.ctaid.z")?,
        ];
        let prefix = prefix.replace('%', "%%");
        for (arg_i, &a) in op.args.iter().enumerate() {
            let t = self.ty(a).clone();
            let l = self.layout(&t);
            let regs = self.regs(a, l.regs())?;
            let (conv, value_ty): (&str, BasicTypeEnum) = match t.elem {
                Elem::Ptr(_) => ("%llx", self.ctx.i64_type().into()),
                Elem::Scalar(d) if d.is_float() => ("%f", self.ctx.f64_type().into()),
                Elem::Scalar(d) if d.bits() == 64 => ("%lld", self.ctx.i64_type().into()),
                Elem::Scalar(_) => ("%d", self.ctx.i32_type().into()),
            };
            let operand = if op.args.len() > 1 {
                format!("(operand {arg_i}) ")
            } else {
                String::new()
            };
            let idx_part = if t.is_block() { " idx (%d)" } else { "" };
            let fmt = self.cstring(&format!(
                "pid (%d, %d, %d){idx_part}{prefix}{operand}{conv}\n"
            ))?;
            let i32t = self.ctx.i32_type();
            let mut fields: Vec<BasicTypeEnum> = vec![i32t.into(), i32t.into(), i32t.into()];
            if t.is_block() {
                fields.push(i32t.into());
            }
            fields.push(value_ty);
            let st = self.ctx.struct_type(&fields, false);
            let owner = self.first_holder(&l)?;
            for (r, x) in regs.iter().enumerate() {
                let idx = if t.is_block() {
                    Some(self.elem_index(&l, r)?)
                } else {
                    None
                };
                let x = *x;
                self.guarded(owner, vec![], &mut |g| {
                    let buf = g.b.build_alloca(st, "printf_args")?;
                    let mut vals: Vec<BasicValueEnum> = pids.iter().map(|p| (*p).into()).collect();
                    if let Some(i) = idx {
                        vals.push(i.into());
                    }
                    let v: BasicValueEnum = match t.elem {
                        Elem::Ptr(_) => {
                            g.b.build_ptr_to_int(x.into_pointer_value(), g.ctx.i64_type(), "")?
                                .into()
                        }
                        Elem::Scalar(d) if d.is_float() => {
                            if x.get_type() == g.ctx.f64_type().into() {
                                x
                            } else {
                                g.b.build_float_ext(x.into_float_value(), g.ctx.f64_type(), "")?
                                    .into()
                            }
                        }
                        Elem::Scalar(d) if d.bits() == 64 => x,
                        Elem::Scalar(d) => {
                            g.b.build_int_cast_sign_flag(
                                x.into_int_value(),
                                g.ctx.i32_type(),
                                !unsigned(Some(d)),
                                "",
                            )?
                            .into()
                        }
                    };
                    vals.push(v);
                    for (fi, v) in vals.iter().enumerate() {
                        let p = g.b.build_struct_gep(st, buf, fi as u32, "")?;
                        g.b.build_store(p, *v)?;
                    }
                    g.b.build_call(vprintf, &[fmt.into(), buf.into()], "")?;
                    Ok(vec![])
                })?;
            }
        }
        Ok(())
    }

    /// `tl.device_assert`: a failing element calls CUDA's `__assertfail`, which
    /// reports the message and stops the kernel.
    pub(super) fn assert_op(&mut self, op: &Op, msg: &str) -> R<()> {
        let generic = self.ctx.ptr_type(AddressSpace::default());
        let i32t = self.ctx.i32_type();
        let f = self.declare(
            "__assertfail",
            None,
            &[
                generic.into(),
                generic.into(),
                i32t.into(),
                generic.into(),
                self.ctx.i64_type().into(),
            ],
        );
        let m = self.cstring(msg)?;
        let file = self.cstring("<kernel>")?;
        let func = self.cstring(&self.k.name.clone())?;
        let t = self.ty(op.args[0]).clone();
        let l = self.layout(&t);
        let regs = self.regs(op.args[0], l.regs())?;
        let line = op.loc.line as i64;
        for x in regs {
            let failed = self.b.build_not(x.into_int_value(), "")?;
            self.guarded(Some(failed), vec![], &mut |g| {
                let args = [
                    m.into(),
                    file.into(),
                    g.i32c(line).into(),
                    func.into(),
                    g.ctx.i64_type().const_int(1, false).into(),
                ];
                g.b.build_call(f, &args, "")?;
                Ok(vec![])
            })?;
        }
        Ok(())
    }

    // ------------------------------------------------------------ control flow

    /// Generate a region's ops; returns the values its yield passes on.
    /// Lazy dots (`wgmma::plan_lazy`) are waited for before their first
    /// reader, and all of them before a yield, an op with regions or the
    /// region's end.
    pub(super) fn region(&mut self, r: &Region) -> R<Vec<Value>> {
        self.depth += 1;
        let result = (|| {
            for op in &r.ops {
                if op.kind == OpKind::Yield || !op.regions.is_empty() {
                    // Recorded tile copies are issued before control flow
                    // and at the end of the region that recorded them.
                    self.flush_copies_guarded()?;
                }
                self.wait_lazy(Some(op))?;
                if op.kind == OpKind::Yield {
                    return Ok(op.args.clone());
                }
                self.op(op)?;
            }
            self.wait_lazy(None)?;
            self.flush_copies_guarded()?;
            Ok(vec![])
        })();
        // Conversions made inside this region do not dominate what follows it.
        let d = self.depth;
        self.converted
            .borrow_mut()
            .retain(|(depth, _, _)| *depth < d);
        self.vectors.borrow_mut().retain(|(depth, ..)| *depth < d);
        self.depth -= 1;
        result
    }

    pub(super) fn bind(&mut self, args: &[Value], vals: Vec<Reg<'ctx>>) {
        for (&a, v) in args.iter().zip(vals) {
            self.set(a, v);
        }
    }

    pub(super) fn unflat(flat: &[BasicValueEnum<'ctx>], shape: &[(bool, usize)]) -> Vec<Reg<'ctx>> {
        let mut out = vec![];
        let mut i = 0;
        for &(block, n) in shape {
            out.push(if block {
                Reg::B(flat[i..i + n].to_vec())
            } else {
                Reg::S(flat[i])
            });
            i += n;
        }
        out
    }

    pub(super) fn for_op(&mut self, op: &Op) -> R<()> {
        let region = &op.regions[0];
        let lb = self.scalar(op.args[0])?.into_int_value();
        let ub = self.scalar(op.args[1])?.into_int_value();
        let step = self.scalar(op.args[2])?.into_int_value();
        self.hoist_a_fragments(region)?;
        // Accumulators carried in an MMA layout enter the loop in it.
        let (init, shape) = self.flat_to(&op.args[3..], &region.args[1..])?;
        let settled = self.settle_bulk_loop(&region.args)?;
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "for");
        let body = self.ctx.append_basic_block(self.func, "for_body");
        let exit = self.ctx.append_basic_block(self.func, "for_exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let iv = self.b.build_phi(lb.get_type(), "iv")?;
        iv.add_incoming(&[(&lb, pre)]);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let i = iv.as_basic_value().into_int_value();
        let up = self.b.build_int_compare(IntPredicate::SLT, i, ub, "")?;
        let down = self.b.build_int_compare(IntPredicate::SGT, i, ub, "")?;
        let pos =
            self.b
                .build_int_compare(IntPredicate::SGT, step, step.get_type().const_zero(), "")?;
        let c = self.b.build_select(pos, up, down, "")?.into_int_value();
        self.b.build_conditional_branch(c, body, exit)?;
        self.b.position_at_end(body);
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        let mut bound = vec![Reg::S(i.into())];
        bound.extend(Self::unflat(&cur, &shape));
        self.bind(&region.args, bound);
        let outer = self
            .landed
            .replace(async_copy::Landed::for_body(&region.args, settled));
        self.loops += 1;
        let ys = self.region(region);
        self.loops -= 1;
        let ys = ys?;
        self.wait_deferred(&ys)?;
        self.landed.replace(outer);
        let (next, _) = self.flat_to(&ys, &region.args[1..])?;
        let latch = self.current_block()?;
        let i2 = self.b.build_int_add(i, step, "")?;
        iv.add_incoming(&[(&i2, latch)]);
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        let results = Self::unflat(&cur, &shape);
        self.bind(&op.results, results);
        self.wait_inflight(&op.results)?;
        self.retire_tiles(op)
    }

    pub(super) fn if_op(&mut self, op: &Op) -> R<()> {
        let c = self.scalar(op.args[0])?.into_int_value();
        let then_b = self.ctx.append_basic_block(self.func, "then");
        let else_b = self.ctx.append_basic_block(self.func, "else");
        let merge = self.ctx.append_basic_block(self.func, "endif");
        self.b.build_conditional_branch(c, then_b, else_b)?;
        let mut arms = vec![];
        let mut shape = vec![];
        // What a wait in one arm showed landed holds neither in the other
        // arm nor after the `if` (the arm may not run).
        let known = self.landed.borrow().known();
        for (blk, region) in [(then_b, &op.regions[0]), (else_b, &op.regions[1])] {
            self.b.position_at_end(blk);
            let ys = self.region(region);
            self.landed.borrow_mut().forget_since(&known);
            let ys = ys?;
            let (flat, s) = self.flat_to(&ys, &op.results)?;
            shape = s;
            arms.push((flat, self.current_block()?));
            self.b.build_unconditional_branch(merge)?;
        }
        self.b.position_at_end(merge);
        let mut merged = vec![];
        for i in 0..arms[0].0.len() {
            let p = self.b.build_phi(arms[0].0[i].get_type(), "")?;
            p.add_incoming(&[(&arms[0].0[i], arms[0].1), (&arms[1].0[i], arms[1].1)]);
            merged.push(p.as_basic_value());
        }
        let results = Self::unflat(&merged, &shape);
        self.bind(&op.results, results);
        Ok(())
    }

    pub(super) fn while_op(&mut self, op: &Op) -> R<()> {
        let (cond_r, body_r) = (&op.regions[0], &op.regions[1]);
        let (init, shape) = self.flat_to(&op.args, &cond_r.args)?;
        let pre = self.current_block()?;
        let header = self.ctx.append_basic_block(self.func, "while");
        let body = self.ctx.append_basic_block(self.func, "while_body");
        let exit = self.ctx.append_basic_block(self.func, "while_exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let mut phis = vec![];
        for v in &init {
            let p = self.b.build_phi(v.get_type(), "")?;
            p.add_incoming(&[(v, pre)]);
            phis.push(p);
        }
        let cur: Vec<_> = phis.iter().map(|p| p.as_basic_value()).collect();
        self.bind(&cond_r.args, Self::unflat(&cur, &shape));
        // The body shares the enclosing loop's `landed`: what a wait in it
        // shows landed does not hold after the loop (it may not run).
        let known = self.landed.borrow().known();
        let ys = self.region(cond_r)?;
        let c = self.scalar(ys[0])?.into_int_value();
        self.b.build_conditional_branch(c, body, exit)?;
        self.b.position_at_end(body);
        self.bind(&body_r.args, Self::unflat(&cur, &shape));
        self.loops += 1;
        let ys = self.region(body_r);
        self.loops -= 1;
        self.landed.borrow_mut().forget_since(&known);
        let ys = ys?;
        let (next, _) = self.flat_to(&ys, &body_r.args)?;
        let latch = self.current_block()?;
        for (p, v) in phis.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(exit);
        self.bind(&op.results, Self::unflat(&cur, &shape));
        Ok(())
    }
}
