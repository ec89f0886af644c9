//! The cell worker: one thread that owns the `Session` (which is not
//! `Send`) and answers jobs from the protocol side. Execution outputs go to
//! IOPub as they are produced at the end of each cell; progress goes out
//! while the cell runs, as a display that is updated in place.

use jupyter_protocol::{
    DisplayData, ErrorOutput, ExecuteResult, ExecutionCount, HistoryEntry, HistoryRequest,
    JupyterMessage, Media, MediaType, StreamContent, Transient, UpdateDisplayData,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use tilebook_frontend::parse::{is_complete, Completeness};
use tilebook_session::Interrupt;
use tilebook_session::{Output, Progress, Session};
use tokio::sync::{mpsc, oneshot};

/// What the protocol side asks of the worker.
pub enum Job {
    Execute {
        code: String,
        silent: bool,
        store_history: bool,
        parent: Box<JupyterMessage>,
        reply: oneshot::Sender<Executed>,
    },
    Complete {
        code: String,
        cursor: usize,
        reply: oneshot::Sender<(usize, usize, Vec<String>)>,
    },
    Inspect {
        code: String,
        cursor: usize,
        detail: usize,
        reply: oneshot::Sender<Option<String>>,
    },
    IsComplete {
        code: String,
        reply: oneshot::Sender<(Completeness, String)>,
    },
    History {
        request: HistoryRequest,
        reply: oneshot::Sender<Vec<HistoryEntry>>,
    },
}

/// The result of one execute request.
pub struct Executed {
    pub count: usize,
    pub error: Option<ErrorOutput>,
    /// `%load`: text for the next cell (Jupyter's `set_next_input` payload).
    pub next_input: Option<String>,
    /// `x?`: documentation for the pager (the `page` payload).
    pub page: Option<String>,
}

/// Byte offset of a position counted in Unicode code points (Jupyter's unit).
pub fn byte_offset(text: &str, code_points: usize) -> usize {
    text.char_indices()
        .nth(code_points)
        .map_or(text.len(), |(b, _)| b)
}

/// Code points before a byte offset.
pub fn code_points(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].chars().count()
}

fn media(data: &[(String, String)]) -> Media {
    Media::new(
        data.iter()
            .map(|(mime, v)| match mime.as_str() {
                "text/plain" => MediaType::Plain(v.clone()),
                "text/html" => MediaType::Html(v.clone()),
                "image/svg+xml" => MediaType::Svg(v.clone()),
                "text/markdown" => MediaType::Markdown(v.clone()),
                _ => MediaType::Plain(v.clone()),
            })
            .collect(),
    )
}

/// Start the worker thread. Returns the job queue and the session's
/// interrupt flag (set by `interrupt_request` on the control channel).
pub fn start(
    iopub: mpsc::UnboundedSender<JupyterMessage>,
) -> (std::sync::mpsc::Sender<Job>, Arc<Interrupt>) {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let (flag_tx, flag_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("tilebook-cells".into())
        .stack_size(tilebook_session::CELL_STACK_BYTES)
        .spawn(move || {
            let device = std::env::var("TILEBOOK_DEVICE").unwrap_or_else(|_| "auto".into());
            let mut session = Session::lazy(&device).unwrap_or_default();
            session.color = true;
            let _ = flag_tx.send(session.interrupt.clone());
            let parent: Rc<RefCell<Option<JupyterMessage>>> = Rc::new(RefCell::new(None));
            session.on_progress = Some(progress_sink(parent.clone(), iopub.clone()));
            session.on_output = Some(live_sink(parent.clone(), iopub.clone()));
            let mut worker = Worker {
                session,
                iopub,
                parent,
                count: 0,
                history: vec![],
            };
            while let Ok(job) = rx.recv() {
                worker.handle(job);
            }
        })
        .expect("start the cell worker thread");
    let flag = flag_rx.recv().expect("the cell worker's interrupt flag");
    (tx, flag)
}

/// Streams, displays and clears sent to IOPub as the cell produces them.
fn live_sink(
    parent: Rc<RefCell<Option<JupyterMessage>>>,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
) -> tilebook_session::OutputSink {
    Box::new(move |o: &Output| {
        let Some(parent) = parent.borrow().clone() else {
            return;
        };
        if let Some(content) = live_content(o) {
            let msg = JupyterMessage::new(content, Some(&parent)).with_zmq_identities(vec![]);
            let _ = iopub.send(msg);
        }
    })
}

/// The IOPub message of an output that is sent as it happens.
fn live_content(o: &Output) -> Option<jupyter_protocol::JupyterMessageContent> {
    Some(match o {
        Output::Stream { name, text } => {
            if name == "stderr" {
                StreamContent::stderr(text).into()
            } else {
                StreamContent::stdout(text).into()
            }
        }
        Output::Display { data } => DisplayData::new(media(data)).into(),
        Output::ClearOutput { wait } => jupyter_protocol::ClearOutput { wait: *wait }.into(),
        _ => return None,
    })
}

/// Progress as a display updated in place (one display per operation).
fn progress_sink(
    parent: Rc<RefCell<Option<JupyterMessage>>>,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
) -> tilebook_session::ProgressSink {
    let current: RefCell<Option<(String, String)>> = RefCell::new(None);
    let serial = std::cell::Cell::new(0u64);
    Box::new(move |p: &Progress| {
        let Some(parent) = parent.borrow().clone() else {
            return;
        };
        let width = 30;
        let filled = (p.done * width) / p.total.max(1);
        let text = format!(
            "{} [{}{}] {}/{}",
            p.label,
            "=".repeat(filled),
            " ".repeat(width - filled),
            p.done,
            p.total
        );
        let data = Media::new(vec![MediaType::Plain(text)]);
        let mut cur = current.borrow_mut();
        let msg = match cur.as_ref() {
            Some((label, id)) if *label == p.label => {
                JupyterMessage::new(UpdateDisplayData::new(data, id), Some(&parent))
            }
            _ => {
                serial.set(serial.get() + 1);
                let id = format!("tilebook-progress-{}-{}", std::process::id(), serial.get());
                *cur = Some((p.label.clone(), id.clone()));
                let d = DisplayData {
                    data,
                    metadata: Default::default(),
                    transient: Some(Transient {
                        display_id: Some(id),
                    }),
                };
                JupyterMessage::new(d, Some(&parent))
            }
        };
        if p.finished() {
            *cur = None;
        }
        let _ = iopub.send(msg.with_zmq_identities(vec![]));
    })
}

struct Worker {
    session: Session,
    iopub: mpsc::UnboundedSender<JupyterMessage>,
    parent: Rc<RefCell<Option<JupyterMessage>>>,
    count: usize,
    /// (line number, input, text output) of executed cells.
    history: Vec<(usize, String, String)>,
}

impl Worker {
    fn send(
        &self,
        content: impl Into<jupyter_protocol::JupyterMessageContent>,
        parent: &JupyterMessage,
    ) {
        let msg = JupyterMessage::new(content.into(), Some(parent)).with_zmq_identities(vec![]);
        let _ = self.iopub.send(msg);
    }

    fn handle(&mut self, job: Job) {
        match job {
            Job::Execute {
                code,
                silent,
                store_history,
                parent,
                reply,
            } => {
                let r = self.execute(&code, silent, store_history, &parent);
                let _ = reply.send(r);
            }
            Job::Complete {
                code,
                cursor,
                reply,
            } => {
                let at = byte_offset(&code, cursor);
                let c = self.session.complete(&code, at);
                let _ = reply.send((code_points(&code, c.start), cursor, c.matches));
            }
            Job::Inspect {
                code,
                cursor,
                detail,
                reply,
            } => {
                let at = byte_offset(&code, cursor);
                let _ = reply.send(self.inspect(&code, at, detail > 0));
            }
            Job::IsComplete { code, reply } => {
                let state = is_complete(&code);
                let last = code
                    .trim_end_matches('\n')
                    .rsplit('\n')
                    .next()
                    .unwrap_or("");
                let indent = if state == Completeness::Incomplete {
                    tilebook_frontend::parse::next_indent(last)
                } else {
                    String::new()
                };
                let _ = reply.send((state, indent));
            }
            Job::History { request, reply } => {
                let _ = reply.send(self.history(&request));
            }
        }
    }

    fn execute(
        &mut self,
        code: &str,
        silent: bool,
        store_history: bool,
        parent: &JupyterMessage,
    ) -> Executed {
        let counts = store_history && !silent;
        if counts {
            self.count += 1;
        }
        let count = self.count;
        if !silent {
            self.send(
                jupyter_protocol::ExecuteInput {
                    code: code.to_string(),
                    execution_count: ExecutionCount::new(count),
                },
                parent,
            );
        }
        // Live outputs and progress go to this request (none when silent).
        *self.parent.borrow_mut() = (!silent).then(|| parent.clone());
        let r = self.session.run_cell(code);
        *self.parent.borrow_mut() = None;
        let mut error = None;
        let mut next_input = None;
        let mut page = None;
        for o in &r.outputs {
            match o {
                Output::Stream { name, text } if !silent => {
                    let s = if name == "stderr" {
                        StreamContent::stderr(text)
                    } else {
                        StreamContent::stdout(text)
                    };
                    self.send(s, parent);
                }
                Output::Display { data } if !silent => {
                    self.send(DisplayData::new(media(data)), parent)
                }
                Output::Result { data } if !silent => {
                    let mut result = ExecuteResult::new(ExecutionCount::new(count), media(data));
                    result.transient = Some(Default::default());
                    self.send(result, parent)
                }
                Output::Error {
                    kind,
                    message,
                    rendered,
                    ..
                } => {
                    let e = ErrorOutput {
                        ename: kind.clone(),
                        evalue: message.clone(),
                        traceback: rendered.lines().map(str::to_string).collect(),
                    };
                    if !silent {
                        self.send(e.clone(), parent);
                    }
                    error = Some(e);
                }
                Output::NextInput { text } => next_input = Some(text.clone()),
                Output::Page { text } => page = Some(text.clone()),
                _ => {}
            }
        }
        if counts {
            self.history.push((count, code.to_string(), r.text()));
        }
        Executed {
            count,
            error,
            next_input,
            page,
        }
    }

    /// Documentation of the name at (or just before) the cursor.
    fn inspect(&mut self, code: &str, at: usize, source: bool) -> Option<String> {
        let is_name = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
        let start = code[..at]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_name(*c))
            .last()
            .map_or(at, |(i, _)| i);
        let end = code[at..]
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(code.len(), |(i, _)| at + i);
        let name = code[start..end].trim_matches('.');
        if name.is_empty() {
            return None;
        }
        tilebook_session::docs::help(&mut self.session, name, source).ok()
    }

    fn history(&self, request: &HistoryRequest) -> Vec<HistoryEntry> {
        let entry = |(n, input, out): &(usize, String, String), output: bool| {
            if output {
                HistoryEntry::InputOutput(0, *n, (input.clone(), out.clone()))
            } else {
                HistoryEntry::Input(0, *n, input.clone())
            }
        };
        match request {
            HistoryRequest::Tail { n, output, .. } => {
                let n = (*n).max(0) as usize;
                let skip = self.history.len().saturating_sub(n);
                self.history[skip..]
                    .iter()
                    .map(|h| entry(h, *output))
                    .collect()
            }
            HistoryRequest::Range {
                start,
                stop,
                output,
                ..
            } => self
                .history
                .iter()
                .filter(|(n, _, _)| (*n as i32) >= *start && (*stop <= 0 || (*n as i32) < *stop))
                .map(|h| entry(h, *output))
                .collect(),
            HistoryRequest::Search {
                pattern,
                unique,
                output,
                n,
                ..
            } => {
                let mut seen = std::collections::HashSet::new();
                let mut out: Vec<HistoryEntry> = self
                    .history
                    .iter()
                    .filter(|(_, input, _)| glob(pattern, input))
                    .filter(|(_, input, _)| !*unique || seen.insert(input.clone()))
                    .map(|h| entry(h, *output))
                    .collect();
                if *n > 0 && out.len() > *n as usize {
                    out.drain(..out.len() - *n as usize);
                }
                out
            }
        }
    }
}

/// IPython's history search pattern: `*` any run, `?` one character.
fn glob(pattern: &str, text: &str) -> bool {
    fn m(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => m(&p[1..], t) || (!t.is_empty() && m(p, &t[1..])),
            (Some('?'), Some(_)) => m(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => m(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    m(&p, &t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_convert_between_code_points_and_bytes() {
        let s = "é = 'ü'; x.sha";
        assert_eq!(byte_offset(s, 1), 2);
        assert_eq!(code_points(s, byte_offset(s, 12)), 12);
        assert_eq!(byte_offset(s, 100), s.len());
    }

    #[test]
    fn history_search_globs() {
        assert!(glob("a*", "a = 1"));
        assert!(glob("*1", "a = 1"));
        assert!(glob("?", "x"));
        assert!(!glob("b*", "a = 1"));
    }
}
