//! Source text of cells and files, and spans into it.

use ruff_text_size::TextRange;
use std::rc::Rc;

/// One cell or file the user wrote. Spans point into `text`.
#[derive(Debug)]
pub struct SourceFile {
    /// How messages name it: a path, or `cell [3]`.
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Rc<SourceFile> {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Rc::new(SourceFile {
            name: name.into(),
            text,
            line_starts,
        })
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count());
        (line as u32 + 1, col as u32 + 1)
    }

    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: u32) -> &str {
        let i = (line as usize).saturating_sub(1);
        let Some(&start) = self.line_starts.get(i) else {
            return "";
        };
        let end = self
            .line_starts
            .get(i + 1)
            .map_or(self.text.len(), |e| e - 1);
        self.text.get(start..end.max(start)).unwrap_or("")
    }
}

/// A range of a source file.
#[derive(Clone, Debug)]
pub struct Span {
    pub file: Rc<SourceFile>,
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(file: &Rc<SourceFile>, range: TextRange) -> Span {
        Span {
            file: file.clone(),
            start: range.start().to_usize(),
            end: range.end().to_usize(),
        }
    }
    pub fn line_col(&self) -> (u32, u32) {
        self.file.line_col(self.start)
    }
    pub fn line(&self) -> u32 {
        self.line_col().0
    }
}
