//! The tile IR text reader: the inverse of `print`.
//!
//! `print_kernel(&parse_kernel(text)?) == text` for any text the printer wrote.
//! Errors name the line and column of the text.

use crate::ir::*;
use crate::print::{ATOMIC_OPS, BINOPS, COMBINES, PREDS, SCOPES, SEMS, UNOPS};
use crate::types::Type;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

pub fn parse_kernel(text: &str) -> Result<Kernel, ParseError> {
    let mut p = Parser {
        src: text,
        pos: 0,
        names: HashMap::new(),
        kernel: Kernel::new(""),
    };
    p.kernel()?;
    p.ws();
    if p.pos != p.src.len() {
        return p.err("unexpected text after the kernel");
    }
    Ok(p.kernel)
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    names: HashMap<String, Value>,
    kernel: Kernel,
}

type PResult<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn err<T>(&self, message: impl Into<String>) -> PResult<T> {
        let mut at = self.pos.min(self.src.len());
        while !self.src.is_char_boundary(at) {
            at -= 1;
        }
        let before = &self.src[..at];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        Err(ParseError {
            line,
            col,
            message: message.into(),
        })
    }

    /// What is left to read (nothing once a malformed input has moved the
    /// position past its end or into a character).
    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or("")
    }

    /// Skip spaces, newlines and `//` comments.
    fn ws(&mut self) {
        loop {
            let r = self.rest();
            let trimmed = r.trim_start();
            self.pos += r.len() - trimmed.len();
            if self.rest().starts_with("//") {
                let end = self.rest().find('\n').unwrap_or(self.rest().len());
                self.pos += end;
            } else {
                break;
            }
        }
    }

    /// Skip spaces within a line only.
    fn sp(&mut self) {
        let r = self.rest();
        let trimmed = r.trim_start_matches([' ', '\t']);
        self.pos += r.len() - trimmed.len();
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            self.err(format!("expected `{s}`"))
        }
    }

    fn word(&mut self) -> &str {
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(r.len());
        self.pos += n;
        self.src.get(self.pos - n..self.pos).unwrap_or("")
    }

    fn token_until(&mut self, stops: &[char]) -> &str {
        let r = self.rest();
        let n = r
            .find(|c: char| stops.contains(&c) || c.is_whitespace())
            .unwrap_or(r.len());
        self.pos += n;
        self.src.get(self.pos - n..self.pos).unwrap_or("")
    }

    fn ty(&mut self) -> PResult<Type> {
        let start = self.pos;
        let t = self.token_until(&[',', ')', '{', ':']).to_string();
        match Type::parse(&t) {
            Some(ty) => Ok(ty),
            None => {
                self.pos = start;
                self.err(format!("unknown type `{t}`"))
            }
        }
    }

    fn value_name(&mut self) -> PResult<String> {
        if !self.rest().starts_with('%') {
            return self.err("expected a value like `%3`");
        }
        self.pos += 1;
        let w = self.word().to_string();
        if w.is_empty() {
            return self.err("expected a value number after `%`");
        }
        Ok(w)
    }

    fn define(&mut self, name: String, ty: Type) -> PResult<Value> {
        if self.names.contains_key(&name) {
            return self.err(format!("value %{name} is defined twice"));
        }
        let v = self.kernel.new_value(ty);
        self.names.insert(name, v);
        Ok(v)
    }

    fn use_value(&mut self) -> PResult<Value> {
        let start = self.pos;
        let name = self.value_name()?;
        match self.names.get(&name) {
            Some(&v) => Ok(v),
            None => {
                self.pos = start;
                self.err(format!("value %{name} is used before it is defined"))
            }
        }
    }

    fn string(&mut self) -> PResult<String> {
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            let Some(c) = self.rest().chars().next() else {
                return self.err("unterminated string");
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let e = self.rest().chars().next().unwrap_or(' ');
                    self.pos += e.len_utf8();
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'u' => {
                            self.expect("{")?;
                            let hex = self.token_until(&['}']).to_string();
                            self.expect("}")?;
                            let code = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                            match code {
                                Some(ch) => out.push(ch),
                                None => return self.err("bad \\u escape"),
                            }
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn kernel(&mut self) -> PResult<()> {
        self.ws();
        self.expect("kernel")?;
        self.sp();
        self.expect("@")?;
        self.kernel.name = self.word().to_string();
        self.expect("(")?;
        self.ws();
        while !self.eat(")") {
            let name = self.value_name()?;
            self.sp();
            self.expect(":")?;
            self.sp();
            let ty = self.ty()?;
            self.sp();
            let mut attrs = ParamAttrs::default();
            if self.eat("{div=") {
                let n = self.word().to_string();
                attrs.divisibility = match n.parse() {
                    Ok(n) => n,
                    Err(_) => return self.err("bad divisibility"),
                };
                self.expect("}")?;
                self.sp();
            }
            if self.eat("{pos}") {
                attrs.positive = true;
                self.sp();
            }
            let pname = self.string()?;
            let v = self.define(name, ty.clone())?;
            self.kernel.params.push(Param {
                name: pname,
                value: v,
                attrs,
            });
            self.kernel.body.args.push(v);
            self.ws();
            if !self.eat(",") && !self.rest().starts_with(')') {
                return self.err("expected `,` or `)`");
            }
            self.ws();
        }
        self.sp();
        self.expect("{")?;
        let ops = self.ops()?;
        self.kernel.body.ops = ops;
        Ok(())
    }

    /// Ops up to (and consuming) the closing `}` of a region.
    fn ops(&mut self) -> PResult<Vec<Op>> {
        let mut ops = vec![];
        loop {
            self.ws();
            if self.eat("}") {
                return Ok(ops);
            }
            if self.rest().is_empty() {
                return self.err("expected `}`");
            }
            ops.push(self.op()?);
        }
    }

    fn op(&mut self) -> PResult<Op> {
        let mut result_names = vec![];
        if self.rest().starts_with('%') {
            loop {
                result_names.push(self.value_name()?);
                self.sp();
                if !self.eat(",") {
                    break;
                }
                self.sp();
            }
            self.expect("=")?;
            self.sp();
        }
        let head_pos = self.pos;
        let mut name = self.word().to_string();
        // Math library ops are named `lib.<function>`.
        if name == "lib" && self.eat(".") {
            name = format!("lib.{}", self.word());
        }
        let mut attrs = vec![];
        if self.eat("[") {
            loop {
                self.sp();
                if self.rest().starts_with('"') {
                    attrs.push(format!("\"{}", self.string()?));
                } else {
                    attrs.push(self.token_until(&[',', ']']).to_string());
                }
                self.sp();
                if self.eat("]") {
                    break;
                }
                self.expect(",")?;
            }
        }
        let kind = match op_kind(&name, &attrs) {
            Some(k) => k,
            None => {
                self.pos = head_pos;
                return self.err(format!("unknown op `{name}` with attributes {attrs:?}"));
            }
        };
        self.sp();
        let mut args = vec![];
        if self.rest().starts_with('%') {
            loop {
                args.push(self.use_value()?);
                self.sp();
                if !self.eat(",") {
                    break;
                }
                self.sp();
            }
        }
        let mut types = vec![];
        if self.eat(":") {
            loop {
                self.sp();
                types.push(self.ty()?);
                self.sp();
                if !self.eat(",") {
                    break;
                }
            }
        }
        if types.len() != result_names.len() {
            return self.err(format!(
                "{} results but {} result types",
                result_names.len(),
                types.len()
            ));
        }
        let mut loc = Loc::default();
        if self.eat("loc(") {
            let l = self.word().to_string();
            self.expect(":")?;
            let c = self.word().to_string();
            self.expect(")")?;
            match (l.parse(), c.parse()) {
                (Ok(line), Ok(col)) => loc = Loc { line, col },
                _ => return self.err("bad location"),
            }
            self.sp();
        }
        let mut regions = vec![];
        while self.eat("{") {
            self.ws();
            let mut region = Region::default();
            if self.eat("^(") {
                self.sp();
                while !self.eat(")") {
                    let n = self.value_name()?;
                    self.sp();
                    self.expect(":")?;
                    self.sp();
                    let t = self.ty()?;
                    region.args.push(self.define(n, t)?);
                    self.sp();
                    self.eat(",");
                    self.sp();
                }
                self.expect(":")?;
            }
            region.ops = self.ops()?;
            regions.push(region);
            self.sp();
        }
        // Results are defined after the regions: they are not visible inside them.
        let mut results = vec![];
        for (n, t) in result_names.into_iter().zip(types) {
            results.push(self.define(n, t)?);
        }
        Ok(Op {
            kind,
            args,
            results,
            regions,
            loc,
        })
    }
}

fn lookup<T: Copy>(table: &[(T, &'static str)], name: &str) -> Option<T> {
    table.iter().find(|(_, n)| *n == name).map(|(t, _)| *t)
}

fn op_kind(name: &str, attrs: &[String]) -> Option<OpKind> {
    let int = |i: usize| attrs.get(i).and_then(|s| s.parse::<i64>().ok());
    let ints = || {
        attrs
            .iter()
            .map(|s| s.parse::<i64>().ok())
            .collect::<Option<Vec<i64>>>()
    };
    let string = |i: usize| {
        attrs
            .get(i)
            .and_then(|s| s.strip_prefix('"'))
            .map(str::to_string)
    };
    let combine = |i: usize| {
        let a = attrs.get(i)?;
        COMBINES.iter().find(|(_, n)| n == a).map(|(c, _)| *c)
    };
    let n = attrs.len();
    Some(match name {
        "const" if n == 1 => {
            let a = &attrs[0];
            if let Ok(i) = a.parse::<i64>() {
                OpKind::Const(Const::Int(i))
            } else {
                OpKind::Const(Const::Float(a.parse::<f64>().ok()?))
            }
        }
        "program_id" if n == 1 => OpKind::ProgramId(int(0)? as u8),
        "num_programs" if n == 1 => OpKind::NumPrograms(int(0)? as u8),
        "arange" if n == 2 => OpKind::Arange(int(0)?, int(1)?),
        "splat" if n == 0 => OpKind::Splat,
        "broadcast" if n == 0 => OpKind::Broadcast,
        "expand_dims" if n == 1 => OpKind::ExpandDims(int(0)? as usize),
        "reshape" if n == 0 => OpKind::Reshape,
        "gather" if n == 1 => OpKind::Gather(int(0)? as usize),
        "trans" => OpKind::Trans(ints()?.into_iter().map(|i| i as usize).collect()),
        "cmp" if n == 1 => OpKind::Cmp(PREDS.iter().find(|(_, p)| *p == attrs[0])?.0),
        "select" if n == 0 => OpKind::Select,
        "fma" if n == 0 => OpKind::Fma,
        "cast" if n == 0 => OpKind::Cast,
        "bitcast" if n == 0 => OpKind::Bitcast,
        "addptr" if n == 0 => OpKind::AddPtr,
        "load" => {
            let has = |s: &str| attrs.iter().any(|a| a == s);
            let tma = attrs.iter().find_map(|a| a.strip_prefix("tma="));
            let guards = attrs.iter().find_map(|a| a.strip_prefix("guards="));
            if attrs.iter().any(|a| {
                !["mask", "other", "map", "map_t"].contains(&a.as_str())
                    && !a.starts_with("tma=")
                    && !a.starts_with("guards=")
            }) {
                return None;
            }
            OpKind::Load {
                mask: has("mask"),
                other: has("other"),
                tma: match tma {
                    Some(i) => Some(i.parse().ok()?),
                    None => None,
                },
                map: if has("map") {
                    Some(MapOrder::Rows)
                } else if has("map_t") {
                    Some(MapOrder::Transposed)
                } else {
                    None
                },
                guards: match guards {
                    Some(n) => n.parse().ok()?,
                    None => 0,
                },
            }
        }
        "atomic" if n == 3 || (n == 4 && attrs[3] == "mask") => OpKind::AtomicRmw {
            op: lookup(&ATOMIC_OPS, &attrs[0])?,
            sem: lookup(&SEMS, &attrs[1])?,
            scope: lookup(&SCOPES, &attrs[2])?,
            mask: n == 4,
        },
        "atomic_cas" if n == 2 => OpKind::AtomicCas {
            sem: lookup(&SEMS, &attrs[0])?,
            scope: lookup(&SCOPES, &attrs[1])?,
        },
        "store" => {
            let tma = attrs.iter().find_map(|a| a.strip_prefix("tma="));
            if attrs
                .iter()
                .any(|a| a != "mask" && a != "map" && !a.starts_with("tma="))
                || n > 3
            {
                return None;
            }
            OpKind::Store {
                mask: attrs.iter().any(|a| a == "mask"),
                tma: match tma {
                    Some(i) => Some(i.parse().ok()?),
                    None => None,
                },
                map: attrs.iter().any(|a| a == "map"),
            }
        }
        "reduce" if n == 2 => OpKind::Reduce {
            axis: int(0)? as usize,
            combine: combine(1)?,
        },
        "scan" if n == 2 || (n == 3 && attrs[2] == "reverse") => OpKind::Scan {
            axis: int(0)? as usize,
            combine: combine(1)?,
            reverse: n == 3,
        },
        "dot" if n == 0 => OpKind::Dot { tf32: false },
        "dot" if n == 1 && attrs[0] == "tf32" => OpKind::Dot { tf32: true },
        "for" if n == 0 => OpKind::For,
        "if" if n == 0 => OpKind::If,
        "while" if n == 0 => OpKind::While,
        "yield" if n == 0 => OpKind::Yield,
        "barrier" if n == 0 => OpKind::Barrier,
        "print" if n == 1 => OpKind::Print(string(0)?),
        "inline_asm" if n == 2 || (n == 3 && attrs[2] == "impure") => OpKind::InlineAsm {
            asm: string(0)?,
            constraints: string(1)?,
            pure: n == 2,
        },
        "assert" if n == 1 => OpKind::Assert(string(0)?),
        "multiple_of" => OpKind::MultipleOf(ints()?),
        "max_contiguous" => OpKind::MaxContiguous(ints()?),
        _ if n == 0 => {
            if let Some((u, _)) = UNOPS.iter().find(|(_, s)| *s == name) {
                OpKind::Unary(*u)
            } else if let Some((f, _, _)) = crate::libm::LIB_FNS.iter().find(|e| e.2 == name) {
                OpKind::Unary(UnOp::Lib(*f))
            } else if let Some((f, _, _)) = crate::libm::LIB_FNS2.iter().find(|e| e.2 == name) {
                OpKind::Binary(BinOp::Lib(*f))
            } else {
                OpKind::Binary(BINOPS.iter().find(|(_, s)| *s == name)?.0)
            }
        }
        _ => return None,
    })
}
