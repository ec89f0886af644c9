//! Reading shell requests leniently. `jupyter-zmq-client` checks each
//! message's HMAC signature and then parses its content with
//! `jupyter-protocol`'s types, which require every field of a
//! `history_request`; `jupyter_client` leaves out the ones its caller did
//! not give (`n`, `unique`, `session`, ...). Such a request would be
//! dropped, so here the signature is checked the same way (by the crate's
//! `RawMessage::from_multipart`) and the missing fields get the defaults
//! the messaging spec implies before the content is parsed.

use jupyter_protocol::{Header, JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::{Connection, RawMessage};
use serde_json::Value;
use zeromq::SocketRecv;

/// Read one request; `Err` for a message with a bad signature or one that
/// cannot be parsed (the caller logs and drops it).
pub async fn read_lenient<S: SocketRecv>(
    conn: &mut Connection<S>,
) -> Result<JupyterMessage, String> {
    let multipart = conn.socket.recv().await.map_err(|e| e.to_string())?;
    let raw = RawMessage::from_multipart(multipart, &conn.mac).map_err(|e| e.to_string())?;
    let part = |i: usize| -> Result<Value, String> {
        serde_json::from_slice(&raw.jparts[i]).map_err(|e| e.to_string())
    };
    let header: Header = serde_json::from_value(part(0)?).map_err(|e| e.to_string())?;
    let mut content = part(3)?;
    if header.msg_type == "history_request" {
        fill_history_defaults(&mut content);
    }
    let content = JupyterMessageContent::from_type_and_content(&header.msg_type, content)
        .map_err(|e| format!("{}: {e}", header.msg_type))?;
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities.clone(),
        header,
        parent_header: serde_json::from_slice(&raw.jparts[1]).ok(),
        metadata: part(2)?,
        content,
        buffers: raw.jparts[4..].to_vec(),
        channel: None,
    })
}

fn fill_history_defaults(content: &mut Value) {
    let Some(obj) = content.as_object_mut() else {
        return;
    };
    let defaults = [
        ("output", Value::Bool(false)),
        ("raw", Value::Bool(true)),
        ("unique", Value::Bool(false)),
        ("n", Value::from(0)),
        ("start", Value::from(0)),
        ("stop", Value::from(0)),
        ("pattern", Value::from("*")),
    ];
    for (k, v) in defaults {
        obj.entry(k).or_insert(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_without_n_or_unique_parses() {
        let mut c = serde_json::json!({"hist_access_type": "search", "pattern": "6*", "output": false, "raw": true});
        fill_history_defaults(&mut c);
        let parsed = JupyterMessageContent::from_type_and_content("history_request", c);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
