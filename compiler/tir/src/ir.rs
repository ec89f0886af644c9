//! The tile IR data structures: one op table (`OpKind`), values, nested regions.
//!
//! A `Kernel` is a list of typed parameters and a body `Region`. Ops live in
//! regions; structured control flow (`for`, `if`, `while`, `reduce` with a
//! combine body) owns nested regions. Every value is defined once, by an op
//! result or a region argument, and is visible in the rest of its region and
//! in regions nested inside it (no dominance analysis needed).
//!
//! Each op variant documents its operands, attributes and results; the
//! printer, parser and verifier all follow this table.

use crate::types::{DType, Type};

/// An SSA value: an index into `Kernel::values`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A source position in the kernel's cell or file (1-based; 0 = unknown).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Loc {
    pub line: u32,
    pub col: u32,
}

/// A constant number. Integers are stored sign- or zero-extended to 64 bits
/// according to the value's dtype; floats as `f64` already rounded to theirs.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Const {
    Int(i64),
    Float(f64),
}

impl Const {
    pub fn as_f64(self) -> f64 {
        match self {
            Const::Int(i) => i as f64,
            Const::Float(f) => f,
        }
    }
    pub fn as_i64(self) -> i64 {
        match self {
            Const::Int(i) => i,
            Const::Float(f) => f as i64,
        }
    }
    /// Bitwise identity, so that CSE treats `-0.0`/`0.0` and NaNs correctly.
    pub fn key(self) -> (u8, u64) {
        match self {
            Const::Int(i) => (0, i as u64),
            Const::Float(f) => (1, f.to_bits()),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    /// Bitwise not (`~`); on `i1` it is logical not.
    Not,
    Abs,
    Exp,
    Exp2,
    Log,
    Log2,
    /// IEEE square root (`tl.sqrt_rn`).
    Sqrt,
    /// Square root as fast as the target has it (`tl.sqrt`: the GPU's
    /// `sqrt.approx` in fp32, as Triton; IEEE on the CPU backend and in fp64).
    SqrtApprox,
    Rsqrt,
    Sin,
    Cos,
    Floor,
    Ceil,
    /// A math library function (`libdevice.asin`, `tl.erf`): floats only.
    Lib(crate::libm::LibFn),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Float division, or integer division truncating toward zero (C semantics, as Triton).
    Div,
    /// fp32 division as Triton's `/` gives it on NVIDIA GPUs (`div.full.f32`:
    /// within 2 ulp, not correctly rounded); the CPU backend divides exactly.
    /// `tl.div_rn` and `tl.fdiv(..., ieee_rounding=True)` are `Div`.
    DivFull,
    /// Float `fmod`, or integer remainder with the dividend's sign (C semantics).
    Rem,
    And,
    Or,
    Xor,
    Shl,
    /// Arithmetic shift for signed integers, logical for unsigned.
    Shr,
    Min,
    Max,
    /// High 32 (or 64) bits of the full integer product.
    UMulHi,
    /// `a ** b` on floats.
    Pow,
    /// A math library function of two floats (`libdevice.atan2`).
    Lib(crate::libm::LibFn2),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CmpPred {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// What an atomic read-modify-write does to the element in memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    /// Signed or unsigned by the element type; IEEE maximum on floats.
    Max,
    Min,
    And,
    Or,
    Xor,
    /// Exchange: store the operand, return the old element.
    Xchg,
}

/// The memory-ordering semantics of an atomic (Triton's `sem=`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemSem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

/// Which threads an atomic's ordering is promised to (Triton's `scope=`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemScope {
    /// The threads of one program (a CTA).
    Cta,
    /// The whole device.
    Gpu,
    /// The device and the host.
    Sys,
}

/// How a `reduce` or `scan` combines two elements.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Combine {
    Add,
    Mul,
    Max,
    Min,
    And,
    Or,
    Xor,
    /// Index of the largest element (first one on ties); result `i32`.
    ArgMax,
    /// Index of the smallest element (first one on ties); result `i32`.
    ArgMin,
    /// The op's region combines: its arguments are (accumulators..., elements...)
    /// and it yields the new accumulators.
    Region,
}

/// How a `load[tma=i, map]` block lies in the tensor it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapOrder {
    /// The block's dim 0 runs along the tensor's rows.
    Rows,
    /// The block's dim 0 runs along the tensor's columns (`map_t`).
    Transposed,
}

/// The op table. Operands are listed as `args`, results as `results` in `Op`.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// `const[value]`: no operands; one result of any scalar or block type (a splat constant).
    Const(Const),
    /// `program_id[axis]`: the program's index along a grid axis; `i32`.
    ProgramId(u8),
    /// `num_programs[axis]`: the grid's size along an axis; `i32`.
    NumPrograms(u8),
    /// `arange[start, end]`: `<end-start x i32>` holding start..end.
    Arange(i64, i64),
    /// `splat x`: a scalar repeated over the result's block shape.
    Splat,
    /// `broadcast x`: dimensions of size 1 stretched to the result's shape (same rank).
    Broadcast,
    /// `expand_dims[axis] x`: a new dimension of size 1 at `axis`.
    ExpandDims(usize),
    /// `reshape x`: same elements in row-major order, new shape.
    Reshape,
    /// `trans[perm] x`: dimensions permuted; result dim `i` is operand dim `perm[i]`.
    Trans(Vec<usize>),
    /// `gather[axis] src, index`: `result[i] = src[i with i[axis] replaced
    /// by index[i]]`; `index` is an integer block shaped like the result, of
    /// `src`'s rank and equal to `src`'s shape off `axis` (`tl.gather`).
    Gather(usize),
    /// `unary[op] x`: elementwise.
    Unary(UnOp),
    /// `binary[op] a, b`: elementwise on equal types.
    Binary(BinOp),
    /// `cmp[pred] a, b`: elementwise, result `i1` of the same shape.
    Cmp(CmpPred),
    /// `select c, a, b`: `c ? a : b` elementwise; `c` is `i1`.
    Select,
    /// `fma a, b, c`: `a * b + c` with one rounding.
    Fma,
    /// `cast x`: value conversion to the result's element type (int <-> float, widths).
    Cast,
    /// `bitcast x`: reinterpret bits as another element type of the same
    /// width; also a pointer as an `i64`/`u64` address and back.
    Bitcast,
    /// `addptr p, off`: pointer advanced by `off` elements of its pointee.
    AddPtr,
    /// `load[mask, other] p (, m) (, o)`: gather through pointers; masked-off lanes take `o` (or 0).
    ///
    /// `load[mask, other, tma=i] p, m, o, c0, c1 ...`: the same load, known
    /// to read the block at element coordinates `c0, c1 ...` (one `i32`
    /// per dim, the block's first element) of the host tensor descriptor
    /// whose base pointer is parameter `i` (its shape and strides follow it);
    /// the mask is then exactly the descriptor's bounds and `o` its padding.
    /// A backend may perform it as a bulk tensor copy (Hopper's TMA) or
    /// ignore the coordinates.
    ///
    /// `load[mask, other, tma=i, map] p, m, o, r, c, rows, cols, stride`:
    /// a load through plain pointers that reads the block at (row `r`,
    /// column `c`) of the 2-D tensor at pointer parameter `i` with `rows`
    /// by `cols` elements, rows `stride` elements apart (each a parameter
    /// or a constant), elements past them read as `o` (`pointer_tma`).
    /// Rows or columns past the bounds that the pointers wrapped around may
    /// read differently: they provably reach no stored element.
    /// `load[.., tma=i, map_t]`: the block is a transposed block of the
    /// tensor (its dim 0 runs along the tensor's columns: a `[K, N]` block
    /// of a tensor stored N-major), `r`, `c` still the tensor's row and
    /// column of its first element.
    ///
    /// `load[.., guards=n]`: the mask's outermost `n` AND terms are splats
    /// of the iteration guards that software pipelining and dot rotation
    /// add (`pipeline::guard_load`): where one is false the iteration the
    /// load is for does not run, and neither the value nor anything made
    /// from it is used, so a backend may skip the load (its value is then
    /// unspecified rather than the mask's `other`).
    Load {
        mask: bool,
        other: bool,
        tma: Option<u32>,
        map: Option<MapOrder>,
        guards: u8,
    },
    /// `store[mask] p, v (, m)`: scatter through pointers; no results.
    /// `store[mask, tma=i] p, v, m, c0, c1 ...`: the same store, known to
    /// write the block at element coordinates `c0, c1 ...` of the host
    /// tensor descriptor whose base pointer is parameter `i` (as `load`'s).
    /// `store[mask, tma=i, map] p, v, m, r, c, rows, cols, stride`: a block
    /// stored through plain pointers known to be the block at row `r`,
    /// column `c` of the row-major tensor at pointer parameter `i` with
    /// `rows`, `cols` and `stride` (as `load[.., map]`'s), the mask being
    /// exactly `row < rows && col < cols` (`pointer_tma`).
    Store {
        mask: bool,
        tma: Option<u32>,
        map: bool,
    },
    /// `atomic[op, sem, scope(, mask)] p, v (, m)`: per element, atomically
    /// replace `*p` by `op(*p, v)` (masked-off lanes do nothing); results the
    /// old elements (0 in masked-off lanes), shaped like `p`.
    AtomicRmw {
        op: AtomicOp,
        sem: MemSem,
        scope: MemScope,
        mask: bool,
    },
    /// `atomic_cas[sem, scope] p, cmp, v`: per element, atomically store `v`
    /// where `*p == cmp`; results the old elements.
    AtomicCas { sem: MemSem, scope: MemScope },
    /// `reduce[axis, combine] x...`: combine along `axis` (removing it). With
    /// `combine = region` the op has one region taking (acc..., x...) and yielding acc...
    Reduce { axis: usize, combine: Combine },
    /// `scan[axis, combine, reverse] x`: inclusive prefix combine along `axis`.
    Scan {
        axis: usize,
        combine: Combine,
        reverse: bool,
    },
    /// `dot a, b, acc`: matrix product `a @ b + acc`; `a: <MxK>`, `b: <KxN>`, `acc: <MxN>`.
    /// `tf32` allows reduced precision for fp32 inputs on the GPU.
    Dot { tf32: bool },
    /// `for lb, ub, step, init...`: one region with arguments (iv, carried...)
    /// ending in `yield`; results are the carried values after the last iteration.
    For,
    /// `if c`: two regions (then, else) without arguments, each ending in `yield`.
    If,
    /// `while init...`: region 0 takes the carried values and yields one `i1`
    /// condition; region 1 takes them and yields the next carried values.
    While,
    /// `yield v...`: terminator of a region.
    Yield,
    /// `barrier`: `tl.debug_barrier`; every thread of the program waits
    /// until all have arrived and their memory accesses are visible.
    Barrier,
    /// `print[prefix] v...`: `tl.device_print`.
    Print(String),
    /// `assert[msg] c`: `tl.device_assert`; stops the launch where `c` is false.
    Assert(String),
    /// `multiple_of[n...] x`: hint that elements are multiples of `n` (per dim); identity.
    MultipleOf(Vec<i64>),
    /// `max_contiguous[n...] x`: hint of contiguous runs; identity.
    MaxContiguous(Vec<i64>),
    /// `inline_asm["asm", "constraints"(, impure)] x...`: PTX run once per
    /// element (`tl.inline_asm_elementwise`, `tl.extra.cuda.globaltimer`);
    /// operands and the one result have the same shape (or are scalars).
    /// GPU only: the CPU backend refuses it.
    InlineAsm {
        asm: String,
        constraints: String,
        pure: bool,
    },
}

impl OpKind {
    /// Ops that act on memory or the outside world by themselves (not
    /// counting what their regions do).
    pub fn has_side_effects(&self) -> bool {
        matches!(
            self,
            OpKind::Store { .. }
                | OpKind::AtomicRmw { .. }
                | OpKind::AtomicCas { .. }
                | OpKind::Barrier
                | OpKind::Print(_)
                | OpKind::Assert(_)
                | OpKind::InlineAsm { pure: false, .. }
        )
    }

    /// Ops without side effects, which CSE and DCE may merge or remove.
    pub fn is_pure(&self) -> bool {
        !(self.has_side_effects()
            || matches!(
                self,
                OpKind::Yield | OpKind::For | OpKind::If | OpKind::While
            ))
    }

    /// Ops whose result at an index depends only on operands at that index.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            OpKind::InlineAsm { .. }
                | OpKind::Unary(_)
                | OpKind::Binary(_)
                | OpKind::Cmp(_)
                | OpKind::Select
                | OpKind::Fma
                | OpKind::Cast
                | OpKind::Bitcast
                | OpKind::AddPtr
                | OpKind::MultipleOf(_)
                | OpKind::MaxContiguous(_)
        )
    }
}

/// An operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub args: Vec<Value>,
    pub results: Vec<Value>,
    pub regions: Vec<Region>,
    pub loc: Loc,
}

/// A list of ops with arguments (loop induction variables, carried values).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Region {
    pub args: Vec<Value>,
    pub ops: Vec<Op>,
}

/// A kernel parameter's specialization facts (Triton's divisibility and equal-to-1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParamAttrs {
    /// Known to be divisible by this (16 from the launch's specialization), or 1.
    pub divisibility: u32,
    /// A float known to lie in `[2^-60, 2^60]` (the launch's specialization,
    /// `fp32:pos`): scaling it by a moderate constant stays positive and
    /// finite, which `codegen/scaled.rs` uses to drop its in-loop branch.
    pub positive: bool,
}

impl ParamAttrs {
    /// Divisibility `d`, nothing else known.
    pub fn divisible(d: u32) -> ParamAttrs {
        ParamAttrs {
            divisibility: d,
            positive: false,
        }
    }
}

/// The range `ParamAttrs::positive` promises, as powers of two.
pub const POSITIVE_RANGE: (i32, i32) = (-60, 60);

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub value: Value,
    pub attrs: ParamAttrs,
}

/// One specialization of a kernel, in tile IR.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub body: Region,
    /// The type of every value, indexed by `Value`.
    pub types: Vec<Type>,
}

/// The operand of a `load` that gives masked-off lanes their value, if any
/// (the coordinates of a `tma` load follow it).
pub fn load_other(op: &Op) -> Option<Value> {
    match op.kind {
        OpKind::Load {
            mask, other: true, ..
        } => op.args.get(1 + mask as usize).copied(),
        _ => None,
    }
}

/// The block coordinates of a `store[tma=i]`, as `load_tma`'s.
pub fn store_tma(op: &Op) -> Option<(u32, &[Value])> {
    match op.kind {
        OpKind::Store {
            mask,
            tma: Some(i),
            map,
        } => {
            let rest = op.args.get(2 + mask as usize..)?;
            let extra = if map { 3 } else { 0 };
            Some((i, rest.get(..rest.len().checked_sub(extra)?)?))
        }
        _ => None,
    }
}

/// The tensor a `store[tma=i, map]` writes: its rows, columns and row
/// stride.
pub fn store_map(op: &Op) -> Option<[Value; 3]> {
    match op.kind {
        OpKind::Store {
            tma: Some(_),
            map: true,
            ..
        } => op
            .args
            .get(op.args.len().checked_sub(3)?..)?
            .try_into()
            .ok(),
        _ => None,
    }
}

/// The block coordinates of a `load[tma=i]`: the parameter index and one
/// `i32` per dim.
pub fn load_tma(op: &Op) -> Option<(u32, &[Value])> {
    match op.kind {
        OpKind::Load {
            mask,
            other,
            tma: Some(i),
            map,
            ..
        } => {
            let rest = op.args.get(1 + mask as usize + other as usize..)?;
            let extra = if map.is_some() { 3 } else { 0 };
            Some((i, rest.get(..rest.len().checked_sub(extra)?)?))
        }
        _ => None,
    }
}

/// The tensor a `load[tma=i, map]` reads: its rows, columns and row
/// stride, and how the block lies in it.
pub fn load_map(op: &Op) -> Option<([Value; 3], MapOrder)> {
    match op.kind {
        OpKind::Load {
            tma: Some(_),
            map: Some(order),
            ..
        } => Some((
            op.args
                .get(op.args.len().checked_sub(3)?..)?
                .try_into()
                .ok()?,
            order,
        )),
        _ => None,
    }
}

impl Kernel {
    pub fn new(name: impl Into<String>) -> Kernel {
        Kernel {
            name: name.into(),
            params: vec![],
            body: Region::default(),
            types: vec![],
        }
    }

    pub fn new_value(&mut self, ty: Type) -> Value {
        self.types.push(ty);
        Value(self.types.len() as u32 - 1)
    }

    pub fn ty(&self, v: Value) -> &Type {
        &self.types[v.0 as usize]
    }

    pub fn add_param(&mut self, name: impl Into<String>, ty: Type, attrs: ParamAttrs) -> Value {
        let value = self.new_value(ty);
        self.params.push(Param {
            name: name.into(),
            value,
            attrs,
        });
        self.body.args.push(value);
        value
    }

    /// Build an op with fresh result values of the given types.
    pub fn op(&mut self, kind: OpKind, args: Vec<Value>, result_types: Vec<Type>, loc: Loc) -> Op {
        let results = result_types
            .into_iter()
            .map(|t| self.new_value(t))
            .collect();
        Op {
            kind,
            args,
            results,
            regions: vec![],
            loc,
        }
    }

    /// Count of ops, nested regions included.
    pub fn op_count(&self) -> usize {
        fn count(r: &Region) -> usize {
            r.ops
                .iter()
                .map(|o| 1 + o.regions.iter().map(count).sum::<usize>())
                .sum()
        }
        count(&self.body)
    }
}

/// Walk every op of a region, nested ones included, in order.
pub fn walk_ops<'a>(r: &'a Region, f: &mut dyn FnMut(&'a Op)) {
    for op in &r.ops {
        f(op);
        for sub in &op.regions {
            walk_ops(sub, f);
        }
    }
}

/// The ops of the last `for` loop in `k` (nested loops included), for the
/// scheduling passes' unit tests.
#[cfg(test)]
pub(crate) fn last_loop_body(k: &Kernel) -> Vec<Op> {
    let mut found = None;
    walk_ops(&k.body, &mut |op| {
        if op.kind == OpKind::For {
            found = Some(op.regions[0].ops.clone());
        }
    });
    found.expect("a loop")
}

/// The element type an integer `Const` must be truncated to, for folding.
pub fn wrap_int(v: i64, d: DType) -> i64 {
    match d {
        DType::I1 => v & 1,
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        DType::U16 => v as u16 as i64,
        DType::U32 => v as u32 as i64,
        _ => v,
    }
}

/// Round an `f64` to what `d` can hold (for constants and folding); fp16 and
/// bf16 through fp32, as a kernel's float constant is an fp32 one first.
pub fn round_float(v: f64, d: DType) -> f64 {
    match d {
        DType::F64 => v,
        DType::F32 => v as f32 as f64,
        DType::F16 => half::f16::from_f32(v as f32).to_f64(),
        DType::BF16 => half::bf16::from_f32(v as f32).to_f64(),
        DType::F8E5 | DType::F8E4NV => crate::fp8::round_to_fp8(v, d),
        _ => v,
    }
}
