//! Ahead-of-time lowering of one kernel in a file, without running it:
//! the file's top-level `@jit` functions and simple constant assignments form
//! the globals the kernel sees. Used by `tilebook compile` and the golden
//! IR tests.

use crate::kernel::{
    literal, lower_kernel, parse_signature, ConstVal, Global, Globals, JitFunction,
};
use crate::source::SourceFile;
use ruff_python_ast::{Expr, Stmt};
use std::rc::Rc;
use tilebook_tir::Kernel;

pub struct FileGlobals {
    jits: Vec<Rc<JitFunction>>,
    consts: Vec<(String, ConstVal)>,
    modules: Vec<(String, String)>,
}

impl Globals for FileGlobals {
    fn global(&self, name: &str) -> Option<Global> {
        if let Some(j) = self.jits.iter().find(|j| j.name == name) {
            return Some(Global::Const(ConstVal::Func(j.clone())));
        }
        if let Some((_, c)) = self.consts.iter().find(|(n, _)| n == name) {
            return Some(Global::Const(c.clone()));
        }
        self.modules
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| Global::Module(m.clone()))
    }
}

/// The kernel language's name for a module a file imports, if it is one.
fn builtin_module(python_name: &str) -> Option<String> {
    Some(
        match python_name {
            "triton" => "triton",
            "math" => "math",
            "triton.language" => "tl",
            "triton.language.math" => "tl.math",
            "triton.language.extra" => "tl.extra",
            "triton.language.extra.cuda" => "tl.extra.cuda",
            "triton.language.extra.libdevice" | "triton.language.extra.cuda.libdevice" => {
                "tl.extra.cuda.libdevice"
            }
            _ => return None,
        }
        .to_string(),
    )
}

fn is_jit(d: &ruff_python_ast::Decorator) -> bool {
    let e = match &d.expression {
        Expr::Call(c) => &*c.func,
        other => other,
    };
    match e {
        Expr::Attribute(a) => a.attr.as_str() == "jit",
        Expr::Name(n) => n.id.as_str() == "jit",
        _ => false,
    }
}

/// Lower one specialization of `kernel` in `source` and optimise it.
/// Errors come back rendered (with the source line and a caret).
pub fn lower_file(
    source: &Rc<SourceFile>,
    kernel: &str,
    signature: &str,
) -> Result<Kernel, String> {
    let stmts = crate::parse::parse_cell(source).map_err(|d| d.render(false))?;
    let mut g = FileGlobals {
        jits: vec![],
        consts: vec![],
        modules: vec![
            ("tl".into(), "tl".into()),
            ("triton".into(), "triton".into()),
        ],
    };
    for s in &stmts {
        match s {
            Stmt::FunctionDef(f) if f.decorator_list.iter().any(is_jit) => {
                g.jits.push(Rc::new(JitFunction::new(f.clone(), source)))
            }
            // `import triton.language as tl`, `from triton.language.extra import
            // libdevice`, `import math`: the built-in modules under the names
            // the file binds.
            Stmt::Import(i) => {
                for a in &i.names {
                    if let Some(m) = builtin_module(a.name.as_str()) {
                        let bound = match &a.asname {
                            Some(n) => n.to_string(),
                            None => a.name.split('.').next().unwrap_or("").to_string(),
                        };
                        let m = if a.asname.is_some() { m } else { bound.clone() };
                        g.modules.push((bound, m));
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let base = i.module.as_ref().map_or("", |m| m.as_str());
                for a in &i.names {
                    if let Some(m) = builtin_module(&format!("{base}.{}", a.name)) {
                        let bound = a.asname.as_ref().unwrap_or(&a.name).to_string();
                        g.modules.push((bound, m));
                    }
                }
            }
            Stmt::Assign(a) if a.targets.len() == 1 => {
                if let (Expr::Name(n), Some(c)) = (&a.targets[0], literal(&a.value)) {
                    g.consts.push((n.id.to_string(), c));
                }
            }
            _ => {}
        }
    }
    let f = g
        .jits
        .iter()
        .find(|j| j.name == kernel)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = g.jits.iter().map(|j| j.name.as_str()).collect();
            format!(
                "no @triton.jit function `{kernel}` in {} (found: {})\n",
                source.name,
                names.join(", ")
            )
        })?;
    let (specs, options) =
        parse_signature(signature, &f).map_err(|e| format!("bad signature: {e}\n"))?;
    let (mut k, _) = lower_kernel(&f, &specs, &[], &g, &options).map_err(|d| d.render(false))?;
    tilebook_tir::passes::optimize(&mut k);
    tilebook_tir::verify::verify(&k)
        .map_err(|e| format!("internal error: invalid tile IR: {e}\n"))?;
    Ok(k)
}
