//! Triton's ahead-of-time signature spelling, for `tilebook compile`:
//! `"*fp16:16, i32, i32:16, i32:1, fp32, BLOCK=128, ACT='leaky_relu'"`.
//! Positional entries give the non-constexpr parameters in order; `NAME=value`
//! entries give constexprs (and `num_warps`/`num_stages`/`maxnreg`).

use super::{ArgSpec, CompileOptions, ConstVal, IntSpec, JitFunction};
use ruff_python_ast::{Expr, Number, UnaryOp};
use tilebook_tir::DType;

/// One entry of a signature string.
#[derive(Clone, Debug, PartialEq)]
pub enum SignatureArg {
    Positional(ArgSpec),
    Named(String, ConstVal),
}

fn parse_const(v: &str) -> Result<ConstVal, String> {
    let v = v.trim();
    if let Some(s) = v.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return Ok(ConstVal::Str(s.into()));
    }
    if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return Ok(ConstVal::Str(s.into()));
    }
    match v {
        "True" | "true" => return Ok(ConstVal::Bool(true)),
        "False" | "false" => return Ok(ConstVal::Bool(false)),
        "None" => return Ok(ConstVal::None),
        _ => {}
    }
    if let Ok(i) = v.parse::<i64>() {
        return Ok(ConstVal::Int(i));
    }
    if let Ok(f) = v.parse::<f64>() {
        return Ok(ConstVal::Float(f));
    }
    let d = v.strip_prefix("tl.").unwrap_or(v);
    if let Some(dt) = DType::from_name(d).or_else(|| tl_dtype(d)) {
        return Ok(ConstVal::DType(dt));
    }
    Err(format!("cannot read constexpr value `{v}`"))
}

/// A host descriptor as `ArgSpec`'s display writes it:
/// `tensordesc<fp16[128, 64]>`, `tensordesc<fp16[128, 64], nan, shape:16:>`.
fn parse_desc(inner: &str) -> Result<ArgSpec, String> {
    let bad = || format!("cannot read descriptor type `tensordesc<{inner}>`");
    let (head, rest) = inner.split_once(']').ok_or_else(bad)?;
    let (dt, dims) = head.split_once('[').ok_or_else(bad)?;
    let dtype = DType::from_name(dt.trim()).ok_or_else(bad)?;
    let block = dims
        .split(',')
        .map(|d| d.trim().parse::<usize>().map_err(|_| bad()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut nan_padding = false;
    let mut shape_div16 = vec![false; block.len()];
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "nan" {
            nan_padding = true;
        } else if let Some(flags) = part.strip_prefix("shape") {
            let flags: Vec<&str> = flags.split(':').skip(1).collect();
            if flags.len() != block.len() || flags.iter().any(|f| !matches!(*f, "" | "16")) {
                return Err(bad());
            }
            shape_div16 = flags.iter().map(|f| *f == "16").collect();
        } else {
            return Err(bad());
        }
    }
    Ok(ArgSpec::Desc {
        dtype,
        block,
        nan_padding,
        shape_div16,
    })
}

fn parse_type(t: &str) -> Result<ArgSpec, String> {
    let t = t.trim();
    if let Some(inner) = t
        .strip_prefix("tensordesc<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return parse_desc(inner);
    }
    let (base, attr) = match t.split_once(':') {
        Some((b, a)) => (b.trim(), Some(a.trim())),
        None => (t, None),
    };
    if let Some(p) = base.strip_prefix('*') {
        let dtype = DType::from_name(p).ok_or_else(|| format!("unknown pointee type `{p}`"))?;
        let aligned = match attr {
            None => false,
            Some("16") => true,
            Some(a) => return Err(format!("pointer attribute must be 16, got `{a}`")),
        };
        return Ok(ArgSpec::Ptr { dtype, aligned });
    }
    let dtype = DType::from_name(base)
        .ok_or_else(|| format!("unknown type `{base}` (expected e.g. *fp16, i32, fp32)"))?;
    if dtype.is_float() {
        let positive = match attr {
            None => false,
            Some("pos") => true,
            Some(a) => return Err(format!("float attribute must be pos, got `{a}`")),
        };
        return Ok(ArgSpec::Float { dtype, positive });
    }
    let spec = match attr {
        None => IntSpec::None,
        Some("1") => IntSpec::One,
        Some("16") => IntSpec::Div16,
        Some(a) => return Err(format!("integer attribute must be 1 or 16, got `{a}`")),
    };
    Ok(ArgSpec::Int { dtype, spec })
}

/// Split on commas outside quotes.
fn split_entries(sig: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quote = None;
    let mut depth = 0usize;
    for c in sig.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c)
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.push(c)
            }
            // A descriptor's `<...>` holds commas of its own.
            (None, '<') => {
                depth += 1;
                cur.push(c)
            }
            (None, '>') => {
                depth = depth.saturating_sub(1);
                cur.push(c)
            }
            (None, ',') if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Resolve a signature string against a function's parameters.
pub fn parse_signature(
    sig: &str,
    f: &JitFunction,
) -> Result<(Vec<ArgSpec>, CompileOptions), String> {
    let mut positional = vec![];
    let mut named = vec![];
    let mut options = CompileOptions::default();
    for e in split_entries(sig) {
        match e.split_once('=') {
            Some((name, value)) => {
                let name = name.trim();
                let value = parse_const(value)?;
                match (name, &value) {
                    ("num_warps", ConstVal::Int(n)) => {
                        options.num_warps = CompileOptions::warps(*n)?
                    }
                    ("num_stages", ConstVal::Int(n)) => {
                        options.num_stages = CompileOptions::stages(*n)?
                    }
                    ("maxnreg", ConstVal::Int(n)) => {
                        options.maxnreg = Some(
                            u32::try_from(*n)
                                .ok()
                                .filter(|&n| n > 0)
                                .ok_or_else(|| format!("maxnreg must be positive, got {n}"))?,
                        )
                    }
                    _ => named.push((name.to_string(), value)),
                }
            }
            None => positional.push(parse_type(&e)?),
        }
    }
    let mut specs = vec![];
    let mut pos = positional.into_iter();
    for p in &f.params {
        if let Some((_, v)) = named.iter().find(|(n, _)| *n == p.name) {
            specs.push(ArgSpec::Const(v.clone()));
            continue;
        }
        if p.constexpr {
            // A default written as a literal (`KV_DESC: tl.constexpr = 0`)
            // stands, as it does when the kernel is launched.
            match default_of(f, &p.name) {
                Some(v) => {
                    specs.push(ArgSpec::Const(v));
                    continue;
                }
                None => {
                    return Err(format!(
                        "constexpr parameter `{}` needs a value in the signature (`{}=...`)",
                        p.name, p.name
                    ))
                }
            }
        }
        match pos.next() {
            Some(s) => specs.push(s),
            None => {
                return Err(format!(
                    "the signature has no type for parameter `{}`",
                    p.name
                ))
            }
        }
    }
    if pos.next().is_some() {
        return Err(format!(
            "the signature has more types than `{}` has parameters",
            f.name
        ));
    }
    for (n, _) in &named {
        if f.param_index(n).is_none() {
            return Err(format!("`{}` has no parameter named `{n}`", f.name));
        }
    }
    Ok((specs, options))
}

/// A `tl.` dtype by its Triton name (`float16`, `float8e5`, ...).
fn tl_dtype(name: &str) -> Option<DType> {
    super::names::DTYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, d)| d)
}

/// The literal default of parameter `name` of `f`, if it has one.
fn default_of(f: &JitFunction, name: &str) -> Option<ConstVal> {
    let p = &f.def.parameters;
    p.posonlyargs
        .iter()
        .chain(&p.args)
        .chain(&p.kwonlyargs)
        .find(|pw| pw.parameter.name.as_str() == name)
        .and_then(|pw| pw.default.as_deref())
        .and_then(literal)
}

/// The value of a literal expression (`128`, `-1.5`, `'relu'`, `True`,
/// `None`, `tl.constexpr(64)`, `tl.float16`), if `e` is one.
pub fn literal(e: &Expr) -> Option<ConstVal> {
    match e {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_i64().map(ConstVal::Int),
            Number::Float(f) => Some(ConstVal::Float(*f)),
            _ => None,
        },
        Expr::UnaryOp(u) if u.op == UnaryOp::USub => match literal(&u.operand)? {
            ConstVal::Int(i) => i.checked_neg().map(ConstVal::Int),
            ConstVal::Float(f) => Some(ConstVal::Float(-f)),
            _ => None,
        },
        Expr::StringLiteral(s) => Some(ConstVal::Str(s.value.to_str().to_string())),
        Expr::BooleanLiteral(b) => Some(ConstVal::Bool(b.value)),
        Expr::NoneLiteral(_) => Some(ConstVal::None),
        Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "tl") => {
            let n = a.attr.as_str();
            tl_dtype(n)
                .or_else(|| DType::from_name(n))
                .map(ConstVal::DType)
        }
        Expr::Call(c) => match (&*c.func, c.arguments.args.first()) {
            (Expr::Attribute(a), Some(arg)) if a.attr.as_str() == "constexpr" => literal(arg),
            _ => None,
        },
        _ => None,
    }
}

/// Only the launch options (`num_warps=`, `num_stages=`, `maxnreg=`) of a signature.
pub fn parse_signature_options(sig: &str) -> CompileOptions {
    let mut options = CompileOptions::default();
    for e in split_entries(sig) {
        if let Some((name, value)) = e.split_once('=') {
            if let Ok(ConstVal::Int(n)) = parse_const(value) {
                match name.trim() {
                    "num_warps" => {
                        options.num_warps = CompileOptions::warps(n).unwrap_or(options.num_warps)
                    }
                    "num_stages" => {
                        options.num_stages = CompileOptions::stages(n).unwrap_or(options.num_stages)
                    }
                    "maxnreg" if n > 0 => options.maxnreg = u32::try_from(n).ok(),
                    _ => {}
                }
            }
        }
    }
    options
}
