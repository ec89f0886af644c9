//! The tile IR text form (the printer). `parse` reads this back identically.
//!
//! ```text
//! kernel @add(%0: *fp32 {div=16}, %1: i32) {
//!   %2 = program_id[0] : i32 loc(3:11)
//!   %3 = arange[0, 1024] : <1024xi32>
//!   %4, %5 = for %a, %b, %c, %x, %y : i32, <1024xfp32> {
//!     ^(%6: i32, %7: i32, %8: <1024xfp32>):
//!     yield %7, %8
//!   }
//! }
//! ```
//! Values are renumbered in order of definition, so printing is canonical.

use crate::ir::*;
use std::collections::HashMap;
use std::fmt::Write;

/// Print a kernel in the canonical text form.
pub fn print_kernel(k: &Kernel) -> String {
    let mut p = Printer {
        k,
        names: HashMap::new(),
        out: String::new(),
    };
    p.kernel();
    p.out
}

struct Printer<'a> {
    k: &'a Kernel,
    names: HashMap<Value, usize>,
    out: String,
}

impl Printer<'_> {
    fn def(&mut self, v: Value) -> String {
        let n = self.names.len();
        self.names.insert(v, n);
        format!("%{n}")
    }

    fn name(&self, v: Value) -> String {
        match self.names.get(&v) {
            Some(n) => format!("%{n}"),
            // Printing unverified IR must not panic: show the raw index.
            None => format!("%?{}", v.0),
        }
    }

    fn kernel(&mut self) {
        let k = self.k;
        let _ = write!(self.out, "kernel @{}(", k.name);
        for (i, p) in k.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let n = self.def(p.value);
            let _ = write!(self.out, "{n}: {}", k.ty(p.value));
            if p.attrs.divisibility > 1 {
                let _ = write!(self.out, " {{div={}}}", p.attrs.divisibility);
            }
            if p.attrs.positive {
                self.out.push_str(" {pos}");
            }
            let _ = write!(self.out, " \"{}\"", escape(&p.name));
        }
        self.out.push_str(") {\n");
        for op in &k.body.ops {
            self.op(op, 1);
        }
        self.out.push_str("}\n");
    }

    fn op(&mut self, op: &Op, depth: usize) {
        let indent = "  ".repeat(depth);
        self.out.push_str(&indent);
        if !op.results.is_empty() {
            let names: Vec<String> = op.results.iter().map(|&r| self.def(r)).collect();
            let _ = write!(self.out, "{} = ", names.join(", "));
        }
        self.out.push_str(&op_head(&op.kind));
        if !op.args.is_empty() {
            let args: Vec<String> = op.args.iter().map(|&a| self.name(a)).collect();
            let _ = write!(self.out, " {}", args.join(", "));
        }
        if !op.results.is_empty() {
            let tys: Vec<String> = op
                .results
                .iter()
                .map(|&r| self.k.ty(r).to_string())
                .collect();
            let _ = write!(self.out, " : {}", tys.join(", "));
        }
        if op.loc != Loc::default() {
            let _ = write!(self.out, " loc({}:{})", op.loc.line, op.loc.col);
        }
        for region in &op.regions {
            self.out.push_str(" {\n");
            if !region.args.is_empty() {
                let args: Vec<String> = region
                    .args
                    .iter()
                    .map(|&a| {
                        let n = self.def(a);
                        format!("{n}: {}", self.k.ty(a))
                    })
                    .collect();
                let _ = writeln!(self.out, "{indent}  ^({}):", args.join(", "));
            }
            for inner in &region.ops {
                self.op(inner, depth + 1);
            }
            self.out.push_str(&indent);
            self.out.push('}');
        }
        self.out.push('\n');
    }
}

/// The op's name with its attributes, e.g. `cmp[lt]`, `load[mask, other]`.
pub fn op_head(kind: &OpKind) -> String {
    match kind {
        OpKind::Const(Const::Int(i)) => format!("const[{i}]"),
        OpKind::Const(Const::Float(f)) => format!("const[{f:?}]"),
        OpKind::ProgramId(a) => format!("program_id[{a}]"),
        OpKind::NumPrograms(a) => format!("num_programs[{a}]"),
        OpKind::Arange(s, e) => format!("arange[{s}, {e}]"),
        OpKind::Splat => "splat".into(),
        OpKind::Broadcast => "broadcast".into(),
        OpKind::ExpandDims(a) => format!("expand_dims[{a}]"),
        OpKind::Reshape => "reshape".into(),
        OpKind::Trans(p) => format!("trans[{}]", list(p)),
        OpKind::Gather(a) => format!("gather[{a}]"),
        OpKind::Unary(u) => unop_name(*u).into(),
        OpKind::Binary(b) => binop_name(*b).into(),
        OpKind::Cmp(p) => format!("cmp[{}]", pred_name(*p)),
        OpKind::Select => "select".into(),
        OpKind::Fma => "fma".into(),
        OpKind::Cast => "cast".into(),
        OpKind::Bitcast => "bitcast".into(),
        OpKind::AddPtr => "addptr".into(),
        OpKind::Load {
            mask,
            other,
            tma,
            map,
            guards,
        } => {
            let mut attrs: Vec<String> = vec![];
            if *mask {
                attrs.push("mask".into());
            }
            if *other {
                attrs.push("other".into());
            }
            if let Some(i) = tma {
                attrs.push(format!("tma={i}"));
            }
            match map {
                Some(MapOrder::Rows) => attrs.push("map".into()),
                Some(MapOrder::Transposed) => attrs.push("map_t".into()),
                None => {}
            }
            if *guards > 0 {
                attrs.push(format!("guards={guards}"));
            }
            if attrs.is_empty() {
                "load".into()
            } else {
                format!("load[{}]", attrs.join(", "))
            }
        }
        OpKind::Store { mask, tma, map } => {
            let mut attrs: Vec<String> = vec![];
            if *mask {
                attrs.push("mask".into());
            }
            if let Some(i) = tma {
                attrs.push(format!("tma={i}"));
            }
            if *map {
                attrs.push("map".into());
            }
            if attrs.is_empty() {
                "store".into()
            } else {
                format!("store[{}]", attrs.join(", "))
            }
        }
        OpKind::AtomicRmw {
            op,
            sem,
            scope,
            mask,
        } => {
            let m = if *mask { ", mask" } else { "" };
            format!(
                "atomic[{}, {}, {}{m}]",
                name_of(&ATOMIC_OPS, op),
                name_of(&SEMS, sem),
                name_of(&SCOPES, scope)
            )
        }
        OpKind::AtomicCas { sem, scope } => format!(
            "atomic_cas[{}, {}]",
            name_of(&SEMS, sem),
            name_of(&SCOPES, scope)
        ),
        OpKind::Reduce { axis, combine } => format!("reduce[{axis}, {}]", combine_name(*combine)),
        OpKind::Scan {
            axis,
            combine,
            reverse,
        } => {
            let r = if *reverse { ", reverse" } else { "" };
            format!("scan[{axis}, {}{r}]", combine_name(*combine))
        }
        OpKind::Dot { tf32 } => if *tf32 { "dot[tf32]" } else { "dot" }.into(),
        OpKind::For => "for".into(),
        OpKind::If => "if".into(),
        OpKind::While => "while".into(),
        OpKind::Yield => "yield".into(),
        OpKind::Barrier => "barrier".into(),
        OpKind::Print(s) => format!("print[\"{}\"]", escape(s)),
        OpKind::InlineAsm {
            asm,
            constraints,
            pure,
        } => format!(
            "inline_asm[\"{}\", \"{}\"{}]",
            escape(asm),
            escape(constraints),
            if *pure { "" } else { ", impure" }
        ),
        OpKind::Assert(s) => format!("assert[\"{}\"]", escape(s)),
        OpKind::MultipleOf(v) => format!("multiple_of[{}]", list(v)),
        OpKind::MaxContiguous(v) => format!("max_contiguous[{}]", list(v)),
    }
}

fn name_of<T: PartialEq>(table: &[(T, &'static str)], x: &T) -> &'static str {
    table.iter().find(|(t, _)| t == x).map_or("?", |(_, n)| n)
}

pub const ATOMIC_OPS: [(AtomicOp, &str); 7] = [
    (AtomicOp::Add, "add"),
    (AtomicOp::Max, "max"),
    (AtomicOp::Min, "min"),
    (AtomicOp::And, "and"),
    (AtomicOp::Or, "or"),
    (AtomicOp::Xor, "xor"),
    (AtomicOp::Xchg, "xchg"),
];

pub const SEMS: [(MemSem, &str); 4] = [
    (MemSem::Relaxed, "relaxed"),
    (MemSem::Acquire, "acquire"),
    (MemSem::Release, "release"),
    (MemSem::AcqRel, "acq_rel"),
];

pub const SCOPES: [(MemScope, &str); 3] = [
    (MemScope::Cta, "cta"),
    (MemScope::Gpu, "gpu"),
    (MemScope::Sys, "sys"),
];

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

pub const UNOPS: [(UnOp, &str); 14] = [
    (UnOp::Neg, "neg"),
    (UnOp::Not, "not"),
    (UnOp::Abs, "abs"),
    (UnOp::Exp, "exp"),
    (UnOp::Exp2, "exp2"),
    (UnOp::Log, "log"),
    (UnOp::Log2, "log2"),
    (UnOp::Sqrt, "sqrt"),
    (UnOp::SqrtApprox, "sqrt_approx"),
    (UnOp::Rsqrt, "rsqrt"),
    (UnOp::Sin, "sin"),
    (UnOp::Cos, "cos"),
    (UnOp::Floor, "floor"),
    (UnOp::Ceil, "ceil"),
];

pub const BINOPS: [(BinOp, &str); 15] = [
    (BinOp::Add, "add"),
    (BinOp::Sub, "sub"),
    (BinOp::Mul, "mul"),
    (BinOp::Div, "div"),
    (BinOp::DivFull, "div_full"),
    (BinOp::Rem, "rem"),
    (BinOp::And, "and"),
    (BinOp::Or, "or"),
    (BinOp::Xor, "xor"),
    (BinOp::Shl, "shl"),
    (BinOp::Shr, "shr"),
    (BinOp::Min, "min"),
    (BinOp::Max, "max"),
    (BinOp::UMulHi, "umulhi"),
    (BinOp::Pow, "pow"),
];

pub const PREDS: [(CmpPred, &str); 6] = [
    (CmpPred::Eq, "eq"),
    (CmpPred::Ne, "ne"),
    (CmpPred::Lt, "lt"),
    (CmpPred::Le, "le"),
    (CmpPred::Gt, "gt"),
    (CmpPred::Ge, "ge"),
];

pub const COMBINES: [(Combine, &str); 10] = [
    (Combine::Add, "add"),
    (Combine::Mul, "mul"),
    (Combine::Max, "max"),
    (Combine::Min, "min"),
    (Combine::And, "and"),
    (Combine::Or, "or"),
    (Combine::Xor, "xor"),
    (Combine::ArgMax, "argmax"),
    (Combine::ArgMin, "argmin"),
    (Combine::Region, "region"),
];

pub fn unop_name(u: UnOp) -> &'static str {
    if let UnOp::Lib(f) = u {
        return f.ir_name();
    }
    UNOPS
        .iter()
        .find(|(o, _)| *o == u)
        .map(|(_, n)| *n)
        .unwrap_or("?")
}
pub fn binop_name(b: BinOp) -> &'static str {
    if let BinOp::Lib(f) = b {
        return f.ir_name();
    }
    BINOPS
        .iter()
        .find(|(o, _)| *o == b)
        .map(|(_, n)| *n)
        .unwrap_or("?")
}
pub fn pred_name(p: CmpPred) -> &'static str {
    PREDS
        .iter()
        .find(|(o, _)| *o == p)
        .map(|(_, n)| *n)
        .unwrap_or("?")
}
pub fn combine_name(c: Combine) -> &'static str {
    COMBINES
        .iter()
        .find(|(o, _)| *o == c)
        .map(|(_, n)| *n)
        .unwrap_or("?")
}
