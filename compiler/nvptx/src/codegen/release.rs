//! Loops whose carried tiles are all bulk copies (`tma`): a refill waits
//! for its stage's release by every warp instead of a block barrier per
//! iteration.
//!
//! Every bulk-copy barrier has a release barrier (one arrival per warp).
//! Where a loop dot's wait would issue refills (`release_and_issue`), each
//! warp arrives on the release barrier of every stage about to be refilled
//! (its reads of the stage are complete there: the same fact the block
//! barrier relied on, which the rings' depth guarantees for `wgmma`s left
//! in flight), waits on its operands' barriers, and thread 0 waits for
//! the round of every warp's release before refilling the stage. Warps need
//! not meet at every iteration: a warp group waits only for the stages it
//! refills, the other not at all. A round's arrivals cannot run into the
//! next round of the same barrier: a warp arrives again on a stage only
//! after reading the tile refilled after the previous round completed.
//!
//! Only blocks of more than one warp group: one group is held together by
//! its `wgmma`s anyway. Measured on the H200 (bench/NOTES.md, session 53):
//! attention forward with K and V through descriptors, 8 warps, at par at
//! D = 128 non-causal, 3-5 % faster causal, up to 14 % at D = 64; 4 warps
//! 2-3 % slower (hence the limit). Arriving earlier (after the first dot's
//! wait) so that the two warp groups could take turns at the tensor cores
//! was slower (`bench/results/h200-2026-11-30-s53/release_turns.patch`).

use super::async_copy::Operand;
use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// The word of release-round parities (`TmaPlan::release_rounds`).
    fn rounds_word(&self) -> R<PointerValue<'ctx>> {
        if let Some(p) = self.tma.release_rounds.get() {
            return Ok(p);
        }
        let p = self.counter_slot()?;
        self.tma.release_rounds.set(Some(p));
        Ok(p)
    }

    /// Whether the loop whose body binds `args` carries tiles, all of them
    /// bulk copies, so that its refills wait for their stages' release
    /// (`release_and_issue`). Other tiles (attention's `q`, copied by
    /// `cp.async` before the loop) land here first, visible to every thread
    /// and to the async proxy, so that no wait in the loop is for them.
    pub(super) fn settle_bulk_loop(&self, args: &[Value]) -> R<bool> {
        let mut tiles = args
            .iter()
            .filter(|a| self.tiles().contains_key(a))
            .peekable();
        if !self.tma.release || tiles.peek().is_none() || !tiles.all(|a| self.is_tma_tile(*a)) {
            return Ok(false);
        }
        if self.tma.mixed {
            self.ptx_statement("cp.async.wait_all;")?;
            self.ptx_statement("fence.proxy.async.shared::cta;")?;
            self.barrier()?;
        }
        Ok(true)
    }

    /// The wait of a dot, in a loop `settle_bulk_loop` accepted, after
    /// which only bulk copies are to be issued (the refills), where each
    /// shared operand is a bulk-copied tile, one landed before, or one
    /// loaded before the loop: each warp releases the refilled stages, waits
    /// on its operands' barriers, then thread 0 waits for each stage's
    /// release and issues the copies. No block barrier. False where the
    /// general wait is needed.
    pub(super) fn release_and_issue(&self, a: Value, b: Value) -> R<bool> {
        let Some(refills) = self.pending_bulk_bars() else {
            return Ok(false);
        };
        let waits: Vec<Value> = {
            let landed = self.landed.borrow();
            if !landed.settled {
                return Ok(false);
            }
            let state = [a, b].map(|v| self.operand_state(&landed, v));
            if state.contains(&Operand::Other) {
                return Ok(false);
            }
            Operand::bulk_of([a, b], state)
        };
        let frees = self.tma.bars as i64 * 8;
        for &bar in &refills {
            let free = self.b.build_int_add(bar, self.i32c(frees), "")?;
            self.ptx_asm(
                "{ .reg .pred p; .reg .b32 l; and.b32 l, $0, 31; setp.eq.u32 p, l, 0; \
                 bar.warp.sync -1; @p mbarrier.arrive.shared::cta.b64 _, [$1]; }",
                "r,r",
                &[self.tid.into(), free.into()],
            )?;
        }
        for &v in &waits {
            self.wait_tma(v)?;
        }
        self.landed.borrow_mut().tiles.extend(waits);
        let bits = self.rounds_word()?;
        let base = self.bars_address()?;
        let i32t = self.ctx.i32_type();
        for bar in refills {
            let index = self.b.build_int_sub(bar, base, "")?;
            let index = self.b.build_right_shift(index, self.i32c(3), false, "")?;
            let word = self.b.build_load(i32t, bits, "")?.into_int_value();
            let parity = self.b.build_right_shift(word, index, false, "")?;
            let parity = self.b.build_and(parity, self.i32c(1), "")?;
            let flip = self.b.build_left_shift(self.i32c(1), index, "")?;
            self.b
                .build_store(bits, self.b.build_xor(word, flip, "")?)?;
            let free = self.b.build_int_add(bar, self.i32c(frees), "")?;
            self.ptx_asm(
                "{ .reg .pred p, done; setp.ne.u32 p, $0, 0; @p bra tb_free_skip; \
                 tb_free_wait: mbarrier.try_wait.parity.shared::cta.b64 done, [$1], $2; \
                 @!done bra tb_free_wait; tb_free_skip: }",
                "r,r,r",
                &[self.tid.into(), free.into(), parity.into()],
            )?;
        }
        self.flush_copies()?;
        Ok(true)
    }
}
