//! `tilebook::Error`: what a notebook shows for a failed cell, as a value.

use tilebook_session::Output;

/// An error from tilebook: Python's exception class (`TypeError`,
/// `IndexError`, `CompilationError`, ...), its message, the line it points
/// at when known, and the rendered diagnostic (with the source excerpt and
/// carets) that `Display` prints — the text a notebook shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub kind: String,
    pub message: String,
    /// The 1-based line in the cell or kernel source the error points at.
    pub line: Option<u32>,
    pub rendered: String,
}

impl Error {
    /// An error with no source to point at: the API's own checks, or a
    /// program's that uses it (rendered as tilebook renders its errors).
    pub fn new(kind: &str, message: impl Into<String>) -> Error {
        let message = message.into();
        Error {
            rendered: format!("{kind}: {message}\n"),
            kind: kind.into(),
            message,
            line: None,
        }
    }

    /// The error output of a failed cell.
    pub(crate) fn from_output(o: &Output) -> Option<Error> {
        match o {
            Output::Error {
                kind,
                message,
                line,
                rendered,
            } => Some(Error {
                kind: kind.clone(),
                message: message.clone(),
                line: *line,
                rendered: rendered.clone(),
            }),
            _ => None,
        }
    }

    /// A panic caught at the API's boundary (reading back a tensor whose
    /// GPU copy is gone, or a bug).
    pub(crate) fn from_panic(p: Box<dyn std::any::Any + Send>) -> Error {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Error::new("RuntimeError", msg)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for Error {}
