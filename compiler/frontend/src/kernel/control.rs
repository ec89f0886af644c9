//! Structured control flow in kernels: runtime `if`/`elif`/`else` (values
//! that differ between branches become results), `for` over `range`,
//! `tl.range` and `tl.static_range` (unrolled), and `while`. Loop-carried
//! variables are the names assigned in the body that exist before the loop,
//! found syntactically as Triton does.

use super::lower::{Flow, KVal, LResult, Lowerer};
use super::semantic::const_truth;
use super::ConstVal;
use crate::source::Span;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::collections::BTreeSet;
use std::rc::Rc;
use tilebook_tir::{DType, OpKind, Region, Type, Value};

/// The name a hint statement rebinds: `tl.multiple_of(x, ...)` or
/// `tl.max_contiguous(x, ...)` written as a statement, its result unused.
/// Triton records such a hint on the value itself, so later uses of `x`
/// see it; here the statement rebinds `x` to the hinted value.
pub(super) fn hint_statement_target(e: &Expr) -> Option<&str> {
    let Expr::Call(c) = e else { return None };
    let Expr::Attribute(f) = &*c.func else {
        return None;
    };
    if !matches!(f.attr.as_str(), "multiple_of" | "max_contiguous") {
        return None;
    }
    match c.arguments.args.first() {
        Some(Expr::Name(n)) => Some(n.id.as_str()),
        _ => None,
    }
}

/// Names assigned anywhere in these statements (targets of `=`, `+=`, `for`,
/// hint statements).
pub(super) fn assigned_names(stmts: &[Stmt], out: &mut BTreeSet<String>) {
    fn target(e: &Expr, out: &mut BTreeSet<String>) {
        match e {
            Expr::Name(n) => {
                out.insert(n.id.to_string());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| target(e, out)),
            Expr::List(t) => t.elts.iter().for_each(|e| target(e, out)),
            _ => {}
        }
    }
    for s in stmts {
        match s {
            Stmt::Assign(a) => a.targets.iter().for_each(|t| target(t, out)),
            Stmt::AugAssign(a) => target(&a.target, out),
            Stmt::AnnAssign(a) => target(&a.target, out),
            Stmt::Expr(e) => {
                if let Some(n) = hint_statement_target(&e.value) {
                    out.insert(n.to_string());
                }
            }
            Stmt::For(f) => {
                target(&f.target, out);
                assigned_names(&f.body, out);
            }
            Stmt::While(w) => assigned_names(&w.body, out),
            Stmt::If(i) => {
                assigned_names(&i.body, out);
                for c in &i.elif_else_clauses {
                    assigned_names(&c.body, out);
                }
            }
            _ => {}
        }
    }
}

impl<'g> Lowerer<'g> {
    pub(super) fn if_stmt(&mut self, i: &ast::StmtIf) -> LResult<Flow> {
        // Turn `if/elif/else` into nested two-way choices.
        self.if_chain(&i.test, &i.body, &i.elif_else_clauses, i.range)
    }

    pub(super) fn if_chain(
        &mut self,
        test: &Expr,
        body: &[Stmt],
        rest: &[ast::ElifElseClause],
        range: ruff_text_size::TextRange,
    ) -> LResult<Flow> {
        let span = self.span(test.range());
        let cond = self.expr(test)?;
        if let KVal::C(c) = &cond {
            if const_truth(c) {
                return self.stmts(body);
            }
            return self.else_part(rest, range);
        }
        let c = self.value_of(&cond, &span)?;
        if self.ty(c).is_block() {
            return Err(self.err(
                "TypeError",
                format!("an `if` condition must be a scalar, got a block of shape {:?}; use tl.where for elementwise choices", self.ty(c).shape),
                &span,
            ));
        }
        let c = self.condition_of(c, &span)?;
        let before = self.locals.clone();
        self.runtime_depth += 1;
        self.blocks.push(vec![]);
        self.stmts(body)?;
        let then_locals = std::mem::replace(&mut self.locals, before.clone());
        let then_ops = self.blocks.pop().unwrap_or_default();
        self.blocks.push(vec![]);
        self.else_part(rest, range)?;
        let else_locals = std::mem::replace(&mut self.locals, before.clone());
        let else_ops = self.blocks.pop().unwrap_or_default();
        self.runtime_depth -= 1;

        // Variables that differ between the branches become results.
        let mut names: Vec<String> = then_locals
            .keys()
            .filter(|n| else_locals.contains_key(*n))
            .filter(|n| !same(&then_locals[*n], &else_locals[*n]))
            .cloned()
            .collect();
        names.sort();
        let mut then_vals = vec![];
        let mut else_vals = vec![];
        let mut types = vec![];
        self.blocks.push(then_ops);
        let mut pending = vec![];
        for n in &names {
            let (a, b) = (&then_locals[n], &else_locals[n]);
            let target_ty = match (a, b) {
                (KVal::T(x), _) => Some(self.ty(*x)),
                (_, KVal::T(y)) => Some(self.ty(*y)),
                _ => None,
            };
            pending.push((n.clone(), target_ty));
        }
        for (n, target) in &pending {
            let v = self.materialize_as(&then_locals[n], target.as_ref(), n, &span)?;
            then_vals.push(v);
        }
        self.emit(OpKind::Yield, then_vals.clone(), vec![], &span);
        let then_ops = self.blocks.pop().unwrap_or_default();
        self.blocks.push(else_ops);
        for (idx, (n, _)) in pending.iter().enumerate() {
            let want = self.ty(then_vals[idx]);
            let v = self.materialize_as(&else_locals[n], Some(&want), n, &span)?;
            if self.ty(v) != want {
                return Err(self.err(
                    "TypeError",
                    format!("variable `{n}` has type {want} in the `if` branch but {} in the `else` branch", self.ty(v)),
                    &span,
                ));
            }
            else_vals.push(v);
            types.push(want);
        }
        self.emit(OpKind::Yield, else_vals, vec![], &span);
        let else_ops = self.blocks.pop().unwrap_or_default();
        let loc = self.loc(&span);
        let mut op = self.k.op(OpKind::If, vec![c], types, loc);
        op.regions = vec![
            Region {
                args: vec![],
                ops: then_ops,
            },
            Region {
                args: vec![],
                ops: else_ops,
            },
        ];
        let results = op.results.clone();
        self.blocks.last_mut().expect("region").push(op);
        self.locals = before;
        for (n, r) in names.iter().zip(results) {
            self.locals.insert(n.clone(), KVal::T(r));
        }
        // Names defined identically in both branches (e.g. constexprs) survive too.
        for (n, v) in then_locals {
            if !self.locals.contains_key(&n) && else_locals.get(&n).is_some_and(|e| same(&v, e)) {
                self.locals.insert(n, v);
            }
        }
        Ok(Flow::Normal)
    }

    pub(super) fn else_part(
        &mut self,
        rest: &[ast::ElifElseClause],
        range: ruff_text_size::TextRange,
    ) -> LResult<Flow> {
        match rest.split_first() {
            None => Ok(Flow::Normal),
            Some((clause, more)) => match &clause.test {
                Some(t) => self.if_chain(t, &clause.body, more, range),
                None => self.stmts(&clause.body),
            },
        }
    }

    /// A value as a tensor of `ty` (constants converted), for yields.
    pub(super) fn materialize_as(
        &mut self,
        v: &KVal,
        ty: Option<&Type>,
        name: &str,
        span: &Span,
    ) -> LResult<Value> {
        match (v, ty) {
            (KVal::C(c), Some(t)) if t.dtype().is_some() => {
                let d = t.dtype().unwrap_or(DType::I32);
                let s = self.const_as(c, d, span);
                self.broadcast_to(s, &t.shape.clone(), span)
            }
            (KVal::T(x), _) => Ok(*x),
            (KVal::C(_), _) => self.value_of(v, span),
            _ => Err(self.err(
                "TypeError",
                format!(
                    "variable `{name}` holds {} and cannot change inside runtime control flow",
                    v.describe()
                ),
                span,
            )),
        }
    }

    /// Loop-carried names: assigned in `body`, defined before, holding values.
    pub(super) fn carried_names(&self, body: &[Stmt], exclude: &BTreeSet<String>) -> Vec<String> {
        let mut assigned = BTreeSet::new();
        assigned_names(body, &mut assigned);
        assigned
            .into_iter()
            .filter(|n| !exclude.contains(n))
            .filter(|n| {
                self.locals
                    .get(n)
                    .is_some_and(|v| carry_leaves(v).is_some())
            })
            .collect()
    }

    pub(super) fn for_stmt(&mut self, f: &ast::StmtFor) -> LResult<()> {
        let span = self.span(f.range);
        if !f.orelse.is_empty() {
            return Err(self.unsupported("`for ... else`", f.range));
        }
        let Expr::Call(call) = &*f.iter else {
            return Err(self.err(
                "UnsupportedError",
                "a kernel `for` loop must iterate over range(...), tl.range(...) or tl.static_range(...)",
                &self.span(f.iter.range()),
            ));
        };
        let func = self.expr(&call.func)?;
        let kind = match &func {
            KVal::Builtin(b) if b == "range" || b == "tl.range" => "range",
            KVal::Builtin(b) if b == "tl.static_range" => "static",
            _ => {
                return Err(self.err(
                    "UnsupportedError",
                    format!("a kernel `for` loop must iterate over range(...), tl.range(...) or tl.static_range(...), not {}", func.describe()),
                    &self.span(call.func.range()),
                ))
            }
        };
        let mut bounds = vec![];
        for a in call.arguments.args.iter() {
            bounds.push((self.expr(a)?, self.span(a.range())));
        }
        for kw in call.arguments.keywords.iter() {
            let name = kw.arg.as_ref().map(|a| a.as_str()).unwrap_or("");
            if !matches!(
                name,
                "num_stages"
                    | "loop_unroll_factor"
                    | "flatten"
                    | "warp_specialize"
                    | "disallow_acc_multi_buffer"
                    | "step"
            ) {
                return Err(self.err(
                    "TypeError",
                    format!("range() got an unexpected keyword argument `{name}`"),
                    &self.span(kw.range),
                ));
            }
            if name == "step" {
                bounds.push((self.expr(&kw.value)?, self.span(kw.range)));
            }
        }
        if bounds.is_empty() || bounds.len() > 3 {
            return Err(self.err(
                "TypeError",
                format!("range expects 1 to 3 arguments, got {}", bounds.len()),
                &span,
            ));
        }
        let zero = (KVal::C(ConstVal::Int(0)), span.clone());
        let one = (KVal::C(ConstVal::Int(1)), span.clone());
        let (lb, ub, step) = match bounds.len() {
            1 => (zero, bounds[0].clone(), one),
            2 => (bounds[0].clone(), bounds[1].clone(), one),
            _ => (bounds[0].clone(), bounds[1].clone(), bounds[2].clone()),
        };
        let Expr::Name(target) = &*f.target else {
            return Err(
                self.unsupported("a loop target other than a single name", f.target.range())
            );
        };
        let target = target.id.to_string();

        if kind == "static" {
            let as_int = |s: &Self, v: &(KVal, Span)| match &v.0 {
                KVal::C(ConstVal::Int(i)) => Ok(*i),
                KVal::C(ConstVal::Bool(b)) => Ok(*b as i64),
                _ => Err(s.err(
                    "TypeError",
                    "tl.static_range bounds must be constexpr integers",
                    &v.1,
                )),
            };
            let (a, b, s) = (as_int(self, &lb)?, as_int(self, &ub)?, as_int(self, &step)?);
            if s == 0 {
                return Err(self.err("ValueError", "range() step must not be zero", &step.1));
            }
            let mut i = a;
            let mut count = 0;
            while (s > 0 && i < b) || (s < 0 && i > b) {
                count += 1;
                if count > 4096 {
                    return Err(self.err(
                        "ValueError",
                        "tl.static_range unrolls more than 4096 iterations",
                        &span,
                    ));
                }
                self.locals
                    .insert(target.clone(), KVal::C(ConstVal::Int(i)));
                if let Flow::Return(_) = self.stmts(&f.body)? {
                    return Err(self.err(
                        "UnsupportedError",
                        "`return` inside a loop is not supported",
                        &span,
                    ));
                }
                i += s;
            }
            return Ok(());
        }

        // Runtime loop: bounds as integers of one type. A step known to be
        // zero is an error now; one that turns out zero at run time is caught
        // by the checked CPU backend.
        if let KVal::C(ConstVal::Int(0) | ConstVal::Bool(false)) = &step.0 {
            return Err(self.err("ValueError", "range() step must not be zero", &step.1));
        }
        let mut vals = vec![];
        for (v, s) in [&lb, &ub, &step] {
            let x = self.value_of(v, s)?;
            let t = self.ty(x);
            if t.is_block() || !t.dtype().is_some_and(DType::is_int) {
                return Err(self.err(
                    "TypeError",
                    format!("range bounds must be integer scalars, got {t}"),
                    s,
                ));
            }
            vals.push(x);
        }
        let iv_ty = vals
            .iter()
            .map(|&v| self.ty(v).dtype().unwrap_or(DType::I32))
            .fold(DType::I32, |a, b| if b.bits() > a.bits() { b } else { a });
        let vals: Vec<Value> = vals
            .into_iter()
            .map(|v| self.cast(v, iv_ty, &span))
            .collect();
        let exclude = BTreeSet::from([target.clone()]);
        let names = self.carried_names(&f.body, &exclude);
        let (templates, inits) = self.carry_inits(&names, &span)?;
        let before = self.locals.clone();
        let iv = self.k.new_value(Type::scalar(iv_ty));
        let mut args = vec![iv];
        args.extend(self.carry_args(&names, &templates, &inits));
        self.locals.insert(target.clone(), KVal::T(iv));
        self.blocks.push(vec![]);
        self.runtime_depth += 1;
        self.stmts(&f.body)?;
        self.runtime_depth -= 1;
        let yields = self.carry_yields(&names, &templates, &inits, &span)?;
        self.emit(OpKind::Yield, yields, vec![], &span);
        let body = self.blocks.pop().unwrap_or_default();
        let loc = self.loc(&span);
        let mut op_args = vals;
        op_args.extend(&inits);
        let types = inits.iter().map(|&i| self.ty(i)).collect();
        let mut op = self.k.op(OpKind::For, op_args, types, loc);
        op.regions = vec![Region { args, ops: body }];
        let results = op.results.clone();
        self.blocks.last_mut().expect("region").push(op);
        self.locals = before;
        self.carry_results(&names, &templates, &results);
        Ok(())
    }

    pub(super) fn while_stmt(&mut self, w: &ast::StmtWhile) -> LResult<()> {
        let span = self.span(w.range);
        if !w.orelse.is_empty() {
            return Err(self.unsupported("`while ... else`", w.range));
        }
        let names = self.carried_names(&w.body, &BTreeSet::new());
        let (templates, inits) = self.carry_inits(&names, &span)?;
        let before = self.locals.clone();
        let mut regions = vec![];
        for part in 0..2 {
            let args = self.carry_args(&names, &templates, &inits);
            self.blocks.push(vec![]);
            self.runtime_depth += 1;
            if part == 0 {
                let tspan = self.span(w.test.range());
                let c = self.expr(&w.test)?;
                let c = self.value_of(&c, &tspan)?;
                if self.ty(c).is_block() {
                    return Err(self.err(
                        "TypeError",
                        "a `while` condition must be a scalar",
                        &tspan,
                    ));
                }
                let c = self.condition_of(c, &tspan)?;
                self.emit(OpKind::Yield, vec![c], vec![], &tspan);
            } else {
                self.stmts(&w.body)?;
                let yields = self.carry_yields(&names, &templates, &inits, &span)?;
                self.emit(OpKind::Yield, yields, vec![], &span);
            }
            self.runtime_depth -= 1;
            let ops = self.blocks.pop().unwrap_or_default();
            regions.push(Region { args, ops });
            self.locals = before.clone();
        }
        let loc = self.loc(&span);
        let types = inits.iter().map(|&i| self.ty(i)).collect();
        let mut op = self.k.op(OpKind::While, inits, types, loc);
        op.regions = regions;
        let results = op.results.clone();
        self.blocks.last_mut().expect("region").push(op);
        self.carry_results(&names, &templates, &results);
        Ok(())
    }

    /// The loop-carried values of `names` before a loop: each name's value
    /// (its structure) and the runtime values of its leaves, in order.
    fn carry_inits(&mut self, names: &[String], span: &Span) -> LResult<(Vec<KVal>, Vec<Value>)> {
        let mut templates = vec![];
        let mut inits = vec![];
        for n in names {
            let v = self.locals[n].clone();
            for leaf in carry_leaves(&v).unwrap_or_default() {
                inits.push(self.value_of(&leaf, span)?);
            }
            templates.push(v);
        }
        Ok((templates, inits))
    }

    /// Fresh region arguments for the carried leaves, bound to the names.
    fn carry_args(&mut self, names: &[String], templates: &[KVal], inits: &[Value]) -> Vec<Value> {
        let args: Vec<Value> = inits
            .iter()
            .map(|&i| {
                let t = self.ty(i);
                self.k.new_value(t)
            })
            .collect();
        let mut it = args.iter().copied();
        for (n, t) in names.iter().zip(templates) {
            self.locals.insert(n.clone(), rebuild(t, &mut it));
        }
        args
    }

    /// The values a loop body yields for the carried names, each leaf of the
    /// type it had before the loop.
    fn carry_yields(
        &mut self,
        names: &[String],
        templates: &[KVal],
        inits: &[Value],
        span: &Span,
    ) -> LResult<Vec<Value>> {
        let mut yields = vec![];
        let mut init_it = inits.iter().copied();
        for (n, t) in names.iter().zip(templates) {
            let cur = self.locals.get(n).cloned().unwrap_or_else(|| t.clone());
            let (want_leaves, got) = (carry_leaves(t).unwrap_or_default(), carry_leaves(&cur));
            let got = match got {
                Some(g) if g.len() == want_leaves.len() && structure(t) == structure(&cur) => g,
                _ => {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "loop-carried variable `{n}` holds {} before the loop but {} at the end of its body",
                            t.describe(),
                            cur.describe()
                        ),
                        span,
                    ))
                }
            };
            for leaf in got {
                let init = init_it.next().expect("one init per leaf");
                let want = self.ty(init);
                let y = self.materialize_as(&leaf, Some(&want), n, span)?;
                if self.ty(y) != want {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "loop-carried variable `{n}` has type {want} before the loop but {} at the end of its body; keep its type stable (e.g. with .to({}))",
                            self.ty(y),
                            want.dtype().map(|d| d.tl_name()).unwrap_or("...")
                        ),
                        span,
                    ));
                }
                yields.push(y);
            }
        }
        Ok(yields)
    }

    /// Bind the names to a loop's results.
    fn carry_results(&mut self, names: &[String], templates: &[KVal], results: &[Value]) {
        let mut it = results.iter().copied();
        for (n, t) in names.iter().zip(templates) {
            self.locals.insert(n.clone(), rebuild(t, &mut it));
        }
    }
}

/// The leaves loops carry for a value (tensors and numbers; tuples and
/// descriptors by their parts), or `None` when it cannot be carried.
fn carry_leaves(v: &KVal) -> Option<Vec<KVal>> {
    match v {
        KVal::T(_) | KVal::C(ConstVal::Int(_) | ConstVal::Float(_) | ConstVal::Bool(_)) => {
            Some(vec![v.clone()])
        }
        KVal::Tuple(items) => {
            let mut out = vec![];
            for it in items {
                out.extend(carry_leaves(it)?);
            }
            Some(out)
        }
        KVal::Desc(d) => Some(d.values().into_iter().map(KVal::T).collect()),
        _ => None,
    }
}

/// What must stay the same about a carried value across an iteration.
fn structure(v: &KVal) -> String {
    match v {
        KVal::Tuple(items) => {
            let inner: Vec<String> = items.iter().map(structure).collect();
            format!("({})", inner.join(","))
        }
        KVal::Desc(d) => format!("desc{}{:?}{}", d.tensor, d.block, d.offsets.len()),
        _ => "leaf".into(),
    }
}

/// `template`'s structure over new leaf values.
fn rebuild(template: &KVal, vals: &mut dyn Iterator<Item = Value>) -> KVal {
    match template {
        KVal::Tuple(items) => KVal::Tuple(items.iter().map(|t| rebuild(t, vals)).collect()),
        KVal::Desc(d) => {
            let n = d.values().len();
            let v: Vec<Value> = vals.take(n).collect();
            KVal::Desc(Rc::new(d.with_values(&v)))
        }
        _ => KVal::T(vals.next().expect("one value per leaf")),
    }
}

/// Whether two lowering values are the same (for branch merging).
fn same(a: &KVal, b: &KVal) -> bool {
    match (a, b) {
        (KVal::T(x), KVal::T(y)) => x == y,
        (KVal::C(x), KVal::C(y)) => x == y,
        (KVal::Module(x), KVal::Module(y)) => x == y,
        (KVal::Builtin(x), KVal::Builtin(y)) => x == y,
        (KVal::Meta(x), KVal::Meta(y)) => Rc::ptr_eq(x, y),
        (KVal::Desc(x), KVal::Desc(y)) => x == y,
        (KVal::Tuple(x), KVal::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => false,
    }
}
