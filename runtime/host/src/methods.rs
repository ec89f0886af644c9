//! Methods of strings, lists, tuples, dicts and tensors (`x.append`, `s.format`, ...).

use crate::builtins::{call_builtin, to_int, Args};
use crate::ops::equal;
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use std::cell::RefCell;
use std::rc::Rc;

/// Methods on strings, lists, dicts and tensors.
pub fn call_method(
    s: &mut Engine,
    recv: &Val,
    name: &str,
    pos: Vec<Val>,
    kw: Vec<(String, Val)>,
) -> R<Val> {
    let a = Args {
        pos,
        kw,
        fname: name.to_string(),
    };
    match recv {
        Val::Tensor(t) => crate::torch::tensor_method(s, t, name, a),
        Val::Object(o) if s.extensions.methods.contains_key(o.type_name.as_str()) => {
            let m = s.extensions.methods[o.type_name.as_str()];
            (m.f)(s, o, name, &a)
        }
        Val::Object(o) if name == "__decorate__" => crate::autotune::decorate(o, a.req(0, "fn")?),
        Val::Kernel(k) if name == "warmup" => crate::kernels::warmup(s, k, a),
        Val::Str(x) => match name {
            "format" => {
                let mut out = String::new();
                let mut auto = 0;
                let mut rest: &str = x;
                while let Some(p) = rest.find('{') {
                    out.push_str(&rest[..p]);
                    if rest[p..].starts_with("{{") {
                        out.push('{');
                        rest = &rest[p + 2..];
                        continue;
                    }
                    let end = rest[p..].find('}').ok_or_else(|| {
                        Exc::value_error("Single '{' encountered in format string")
                    })? + p;
                    let field = &rest[p + 1..end];
                    let (fname, spec) = field.split_once(':').unwrap_or((field, ""));
                    let v = if fname.is_empty() {
                        auto += 1;
                        a.pos.get(auto - 1).cloned()
                    } else if let Ok(i) = fname.parse::<usize>() {
                        a.pos.get(i).cloned()
                    } else {
                        a.kw(fname)
                    }
                    .ok_or_else(|| Exc::new("IndexError", "Replacement index out of range"))?;
                    out.push_str(&crate::format::format_value(&v, spec)?);
                    rest = &rest[end + 1..];
                }
                out.push_str(&rest.replace("}}", "}"));
                Ok(Val::str(&out))
            }
            "join" => {
                let items = s.iterate(&a.req(0, "iterable")?)?;
                Ok(Val::str(
                    &items.iter().map(|v| v.to_str()).collect::<Vec<_>>().join(x),
                ))
            }
            "upper" => Ok(Val::str(&x.to_uppercase())),
            "lower" => Ok(Val::str(&x.to_lowercase())),
            "strip" => Ok(Val::str(x.trim())),
            "startswith" => Ok(Val::Bool(x.starts_with(&*a.req(0, "prefix")?.to_str()))),
            "endswith" => Ok(Val::Bool(x.ends_with(&*a.req(0, "suffix")?.to_str()))),
            "replace" => Ok(Val::str(
                &x.replace(&*a.req(0, "old")?.to_str(), &a.req(1, "new")?.to_str()),
            )),
            "split" => Ok(Val::list(match a.get(0, "sep") {
                Some(sep) => x.split(&*sep.to_str()).map(Val::str).collect(),
                None => x.split_whitespace().map(Val::str).collect(),
            })),
            "ljust" | "rjust" | "center" => {
                let w = to_int(&a.req(0, "width")?)? as usize;
                let spec = format!(
                    "{}{w}",
                    match name {
                        "ljust" => "<",
                        "rjust" => ">",
                        _ => "^",
                    }
                );
                Ok(Val::str(&crate::format::format_value(
                    &Val::Str(x.clone()),
                    &spec,
                )?))
            }
            _ => Err(Exc::new(
                "AttributeError",
                format!("'str' object has no attribute '{name}'"),
            )),
        },
        Val::List(l) => match name {
            "append" => {
                l.borrow_mut().push(a.req(0, "object")?);
                Ok(Val::None)
            }
            "extend" => {
                let items = s.iterate(&a.req(0, "iterable")?)?;
                l.borrow_mut().extend(items);
                Ok(Val::None)
            }
            "pop" => {
                let mut v = l.borrow_mut();
                let n = v.len();
                if n == 0 {
                    return Err(Exc::new("IndexError", "pop from empty list"));
                }
                let i = a
                    .get(0, "index")
                    .map(|x| to_int(&x))
                    .transpose()?
                    .unwrap_or(-1);
                let i = if i < 0 { i + n as i64 } else { i } as usize;
                if i >= n {
                    return Err(Exc::new("IndexError", "pop index out of range"));
                }
                Ok(v.remove(i))
            }
            "insert" => {
                let i = to_int(&a.req(0, "index")?)?.clamp(0, l.borrow().len() as i64) as usize;
                l.borrow_mut().insert(i, a.req(1, "object")?);
                Ok(Val::None)
            }
            "index" => {
                let x = a.req(0, "value")?;
                l.borrow()
                    .iter()
                    .position(|v| equal(v, &x))
                    .map(|i| Val::Int(i as i64))
                    .ok_or_else(|| Exc::value_error("value is not in list"))
            }
            "count" => {
                let x = a.req(0, "value")?;
                Ok(Val::Int(
                    l.borrow().iter().filter(|v| equal(v, &x)).count() as i64
                ))
            }
            "reverse" => {
                l.borrow_mut().reverse();
                Ok(Val::None)
            }
            "copy" => Ok(Val::list(l.borrow().clone())),
            "clear" => {
                l.borrow_mut().clear();
                Ok(Val::None)
            }
            "sort" => {
                let sorted = call_builtin(s, "sorted", vec![recv.clone()], a.kw.clone())?;
                if let Val::List(n) = sorted {
                    *l.borrow_mut() = n.borrow().clone();
                }
                Ok(Val::None)
            }
            _ => Err(Exc::new(
                "AttributeError",
                format!("'list' object has no attribute '{name}'"),
            )),
        },
        Val::Tuple(t) => match name {
            "index" => {
                let x = a.req(0, "value")?;
                t.iter()
                    .position(|v| equal(v, &x))
                    .map(|i| Val::Int(i as i64))
                    .ok_or_else(|| Exc::value_error("tuple.index(x): x not in tuple"))
            }
            "count" => {
                let x = a.req(0, "value")?;
                Ok(Val::Int(t.iter().filter(|v| equal(v, &x)).count() as i64))
            }
            _ => Err(Exc::new(
                "AttributeError",
                format!("'tuple' object has no attribute '{name}'"),
            )),
        },
        Val::Dict(d) => match name {
            "keys" => Ok(Val::list(
                d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            )),
            "values" => Ok(Val::list(
                d.borrow().iter().map(|(_, v)| v.clone()).collect(),
            )),
            "items" => Ok(Val::list(
                d.borrow()
                    .iter()
                    .map(|(k, v)| Val::tuple(vec![k.clone(), v.clone()]))
                    .collect(),
            )),
            "get" => {
                let k = a.req(0, "key")?;
                Ok(d.borrow()
                    .iter()
                    .find(|(kk, _)| equal(kk, &k))
                    .map(|(_, v)| v.clone())
                    .unwrap_or(a.get(1, "default").unwrap_or(Val::None)))
            }
            "update" => {
                if let Some(Val::Dict(o)) = a.pos.first() {
                    for (k, v) in o.borrow().iter() {
                        crate::ops::set_item(s, recv, k, v.clone())?;
                    }
                }
                for (k, v) in &a.kw {
                    crate::ops::set_item(s, recv, &Val::str(k), v.clone())?;
                }
                Ok(Val::None)
            }
            "pop" => {
                let k = a.req(0, "key")?;
                let mut dd = d.borrow_mut();
                match dd.iter().position(|(kk, _)| equal(kk, &k)) {
                    Some(i) => Ok(dd.remove(i).1),
                    None => a
                        .get(1, "default")
                        .ok_or_else(|| Exc::new("KeyError", k.repr())),
                }
            }
            "copy" => Ok(Val::Dict(Rc::new(RefCell::new(d.borrow().clone())))),
            _ => Err(Exc::new(
                "AttributeError",
                format!("'dict' object has no attribute '{name}'"),
            )),
        },
        other => Err(Exc::new(
            "AttributeError",
            format!("'{}' object has no attribute '{name}'", other.type_name()),
        )),
    }
}
