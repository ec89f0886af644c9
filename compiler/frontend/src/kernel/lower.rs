//! Statement and expression lowering of a `@jit` function body to tile IR.
//!
//! Values during lowering are `KVal`s: runtime tensors (`T`), constexprs
//! (`C`), tuples, modules and builtin functions. Runtime `if`/`for`/`while`
//! become structured ops whose carried values are the variables assigned in
//! their bodies (found syntactically, as Triton does) that exist before them.

use super::semantic::{const_truth, PyOp};
use super::{ArgSpec, CompileOptions, ConstVal, Global, Globals, IntSpec, JitFunction};
use crate::diag::Diagnostic;
use crate::source::{SourceFile, Span};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_tir::{CmpPred, DType, Kernel, Loc, Op, OpKind, ParamAttrs, Type, UnOp, Value};

pub(crate) type LResult<T> = Result<T, Diagnostic>;

/// A value during lowering.
#[derive(Clone, Debug)]
pub(crate) enum KVal {
    /// A runtime scalar or block.
    T(Value),
    /// A compile-time constant.
    C(ConstVal),
    /// A tuple holding runtime values.
    Tuple(Vec<KVal>),
    /// A module such as `tl` or `tl.math`.
    Module(String),
    /// A builtin function (`tl.load`, `min`, `range`, ...).
    Builtin(String),
    /// A method bound to a value (`x.to`).
    Method(Box<KVal>, String),
    /// The legacy `**meta` dictionary.
    Meta(Rc<Vec<(String, ConstVal)>>),
    /// A block pointer or tensor descriptor (`descriptors.rs`).
    Desc(Rc<super::descriptors::Desc>),
}

impl KVal {
    pub fn describe(&self) -> String {
        match self {
            KVal::T(_) => "a tensor".into(),
            KVal::C(ConstVal::Func(f)) => format!("the @jit function `{}`", f.name),
            KVal::C(c) => format!("the constant {c}"),
            KVal::Tuple(_) => "a tuple".into(),
            KVal::Module(m) => format!("the module `{m}`"),
            KVal::Builtin(b) => match b.strip_prefix("type:") {
                Some(class) => format!("the class `tl.{class}`"),
                None => format!("the function `{b}`"),
            },
            KVal::Method(_, m) => format!("the method `{m}`"),
            KVal::Meta(_) => "the `**meta` dictionary".into(),
            KVal::Desc(d) if d.tensor => "a tensor descriptor".into(),
            KVal::Desc(_) => "a block pointer".into(),
        }
    }
}

pub(super) enum Flow {
    Normal,
    Return(KVal),
}

pub(crate) struct Lowerer<'g> {
    pub k: Kernel,
    pub globals: &'g dyn Globals,
    /// Insertion stack: the op list of each open region.
    pub blocks: Vec<Vec<Op>>,
    pub locals: HashMap<String, KVal>,
    /// Source of the function being lowered (changes while inlining).
    pub file: Rc<SourceFile>,
    /// Call sites of the inlined functions we are in.
    pub call_stack: Vec<Span>,
    /// Text printed by `tl.static_print`.
    pub static_output: String,
    /// Runtime control flow depth (where `return` is not allowed).
    pub(super) runtime_depth: usize,
}

/// Lower one specialization of `f`: `specs` has one entry per parameter.
pub fn lower_kernel(
    f: &JitFunction,
    specs: &[ArgSpec],
    meta: &[(String, ConstVal)],
    globals: &dyn Globals,
    _options: &CompileOptions,
) -> Result<(Kernel, String), Diagnostic> {
    let mut l = Lowerer {
        k: Kernel::new(f.name.clone()),
        globals,
        blocks: vec![vec![]],
        locals: HashMap::new(),
        file: f.source.clone(),
        call_stack: vec![],
        static_output: String::new(),
        runtime_depth: 0,
    };
    if specs.len() != f.params.len() {
        return Err(Diagnostic::error(
            "TypeError",
            format!(
                "{}() takes {} arguments but the specialization gives {}",
                f.name,
                f.params.len(),
                specs.len()
            ),
            &f.span(),
        ));
    }
    for (p, spec) in f.params.iter().zip(specs) {
        let v = match spec {
            ArgSpec::Const(c) => KVal::C(c.clone()),
            ArgSpec::Ptr { dtype, aligned } => {
                let attrs = ParamAttrs::divisible(if *aligned { 16 } else { 1 });
                KVal::T(l.k.add_param(&p.name, Type::ptr(*dtype), attrs))
            }
            ArgSpec::Int { dtype, spec } => {
                let attrs = ParamAttrs::divisible(if *spec == IntSpec::Div16 { 16 } else { 1 });
                let v = l.k.add_param(&p.name, Type::scalar(*dtype), attrs);
                if *spec == IntSpec::One {
                    KVal::C(ConstVal::Int(1))
                } else {
                    KVal::T(v)
                }
            }
            ArgSpec::Float { dtype, positive } => {
                let attrs = ParamAttrs {
                    divisibility: 1,
                    positive: *positive,
                };
                KVal::T(l.k.add_param(&p.name, Type::scalar(*dtype), attrs))
            }
            ArgSpec::Desc {
                dtype,
                block,
                nan_padding,
                shape_div16,
            } => l.desc_param(&p.name, *dtype, block, *nan_padding, shape_div16, &p.span),
        };
        if p.constexpr && !matches!(spec, ArgSpec::Const(_)) {
            return Err(Diagnostic::error(
                "TypeError",
                format!(
                    "parameter `{}` is a tl.constexpr, so its value must be known at compile time",
                    p.name
                ),
                &p.span,
            ));
        }
        l.locals.insert(p.name.clone(), v);
    }
    if let Some(m) = &f.meta {
        l.locals
            .insert(m.clone(), KVal::Meta(Rc::new(meta.to_vec())));
    }
    let flow = l.stmts(&f.def.body)?;
    if let Flow::Return(v) = flow {
        if !matches!(v, KVal::C(ConstVal::None)) {
            return Err(Diagnostic::error(
                "TypeError",
                "a kernel launched from the host cannot return a value",
                &f.span(),
            ));
        }
    }
    l.k.body.ops = l.blocks.pop().unwrap_or_default();
    Ok((l.k, l.static_output))
}

impl<'g> Lowerer<'g> {
    pub fn span(&self, range: ruff_text_size::TextRange) -> Span {
        Span::new(&self.file, range)
    }

    pub fn loc(&self, span: &Span) -> Loc {
        let (line, col) = span.line_col();
        Loc { line, col }
    }

    /// Append an op to the current region and return its results.
    pub fn emit(
        &mut self,
        kind: OpKind,
        args: Vec<Value>,
        types: Vec<Type>,
        span: &Span,
    ) -> Vec<Value> {
        let loc = self.loc(span);
        let op = self.k.op(kind, args, types, loc);
        let results = op.results.clone();
        self.blocks.last_mut().expect("open region").push(op);
        results
    }

    pub fn emit1(&mut self, kind: OpKind, args: Vec<Value>, ty: Type, span: &Span) -> Value {
        self.emit(kind, args, vec![ty], span)[0]
    }

    // ------------------------------------------------------------ statements

    pub(super) fn stmts(&mut self, stmts: &[Stmt]) -> LResult<Flow> {
        for s in stmts {
            if let Flow::Return(v) = self.stmt(s)? {
                return Ok(Flow::Return(v));
            }
        }
        Ok(Flow::Normal)
    }

    pub(super) fn unsupported(&self, what: &str, range: ruff_text_size::TextRange) -> Diagnostic {
        self.err(
            "UnsupportedError",
            format!("{what} is not supported inside a @jit function"),
            &self.span(range),
        )
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> LResult<Flow> {
        match s {
            Stmt::Expr(e) => {
                let v = self.expr(&e.value)?;
                if let Some(name) = super::control::hint_statement_target(&e.value) {
                    if self.locals.contains_key(name) {
                        self.locals.insert(name.to_string(), v);
                    }
                }
            }
            Stmt::Pass(_) => {}
            Stmt::Assign(a) => {
                let v = self.expr(&a.value)?;
                for t in &a.targets {
                    self.assign(t, v.clone())?;
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.expr(value)?;
                    self.assign(&a.target, v)?;
                }
            }
            Stmt::AugAssign(a) => {
                let Expr::Name(n) = &*a.target else {
                    return Err(self.unsupported("augmented assignment to anything but a name", a.range));
                };
                let span = self.span(a.range);
                let cur = self.name(n.id.as_str(), &self.span(n.range))?;
                let rhs = self.expr(&a.value)?;
                let v = self.binary_ast(a.op, &cur, &rhs, &span)?;
                self.locals.insert(n.id.to_string(), v);
            }
            Stmt::Return(r) => {
                if self.runtime_depth > 0 {
                    return Err(self.err(
                        "UnsupportedError",
                        "`return` inside a runtime `if`, `for` or `while` is not supported; compute the value and return it at the end of the function",
                        &self.span(r.range),
                    ));
                }
                let v = match &r.value {
                    Some(e) => self.expr(e)?,
                    None => KVal::C(ConstVal::None),
                };
                return Ok(Flow::Return(v));
            }
            Stmt::If(i) => return self.if_stmt(i),
            Stmt::For(f) => self.for_stmt(f)?,
            Stmt::While(w) => self.while_stmt(w)?,
            Stmt::Assert(a) => {
                let span = self.span(a.range);
                let test = self.expr(&a.test)?;
                let msg = match &a.msg {
                    Some(m) => match self.expr(m)? {
                        KVal::C(ConstVal::Str(s)) => s,
                        KVal::C(c) => c.to_string(),
                        _ => "assertion failed".into(),
                    },
                    None => "assertion failed".into(),
                };
                match test {
                    KVal::C(c) => {
                        if !const_truth(&c) {
                            return Err(self.err("AssertionError", msg, &span));
                        }
                    }
                    other => {
                        let v = self.value_of(&other, &span)?;
                        let v = self.condition_of(v, &span)?;
                        self.emit(OpKind::Assert(msg), vec![v], vec![], &span);
                    }
                }
            }
            Stmt::Break(b) => {
                return Err(self.err("UnsupportedError", "`break` is not supported in kernels (Triton does not support it either); use a `while` loop with a condition", &self.span(b.range)))
            }
            Stmt::Continue(c) => return Err(self.unsupported("`continue`", c.range)),
            Stmt::FunctionDef(f) => return Err(self.unsupported("defining a function", f.range)),
            Stmt::ClassDef(c) => return Err(self.unsupported("defining a class", c.range)),
            Stmt::Import(i) => return Err(self.unsupported("`import`", i.range)),
            Stmt::ImportFrom(i) => return Err(self.unsupported("`import`", i.range)),
            Stmt::Try(t) => return Err(self.unsupported("`try`", t.range)),
            Stmt::Raise(r) => return Err(self.unsupported("`raise` (use tl.device_assert)", r.range)),
            Stmt::With(w) => return Err(self.unsupported("`with`", w.range)),
            Stmt::Delete(d) => return Err(self.unsupported("`del`", d.range)),
            Stmt::Global(g) => return Err(self.unsupported("`global`", g.range)),
            Stmt::Nonlocal(g) => return Err(self.unsupported("`nonlocal`", g.range)),
            Stmt::Match(m) => return Err(self.unsupported("`match`", m.range)),
            Stmt::TypeAlias(t) => return Err(self.unsupported("`type`", t.range)),
            Stmt::IpyEscapeCommand(c) => return Err(self.unsupported("a magic command", c.range)),
        }
        Ok(Flow::Normal)
    }

    pub(super) fn assign(&mut self, target: &Expr, v: KVal) -> LResult<()> {
        match target {
            Expr::Name(n) => {
                self.locals.insert(n.id.to_string(), v);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, range, .. }) | Expr::List(ast::ExprList { elts, range, .. }) => {
                let items: Vec<KVal> = match v {
                    KVal::Tuple(items) => items,
                    KVal::C(ConstVal::Tuple(items)) => items.into_iter().map(KVal::C).collect(),
                    other => {
                        return Err(self.err(
                            "TypeError",
                            format!("cannot unpack {} into {} names", other.describe(), elts.len()),
                            &self.span(*range),
                        ))
                    }
                };
                if items.len() != elts.len() {
                    return Err(self.err(
                        "ValueError",
                        format!("cannot unpack {} values into {} names", items.len(), elts.len()),
                        &self.span(*range),
                    ));
                }
                for (t, it) in elts.iter().zip(items) {
                    self.assign(t, it)?;
                }
                Ok(())
            }
            Expr::Subscript(s) => Err(self.err(
                "UnsupportedError",
                "assigning to an element of a tensor is not supported in kernels; build a new tensor with tl.where",
                &self.span(s.range),
            )),
            other => Err(self.unsupported("this assignment target", other.range())),
        }
    }

    // ------------------------------------------------------------ expressions

    pub fn name(&self, id: &str, span: &Span) -> LResult<KVal> {
        if let Some(v) = self.locals.get(id) {
            return Ok(v.clone());
        }
        match id {
            "min" | "max" => return Ok(KVal::Builtin(format!("py.{id}"))),
            "range" | "float" | "int" | "len" | "print" | "abs" | "isinstance" | "bool" => {
                return Ok(KVal::Builtin(id.to_string()))
            }
            "None" => return Ok(KVal::C(ConstVal::None)),
            _ => {}
        }
        if self.file.name == super::library::FILE_NAME {
            return super::library::global(id)
                .ok_or_else(|| self.err("NameError", format!("name `{id}` is not defined"), span));
        }
        match self.globals.global(id) {
            Some(Global::Const(c)) => Ok(KVal::C(c)),
            Some(Global::Module(m)) => Ok(KVal::Module(m)),
            Some(Global::Other(t)) => Err(self.err(
                "NameError",
                format!("`{id}` is a {t} in the session; a kernel can use only constexpr globals (ints, floats, bools, strings, dtypes), @jit functions and the tl/triton modules"),
                span,
            )),
            None => Err(self.err("NameError", format!("name `{id}` is not defined"), span)),
        }
    }

    pub fn expr(&mut self, e: &Expr) -> LResult<KVal> {
        let span = self.span(e.range());
        match e {
            Expr::Name(n) => self.name(n.id.as_str(), &span),
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Ok(KVal::C(ConstVal::Int(v))),
                    None => Err(self.err(
                        "ValueError",
                        format!("integer literal {i} does not fit in 64 bits"),
                        &span,
                    )),
                },
                ast::Number::Float(f) => Ok(KVal::C(ConstVal::Float(*f))),
                ast::Number::Complex { .. } => Err(self.err(
                    "TypeError",
                    "complex numbers are not supported in kernels",
                    &span,
                )),
            },
            Expr::BooleanLiteral(b) => Ok(KVal::C(ConstVal::Bool(b.value))),
            Expr::NoneLiteral(_) => Ok(KVal::C(ConstVal::None)),
            Expr::StringLiteral(s) => Ok(KVal::C(ConstVal::Str(s.value.to_str().to_string()))),
            Expr::Attribute(a) => {
                let base = self.expr(&a.value)?;
                self.attribute(base, a.attr.as_str(), &span)
            }
            Expr::Call(c) => {
                let func = self.expr(&c.func)?;
                let args = self.call_args(&c.arguments)?;
                self.call(func, args, &span)
            }
            Expr::BinOp(b) => {
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                self.binary_ast(b.op, &l, &r, &span)
            }
            Expr::UnaryOp(u) => {
                let v = self.expr(&u.operand)?;
                self.unary_ast(u.op, v, &span)
            }
            Expr::BoolOp(b) => {
                let mut acc = self.expr(&b.values[0])?;
                for next in &b.values[1..] {
                    if let KVal::C(c) = &acc {
                        // Python short-circuit on constants.
                        let t = const_truth(c);
                        let stop = match b.op {
                            ast::BoolOp::And => !t,
                            ast::BoolOp::Or => t,
                        };
                        if stop {
                            continue;
                        }
                        acc = self.expr(next)?;
                        continue;
                    }
                    let rhs = self.expr(next)?;
                    let x = self.value_of(&acc, &span)?;
                    let x = self.condition_of(x, &span)?;
                    let y = self.value_of(&rhs, &span)?;
                    let y = self.condition_of(y, &span)?;
                    let (x, y) = self.broadcast_pair(x, y, &span)?;
                    let t = self.ty(x);
                    let op = match b.op {
                        ast::BoolOp::And => tilebook_tir::BinOp::And,
                        ast::BoolOp::Or => tilebook_tir::BinOp::Or,
                    };
                    acc = KVal::T(self.emit1(OpKind::Binary(op), vec![x, y], t, &span));
                }
                Ok(acc)
            }
            Expr::Compare(c) => {
                let mut left = self.expr(&c.left)?;
                let mut result: Option<KVal> = None;
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.expr(right)?;
                    let this = self.compare_ast(*op, &left, &r, &span)?;
                    result = Some(match result {
                        None => this,
                        Some(prev) => self.logical_and(prev, this, &span)?,
                    });
                    left = r;
                }
                Ok(result.unwrap_or(KVal::C(ConstVal::Bool(true))))
            }
            Expr::If(i) => {
                let c = self.expr(&i.test)?;
                if let KVal::C(c) = c {
                    return if const_truth(&c) {
                        self.expr(&i.body)
                    } else {
                        self.expr(&i.orelse)
                    };
                }
                let a = self.expr(&i.body)?;
                let b = self.expr(&i.orelse)?;
                self.select(&c, &a, &b, &span)
            }
            Expr::Tuple(t) => self.sequence(&t.elts),
            Expr::List(t) => self.sequence(&t.elts),
            Expr::Subscript(s) => self.subscript(s),
            Expr::FString(f) => self.fstring(f, &span),
            Expr::Lambda(_) => Err(self.err(
                "UnsupportedError",
                "lambdas are not supported inside kernels; define a @triton.jit function",
                &span,
            )),
            Expr::Starred(_) => Err(self.err(
                "UnsupportedError",
                "`*args` unpacking is not supported inside kernels",
                &span,
            )),
            _ => Err(self.err(
                "UnsupportedError",
                "this kind of expression is not supported inside a @jit function",
                &span,
            )),
        }
    }

    pub(super) fn sequence(&mut self, elts: &[Expr]) -> LResult<KVal> {
        let mut items = vec![];
        for e in elts {
            items.push(self.expr(e)?);
        }
        if items.iter().all(|i| matches!(i, KVal::C(_))) {
            let cs = items
                .into_iter()
                .map(|i| {
                    if let KVal::C(c) = i {
                        c
                    } else {
                        ConstVal::None
                    }
                })
                .collect();
            return Ok(KVal::C(ConstVal::Tuple(cs)));
        }
        Ok(KVal::Tuple(items))
    }

    pub(super) fn fstring(&mut self, f: &ast::ExprFString, span: &Span) -> LResult<KVal> {
        let mut out = String::new();
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(l) => out.push_str(l),
                ast::FStringPart::FString(fs) => {
                    for el in fs.elements.iter() {
                        match el {
                            ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                            ast::InterpolatedStringElement::Interpolation(i) => {
                                match self.expr(&i.expression)? {
                                    KVal::C(ConstVal::Str(s)) => out.push_str(&s),
                                    KVal::C(c) => out.push_str(&c.to_string()),
                                    _ => {
                                        return Err(self.err(
                                            "UnsupportedError",
                                            "f-strings in kernels may only format constexprs",
                                            span,
                                        ))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(KVal::C(ConstVal::Str(out)))
    }

    pub(super) fn subscript(&mut self, s: &ast::ExprSubscript) -> LResult<KVal> {
        let span = self.span(s.range);
        let base = self.expr(&s.value)?;
        match base {
            KVal::Meta(m) => {
                let key = self.expr(&s.slice)?;
                let KVal::C(ConstVal::Str(k)) = key else {
                    return Err(self.err("TypeError", "`meta[...]` takes a string key", &span));
                };
                match m.iter().find(|(n, _)| *n == k) {
                    Some((_, v)) => Ok(KVal::C(v.clone())),
                    None => Err(self.err(
                        "KeyError",
                        format!("meta parameter '{k}' was not passed to the launch"),
                        &span,
                    )),
                }
            }
            KVal::C(ConstVal::Tuple(items)) => {
                let idx = self.expr(&s.slice)?;
                let KVal::C(ConstVal::Int(i)) = idx else {
                    return Err(self.err(
                        "TypeError",
                        "tuple indices must be constexpr integers",
                        &span,
                    ));
                };
                let n = items.len() as i64;
                let j = if i < 0 { i + n } else { i };
                items
                    .get(j as usize)
                    .cloned()
                    .map(KVal::C)
                    .ok_or_else(|| self.err("IndexError", "tuple index out of range", &span))
            }
            KVal::Tuple(items) => {
                let idx = self.expr(&s.slice)?;
                let KVal::C(ConstVal::Int(i)) = idx else {
                    return Err(self.err(
                        "TypeError",
                        "tuple indices must be constexpr integers",
                        &span,
                    ));
                };
                let n = items.len() as i64;
                let j = if i < 0 { i + n } else { i };
                items
                    .get(j as usize)
                    .cloned()
                    .ok_or_else(|| self.err("IndexError", "tuple index out of range", &span))
            }
            KVal::T(v) => {
                let parts: Vec<&Expr> = match &*s.slice {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    other => vec![other],
                };
                let t = self.ty(v);
                let mut shape = vec![];
                let mut dim = 0;
                for p in &parts {
                    match p {
                        Expr::NoneLiteral(_) => shape.push(1),
                        Expr::Slice(sl) if sl.lower.is_none() && sl.upper.is_none() && sl.step.is_none() => {
                            let Some(&d) = t.shape.get(dim) else {
                                return Err(self.err("IndexError", format!("too many `:` for a block of rank {}", t.shape.len()), &span));
                            };
                            shape.push(d);
                            dim += 1;
                        }
                        _ => {
                            return Err(self.err(
                                "UnsupportedError",
                                "inside kernels a block can only be indexed with `:` and `None` (e.g. x[:, None]); use tl.load with offsets to pick elements",
                                &self.span(p.range()),
                            ))
                        }
                    }
                }
                if dim != t.shape.len() {
                    shape.extend(&t.shape[dim..]);
                }
                Ok(KVal::T(self.emit1(
                    OpKind::Reshape,
                    vec![v],
                    t.with_shape(shape),
                    &span,
                )))
            }
            other => Err(self.err(
                "TypeError",
                format!("{} cannot be indexed", other.describe()),
                &span,
            )),
        }
    }

    pub fn logical_and(&mut self, a: KVal, b: KVal, span: &Span) -> LResult<KVal> {
        if let (KVal::C(x), KVal::C(y)) = (&a, &b) {
            return Ok(KVal::C(ConstVal::Bool(const_truth(x) && const_truth(y))));
        }
        let x = self.value_of(&a, span)?;
        let x = self.condition_of(x, span)?;
        let y = self.value_of(&b, span)?;
        let y = self.condition_of(y, span)?;
        let (x, y) = self.broadcast_pair(x, y, span)?;
        let t = self.ty(x);
        Ok(KVal::T(self.emit1(
            OpKind::Binary(tilebook_tir::BinOp::And),
            vec![x, y],
            t,
            span,
        )))
    }

    pub(super) fn binary_ast(
        &mut self,
        op: ast::Operator,
        a: &KVal,
        b: &KVal,
        span: &Span,
    ) -> LResult<KVal> {
        use ast::Operator as O;
        let p = match op {
            O::Add => PyOp::Add,
            O::Sub => PyOp::Sub,
            O::Mult => PyOp::Mul,
            O::Div => PyOp::TrueDiv,
            O::FloorDiv => PyOp::FloorDiv,
            O::Mod => PyOp::Mod,
            O::Pow => PyOp::Pow,
            O::BitAnd => PyOp::And,
            O::BitOr => PyOp::Or,
            O::BitXor => PyOp::Xor,
            O::LShift => PyOp::LShift,
            O::RShift => PyOp::RShift,
            O::MatMult => {
                return Err(self.err(
                    "UnsupportedError",
                    "`@` is not supported inside kernels; use tl.dot(a, b)",
                    span,
                ))
            }
        };
        self.binary(p, a, b, span)
    }

    pub(super) fn compare_ast(
        &mut self,
        op: ast::CmpOp,
        a: &KVal,
        b: &KVal,
        span: &Span,
    ) -> LResult<KVal> {
        use ast::CmpOp as C;
        let pred = match op {
            C::Eq => CmpPred::Eq,
            C::NotEq => CmpPred::Ne,
            C::Lt => CmpPred::Lt,
            C::LtE => CmpPred::Le,
            C::Gt => CmpPred::Gt,
            C::GtE => CmpPred::Ge,
            C::Is | C::IsNot => {
                let same_v = match (a, b) {
                    (KVal::C(x), KVal::C(y)) => x == y,
                    _ => false,
                };
                return Ok(KVal::C(ConstVal::Bool(same_v == (op == C::Is))));
            }
            C::In | C::NotIn => {
                let KVal::C(ConstVal::Tuple(items)) = b else {
                    return Err(self.err(
                        "UnsupportedError",
                        "`in` works only on constexpr tuples inside kernels",
                        span,
                    ));
                };
                let KVal::C(x) = a else {
                    return Err(self.err(
                        "UnsupportedError",
                        "`in` works only on constexprs inside kernels",
                        span,
                    ));
                };
                return Ok(KVal::C(ConstVal::Bool(items.contains(x) == (op == C::In))));
            }
        };
        self.compare(pred, a, b, span)
    }

    pub(super) fn unary_ast(&mut self, op: ast::UnaryOp, v: KVal, span: &Span) -> LResult<KVal> {
        use ast::UnaryOp as U;
        if let KVal::C(c) = &v {
            return match (op, c) {
                (U::Not, c) => Ok(KVal::C(ConstVal::Bool(!const_truth(c)))),
                (U::USub, ConstVal::Int(i)) => Ok(KVal::C(ConstVal::Int(-i))),
                (U::USub, ConstVal::Bool(b)) => Ok(KVal::C(ConstVal::Int(-(*b as i64)))),
                (U::USub, ConstVal::Float(f)) => Ok(KVal::C(ConstVal::Float(-f))),
                (U::UAdd, _) => Ok(v.clone()),
                (U::Invert, ConstVal::Int(i)) => Ok(KVal::C(ConstVal::Int(!i))),
                _ => Err(self.err(
                    "TypeError",
                    format!("bad operand for unary operator: {c}"),
                    span,
                )),
            };
        }
        let x = self.value_of(&v, span)?;
        let t = self.ty(x);
        match op {
            U::UAdd => Ok(KVal::T(x)),
            U::USub => {
                if t.elem.is_ptr() {
                    return Err(self.err("TypeError", "cannot negate a pointer", span));
                }
                Ok(KVal::T(self.unary(UnOp::Neg, x, span)))
            }
            U::Invert => {
                if !t.dtype().is_some_and(DType::is_int) {
                    return Err(self.err(
                        "TypeError",
                        format!("`~` needs an integer operand, got {t}"),
                        span,
                    ));
                }
                Ok(KVal::T(self.unary(UnOp::Not, x, span)))
            }
            U::Not => {
                let b = self.condition_of(x, span)?;
                Ok(KVal::T(self.unary(UnOp::Not, b, span)))
            }
        }
    }

    pub(super) fn call_args(&mut self, a: &ast::Arguments) -> LResult<super::builtins::Args> {
        let mut args = super::builtins::Args::default();
        for e in a.args.iter() {
            if let Expr::Starred(s) = e {
                match self.expr(&s.value)? {
                    KVal::C(ConstVal::Tuple(items)) => {
                        for it in items {
                            args.pos.push((KVal::C(it), self.span(s.range)));
                        }
                    }
                    KVal::Tuple(items) => {
                        for it in items {
                            args.pos.push((it, self.span(s.range)));
                        }
                    }
                    _ => {
                        return Err(self.err(
                            "TypeError",
                            "only tuples can be unpacked with `*`",
                            &self.span(s.range),
                        ))
                    }
                }
                continue;
            }
            let v = self.expr(e)?;
            args.pos.push((v, self.span(e.range())));
        }
        for kw in a.keywords.iter() {
            let Some(name) = &kw.arg else {
                return Err(self.err(
                    "UnsupportedError",
                    "`**kwargs` in a call inside a kernel",
                    &self.span(kw.range),
                ));
            };
            let v = self.expr(&kw.value)?;
            args.kw.push((name.to_string(), v, self.span(kw.range)));
        }
        Ok(args)
    }

    pub fn call(&mut self, func: KVal, args: super::builtins::Args, span: &Span) -> LResult<KVal> {
        match func {
            KVal::Builtin(name) => self.builtin(&name, args, span),
            KVal::Method(recv, name) => self.method(*recv, &name, args, span),
            KVal::C(ConstVal::Func(f)) => self.inline_call(&f, args, span),
            KVal::C(ConstVal::DType(d)) => {
                // `tl.float32(x)`-style conversion.
                let (v, s) = args.pos.first().cloned().ok_or_else(|| {
                    self.err("TypeError", "a dtype call takes one argument", span)
                })?;
                let x = self.value_of(&v, &s)?;
                Ok(KVal::T(self.cast(x, d, span)))
            }
            other => Err(self.err(
                "TypeError",
                format!("{} is not callable in a kernel", other.describe()),
                span,
            )),
        }
    }

    pub(super) fn inline_call(
        &mut self,
        f: &Rc<JitFunction>,
        args: super::builtins::Args,
        span: &Span,
    ) -> LResult<KVal> {
        if self.call_stack.len() > 32 {
            return Err(self.err(
                "RecursionError",
                format!(
                    "calls nest more than 32 deep at `{}` (recursion is not supported)",
                    f.name
                ),
                span,
            ));
        }
        let mut frame: HashMap<String, KVal> = HashMap::new();
        if args.pos.len() > f.params.len() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{}() takes {} arguments but {} were given",
                    f.name,
                    f.params.len(),
                    args.pos.len()
                ),
                span,
            ));
        }
        for (p, (v, _)) in f.params.iter().zip(args.pos.iter()) {
            frame.insert(p.name.clone(), v.clone());
        }
        for (k, v, s) in &args.kw {
            if f.param_index(k).is_none() {
                return Err(self.err(
                    "TypeError",
                    format!("{}() got an unexpected keyword argument `{k}`", f.name),
                    s,
                ));
            }
            frame.insert(k.clone(), v.clone());
        }
        // Defaults are evaluated in the callee's context.
        let saved_file = std::mem::replace(&mut self.file, f.source.clone());
        let saved_locals = std::mem::take(&mut self.locals);
        let saved_depth = std::mem::replace(&mut self.runtime_depth, 0);
        self.call_stack.push(span.clone());
        let result = (|| {
            let params = &f.def.parameters;
            for pw in params
                .posonlyargs
                .iter()
                .chain(&params.args)
                .chain(&params.kwonlyargs)
            {
                let name = pw.parameter.name.to_string();
                if let std::collections::hash_map::Entry::Vacant(slot) = frame.entry(name) {
                    match &pw.default {
                        Some(d) => {
                            let v = self.expr(d)?;
                            slot.insert(v);
                        }
                        None => {
                            let msg =
                                format!("{}() is missing the argument `{}`", f.name, slot.key());
                            return Err(self.err("TypeError", msg, span));
                        }
                    }
                }
            }
            self.locals = std::mem::take(&mut frame);
            match self.stmts(&f.def.body)? {
                Flow::Return(v) => Ok(v),
                Flow::Normal => Ok(KVal::C(ConstVal::None)),
            }
        })();
        self.call_stack.pop();
        self.file = saved_file;
        self.locals = saved_locals;
        self.runtime_depth = saved_depth;
        result
    }
}
