//! Memory for the GPU backend: element encodings (fp16, bf16, fp8), vector
//! loads and stores chosen by the axis analysis, shared memory, and the
//! conversions through it (with rematerialisation where the data allows).

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    // ------------------------------------------------------------ memory

    /// The in-memory type of an element (i1 as a byte, fp16 as half, ...).
    pub(super) fn mem_type(&self, d: DType) -> BasicTypeEnum<'ctx> {
        match d {
            DType::I1 | DType::I8 | DType::U8 | DType::F8E5 | DType::F8E4NV => {
                self.ctx.i8_type().into()
            }
            DType::F16 => self.ctx.f16_type().into(),
            DType::BF16 => self.ctx.bf16_type().into(),
            _ => scalar_type(self.ctx, d),
        }
    }

    pub(super) fn decode_mem(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match d {
            DType::I1 => self
                .b
                .build_int_compare(
                    IntPredicate::NE,
                    v.into_int_value(),
                    self.ctx.i8_type().const_zero(),
                    "",
                )?
                .into(),
            DType::F16 | DType::BF16 => self
                .b
                .build_float_ext(v.into_float_value(), self.ctx.f32_type(), "")?
                .into(),
            DType::F8E5 | DType::F8E4NV => self.decode_fp8(v.into_int_value(), d)?,
            _ => v,
        })
    }

    pub(super) fn encode_mem(&self, v: BasicValueEnum<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match d {
            DType::I1 => self
                .b
                .build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "")?
                .into(),
            DType::F16 => self
                .b
                .build_float_trunc(v.into_float_value(), self.ctx.f16_type(), "")?
                .into(),
            DType::BF16 => self
                .b
                .build_float_trunc(v.into_float_value(), self.ctx.bf16_type(), "")?
                .into(),
            DType::F8E5 | DType::F8E4NV => self.encode_fp8(v, d)?.into(),
            _ => v,
        })
    }

    /// An fp8 byte to f32, exactly.
    pub(super) fn decode_fp8(&self, b: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let bd = &self.b;
        let i32t = self.ctx.i32_type();
        let f32t = self.ctx.f32_type();
        let w = bd.build_int_z_extend(b, i32t, "")?;
        if d == DType::F8E5 {
            // e5m2 is the top byte of an fp16.
            let h = bd.build_left_shift(w, i32t.const_int(8, false), "")?;
            let h = bd.build_int_truncate(h, self.ctx.i16_type(), "")?;
            let h = bd
                .build_bit_cast(h, self.ctx.f16_type(), "")?
                .into_float_value();
            return Ok(bd.build_float_ext(h, f32t, "")?.into());
        }
        // e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7f/0xff are NaN.
        let c = |v: u64| i32t.const_int(v, false);
        let sign = bd.build_and(w, c(0x80), "")?;
        let sign = bd.build_left_shift(sign, c(24), "")?;
        let exp = bd.build_and(bd.build_right_shift(w, c(3), false, "")?, c(0xF), "")?;
        let man = bd.build_and(w, c(7), "")?;
        let e32 = bd.build_int_add(exp, c(120), "")?;
        let normal = bd.build_or(
            bd.build_left_shift(e32, c(23), "")?,
            bd.build_left_shift(man, c(20), "")?,
            "",
        )?;
        let normal = bd.build_or(normal, sign, "")?;
        let normal = bd.build_bit_cast(normal, f32t, "")?.into_float_value();
        let sub = bd.build_unsigned_int_to_float(man, f32t, "")?;
        let sub = bd.build_float_mul(sub, f32t.const_float(2f64.powi(-9)), "")?;
        let neg = bd.build_float_neg(sub, "")?;
        let is_neg = bd.build_int_compare(IntPredicate::NE, sign, c(0), "")?;
        let sub = bd.build_select(is_neg, neg, sub, "")?.into_float_value();
        let is_sub = bd.build_int_compare(IntPredicate::EQ, exp, c(0), "")?;
        let v = bd.build_select(is_sub, sub, normal, "")?.into_float_value();
        let low7 = bd.build_and(w, c(0x7F), "")?;
        let is_nan = bd.build_int_compare(IntPredicate::EQ, low7, c(0x7F), "")?;
        Ok(bd.build_select(is_nan, f32t.const_float(f64::NAN), v, "")?)
    }

    /// f32 to an fp8 byte: round to nearest even, saturate to the largest
    /// finite value (Triton's `satfinite`), NaN stays NaN.
    pub(super) fn encode_fp8(&self, x: BasicValueEnum<'ctx>, d: DType) -> R<IntValue<'ctx>> {
        let bd = &self.b;
        let i32t = self.ctx.i32_type();
        let f32t = self.ctx.f32_type();
        let c = |v: u64| i32t.const_int(v, false);
        let (mbits, bias, max_code, min_normal_exp) = if d == DType::F8E5 {
            (2u64, 15u64, 0x7Bu64, -14i32)
        } else {
            (3, 7, 0x7E, -6)
        };
        let shift = 23 - mbits;
        let xf = x.into_float_value();
        let bits = bd.build_bit_cast(xf, i32t, "")?.into_int_value();
        let sign = bd.build_and(bd.build_right_shift(bits, c(24), false, "")?, c(0x80), "")?;
        let abs = bd.build_and(bits, c(0x7FFF_FFFF), "")?;
        // Normal numbers: round the exponent|mantissa bits, then rebias.
        let lsb = bd.build_and(bd.build_right_shift(abs, c(shift), false, "")?, c(1), "")?;
        let rounded = bd.build_int_add(abs, c((1 << (shift - 1)) - 1), "")?;
        let rounded = bd.build_int_add(rounded, lsb, "")?;
        let code = bd.build_right_shift(rounded, c(shift), false, "")?;
        let code = bd.build_int_sub(code, c((127 - bias) << mbits), "")?;
        // Subnormals: multiples of 2^(min_normal_exp - mbits), rounded to even.
        let absf = bd.build_bit_cast(abs, f32t, "")?.into_float_value();
        let scaled = bd.build_float_mul(
            absf,
            f32t.const_float(2f64.powi(mbits as i32 - min_normal_exp)),
            "",
        )?;
        let re = self
            .intrinsic("llvm.roundeven", &[f32t.into()], &[scaled.into()])?
            .into_float_value();
        let sub = bd.build_float_to_unsigned_int(re, i32t, "")?;
        let min_normal = f32t.const_float(2f64.powi(min_normal_exp));
        let is_sub = bd.build_float_compare(FloatPredicate::OLT, absf, min_normal, "")?;
        let code = bd.build_select(is_sub, sub, code, "")?.into_int_value();
        // Saturate (also infinities), keep NaN.
        let big = bd.build_int_compare(IntPredicate::UGT, code, c(max_code), "")?;
        let is_big = bd.build_or(
            big,
            bd.build_int_compare(IntPredicate::UGE, abs, c(0x7F80_0000), "")?,
            "",
        )?;
        let code = bd
            .build_select(is_big, c(max_code), code, "")?
            .into_int_value();
        let is_nan = bd.build_int_compare(IntPredicate::UGT, abs, c(0x7F80_0000), "")?;
        let code = bd.build_select(is_nan, c(0x7F), code, "")?.into_int_value();
        let code = bd.build_or(code, sign, "")?;
        Ok(bd.build_int_truncate(code, self.ctx.i8_type(), "")?)
    }

    /// How many consecutive registers of blocked value `v` hold one value:
    /// runs of equal elements (the axis analysis' constancy, aligned along
    /// the last dimension) that fall inside one thread's run of `vec`. A mask
    /// `cols < N` with N a multiple of 16 is then one compare per vector, not
    /// one per element, and the column indices need not stay live.
    pub(super) fn equal_run(&self, v: Value, t: &Type) -> usize {
        let l = self.layout(t);
        let Some(info) = self.axis.get(&v) else {
            return 1;
        };
        if l.replicated() || !l.is_pow2() {
            return 1;
        }
        let last = t.shape.last().copied().unwrap_or(1);
        let mut run = l.vec;
        while run > 1 && (info.constancy % run as u64 != 0 || last % run != 0) {
            run /= 2;
        }
        run
    }

    /// How many registers of a load/store through `ptr` can be one vector access.
    pub(super) fn vector_width(
        &self,
        ptr: Value,
        mask: Option<Value>,
        l: &Layout,
        esize: usize,
    ) -> usize {
        if l.replicated() || l.vec < 2 {
            return 1;
        }
        let p = self.axis.get(&ptr).copied();
        let m = mask.and_then(|m| self.axis.get(&m).copied());
        let mut w = l.vec;
        while w > 1 {
            let contiguous =
                p.is_some_and(|p| p.contiguity >= w as u64 && p.divisibility >= (w * esize) as u64);
            let uniform_mask = mask.is_none() || m.is_some_and(|m| m.constancy >= w as u64);
            if contiguous && uniform_mask && w * esize <= 16 {
                return w;
            }
            w /= 2;
        }
        1
    }

    /// Run `body` only where `cond` holds; returns the values it produced (or
    /// `fallback`) through phis.
    pub(super) fn guarded(
        &mut self,
        cond: Option<IntValue<'ctx>>,
        fallback: Vec<BasicValueEnum<'ctx>>,
        body: &mut dyn FnMut(&mut Self) -> R<Vec<BasicValueEnum<'ctx>>>,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let Some(c) = cond else { return body(self) };
        let start = self.current_block()?;
        let then_b = self.ctx.append_basic_block(self.func, "then");
        let merge = self.ctx.append_basic_block(self.func, "merge");
        self.b.build_conditional_branch(c, then_b, merge)?;
        self.b.position_at_end(then_b);
        let vals = body(self)?;
        let end = self.current_block()?;
        self.b.build_unconditional_branch(merge)?;
        self.b.position_at_end(merge);
        let mut out = vec![];
        for (v, f) in vals.iter().zip(&fallback) {
            let phi = self.b.build_phi(v.get_type(), "")?;
            phi.add_incoming(&[(v, end), (f, start)]);
            out.push(phi.as_basic_value());
        }
        Ok(out)
    }

    pub(super) fn current_block(&self) -> R<BasicBlock<'ctx>> {
        self.b
            .get_insert_block()
            .ok_or_else(|| GenError("no insertion block".into()))
    }

    pub(super) fn load(&mut self, op: &Op, mask: bool, other: bool) -> R<()> {
        let r = op.results[0];
        let t = self.ty(r).clone();
        let d = t.dtype().unwrap_or(DType::F32);
        let mem = self.mem_type(d);
        let esize = d.size_bytes();
        let l = self.layout(&t);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let masks = if mask {
            Some(self.regs(op.args[1], n)?)
        } else {
            None
        };
        let rt = scalar_type(self.ctx, d);
        let zero = match rt {
            BasicTypeEnum::FloatType(f) => f.const_zero().as_basic_value_enum(),
            BasicTypeEnum::IntType(i) => i.const_zero().as_basic_value_enum(),
            _ => return fail("load of pointers"),
        };
        let others = if let (true, Some(o)) = (other, tilebook_tir::load_other(op)) {
            self.regs(o, n)?
        } else {
            vec![zero; n]
        };
        if !t.is_block() {
            let p = ptrs[0].into_pointer_value();
            let c = masks.as_ref().map(|m| m[0].into_int_value());
            let c = self.check_access(op, p, esize, c)?;
            let v = self.guarded(c, vec![others[0]], &mut |g| {
                let x = g.b.build_load(mem, p, "")?;
                Ok(vec![g.decode_mem(x, d)?])
            })?;
            self.report_checks(op, crate::record::LOAD)?;
            self.set(r, Reg::S(v[0]));
            return Ok(());
        }
        let (w, cuts) = self.copy_runs(op.args[0], mask.then(|| op.args[1]), &l, esize);
        // Dot-only operands stay in their memory type (half) from here on.
        let keep_half = self.half_regs.contains(&r);
        let others: Vec<BasicValueEnum> = if keep_half {
            let h = mem.into_float_type();
            let mut o = vec![];
            for x in &others {
                o.push(
                    self.b
                        .build_float_trunc(x.into_float_value(), h, "")?
                        .into(),
                );
            }
            o
        } else {
            others
        };
        let mut out = vec![];
        for g0 in (0..n).step_by(w) {
            let mut c = masks.as_ref().map(|m| m[g0].into_int_value());
            // A run a bound may cut: one vector where it is whole, element
            // by element where it is cut (the branch after the vector).
            let mut cut = None;
            if let (Some(cuts), Some(ms)) = (&cuts, &masks) {
                let (full, rest) = self.cut_run(op, cuts, &l, &t.shape, g0, w, esize, ms, &ptrs)?;
                c = Some(full);
                cut = Some(rest);
            }
            let p = ptrs[g0].into_pointer_value();
            let c = self.check_access(op, p, w * esize, c)?;
            let fallback: Vec<_> = (g0..g0 + w).map(|i| others[i]).collect();
            let vals = self.load_run(p, c, fallback, d, keep_half, w)?;
            let vals = match cut {
                Some((cut, elems)) => self.guarded(Some(cut), vals, &mut |g| {
                    let mut v = vec![];
                    for (j, &(p, m)) in elems.iter().enumerate() {
                        v.extend(g.guarded(m, vec![others[g0 + j]], &mut |g| {
                            let x = g.b.build_load(mem, p, "")?;
                            Ok(vec![if keep_half { x } else { g.decode_mem(x, d)? }])
                        })?);
                    }
                    Ok(v)
                })?,
                None => vals,
            };
            out.extend(vals);
        }
        self.report_checks(op, crate::record::LOAD)?;
        self.set(r, Reg::B(out));
        Ok(())
    }

    /// `w` elements from `p` where `cond` holds (all of them without a
    /// condition), else `fallback`: one predicated `ld.global` where it can
    /// be (see `predicated_load`), else a load behind a branch. Results are
    /// decoded to register form unless `keep_half`.
    pub(super) fn load_run(
        &mut self,
        p: PointerValue<'ctx>,
        c: Option<IntValue<'ctx>>,
        fallback: Vec<BasicValueEnum<'ctx>>,
        d: DType,
        keep_half: bool,
        w: usize,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let mem = self.mem_type(d);
        let esize = d.size_bytes();
        let global = p.get_type().get_address_space() == AddressSpace::from(1u16);
        if let (Some(cond), true) = (c, global && (w * esize).is_multiple_of(4)) {
            let raw = self.predicated_load(p, cond, &fallback, d, keep_half, w)?;
            if keep_half {
                return Ok(raw);
            }
            let mut v = vec![];
            for x in raw {
                v.push(self.decode_mem(x, d)?);
            }
            Ok(v)
        } else if w == 1 {
            self.guarded(c, fallback, &mut |g| {
                let x = g.b.build_load(mem, p, "")?;
                Ok(vec![if keep_half { x } else { g.decode_mem(x, d)? }])
            })
        } else {
            let vt = mem_vec_type(mem, w as u32);
            self.guarded(c, fallback, &mut |g| {
                let x = g.b.build_load(vt, p, "")?;
                if let Some(inst) = x.as_instruction_value() {
                    let _ = inst.set_alignment((w * esize) as u32);
                }
                let mut v = vec![];
                for j in 0..w {
                    let e =
                        g.b.build_extract_element(x.into_vector_value(), g.i32c(j as i64), "")?;
                    v.push(if keep_half { e } else { g.decode_mem(e, d)? });
                }
                Ok(v)
            })
        }
    }

    /// `vals` stored to global `p` where `cond` holds, by one predicated
    /// `st.global` (Triton's form) instead of a branch around the store.
    /// Only with `Features::predicated_stores`: the runtime's second build
    /// of a kernel that spills, or `TILEBOOK_PRED_STORES=1` (see
    /// `predicated_load` for why stores keep their branch by default).
    fn predicated_store(
        &self,
        p: PointerValue<'ctx>,
        cond: IntValue<'ctx>,
        vals: &[BasicValueEnum<'ctx>],
        d: DType,
    ) -> R<()> {
        let words = self.to_words(vals, d, false)?;
        let n = words.len();
        let regs: Vec<String> = (0..n).map(|j| format!("${}", j + 2)).collect();
        let text = if n == 1 {
            "@$0 st.global.b32 [$1], $2;".to_string()
        } else {
            format!("@$0 st.global.v{n}.b32 [$1], {{{}}};", regs.join(", "))
        };
        let constraints = format!("b,l,{}", vec!["r"; n].join(","));
        let i64t = self.ctx.i64_type();
        let mut args: Vec<BasicValueEnum> =
            vec![cond.into(), self.b.build_ptr_to_int(p, i64t, "")?.into()];
        args.extend(words.iter().map(|&w| BasicValueEnum::from(w)));
        self.ptx_asm(&text, &constraints, &args)
    }

    /// `w` elements from global `p` where `cond` holds, else `other`, by one
    /// predicated `ld.global` (as Triton emits) rather than a branch around a
    /// load: with a branch LLVM moves each element's conversion into the
    /// branch, so a loaded fp16 row lives in fp32 registers from the load on
    /// (a 16384-column layer norm held w and b as 128 fp32 registers). The
    /// result is in memory form (`mem_type`). `w * size` is 4, 8 or 16 bytes.
    /// Stores keep their branch: measured on the H100, predicated stores
    /// made ptxas hold more registers (softmax at 16384 columns: 60 -> 94,
    /// 2910 -> 2710 GB/s), while predicated loads with branched stores were
    /// the best of the four combinations on every row measured. On the H200
    /// (session 37) they gained 15 % where a kernel spills (the 16384-column
    /// layer-norm backward) and lost 6 % where it does not.
    fn predicated_load(
        &self,
        p: PointerValue<'ctx>,
        cond: IntValue<'ctx>,
        other: &[BasicValueEnum<'ctx>],
        d: DType,
        other_in_mem_form: bool,
        w: usize,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let words = self.to_words(other, d, other_in_mem_form)?;
        let n = words.len();
        // Operands: $0.. the loaded words, $n the address, $n+1 the
        // predicate, then `other`'s words, moved in first so that they stay
        // where `cond` fails.
        let outs: Vec<String> = (0..n).map(|j| format!("${j}")).collect();
        let mut text: String = (0..n)
            .map(|j| format!("mov.b32 ${j}, ${};\n\t", n + 2 + j))
            .collect();
        text += &if n == 1 {
            format!("@${} ld.global.b32 $0, [${n}];", n + 1)
        } else {
            format!(
                "@${} ld.global.v{n}.b32 {{{}}}, [${n}];",
                n + 1,
                outs.join(", ")
            )
        };
        let constraints = format!(
            "{}l,b,{},~{{memory}}",
            "=r,".repeat(n),
            vec!["r"; n].join(",")
        );
        let i32t = self.ctx.i32_type();
        let ret: BasicTypeEnum = if n == 1 {
            i32t.into()
        } else {
            self.ctx.struct_type(&vec![i32t.into(); n], false).into()
        };
        let i64t = self.ctx.i64_type();
        let mut args: Vec<BasicValueEnum> =
            vec![self.b.build_ptr_to_int(p, i64t, "")?.into(), cond.into()];
        args.extend(words.iter().map(|&w| BasicValueEnum::from(w)));
        let r = self.ptx_value(&text, &constraints, ret, true, &args)?;
        let wt = i32t.vec_type(n as u32);
        let mut packed = wt.const_zero();
        for j in 0..n {
            let x = if n == 1 {
                r
            } else {
                self.b
                    .build_extract_value(r.into_struct_value(), j as u32, "")?
            };
            packed =
                self.b
                    .build_insert_element(packed, x.into_int_value(), self.i32c(j as i64), "")?;
        }
        let vt = mem_vec_type(self.mem_type(d), w as u32);
        let x = self.b.build_bit_cast(packed, vt, "")?.into_vector_value();
        let mut out = vec![];
        for j in 0..w {
            out.push(self.b.build_extract_element(x, self.i32c(j as i64), "")?);
        }
        Ok(out)
    }

    /// Values of dtype `d` packed into 32-bit words, as memory holds them.
    fn to_words(
        &self,
        vals: &[BasicValueEnum<'ctx>],
        d: DType,
        in_mem_form: bool,
    ) -> R<Vec<IntValue<'ctx>>> {
        let vt = mem_vec_type(self.mem_type(d), vals.len() as u32);
        let mut v = vt.const_zero();
        for (j, &x) in vals.iter().enumerate() {
            let m = if in_mem_form {
                x
            } else {
                self.encode_mem(x, d)?
            };
            v = self.b.build_insert_element(v, m, self.i32c(j as i64), "")?;
        }
        let n = vals.len() * d.size_bytes() / 4;
        let wt = self.ctx.i32_type().vec_type(n as u32);
        let vw = self.b.build_bit_cast(v, wt, "")?.into_vector_value();
        (0..n)
            .map(|j| {
                Ok(self
                    .b
                    .build_extract_element(vw, self.i32c(j as i64), "")?
                    .into_int_value())
            })
            .collect()
    }

    pub(super) fn store(&mut self, op: &Op, mask: bool) -> R<()> {
        if self.tma_store(op)? {
            return Ok(());
        }
        let pt = self.ty(op.args[0]).clone();
        let d = pt.elem.pointee().unwrap_or(DType::F32);
        let mem = self.mem_type(d);
        let esize = d.size_bytes();
        let l = self.layout(&pt);
        let n = l.regs();
        let ptrs = self.regs(op.args[0], n)?;
        let vals = self.regs(op.args[1], n)?;
        let masks = if mask {
            Some(self.regs(op.args[2], n)?)
        } else {
            None
        };
        // Replicated elements: only the first holder writes.
        let owner = self.first_holder(&l)?;
        let (w, cuts) = if pt.is_block() {
            self.copy_runs(op.args[0], mask.then(|| op.args[2]), &l, esize)
        } else {
            (1, None)
        };
        let predicable = (w * esize).is_multiple_of(4) && w * esize <= 16;
        for g0 in (0..n).step_by(w) {
            let mut c = masks.as_ref().map(|m| m[g0].into_int_value());
            if let (Some(cuts), Some(ms)) = (&cuts, &masks) {
                // A run a bound may cut: whole runs as one vector, cut ones
                // element by element.
                let (full, (cut, elems)) =
                    self.cut_run(op, cuts, &l, &pt.shape, g0, w, esize, ms, &ptrs)?;
                let cut = match owner {
                    Some(o) => self.b.build_and(cut, o, "")?,
                    None => cut,
                };
                self.guarded(Some(cut), vec![], &mut |g| {
                    for (j, &(p, m)) in elems.iter().enumerate() {
                        let v = vals[g0 + j];
                        g.guarded(m, vec![], &mut |g| {
                            let x = g.encode_mem(v, d)?;
                            g.b.build_store(p, x)?;
                            Ok(vec![])
                        })?;
                    }
                    Ok(vec![])
                })?;
                c = Some(full);
            }
            if let Some(o) = owner {
                c = Some(match c {
                    Some(m) => self.b.build_and(m, o, "")?,
                    None => o,
                });
            }
            let p = ptrs[g0].into_pointer_value();
            let c = self.check_access(op, p, w * esize, c)?;
            let group: Vec<_> = vals[g0..g0 + w].to_vec();
            let global = p.get_type().get_address_space() == AddressSpace::from(1u16);
            if let (Some(cond), true) = (c, predicable && global) {
                if self.predicated_stores {
                    self.predicated_store(p, cond, &group, d)?;
                    continue;
                }
                if self.loops > 0 {
                    self.branched_stores.set(true);
                }
            }
            self.guarded(c, vec![], &mut |g| {
                if w == 1 {
                    let x = g.encode_mem(group[0], d)?;
                    g.b.build_store(p, x)?;
                } else {
                    let vt = mem_vec_type(mem, w as u32);
                    let mut vec_v = vt.const_zero();
                    for (j, v) in group.iter().enumerate() {
                        let m = g.encode_mem(*v, d)?;
                        vec_v = g.b.build_insert_element(vec_v, m, g.i32c(j as i64), "")?;
                    }
                    let s = g.b.build_store(p, vec_v)?;
                    let _ = s.set_alignment((w * esize) as u32);
                }
                Ok(vec![])
            })?;
        }
        self.report_checks(op, crate::record::STORE)
    }

    // ------------------------------------------------------------ shared memory

    /// Bytes a slot of one element takes in shared memory.
    pub(super) fn slot_size(&self, e: Elem) -> usize {
        match e {
            Elem::Ptr(_) => 8,
            Elem::Scalar(d) if d.bits() == 64 => 8,
            _ => 4,
        }
    }

    pub(super) fn smem_addr(
        &self,
        base: usize,
        idx: IntValue<'ctx>,
        size: usize,
    ) -> R<PointerValue<'ctx>> {
        let off = self.b.build_int_mul(idx, self.i32c(size as i64), "")?;
        let off = self
            .b
            .build_int_add(off, self.i32c((self.scratch + base) as i64), "")?;
        let off = match self.smem_shift.get() {
            Some(shift) => self.b.build_int_add(off, shift, "")?,
            None => off,
        };
        // SAFETY: offsets stay inside the dynamic shared memory sized by `smem_bytes`.
        Ok(unsafe {
            self.b
                .build_gep(self.ctx.i8_type(), self.smem, &[off], "")?
        })
    }

    /// The 32-bit shared-memory address of byte `off` of the dynamic shared
    /// memory (what `ldmatrix` and `cp.async` take).
    pub(super) fn smem_u32(&self, off: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let base = self
            .b
            .build_ptr_to_int(self.smem, self.ctx.i32_type(), "")?;
        Ok(self.b.build_int_add(base, off, "")?)
    }

    pub(super) fn slot_type(&self, e: Elem) -> BasicTypeEnum<'ctx> {
        match e {
            Elem::Ptr(_) => self.ctx.i64_type().into(),
            Elem::Scalar(d) if d.is_float() => scalar_type(self.ctx, d),
            Elem::Scalar(d) if d.bits() == 64 => self.ctx.i64_type().into(),
            Elem::Scalar(_) => self.ctx.i32_type().into(),
        }
    }

    pub(super) fn smem_store(
        &self,
        base: usize,
        idx: IntValue<'ctx>,
        e: Elem,
        v: BasicValueEnum<'ctx>,
    ) -> R<()> {
        let size = self.slot_size(e);
        let p = self.smem_addr(base, idx, size)?;
        let st = self.slot_type(e);
        let x: BasicValueEnum = match e {
            Elem::Ptr(_) => self
                .b
                .build_ptr_to_int(v.into_pointer_value(), self.ctx.i64_type(), "")?
                .into(),
            Elem::Scalar(d)
                if d.is_int()
                    && st.into_int_type().get_bit_width()
                        != v.into_int_value().get_type().get_bit_width() =>
            {
                self.b
                    .build_int_cast_sign_flag(
                        v.into_int_value(),
                        st.into_int_type(),
                        !unsigned(Some(d)),
                        "",
                    )?
                    .into()
            }
            _ => v,
        };
        self.b.build_store(p, x)?;
        Ok(())
    }

    pub(super) fn smem_load(
        &self,
        base: usize,
        idx: IntValue<'ctx>,
        e: Elem,
    ) -> R<BasicValueEnum<'ctx>> {
        let size = self.slot_size(e);
        let p = self.smem_addr(base, idx, size)?;
        let st = self.slot_type(e);
        let x = self.b.build_load(st, p, "")?;
        Ok(match e {
            Elem::Ptr(_) => self
                .b
                .build_int_to_ptr(
                    x.into_int_value(),
                    self.ctx.ptr_type(AddressSpace::from(1u16)),
                    "",
                )?
                .into(),
            Elem::Scalar(d) if d.is_int() => {
                let rt = scalar_type(self.ctx, d).into_int_type();
                if rt.get_bit_width() != st.into_int_type().get_bit_width() {
                    self.b
                        .build_int_truncate(x.into_int_value(), rt, "")?
                        .into()
                } else {
                    x
                }
            }
            _ => x,
        })
    }

    /// Write a block (or scalar) into shared memory at `base`; returns bytes used.
    pub(super) fn spill(&mut self, v: Value, base: usize) -> R<usize> {
        let t = self.ty(v).clone();
        let l = self.layout(&t);
        let size = self.slot_size(t.elem);
        let regs = self.regs(v, l.regs())?;
        for (r, x) in regs.iter().enumerate() {
            let idx = if t.is_block() {
                self.elem_index(&l, r)?
            } else {
                self.i32c(0)
            };
            self.smem_store(base, idx, t.elem, *x)?;
        }
        let bytes = t.numel().max(1) * size;
        self.need_smem(base + bytes);
        Ok(bytes)
    }

    /// Row-major strides of a shape.
    pub(super) fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![1; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1];
        }
        s
    }

    /// The multi-index of linear element `e` in `shape`.
    pub(super) fn unravel(&self, e: IntValue<'ctx>, shape: &[usize]) -> R<Vec<IntValue<'ctx>>> {
        let st = Self::strides(shape);
        let mut out = vec![];
        for (d, &s) in st.iter().enumerate() {
            let q = self.b.build_int_unsigned_div(e, self.i32c(s as i64), "")?;
            out.push(
                self.b
                    .build_int_unsigned_rem(q, self.i32c(shape[d] as i64), "")?,
            );
        }
        Ok(out)
    }

    /// Whether `v` can be recomputed at any index from aranges, splats,
    /// constants, shape ops and elementwise ops, within `budget` nodes.
    pub(super) fn can_remat(&self, v: Value, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if !self.ty(v).is_block() {
            return matches!(self.vals.get(&v), Some(Reg::S(_)));
        }
        if self.mma.contains_key(&v) || self.rows.contains_key(&v) {
            return false;
        }
        let Some(op) = self.defs.get(&v).copied() else {
            return false;
        };
        match &op.kind {
            OpKind::Const(_) | OpKind::Arange(..) | OpKind::Splat => true,
            OpKind::ExpandDims(_) | OpKind::Reshape | OpKind::Broadcast | OpKind::Trans(_) => {
                self.can_remat(op.args[0], budget)
            }
            k if k.is_elementwise() => op.args.iter().all(|&a| self.can_remat(a, budget)),
            _ => false,
        }
    }

    /// The element of `v` at multi-index `idx` (of `v`'s shape), recomputed.
    pub(super) fn remat(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let t = self.ty(v).clone();
        if !t.is_block() {
            return self.scalar(v);
        }
        let op = self
            .defs
            .get(&v)
            .copied()
            .ok_or_else(|| GenError("remat of an undefined value".into()))?;
        match &op.kind {
            OpKind::Const(c) => self.constant(*c, t.elem),
            OpKind::Arange(start, _) => {
                Ok(self.b.build_int_add(idx[0], self.i32c(*start), "")?.into())
            }
            OpKind::Splat => self.scalar(op.args[0]),
            OpKind::ExpandDims(axis) => {
                let mut i = idx.to_vec();
                i.remove(*axis);
                self.remat(op.args[0], &i)
            }
            OpKind::Reshape => {
                let strides = Self::strides(&t.shape);
                let mut lin = self.i32c(0);
                for (d, s) in strides.iter().enumerate() {
                    let x = self.b.build_int_mul(idx[d], self.i32c(*s as i64), "")?;
                    lin = self.b.build_int_add(lin, x, "")?;
                }
                let src_shape = self.ty(op.args[0]).shape.clone();
                let i = self.unravel(lin, &src_shape)?;
                self.remat(op.args[0], &i)
            }
            OpKind::Broadcast => {
                let src_shape = self.ty(op.args[0]).shape.clone();
                let i: Vec<_> = idx
                    .iter()
                    .zip(&src_shape)
                    .map(|(x, &n)| if n == 1 { self.i32c(0) } else { *x })
                    .collect();
                self.remat(op.args[0], &i)
            }
            OpKind::Trans(perm) => {
                let mut i = idx.to_vec();
                for (d, &p) in perm.iter().enumerate() {
                    i[p] = idx[d];
                }
                self.remat(op.args[0], &i)
            }
            _ => {
                let mut args = vec![];
                for &a in &op.args {
                    args.push(self.remat(a, idx)?);
                }
                self.elementwise(op, &args)
            }
        }
    }

    pub(super) fn permute_through_smem(&mut self, op: &Op) -> R<()> {
        let (src, r) = (op.args[0], op.results[0]);
        let st = self.ty(src).clone();
        let rt = self.ty(r).clone();
        if matches!(op.kind, OpKind::Broadcast) && self.can_remat(src, &mut 64) {
            // Recompute each element in place: no shared memory, no barrier.
            let l = self.layout(&rt);
            let mut out = vec![];
            for reg in 0..l.regs() {
                let idx = self.elem_coords(&l, reg, &rt.shape)?;
                let src_idx: Vec<_> = idx
                    .iter()
                    .zip(&st.shape)
                    .map(|(x, &n)| if n == 1 { self.i32c(0) } else { *x })
                    .collect();
                out.push(self.remat(src, &src_idx)?);
            }
            self.set(r, Reg::B(out));
            return Ok(());
        }
        self.barrier()?;
        self.spill(src, 0)?;
        self.barrier()?;
        let sstr = Self::strides(&st.shape);
        let l = self.layout(&rt);
        let mut out = vec![];
        for reg in 0..l.regs() {
            let idx = self.elem_coords(&l, reg, &rt.shape)?;
            let mut s = self.i32c(0);
            for (d, i) in idx.iter().enumerate() {
                let (sd, stride) = match &op.kind {
                    OpKind::Trans(perm) => (perm[d], sstr[perm[d]]),
                    _ => (d, sstr[d]),
                };
                if st.shape[sd] == 1 {
                    continue;
                }
                let t = self.b.build_int_mul(*i, self.i32c(stride as i64), "")?;
                s = self.b.build_int_add(s, t, "")?;
            }
            out.push(self.smem_load(0, s, st.elem)?);
        }
        self.barrier()?;
        self.set(r, Reg::B(out));
        Ok(())
    }
}
