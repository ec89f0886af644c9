//! The one module that talks to ruff's Python parser: parse a cell, tell
//! complete from incomplete input, map parser errors to diagnostics.

use crate::diag::Diagnostic;
use crate::source::{SourceFile, Span};
use ruff_python_ast::{Mod, Stmt};
use ruff_python_parser::{Mode, ParseOptions};
use std::rc::Rc;

/// Parse a cell (IPython mode, so `%magic` lines parse as escape commands).
pub fn parse_cell(file: &Rc<SourceFile>) -> Result<Vec<Stmt>, Diagnostic> {
    if let Some((at, depth)) = too_deep(&file.text) {
        let span = Span {
            file: file.clone(),
            start: at,
            end: (at + 1).min(file.text.len()),
        };
        return Err(Diagnostic::new(
            "RecursionError",
            format!(
                "this expression nests about {depth} levels deep; the limit is {MAX_NESTING} (the parser, the compiler and the VM recurse once per level)"
            ),
            Some(span),
        ));
    }
    let Some(parsed) = parse_ipython(&file.text) else {
        return Err(Diagnostic::new(
            "SyntaxError",
            "the parser could not read this cell (check its brackets, strings and `%`/`!`/`?` escapes)",
            Some(Span {
                file: file.clone(),
                start: 0,
                end: file.text.len().min(1),
            }),
        ));
    };
    if let Some(err) = parsed.errors().first() {
        let span = Span {
            file: file.clone(),
            start: err.location.start().to_usize(),
            end: err.location.end().to_usize(),
        };
        return Err(Diagnostic::new(
            "SyntaxError",
            err.error.to_string(),
            Some(span),
        ));
    }
    let body = match parsed.into_syntax() {
        Mod::Module(m) => m.body,
        Mod::Expression(_) => vec![],
    };
    if let Some((range, digits)) = huge_power(&body) {
        return Err(Diagnostic::new(
            "MemoryError",
            if digits >= 1_000_000_000_000_000_000 {
                "this power of integer constants has more than 10^18 digits; tilebook refuses integers that large".to_string()
            } else {
                format!("this power of integer constants has about {digits} digits; tilebook refuses integers that large")
            },
            Some(Span::new(file, range)),
        ));
    }
    Ok(body)
}

/// A power of integer constants (`10**2**63`) whose value would need more
/// than ten million decimal digits: the VM's big-integer library would try
/// to build it, and overflows its size arithmetic (a panic) long before it
/// could run out of memory.
fn huge_power(body: &[Stmt]) -> Option<(ruff_text_size::TextRange, u64)> {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    use ruff_python_ast::{Expr, Number, Operator};
    const LIMIT: f64 = 1e7;
    /// log10 of the constant's magnitude, when it is an integer constant
    /// expression of literals, unary minus and powers.
    fn log10(e: &Expr) -> Option<f64> {
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => match i.as_u64() {
                    Some(v) => Some((v.max(1) as f64).log10()),
                    // A literal beyond u64: its digit count.
                    None => Some(i.to_string().len() as f64),
                },
                _ => None,
            },
            Expr::UnaryOp(u) => log10(&u.operand),
            Expr::BinOp(b) if b.op == Operator::Pow => {
                let base = log10(&b.left)?;
                let exp = log10(&b.right)?;
                // base ** exponent: log10 = exponent * log10(base).
                Some(if exp > 300.0 {
                    f64::INFINITY
                } else {
                    10f64.powf(exp) * base
                })
            }
            _ => None,
        }
    }
    struct Find(Option<(ruff_text_size::TextRange, u64)>);
    impl<'a> Visitor<'a> for Find {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.0.is_some() {
                return;
            }
            if let Expr::BinOp(b) = e {
                if b.op == Operator::Pow {
                    if let Some(d) = log10(e).filter(|d| *d > LIMIT) {
                        self.0 = Some((b.range, d.min(1e18) as u64));
                        return;
                    }
                }
            }
            walk_expr(self, e);
        }
    }
    let mut f = Find(None);
    for st in body {
        f.visit_stmt(st);
    }
    f.0
}

pub use crate::nesting::{too_deep, MAX_NESTING};

/// Whether a cell is complete, still open (more lines expected), or invalid.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Completeness {
    Complete,
    Incomplete,
    Invalid,
}

/// ruff's parser in IPython mode, or `None` where it panics: its error
/// recovery reaches an `unreachable!` on some malformed cells (found by
/// `tests/parser_props.rs`), which must be a syntax error, not a crash.
fn parse_ipython(text: &str) -> Option<ruff_python_parser::Parsed<Mod>> {
    std::panic::catch_unwind(|| {
        ruff_python_parser::parse_unchecked(text, ParseOptions::from(Mode::Ipython))
    })
    .ok()
}

/// Decide if `text` is a whole cell. Shared by the REPL and the Jupyter kernel.
pub fn is_complete(text: &str) -> Completeness {
    if text.trim().is_empty() {
        return Completeness::Complete;
    }
    if too_deep(text).is_some() {
        // Parsing it could overflow the stack; running it reports why.
        return Completeness::Invalid;
    }
    let Some(parsed) = parse_ipython(text) else {
        return Completeness::Invalid;
    };
    let Some(err) = parsed.errors().first() else {
        // A block header followed by lines is complete only after a blank line.
        let last = text.lines().last().unwrap_or("");
        let opened_block = text.lines().any(|l| l.trim_end().ends_with(':'));
        if opened_block
            && !text.ends_with("\n\n")
            && !last.trim().is_empty()
            && last.starts_with([' ', '\t'])
        {
            return Completeness::Incomplete;
        }
        return Completeness::Complete;
    };
    let at_end = err.location.end().to_usize() >= text.trim_end().len();
    let msg = err.error.to_string();
    let unclosed = msg.contains("unexpected EOF")
        || msg.contains("Expected an indented block")
        || msg.contains("expected an indented block")
        || msg.contains("Unexpected end")
        || msg.contains("unexpected end")
        || msg.contains("missing closing");
    let trailing_colon = text.trim_end().ends_with(':');
    // A decorator waits for the `def` it decorates.
    let trailing_decorator = text
        .trim_end()
        .lines()
        .last()
        .is_some_and(|l| l.trim_start().starts_with('@'));
    let open_brackets = bracket_depth(text) > 0;
    if at_end
        && (unclosed || trailing_colon || open_brackets || trailing_decorator)
        && !text.ends_with("\n\n")
    {
        Completeness::Incomplete
    } else {
        Completeness::Invalid
    }
}

fn bracket_depth(text: &str) -> i32 {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, '#') => {}
            _ => {}
        }
    }
    depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completeness_matches_ipython_on_the_usual_cases() {
        use Completeness::*;
        assert_eq!(is_complete("x = 1"), Complete);
        assert_eq!(is_complete("def f(x):"), Incomplete);
        assert_eq!(is_complete("x = (1 +"), Incomplete);
        assert_eq!(is_complete("x = [1,\n 2"), Incomplete);
        assert_eq!(is_complete("for i in range(3):\n    print(i)"), Incomplete);
        assert_eq!(
            is_complete("for i in range(3):\n    print(i)\n\n"),
            Complete
        );
        assert_eq!(is_complete("x = = 1"), Invalid);
        assert_eq!(is_complete("x = 1 +"), Invalid);
        assert_eq!(is_complete("%timeit f(x)"), Complete);
        assert_eq!(is_complete(""), Complete);
        assert_eq!(is_complete("@triton.jit\n"), Incomplete);
        assert_eq!(is_complete("@triton.jit\ndef k(x):\n    pass"), Incomplete);
    }

    #[test]
    fn cells_parse_with_magics_and_report_syntax_errors_with_a_line() {
        let ok = SourceFile::new("cell", "x = 1\n%time y = 2\n");
        assert_eq!(parse_cell(&ok).unwrap().len(), 2);
        let bad = SourceFile::new("cell", "x = 1\ny = (2,\n");
        let d = parse_cell(&bad).unwrap_err();
        assert_eq!(d.kind, "SyntaxError");
        assert!(d.line().is_some());
    }
}

/// The indentation of the line after `last` in an open cell: four more
/// after a `:` line, four fewer after `return`, `pass`, `break`, `continue`
/// or `raise`. Shared by the REPL's Enter key and Jupyter's is_complete.
pub fn next_indent(last: &str) -> String {
    let indent = last.len() - last.trim_start().len();
    let code = last.split('#').next().unwrap_or("").trim_end();
    let word = code.split_whitespace().next().unwrap_or("");
    let n = if code.ends_with(':') {
        indent + 4
    } else if matches!(word, "return" | "pass" | "break" | "continue" | "raise") {
        indent.saturating_sub(4)
    } else {
        indent
    };
    " ".repeat(n)
}

/// What a piece of a cell is, for syntax highlighting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TokenClass {
    Keyword,
    String,
    Number,
    Comment,
    /// A `tl.` member, `triton`/`torch`/`tl` themselves, or a magic.
    Builtin,
}

/// The highlighted pieces of `text` as byte ranges, in order (other text is
/// left plain). Works on incomplete and invalid input.
pub fn highlight_classes(text: &str) -> Vec<(std::ops::Range<usize>, TokenClass)> {
    use ruff_python_ast::token::TokenKind as K;
    use ruff_text_size::Ranged;
    let Some(parsed) = parse_ipython(text) else {
        return vec![];
    };
    let tokens: Vec<(K, std::ops::Range<usize>)> = parsed
        .tokens()
        .iter()
        .map(|t| {
            (
                t.kind(),
                t.range().start().to_usize()..t.range().end().to_usize(),
            )
        })
        .collect();
    let mut out = vec![];
    for (i, (kind, r)) in tokens.iter().enumerate() {
        let class = match kind {
            k if k.is_keyword() => Some(TokenClass::Keyword),
            K::String | K::FStringStart | K::FStringMiddle | K::FStringEnd => {
                Some(TokenClass::String)
            }
            K::Int | K::Float | K::Complex => Some(TokenClass::Number),
            K::Comment => Some(TokenClass::Comment),
            K::IpyEscapeCommand => Some(TokenClass::Builtin),
            K::Name => {
                let name = &text[r.clone()];
                let after_tl =
                    i >= 2 && tokens[i - 1].0 == K::Dot && &text[tokens[i - 2].1.clone()] == "tl";
                let builtin = matches!(name, "tl" | "triton" | "torch")
                    || (after_tl && crate::kernel::TL_FUNCTIONS.contains(&name));
                builtin.then_some(TokenClass::Builtin)
            }
            _ => None,
        };
        if let Some(c) = class {
            if r.end <= text.len() && r.start < r.end {
                out.push((r.clone(), c));
            }
        }
    }
    out
}
