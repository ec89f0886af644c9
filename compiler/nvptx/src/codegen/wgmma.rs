//! `tl.dot` on Hopper's warpgroup MMA: `wgmma.mma_async.m64nNk16` reading
//! both operands from the swizzled shared tiles that `cp.async` filled (see
//! `mma::Swizzled` and `async_copy::operand_offset`), accumulating in the
//! MMA-layout registers of `mma.rs`.
//!
//! Per dot: `wgmma.fence`, then for each k-step of 16 and each 64-row
//! repetition one instruction with a descriptor for its A slab and one for the
//! warpgroup's B columns, then one commit group and a wait for it. The wait
//! takes the accumulators as operands so nothing reads them before it.
//!
//! Under `MmaLayout::a_regs` A is four registers per instruction instead of
//! a descriptor (the register-A form): the warp's 16 rows of the k-step,
//! packed from another dot's accumulator as `mma.sync`'s A fragment is
//! (attention's `p @ v`). A zero accumulator (`tl.zeros`) is not passed in:
//! the first k-step's `scale-d` is off, so no zeros are moved into registers
//! between `wgmma`s (which made ptxas insert waits of its own).
//!
//! In a loop whose only dot accumulates into a loop-carried value that
//! nothing else reads (`acc = tl.dot(a, b, acc)`), the wait keeps one group
//! in flight instead (`wait_group 1`): the tensor cores work on iteration
//! `i` while the warps wait for and issue the copies of later tiles. The
//! loop's exit waits for the last group. The copies issued in iteration `i`
//! must then not overwrite the tiles of `i - 1` either, whose group may still
//! be running, so such a layout's ring gets one stage more (`plan_inflight`):
//! the tile `i + d` lands in the buffer of `i - 2`, whose group every
//! warpgroup waited for at the end of `i - 1`, before the barrier of `i`.
//!
//! Descriptors (PTX ISA, "matrix descriptor") hold, in 64 bits: the start
//! address, the leading-dimension and stride-dimension byte offsets (each
//! shifted right by 4, in bits 0-13, 16-29 and 32-45) and the swizzle mode
//! (bits 62-63). A is K-major: the stride offset steps 8 rows of M (the
//! leading offset is unused with a swizzle). For fp16/bf16, B is N-major
//! (`imm-trans-b` = 1): the leading offset steps from one column block of N
//! to the next, the stride offset 8 rows of K. fp8 (`m64nNk32`, e5m2/e4m3)
//! cannot be transposed by the instruction: its B tile is K-major like A
//! (`N x K`, filled by `async_copy::async_load_k_major` from a B whose
//! columns are contiguous, as tutorial 03 pre-transposes it).

use super::*;
use crate::mma::Swizzled;

/// The most dynamic shared memory an sm_90 block may use (bytes); a ring
/// that would pass it with the extra in-flight stage keeps its stages and
/// waits for each dot instead.
pub(crate) const MAX_SHARED: usize = SM_SHARED - BLOCK_RESERVED;
/// Shared memory of an H100/H200 SM, and what each resident block reserves.
const SM_SHARED: usize = 233_472;
const BLOCK_RESERVED: usize = 1024;
/// Shared memory per block that leaves room for a second block on an
/// H100/H200 SM.
pub(super) const TWO_BLOCKS_SHARED: usize = (SM_SHARED - 2 * BLOCK_RESERVED) / 2;

/// Accumulator registers a thread may hold for a lazily waited group
/// (`plan_lazy`).
pub(crate) const LAZY_ACC_REGS: usize = 32;

/// Blocks per H100/H200 SM that `bytes` of shared memory a block leave room
/// for.
fn blocks_by_shared(bytes: usize) -> usize {
    SM_SHARED / (bytes + BLOCK_RESERVED)
}

/// Where one `wgmma` dot's operands are: A's tile (or its fragments in
/// registers), B's tile, and whether the accumulator starts at zero.
pub(super) struct WgmmaOperands<'ctx, 'a> {
    pub a_off: IntValue<'ctx>,
    pub a_regs: Option<&'a AFragments<'ctx>>,
    pub b_off: IntValue<'ctx>,
    pub zero: bool,
}

/// The constant fields of a descriptor (everything but the start address).
fn descriptor_fields(leading: usize, stride: usize, s: &Swizzled) -> u64 {
    (((leading as u64) >> 4) << 16) | (((stride as u64) >> 4) << 32) | (s.mode() << 62)
}

impl<'ctx> Gen<'ctx, '_> {
    /// Choose the dots whose `wgmma` group may stay in flight across loop
    /// iterations (see the module comment), adding their rings' extra stage.
    pub(super) fn plan_inflight(&mut self, enabled: bool, chain: bool) {
        if !enabled {
            return;
        }
        let mut uses: HashMap<Value, usize> = HashMap::new();
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            for &a in &op.args {
                *uses.entry(a).or_default() += 1;
            }
        });
        let mut loops = vec![];
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if op.kind == OpKind::For {
                loops.push(op);
            }
        });
        for l in loops {
            let body = &l.regions[0];
            let mut dots = vec![];
            tilebook_tir::walk_ops(body, &mut |op| {
                if matches!(op.kind, OpKind::Dot { .. }) {
                    dots.push(op);
                }
            });
            if dots.len() >= 3 && enabled {
                self.plan_lazy(body, &dots);
                continue;
            }
            if let [first, second] = dots[..] {
                if chain {
                    self.plan_chain(l, body, first, second, &uses);
                }
                self.plan_deferred(body, first, second, &uses);
                continue;
            }
            let [dot] = dots[..] else { continue };
            let Some(layout) = self.mma.get(&dot.results[0]).copied() else {
                continue;
            };
            let (a, acc, r) = (dot.args[0], dot.args[2], dot.results[0]);
            let b = self.tile_plan.tile_of(dot.args[1]);
            let roles = &self.tile_plan.roles;
            let Some(y) = body.ops.last().filter(|y| y.kind == OpKind::Yield) else {
                continue;
            };
            let Some(j) = body.args[1..].iter().position(|&v| v == acc) else {
                continue;
            };
            let eligible = layout.wgmma
                && body.ops.iter().any(|op| std::ptr::eq(op, dot))
                && roles.contains_key(&a)
                && roles.contains_key(&b)
                && y.args.get(j) == Some(&r)
                && uses.get(&acc) == Some(&1)
                && uses.get(&r) == Some(&1);
            if !eligible {
                continue;
            }
            let plan = &self.tile_plan;
            let d = plan.distance(a).max(plan.distance(b)).max(1);
            let mut stages = plan.stages.clone();
            let s = stages.entry(layout).or_insert(2);
            *s = (*s).max(d + 2);
            let without = async_copy::rings_total(&plan.stages, plan);
            let with = async_copy::rings_total(&stages, plan);
            // The stage an in-flight group needs must not cost the second
            // block per SM that the rings would otherwise leave room for:
            // fp8 at 128 x 128 x 128, 3 stages, took 128 KB with it (one
            // block, 1007 TFLOPS on the H200) where Triton's 96 KB and 104
            // registers run two (1341).
            if without <= TWO_BLOCKS_SHARED && with > TWO_BLOCKS_SHARED {
                self.tile_plan.two_blocks = true;
                continue;
            }
            if with > MAX_SHARED {
                continue;
            }
            self.tile_plan.two_blocks |= with <= TWO_BLOCKS_SHARED;
            self.tile_plan.stages = stages;
            self.tile_plan.inflight.insert(r);
            self.tile_plan.inflight_results.insert(l.results[j]);
        }
    }

    /// A loop of two `wgmma` dots whose second accumulates into a loop-carried
    /// value that the next iteration reads only after the first dot
    /// (attention's `acc = tl.dot(p, v, acc * alpha)` after `s = tl.dot(q,
    /// k.T)`): the second dot's group stays in flight, and the first dot's
    /// wait in the next iteration waits for it too, passing the carried
    /// accumulators through (`TilePlan::tied`). The tensor cores then go
    /// from one iteration's `p @ v` to the next one's `q @ k.T` while the
    /// warps wait for and issue copies. The second dot's ring gets one stage
    /// more: the copies issued at the top of iteration `i + 1` must not land
    /// in the tile that `i`'s group may still be reading.
    fn plan_chain(
        &mut self,
        l: &Op,
        body: &tilebook_tir::Region,
        first: &Op,
        second: &Op,
        uses: &HashMap<Value, usize>,
    ) {
        let (Some(l1), Some(l2)) = (
            self.mma.get(&first.results[0]).copied(),
            self.mma.get(&second.results[0]).copied(),
        ) else {
            return;
        };
        let at = |op: &Op| body.ops.iter().position(|o| std::ptr::eq(o, op));
        let (Some(i1), Some(_)) = (at(first), at(second)) else {
            return;
        };
        let Some(y) = body.ops.last().filter(|y| y.kind == OpKind::Yield) else {
            return;
        };
        let r = second.results[0];
        let Some(j) = y.args.iter().position(|&v| v == r) else {
            return;
        };
        let Some(&carried) = body.args.get(1 + j) else {
            return;
        };
        // Nothing up to and including the first dot reads the carried value.
        let mut early = false;
        for op in &body.ops[..=i1] {
            early |= op.args.contains(&carried);
            for sub in &op.regions {
                tilebook_tir::walk_ops(sub, &mut |o| early |= o.args.contains(&carried));
            }
        }
        let roles = &self.tile_plan.roles;
        let b = self.tile_plan.tile_of(second.args[1]);
        // fp32 accumulators only: they pass through the wait as `f32` operands.
        let fp32 = self.k.ty(carried).dtype() == Some(DType::F32);
        let eligible = l1.wgmma
            && l2.wgmma
            && fp32
            && !early
            && roles.contains_key(&b)
            && uses.get(&r) == Some(&1);
        if !eligible {
            return;
        }
        let plan = &self.tile_plan;
        let d = plan.distance(b).max(1);
        let mut stages = plan.stages.clone();
        let s = stages.entry(l2).or_insert(2);
        *s = (*s).max(d + 2);
        let without = async_copy::rings_total(&plan.stages, plan);
        let with = async_copy::rings_total(&stages, plan);
        // The extra stage must not cost a block per SM: attention at D = 64
        // with 64 x 64 blocks and 3 stages runs four 4-warp blocks without it
        // (56 KB), three with it (64 KB).
        if with > MAX_SHARED || blocks_by_shared(with) < blocks_by_shared(without) {
            return;
        }
        self.tile_plan.stages = stages;
        self.tile_plan.inflight.insert(r);
        self.tile_plan.inflight_results.insert(l.results[j]);
        self.tile_plan.tied.insert(first.results[0], carried);
        self.tile_plan.chained.insert(r);
    }

    /// A rotated loop's first dot (`tilebook_tir::rotate`: it computes the
    /// next iteration's scores, which only the yield reads) is waited for at
    /// the yield, so that its group runs while the warps compute this
    /// iteration's softmax; the second dot's group, where it stays in flight
    /// (`plan_chain`), is left running by that wait.
    fn plan_deferred(
        &mut self,
        body: &tilebook_tir::Region,
        first: &Op,
        second: &Op,
        uses: &HashMap<Value, usize>,
    ) {
        let r = first.results[0];
        let wgmma = self.mma.get(&r).is_some_and(|l| l.wgmma)
            && self.mma.get(&second.results[0]).is_some_and(|l| l.wgmma);
        let yielded = body
            .ops
            .last()
            .is_some_and(|y| y.kind == OpKind::Yield && y.args.contains(&r));
        let first_at = body.ops.iter().position(|o| std::ptr::eq(o, first));
        let second_at = body.ops.iter().position(|o| std::ptr::eq(o, second));
        let before = matches!((first_at, second_at), (Some(a), Some(b)) if a < b);
        let fp32 = self.k.ty(r).dtype() == Some(DType::F32);
        if wgmma && yielded && before && fp32 && uses.get(&r) == Some(&1) {
            let pending = usize::from(self.tile_plan.chained.contains(&second.results[0]));
            self.tile_plan.deferred.insert(r, pending);
        }
    }

    /// Loops of three or more dots (attention's backward): each `wgmma` dot
    /// at the body's top level leaves its group running and is waited for
    /// right before the first op that reads its result (`wait_lazy`), so
    /// the tensor cores work on it, and on the dot issued after it, while
    /// the warps compute what does not need it (the backward's `dv` group
    /// runs while `v @ do.T` is issued). A running group's accumulators stay in registers until its wait, so
    /// only dots of at most `LAZY_ACC_REGS` accumulators a thread qualify:
    /// at D = 128 the backward's `dv` (64 a thread) pushed kernels already at
    /// 255 registers into spills (32 -> 68 bytes) and ran 1-8 % slower on
    /// the H200; at D = 64 (32 a thread) the causal rows gained 3-6 %.
    fn plan_lazy(&mut self, body: &tilebook_tir::Region, dots: &[&Op]) {
        for d in dots {
            let r = d.results[0];
            let top = body.ops.iter().any(|o| std::ptr::eq(o, *d));
            let wgmma = self.mma.get(&r).is_some_and(|l| l.wgmma);
            let fp32 = self.k.ty(r).dtype() == Some(DType::F32);
            let regs = self.k.ty(r).numel() / self.threads.max(1);
            if top && wgmma && fp32 && regs <= LAZY_ACC_REGS {
                self.tile_plan.lazy.insert(r);
            }
        }
    }

    /// Wait for the running lazy dots that `op` reads, or for all of them
    /// before a yield, an op with regions, or a region's end (`None`): the
    /// count of later groups left running is only known in straight-line
    /// code. Each dot's accumulators pass through its wait.
    pub(super) fn wait_lazy(&mut self, op: Option<&Op>) -> R<()> {
        if self.tile_plan.running.is_empty() {
            return Ok(());
        }
        let all = op.is_none_or(|op| op.kind == OpKind::Yield || !op.regions.is_empty());
        let running = std::mem::take(&mut self.tile_plan.running);
        let (now, later): (Vec<_>, Vec<_>) = running
            .into_iter()
            .partition(|(v, _)| all || op.is_some_and(|op| op.args.contains(v)));
        self.tile_plan.running = later;
        for (v, group) in now {
            let pending = self.tile_plan.groups.saturating_sub(group + 1);
            self.tile_plan.overlapped |= pending > 0;
            let accs = self.raw(v)?;
            let accs = self.wgmma_wait(accs, false, pending)?;
            self.set(v, Reg::B(accs));
        }
        Ok(())
    }

    /// Wait for the deferred dots among a loop body's yielded values
    /// (`plan_deferred`), passing their accumulators through the wait.
    pub(super) fn wait_deferred(&mut self, yields: &[Value]) -> R<()> {
        for &y in yields {
            if let Some(&pending) = self.tile_plan.deferred.get(&y) {
                let accs = self.raw(y)?;
                let accs = self.wgmma_wait(accs, false, pending)?;
                self.set(y, Reg::B(accs));
            }
        }
        Ok(())
    }

    /// After a loop whose dot left its group in flight: wait for it, passing
    /// the accumulators among the loop's results through the wait.
    pub(super) fn wait_inflight(&mut self, results: &[Value]) -> R<()> {
        for &r in results {
            if self.tile_plan.inflight_results.contains(&r) {
                let accs = self.raw(r)?;
                // Every group was committed by its dot: nothing to commit here.
                let accs = self.wgmma_wait(accs, false, 0)?;
                self.set(r, Reg::B(accs));
            }
        }
        Ok(())
    }

    /// One warpgroup-MMA dot (of result `r`); returns the new accumulators.
    /// In-flight dots (`TilePlan::inflight`) leave their group running (the
    /// loop waits at its exit).
    pub(super) fn dot_wgmma(
        &mut self,
        l: &MmaLayout,
        ops: WgmmaOperands<'ctx, '_>,
        mut accs: Vec<BasicValueEnum<'ctx>>,
        r: Value,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let plan = &self.tile_plan;
        let inflight = plan.inflight.contains(&r);
        let tie = plan.tied.get(&r).copied();
        let WgmmaOperands {
            a_off,
            a_regs,
            b_off,
            zero,
        } = ops;
        let [wm, wn] = self.uniform_warp_coords(l)?;
        let (sa, sb) = (l.swizzled(0), l.swizzled(1));
        let (groups_m, _) = l.warpgroups();
        let rows = l.m / groups_m;
        let cols = l.n / l.wn;
        // This warpgroup's A slab starts at row `group * rows` (a multiple of
        // 8, so unswizzled), its B columns at block `wn * cols / block_cols`.
        let group = self.b.build_right_shift(wm, self.i32c(2), false, "")?;
        let a_slab = self
            .b
            .build_int_mul(group, self.i32c((rows * sa.swizzle) as i64), "")?;
        let a_base = self.b.build_int_add(a_off, a_slab, "")?;
        // fp8's B is K-major like A (`N x K`): the warpgroup's columns are
        // rows of the tile.
        let fp8 = l.kind.is_fp8();
        // fp8's B, and a K-major B (`kt_b`), are `N x K` like A.
        let k_major = fp8 || l.kt_b;
        let b_step = if k_major {
            cols * sb.swizzle
        } else {
            (cols / sb.block_cols().min(cols)) * sb.block_bytes()
        };
        let b_cols = self.b.build_int_mul(wn, self.i32c(b_step as i64), "")?;
        let b_base = self.b.build_int_add(b_off, b_cols, "")?;
        let a_fields = descriptor_fields(16, 8 * sa.swizzle, &sa);
        let b_fields = if k_major {
            descriptor_fields(16, 8 * sb.swizzle, &sb)
        } else {
            descriptor_fields(sb.block_bytes(), 8 * sb.swizzle, &sb)
        };
        // Each instruction's descriptors are these plus its k-step's and
        // repetition's offset (in 16-byte units, the address field's): one
        // 64-bit add each, in the uniform datapath.
        let a_desc0 = match a_regs {
            Some(_) => None,
            None => Some(self.descriptor(a_base, a_fields)?),
        };
        let b_desc0 = self.descriptor(b_base, b_fields)?;
        let f32t = self.ctx.f32_type();
        let i64t = self.ctx.i64_type();
        let i32t = self.ctx.i32_type();
        let per = l.reps_n() * 4;
        let ret = self.ctx.struct_type(&vec![f32t.into(); per], false);
        let mut params: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![f32t.into(); per];
        if a_regs.is_some() {
            // A as four registers of paired halves (`mma.sync`'s A fragment
            // for this warp's 16 rows).
            params.extend([inkwell::types::BasicMetadataTypeEnum::from(i32t); 4]);
        } else {
            params.push(i64t.into());
        }
        params.extend::<[inkwell::types::BasicMetadataTypeEnum; 2]>([i64t.into(), i32t.into()]);
        let fn_ty = ret.fn_type(&params, false);
        let ty = l.kind.ptx();
        let k_step = l.kind.k_step();
        // fp16/bf16: scale A and B by 1, A as stored, B transposed (N-major);
        // fp8 takes no transpose operands (both K-major).
        // A K-major fp16/bf16 B is read untransposed (`imm-trans-b` = 0).
        // The register-A form has no `imm-trans-a`.
        let imm = match (fp8, l.kt_b, a_regs.is_some()) {
            (true, _, _) => "1, 1",
            (false, true, false) => "1, 1, 0, 0",
            (false, false, false) => "1, 1, 0, 1",
            (false, true, true) => "1, 1, 0",
            (false, false, true) => "1, 1, 1",
        };
        let outs: Vec<String> = (0..per).map(|i| format!("${i}")).collect();
        let (a_text, a_cons, a_n) = match a_regs {
            Some(_) => {
                let r: Vec<String> = (0..4).map(|i| format!("${}", 2 * per + i)).collect();
                (format!("{{{}}}", r.join(", ")), "r,r,r,r", 4)
            }
            None => (format!("${}", 2 * per), "l", 1),
        };
        let text = format!(
            "{{\n.reg .pred p;\nsetp.ne.b32 p, ${}, 0;\n\
             wgmma.mma_async.sync.aligned.m64n{cols}k{k_step}.f32.{ty}.{ty} {{{}}}, {a_text}, ${}, p, {imm};\n}}",
            2 * per + a_n + 1,
            outs.join(", "),
            2 * per + a_n,
        );
        let tied: Vec<String> = (0..per).map(|i| i.to_string()).collect();
        let constraints = format!("{}{},{a_cons},l,r", "=f,".repeat(per), tied.join(","));
        let asm = self
            .ctx
            .create_inline_asm(fn_ty, text, constraints, true, false, None, false);
        if let (Some(v), true) = (tie, plan.deferred.contains_key(&r)) {
            // A deferred dot's loop: the previous iteration's in-flight dot,
            // whose accumulators this iteration's second dot reads, is waited
            // for before this group starts, with nothing else in flight
            // (`ptxas` serializes every `wgmma` of a kernel where it cannot
            // tell that a `wait_group 1` across the loop's back edge retired
            // the group whose accumulators are read next: C7514).
            let carried = self.raw(v)?;
            let carried = self.wgmma_wait(carried, false, 0)?;
            self.set(v, Reg::B(carried));
        }
        self.ptx_statement("wgmma.fence.sync.aligned;")?;
        for k0 in (0..l.k).step_by(k_step) {
            let b_at = if k_major {
                sb.linear(0, k0)
            } else {
                sb.linear(k0, 0)
            };
            let b_desc = self.desc_plus(b_desc0, b_at)?;
            for rm in 0..l.reps_m() {
                let range = rm * per..(rm + 1) * per;
                let mut args: Vec<inkwell::values::BasicMetadataValueEnum> =
                    accs[range.clone()].iter().map(|v| (*v).into()).collect();
                match a_regs {
                    Some(frags) => {
                        let f = frags
                            .get(k0 / k_step)
                            .and_then(|f| f.get(rm))
                            .ok_or_else(|| GenError("missing A fragment".into()))?;
                        args.extend(
                            f.iter()
                                .map(|v| inkwell::values::BasicMetadataValueEnum::from(*v)),
                        );
                    }
                    None => {
                        let a0 = a_desc0.ok_or_else(|| GenError("missing A descriptor".into()))?;
                        args.push(self.desc_plus(a0, sa.linear(rm * 64, k0))?.into());
                    }
                }
                args.push(b_desc.into());
                // `scale-d`: 0 adds nothing of the (undefined) input.
                args.push(self.i32c(i64::from(!(zero && k0 == 0))).into());
                let call = self.b.build_indirect_call(fn_ty, asm, &args, "wgmma")?;
                let res = self.asm_results(call, per)?;
                accs[range].copy_from_slice(&res);
            }
        }
        // Every path below commits this dot's group, once.
        self.tile_plan.groups += 1;
        if self.tile_plan.lazy.contains(&r) {
            // Waited for before its first reader (`wait_lazy`).
            self.ptx_statement("wgmma.commit_group.sync.aligned;")?;
            let group = self.tile_plan.groups - 1;
            self.tile_plan.running.push((r, group));
            return Ok(accs);
        }
        if self.tile_plan.deferred.contains_key(&r) {
            // Waited for at the yield (`plan_deferred`).
            self.ptx_statement("wgmma.commit_group.sync.aligned;")?;
            return Ok(accs);
        }
        if self.tile_plan.chained.contains(&r) {
            // Waited for by the next iteration's first dot (`plan_chain`).
            self.ptx_statement("wgmma.commit_group.sync.aligned;")?;
            return Ok(accs);
        }
        if inflight {
            // The previous iteration's group is done after this; this one's
            // accumulators are only read by the next dot or the loop's exit.
            self.ptx_statement(
                "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;",
            )?;
            return Ok(accs);
        }
        let Some(v) = tie else {
            return self.wgmma_wait(accs, true, 0);
        };
        // The carried accumulators of the loop's in-flight dot pass through
        // this wait too (`plan_chain`).
        let n = accs.len();
        let mut all = accs;
        all.extend(self.raw(v)?);
        let mut all = self.wgmma_wait(all, true, 0)?;
        self.set(v, Reg::B(all.split_off(n)));
        Ok(all)
    }

    /// The descriptor `desc` moved on by `bytes` (a multiple of 16, within
    /// shared memory, so the 14-bit address field cannot carry over).
    fn desc_plus(&self, desc: IntValue<'ctx>, bytes: usize) -> R<IntValue<'ctx>> {
        if !bytes.is_multiple_of(16) {
            return Err(GenError(format!(
                "wgmma operand offset {bytes} is not a multiple of 16"
            )));
        }
        let step = self.ctx.i64_type().const_int((bytes / 16) as u64, false);
        Ok(self.b.build_int_add(desc, step, "desc")?)
    }

    /// This thread's warp coordinates `[wm, wn]` in layout `l`, from a warp
    /// index that `shfl.sync` broadcasts from lane 0: ptxas then knows it is
    /// the same across the warp and keeps what is computed from it (the
    /// descriptors) in uniform registers. From `tid / 32` it did not, and
    /// moved each descriptor into a uniform register before its `wgmma`
    /// (40 `R2UR` per iteration of attention's loop at D = 128).
    fn uniform_warp_coords(&self, l: &MmaLayout) -> R<[IntValue<'ctx>; 2]> {
        let warp = match self.uniform_warp.get() {
            Some(w) => w,
            None => {
                let p = &self.pre;
                let warp = p.build_right_shift(self.tid, self.i32c(5), false, "")?;
                let i32t = self.ctx.i32_type();
                let fn_ty = i32t.fn_type(&[i32t.into()], false);
                let asm = self.ctx.create_inline_asm(
                    fn_ty,
                    "shfl.sync.idx.b32 $0, $1, 0, 31, -1;".into(),
                    "=r,r".into(),
                    false,
                    false,
                    None,
                    false,
                );
                let call = p.build_indirect_call(fn_ty, asm, &[warp.into()], "warp")?;
                let w = call
                    .try_as_basic_value()
                    .basic()
                    .ok_or_else(|| GenError("shfl.sync gave no value".into()))?
                    .into_int_value();
                self.uniform_warp.set(Some(w));
                w
            }
        };
        let wm = self
            .b
            .build_int_unsigned_rem(warp, self.i32c(l.wm as i64), "")?;
        let wn = self
            .b
            .build_int_unsigned_div(warp, self.i32c(l.wm as i64), "")?;
        Ok([wm, wn])
    }

    /// `((address & 0x3FFFF) >> 4) | fields` for the shared byte offset `off`.
    fn descriptor(&self, off: IntValue<'ctx>, fields: u64) -> R<IntValue<'ctx>> {
        let i64t = self.ctx.i64_type();
        let addr = self.smem_u32(off)?;
        let addr = self.b.build_and(addr, self.i32c(0x3FFFF), "")?;
        let addr = self.b.build_right_shift(addr, self.i32c(4), false, "")?;
        let addr = self.b.build_int_z_extend(addr, i64t, "")?;
        Ok(self
            .b
            .build_or(addr, i64t.const_int(fields, false), "desc")?)
    }

    /// Commit the issued `wgmma`s (with `commit`) and wait until at most
    /// `pending` groups run; the accumulators pass through the wait so that
    /// their readers come after it.
    fn wgmma_wait(
        &self,
        accs: Vec<BasicValueEnum<'ctx>>,
        commit: bool,
        pending: usize,
    ) -> R<Vec<BasicValueEnum<'ctx>>> {
        let commit = if commit {
            "wgmma.commit_group.sync.aligned;\n"
        } else {
            ""
        };
        let f32t = self.ctx.f32_type();
        let n = accs.len();
        let ret = self.ctx.struct_type(&vec![f32t.into(); n], false);
        let params: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![f32t.into(); n];
        let fn_ty = ret.fn_type(&params, false);
        let tied: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("{commit}wgmma.wait_group.sync.aligned {pending};"),
            format!("{}{}", "=f,".repeat(n), tied.join(",")),
            true,
            false,
            None,
            false,
        );
        let args: Vec<inkwell::values::BasicMetadataValueEnum> =
            accs.iter().map(|v| (*v).into()).collect();
        let call = self.b.build_indirect_call(fn_ty, asm, &args, "wait")?;
        self.asm_results(call, n)
    }
}
