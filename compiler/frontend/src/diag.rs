//! Diagnostics as data: a kind (Python's exception names), a message, a
//! primary span, notes. Front ends render them with `render`, which prints
//! the line and a caret under the offending code.

use crate::source::Span;
use codespan_reporting::diagnostic::{Diagnostic as CsDiag, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Python's exception name for this class of error (`SyntaxError`,
    /// `NameError`, `TypeError`, `ValueError`, `CompilationError`, ...).
    pub kind: String,
    pub message: String,
    pub span: Option<Span>,
    /// Extra spans with labels (e.g. the call site of an inlined function).
    pub labels: Vec<(Span, String)>,
    pub notes: Vec<String>,
    pub severity: Severity,
}

impl Diagnostic {
    pub fn new(kind: &str, message: impl Into<String>, span: Option<Span>) -> Diagnostic {
        Diagnostic {
            kind: kind.into(),
            message: message.into(),
            span,
            labels: vec![],
            notes: vec![],
            severity: Severity::Error,
        }
    }
    pub fn error(kind: &str, message: impl Into<String>, span: &Span) -> Diagnostic {
        Diagnostic::new(kind, message, Some(span.clone()))
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn with_label(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.labels.push((span, label.into()));
        self
    }
    /// 1-based line of the primary span, if any.
    pub fn line(&self) -> Option<u32> {
        self.span.as_ref().map(Span::line)
    }

    /// Render with the source line and a caret; `color` for terminals.
    pub fn render(&self, color: bool) -> String {
        let mut files = SimpleFiles::new();
        let mut ids = vec![];
        let mut file_id = |span: &Span| {
            if let Some((_, id)) = ids.iter().find(|(p, _)| std::ptr::eq(*p, &*span.file)) {
                return *id;
            }
            let id = files.add(span.file.name.clone(), span.file.text.clone());
            ids.push((&*span.file as *const _, id));
            id
        };
        let mut labels = vec![];
        if let Some(s) = &self.span {
            labels.push(Label::primary(file_id(s), s.start..s.end.max(s.start)));
        }
        for (s, text) in &self.labels {
            labels.push(Label::secondary(file_id(s), s.start..s.end).with_message(text.clone()));
        }
        let d = match self.severity {
            Severity::Error => CsDiag::error(),
            Severity::Warning => CsDiag::warning(),
        }
        .with_message(headline(&self.kind, &self.message))
        .with_labels(labels)
        .with_notes(self.notes.clone());
        let mut buf: Vec<u8> = vec![];
        let config = term::Config::default();
        let res = if color {
            let mut w = termcolor::Ansi::new(&mut buf);
            term::emit(&mut w, &config, &files, &d)
        } else {
            let mut w = termcolor::NoColor::new(&mut buf);
            term::emit(&mut w, &config, &files, &d)
        };
        if res.is_err() {
            return format!("{}: {}\n", self.kind, self.message);
        }
        String::from_utf8_lossy(&buf).into_owned()
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(false))
    }
}

/// The candidates closest to a mistyped `name` (edit distance at most a
/// third of its length, at least 1; at most three, best first).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    fn distance(a: &[char], b: &[char]) -> usize {
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    let n: Vec<char> = name.to_lowercase().chars().collect();
    let limit = (n.len() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let cc: Vec<char> = c.to_lowercase().chars().collect();
            let d = distance(&n, &cc);
            let prefix =
                cc.len() >= 3 && n.starts_with(&cc[..]) || n.len() >= 3 && cc.starts_with(&n[..]);
            (d <= limit || prefix).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// "; did you mean `x`?" (or `x` or `y`), or nothing when nothing is close.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    prefix: &str,
) -> String {
    let close = closest(name, candidates);
    match close.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean `{prefix}{one}`?"),
        many => format!(
            "; did you mean {}?",
            many.iter()
                .map(|c| format!("`{prefix}{c}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// `Kind: message`, or the kind alone when there is no message (as Python
/// prints `KeyboardInterrupt`, not `KeyboardInterrupt: `).
pub fn headline(kind: &str, message: &str) -> String {
    if message.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {message}")
    }
}

#[cfg(test)]
mod closest_tests {
    #[test]
    fn typos_find_their_names() {
        let names = ["arange", "argmax", "atomic_add", "load", "store", "zeros"];
        assert_eq!(super::closest("arang", names), ["arange"]);
        assert_eq!(super::closest("lod", names), ["load"]);
        assert!(super::closest("qqqqqq", names).is_empty());
        assert_eq!(
            super::did_you_mean("stor", names, "tl."),
            "; did you mean `tl.store`?"
        );
    }
}
