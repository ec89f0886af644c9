//! The terminal line editor: rustyline with tilebook's helper. Syntax
//! colours come from the front end's token classes, completion from the
//! session engine (the same function the Jupyter kernel uses), hints from
//! history. Enter decides, through the shared `is_complete`, whether the
//! cell runs or the buffer gets a new line with its indentation.

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::{Hinter, HistoryHinter};
use rustyline::validate::Validator;
use rustyline::{Cmd, ConditionalEventHandler, Context, Event, EventContext, Helper, RepeatCount};
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;
use tilebook_frontend::parse::{
    highlight_classes, is_complete, next_indent, Completeness, TokenClass,
};
use tilebook_session::Session;

pub struct TileHelper {
    pub session: Rc<RefCell<Session>>,
    hinter: HistoryHinter,
    pub color: bool,
}

impl TileHelper {
    pub fn new(session: Rc<RefCell<Session>>, color: bool) -> TileHelper {
        TileHelper {
            session,
            hinter: HistoryHinter::new(),
            color,
        }
    }
}

impl Helper for TileHelper {}
impl Validator for TileHelper {}

impl Completer for TileHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        // Completion reads the namespace; no cell runs while the editor does.
        let Ok(mut s) = self.session.try_borrow_mut() else {
            return Ok((pos, vec![]));
        };
        let c = s.complete(line, pos);
        let pairs = c
            .matches
            .into_iter()
            .map(|m| Pair {
                display: m.clone(),
                replacement: m,
            })
            .collect();
        Ok((c.start, pairs))
    }
}

impl Hinter for TileHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, ctx: &Context<'_>) -> Option<String> {
        // Hints only on one-line input: a multi-line hint would not fit.
        if line.contains('\n') {
            return None;
        }
        self.hinter.hint(line, pos, ctx)
    }
}

impl Highlighter for TileHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.color {
            return Cow::Borrowed(line);
        }
        Cow::Owned(colour(line))
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if !self.color {
            return Cow::Borrowed(hint);
        }
        Cow::Owned(format!("\x1b[90m{hint}\x1b[0m"))
    }

    fn highlight_char(&self, _line: &str, _pos: usize, _kind: CmdKind) -> bool {
        self.color
    }
}

/// ANSI-coloured `text` (same display width).
pub fn colour(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut at = 0;
    for (r, class) in highlight_classes(text) {
        if r.start < at {
            continue;
        }
        out.push_str(&text[at..r.start]);
        let code = match class {
            TokenClass::Keyword => "\x1b[1;35m",
            TokenClass::String => "\x1b[32m",
            TokenClass::Number => "\x1b[36m",
            TokenClass::Comment => "\x1b[90m",
            TokenClass::Builtin => "\x1b[33m",
        };
        out.push_str(code);
        out.push_str(&text[r.clone()]);
        out.push_str("\x1b[0m");
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// What Enter does with the buffer `text` (cursor at its end).
pub fn on_enter(text: &str) -> Cmd {
    if text.trim().is_empty() {
        return Cmd::AcceptLine;
    }
    let last = text.rsplit('\n').next().unwrap_or("");
    // A blank line ends an open block.
    if text.contains('\n') && last.trim().is_empty() {
        return Cmd::AcceptLine;
    }
    match is_complete(text) {
        Completeness::Incomplete => Cmd::Insert(1, format!("\n{}", next_indent(last))),
        _ => Cmd::AcceptLine,
    }
}

/// Enter, with the cursor at the end of the buffer: run the cell or open a
/// new line (elsewhere in the buffer Enter does what rustyline does).
pub struct EnterHandler;

impl ConditionalEventHandler for EnterHandler {
    fn handle(
        &self,
        _evt: &Event,
        _n: RepeatCount,
        _positive: bool,
        ctx: &EventContext,
    ) -> Option<Cmd> {
        if ctx.pos() < ctx.line().len() {
            return None;
        }
        Some(on_enter(ctx.line()))
    }
}

/// Where history is kept: `TILEBOOK_HISTORY`, else
/// `$XDG_STATE_HOME/tilebook/history`, else `~/.local/state/tilebook/history`.
pub fn history_path() -> Option<std::path::PathBuf> {
    let var = |n: &str| std::env::var_os(n).filter(|v| !v.is_empty());
    if let Some(p) = var("TILEBOOK_HISTORY") {
        return Some(p.into());
    }
    let base = match (var("XDG_STATE_HOME"), var("HOME")) {
        (Some(x), _) => std::path::PathBuf::from(x),
        (None, Some(h)) => std::path::PathBuf::from(h).join(".local/state"),
        _ => return None,
    };
    Some(base.join("tilebook/history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enter_indents_after_a_colon_and_dedents_after_return() {
        assert!(matches!(on_enter("def f(x):"), Cmd::Insert(1, s) if s == "\n    "));
        assert!(matches!(on_enter("def f(x):\n    if x:"), Cmd::Insert(1, s) if s == "\n        "));
        assert!(matches!(on_enter("def f(x):\n    return x"), Cmd::Insert(1, s) if s == "\n"));
        assert!(matches!(
            on_enter("def f(x):\n    return x\n"),
            Cmd::AcceptLine
        ));
        assert!(matches!(on_enter("1 + 1"), Cmd::AcceptLine));
        assert!(matches!(on_enter("x = (1,"), Cmd::Insert(1, s) if s == "\n"));
    }

    #[test]
    fn colours_keep_the_text() {
        let text = "def f(x):  # doc\n    return tl.arange(0, 16) + 'a'";
        let c = colour(text);
        let plain: String = {
            let mut out = String::new();
            let mut chars = c.chars();
            while let Some(ch) = chars.next() {
                if ch == '\x1b' {
                    for d in chars.by_ref() {
                        if d == 'm' {
                            break;
                        }
                    }
                } else {
                    out.push(ch);
                }
            }
            out
        };
        assert_eq!(plain, text);
        assert!(c.contains("\x1b[33marange\x1b[0m"));
        assert!(c.contains("\x1b[1;35mdef\x1b[0m"));
    }
}
