//! Block loads through plain pointers that are block copies of a 2-D
//! strided tensor, marked so that a backend may perform them as bulk tensor
//! copies (`load[.., tma=i, map]`, Hopper's TMA), as it does loads through
//! host tensor descriptors.
//!
//! A load qualifies if it is only ever a `tl.dot` operand, inside a `for`
//! loop whose carried pointer block starts
//! as `p + rows[:, None] * stride + cols[None, :]` (`p` a 16-byte aligned
//! pointer parameter, `stride` a parameter or constant of whole 16-byte
//! rows) and advances by a loop-invariant step along one of the two dims.
//! Each dim's index vector is `start + arange(0, n)`, bounded either
//!
//! - by the load's mask (`idx < bound`, the bound a parameter or constant
//!   once the advance is accounted for): elements past it read as the
//!   load's `other`, zero, as the copy engine's out-of-bounds fill does; or
//! - by a wrap, `(start + arange(0, n)) % m` (Triton's matmul tutorial
//!   wraps its rows and columns so that every address is in bounds). The
//!   copy reads row `start + i` itself, zero past `m`, where the load read
//!   row `(start + i) % m`. Such a row is only accepted where it provably
//!   cannot be seen: the loaded block reaches nothing but elementwise ops,
//!   the matching side of `tl.dot` (a's rows, b's columns), loop carries
//!   and the value of stores whose mask holds `start + i < m` on that dim,
//!   so the rows that differ are never written.
//!
//! A block whose dim 0 has stride 1 (a `[K, N]` block of a tensor stored
//! N-major) is the transpose of a block of that tensor (`map_t`).
//!
//! The mark adds the block's coordinates (row, column, `i32`) and the
//! tensor's rows, columns and row stride (parameters or constants, which
//! the launch reads to build the copy engine's tensor map). The pointers
//! and mask stay: a backend that ignores the mark loads as before.

use crate::ir::*;
use crate::types::{DType, Type};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A linear form over scalar values: `sum(coef * value) + constant`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Sym {
    terms: BTreeMap<Value, i64>,
    constant: i64,
}

impl Sym {
    fn constant(c: i64) -> Sym {
        Sym {
            terms: BTreeMap::new(),
            constant: c,
        }
    }
    fn atom(v: Value) -> Sym {
        Sym {
            terms: BTreeMap::from([(v, 1)]),
            constant: 0,
        }
    }
    fn add(&self, o: &Sym, sign: i64) -> Option<Sym> {
        let mut s = self.clone();
        for (v, c) in &o.terms {
            let e = s.terms.entry(*v).or_insert(0);
            *e = e.checked_add(c.checked_mul(sign)?)?;
            if *e == 0 {
                s.terms.remove(v);
            }
        }
        s.constant = s.constant.checked_add(o.constant.checked_mul(sign)?)?;
        Some(s)
    }
    fn scale(&self, f: i64) -> Option<Sym> {
        let mut s = Sym::constant(self.constant.checked_mul(f)?);
        if f != 0 {
            for (v, c) in &self.terms {
                s.terms.insert(*v, c.checked_mul(f)?);
            }
        }
        Some(s)
    }
    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
    /// `self == f * o` for a constant `f`.
    fn ratio(&self, o: &Sym) -> Option<i64> {
        let f = match o.terms.iter().next() {
            None if self.terms.is_empty() => self.constant.checked_div(o.constant)?,
            None => return None,
            Some((v, c)) => self.terms.get(v)?.checked_div(*c)?,
        };
        (o.scale(f)? == *self).then_some(f)
    }
}

/// One dim of a candidate load's index: `start + arange`, possibly wrapped.
#[derive(Clone, Debug)]
struct DimIndex {
    start: Sym,
    /// `(unwrapped vector, modulus)` of `(start + arange) % m`.
    wrap: Option<(Value, Value)>,
}

/// Where a value is defined.
enum Def {
    Op(Op),
    /// A region's argument (an induction variable or carried value).
    LoopArg,
}

struct Facts {
    defs: HashMap<Value, Def>,
    /// Every use of a value: the op's id and the operand position.
    uses: HashMap<Value, Vec<(usize, usize)>>,
    /// Ops by id (pre-order), with the id of the op whose region holds them.
    ops: Vec<(Op, Option<usize>)>,
    /// The arguments of each region-holding op's first region, by op id
    /// (a loop body's induction variable and carried values).
    body_args: HashMap<usize, Vec<Value>>,
    params: HashMap<Value, (u32, ParamAttrs)>,
}

fn collect(k: &Kernel) -> Facts {
    let mut f = Facts {
        defs: HashMap::new(),
        uses: HashMap::new(),
        ops: vec![],
        body_args: HashMap::new(),
        params: HashMap::new(),
    };
    for (i, p) in k.params.iter().enumerate() {
        f.params.insert(p.value, (i as u32, p.attrs.clone()));
    }
    fn walk(f: &mut Facts, r: &Region, parent: Option<usize>) {
        for op in &r.ops {
            let id = f.ops.len();
            let mut shallow = op.clone();
            shallow.regions.clear();
            f.ops.push((shallow.clone(), parent));
            for (i, a) in op.args.iter().enumerate() {
                f.uses.entry(*a).or_default().push((id, i));
            }
            for res in &op.results {
                f.defs.insert(*res, Def::Op(shallow.clone()));
            }
            if let Some(sub) = op.regions.first() {
                f.body_args.insert(id, sub.args.clone());
            }
            for sub in &op.regions {
                for a in &sub.args {
                    f.defs.insert(*a, Def::LoopArg);
                }
                walk(f, sub, Some(id));
            }
        }
    }
    walk(&mut f, &k.body, None);
    f
}

impl Facts {
    fn op(&self, v: Value) -> Option<&Op> {
        match self.defs.get(&v)? {
            Def::Op(o) => Some(o),
            Def::LoopArg => None,
        }
    }

    /// `v` through `splat`/`broadcast`/identity hints.
    fn through(&self, mut v: Value) -> Value {
        while let Some(o) = self.op(v) {
            match o.kind {
                OpKind::Broadcast | OpKind::MultipleOf(_) | OpKind::MaxContiguous(_) => {
                    v = o.args[0]
                }
                _ => break,
            }
        }
        v
    }

    /// A scalar (or a splat of one) as a linear form of i32 values.
    fn sym(&self, k: &Kernel, v: Value) -> Option<Sym> {
        let v = self.through(v);
        let Some(o) = self.op(v) else {
            return (*k.ty(v) == Type::scalar(DType::I32)).then(|| Sym::atom(v));
        };
        match &o.kind {
            OpKind::Const(Const::Int(c)) => Some(Sym::constant(*c)),
            OpKind::Splat => self.sym(k, o.args[0]),
            OpKind::Binary(BinOp::Add) => self.sym(k, o.args[0])?.add(&self.sym(k, o.args[1])?, 1),
            OpKind::Binary(BinOp::Sub) => self.sym(k, o.args[0])?.add(&self.sym(k, o.args[1])?, -1),
            OpKind::Binary(BinOp::Mul) => {
                let (a, b) = (self.sym(k, o.args[0])?, self.sym(k, o.args[1])?);
                match (a.as_const(), b.as_const()) {
                    (Some(c), _) => b.scale(c),
                    (_, Some(c)) => a.scale(c),
                    _ => None,
                }
            }
            _ if *k.ty(v) == Type::scalar(DType::I32) => Some(Sym::atom(v)),
            _ => None,
        }
    }

    /// A 1-D index vector `start + arange(0, n)` (no wrap).
    fn affine_vector(&self, k: &Kernel, v: Value) -> Option<Sym> {
        let o = self.op(self.through(v))?;
        match &o.kind {
            OpKind::Arange(a, _) => Some(Sym::constant(*a)),
            OpKind::Binary(BinOp::Add) => {
                let (x, y) = (o.args[0], o.args[1]);
                let splat = |s: Value| {
                    let d = self.op(s)?;
                    matches!(d.kind, OpKind::Splat | OpKind::Const(_))
                        .then(|| self.sym(k, s))
                        .flatten()
                };
                if let (Some(start), Some(s)) = (self.affine_vector(k, x), splat(y)) {
                    start.add(&s, 1)
                } else {
                    self.affine_vector(k, y)?.add(&splat(x)?, 1)
                }
            }
            _ => None,
        }
    }

    /// A 1-D index vector, possibly wrapped by `% m` (`m` a splat scalar).
    fn dim_index(&self, k: &Kernel, v: Value) -> Option<DimIndex> {
        let o = self.op(self.through(v))?;
        if o.kind == OpKind::Binary(BinOp::Rem) {
            let m = self.op(o.args[1])?;
            if m.kind != OpKind::Splat {
                return None;
            }
            return Some(DimIndex {
                start: self.affine_vector(k, o.args[0])?,
                wrap: Some((o.args[0], m.args[0])),
            });
        }
        Some(DimIndex {
            start: self.affine_vector(k, v)?,
            wrap: None,
        })
    }

    /// A `[n, 1]` or `[1, n]` view of a 1-D vector: (dim, vector).
    fn along(&self, k: &Kernel, v: Value) -> Option<(usize, Value)> {
        let o = self.op(self.through(v))?;
        if !matches!(o.kind, OpKind::Reshape | OpKind::ExpandDims(_)) {
            return None;
        }
        let inner = o.args[0];
        if k.ty(inner).shape.len() != 1 {
            return None;
        }
        let s = &k.ty(o.results[0]).shape;
        match s[..] {
            [_, 1] => Some((0, inner)),
            [1, _] => Some((1, inner)),
            _ => None,
        }
    }

    /// The terms of a 2-D offset block: per dim (vector, stride), and the
    /// scalar part.
    fn offsets(
        &self,
        k: &Kernel,
        v: Value,
        terms: &mut Vec<(usize, Value, Sym)>,
        scalar: &mut Sym,
    ) -> Option<()> {
        let v = self.through(v);
        let o = self.op(v)?;
        match &o.kind {
            OpKind::Binary(BinOp::Add) => {
                self.offsets(k, o.args[0], terms, scalar)?;
                self.offsets(k, o.args[1], terms, scalar)
            }
            OpKind::Splat | OpKind::Const(Const::Int(_)) => {
                *scalar = scalar.add(&self.sym(k, v)?, 1)?;
                Some(())
            }
            OpKind::Binary(BinOp::Mul) => {
                let (a, b) = (o.args[0], o.args[1]);
                let (vector, stride) = match (self.along(k, a), self.along(k, b)) {
                    (Some(x), None) => (x, self.sym(k, b)?),
                    (None, Some(x)) => (x, self.sym(k, a)?),
                    _ => return None,
                };
                terms.push((vector.0, vector.1, stride));
                Some(())
            }
            _ => {
                let (d, vector) = self.along(k, v)?;
                terms.push((d, vector, Sym::constant(1)));
                Some(())
            }
        }
    }

    /// The conjunction a mask is: its `cmp lt` pieces as (dim, vector, bound).
    fn mask_pieces(&self, k: &Kernel, m: Value, out: &mut Vec<(usize, Value, Value)>) -> bool {
        let m = self.through(m);
        let Some(o) = self.op(m) else {
            return false;
        };
        match o.kind {
            OpKind::Binary(BinOp::And) => {
                self.mask_pieces(k, o.args[0], out) && self.mask_pieces(k, o.args[1], out)
            }
            OpKind::Cmp(CmpPred::Lt) => match self.along(k, o.args[0]) {
                Some((d, vector)) => {
                    out.push((d, vector, o.args[1]));
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

/// A parameter or constant the launch can read: `Some` if `v` is one.
fn host_value(f: &Facts, v: Value) -> bool {
    f.params.contains_key(&v) || matches!(f.op(v).map(|o| &o.kind), Some(OpKind::Const(_)))
}

/// What a qualifying load becomes.
struct Plan {
    param: u32,
    /// The block's first element's row and column in the tensor.
    coords: [Sym; 2],
    order: MapOrder,
    /// rows, columns, row stride: each a host value or a constant.
    map: [Result<Value, i64>; 3],
}

/// Mark every qualifying load, and with `stores` every qualifying store;
/// whether any was.
pub fn annotate(k: &mut Kernel, stores: bool) -> bool {
    let f = collect(k);
    let mut plans: HashMap<Value, Plan> = HashMap::new();
    for (id, (op, _)) in f.ops.iter().enumerate() {
        if op.kind != OpKind::For {
            continue;
        }
        let Some(body) = find_region(&k.body, id) else {
            continue;
        };
        for load in &body.ops {
            if let Some(p) = plan_load(k, &f, op, body, load) {
                plans.insert(load.results[0], p);
            }
        }
    }
    let stores = match stores {
        true => plan_stores(k, &f),
        false => HashMap::new(),
    };
    if plans.is_empty() && stores.is_empty() {
        return false;
    }
    let mut body = std::mem::take(&mut k.body);
    rewrite(k, &mut body, &plans);
    if !stores.is_empty() {
        rewrite_stores(k, &mut body, &stores);
    }
    k.body = body;
    true
}

/// The stores of a dot's result that are bulk tensor stores: at the
/// kernel's top level, after every other memory access of the program
/// (the copy engine's writes are not ordered before a later load of the
/// program's own), of a `[m, n]` block of the tensor at a 16-byte aligned
/// pointer parameter, `p + rows[:, None] * stride + cols[None, :]`, with
/// the mask `rows < m_bound & cols < n_bound` the copy engine's clipping
/// at the tensor's edges is. Keyed by (pointer, value).
fn plan_stores(k: &Kernel, f: &Facts) -> HashMap<(Value, Value), Plan> {
    let mut out = HashMap::new();
    let dot_shapes: Vec<&[usize]> = f
        .ops
        .iter()
        .filter(|(o, _)| matches!(o.kind, OpKind::Dot { .. }))
        .map(|(o, _)| &k.ty(o.results[0]).shape[..])
        .collect();
    let ops = &k.body.ops;
    for (i, op) in ops.iter().enumerate() {
        let later_memory = ops[i + 1..].iter().any(|o| {
            !o.regions.is_empty()
                || o.kind.has_side_effects()
                || matches!(o.kind, OpKind::Load { .. })
        });
        if later_memory {
            continue;
        }
        if let Some(p) = plan_store(k, f, op, &dot_shapes) {
            out.insert((op.args[0], op.args[1]), p);
        }
    }
    out
}

fn plan_store(k: &Kernel, f: &Facts, op: &Op, dot_shapes: &[&[usize]]) -> Option<Plan> {
    let OpKind::Store {
        mask: true,
        tma: None,
        ..
    } = op.kind
    else {
        return None;
    };
    let t = k.ty(op.args[1]);
    let esize = t.dtype()?.size_bytes() as i64;
    if t.shape.len() != 2 || !matches!(esize, 2 | 4) || !dot_shapes.contains(&&t.shape[..]) {
        return None;
    }
    let b = block_start(k, f, op.args[0], esize)?;
    if b.inner != 1 {
        return None;
    }
    let mut coords: [Sym; 2] = Default::default();
    for (d, (_, v, _)) in b.terms.iter().enumerate() {
        coords[d] = f.affine_vector(k, *v)?;
    }
    if coords.iter().any(|c| {
        c.terms
            .keys()
            .any(|v| *k.ty(*v) != Type::scalar(DType::I32))
    }) {
        return None;
    }
    let [Some(rows), Some(cols)] = mask_bounds(k, f, op.args[2], &coords)? else {
        return None;
    };
    Some(Plan {
        param: b.param,
        coords,
        order: MapOrder::Rows,
        map: [rows, cols, b.stride],
    })
}

/// Mark the planned stores of the top-level region `r`.
fn rewrite_stores(k: &mut Kernel, r: &mut Region, plans: &HashMap<(Value, Value), Plan>) {
    let ops = std::mem::take(&mut r.ops);
    for mut op in ops {
        let plan = match (op.args.first(), op.args.get(1)) {
            (Some(&p), Some(&v)) => plans.get(&(p, v)),
            _ => None,
        };
        let (Some(p), OpKind::Store { mask: true, .. }) = (plan, &op.kind) else {
            r.ops.push(op);
            continue;
        };
        let extra = plan_args(k, p, op.loc, &mut r.ops);
        op.args.extend(extra);
        op.kind = OpKind::Store {
            mask: true,
            tma: Some(p.param),
            map: true,
        };
        r.ops.push(op);
    }
}

/// A plan's extra operands (coordinates, then rows, columns and stride),
/// computed before the current point.
fn plan_args(k: &mut Kernel, p: &Plan, loc: Loc, out: &mut Vec<Op>) -> Vec<Value> {
    let mut extra = vec![];
    for c in &p.coords {
        extra.push(materialize(k, c, loc, out));
    }
    for m in &p.map {
        extra.push(match m {
            Ok(v) => *v,
            Err(c) => materialize(k, &Sym::constant(*c), loc, out),
        });
    }
    extra
}

/// The body of op number `id` (pre-order, as `collect` numbers them).
fn find_region(r: &Region, id: usize) -> Option<&Region> {
    fn go<'a>(r: &'a Region, id: usize, n: &mut usize) -> Option<&'a Region> {
        for op in &r.ops {
            let mine = *n;
            *n += 1;
            if mine == id {
                return op.regions.first();
            }
            for sub in &op.regions {
                if let Some(x) = go(sub, id, n) {
                    return Some(x);
                }
            }
        }
        None
    }
    go(r, id, &mut 0)
}

/// A block of pointers `p + rows * stride + cols` (in one `addptr` or
/// several) into the tensor at a 16-byte aligned pointer parameter.
struct BlockStart {
    param: u32,
    /// Per dim (dim, index vector, stride), sorted by dim.
    terms: Vec<(usize, Value, Sym)>,
    /// The dim of stride 1.
    inner: usize,
    row_stride: Sym,
    /// The row stride as a host value or a constant.
    stride: Result<Value, i64>,
}

fn block_start(k: &Kernel, f: &Facts, init: Value, esize: i64) -> Option<BlockStart> {
    let (mut terms, mut scalar) = (vec![], Sym::default());
    let mut at = f.through(init);
    let base = loop {
        let o = f.op(at)?;
        match o.kind {
            OpKind::AddPtr => {
                f.offsets(k, o.args[1], &mut terms, &mut scalar)?;
                at = f.through(o.args[0]);
            }
            OpKind::Splat => break o.args[0],
            _ => return None,
        }
    };
    let (param, attrs) = f.params.get(&base)?;
    if attrs.divisibility % 16 != 0 {
        return None;
    }
    if scalar != Sym::default() || terms.len() != 2 || terms[0].0 == terms[1].0 {
        return None;
    }
    terms.sort_by_key(|t| t.0);
    // The dim of stride 1 runs along the tensor's columns: dim 1 as a rule,
    // dim 0 for a `[K, N]` block of a tensor stored N-major (tutorial 03's
    // pre-transposed fp8 `b`), read as its transpose.
    let one = Sym::constant(1);
    let inner = match (terms[0].2 == one, terms[1].2 == one) {
        (_, true) => 1,
        (true, false) => 0,
        _ => return None,
    };
    let row_stride = terms[1 - inner].2.clone();
    let stride = match row_stride.as_const() {
        Some(c) if c > 0 && c.checked_mul(esize).is_some_and(|b| b % 16 == 0) => Err(c),
        Some(_) => return None,
        None => {
            let (v, 1) = row_stride.terms.iter().next().map(|(v, c)| (*v, *c))? else {
                return None;
            };
            let (_, a) = f.params.get(&v)?;
            if row_stride.terms.len() != 1
                || row_stride.constant != 0
                || (a.divisibility as i64 * esize) % 16 != 0
            {
                return None;
            }
            Ok(v)
        }
    };
    Some(BlockStart {
        param: *param,
        terms,
        inner,
        row_stride,
        stride,
    })
}

/// The bounds a mask's pieces put on a block whose dims start at
/// `coords`: per dim, the host value or constant `idx < bound` holds
/// with; `None` where a piece is not of that form.
fn mask_bounds(
    k: &Kernel,
    f: &Facts,
    mask: Value,
    coords: &[Sym; 2],
) -> Option<[Option<Result<Value, i64>>; 2]> {
    let mut pieces = vec![];
    if !f.mask_pieces(k, mask, &mut pieces) {
        return None;
    }
    let mut bounds: [Option<Result<Value, i64>>; 2] = [None, None];
    for (d, vector, bound) in pieces {
        let s = f.affine_vector(k, vector)?;
        // idx = coords[d] + i < coords[d] - s + bound
        let b = coords[d].add(&s, -1)?.add(&f.sym(k, bound)?, 1)?;
        let b = match b.as_const() {
            Some(c) if c > 0 => Err(c),
            Some(_) => return None,
            None => {
                let (&v, &c) = b.terms.iter().next()?;
                if b.terms.len() != 1 || c != 1 || b.constant != 0 || !f.params.contains_key(&v) {
                    return None;
                }
                Ok(v)
            }
        };
        if bounds[d].is_some_and(|x| x != b) {
            return None;
        }
        bounds[d] = Some(b);
    }
    Some(bounds)
}

fn plan_load(k: &Kernel, f: &Facts, for_op: &Op, body: &Region, load: &Op) -> Option<Plan> {
    let OpKind::Load {
        mask,
        other,
        tma: None,
        ..
    } = load.kind
    else {
        return None;
    };
    // Only dot operands: their tiles are what a bulk copy can fill.
    let uses = f.uses.get(&load.results[0])?;
    if !uses
        .iter()
        .all(|&(id, pos)| matches!(f.ops[id].0.kind, OpKind::Dot { .. }) && pos < 2)
    {
        return None;
    }
    let t = k.ty(load.results[0]);
    let dtype = t.dtype()?;
    let esize = dtype.size_bytes() as i64;
    if t.shape.len() != 2 || !matches!(esize, 1 | 2 | 4) {
        return None;
    }
    if other {
        let o = f.op(load.args[1 + mask as usize])?;
        if !matches!(o.kind, OpKind::Const(c) if c.as_f64() == 0.0) {
            return None;
        }
    }
    // The pointer: a carried block advanced by a loop-invariant step.
    let j = body.args.iter().position(|a| *a == load.args[0])?;
    if j == 0 {
        return None;
    }
    let init = *for_op.args.get(3 + j - 1)?;
    let yielded = *body.ops.last()?.args.get(j - 1)?;
    let inside: HashSet<Value> = body.ops.iter().flat_map(|o| o.results.clone()).collect();
    let step = {
        let o = f.op(yielded)?;
        if o.kind != OpKind::AddPtr || o.args[0] != load.args[0] {
            return None;
        }
        let s = f.through(o.args[1]);
        if inside.contains(&s) && !matches!(f.op(s)?.kind, OpKind::Splat | OpKind::Const(_)) {
            return None;
        }
        let sym = f.sym(k, s)?;
        if sym
            .terms
            .keys()
            .any(|v| inside.contains(v) || body.args.contains(v))
        {
            return None;
        }
        sym
    };
    let b = block_start(k, f, init, esize)?;
    let (param, terms, inner, row_stride, stride_value) =
        (b.param, b.terms, b.inner, b.row_stride, b.stride);
    let outer = 1 - inner;
    let dims: Vec<DimIndex> = terms
        .iter()
        .map(|(_, v, _)| f.dim_index(k, *v))
        .collect::<Option<_>>()?;
    // The advance, in elements along one dim.
    let mut advance = [0i64; 2];
    if step != Sym::default() {
        if let Some(c) = step.as_const() {
            advance[inner] = c;
        } else {
            advance[outer] = step.ratio(&row_stride)?;
        }
    }
    // Iterations so far, as a multiple of the induction variable.
    let iv = body.args[0];
    let lb = f.sym(k, for_op.args[0])?.as_const()?;
    let st = f.sym(k, for_op.args[2])?.as_const()?;
    if lb != 0 || st <= 0 {
        return None;
    }
    let mut coords: [Sym; 2] = Default::default();
    for d in 0..2 {
        if advance[d] != 0 && (dims[d].wrap.is_some() || advance[d] % st != 0) {
            return None;
        }
        coords[d] = dims[d]
            .start
            .add(&Sym::atom(iv).scale(advance[d] / st)?, 1)?;
    }
    // Bounds: the mask's pieces, or the wraps.
    let mut bounds = match mask {
        true => mask_bounds(k, f, load.args[1], &coords)?,
        false => [None, None],
    };
    if (0..2).any(|d| bounds[d].is_some() && dims[d].wrap.is_some()) {
        return None;
    }
    let mut wraps = vec![];
    for d in 0..2 {
        if let Some((unwrapped, m)) = dims[d].wrap {
            if bounds[d].is_some() || !host_value(f, m) {
                return None;
            }
            bounds[d] = Some(match f.op(m).map(|o| &o.kind) {
                Some(OpKind::Const(Const::Int(c))) => Err(*c),
                _ => Ok(m),
            });
            wraps.push((d, unwrapped, m));
        }
    }
    let [Some(rows), Some(cols)] = bounds else {
        return None;
    };
    if coords.iter().any(|c| {
        c.terms
            .keys()
            .any(|v| *k.ty(*v) != Type::scalar(DType::I32))
    }) {
        return None;
    }
    if !wraps.is_empty() && !unseen(k, f, load.results[0], &wraps) {
        return None;
    }
    let (rows, cols) = if inner == 1 {
        (rows, cols)
    } else {
        (cols, rows)
    };
    let [c0, c1] = coords;
    Some(Plan {
        param,
        coords: if inner == 1 { [c0, c1] } else { [c1, c0] },
        order: if inner == 1 {
            MapOrder::Rows
        } else {
            MapOrder::Transposed
        },
        map: [rows, cols, stride_value],
    })
}

/// Whether the rows (or columns) of `v` past the wraps reach nothing a
/// program keeps: only elementwise ops, the matching side of a dot, loop
/// carries and the value of stores masked to `vector < m` along that dim.
fn unseen(k: &Kernel, f: &Facts, v: Value, wraps: &[(usize, Value, Value)]) -> bool {
    let mut seen: HashSet<(Value, usize)> = HashSet::new();
    let mut work: Vec<(Value, usize)> = wraps.iter().map(|w| (v, w.0)).collect();
    let wrap_of = |d: usize| wraps.iter().find(|w| w.0 == d).copied();
    while let Some((v, d)) = work.pop() {
        if !seen.insert((v, d)) {
            continue;
        }
        let Some(wrap) = wrap_of(d) else {
            return false;
        };
        for &(id, pos) in f.uses.get(&v).map_or(&[][..], |u| &u[..]) {
            let (op, parent) = &f.ops[id];
            match &op.kind {
                k2 if k2.is_elementwise() && !matches!(k2, OpKind::AddPtr) => {
                    work.extend(op.results.iter().map(|r| (*r, d)));
                }
                OpKind::Dot { .. } => match (pos, d) {
                    (0, 0) | (1, 1) | (2, _) => work.push((op.results[0], d)),
                    _ => return false,
                },
                OpKind::Yield => {
                    let Some(p) = parent else { return false };
                    let (outer, _) = &f.ops[*p];
                    match outer.kind {
                        OpKind::For => {
                            work.push((outer.results[pos], d));
                            if let Some(&a) = f.body_args.get(p).and_then(|a| a.get(pos + 1)) {
                                work.push((a, d));
                            }
                        }
                        OpKind::If => work.push((outer.results[pos], d)),
                        _ => return false,
                    }
                }
                OpKind::For if pos >= 3 => {
                    work.push((op.results[pos - 3], d));
                    if let Some(&a) = f.body_args.get(&id).and_then(|a| a.get(pos - 2)) {
                        work.push((a, d));
                    }
                }
                OpKind::Store {
                    mask: true,
                    tma: None,
                    ..
                } if pos == 1 => {
                    let mut pieces = vec![];
                    if !f.mask_pieces(k, op.args[2], &mut pieces) {
                        return false;
                    }
                    let (_, unwrapped, m) = wrap;
                    let held = pieces.iter().any(|&(pd, vector, bound)| {
                        pd == d
                            && f.through(vector) == f.through(unwrapped)
                            && f.op(bound)
                                .is_some_and(|b| b.kind == OpKind::Splat && b.args[0] == m)
                    });
                    if !held {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }
    true
}

/// Emit ops computing `s` (i32) before the current point.
fn materialize(k: &mut Kernel, s: &Sym, loc: Loc, out: &mut Vec<Op>) -> Value {
    let i32t = Type::scalar(DType::I32);
    let c = |k: &mut Kernel, x: i64, out: &mut Vec<Op>| {
        let o = k.op(
            OpKind::Const(Const::Int(x)),
            vec![],
            vec![i32t.clone()],
            loc,
        );
        let r = o.results[0];
        out.push(o);
        r
    };
    let mut acc = c(k, s.constant, out);
    for (&v, &coef) in &s.terms {
        let term = if coef == 1 {
            v
        } else {
            let f = c(k, coef, out);
            let o = k.op(
                OpKind::Binary(BinOp::Mul),
                vec![v, f],
                vec![i32t.clone()],
                loc,
            );
            let r = o.results[0];
            out.push(o);
            r
        };
        let o = k.op(
            OpKind::Binary(BinOp::Add),
            vec![acc, term],
            vec![i32t.clone()],
            loc,
        );
        acc = o.results[0];
        out.push(o);
    }
    acc
}

/// Mark the planned loads of `r` (and of the regions in it), each with its
/// coordinates computed just before it.
fn rewrite(k: &mut Kernel, r: &mut Region, plans: &HashMap<Value, Plan>) {
    let ops = std::mem::take(&mut r.ops);
    for mut op in ops {
        for sub in &mut op.regions {
            rewrite(k, sub, plans);
        }
        let Some(p) = op.results.first().and_then(|v| plans.get(v)) else {
            r.ops.push(op);
            continue;
        };
        let OpKind::Load {
            mask,
            other,
            guards,
            ..
        } = op.kind
        else {
            r.ops.push(op);
            continue;
        };
        let extra = plan_args(k, p, op.loc, &mut r.ops);
        op.args.extend(extra);
        op.kind = OpKind::Load {
            mask,
            other,
            tma: Some(p.param),
            map: Some(p.order),
            guards,
        };
        r.ops.push(op);
    }
}
