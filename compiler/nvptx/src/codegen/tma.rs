//! Bulk tensor copies (Hopper's TMA) of dot operand tiles loaded through a
//! host tensor descriptor, and bulk tensor stores of blocks stored through
//! one (`tma_store`, at the end of this file).
//!
//! A `load[tma=i]` (the frontend's `desc.load` on a descriptor parameter)
//! names the descriptor and the block's coordinates. Where such a load is a
//! `wgmma` operand tile (`async_copy`), one thread asks the copy engine for
//! the whole block instead of every thread copying 16-byte runs: one
//! `cp.async.bulk.tensor` per column block of the swizzled tile (the
//! engine's swizzle modes are `wgmma`'s), completing on an mbarrier. The
//! descriptor's bounds become the engine's out-of-bounds fill (zeros, or
//! NaN for `padding="nan"`), which is exactly what the load's mask and
//! padding say, so the mask is not evaluated.
//!
//! The launch passes one 128-byte tensor map per descriptor after the
//! kernel's parameters (`TensorMapUse`, encoded by the runtime from the
//! descriptor's base, shape and strides, which host descriptors always
//! give 16-byte aligned); the kernel reads it in place (`grid_constant`).
//!
//! Every stage of every bulk-copied tile stream has its own mbarrier. A
//! tile value then holds two registers: its shared offset, as any tile, and
//! its barrier's address with the parity of the phase its copy completes in
//! bit 0 (a stream's stages are filled in turn, so that parity flips each
//! time the stream's stage counter wraps). Waiting for a tile is waiting on
//! that phase; the loop that consumes the stream waits for its last
//! (prefetched, unused) fills before shared memory is reused. A kernel
//! whose other tiles still use `cp.async` commits an empty group for each
//! bulk copy, so that `cp.async.wait_group`'s counts stay right.

use super::async_copy::TileRole;
use super::*;
use crate::{MapSrc, TensorMapUse};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::types::AnyType;
use tilebook_tir::MapOrder;

/// Which tile streams are bulk copies, and where their barriers are.
#[derive(Default)]
pub(super) struct TmaPlan<'ctx> {
    /// Roles all of whose loads are bulk copies, with their tensor map.
    pub roles: HashMap<TileRole, usize>,
    /// The first barrier of each role (one per stage of its ring).
    pub(super) bar_base: HashMap<TileRole, usize>,
    /// The tensor-map parameters, in order.
    pub maps: Vec<TensorMapUse>,
    /// Some other tile stream uses `cp.async` (its group counts must hold).
    pub mixed: bool,
    /// Descriptors (and the shapes of mapped pointer stores) whose stores
    /// are bulk tensor stores, with their map.
    pub stores: HashMap<(u32, Option<[MapSrc; 3]>), usize>,
    /// How many barriers there are: they take the last `8 * bars` bytes of
    /// shared memory, after the rings and every scratch use (`place_bars`),
    /// so that they cost no 1024-byte alignment (a block over half the SM's
    /// shared memory by one such gap would run alone).
    pub(super) bars: usize,
    /// Their byte offset, a constant fixed once the shared size is known.
    bar_offset: Option<inkwell::values::GlobalValue<'ctx>>,
    /// The first tensor-map parameter's index.
    first_param: usize,
    /// Each role's phase: flipped whenever its stage counter wraps.
    phases: std::cell::RefCell<HashMap<TileRole, PointerValue<'ctx>>>,
    /// Loops carrying only bulk-copied tiles refill a stage once every
    /// warp has released it, not after a block barrier (`release.rs`):
    /// each barrier has a release barrier after all of them.
    /// `TILEBOOK_BULK_RELEASE=0` keeps the block barrier.
    pub(super) release: bool,
    /// Bit `i`: the parity of barrier `i`'s next release round (a
    /// per-thread word, made on first use).
    pub(super) release_rounds: std::cell::Cell<Option<PointerValue<'ctx>>>,
}

impl TmaPlan<'_> {
    /// Barriers per bulk-copy stage: its own, and its release barrier
    /// where stages are released (`release.rs`).
    fn barrier_sets(&self) -> usize {
        if self.release {
            2
        } else {
            1
        }
    }
}

/// One tensor-map parameter: the base pointer parameter, whether stores use
/// it, and (for a tensor read through plain pointers) its shape's sources.
pub(super) type MapKey = (u32, bool, Option<[MapSrc; 3]>);

/// A bulk copy recorded until it is issued: the tile's column blocks.
pub(super) struct TmaIssue<'ctx> {
    map: IntValue<'ctx>,
    bar: IntValue<'ctx>,
    /// Whether the iteration the copy prefetches for runs (`i32`, 0 or 1;
    /// `load[guards=n]`): where it does not, nothing reads the tile, and
    /// the barrier's phase completes with no bytes instead of a copy.
    live: Option<IntValue<'ctx>>,
    bytes: usize,
    /// (shared address, inner coordinate, outer coordinate) per column block.
    boxes: Vec<(IntValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>)>,
}

impl<'ctx> TmaIssue<'ctx> {
    /// The shared address of the barrier the copy completes on.
    pub(super) fn bar(&self) -> IntValue<'ctx> {
        self.bar
    }
}

/// Append the tensor-map parameters to a kernel's `params`: their
/// descriptors' base parameters and the first one's index. Checked mode
/// checks every address a thread forms: no bulk copies there.
pub(super) fn append_params<'ctx>(
    ctx: &'ctx Context,
    k: &Kernel,
    check_bounds: bool,
    params: &mut Vec<inkwell::types::BasicMetadataTypeEnum<'ctx>>,
) -> (Vec<MapKey>, usize) {
    let maps = if check_bounds { vec![] } else { map_params(k) };
    let first = params.len();
    for _ in &maps {
        params.push(ctx.ptr_type(AddressSpace::default()).into());
    }
    (maps, first)
}

/// Tensor-map parameters a kernel takes: one per descriptor that some
/// `load[tma=i]` names and one per descriptor some `store[tma=i]` names
/// (`(i, true)`: a store's box is its whole block, unswizzled), in
/// parameter order.
fn map_params(k: &Kernel) -> Vec<MapKey> {
    let mut consts = HashMap::new();
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        if let (OpKind::Const(tilebook_tir::Const::Int(x)), Some(&r)) =
            (&op.kind, op.results.first())
        {
            consts.insert(r, *x);
        }
    });
    let mut out = vec![];
    tilebook_tir::walk_ops(&k.body, &mut |op| {
        let key = match (tilebook_tir::load_tma(op), tilebook_tir::store_tma(op)) {
            (Some((i, _)), _) => match tilebook_tir::load_map(op) {
                Some((m, _)) => match map_shape(k, m, &|v| consts.get(&v).copied()) {
                    Some(s) => (i, false, Some(s)),
                    None => return,
                },
                None => (i, false, None),
            },
            (_, Some((i, _))) => match tilebook_tir::store_map(op) {
                Some(m) => match map_shape(k, m, &|v| consts.get(&v).copied()) {
                    Some(s) => (i, true, Some(s)),
                    None => return,
                },
                None => (i, true, None),
            },
            _ => return,
        };
        if !out.contains(&key) {
            out.push(key);
        }
    });
    out.sort_by_key(|(i, store, s)| (*i, *store, format!("{s:?}")));
    out
}

/// Where the launch finds a mapped load's rows, columns and row stride:
/// each must be a parameter or an integer constant (`int_const` looks
/// those up).
pub(super) fn map_shape(
    k: &Kernel,
    m: [Value; 3],
    int_const: &dyn Fn(Value) -> Option<i64>,
) -> Option<[MapSrc; 3]> {
    let src = |v: Value| match k.params.iter().position(|p| p.value == v) {
        Some(i) => Some(MapSrc::Param(i as u32)),
        None => int_const(v).map(MapSrc::Const),
    };
    Some([src(m[0])?, src(m[1])?, src(m[2])?])
}

/// Declare the tensor-map parameters `first..` of `func` as 128-byte,
/// 64-byte aligned values the kernel reads in place (`grid_constant`).
pub(super) fn declare_params<'ctx>(
    ctx: &'ctx Context,
    module: &Module<'ctx>,
    func: FunctionValue<'ctx>,
    first: usize,
    count: usize,
) -> Result<(), String> {
    if count == 0 {
        return Ok(());
    }
    let map_ty = ctx.i8_type().array_type(128);
    let byval = ctx.create_type_attribute(
        Attribute::get_named_enum_kind_id("byval"),
        map_ty.as_any_type_enum(),
    );
    let align = ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("align"), 64);
    let mut indices = vec![];
    for i in first..first + count {
        func.add_attribute(AttributeLoc::Param(i as u32), byval);
        func.add_attribute(AttributeLoc::Param(i as u32), align);
        // nvvm.annotations number parameters from 1.
        indices.push(ctx.i32_type().const_int(i as u64 + 1, false).into());
    }
    let list = ctx.metadata_node(&indices);
    let node = ctx.metadata_node(&[
        func.as_global_value().as_pointer_value().into(),
        ctx.metadata_string("grid_constant").into(),
        list.into(),
    ]);
    module
        .add_global_metadata("nvvm.annotations", &node)
        .map_err(|e| format!("tensor-map parameters: {e}"))
}

/// The box of a bulk tensor store of a block of type `t` (its pointers):
/// the whole block, at most 256 by 256 elements, rows of whole 16-byte
/// pieces.
fn store_box(t: &Type, rank: usize) -> Option<(u32, u32)> {
    let e = t.elem.pointee()?.size_bytes();
    let [rows, cols] = t.shape[..] else {
        return None;
    };
    let ok = rank == 2
        && matches!(e, 1 | 2 | 4)
        && (1..=256).contains(&rows)
        && (1..=256).contains(&cols)
        && (cols * e) % 16 == 0;
    ok.then_some((rows as u32, cols as u32))
}

impl<'ctx> Gen<'ctx, '_> {
    /// The tensor map and box a bulk copy of `op`'s tile of `role` would use,
    /// where one can perform it: a `wgmma` tile stored as the load's block
    /// (not transposed on the way), at most 256 rows and a column block of
    /// the swizzle's width, with zero or NaN where masked off.
    ///
    /// A `[K, N]` block read as the transpose of a tensor block (`map_t`)
    /// fills the K-major tile its K-major copy would (`N x K`, the tensor's
    /// rows by its columns), so the box is the tile's as for any other.
    fn tma_candidate(&self, op: &Op, role: TileRole) -> Option<(u32, TensorMapUse)> {
        let (param, coords) = tilebook_tir::load_tma(op)?;
        let r = op.results[0];
        let t = self.ty(r);
        let l = role.layout;
        let staged = role.operand == 1 && self.tile_plan.transposed.contains(&l);
        let map = tilebook_tir::load_map(op);
        let transposed = matches!(map, Some((_, MapOrder::Transposed)));
        let k_major = self.tile_plan.k_major.contains_key(&r);
        if !l.wgmma || staged || k_major != transposed || coords.len() != 2 {
            return None;
        }
        let s = l.swizzled(role.operand);
        let elem = t.dtype()?.size_bytes();
        let shape = if transposed {
            [t.shape[1], t.shape[0]]
        } else {
            [t.shape[0], t.shape[1]]
        };
        if t.shape.len() != 2
            || shape != [s.rows, s.cols]
            || s.rows > 256
            || s.elem != elem
            || s.swizzle < 32
        {
            return None;
        }
        let nan_fill = match tilebook_tir::load_other(op) {
            None => false,
            Some(o) => match self.defs.get(&o).map(|d| &d.kind) {
                Some(OpKind::Const(c)) if c.as_f64() == 0.0 => false,
                Some(OpKind::Const(c)) if c.as_f64().is_nan() => true,
                _ => return None,
            },
        };
        Some((
            param,
            TensorMapUse {
                desc_param: param,
                rows: s.rows as u32,
                cols: s.block_cols() as u32,
                swizzle: s.swizzle as u32,
                nan_fill,
                shape: match map {
                    Some((m, _)) => {
                        let int_const = |v: Value| match self.defs.get(&v).map(|op| &op.kind) {
                            Some(OpKind::Const(tilebook_tir::Const::Int(x))) => Some(*x),
                            _ => None,
                        };
                        Some(map_shape(self.k, m, &int_const)?)
                    }
                    None => None,
                },
            },
        ))
    }

    /// Decide which tile streams are bulk copies: those whose every load can
    /// be one, through one descriptor whose box no other stream contradicts.
    /// `params` are the tensor-map parameters `map_params` declared, from
    /// parameter `first` on.
    pub(super) fn plan_tma(&mut self, params: &[MapKey], first: usize) -> R<()> {
        let mut per_role: HashMap<TileRole, Option<(u32, TensorMapUse)>> = HashMap::new();
        let mut any_tile = HashSet::new();
        let k = self.k;
        tilebook_tir::walk_ops(&k.body, &mut |op| {
            let Some(&role) = self
                .tiles()
                .get(&op.results.first().copied().unwrap_or(Value(u32::MAX)))
            else {
                return;
            };
            if !matches!(op.kind, OpKind::Load { .. }) {
                return;
            }
            any_tile.insert(role);
            let c = self.tma_candidate(op, role);
            let e = per_role.entry(role).or_insert(c);
            if *e != c {
                *e = None;
            }
        });
        let mut maps: Vec<TensorMapUse> = params
            .iter()
            .map(|&(p, _, shape)| TensorMapUse {
                desc_param: p,
                rows: 0,
                cols: 0,
                swizzle: 0,
                nan_fill: false,
                shape,
            })
            .collect();
        let mut roles: Vec<(TileRole, (u32, TensorMapUse))> = per_role
            .into_iter()
            .filter_map(|(r, c)| Some((r, c?)))
            .collect();
        // A total order (the map's iteration order is a run's hash seed):
        // attention's K and V streams tie on everything but their
        // descriptor and layout, and barriers must not swap between builds.
        roles.sort_by_key(|(r, (param, _))| {
            let l = &r.layout;
            (r.operand, r.index, l.m, l.n, l.k, *param, format!("{l:?}"))
        });
        let mut plan = TmaPlan {
            first_param: first,
            ..TmaPlan::default()
        };
        let mut bars = 0;
        for (role, (param, use_)) in roles {
            let Some(m) = params.iter().position(|&p| p == (param, false, use_.shape)) else {
                continue;
            };
            if maps[m].rows != 0 && maps[m] != use_ {
                continue;
            }
            maps[m] = use_;
            plan.roles.insert(role, m);
            plan.bar_base.insert(role, bars);
            bars += self.tile_plan.stages[&role.layout];
        }
        plan.mixed = any_tile.iter().any(|r| !plan.roles.contains_key(r));
        // Stores: every store through the descriptor must agree on the box.
        let mut stores: HashMap<(u32, Option<[MapSrc; 3]>), Option<TensorMapUse>> = HashMap::new();
        tilebook_tir::walk_ops(&k.body, &mut |op| {
            if let Some((i, coords)) = tilebook_tir::store_tma(op) {
                let Some((_, shape)) = self.store_key(op) else {
                    return;
                };
                let c = store_box(k.ty(op.args[0]), coords.len()).map(|(rows, cols)| {
                    match self.bulk_store_tile(op) {
                        // Written from the MMA registers into a swizzled
                        // tile: one box per column block.
                        Some(s) => TensorMapUse {
                            desc_param: i,
                            rows,
                            cols: s.block_cols() as u32,
                            swizzle: s.swizzle as u32,
                            nan_fill: false,
                            shape,
                        },
                        None => TensorMapUse {
                            desc_param: i,
                            rows,
                            cols,
                            swizzle: 0,
                            nan_fill: false,
                            shape,
                        },
                    }
                });
                let e = stores.entry((i, shape)).or_insert(c);
                if *e != c {
                    *e = None;
                }
            }
        });
        let mut stores: Vec<_> = stores.into_iter().collect();
        stores.sort_by_key(|((i, shape), _)| (*i, format!("{shape:?}")));
        for ((i, shape), use_) in stores {
            let (Some(u), Some(m)) = (use_, params.iter().position(|&p| p == (i, true, shape)))
            else {
                continue;
            };
            maps[m] = u;
            plan.stores.insert((i, shape), m);
        }
        plan.maps = maps;
        plan.bars = bars;
        // One warp group is held together by its `wgmma`s anyway: releases
        // cost it more than the block barrier (H200, D = 64, 4 warps: 2-3 %
        // slower; 8 warps: 3-14 % faster; bench/NOTES.md session 53).
        // Blocks read through plain pointers (the tutorial matmul, one dot
        // a loop) keep the block barrier: with releases the issuing thread
        // waits for the slowest warp inside its own warp group's loop (H200,
        // 128x256x64, 8 warps, three runs: 634-666 TFLOPS with releases,
        // 668-681 with the barrier, 646-698 with `cp.async`; session 61).
        plan.release = bars > 0
            && bars <= 32
            && self.threads > 128
            && !plan.maps.iter().any(|m| m.shape.is_some())
            && std::env::var("TILEBOOK_BULK_RELEASE").map_or(true, |v| v != "0");
        if bars > 0 {
            let g = self
                .module
                .add_global(self.ctx.i32_type(), None, "tb_tma_bars");
            g.set_constant(true);
            g.set_linkage(inkwell::module::Linkage::Internal);
            g.set_initializer(&self.i32c(0));
            plan.bar_offset = Some(g);
        }
        self.tma = plan;
        Ok(())
    }

    /// The shared address of the first barrier.
    pub(super) fn bars_address(&self) -> R<IntValue<'ctx>> {
        let g = self
            .tma
            .bar_offset
            .ok_or_else(|| GenError("internal: a bulk copy without barriers".into()))?;
        let off = self
            .b
            .build_load(self.ctx.i32_type(), g.as_pointer_value(), "")?
            .into_int_value();
        self.smem_u32(off)
    }

    /// Once every other use of shared memory is known: the barriers go
    /// after it (8-byte aligned), and the shared size grows by them.
    pub(super) fn place_bars(&self) {
        let Some(g) = self.tma.bar_offset else {
            return;
        };
        let at = self.smem_bytes.get().next_multiple_of(8);
        g.set_initializer(&self.i32c(at as i64));
        let sets = self.tma.barrier_sets();
        self.smem_bytes.set(at + 8 * sets * self.tma.bars);
    }

    /// Initialise every barrier (one arrival a phase: the issuing thread's;
    /// a release barrier's: one per warp), before any thread may wait on one
    /// or issue a copy.
    pub(super) fn tma_init(&self) -> R<()> {
        let n = self.tma.bars;
        if n == 0 {
            return Ok(());
        }
        let base = self.bars_address()?;
        let warps = self.threads / 32;
        let sets = self.tma.barrier_sets();
        for i in 0..sets * n {
            let at = self.b.build_int_add(base, self.i32c(8 * i as i64), "")?;
            let count = if i < n { 1 } else { warps };
            self.ptx_asm(
                &format!(
                    "{{ .reg .pred p; setp.eq.u32 p, $0, 0; @p mbarrier.init.shared::cta.b64 [$1], {count}; }}"
                ),
                "r,r",
                &[self.tid.into(), at.into()],
            )?;
        }
        self.ptx_statement("fence.mbarrier_init.release.cluster;")?;
        self.barrier()
    }

    /// Widest runs again once bulk copies are planned: a `tl.dot` operand
    /// size whose every operand arrives by bulk copy has no register copy
    /// whose runs it must keep (the copy engine fills its tiles), so a store
    /// of that element count takes the runs that suit it. The fp8 tile's
    /// 128x128 fp16 result shares its size with the 128x128 fp8 operands:
    /// with their runs of 16 elements each thread stored 32 bytes as two
    /// 16-byte halves, half of each of 32 sectors per warp store, and the
    /// epilogue took 3.7 k cycles where Triton's takes 1.7 k (per-program
    /// timestamps, bench/NOTES.md session 64).
    pub(super) fn relax_bulk_operands(&mut self, operands: &HashSet<usize>) {
        let (mut bulk, mut other) = (HashSet::new(), HashSet::new());
        tilebook_tir::walk_ops(&self.k.body, &mut |op| {
            if matches!(op.kind, OpKind::Dot { .. }) {
                for &v in &op.args[..2] {
                    let n = self.k.ty(v).numel();
                    if self.is_tma_tile(v) {
                        bulk.insert(n);
                    } else {
                        other.insert(n);
                    }
                }
            }
        });
        if bulk.iter().all(|n| other.contains(n)) {
            return;
        }
        let kept: HashSet<usize> = operands
            .iter()
            .copied()
            .filter(|n| !bulk.contains(n) || other.contains(n))
            .collect();
        self.max_vec = crate::layout::run_limits(self.k, &kept);
        self.scalar_only_sizes(&kept);
    }

    /// Whether tile value `v` arrives by bulk copy (holds a barrier word).
    pub(super) fn is_tma_tile(&self, v: Value) -> bool {
        self.tiles()
            .get(&v)
            .is_some_and(|r| self.tma.roles.contains_key(r))
    }

    /// The bulk copy of load `op` into the next stage of `role`: recorded
    /// until issued, like `cp.async` copies; its value is the tile and the
    /// barrier word.
    pub(super) fn tma_load(&mut self, op: &Op, role: TileRole) -> R<()> {
        let r = op.results[0];
        let m = self.tma.roles[&role];
        let (stage, tile) = self.next_stage(role)?;
        let phase = self.tma_phase(role, stage)?;
        let bars = self.bars_address()?;
        let slot = self
            .b
            .build_int_add(stage, self.i32c(self.tma.bar_base[&role] as i64), "")?;
        let slot = self.b.build_int_mul(slot, self.i32c(8), "")?;
        let bar = self.b.build_int_add(bars, slot, "")?;
        let word = self.b.build_or(bar, phase, "")?;
        let map = self.map_address(m)?;
        let (_, coords) = tilebook_tir::load_tma(op)
            .ok_or_else(|| GenError("internal: a bulk copy without coordinates".into()))?;
        let outer = self.scalar(coords[0])?.into_int_value();
        let inner = self.scalar(coords[1])?.into_int_value();
        let s = role.layout.swizzled(role.operand);
        let tile_addr = self.smem_u32(tile)?;
        let mut boxes = vec![];
        for j in 0..s.cols / s.block_cols() {
            let dst =
                self.b
                    .build_int_add(tile_addr, self.i32c((j * s.block_bytes()) as i64), "")?;
            let c = self
                .b
                .build_int_add(inner, self.i32c((j * s.block_cols()) as i64), "")?;
            boxes.push((dst, c, outer));
        }
        let live = self.prefetch_guard(op)?;
        self.record_tma(
            r,
            TmaIssue {
                map,
                bar,
                live,
                bytes: s.bytes(),
                boxes,
            },
        );
        self.set(r, Reg::B(vec![tile.into(), word.into()]));
        Ok(())
    }

    /// Whether the iteration a pipelined load prefetches for runs: the
    /// conjunction of the pipeliner's guards, the outermost `guards` AND
    /// terms of its mask (`pipeline::guard_load`: `mask & splat(c)`, or
    /// `splat(c)` for a load that had no mask), as an `i32` 0 or 1. None
    /// for an unguarded load, or a mask not of that shape.
    fn prefetch_guard(&self, op: &Op) -> R<Option<IntValue<'ctx>>> {
        let OpKind::Load {
            mask: true, guards, ..
        } = op.kind
        else {
            return Ok(None);
        };
        let splat_of = |v: Value| {
            self.defs
                .get(&v)
                .filter(|d| d.kind == OpKind::Splat)
                .and_then(|d| d.args.first().copied())
        };
        let mut m = op.args[1];
        let mut conds = vec![];
        for _ in 0..guards {
            if let Some(c) = splat_of(m) {
                conds.push(c);
                break;
            }
            match self.defs.get(&m) {
                Some(d) if d.kind == OpKind::Binary(tilebook_tir::BinOp::And) => {
                    let Some(c) = splat_of(d.args[1]) else {
                        return Ok(None);
                    };
                    conds.push(c);
                    m = d.args[0];
                }
                _ => return Ok(None),
            }
        }
        let mut live: Option<IntValue<'ctx>> = None;
        for c in conds {
            let Ok(BasicValueEnum::IntValue(c)) = self.scalar(c) else {
                return Ok(None);
            };
            let c = self
                .b
                .build_int_z_extend_or_bit_cast(c, self.ctx.i32_type(), "")?;
            live = Some(match live {
                Some(l) => self.b.build_and(l, c, "")?,
                None => c,
            });
        }
        Ok(live)
    }

    /// The parity of the phase the fill of `stage` completes: the role's
    /// phase, flipped after the last stage is filled.
    fn tma_phase(&self, role: TileRole, stage: IntValue<'ctx>) -> R<IntValue<'ctx>> {
        let known = self.tma.phases.borrow().get(&role).copied();
        let slot = match known {
            Some(p) => p,
            None => {
                let p = self.counter_slot()?;
                self.tma.phases.borrow_mut().insert(role, p);
                p
            }
        };
        let i32t = self.ctx.i32_type();
        let phase = self.b.build_load(i32t, slot, "")?.into_int_value();
        let last = self.ring_base[&role.layout].1 as i64 - 1;
        let wraps = self
            .b
            .build_int_compare(IntPredicate::EQ, stage, self.i32c(last), "")?;
        let flipped = self.b.build_xor(phase, self.i32c(1), "")?;
        let next = self.b.build_select(wraps, flipped, phase, "")?;
        self.b.build_store(slot, next)?;
        Ok(phase)
    }

    /// Issue one recorded bulk copy: thread 0 arms the barrier with the
    /// tile's bytes and asks for each column block.
    pub(super) fn issue_tma(&self, t: &TmaIssue<'ctx>) -> R<()> {
        let mut args: Vec<BasicValueEnum> = vec![self.tid.into(), t.bar.into(), t.map.into()];
        let mut text = "{ .reg .pred p; setp.eq.u32 p, $0, 0;".to_string();
        // A prefetch for an iteration that does not run: thread 0 completes
        // the barrier's phase (one arrival) with no copy.
        let first = match t.live {
            Some(live) => {
                text.push_str(
                    " .reg .pred q, n; setp.ne.u32 q, $3, 0; and.pred n, p, !q; and.pred p, p, q; \
                     @n mbarrier.arrive.shared::cta.b64 _, [$1];",
                );
                args.push(live.into());
                4
            }
            None => 3,
        };
        text.push_str(&format!(
            " @p mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], {};",
            t.bytes
        ));
        for (j, (dst, inner, outer)) in t.boxes.iter().enumerate() {
            let n = first + 3 * j;
            text.push_str(&format!(
                " @p cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [${n}], [$2, {{${}, ${}}}], [$1];",
                n + 1,
                n + 2
            ));
            args.extend([dst, inner, outer].map(|x| BasicValueEnum::from(*x)));
        }
        text.push_str(" }");
        let mut constraints = vec!["r", "r", "l"];
        if t.live.is_some() {
            constraints.push("r");
        }
        constraints.extend(std::iter::repeat_n("r", 3 * t.boxes.len()));
        self.ptx_asm(&text, &constraints.join(","), &args)?;
        if self.tma.mixed {
            self.ptx_statement("cp.async.commit_group;")?;
        }
        Ok(())
    }

    /// Wait until the bulk copy of tile value `v` has landed.
    pub(super) fn wait_tma(&self, v: Value) -> R<()> {
        let word = self
            .raw(v)?
            .get(1)
            .copied()
            .ok_or_else(|| GenError("internal: a bulk-copied tile without its barrier".into()))?
            .into_int_value();
        let bar = self.b.build_and(word, self.i32c(!1), "")?;
        let parity = self.b.build_and(word, self.i32c(1), "")?;
        self.ptx_asm(
            "{ .reg .pred done; tb_tma_wait: \
             mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; \
             @!done bra.uni tb_tma_wait; }",
            "r,r",
            &[bar.into(), parity.into()],
        )?;
        Ok(())
    }

    /// The generic address of tensor map `m` (a parameter read in place).
    fn map_address(&self, m: usize) -> R<IntValue<'ctx>> {
        let param = self
            .func
            .get_nth_param((self.tma.first_param + m) as u32)
            .ok_or_else(|| GenError("internal: missing tensor-map parameter".into()))?;
        Ok(self
            .b
            .build_ptr_to_int(param.into_pointer_value(), self.ctx.i64_type(), "")?)
    }

    /// The tensor maps, for `Emitted`.
    pub(super) fn tensor_maps(&self) -> Vec<TensorMapUse> {
        self.tma.maps.clone()
    }

    /// The map a `store[tma=i]` is keyed by: its descriptor, and for a
    /// mapped pointer store where the launch finds the tensor's shape.
    fn store_key(&self, op: &Op) -> Option<(u32, Option<[MapSrc; 3]>)> {
        let (i, _) = tilebook_tir::store_tma(op)?;
        let int_const = |v: Value| match self.defs.get(&v).map(|op| &op.kind) {
            Some(OpKind::Const(tilebook_tir::Const::Int(x))) => Some(*x),
            _ => None,
        };
        match tilebook_tir::store_map(op) {
            Some(m) => Some((i, Some(map_shape(self.k, m, &int_const)?))),
            None => Some((i, None)),
        }
    }

    /// The swizzled tile a bulk store's block is written into straight from
    /// MMA registers: a value in an MMA layout of the block's shape, of 2-
    /// or 4-byte elements (else the block is written from the blocked
    /// layout, row by row).
    fn bulk_store_tile(&self, op: &Op) -> Option<crate::mma::Swizzled> {
        let v = *op.args.get(1)?;
        let l = self.mma.get(&v)?;
        let t = self.ty(v);
        let (_, size) = self.storage_type(t);
        let ok = t.shape == [l.m, l.n] && matches!(size, 2 | 4) && t.dtype()?.size_bytes() == size;
        ok.then(|| crate::mma::Swizzled::new(l.m, l.n, size))
            .flatten()
    }

    /// Write the MMA value `v` (layout `l`) into scratch as the swizzled
    /// tile `s`: each thread's pairs of neighbouring elements as one store.
    fn write_mma_tile(&self, v: Value, l: &MmaLayout, s: &crate::mma::Swizzled) -> R<()> {
        let regs = self.raw(v)?;
        let (et, size) = self.storage_type(self.ty(v));
        let c = self.mma_coords(l)?;
        for i in (0..regs.len()).step_by(2) {
            let (rep, r) = (i / 4, i % 4);
            let (rm, rn) = (rep / l.reps_n(), rep % l.reps_n());
            let (row, col) = self.mma_pos(l, &c, rm, rn, r)?;
            let pair = self.storage_pair(regs[i], regs[i + 1], et)?;
            let off = self.swizzled_offset(s, row, col)?;
            let p = self.smem_addr(0, off, 1)?;
            let st = self.b.build_store(p, pair)?;
            let _ = st.set_alignment(2 * size as u32);
        }
        Ok(())
    }

    /// A bulk tensor store of `op` (a `store[tma=i]` whose descriptor has a
    /// store map): the block written row by row into scratch, then thread 0
    /// asks the copy engine to write it (clipped at the tensor's edges, as
    /// the store's mask is), waiting only until scratch has been read.
    pub(super) fn tma_store(&mut self, op: &Op) -> R<bool> {
        let Some((_, coords)) = tilebook_tir::store_tma(op) else {
            return Ok(false);
        };
        let Some(&m) = self.store_key(op).and_then(|key| self.tma.stores.get(&key)) else {
            return Ok(false);
        };
        let pt = self.ty(op.args[0]).clone();
        let d = pt.elem.pointee().unwrap_or(DType::F32);
        let esize = d.size_bytes();
        let tile = self
            .bulk_store_tile(op)
            .filter(|_| self.tma.maps[m].swizzle != 0);
        let mma = self.mma.get(&op.args[1]).copied();
        let vals = match (tile, mma) {
            (Some(_), Some(_)) => vec![],
            _ => self.regs(op.args[1], self.layout(&pt).regs())?,
        };
        // Earlier readers of scratch finish before it is overwritten.
        self.barrier()?;
        self.need_smem(pt.numel() * esize);
        if let (Some(s), Some(l)) = (tile, mma) {
            self.write_mma_tile(op.args[1], &l, &s)?;
        } else {
            let l = self.layout(&pt);
            let owner = self.first_holder(&l)?;
            for (r, v) in vals.iter().enumerate() {
                let idx = self.elem_index(&l, r)?;
                let p = self.smem_addr(0, idx, esize)?;
                let x = self.encode_mem(*v, d)?;
                self.guarded(owner, vec![], &mut |g| {
                    g.b.build_store(p, x)?;
                    Ok(vec![])
                })?;
            }
        }
        // The threads' writes, then the copy engine's read of them.
        self.ptx_statement("fence.proxy.async.shared::cta;")?;
        self.barrier()?;
        let map = self.map_address(m)?;
        let outer = self.scalar(coords[0])?.into_int_value();
        let inner = self.scalar(coords[1])?.into_int_value();
        let first = self.smem_addr(0, self.i32c(0), esize)?;
        let src = self.b.build_ptr_to_int(first, self.ctx.i32_type(), "")?;
        // One copy per column block of a swizzled tile, else the block.
        let boxes: Vec<(usize, usize)> = match tile {
            Some(s) if mma.is_some() => (0..s.cols / s.block_cols())
                .map(|j| (j * s.block_bytes(), j * s.block_cols()))
                .collect(),
            _ => vec![(0, 0)],
        };
        let mut args: Vec<BasicValueEnum> = vec![self.tid.into(), map.into(), outer.into()];
        let mut text = String::from("{ .reg .pred p; setp.eq.u32 p, $0, 0;");
        for (j, (byte, col)) in boxes.iter().enumerate() {
            let n = 3 + 2 * j;
            text.push_str(&format!(
                " @p cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {{${n}, $2}}], [${}];",
                n + 1
            ));
            let c = self.b.build_int_add(inner, self.i32c(*col as i64), "")?;
            let a = self.b.build_int_add(src, self.i32c(*byte as i64), "")?;
            args.extend([BasicValueEnum::from(c), a.into()]);
        }
        text.push_str(" @p cp.async.bulk.commit_group; @p cp.async.bulk.wait_group.read 0; }");
        let mut constraints = vec!["r", "l", "r"];
        constraints.extend(std::iter::repeat_n("r", 2 * boxes.len()));
        self.ptx_asm(&text, &constraints.join(","), &args)?;
        // Scratch is free again once thread 0 saw it read; where the kernel
        // ends here, nothing else uses it (and the block's shared memory
        // stays until thread 0, which waited for the read, returns).
        let last = self.k.body.ops.last().is_some_and(|l| std::ptr::eq(l, op));
        if !last {
            self.barrier()?;
        }
        Ok(true)
    }
}
