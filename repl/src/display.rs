//! evcxr's display protocol: a value whose type has `evcxr_display` shows
//! as what it prints between `EVCXR_BEGIN_CONTENT <mime>` and
//! `EVCXR_END_CONTENT` (one block per MIME type). A tensor shows as torch's
//! text; a cell's outputs as text and as HTML, where perf tables stay
//! tables and plots stay SVG pictures.

use crate::{Cell, Error, Tensor};
use tilebook_session::Output;

fn content(mime: &str, body: &str) -> String {
    format!(
        "EVCXR_BEGIN_CONTENT {mime}\n{}\nEVCXR_END_CONTENT\n",
        body.trim_end()
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The HTML of a cell's outputs: text in `<pre>`, rich displays as they are.
fn html(outputs: &[Output]) -> Option<String> {
    let mut rich = false;
    let mut out = String::new();
    for o in outputs {
        match o {
            Output::Display { data } | Output::Result { data } => {
                let best = ["image/svg+xml", "text/html"]
                    .iter()
                    .find_map(|m| data.iter().find(|(k, _)| k == m));
                match best {
                    Some((_, v)) => {
                        rich = true;
                        out.push_str(v);
                        out.push('\n');
                    }
                    None => {
                        if let Some((_, t)) = data.iter().find(|(k, _)| k == "text/plain") {
                            out.push_str(&format!("<pre>{}</pre>\n", escape(t)));
                        }
                    }
                }
            }
            Output::Stream { text, .. } | Output::Page { text } => {
                out.push_str(&format!("<pre>{}</pre>\n", escape(text)));
            }
            Output::Error { rendered, .. } => {
                out.push_str(&format!("<pre>{}</pre>\n", escape(rendered)));
            }
            Output::ClearOutput { .. } | Output::NextInput { .. } => {}
        }
    }
    rich.then_some(out)
}

impl Cell {
    /// What evcxr shows for a cell's outputs.
    pub fn evcxr_display(&self) {
        print!("{}", self.evcxr_text());
    }

    /// The display blocks `evcxr_display` prints.
    pub fn evcxr_text(&self) -> String {
        let mut s = content("text/plain", &self.text());
        if let Some(h) = html(&self.outputs) {
            s.push_str(&content("text/html", &h));
        }
        s
    }
}

impl Tensor {
    /// What evcxr shows for a tensor: torch's printed form.
    pub fn evcxr_display(&self) {
        print!("{}", content("text/plain", &self.to_string()));
    }
}

impl Error {
    /// What evcxr shows for an error value: the rendered diagnostic.
    pub fn evcxr_display(&self) {
        print!("{}", content("text/plain", &self.rendered));
    }
}
