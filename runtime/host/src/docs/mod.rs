//! Documentation for `help(x)`, `x?` and `x??` and Jupyter's inspect
//! request: native functions from the registry (each entry carries its
//! doc), the kernel language's `tl.*` names from `builtins.txt`, kernels with
//! their parameters, tuning configs and compiled specializations, host
//! functions with their signatures, other values with their type and value.
//!
//! `builtins.txt` holds one entry per `tl` name: a header line at column 0
//! (the qualified name and its signature), then indented lines of text.

use crate::kernels::KernelObj;
use crate::registry::Entry;
use crate::value::{Args, Val, R};
use crate::Engine;
use std::collections::HashMap;
use std::sync::OnceLock;

const BUILTINS: &str = include_str!("builtins.txt");

/// The documented builtins: qualified name → (signature line, text).
fn table() -> &'static HashMap<&'static str, (&'static str, String)> {
    static TABLE: OnceLock<HashMap<&'static str, (&'static str, String)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = HashMap::new();
        let mut current: Option<(&str, &str, String)> = None;
        for line in BUILTINS.lines() {
            if let Some(body) = line.strip_prefix("    ") {
                if let Some((_, _, text)) = &mut current {
                    text.push_str(body);
                    text.push('\n');
                }
                continue;
            }
            if let Some((name, sig, text)) = current.take() {
                t.insert(name, (sig, text));
            }
            let name = line.split('(').next().unwrap_or(line).trim();
            current = Some((name, line, String::new()));
        }
        if let Some((name, sig, text)) = current {
            t.insert(name, (sig, text));
        }
        t
    })
}

/// The documentation of a builtin by its qualified name (`tl.load`,
/// `torch.zeros`, `help`); `tl.math.exp` is `tl.exp`.
pub fn builtin_doc(s: &Engine, name: &str) -> Option<String> {
    if let Some(doc) = crate::modules::doc(s, name) {
        return Some(doc.to_string());
    }
    if let Some((sig, text)) = name
        .strip_prefix("tl.extra.cuda.libdevice.")
        .and_then(tilebook_frontend::kernel::libdevice::doc)
    {
        return Some(format!("{sig}\n{text}\n"));
    }
    let name = name
        .strip_prefix("tl.math.")
        .map(|n| format!("tl.{n}"))
        .unwrap_or_else(|| name.to_string());
    let (sig, text) = table().get(name.as_str())?;
    Some(format!("{sig}\n{text}"))
}

/// The documentation of a value; `source` (`x??`) adds the source text of
/// kernels and functions.
pub fn describe(s: &Engine, expr: &str, v: &Val, source: bool) -> String {
    match v {
        Val::Builtin(b) => {
            builtin_doc(s, b).unwrap_or_else(|| format!("{b}: a tilebook builtin\n"))
        }
        Val::Module(m) => format!(
            "module {m}\n{}",
            match &**m {
                "tl" => "Triton's tile language: kernels' builtins (tl.<TAB> lists them).\n",
                "torch" => "tilebook's torch subset: tensors on 'cpu' and 'cuda'.\n",
                "triton" => "jit, autotune, heuristics, Config, cdiv, testing.\n",
                _ => "",
            }
        ),
        Val::Kernel(k) => kernel_doc(k, source),
        Val::Tensor(t) => format!(
            "{expr}: tensor of shape {:?}, dtype {}, device '{}'\n",
            t.shape,
            crate::tensor::torch_name(t.dtype),
            t.device
        ),
        other => format!("{expr}: {} = {}\n", other.type_name(), other.repr()),
    }
}

fn params(p: &ruff_python_ast::Parameters) -> String {
    let mut names: Vec<String> = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .map(|a| match &a.default {
            Some(_) => format!("{}=...", a.parameter.name),
            None => a.parameter.name.to_string(),
        })
        .collect();
    if let Some(v) = &p.vararg {
        names.push(format!("*{}", v.name));
    }
    if let Some(k) = &p.kwarg {
        names.push(format!("**{}", k.name));
    }
    names.join(", ")
}

/// The lines of a cell from the one holding `at` to the end of its block.
fn function_source(text: &str, at: ruff_text_size::TextRange) -> String {
    let start = text[..at.start().to_usize()]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let mut out = String::new();
    for (i, line) in text[start..].lines().enumerate() {
        if i > 0 && !line.trim().is_empty() && !line.starts_with([' ', '\t']) {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}

fn kernel_doc(k: &KernelObj, source: bool) -> String {
    let jit = k.jit.borrow();
    let ps: Vec<String> = jit
        .params
        .iter()
        .map(|p| {
            if p.constexpr {
                format!("{}: tl.constexpr", p.name)
            } else {
                p.name.clone()
            }
        })
        .collect();
    let mut out = format!(
        "@triton.jit kernel {}({})\nLaunch: {}[grid](...)\n",
        jit.name,
        ps.join(", "),
        jit.name
    );
    if let Some(t) = k.autotune.borrow().as_ref() {
        out.push_str(&format!(
            "Autotuned over {} configs, key {:?}",
            t.configs.len(),
            t.key
        ));
        match t.best.borrow().as_ref() {
            Some(c) => out.push_str(&format!(
                "; best so far: {}\n",
                Val::Config(c.clone()).to_str()
            )),
            None => out.push_str("; not tuned yet\n"),
        }
    }
    let cache = k.cache.borrow();
    if cache.is_empty() {
        out.push_str("Compiled specializations: none yet\n");
    } else {
        out.push_str(&format!("Compiled specializations ({}):\n", cache.len()));
        let mut specs: Vec<_> = cache.values().collect();
        specs.sort_by(|a, b| a.signature.cmp(&b.signature));
        for c in specs {
            let figures = match &c.gpu {
                Some((gk, f)) => format!(
                    "{} registers, {} B shared, {} B spilled, {} warps",
                    f.regs, gk.shared_bytes, f.local_bytes, gk.num_warps
                ),
                None => format!("CPU backend, num_warps={}", c.num_warps),
            };
            let how = if c.from_disk {
                "loaded from disk".to_string()
            } else {
                format!("compiled in {:.1} ms", c.compile_seconds * 1e3)
            };
            out.push_str(&format!("  [{}]  {figures}; {how}\n", c.signature));
        }
    }
    if source {
        out.push_str(&jit.text);
        if !jit.text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// `help(x)`, `x?`, `x??`: the text for an expression, or an error.
pub fn help(s: &mut Engine, expr: &str, source: bool) -> R<String> {
    let v = s.run_code(expr)?;
    if let Some((file, def)) = s.py_function_def(&v) {
        let mut out = format!("def {}({})\n", def.name, params(&def.parameters));
        if source {
            out.push_str(&function_source(&file.text, def.parameters.range));
        }
        return Ok(out);
    }
    // A Python wrapper of a builtin (the prelude's `torch.zeros`,
    // `do_bench`, ...) names the builtin whose documentation it keeps.
    if let Some(Val::Str(name)) = s.host_attr(&v, "_tilebook_doc") {
        if let Some(doc) = builtin_doc(s, &name) {
            return Ok(doc);
        }
    }
    Ok(describe(s, expr, &v, source))
}

/// `help` as a notebook builtin.
pub const TABLE: &[Entry] = &[Entry {
    name: "help",
    f: help_builtin,
    doc: r#"help(object)
Show the documentation of a builtin, a kernel or a function (also object?).
"#,
}];

fn help_builtin(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let text = match a.pos.first() {
        Some(v) => describe(s, &v.repr(), v, false),
        None => builtin_doc(s, "help").unwrap_or_default(),
    };
    s.emit_stream("stdout", &text);
    Ok(Val::None)
}
