//! The host-language evaluator: a tree-walking interpreter over ruff's AST.
//!
//! Scoping follows Python for what the tutorials use: module globals, one
//! local scope per call, closures over enclosing function scopes (read),
//! `global` not needed. Errors are `Exc` values carrying the span of the
//! statement or expression that raised them.

use crate::kernels::KernelObj;
use crate::ops;
use crate::value::{Exc, FnBody, Function, Scope, Val};
use crate::Session;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::kernel::JitFunction;
use tilebook_frontend::{SourceFile, Span};

pub type R<T> = Result<T, Exc>;

pub enum Flow {
    Normal,
    Return(Val),
    Break,
    Continue,
}

/// Where code runs: its source, its local scope (None at module level) and closures.
#[derive(Clone)]
pub struct Frame {
    pub file: Rc<SourceFile>,
    pub locals: Option<Scope>,
    pub closure: Vec<Scope>,
}

impl Session {
    pub fn span(&self, f: &Frame, r: ruff_text_size::TextRange) -> Span {
        Span::new(&f.file, r)
    }

    pub fn exec_block(&mut self, f: &Frame, stmts: &[Stmt]) -> R<Flow> {
        for s in stmts {
            self.check_interrupt()?;
            match self
                .exec(f, s)
                .map_err(|e| e.at(&self.span(f, s.range())))?
            {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    pub fn lookup(&self, f: &Frame, name: &str) -> Option<Val> {
        if let Some(l) = &f.locals {
            if let Some(v) = l.borrow().get(name) {
                return Some(v.clone());
            }
        }
        for c in f.closure.iter().rev() {
            if let Some(v) = c.borrow().get(name) {
                return Some(v.clone());
            }
        }
        if let Some(v) = self.globals.borrow().get(name) {
            return Some(v.clone());
        }
        crate::builtins::builtin_name(name)
    }

    pub fn assign_name(&mut self, f: &Frame, name: &str, v: Val) {
        match &f.locals {
            Some(l) => l.borrow_mut().insert(name.to_string(), v),
            None => self.globals.borrow_mut().insert(name.to_string(), v),
        };
    }

    fn exec(&mut self, f: &Frame, s: &Stmt) -> R<Flow> {
        match s {
            Stmt::Expr(e) => {
                self.eval(f, &e.value)?;
            }
            Stmt::Assign(a) => {
                let v = self.eval(f, &a.value)?;
                for t in &a.targets {
                    self.assign(f, t, v.clone())?;
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let v = self.eval(f, v)?;
                    self.assign(f, &a.target, v)?;
                }
            }
            Stmt::AugAssign(a) => {
                let cur = self.eval(f, &a.target)?;
                let rhs = self.eval(f, &a.value)?;
                // Lists extend in place, like Python.
                if let (Val::List(l), ast::Operator::Add) = (&cur, a.op) {
                    let items = self.iterate(&rhs)?;
                    l.borrow_mut().extend(items);
                    return Ok(Flow::Normal);
                }
                let v = ops::binary(self, a.op, &cur, &rhs)?;
                self.assign(f, &a.target, v)?;
            }
            Stmt::FunctionDef(d) => self.def_function(f, d)?,
            Stmt::Return(r) => {
                let v = match &r.value {
                    Some(e) => self.eval(f, e)?,
                    None => Val::None,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::If(i) => {
                if self.eval(f, &i.test)?.truth()? {
                    return self.exec_block(f, &i.body);
                }
                for c in &i.elif_else_clauses {
                    match &c.test {
                        Some(t) => {
                            if self.eval(f, t)?.truth()? {
                                return self.exec_block(f, &c.body);
                            }
                        }
                        None => return self.exec_block(f, &c.body),
                    }
                }
            }
            Stmt::For(l) => {
                let it = self.eval(f, &l.iter)?;
                let items = self.iterate(&it)?;
                let mut broke = false;
                for item in items {
                    self.assign(f, &l.target, item)?;
                    match self.exec_block(f, &l.body)? {
                        Flow::Break => {
                            broke = true;
                            break;
                        }
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
                if !broke {
                    return self.exec_block(f, &l.orelse);
                }
            }
            Stmt::While(w) => {
                let mut broke = false;
                while self.eval(f, &w.test)?.truth()? {
                    self.check_interrupt()?;
                    match self.exec_block(f, &w.body)? {
                        Flow::Break => {
                            broke = true;
                            break;
                        }
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
                if !broke {
                    return self.exec_block(f, &w.orelse);
                }
            }
            Stmt::Break(_) => return Ok(Flow::Break),
            Stmt::Continue(_) => return Ok(Flow::Continue),
            Stmt::Pass(_) => {}
            Stmt::Assert(a) => {
                if !self.eval(f, &a.test)?.truth()? {
                    let msg = match &a.msg {
                        Some(m) => self.eval(f, m)?.to_str(),
                        None => String::new(),
                    };
                    return Err(Exc::new("AssertionError", msg));
                }
            }
            Stmt::Raise(r) => {
                let exc = match &r.exc {
                    None => Exc::new("RuntimeError", "No active exception to reraise"),
                    Some(e) => match self.eval(f, e)? {
                        Val::Exception(x) => (*x).clone(),
                        Val::Builtin(b) => Exc::new(&b, ""),
                        other => Exc::type_error(format!(
                            "exceptions must derive from BaseException, not {}",
                            other.type_name()
                        )),
                    },
                };
                return Err(exc);
            }
            Stmt::Try(t) => return self.exec_try(f, t),
            Stmt::Import(i) => {
                for a in &i.names {
                    let name = a.name.as_str();
                    let module = crate::builtins::import(name).ok_or_else(|| {
                        Exc::new("ModuleNotFoundError", format!("No module named '{name}' in tilebook (available: torch, triton, triton.language, math, sys, numpy is not available)"))
                    })?;
                    match &a.asname {
                        Some(alias) => self.assign_name(f, alias.as_str(), module),
                        None => {
                            let top = name.split('.').next().unwrap_or(name);
                            let m = crate::builtins::import(top).unwrap_or(module);
                            self.assign_name(f, top, m);
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| m.as_str()).unwrap_or("");
                for a in &i.names {
                    let name = a.name.as_str();
                    let full = format!("{module}.{name}");
                    let v = crate::builtins::import(&full)
                        .or_else(|| {
                            crate::builtins::import(module)
                                .and_then(|m| self.get_attr(&m, name).ok())
                        })
                        .ok_or_else(|| {
                            Exc::new(
                                "ImportError",
                                format!("cannot import name '{name}' from '{module}' in tilebook"),
                            )
                        })?;
                    let bind = a.asname.as_ref().map(|x| x.as_str()).unwrap_or(name);
                    self.assign_name(f, bind, v);
                }
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    if let Expr::Name(n) = t {
                        match &f.locals {
                            Some(l) => l.borrow_mut().remove(n.id.as_str()),
                            None => self.globals.borrow_mut().remove(n.id.as_str()),
                        };
                    }
                }
            }
            Stmt::Global(_) | Stmt::Nonlocal(_) => {}
            Stmt::IpyEscapeCommand(c) => {
                let text = format!("{}", c.value);
                self.magic(&format!("{}{}", c.kind.as_str(), text))?;
            }
            Stmt::ClassDef(_) => {
                return Err(Exc::new(
                    "NotImplementedError",
                    "class definitions are not supported in tilebook cells",
                ))
            }
            Stmt::With(_) => {
                return Err(Exc::new(
                    "NotImplementedError",
                    "`with` is not supported in tilebook cells",
                ))
            }
            Stmt::Match(_) => {
                return Err(Exc::new(
                    "NotImplementedError",
                    "`match` is not supported in tilebook cells",
                ))
            }
            Stmt::TypeAlias(_) => {
                return Err(Exc::new(
                    "NotImplementedError",
                    "`type` aliases are not supported",
                ))
            }
        }
        Ok(Flow::Normal)
    }

    fn exec_try(&mut self, f: &Frame, t: &ast::StmtTry) -> R<Flow> {
        let result = self.exec_block(f, &t.body);
        let result = match result {
            Err(e) if e.kind != "KeyboardInterrupt" => {
                let mut handled = None;
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    let matches = match &h.type_ {
                        None => true,
                        Some(ty) => {
                            let names: Vec<String> = match &**ty {
                                Expr::Tuple(tu) => {
                                    tu.elts.iter().map(|e| self.exc_name(f, e)).collect()
                                }
                                other => vec![self.exc_name(f, other)],
                            };
                            names.iter().any(|n| exc_matches(&e.kind, n))
                        }
                    };
                    if matches {
                        if let Some(name) = &h.name {
                            self.assign_name(f, name.as_str(), Val::Exception(Rc::new(e.clone())));
                        }
                        handled = Some(self.exec_block(f, &h.body));
                        break;
                    }
                }
                match handled {
                    Some(r) => r,
                    None => Err(e),
                }
            }
            Ok(Flow::Normal) => self.exec_block(f, &t.orelse),
            other => other,
        };
        if !t.finalbody.is_empty() {
            match self.exec_block(f, &t.finalbody)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        result
    }

    fn exc_name(&self, f: &Frame, e: &Expr) -> String {
        match e {
            Expr::Name(n) => n.id.to_string(),
            Expr::Attribute(a) => a.attr.to_string(),
            _ => {
                let _ = f;
                String::new()
            }
        }
    }

    fn def_function(&mut self, f: &Frame, d: &ast::StmtFunctionDef) -> R<()> {
        let mut jit = false;
        let mut wrappers: Vec<Val> = vec![];
        for dec in d.decorator_list.iter().rev() {
            let v = self.eval(f, &dec.expression)?;
            match &v {
                Val::Builtin(b) if &**b == "triton.jit" => jit = true,
                _ => wrappers.push(v),
            }
        }
        let name = d.name.to_string();
        let mut value = if jit {
            let jf = JitFunction::new(d.clone(), &f.file);
            let mut defaults = HashMap::new();
            for p in d.parameters.args.iter().chain(&d.parameters.kwonlyargs) {
                if let Some(def) = &p.default {
                    defaults.insert(p.parameter.name.to_string(), self.eval(f, def)?);
                }
            }
            // Redefining a kernel replaces its body in place; cached code stays keyed by source.
            let existing = self.globals.borrow().get(&name).cloned();
            match existing {
                Some(Val::Kernel(k))
                    if f.locals.is_none()
                        && k.autotune.borrow().is_none()
                        && k.heuristics.borrow().is_empty() =>
                {
                    k.redefine(jf, defaults);
                    Val::Kernel(k)
                }
                _ => Val::Kernel(Rc::new(KernelObj::new(jf, defaults))),
            }
        } else {
            let mut defaults = vec![];
            for p in d
                .parameters
                .posonlyargs
                .iter()
                .chain(&d.parameters.args)
                .chain(&d.parameters.kwonlyargs)
            {
                if let Some(def) = &p.default {
                    defaults.push((p.parameter.name.to_string(), self.eval(f, def)?));
                }
            }
            let mut closure = f.closure.clone();
            if let Some(l) = &f.locals {
                closure.push(l.clone());
            }
            Val::Func(Rc::new(Function {
                name: name.clone(),
                params: (*d.parameters).clone(),
                defaults,
                body: FnBody::Stmts(d.body.clone()),
                closure,
                source: f.file.clone(),
            }))
        };
        for w in wrappers {
            value = self.call(&w, vec![value], vec![])?;
        }
        self.assign_name(f, &name, value);
        Ok(())
    }

    pub fn assign(&mut self, f: &Frame, target: &Expr, v: Val) -> R<()> {
        match target {
            Expr::Name(n) => {
                self.assign_name(f, n.id.as_str(), v);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let items = self.iterate(&v)?;
                let star = elts.iter().position(|e| matches!(e, Expr::Starred(_)));
                match star {
                    None => {
                        if items.len() != elts.len() {
                            return Err(Exc::value_error(if items.len() > elts.len() {
                                format!("too many values to unpack (expected {})", elts.len())
                            } else {
                                format!(
                                    "not enough values to unpack (expected {}, got {})",
                                    elts.len(),
                                    items.len()
                                )
                            }));
                        }
                        for (t, it) in elts.iter().zip(items) {
                            self.assign(f, t, it)?;
                        }
                    }
                    Some(s) => {
                        let after = elts.len() - s - 1;
                        if items.len() < elts.len() - 1 {
                            return Err(Exc::value_error("not enough values to unpack"));
                        }
                        for (t, it) in elts[..s].iter().zip(&items) {
                            self.assign(f, t, it.clone())?;
                        }
                        let mid = items[s..items.len() - after].to_vec();
                        if let Expr::Starred(st) = &elts[s] {
                            self.assign(f, &st.value, Val::list(mid))?;
                        }
                        for (t, it) in elts[s + 1..].iter().zip(&items[items.len() - after..]) {
                            self.assign(f, t, it.clone())?;
                        }
                    }
                }
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(f, &s.value)?;
                let idx = self.eval(f, &s.slice)?;
                ops::set_item(self, &base, &idx, v)
            }
            Expr::Attribute(a) => Err(Exc::new(
                "AttributeError",
                format!("cannot set attribute `{}` in tilebook", a.attr),
            )),
            _ => Err(Exc::new("SyntaxError", "cannot assign to this expression")),
        }
    }

    /// Python iteration of a value into a vector.
    pub fn iterate(&mut self, v: &Val) -> R<Vec<Val>> {
        Ok(match v {
            Val::List(l) => l.borrow().clone(),
            Val::Tuple(t) => t.to_vec(),
            Val::Object(_) if v.named_tuple_items().is_some() => {
                v.named_tuple_items().unwrap_or_default()
            }
            Val::Range(a, b, s) => {
                let (a, b, s) = (*a, *b, *s);
                let n = if s > 0 {
                    (b - a + s - 1).max(0) / s
                } else {
                    (a - b - s - 1).max(0) / (-s)
                };
                if n > 100_000_000 {
                    return Err(Exc::new("MemoryError", "range too large to iterate"));
                }
                (0..n).map(|i| Val::Int(a + i * s)).collect()
            }
            Val::Str(s) => s.chars().map(|c| Val::str(&c.to_string())).collect(),
            Val::Dict(d) => d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            Val::Tensor(t) => {
                if t.shape.is_empty() {
                    return Err(Exc::type_error("iteration over a 0-d tensor"));
                }
                (0..t.shape[0])
                    .map(|i| Val::tensor(t.select(0, i)))
                    .collect()
            }
            other => {
                return Err(Exc::type_error(format!(
                    "'{}' object is not iterable",
                    other.type_name()
                )))
            }
        })
    }

    pub fn eval(&mut self, f: &Frame, e: &Expr) -> R<Val> {
        self.eval_inner(f, e)
            .map_err(|x| x.at(&self.span(f, e.range())))
    }

    fn eval_inner(&mut self, f: &Frame, e: &Expr) -> R<Val> {
        Ok(match e {
            Expr::Name(n) => {
                return self.lookup(f, n.id.as_str()).ok_or_else(|| {
                    Exc::new("NameError", format!("name '{}' is not defined", n.id))
                })
            }
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => Val::Int(
                    i.as_i64()
                        .ok_or_else(|| Exc::new("OverflowError", "integer literal too large"))?,
                ),
                ast::Number::Float(x) => Val::Float(*x),
                ast::Number::Complex { .. } => {
                    return Err(Exc::new(
                        "NotImplementedError",
                        "complex numbers are not supported",
                    ))
                }
            },
            Expr::BooleanLiteral(b) => Val::Bool(b.value),
            Expr::NoneLiteral(_) => Val::None,
            Expr::StringLiteral(s) => Val::str(s.value.to_str()),
            Expr::FString(fs) => Val::str(&self.fstring(f, fs)?),
            Expr::List(l) => Val::list(self.eval_seq(f, &l.elts)?),
            Expr::Tuple(t) => Val::tuple(self.eval_seq(f, &t.elts)?),
            Expr::Dict(d) => {
                let mut items = vec![];
                for it in &d.items {
                    let v = self.eval(f, &it.value)?;
                    match &it.key {
                        Some(k) => items.push((self.eval(f, k)?, v)),
                        None => {
                            if let Val::Dict(other) = v {
                                items.extend(other.borrow().iter().cloned());
                            }
                        }
                    }
                }
                Val::Dict(Rc::new(RefCell::new(items)))
            }
            Expr::Attribute(a) => {
                let base = self.eval(f, &a.value)?;
                self.get_attr(&base, a.attr.as_str())?
            }
            Expr::Subscript(s) => {
                let base = self.eval(f, &s.value)?;
                // `kernel[grid]`.
                if let Val::Kernel(k) = &base {
                    let grid = self.eval(f, &s.slice)?;
                    return Ok(Val::Launcher(k.clone(), Box::new(grid)));
                }
                // `compiled[grid]` of a `kernel.warmup(...)` result.
                if let Val::Object(o) = &base {
                    if let Some(Val::Kernel(k)) = crate::value::attr_of(o, "__kernel__") {
                        let grid = self.eval(f, &s.slice)?;
                        return Ok(Val::Launcher(k, Box::new(grid)));
                    }
                }
                let idx = self.eval(f, &s.slice)?;
                ops::get_item(self, &base, &idx)?
            }
            Expr::Slice(s) => {
                let mut g = |x: &Option<Box<Expr>>| -> R<Option<i64>> {
                    match x {
                        None => Ok(None),
                        Some(e) => match self.eval(f, e)? {
                            Val::Int(i) => Ok(Some(i)),
                            Val::None => Ok(None),
                            Val::Tensor(t) if t.numel() == 1 => Ok(Some(t.get_at(t.offset).i())),
                            other => Err(Exc::type_error(format!(
                                "slice indices must be integers, not {}",
                                other.type_name()
                            ))),
                        },
                    }
                };
                Val::Slice(g(&s.lower)?, g(&s.upper)?, g(&s.step)?)
            }
            Expr::BinOp(b) => {
                let l = self.eval(f, &b.left)?;
                let r = self.eval(f, &b.right)?;
                ops::binary(self, b.op, &l, &r)?
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(f, &u.operand)?;
                ops::unary(u.op, &v)?
            }
            Expr::BoolOp(b) => {
                let mut v = self.eval(f, &b.values[0])?;
                for next in &b.values[1..] {
                    let t = v.truth()?;
                    let stop = match b.op {
                        ast::BoolOp::And => !t,
                        ast::BoolOp::Or => t,
                    };
                    if stop {
                        break;
                    }
                    v = self.eval(f, next)?;
                }
                v
            }
            Expr::Compare(c) => {
                let mut left = self.eval(f, &c.left)?;
                let mut result = Val::Bool(true);
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.eval(f, right)?;
                    let v = ops::compare(self, *op, &left, &r)?;
                    if let Val::Tensor(_) = v {
                        result = v;
                    } else if !v.truth()? {
                        return Ok(Val::Bool(false));
                    } else {
                        result = v;
                    }
                    left = r;
                }
                result
            }
            Expr::If(i) => {
                if self.eval(f, &i.test)?.truth()? {
                    self.eval(f, &i.body)?
                } else {
                    self.eval(f, &i.orelse)?
                }
            }
            Expr::Call(c) => {
                let func = self.eval(f, &c.func)?;
                let mut args = vec![];
                for a in c.arguments.args.iter() {
                    if let Expr::Starred(s) = a {
                        let v = self.eval(f, &s.value)?;
                        args.extend(self.iterate(&v)?);
                    } else {
                        args.push(self.eval(f, a)?);
                    }
                }
                let mut kwargs = vec![];
                for k in c.arguments.keywords.iter() {
                    let v = self.eval(f, &k.value)?;
                    match &k.arg {
                        Some(name) => kwargs.push((name.to_string(), v)),
                        None => match v {
                            Val::Dict(d) => {
                                for (kk, vv) in d.borrow().iter() {
                                    kwargs.push((kk.to_str(), vv.clone()));
                                }
                            }
                            other => {
                                return Err(Exc::type_error(format!(
                                    "argument after ** must be a mapping, not {}",
                                    other.type_name()
                                )))
                            }
                        },
                    }
                }
                self.call(&func, args, kwargs)?
            }
            Expr::Lambda(l) => {
                let mut closure = f.closure.clone();
                if let Some(loc) = &f.locals {
                    closure.push(loc.clone());
                }
                let params = l.parameters.as_deref().cloned().unwrap_or_default();
                let mut defaults = vec![];
                for p in params.args.iter() {
                    if let Some(d) = &p.default {
                        defaults.push((p.parameter.name.to_string(), self.eval(f, d)?));
                    }
                }
                Val::Func(Rc::new(Function {
                    name: "<lambda>".into(),
                    params,
                    defaults,
                    body: FnBody::Expr(l.body.clone()),
                    closure,
                    source: f.file.clone(),
                }))
            }
            Expr::ListComp(lc) => Val::list(self.comprehension(f, &lc.elt, &lc.generators)?),
            Expr::Generator(g) => Val::list(self.comprehension(f, &g.elt, &g.generators)?),
            Expr::DictComp(dc) => {
                let keys = self.comprehension(f, &dc.key, &dc.generators)?;
                let vals = self.comprehension(f, &dc.value, &dc.generators)?;
                Val::Dict(Rc::new(RefCell::new(keys.into_iter().zip(vals).collect())))
            }
            Expr::Starred(_) => {
                return Err(Exc::new("SyntaxError", "can't use starred expression here"))
            }
            Expr::IpyEscapeCommand(c) => {
                let text = format!("{}{}", c.kind.as_str(), c.value);
                return self.magic(&text);
            }
            _ => {
                return Err(Exc::new(
                    "NotImplementedError",
                    "this kind of expression is not supported in tilebook host code",
                ))
            }
        })
    }

    fn eval_seq(&mut self, f: &Frame, elts: &[Expr]) -> R<Vec<Val>> {
        let mut out = vec![];
        for e in elts {
            if let Expr::Starred(s) = e {
                let v = self.eval(f, &s.value)?;
                out.extend(self.iterate(&v)?);
            } else {
                out.push(self.eval(f, e)?);
            }
        }
        Ok(out)
    }

    fn comprehension(&mut self, f: &Frame, elt: &Expr, gens: &[ast::Comprehension]) -> R<Vec<Val>> {
        // Comprehension variables live in their own scope.
        let scope: Scope = Rc::new(RefCell::new(HashMap::new()));
        let mut closure = f.closure.clone();
        if let Some(l) = &f.locals {
            closure.push(l.clone());
        }
        let inner = Frame {
            file: f.file.clone(),
            locals: Some(scope),
            closure,
        };
        let mut out = vec![];
        self.comp_level(&inner, elt, gens, 0, &mut out)?;
        Ok(out)
    }

    fn comp_level(
        &mut self,
        f: &Frame,
        elt: &Expr,
        gens: &[ast::Comprehension],
        i: usize,
        out: &mut Vec<Val>,
    ) -> R<()> {
        if i == gens.len() {
            out.push(self.eval(f, elt)?);
            return Ok(());
        }
        let g = &gens[i];
        let it = self.eval(f, &g.iter)?;
        for item in self.iterate(&it)? {
            self.assign(f, &g.target, item)?;
            let mut keep = true;
            for cond in &g.ifs {
                if !self.eval(f, cond)?.truth()? {
                    keep = false;
                    break;
                }
            }
            if keep {
                self.comp_level(f, elt, gens, i + 1, out)?;
            }
        }
        Ok(())
    }

    fn fstring(&mut self, f: &Frame, fs: &ast::ExprFString) -> R<String> {
        let mut out = String::new();
        for part in fs.value.iter() {
            match part {
                ast::FStringPart::Literal(l) => out.push_str(l),
                ast::FStringPart::FString(x) => self.fstring_elements(f, &x.elements, &mut out)?,
            }
        }
        Ok(out)
    }

    fn fstring_elements(
        &mut self,
        f: &Frame,
        els: &ast::InterpolatedStringElements,
        out: &mut String,
    ) -> R<()> {
        for el in els.iter() {
            match el {
                ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                ast::InterpolatedStringElement::Interpolation(i) => {
                    let v = self.eval(f, &i.expression)?;
                    if let Some(dt) = &i.debug_text {
                        out.push_str(&dt.leading);
                        let src = &f.file.text[i.expression.range().start().to_usize()
                            ..i.expression.range().end().to_usize()];
                        out.push_str(src);
                        out.push_str(&dt.trailing);
                    }
                    let mut spec = String::new();
                    if let Some(fmt) = &i.format_spec {
                        self.fstring_elements(f, &fmt.elements, &mut spec)?;
                    }
                    let v = match i.conversion {
                        ast::ConversionFlag::Repr => Val::str(&v.repr()),
                        ast::ConversionFlag::Str | ast::ConversionFlag::Ascii => {
                            Val::str(&v.to_str())
                        }
                        ast::ConversionFlag::None if i.debug_text.is_some() && spec.is_empty() => {
                            Val::str(&v.repr())
                        }
                        ast::ConversionFlag::None => v,
                    };
                    out.push_str(&crate::format::format_value(&v, &spec)?);
                }
            }
        }
        Ok(())
    }

    /// Call any callable value.
    pub fn call(&mut self, func: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> R<Val> {
        match func {
            Val::Func(fun) => self.call_function(fun, args, kwargs),
            Val::Py(p) => p.clone().call(self, args, kwargs),
            Val::Builtin(name) => crate::builtins::call_builtin(self, name, args, kwargs),
            Val::Method(recv, name) => crate::builtins::call_method(self, recv, name, args, kwargs),
            Val::Launcher(k, grid) => crate::kernels::launch(self, k, grid, args, kwargs),
            Val::Kernel(k) => Err(Exc::type_error(format!(
                "a @triton.jit function is launched as `{}[grid](...)`; it cannot be called directly from host code",
                k.jit.borrow().name
            ))),
            Val::DType(..) => Err(Exc::type_error("dtypes are not callable in host code; use tensor.to(dtype)")),
            other => Err(Exc::type_error(format!("'{}' object is not callable", other.type_name()))),
        }
    }

    pub fn call_function(
        &mut self,
        fun: &Rc<Function>,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> R<Val> {
        self.depth += 1;
        if self.depth > 200 {
            self.depth -= 1;
            return Err(Exc::new(
                "RecursionError",
                "maximum recursion depth exceeded",
            ));
        }
        let result = self.call_function_inner(fun, args, kwargs);
        self.depth -= 1;
        result
    }

    fn call_function_inner(
        &mut self,
        fun: &Rc<Function>,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> R<Val> {
        let scope: Scope = Rc::new(RefCell::new(HashMap::new()));
        let p = &fun.params;
        let positional: Vec<&ast::ParameterWithDefault> =
            p.posonlyargs.iter().chain(&p.args).collect();
        let mut extra = vec![];
        for (i, a) in args.into_iter().enumerate() {
            match positional.get(i) {
                Some(pw) => {
                    scope.borrow_mut().insert(pw.parameter.name.to_string(), a);
                }
                None => extra.push(a),
            }
        }
        if !extra.is_empty() {
            match &p.vararg {
                Some(v) => {
                    scope
                        .borrow_mut()
                        .insert(v.name.to_string(), Val::tuple(extra));
                }
                None => {
                    return Err(Exc::type_error(format!(
                        "{}() takes {} positional arguments but {} were given",
                        fun.name,
                        positional.len(),
                        positional.len() + extra.len()
                    )))
                }
            }
        } else if let Some(v) = &p.vararg {
            scope
                .borrow_mut()
                .insert(v.name.to_string(), Val::tuple(vec![]));
        }
        let mut kw_extra = vec![];
        for (k, v) in kwargs {
            let known = positional
                .iter()
                .copied()
                .chain(p.kwonlyargs.iter())
                .any(|pw| pw.parameter.name.as_str() == k);
            if known {
                if scope.borrow().contains_key(&k) {
                    return Err(Exc::type_error(format!(
                        "{}() got multiple values for argument '{k}'",
                        fun.name
                    )));
                }
                scope.borrow_mut().insert(k, v);
            } else if p.kwarg.is_some() {
                kw_extra.push((Val::str(&k), v));
            } else {
                return Err(Exc::type_error(format!(
                    "{}() got an unexpected keyword argument '{k}'",
                    fun.name
                )));
            }
        }
        if let Some(kw) = &p.kwarg {
            scope.borrow_mut().insert(
                kw.name.to_string(),
                Val::Dict(Rc::new(RefCell::new(kw_extra))),
            );
        }
        for pw in positional.iter().copied().chain(p.kwonlyargs.iter()) {
            let name = pw.parameter.name.as_str();
            if !scope.borrow().contains_key(name) {
                match fun.defaults.iter().find(|(n, _)| n == name) {
                    Some((_, d)) => {
                        scope.borrow_mut().insert(name.to_string(), d.clone());
                    }
                    None => {
                        return Err(Exc::type_error(format!(
                            "{}() missing required argument: '{name}'",
                            fun.name
                        )))
                    }
                }
            }
        }
        let frame = Frame {
            file: fun.source.clone(),
            locals: Some(scope.clone()),
            closure: fun.closure.clone(),
        };
        let result = match &fun.body {
            FnBody::Expr(e) => self.eval(&frame, e),
            FnBody::Stmts(body) => match self.exec_block(&frame, body) {
                Ok(Flow::Return(v)) => Ok(v),
                Ok(_) => Ok(Val::None),
                Err(e) => Err(e),
            },
        };
        drop(frame);
        release_locals(&scope);
        result
    }
}

/// Break the cycle between a call's locals and the closures defined in
/// them (`grid = lambda META: ...` captures the very scope that holds it).
/// When every closure capturing the scope is held only by the scope itself,
/// nothing outside can reach the scope once the call returns, so its values
/// (tensors included) are dropped now. A closure that escaped (returned,
/// stored elsewhere) keeps the scope alive as Python would.
fn release_locals(scope: &Scope) {
    let total = Rc::strong_count(scope);
    if total == 1 {
        return;
    }
    let internal: usize = scope
        .borrow()
        .values()
        .filter_map(|v| match v {
            Val::Func(f) if Rc::strong_count(f) == 1 => {
                Some(f.closure.iter().filter(|c| Rc::ptr_eq(c, scope)).count())
            }
            _ => None,
        })
        .sum();
    if total == 1 + internal {
        // Take the values out first: dropping them may run arbitrary drops.
        let values = std::mem::take(&mut *scope.borrow_mut());
        drop(values);
    }
}

/// Whether an exception of class `kind` is caught by `except name`.
fn exc_matches(kind: &str, name: &str) -> bool {
    if name == kind || name == "Exception" || name == "BaseException" {
        return kind != "KeyboardInterrupt" || name == "BaseException";
    }
    matches!(
        (name, kind),
        ("LookupError", "KeyError" | "IndexError")
            | ("ArithmeticError", "ZeroDivisionError" | "OverflowError")
            | (
                "RuntimeError",
                "NotImplementedError" | "RecursionError" | "OutOfResources" | "CompilationError"
            )
            | ("ValueError", "UnsupportedError")
    )
}
