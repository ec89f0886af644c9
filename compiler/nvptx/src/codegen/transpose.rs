//! fp8's B in its plain layout on `wgmma`: a transposing copy.
//!
//! `wgmma` reads fp8 operands only K-major (`N x K`, K contiguous). When b
//! is not pre-transposed, B's `[K, N]` block has its rows (N) contiguous in
//! memory, so the copies down its columns of `async_load_k_major` do not
//! apply. Such a B is still copied by `cp.async` along its rows, into a
//! "staging" tile in its ring (`[K][N]` bytes, 16-byte chunks XOR-swizzled
//! by `k / 4` so the reads below meet no bank conflicts), and each dot first
//! transposes the stage it consumes into one of two K-major tiles after the
//! ring (`transpose_b`): every thread takes 4 x 4-byte blocks, reads 4 words
//! (4 rows of K, 4 columns of N), transposes them with `prmt` and writes 4
//! words (4 rows of the K-major tile, 4 bytes of K each). Two tiles
//! alternate because the previous dot's `wgmma` group may still be reading
//! the other one (see `wgmma`'s in-flight groups); the barrier that starts
//! every dot comes after each warpgroup's wait for the group before it.

use super::*;
use crate::mma::MmaLayout;

/// Bytes of the two K-major tiles after a ring whose B is transposed.
pub(super) fn transposed_bytes(l: &MmaLayout) -> usize {
    2 * l.swizzled(1).bytes().next_multiple_of(1024)
}

impl<'ctx> Gen<'ctx, '_> {
    /// Whether a `[K, N]` fp8 B tile of `l` can be staged and transposed by
    /// `threads` threads: whole 16-byte chunks per row and whole 4 x 4 blocks
    /// per thread.
    pub(super) fn transpose_ok(&self, l: &MmaLayout) -> bool {
        l.wgmma
            && l.kind.is_fp8()
            && l.n.is_multiple_of(16)
            && l.k.is_multiple_of(32)
            && (l.k * l.n / 16).is_multiple_of(self.threads)
    }

    /// Byte offset of `(k, n)` in a staging tile of `l` (relative to it).
    pub(super) fn staging_offset(
        &self,
        l: &MmaLayout,
        k: IntValue<'ctx>,
        n: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let b = &self.b;
        let mask = (l.n / 16).min(8) as i64 - 1;
        let chunk = b.build_right_shift(n, self.i32c(4), false, "")?;
        let k4 = b.build_right_shift(k, self.i32c(2), false, "")?;
        let k4 = b.build_and(k4, self.i32c(mask), "")?;
        let chunk = b.build_xor(chunk, k4, "")?;
        let row = b.build_int_mul(k, self.i32c(l.n as i64), "")?;
        let off = b.build_int_add(row, b.build_left_shift(chunk, self.i32c(4), "")?, "")?;
        let inner = b.build_and(n, self.i32c(15), "")?;
        Ok(b.build_int_add(off, inner, "")?)
    }

    /// Transpose the staged B tile at `staging` (byte offset in shared
    /// memory) into the next of the layout's two K-major tiles; returns that
    /// tile's offset. The caller has waited for the staging copies and
    /// synchronised the block; this ends with the fence and barrier that make
    /// the new tile visible to `wgmma`.
    pub(super) fn transpose_b(&self, l: &MmaLayout, staging: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let role = async_copy::TileRole {
            layout: *l,
            operand: 1,
            index: 0,
        };
        let i32t = self.ctx.i32_type();
        let i8t = self.ctx.i8_type();
        // Which of the two tiles: a counter flipped by every dot (the role
        // with operand 2 names it).
        let slot = self.stage_counter(async_copy::TileRole {
            layout: *l,
            operand: 2,
            index: 0,
        })?;
        let which = self.b.build_load(i32t, slot, "")?.into_int_value();
        self.b
            .build_store(slot, self.b.build_xor(which, self.i32c(1), "")?)?;
        let (ring, stages) = self.ring_base[l];
        let first =
            ring + (stages * async_copy::stage_bytes(l, &self.tile_plan)).next_multiple_of(1024);
        let tile_bytes = l.swizzled(1).bytes().next_multiple_of(1024);
        let dst = self
            .b
            .build_int_mul(which, self.i32c(tile_bytes as i64), "")?;
        let dst = self.b.build_int_add(dst, self.i32c(first as i64), "")?;
        let word = |off: IntValue<'ctx>| -> R<PointerValue<'ctx>> {
            // SAFETY: offsets inside the rings, which `smem_bytes` covers.
            Ok(unsafe { self.b.build_gep(i8t, self.smem, &[off], "")? })
        };
        let prmt = |x: IntValue<'ctx>, y: IntValue<'ctx>, sel: &str| -> R<IntValue<'ctx>> {
            Ok(self
                .ptx_value(
                    &format!("prmt.b32 $0, $1, $2, {sel};"),
                    "=r,r,r",
                    i32t.into(),
                    false,
                    &[x.into(), y.into()],
                )?
                .into_int_value())
        };
        let blocks = l.k * l.n / 16;
        let nb_count = (l.n / 4) as i64;
        for i in 0..blocks / self.threads {
            // Block `b`: 8 consecutive blocks walk down K (so a warp's reads
            // fall in 8 differently swizzled chunks), then along N.
            let bi = self
                .b
                .build_int_add(self.tid, self.i32c((i * self.threads) as i64), "")?;
            let kb_lo = self.b.build_and(bi, self.i32c(7), "")?;
            let rest = self.b.build_right_shift(bi, self.i32c(3), false, "")?;
            let nb = self
                .b
                .build_int_unsigned_rem(rest, self.i32c(nb_count), "")?;
            let kb_hi = self
                .b
                .build_int_unsigned_div(rest, self.i32c(nb_count), "")?;
            let kb = self.b.build_int_add(
                self.b.build_left_shift(kb_hi, self.i32c(3), "")?,
                kb_lo,
                "",
            )?;
            let k0 = self.b.build_left_shift(kb, self.i32c(2), "")?;
            let n0 = self.b.build_left_shift(nb, self.i32c(2), "")?;
            let mut w = vec![];
            for r in 0..4 {
                let k = self.b.build_int_add(k0, self.i32c(r), "")?;
                let off = self.staging_offset(l, k, n0)?;
                let off = self.b.build_int_add(staging, off, "")?;
                w.push(self.b.build_load(i32t, word(off)?, "")?.into_int_value());
            }
            // Bytes j of w0..w3 become column n0 + j's word (k0..k0 + 3).
            let lo01 = prmt(w[0], w[1], "0x5140")?;
            let hi01 = prmt(w[0], w[1], "0x7362")?;
            let lo23 = prmt(w[2], w[3], "0x5140")?;
            let hi23 = prmt(w[2], w[3], "0x7362")?;
            let cols = [
                prmt(lo01, lo23, "0x5410")?,
                prmt(lo01, lo23, "0x7632")?,
                prmt(hi01, hi23, "0x5410")?,
                prmt(hi01, hi23, "0x7632")?,
            ];
            for (j, c) in cols.into_iter().enumerate() {
                let n = self.b.build_int_add(n0, self.i32c(j as i64), "")?;
                let off = self.operand_offset(role, n, k0)?;
                let off = self.b.build_int_add(dst, off, "")?;
                self.b.build_store(word(off)?, c)?;
            }
        }
        self.ptx_statement("fence.proxy.async.shared::cta;")?;
        self.barrier()?;
        Ok(dst)
    }
}
