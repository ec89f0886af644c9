//! `tl.dot` on tensor cores: MMA-layout coordinates and conversions, the
//! double-buffered operand tiles, `ldmatrix` and `mma.sync`.

use super::wgmma::WgmmaOperands;
use super::*;

/// One `mma.sync` instruction as inline assembly.
#[derive(Copy, Clone)]
pub(super) struct MmaAsm<'ctx> {
    fn_ty: inkwell::types::FunctionType<'ctx>,
    asm: PointerValue<'ctx>,
}

impl<'ctx> Gen<'ctx, '_> {
    // ------------------------------------------------------------ tensor cores

    /// (warp_m, warp_n, g = lane / 4, t = lane % 4) of this thread.
    /// Computed in the entry block: they depend on the thread index only.
    pub(super) fn mma_coords(&self, l: &MmaLayout) -> R<[IntValue<'ctx>; 4]> {
        let p = &self.pre;
        let warp = p.build_int_unsigned_div(self.tid, self.i32c(32), "")?;
        let lane = p.build_int_unsigned_rem(self.tid, self.i32c(32), "")?;
        let wm = p.build_int_unsigned_rem(warp, self.i32c(l.wm as i64), "")?;
        let wn = p.build_int_unsigned_div(warp, self.i32c(l.wm as i64), "")?;
        let g = p.build_int_unsigned_div(lane, self.i32c(4), "")?;
        let t = p.build_int_unsigned_rem(lane, self.i32c(4), "")?;
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
        let row = if l.wgmma {
            // Warpgroup `wm / 4` owns a slab of M; its instruction tiles are
            // 64 rows, of which warp `wm % 4` holds 16.
            let group = self.b.build_right_shift(wm, self.i32c(2), false, "")?;
            let within = self.b.build_and(wm, self.i32c(3), "")?;
            let slab =
                self.b
                    .build_int_mul(group, self.i32c((l.m / l.warpgroups().0) as i64), "")?;
            let w16 = self.b.build_int_mul(within, self.i32c(16), "")?;
            let row = self.b.build_int_add(slab, w16, "")?;
            self.b.build_int_add(row, g, "")?
        } else {
            let row = self
                .b
                .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
            self.b.build_int_add(row, g, "")?
        };
        let (dr, dc) = mma_offset(l, rm, rn, r);
        let row = self.b.build_int_add(row, self.i32c(dr as i64), "")?;
        let col = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let col = self
            .b
            .build_int_add(col, self.b.build_int_mul(t, self.i32c(2), "")?, "")?;
        let col = self.b.build_int_add(col, self.i32c(dc as i64), "")?;
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

    /// Convert an MMA-layout accumulator to the blocked layout through shared
    /// memory. Rows are padded by 8 floats: a half-warp's 8-byte stores (four
    /// rows of four lanes) then fall on distinct banks.
    /// How an MMA value's element type is kept in shared memory while it
    /// changes layout, and its size in bytes: fp16/bf16 (held in f32
    /// registers) as halves, `i1` as bytes, everything else (fp32, int32) as
    /// its register type.
    pub(super) fn storage_type(&self, t: &Type) -> (BasicTypeEnum<'ctx>, usize) {
        match t.dtype() {
            Some(DType::F16) => (self.ctx.f16_type().into(), 2),
            Some(DType::BF16) => (self.ctx.bf16_type().into(), 2),
            Some(DType::I1) => (self.ctx.i8_type().into(), 1),
            _ => (self.reg_type(t.elem), 4),
        }
    }

    /// A register value in `storage_type` form, and back.
    pub(super) fn storage_of(
        &self,
        x: BasicValueEnum<'ctx>,
        st: BasicTypeEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if x.get_type() == st {
            return Ok(x);
        }
        Ok(match st {
            BasicTypeEnum::FloatType(f) => self
                .b
                .build_float_trunc(x.into_float_value(), f, "")?
                .into(),
            BasicTypeEnum::IntType(i) => {
                self.b.build_int_z_extend(x.into_int_value(), i, "")?.into()
            }
            _ => x,
        })
    }

    /// Two registers as a vector of two elements of storage type `et`.
    /// fp16/bf16 values live as f32 registers that are rounded f32 results
    /// (`fpext(fptrunc(x))`): those convert pairwise from the unrounded
    /// `x`s in one `cvt.rn.f16x2.f32` (or `bf16x2`), the rounding being
    /// the same, instead of a conversion each and a move to pack them
    /// (the conversion unit takes a pair a cycle; the tutorial matmul's
    /// epilogue converts 128 values a thread).
    pub(super) fn storage_pair(
        &self,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        et: BasicTypeEnum<'ctx>,
    ) -> R<inkwell::values::VectorValue<'ctx>> {
        let unrounded = |x: BasicValueEnum<'ctx>| -> Option<BasicValueEnum<'ctx>> {
            use inkwell::values::InstructionOpcode as Op;
            let ext = x.as_instruction_value()?;
            if ext.get_opcode() != Op::FPExt {
                return None;
            }
            let trunc = ext.get_operand(0)?.value()?.as_instruction_value()?;
            if trunc.get_opcode() != Op::FPTrunc
                || trunc.get_type() != inkwell::types::AnyType::as_any_type_enum(&et)
            {
                return None;
            }
            let y = trunc.get_operand(0)?.value()?;
            (y.get_type() == self.ctx.f32_type().into()).then_some(y)
        };
        let cvt = if et == self.ctx.f16_type().into() {
            Some("cvt.rn.f16x2.f32 $0, $2, $1;")
        } else if et == self.ctx.bf16_type().into() {
            Some("cvt.rn.bf16x2.f32 $0, $2, $1;")
        } else {
            None
        };
        let vt = mem_vec_type(et, 2);
        if let (Some(text), Some(x), Some(y)) = (cvt, unrounded(a), unrounded(b)) {
            let bits =
                self.ptx_value(text, "=r,f,f", self.ctx.i32_type().into(), false, &[x, y])?;
            return Ok(self.b.build_bit_cast(bits, vt, "")?.into_vector_value());
        }
        let mut pair = vt.get_undef();
        for (j, x) in [a, b].into_iter().enumerate() {
            let x = self.storage_of(x, et)?;
            pair = self
                .b
                .build_insert_element(pair, x, self.i32c(j as i64), "")?;
        }
        Ok(pair)
    }

    fn register_of(
        &self,
        x: BasicValueEnum<'ctx>,
        rt: BasicTypeEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if x.get_type() == rt {
            return Ok(x);
        }
        Ok(match rt {
            BasicTypeEnum::FloatType(f) => {
                self.b.build_float_ext(x.into_float_value(), f, "")?.into()
            }
            BasicTypeEnum::IntType(i) => {
                self.b.build_int_truncate(x.into_int_value(), i, "")?.into()
            }
            _ => x,
        })
    }

    pub(super) fn mma_to_blocked(&self, v: Value, l: &MmaLayout) -> R<Vec<BasicValueEnum<'ctx>>> {
        if let Some((_, _, regs)) = self.converted.borrow().iter().find(|(_, x, _)| *x == v) {
            return Ok(regs.clone());
        }
        let regs = self.raw(v)?;
        let t = self.ty(v).clone();
        let bl = self.layout(&t);
        let c = self.mma_coords(l)?;
        // Elements kept in their storage type (halves for fp16, four bytes
        // for fp32/int32); rows padded by 8 elements, so that the eight rows
        // a warp's paired stores touch start in different banks.
        let rt = self.reg_type(t.elem);
        let (et, size) = self.storage_type(&t);
        let row_len = l.n + 8;
        // Rows start at multiples of this many bytes (at most 16).
        let row_align = 1usize << (row_len * size).trailing_zeros().min(4);
        let at = |row: IntValue<'ctx>, col: IntValue<'ctx>| -> R<PointerValue<'ctx>> {
            let idx = self.b.build_int_mul(row, self.i32c(row_len as i64), "")?;
            let idx = self.b.build_int_add(idx, col, "")?;
            self.smem_addr(0, idx, size)
        };
        self.barrier()?;
        // One address per thread; each pair's is a constant away from it
        // (`mma_offset`), so the stores take immediate offsets instead of
        // an address computation each.
        let (row0, col0) = self.mma_pos(l, &c, 0, 0, 0)?;
        let p0 = at(row0, col0)?;
        for i in (0..regs.len()).step_by(2) {
            let (rep, r) = (i / 4, i % 4);
            let (rm, rn) = (rep / l.reps_n(), rep % l.reps_n());
            let (dr, dc) = mma_offset(l, rm, rn, r);
            let off = self.i32c(((dr * row_len + dc) * size) as i64);
            // SAFETY: inside the `l.m * row_len` elements reserved below.
            let p = unsafe { self.b.build_gep(self.ctx.i8_type(), p0, &[off], "")? };
            let pair = self.storage_pair(regs[i], regs[i + 1], et)?;
            let st = self.b.build_store(p, pair)?;
            let _ = st.set_alignment(2 * size as u32);
        }
        self.need_smem(l.m * row_len * size);
        self.barrier()?;
        let mut out = vec![];
        let shape = [l.m, l.n];
        let w = if bl.is_pow2() && !bl.replicated() {
            bl.vec.min(row_align / size).max(1)
        } else {
            1
        };
        // Power-of-two blocks: each register's coordinates are thread bits
        // plus a constant (`elem_coords`), so its address is a constant away
        // from register 0's.
        let fixed = bl.is_pow2() && !bl.replicated() && shape.iter().all(|d| d.is_power_of_two());
        let p0 = if fixed {
            let rc = self.elem_coords(&bl, 0, &shape)?;
            Some(at(rc[0], rc[1])?)
        } else {
            None
        };
        for r in (0..bl.regs()).step_by(w) {
            let p = match p0 {
                Some(p0) => {
                    let c = bl.base(r);
                    let (kr, kc) = ((c / l.n) & (l.m - 1), c & (l.n - 1));
                    let off = self.i32c(((kr * row_len + kc) * size) as i64);
                    // SAFETY: inside the `l.m * row_len` elements reserved above.
                    unsafe { self.b.build_gep(self.ctx.i8_type(), p0, &[off], "")? }
                }
                None => {
                    let rc = self.elem_coords(&bl, r, &shape)?;
                    at(rc[0], rc[1])?
                }
            };
            if w == 1 {
                let x = self.b.build_load(et, p, "")?;
                out.push(self.register_of(x, rt)?);
                continue;
            }
            let ld = self.b.build_load(mem_vec_type(et, w as u32), p, "")?;
            let _ = ld
                .as_instruction_value()
                .map(|i| i.set_alignment((size * w) as u32));
            for j in 0..w {
                let x = self.b.build_extract_element(
                    ld.into_vector_value(),
                    self.i32c(j as i64),
                    "",
                )?;
                out.push(self.register_of(x, rt)?);
            }
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
        let c = self.mma_coords(l)?;
        let mut at = vec![];
        for i in 0..l.regs() {
            at.push(self.mma_linear(l, &c, i)?);
        }
        self.through_smem(v, &at)
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
            let rows = (lay.n / cols).max(1);
            let rc = self.elem_coords(lay, g0, &[rows, cols])?;
            let (row, col) = (rc[0], rc[1]);
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

    /// `ldmatrix.sync.aligned.m8n8.x{count}[.trans]` at this lane's shared
    /// byte offset `off`: `count` 8x8 half matrices, one 32-bit register each.
    pub(super) fn ldmatrix(
        &self,
        off: IntValue<'ctx>,
        count: usize,
        trans: bool,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let i32t = self.ctx.i32_type();
        let addr = self.smem_u32(off)?;
        let ret = self.ctx.struct_type(&vec![i32t.into(); count], false);
        let fn_ty = ret.fn_type(&[i32t.into()], false);
        let outs: Vec<String> = (0..count).map(|i| format!("${i}")).collect();
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!(
                "ldmatrix.sync.aligned.m8n8.x{count}{}.shared.b16 {{{}}}, [${count}];",
                if trans { ".trans" } else { "" },
                outs.join(", ")
            ),
            format!("{}r", "=r,".repeat(count)),
            true,
            false,
            None,
            false,
        );
        let call = self
            .b
            .build_indirect_call(fn_ty, asm, &[addr.into()], "ldm")?;
        self.asm_results(call, count)
    }

    /// The `n` results of an inline-assembly call returning a struct.
    pub(super) fn asm_results(
        &self,
        call: inkwell::values::CallSiteValue<'ctx>,
        n: usize,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let s = call
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError("inline assembly without results".into()))?
            .into_struct_value();
        (0..n)
            .map(|i| Ok(self.b.build_extract_value(s, i as u32, "")?))
            .collect()
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

    pub(super) fn dot_mma(&mut self, op: &Op, l: &MmaLayout) -> R<()> {
        if !l.kind.is_half() && !l.wgmma {
            return self.dot_mma_narrow(op, l);
        }
        let (a, acc, r) = (op.args[0], op.args[2], op.results[0]);
        // A K-major B layout reads the tile of the block `b.T` transposes.
        let bm = self.tile_plan.tile_of(op.args[1]);
        // The accumulator in MMA registers (converting first, before smem holds the operands).
        let mut accs = if self.mma.contains_key(&acc) {
            self.raw(acc)?
        } else {
            self.blocked_to_mma(acc, l)?
        };
        let rk = l.row_k();
        let rn = l.row_n();
        // A's fragments straight from registers, B stored untransposed.
        let mut a_frags = None;
        let mut b_trans = None;
        // Byte offsets of the A and B tiles in shared memory.
        let (a_off, b_off) = if self.dot_tiled(op) {
            // Copied there by `cp.async` (see `async_copy`); A's fragments
            // from registers under `a_regs`.
            let a_regs = match l.a_regs {
                true => Some(self.a_fragments_from_acc(a, l)?.ok_or_else(|| {
                    GenError("a register-A wgmma dot without A fragments".into())
                })?),
                false => None,
            };
            let a_off = match a_regs {
                Some(_) => self.i32c(0),
                None => self.raw(a)?[0].into_int_value(),
            };
            let b_off = self.raw(bm)?[0].into_int_value();
            let b_off = self.wait_tiles(l, a, bm, l.wgmma)?.unwrap_or(b_off);
            if l.wgmma {
                // A zero accumulator (`tl.zeros`, attention's scores) is not
                // read: the first k-step runs with `scale-d` off.
                let zero = matches!(
                    self.defs.get(&acc).map(|d| &d.kind),
                    Some(OpKind::Const(c)) if c.as_f64() == 0.0
                );
                if zero {
                    let f32t = self.ctx.f32_type();
                    accs = vec![f32t.get_undef().into(); accs.len()];
                }
                let operands = WgmmaOperands {
                    a_off,
                    a_regs: a_regs.as_ref(),
                    b_off,
                    zero,
                };
                let accs = self.dot_wgmma(l, operands, accs, r)?;
                self.set(r, Reg::B(accs));
                return Ok(());
            }
            (a_off, b_off)
        } else {
            // From registers. Double buffering: successive dots alternate
            // between two copies of the operand tiles, so writing tile i+1
            // cannot disturb readers of tile i; one barrier per dot remains
            // (between writing and reading).
            a_frags = match self.hoisted.get(&r) {
                Some(f) => Some(f.clone()),
                None => self.a_fragments_from_acc(a, l)?,
            };
            b_trans = self.transposed_b(bm);
            let b_src = b_trans.unwrap_or(bm);
            let bt = self.ty(b_src).clone();
            let lb = self.layout(&bt);
            let a_regs = match a_frags {
                Some(_) => None,
                None => {
                    let at = self.ty(a).clone();
                    let la = self.layout(&at);
                    Some((self.regs(a, la.regs())?, la))
                }
            };
            let b_regs = self.regs(b_src, lb.regs())?;
            // Both tiles as halves with padded rows (fp8 operands too: they
            // are exact in fp16). The sizes are the halves' own: a layout
            // chosen for `wgmma` whose operands stayed in registers has
            // `b_base`/`smem_bytes` of its swizzled tiles (fp8: one byte an
            // element, no padding), smaller than these, so the tiles of one
            // dot overlapped each other and the next dot's (wrong, racy sums
            // on the H100).
            let a_bytes = l.m * rk * 2;
            let shift = self.dot_buffer_shift()?;
            self.smem_shift.set(Some(shift));
            let bf16 = l.kind == MmaKind::BF16;
            if let Some((a_regs, la)) = a_regs {
                self.store_tile(0, &la, &a_regs, l.k, rk, bf16)?;
            }
            if b_trans.is_some() {
                self.store_tile(a_bytes, &lb, &b_regs, l.k, rk, bf16)?;
            } else {
                self.store_tile(a_bytes, &lb, &b_regs, l.n, rn, bf16)?;
            }
            self.operand_tiles_written_at(shift, a_bytes)?
        };
        let [_, wn, _, _] = self.mma_coords(l)?;
        let ty = if l.kind == MmaKind::BF16 {
            "bf16"
        } else {
            "f16"
        };
        let mma = self.mma_sync_asm(
            &format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32"),
            self.ctx.f32_type().into(),
        );
        // ldmatrix addressing: lane % 16 picks the row of a 16-row slab, lane / 16
        // the 8-column half (A: k, B: n).
        let lane16 = self.tid_field(1, 0, 15)?;
        let half = self.tid_field(1, 4, 1)?;
        let half8 = self.b.build_int_mul(half, self.i32c(8), "")?;
        let a_lane = self.a_lane(l, a_off)?;
        // B: rows k, columns of this warp's slab.
        let bcol = self
            .b
            .build_int_mul(wn, self.i32c((l.n / l.wn) as i64), "")?;
        let pairs = l.reps_n().is_multiple_of(2);
        let b_lane = if b_trans.is_some() {
            // `N x K` rows: lane % 8 picks n within the 8-column tile, bit 3
            // the k half, bit 4 the second n-tile of a pair.
            let n = self.b.build_and(lane16, self.i32c(7), "")?;
            let n = self.b.build_int_add(n, bcol, "")?;
            let n = if pairs {
                self.b.build_int_add(n, half8, "")?
            } else {
                n
            };
            let kh = self.b.build_and(lane16, self.i32c(8), "")?;
            let at = self.b.build_int_mul(n, self.i32c(rk as i64), "")?;
            self.b.build_int_add(at, kh, "")?
        } else {
            let at = self.b.build_int_mul(lane16, self.i32c(rn as i64), "")?;
            let at = self.b.build_int_add(at, bcol, "")?;
            if pairs {
                self.b.build_int_add(at, half8, "")?
            } else {
                at
            }
        };
        let b_lane = self.b.build_int_mul(b_lane, self.i32c(2), "")?;
        let b_lane = self.b.build_int_add(b_off, b_lane, "")?;
        for k0 in (0..l.k).step_by(16) {
            let afrag = match &a_frags {
                Some(f) => f[k0 / 16].clone(),
                None => self.a_fragment(l, a_lane, k0)?,
            };
            let mut bfrag = vec![];
            let step = if pairs { 2 } else { 1 };
            for rep_n in (0..l.reps_n()).step_by(step) {
                let off = if b_trans.is_some() {
                    (rep_n * 8 * rk + k0) * 2
                } else {
                    (k0 * rn + rep_n * 8) * 2
                };
                let at = self.b.build_int_add(b_lane, self.i32c(off as i64), "")?;
                let regs = self.ldmatrix(at, 2 * step, b_trans.is_none())?;
                bfrag.extend(regs.chunks(2).map(|c| [c[0], c[1]]));
            }
            for (rn_i, [b0, b1]) in bfrag.iter().enumerate() {
                for (rm, af) in afrag.iter().enumerate() {
                    let base = (rm * l.reps_n() + rn_i) * 4;
                    self.mma_call(mma, af, &[*b0, *b1], &mut accs[base..base + 4])?;
                }
            }
        }
        self.set(r, Reg::B(accs));
        Ok(())
    }

    /// This lane's `ldmatrix` byte offset into an A tile at `a_off` (rows
    /// of this warp's slab, row-major with `row_k` halves per row).
    pub(super) fn a_lane(&self, l: &MmaLayout, a_off: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let [wm, _, _, _] = self.mma_coords(l)?;
        let lane16 = self.tid_field(1, 0, 15)?;
        let half = self.tid_field(1, 4, 1)?;
        let half8 = self.b.build_int_mul(half, self.i32c(8), "")?;
        let arow = self
            .b
            .build_int_mul(wm, self.i32c((l.m / l.wm) as i64), "")?;
        let arow = self.b.build_int_add(arow, lane16, "")?;
        let a_lane = self
            .b
            .build_int_mul(arow, self.i32c(l.row_k() as i64), "")?;
        let a_lane = self.b.build_int_add(a_lane, half8, "")?;
        let a_lane = self.b.build_int_mul(a_lane, self.i32c(2), "")?;
        Ok(self.b.build_int_add(a_off, a_lane, "")?)
    }

    /// The A fragments of k-step `k0` (one per `rep_m`) by `ldmatrix`.
    pub(super) fn a_fragment(
        &self,
        l: &MmaLayout,
        a_lane: IntValue<'ctx>,
        k0: usize,
    ) -> R<Vec<Vec<BasicValueEnum<'ctx>>>> {
        let mut afrag = vec![];
        for rm in 0..l.reps_m() {
            let off = (rm * 16 * l.row_k() + k0) * 2;
            let at = self.b.build_int_add(a_lane, self.i32c(off as i64), "")?;
            afrag.push(self.ldmatrix(at, 4, false)?);
        }
        Ok(afrag)
    }

    /// The inline assembly of one `mma.sync` instruction `instr` (four A and
    /// two B registers of 32 bits, four accumulators of `acc`).
    pub(super) fn mma_sync_asm(&self, instr: &str, acc: BasicTypeEnum<'ctx>) -> MmaAsm<'ctx> {
        let i32t = self.ctx.i32_type();
        let ret = self.ctx.struct_type(&[acc; 4], false);
        let mut params = vec![inkwell::types::BasicMetadataTypeEnum::from(i32t); 6];
        params.extend([inkwell::types::BasicMetadataTypeEnum::from(acc); 4]);
        let fn_ty = ret.fn_type(&params, false);
        let c = if acc.is_float_type() { "=f" } else { "=r" };
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("{instr} {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, {{$10,$11,$12,$13}};"),
            format!("{c},{c},{c},{c},r,r,r,r,r,r,0,1,2,3"),
            false,
            false,
            None,
            false,
        );
        MmaAsm { fn_ty, asm }
    }

    /// Issue one `mma.sync`: `accs` (four registers) += A x B.
    pub(super) fn mma_call(
        &self,
        mma: MmaAsm<'ctx>,
        a: &[BasicValueEnum<'ctx>],
        b: &[BasicValueEnum<'ctx>],
        accs: &mut [BasicValueEnum<'ctx>],
    ) -> R<()> {
        let args: Vec<_> = a
            .iter()
            .chain(b)
            .chain(accs.iter())
            .map(|v| (*v).into())
            .collect();
        let call = self
            .b
            .build_indirect_call(mma.fn_ty, mma.asm, &args, "mma")?;
        let res = self.asm_results(call, 4)?;
        accs.copy_from_slice(&res);
        Ok(())
    }

    /// A per-thread counter starting at 0 (tensor-core dots for the double
    /// buffer, ring stages for `cp.async`), kept in a stack slot at the top of
    /// the entry block that LLVM promotes to registers.
    pub(super) fn counter_slot(&self) -> R<PointerValue<'ctx>> {
        let entry = self
            .func
            .get_first_basic_block()
            .ok_or_else(|| GenError("no entry block".into()))?;
        let tb = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tb.position_before(&i),
            None => tb.position_at_end(entry),
        }
        let slot = tb.build_alloca(i32_type(self.ctx), "counter")?;
        tb.build_store(slot, self.i32c(0))?;
        Ok(slot)
    }
}

/// The constant part of MMA register `(rep_m, rep_n, r)`'s row and column:
/// `mma_pos(rm, rn, r)` is `mma_pos(0, 0, 0)` plus this.
pub(super) fn mma_offset(l: &MmaLayout, rm: usize, rn: usize, r: usize) -> (usize, usize) {
    let rep_rows = if l.wgmma { 64 } else { 16 };
    (rm * rep_rows + 8 * (r / 2), rn * 8 + r % 2)
}
