//! Python's format-spec mini-language (`f"{x:>8.3f}"`) and `%` formatting.

use crate::value::R;
use crate::value::{Exc, Val};

struct Spec {
    fill: char,
    align: Option<char>,
    sign: char,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

fn parse_spec(s: &str) -> R<Spec> {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut spec = Spec {
        fill: ' ',
        align: None,
        sign: '-',
        zero: false,
        width: 0,
        grouping: None,
        precision: None,
        ty: None,
    };
    if c.len() >= 2 && "<>^=".contains(c[1]) {
        spec.fill = c[0];
        spec.align = Some(c[1]);
        i = 2;
    } else if !c.is_empty() && "<>^=".contains(c[0]) {
        spec.align = Some(c[0]);
        i = 1;
    }
    if i < c.len() && "+- ".contains(c[i]) {
        spec.sign = c[i];
        i += 1;
    }
    if i < c.len() && c[i] == '#' {
        i += 1;
    }
    if i < c.len() && c[i] == '0' {
        spec.zero = true;
        i += 1;
    }
    let start = i;
    while i < c.len() && c[i].is_ascii_digit() {
        i += 1;
    }
    if i > start {
        spec.width = c[start..i].iter().collect::<String>().parse().unwrap_or(0);
    }
    if i < c.len() && (c[i] == ',' || c[i] == '_') {
        spec.grouping = Some(c[i]);
        i += 1;
    }
    if i < c.len() && c[i] == '.' {
        i += 1;
        let start = i;
        while i < c.len() && c[i].is_ascii_digit() {
            i += 1;
        }
        spec.precision = Some(
            c[start..i]
                .iter()
                .collect::<String>()
                .parse()
                .map_err(|_| Exc::value_error("Format specifier missing precision"))?,
        );
    }
    if i < c.len() {
        spec.ty = Some(c[i]);
        i += 1;
    }
    if i != c.len() {
        return Err(Exc::value_error(format!("Invalid format specifier '{s}'")));
    }
    Ok(spec)
}

fn group(digits: &str, sep: char) -> String {
    let (int, frac) = match digits.find('.') {
        Some(p) => (&digits[..p], &digits[p..]),
        None => (digits, ""),
    };
    let mut out = String::new();
    for (k, ch) in int.chars().enumerate() {
        if k > 0 && (int.len() - k) % 3 == 0 {
            out.push(sep);
        }
        out.push(ch);
    }
    out + frac
}

fn sci(x: f64, prec: usize, upper: bool) -> String {
    let s = format!("{x:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let r = format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    if upper {
        r.to_uppercase()
    } else {
        r
    }
}

/// Python's `format(v, spec)`.
pub fn format_value(v: &Val, spec: &str) -> R<String> {
    if spec.is_empty() {
        return Ok(match v {
            Val::Tensor(t) if t.numel() == 1 && t.shape.is_empty() => t.item_string(),
            other => other.to_str(),
        });
    }
    let s = parse_spec(spec)?;
    let number = match v {
        Val::Int(i) => Some((*i as f64, true)),
        Val::Bool(b) => Some((*b as i64 as f64, true)),
        Val::Float(f) => Some((*f, false)),
        Val::Tensor(t) if t.numel() == 1 => {
            let x = t.get_at(t.offset);
            Some((x.f(), t.dtype.is_int()))
        }
        _ => None,
    };
    let body = match (number, s.ty) {
        (Some((x, is_int)), ty) => {
            let neg = x < 0.0 || (x == 0.0 && x.is_sign_negative() && !is_int);
            let a = x.abs();
            let mut digits = match ty {
                Some('d') if is_int => format!("{}", a as i64),
                Some('d') => {
                    return Err(Exc::value_error(
                        "Unknown format code 'd' for object of type 'float'",
                    ))
                }
                Some('f') | Some('F') => format!("{:.*}", s.precision.unwrap_or(6), a),
                Some('e') | Some('E') => sci(a, s.precision.unwrap_or(6), ty == Some('E')),
                Some('g') | Some('G') | None if !is_int || s.precision.is_some() => {
                    let p = s
                        .precision
                        .unwrap_or(if ty.is_none() { 12 } else { 6 })
                        .max(1);
                    if a == 0.0 {
                        "0".into()
                    } else {
                        let exp = a.log10().floor() as i32;
                        if exp < -4 || exp >= p as i32 {
                            let m = sci(a, p - 1, false);
                            let (mant, e) = m.split_once('e').unwrap_or((&m, ""));
                            let mant = if mant.contains('.') {
                                mant.trim_end_matches('0').trim_end_matches('.')
                            } else {
                                mant
                            };
                            format!("{mant}e{e}")
                        } else {
                            let dec = (p as i32 - 1 - exp).max(0) as usize;
                            let f = format!("{a:.dec$}");
                            if f.contains('.') {
                                f.trim_end_matches('0').trim_end_matches('.').to_string()
                            } else {
                                f
                            }
                        }
                    }
                }
                Some('%') => format!("{:.*}%", s.precision.unwrap_or(6), a * 100.0),
                Some('x') => format!("{:x}", a as i64),
                Some('X') => format!("{:X}", a as i64),
                Some('b') => format!("{:b}", a as i64),
                Some('s') => return Err(Exc::value_error("Unknown format code 's' for a number")),
                None => format!("{}", a as i64),
                Some(c) => return Err(Exc::value_error(format!("Unknown format code '{c}'"))),
            };
            if !a.is_finite() {
                digits = if a.is_nan() {
                    "nan".into()
                } else {
                    "inf".into()
                };
            }
            if let Some(g) = s.grouping {
                digits = group(&digits, g);
            }
            let sign = if neg {
                "-"
            } else {
                match s.sign {
                    '+' => "+",
                    ' ' => " ",
                    _ => "",
                }
            };
            if s.zero && s.align.is_none() && digits.len() + sign.len() < s.width {
                let pad = s.width - digits.len() - sign.len();
                format!("{sign}{}{digits}", "0".repeat(pad))
            } else {
                format!("{sign}{digits}")
            }
        }
        (None, Some('s') | None) => {
            let t = v.to_str();
            match s.precision {
                Some(p) => t.chars().take(p).collect(),
                None => t,
            }
        }
        (None, Some(c)) => {
            return Err(Exc::value_error(format!(
                "Unknown format code '{c}' for object of type '{}'",
                v.type_name()
            )))
        }
    };
    let len = body.chars().count();
    if len >= s.width {
        return Ok(body);
    }
    let pad = s.width - len;
    let fill = |n: usize| s.fill.to_string().repeat(n);
    let default_align = if number.is_some() { '>' } else { '<' };
    Ok(match s.align.unwrap_or(default_align) {
        '<' => format!("{body}{}", fill(pad)),
        '^' => format!("{}{body}{}", fill(pad / 2), fill(pad - pad / 2)),
        _ => format!("{}{body}", fill(pad)),
    })
}

/// `"fmt" % values` for `%s`, `%d`, `%f`, `%.Nf`, `%r`, `%%`.
pub fn percent_format(fmt: &str, v: &Val) -> R<Val> {
    let args: Vec<Val> = match v {
        Val::Tuple(t) => t.to_vec(),
        other => vec![other.clone()],
    };
    let mut out = String::new();
    let mut it = args.iter();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&n) = chars.peek() {
            chars.next();
            if n.is_ascii_alphabetic() || n == '%' {
                spec.push(n);
                break;
            }
            spec.push(n);
        }
        if spec == "%" {
            out.push('%');
            continue;
        }
        let ty = spec.pop().unwrap_or('s');
        let arg = it
            .next()
            .ok_or_else(|| Exc::type_error("not enough arguments for format string"))?;
        let s = match ty {
            'r' => arg.repr(),
            's' => format_value(arg, &spec)?,
            'i' => format_value(arg, &format!("{spec}d"))?,
            other => format_value(arg, &format!("{spec}{other}"))?,
        };
        out.push_str(&s);
    }
    Ok(Val::str(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_format_specs() {
        assert_eq!(format_value(&Val::Float(1.23456), ".2f").unwrap(), "1.23");
        assert_eq!(
            format_value(&Val::Float(1.23456), "8.3f").unwrap(),
            "   1.235"
        );
        assert_eq!(format_value(&Val::Int(42), "<5").unwrap(), "42   ");
        assert_eq!(format_value(&Val::Int(1234567), ",").unwrap(), "1,234,567");
        assert_eq!(
            format_value(&Val::Float(0.000123), ".2e").unwrap(),
            "1.23e-04"
        );
        assert_eq!(format_value(&Val::str("ab"), ">4").unwrap(), "  ab");
        assert_eq!(format_value(&Val::Int(7), "03d").unwrap(), "007");
        assert_eq!(format_value(&Val::Float(0.5), ".1%").unwrap(), "50.0%");
    }
}
