//! How deeply Python text nests, estimated in one pass without recursion,
//! before any recursive pass sees it. ruff's parser, its AST's drop, the
//! VM's compiler and our kernel front end recurse once per level of an
//! expression; a stack overflow aborts the process instead of raising, so
//! text that would nest too deeply is refused first (a `RecursionError`
//! naming where, as CPython refuses it "during compilation").
//!
//! Levels counted: every open bracket; a call or subscript (a bracket right
//! after an operand) and an attribute (`.`) each add one to the chain they
//! extend (`f()()()`, `a.b.c` parse as left-deep trees), as does every
//! operator and operator keyword (`not`, `and`, `if`/`else`, `lambda`, ...)
//! of a chain at one bracket level; commas, semicolons and colons start new
//! chains (but the colon closing a `lambda`'s parameters does not: a body
//! of `lambda: lambda: ...` nests). An f-string's brackets count too, and a
//! line's indentation (a block nests in its parent).

/// How deeply an expression may nest. At about 1.6 KB of stack a level
/// (the VM's compiler on `1+1+...`, measured on this machine), the limit
/// stays well inside a main thread's 8 MB.
pub const MAX_NESTING: usize = 3000;

/// Keywords that open or join a level of the expression they are in.
const LEVEL_WORDS: &[&str] = &[
    "not", "lambda", "if", "else", "await", "and", "or", "in", "is", "yield",
];

/// Keywords after which a bracket is not a call (`return (x)`); names,
/// `True`, `None` and soft keywords are operands.
const KEYWORDS: &[&str] = &[
    "as", "assert", "async", "break", "class", "continue", "def", "del", "elif", "except",
    "finally", "for", "from", "global", "import", "nonlocal", "pass", "raise", "return", "try",
    "while", "with",
];

/// One bracket level: the levels its current chain adds, and how many
/// `lambda`s in it still wait for their colon.
#[derive(Default)]
struct Level {
    chain: usize,
    lambdas: usize,
}

struct Scan {
    levels: Vec<Level>,
    total: usize,
    indent: usize,
}

impl Scan {
    fn top(&mut self) -> &mut Level {
        if self.levels.is_empty() {
            self.levels.push(Level::default());
        }
        let last = self.levels.len() - 1;
        &mut self.levels[last]
    }
    fn link(&mut self) {
        self.top().chain += 1;
        self.total += 1;
    }
    fn end_chain(&mut self) {
        let top = self.top();
        let n = std::mem::take(&mut top.chain);
        self.total -= n;
    }
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Where `text` first nests deeper than `MAX_NESTING` (its byte offset)
/// and the depth estimated there; `None` when it never does.
pub fn too_deep(text: &str) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut s = Scan {
        levels: vec![Level::default()],
        total: 0,
        indent: 0,
    };
    // The last token ended an operand: a bracket after it is a trailer.
    let mut operand = false;
    let mut line_start = true;
    let mut i = 0;
    while i < b.len() {
        if s.total > MAX_NESTING {
            return Some((i.min(b.len() - 1), s.total));
        }
        let c = b[i];
        if line_start && s.levels.len() == 1 {
            line_start = false;
            let n = b[i..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            s.indent = n;
            s.total += n;
            i += n;
            continue;
        }
        match c {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => {
                i += 3;
                continue;
            }
            b'\n' => {
                if s.levels.len() == 1 {
                    s.end_chain();
                    s.top().lambdas = 0;
                    s.total -= s.indent;
                    s.indent = 0;
                    line_start = true;
                }
                operand = false;
            }
            b'\'' | b'"' => {
                match string_end(b, i, false, s.total) {
                    Ok(end) => i = end,
                    Err(deep) => return Some(deep),
                }
                operand = true;
                continue;
            }
            b'0'..=b'9' => {
                i = number_end(b, i);
                operand = true;
                continue;
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number_end(b, i);
                operand = true;
                continue;
            }
            c if is_word_byte(c) => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                let word = &text[start..i];
                let quote = matches!(b.get(i), Some(b'\'' | b'"'));
                let prefix = word.len() <= 3 && word.bytes().all(|c| b"rRbBfFuUtT".contains(&c));
                if quote && prefix {
                    let fmt = word.bytes().any(|c| b"fFtT".contains(&c));
                    match string_end(b, i, fmt, s.total) {
                        Ok(end) => i = end,
                        Err(deep) => return Some(deep),
                    }
                    operand = true;
                    continue;
                }
                if LEVEL_WORDS.contains(&word) {
                    s.link();
                    if word == "lambda" {
                        s.top().lambdas += 1;
                    }
                    operand = false;
                } else {
                    operand = !KEYWORDS.contains(&word);
                }
                continue;
            }
            b'(' | b'[' | b'{' => {
                if operand {
                    s.link();
                }
                s.levels.push(Level::default());
                s.total += 1;
                operand = false;
            }
            b')' | b']' | b'}' if s.levels.len() > 1 => {
                let n = s.levels.pop().map_or(0, |l| l.chain);
                s.total -= n + 1;
                operand = true;
            }
            b':' if s.top().lambdas > 0 => {
                s.top().lambdas -= 1;
                operand = false;
            }
            b',' | b';' | b':' => {
                s.end_chain();
                operand = false;
            }
            b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<'
            | b'>' | b'!' => {
                s.link();
                operand = false;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => {}
            _ => operand = false,
        }
        i += 1;
    }
    (s.total > MAX_NESTING).then(|| (b.len().saturating_sub(1), s.total))
}

/// The end of the number starting at `i` (digits, letters, `_`, `.`).
fn number_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (is_word_byte(b[i]) || b[i] == b'.') {
        i += 1;
    }
    i
}

/// The end of the string whose quote is at `i`, or `Err` with where and
/// how deep an f-string (whose brackets count as levels, on top of the
/// `total` outside it) nests past `MAX_NESTING`.
fn string_end(b: &[u8], mut i: usize, fmt: bool, total: usize) -> Result<usize, (usize, usize)> {
    let c = b[i];
    let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
    let q = if triple { 3 } else { 1 };
    i += q;
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            x if x == c && (!triple || (b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c))) => {
                return Ok(i + q);
            }
            b'\n' if !triple => return Ok(i),
            b'{' | b'(' | b'[' if fmt => {
                depth += 1;
                if total + depth > MAX_NESTING {
                    return Err((i, total + depth));
                }
            }
            b'}' | b')' | b']' if fmt => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_chains_of_every_kind_are_found() {
        let n = 20_000;
        let cases = [
            format!("x = {}1{}", "(".repeat(n), ")".repeat(n)),
            format!("x = {}1", "1+".repeat(n)),
            format!("x = {}1", "-".repeat(n)),
            format!("x = {}1", "not ".repeat(n)),
            format!("x = f{}", "()".repeat(n)),
            format!("x = a{}", ".a".repeat(n)),
            format!("x = a{}", "[0:1]".repeat(n)),
            format!("x = {}2", "1 if 1 else ".repeat(n)),
            format!("f = {}1", "lambda: ".repeat(n)),
            format!("f = {}1", "lambda x=(1): ".repeat(n)),
            format!("s = f'{}'", "{(".repeat(n)),
            format!("if 1:\n{}pass", " ".repeat(n)),
        ];
        for (k, text) in cases.iter().enumerate() {
            let found = too_deep(text);
            assert!(found.is_some(), "case {k} not found");
            let (at, depth) = found.unwrap_or_default();
            assert!(
                at < text.len() && depth > MAX_NESTING,
                "case {k}: {at} {depth}"
            );
        }
        // Just under the limit passes.
        let under = MAX_NESTING - 10;
        assert_eq!(too_deep(&format!("x = {}1", "1+".repeat(under))), None);
        assert_eq!(too_deep(&"(".repeat(under)), None);
    }

    #[test]
    fn long_flat_text_is_not_deep() {
        let n = 200_000;
        let numbers = vec!["1"; n].join(", ");
        let calls = vec!["f(1).g[2]"; n].join(", ");
        let cases = [
            format!("x = [{numbers}]"),
            format!("x = {{{}}}", vec!["'k': (1 + 2)"; n].join(", ")),
            format!("x = [{calls}]"),
            format!("s = '{}'", "(".repeat(n)),
            format!("s = '''{}'''", "[\n".repeat(n)),
            format!("# {}\nx = 1", "(".repeat(n)),
            format!("s = f'{}'", "{x} ".repeat(n)),
            format!(
                "x = 1.5e-3 + 0x1f + 1_000 + .5\n{}",
                "y = x + 1\n".repeat(n)
            ),
            "for i in range(3):\n    if i:\n        print(i) if i else None\n".repeat(n),
        ];
        for (k, text) in cases.iter().enumerate() {
            assert_eq!(too_deep(text), None, "case {k}");
        }
    }

    #[test]
    fn the_tutorials_are_far_from_the_limit() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tutorials");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("tutorials folder") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "py") {
                let text = std::fs::read_to_string(&path).expect("readable");
                assert_eq!(too_deep(&text), None, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 7, "{seen} tutorials read");
    }
}
