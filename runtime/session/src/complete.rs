//! Completion, shared by the REPL and the Jupyter kernel: names in the
//! namespace and builtins, attributes of values and modules (`x.sha` →
//! `shape`, `tl.ara` → `arange`), magics (`%ti` → `%time`, `%timeit`,
//! `%timing`) and module names after `import`.
//!
//! Completion never runs code: a dotted prefix is resolved by looking names
//! up in the namespace and attributes up in modules and objects, nothing
//! else.

use crate::value::Val;
use crate::Session;

/// Candidates replacing `text[start..cursor]` (byte offsets).
#[derive(Debug, Default, PartialEq)]
pub struct Completion {
    pub start: usize,
    pub matches: Vec<String>,
}

const KEYWORDS: &[&str] = &[
    "and", "as", "assert", "break", "continue", "def", "del", "elif", "else", "except", "False",
    "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "None", "nonlocal",
    "not", "or", "pass", "raise", "return", "True", "try", "while", "with", "yield",
];

const IMPORTABLE: &[&str] = &[
    "torch",
    "triton",
    "triton.language",
    "triton.testing",
    "triton.runtime",
    "math",
    "time",
    "os",
    "sys",
    "tilebook",
];

/// Attributes of tensors (properties and methods).
fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl Session {
    /// Completions at byte offset `cursor` of `text`.
    pub fn complete(&mut self, text: &str, cursor: usize) -> Completion {
        let cursor = cursor.min(text.len());
        let before = &text[..cursor];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = &before[line_start..];
        // Magics: `%name` at the start of a line.
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix('%') {
            if name.chars().all(|c| ident_char(c) || c == '%') {
                let start = cursor - trimmed.len();
                let bare = name.trim_start_matches('%');
                let cell = name.starts_with('%');
                let mut matches: Vec<String> = crate::magics::names()
                    .filter(|m| m.starts_with(bare))
                    .filter(|m| !cell || matches!(*m, "time" | "timeit"))
                    .map(|m| format!("{}{m}", if cell { "%%" } else { "%" }))
                    .collect();
                matches.sort();
                return Completion { start, matches };
            }
        }
        // The dotted name ending at the cursor.
        let word_start = line
            .char_indices()
            .rev()
            .take_while(|(_, c)| ident_char(*c) || *c == '.')
            .last()
            .map_or(line.len(), |(i, _)| i);
        let word = &line[word_start..];
        let abs_start = line_start + word_start;
        if trimmed.starts_with("import ") || trimmed.starts_with("from ") {
            let mut matches: Vec<String> = IMPORTABLE
                .iter()
                .filter(|m| m.starts_with(word))
                .map(|m| m.to_string())
                .collect();
            matches.sort();
            return Completion {
                start: abs_start,
                matches,
            };
        }
        match word.rsplit_once('.') {
            Some((base, partial)) => {
                let Some(v) = self.resolve(base) else {
                    return Completion::default();
                };
                let mut matches: Vec<String> = self
                    .attributes_of(&v)
                    .into_iter()
                    .filter(|a| a.starts_with(partial))
                    .collect();
                matches.sort();
                matches.dedup();
                Completion {
                    start: cursor - partial.len(),
                    matches,
                }
            }
            None => {
                let mut matches: Vec<String> = self
                    .global_values()
                    .into_iter()
                    .map(|(k, _)| k)
                    .chain(self.host_builtin_names())
                    .chain(KEYWORDS.iter().map(|k| k.to_string()))
                    .filter(|n| n.starts_with(word) && !word.is_empty())
                    .collect();
                matches.sort();
                matches.dedup();
                Completion {
                    start: abs_start,
                    matches,
                }
            }
        }
    }

    /// A dotted name's value, by lookups only.
    fn resolve(&mut self, dotted: &str) -> Option<Val> {
        let mut parts = dotted.split('.');
        let first = parts.next()?;
        let mut v = self.host_global(first)?;
        for p in parts {
            v = match &v {
                Val::Module(m) => tilebook_host::modules::module_member(self, m, p)?,
                Val::Object(o) => crate::value::attr_of(o, p)?,
                Val::Py(_) => self.host_attr(&v, p)?,
                _ => return None,
            };
        }
        Some(v)
    }
}
