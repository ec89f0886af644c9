//! The tile IR verifier: scoping, single definition, op type rules, terminators.
//!
//! Runs after every pass in tests and debug builds. An error names the op (its
//! text head and source location) and what is wrong with it.

use crate::ir::*;
use crate::print::op_head;
use crate::types::{DType, Elem, Type};
use std::collections::HashSet;

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    pub message: String,
    pub loc: Loc,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.loc != Loc::default() {
            write!(f, "[{}:{}] ", self.loc.line, self.loc.col)?;
        }
        f.write_str(&self.message)
    }
}

/// Check the kernel; the first problem found is the error.
pub fn verify(k: &Kernel) -> Result<(), VerifyError> {
    let mut v = Verifier {
        k,
        defined: HashSet::new(),
        scopes: vec![],
    };
    v.scopes.push(vec![]);
    for p in &k.params {
        v.define(p.value, Loc::default())?;
    }
    v.region(&k.body, false)
}

struct Verifier<'a> {
    k: &'a Kernel,
    defined: HashSet<Value>,
    /// Values visible at this point, one list per open region.
    scopes: Vec<Vec<Value>>,
}

impl Verifier<'_> {
    fn define(&mut self, v: Value, loc: Loc) -> Result<(), VerifyError> {
        if v.0 as usize >= self.k.types.len() {
            return Err(VerifyError {
                message: format!("value %{} has no type", v.0),
                loc,
            });
        }
        if !self.defined.insert(v) {
            return Err(VerifyError {
                message: format!("value %{} is defined twice", v.0),
                loc,
            });
        }
        self.scopes.last_mut().expect("scope").push(v);
        Ok(())
    }

    fn visible(&self, v: Value) -> bool {
        self.scopes.iter().any(|s| s.contains(&v))
    }

    fn region(&mut self, r: &Region, needs_yield: bool) -> Result<(), VerifyError> {
        for (i, op) in r.ops.iter().enumerate() {
            let last = i + 1 == r.ops.len();
            if op.kind == OpKind::Yield && !(last && needs_yield) {
                return Err(VerifyError {
                    message: "`yield` may only end the region of a for/if/while/reduce".into(),
                    loc: op.loc,
                });
            }
            self.op(op)?;
        }
        if needs_yield && r.ops.last().map(|o| &o.kind) != Some(&OpKind::Yield) {
            return Err(VerifyError {
                message: "region does not end with `yield`".into(),
                loc: r.ops.last().map(|o| o.loc).unwrap_or_default(),
            });
        }
        Ok(())
    }

    fn sub_region(&mut self, r: &Region) -> Result<(), VerifyError> {
        self.scopes.push(vec![]);
        for &a in &r.args {
            self.define(a, Loc::default())?;
        }
        let res = self.region(r, true);
        self.scopes.pop();
        res
    }

    /// A `tma=i` attribute's descriptor (base parameter `i`, its shape and
    /// strides after it) exists and one `i32` coordinate per dim follows.
    fn tma_ok(&self, i: u32, rank: usize, map: bool, coords: &[Value]) -> bool {
        let params = &self.k.params;
        let i = i as usize;
        (i + 2 * rank < params.len() || map && i < params.len())
            && self.ty(params[i].value).elem.is_ptr()
            && coords.len() >= rank
            && coords[..rank]
                .iter()
                .all(|c| *self.ty(*c) == Type::scalar(DType::I32))
    }

    fn op(&mut self, op: &Op) -> Result<(), VerifyError> {
        for &a in &op.args {
            if !self.visible(a) {
                return self.fail(
                    op,
                    &format!("operand %{} is not defined before this op", a.0),
                );
            }
        }
        for r in &op.regions {
            self.sub_region(r)?;
        }
        self.check_types(op)?;
        for &r in &op.results {
            self.define(r, op.loc)?;
        }
        Ok(())
    }

    fn fail<T>(&self, op: &Op, msg: &str) -> Result<T, VerifyError> {
        Err(VerifyError {
            message: format!("`{}`: {msg}", op_head(&op.kind)),
            loc: op.loc,
        })
    }

    fn ty(&self, v: Value) -> &Type {
        self.k.ty(v)
    }

    fn yields(&self, r: &Region) -> Vec<&Type> {
        match r.ops.last() {
            Some(y) if y.kind == OpKind::Yield => y.args.iter().map(|&a| self.k.ty(a)).collect(),
            _ => vec![],
        }
    }

    fn check_types(&self, op: &Op) -> Result<(), VerifyError> {
        let counts = |na: usize, nr: usize| op.args.len() == na && op.results.len() == nr;
        // A missing operand reads as a type no rule accepts (the rules read
        // operands before or beside checking their counts; an op parsed
        // from text may have any number).
        let missing = Type::block(Elem::Scalar(DType::I1), vec![0]);
        let arg = |i: usize| op.args.get(i).map_or(&missing, |&a| self.ty(a));
        let res = |i: usize| op.results.get(i).map_or(&missing, |&a| self.ty(a));
        let ok = match &op.kind {
            OpKind::Const(_) => counts(0, 1) && !res(0).elem.is_ptr(),
            OpKind::ProgramId(a) | OpKind::NumPrograms(a) => {
                counts(0, 1) && *a < 3 && *res(0) == Type::scalar(DType::I32)
            }
            OpKind::Arange(s, e) => {
                counts(0, 1)
                    && e > s
                    && *res(0) == Type::block(Elem::Scalar(DType::I32), vec![(e - s) as usize])
            }
            OpKind::Splat => counts(1, 1) && !arg(0).is_block() && res(0).elem == arg(0).elem,
            OpKind::Broadcast => {
                counts(1, 1)
                    && arg(0).elem == res(0).elem
                    && arg(0).shape.len() == res(0).shape.len()
                    && arg(0)
                        .shape
                        .iter()
                        .zip(&res(0).shape)
                        .all(|(a, r)| a == r || *a == 1)
            }
            OpKind::ExpandDims(axis) => {
                let mut shape = arg(0).shape.clone();
                counts(1, 1) && *axis <= shape.len() && {
                    shape.insert(*axis, 1);
                    *res(0) == arg(0).with_shape(shape)
                }
            }
            OpKind::Reshape => {
                counts(1, 1) && arg(0).elem == res(0).elem && arg(0).numel() == res(0).numel()
            }
            OpKind::Trans(perm) => {
                let mut sorted = perm.clone();
                sorted.sort();
                counts(1, 1)
                    && sorted == (0..arg(0).shape.len()).collect::<Vec<_>>()
                    && *res(0) == arg(0).with_shape(perm.iter().map(|&p| arg(0).shape[p]).collect())
            }
            OpKind::Gather(axis) => {
                let (src, index) = (arg(0), arg(1));
                counts(2, 1)
                    && src.is_block()
                    && *axis < src.shape.len()
                    && index.shape.len() == src.shape.len()
                    && index.dtype().is_some_and(DType::is_int)
                    && (0..src.shape.len()).all(|d| d == *axis || index.shape[d] == src.shape[d])
                    && *res(0) == src.with_shape(index.shape.clone())
            }
            OpKind::Unary(u) => {
                let d = arg(0).dtype();
                counts(1, 1)
                    && res(0) == arg(0)
                    && match u {
                        UnOp::Neg | UnOp::Abs => d.is_some(),
                        UnOp::Not => d.is_some_and(DType::is_int),
                        _ => d.is_some_and(DType::is_float),
                    }
            }
            OpKind::Binary(b) => {
                let d = arg(0).dtype();
                counts(2, 1)
                    && arg(0) == arg(1)
                    && res(0) == arg(0)
                    && match b {
                        BinOp::And
                        | BinOp::Or
                        | BinOp::Xor
                        | BinOp::Shl
                        | BinOp::Shr
                        | BinOp::UMulHi => d.is_some_and(DType::is_int),
                        BinOp::Pow | BinOp::Lib(_) | BinOp::DivFull => {
                            d.is_some_and(DType::is_float)
                        }
                        _ => d.is_some(),
                    }
            }
            OpKind::Cmp(_) => {
                counts(2, 1)
                    && arg(0) == arg(1)
                    && *res(0) == arg(0).with_elem(Elem::Scalar(DType::I1))
            }
            OpKind::Select => {
                counts(3, 1)
                    && arg(0).elem == Elem::Scalar(DType::I1)
                    && arg(1) == arg(2)
                    && res(0) == arg(1)
                    && (arg(0).shape == res(0).shape || !arg(0).is_block())
            }
            OpKind::Fma => {
                counts(3, 1)
                    && arg(0) == arg(1)
                    && arg(1) == arg(2)
                    && res(0) == arg(0)
                    && arg(0).dtype().is_some_and(DType::is_float)
            }
            OpKind::Cast => {
                counts(1, 1)
                    && arg(0).shape == res(0).shape
                    && arg(0).dtype().is_some()
                    && res(0).dtype().is_some()
            }
            OpKind::Bitcast => {
                counts(1, 1)
                    && arg(0).shape == res(0).shape
                    && match (arg(0).elem, res(0).elem) {
                        (Elem::Scalar(a), Elem::Scalar(b)) => a.bits() == b.bits(),
                        // Addresses as 64-bit integers and back (tensors of pointers).
                        (Elem::Ptr(_), Elem::Ptr(_)) => true,
                        (Elem::Scalar(d), Elem::Ptr(_)) | (Elem::Ptr(_), Elem::Scalar(d)) => {
                            matches!(d, DType::I64 | DType::U64)
                        }
                    }
            }
            OpKind::AddPtr => {
                counts(2, 1)
                    && arg(0).elem.is_ptr()
                    && res(0) == arg(0)
                    && arg(1).dtype().is_some_and(DType::is_int)
                    && arg(1).shape == arg(0).shape
            }
            OpKind::Load {
                mask,
                other,
                tma,
                map,
                guards,
            } => {
                let n = 1 + *mask as usize + *other as usize;
                if *guards > 0 && !*mask {
                    return self.fail(op, "a guarded load has no mask");
                }
                let coords = if tma.is_some() { arg(0).shape.len() } else { 0 };
                if map.is_some() && (tma.is_none() || coords != 2) {
                    return self.fail(op, "a mapped load is not a 2-D tma load");
                }
                if let Some(i) = tma {
                    if !self.tma_ok(*i, coords, map.is_some(), op.args.get(n..).unwrap_or(&[])) {
                        return self
                            .fail(op, "a tma load's descriptor or coordinates are malformed");
                    }
                }
                counts(n + coords + if map.is_some() { 3 } else { 0 }, 1) && {
                    let p = arg(0);
                    let value = match p.elem {
                        Elem::Ptr(d) => p.with_elem(Elem::Scalar(d)),
                        _ => return self.fail(op, "the address operand is not a pointer"),
                    };
                    (!*mask || *arg(1) == p.with_elem(Elem::Scalar(DType::I1)))
                        && (!*other || *arg(n - 1) == value)
                        && *res(0) == value
                }
            }
            OpKind::Store { mask, tma, map } => {
                let n = 2 + *mask as usize;
                let coords = if tma.is_some() { arg(0).shape.len() } else { 0 };
                if *map && (tma.is_none() || coords != 2 || !*mask) {
                    return self.fail(op, "a mapped store is not a masked 2-D tma store");
                }
                if let Some(i) = tma {
                    if !self.tma_ok(*i, coords, *map, op.args.get(n..).unwrap_or(&[])) {
                        return self
                            .fail(op, "a tma store's descriptor or coordinates are malformed");
                    }
                }
                counts(n + coords + if *map { 3 } else { 0 }, 0) && {
                    let p = arg(0);
                    match p.elem {
                        Elem::Ptr(d) => {
                            *arg(1) == p.with_elem(Elem::Scalar(d))
                                && (!*mask || *arg(2) == p.with_elem(Elem::Scalar(DType::I1)))
                        }
                        _ => false,
                    }
                }
            }
            OpKind::AtomicRmw { mask, .. } => {
                counts(2 + *mask as usize, 1) && {
                    let p = arg(0);
                    match p.elem {
                        Elem::Ptr(d) => {
                            let value = p.with_elem(Elem::Scalar(d));
                            *arg(1) == value
                                && *res(0) == value
                                && (!*mask || *arg(2) == p.with_elem(Elem::Scalar(DType::I1)))
                        }
                        _ => false,
                    }
                }
            }
            OpKind::AtomicCas { .. } => {
                counts(3, 1) && {
                    let p = arg(0);
                    match p.elem {
                        Elem::Ptr(d) => {
                            let value = p.with_elem(Elem::Scalar(d));
                            *arg(1) == value && *arg(2) == value && *res(0) == value
                        }
                        _ => false,
                    }
                }
            }
            OpKind::Reduce { axis, combine } => {
                let n = op.args.len();
                n >= 1 && op.results.len() == n && *axis < arg(0).shape.len() && {
                    let mut shape = arg(0).shape.clone();
                    shape.remove(*axis);
                    let mut good = true;
                    for i in 0..n {
                        let expect_elem = match combine {
                            Combine::ArgMax | Combine::ArgMin => Elem::Scalar(DType::I32),
                            _ => arg(i).elem,
                        };
                        good &= arg(i).shape == arg(0).shape
                            && *res(i) == Type::block(expect_elem, shape.clone());
                    }
                    if *combine == Combine::Region {
                        let r = op.regions.first();
                        good &= op.regions.len() == 1
                            && r.is_some_and(|r| {
                                r.args.len() == 2 * n
                                    && self.yields(r).len() == n
                                    && (0..n).all(|i| {
                                        let s = Type::scalar(arg(i).dtype().unwrap_or(DType::I1));
                                        *self.yields(r)[i] == s
                                            && *self.ty(r.args[i]) == s
                                            && *self.ty(r.args[n + i]) == s
                                    })
                            });
                    } else {
                        good &= n == 1 && op.regions.is_empty();
                    }
                    good
                }
            }
            OpKind::Scan { axis, .. } => {
                counts(1, 1) && res(0) == arg(0) && *axis < arg(0).shape.len()
            }
            OpKind::Dot { .. } => {
                counts(3, 1) && {
                    let (a, b, c) = (arg(0), arg(1), arg(2));
                    a.shape.len() == 2
                        && b.shape.len() == 2
                        && a.shape[1] == b.shape[0]
                        && c.shape == vec![a.shape[0], b.shape[1]]
                        && res(0) == c
                }
            }
            OpKind::For => {
                let n = op.args.len();
                n >= 3 && op.results.len() == n - 3 && op.regions.len() == 1 && {
                    let r = &op.regions[0];
                    let iv = arg(0);
                    let carried: Vec<&Type> = (3..n).map(arg).collect();
                    iv.dtype().is_some_and(DType::is_int)
                        && !iv.is_block()
                        && arg(1) == iv
                        && arg(2) == iv
                        && r.args.len() == n - 2
                        && self.ty(r.args[0]) == iv
                        && (0..n - 3).all(|i| self.ty(r.args[i + 1]) == carried[i])
                        && self.yields(r) == carried
                        && (0..n - 3).all(|i| res(i) == carried[i])
                }
            }
            OpKind::If => {
                counts(1, op.results.len())
                    && *arg(0) == Type::scalar(DType::I1)
                    && op.regions.len() == 2
                    && op.regions.iter().all(|r| {
                        r.args.is_empty()
                            && self.yields(r)
                                == op.results.iter().map(|&v| self.ty(v)).collect::<Vec<_>>()
                    })
            }
            OpKind::While => {
                let inits: Vec<&Type> = op.args.iter().map(|&a| self.ty(a)).collect();
                op.results.len() == inits.len()
                    && op.regions.len() == 2
                    && op
                        .regions
                        .iter()
                        .all(|r| r.args.iter().map(|&a| self.ty(a)).collect::<Vec<_>>() == inits)
                    && self.yields(&op.regions[0]) == vec![&Type::scalar(DType::I1)]
                    && self.yields(&op.regions[1]) == inits
                    && op.results.iter().map(|&v| self.ty(v)).collect::<Vec<_>>() == inits
            }
            OpKind::Yield => op.results.is_empty(),
            OpKind::Barrier => op.args.is_empty() && op.results.is_empty(),
            OpKind::Print(_) => op.results.is_empty(),
            OpKind::Assert(_) => counts(1, 0) && arg(0).elem == Elem::Scalar(DType::I1),
            OpKind::MultipleOf(_) | OpKind::MaxContiguous(_) => counts(1, 1) && res(0) == arg(0),
            OpKind::InlineAsm { .. } => {
                op.results.len() == 1
                    && res(0).dtype().is_some()
                    && op
                        .args
                        .iter()
                        .all(|&a| self.ty(a).shape == res(0).shape && self.ty(a).dtype().is_some())
            }
        };
        let region_ok = match &op.kind {
            OpKind::For | OpKind::If | OpKind::While => true,
            OpKind::Reduce {
                combine: Combine::Region,
                ..
            } => true,
            _ => op.regions.is_empty(),
        };
        if ok && region_ok {
            Ok(())
        } else {
            let args: Vec<String> = op.args.iter().map(|&a| self.ty(a).to_string()).collect();
            let results: Vec<String> = op.results.iter().map(|&a| self.ty(a).to_string()).collect();
            self.fail(
                op,
                &format!(
                    "operand types ({}) and result types ({}) do not fit this op",
                    args.join(", "),
                    results.join(", ")
                ),
            )
        }
    }
}
