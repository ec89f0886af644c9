//! The protocol side of the kernel: sockets from the connection file
//! (`jupyter-zmq-client`, which also checks every message's HMAC
//! signature), one task per channel, and the shell requests answered by the
//! cell worker. Control (interrupt, shutdown, kernel_info) has its own task,
//! so it is answered while a cell runs.

use crate::worker::{self, Job};
use jupyter_protocol::{
    CodeMirrorMode, CommInfoReply, CompleteReply, ConnectionInfo, ExecuteReply, ExecutionCount,
    HelpLink, HistoryReply, InspectReply, InterruptReply, IoPubWelcome, IsCompleteReply,
    JupyterMessage, JupyterMessageContent, KernelInfoReply, LanguageInfo, Media, MediaType,
    Payload, ReplyError, ReplyStatus, ShutdownReply, Status,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_xpub_connection, create_kernel_shell_connection,
    create_kernel_stdin_connection, SubscriptionEvent,
};
use std::sync::atomic::Ordering;
use tilebook_frontend::parse::Completeness;
use tokio::sync::{mpsc, oneshot};

fn kernel_info() -> KernelInfoReply {
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "tilebook".to_string(),
        implementation_version: env!("CARGO_PKG_VERSION").to_string(),
        language_info: LanguageInfo {
            name: "python".to_string(),
            version: "3.12".to_string(),
            mimetype: Some("text/x-python".to_string()),
            file_extension: Some(".py".to_string()),
            pygments_lexer: Some("python".to_string()),
            codemirror_mode: Some(CodeMirrorMode::Simple("python".to_string())),
            nbconvert_exporter: Some("python".to_string()),
        },
        banner: format!(
            "tilebook {}: Triton's tile language, JIT-compiled (help(x), %lsmagic)",
            env!("CARGO_PKG_VERSION")
        ),
        help_links: vec![HelpLink {
            text: "Triton language reference".into(),
            url: "https://triton-lang.org/main/python-api/triton.language.html".into(),
        }],
        debugger: false,
        error: None,
    }
}

/// Run the kernel for a connection file until a shutdown request.
pub fn run(connection_file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(connection_file)
        .map_err(|e| format!("cannot read {connection_file}: {e}"))?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .map_err(|e| format!("{connection_file} is not a connection file: {e}"))?;
    if info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "unsupported signature scheme `{}` (tilebook signs with hmac-sha256)",
            info.signature_scheme
        ));
    }
    if info.key.is_empty() {
        return Err(
            "the connection file has an empty key: messages could not be authenticated".into(),
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(serve(info))
}

async fn serve(info: ConnectionInfo) -> Result<(), String> {
    let session_id = uuid_like();
    let err = |e: jupyter_zmq_client::RuntimeError| e.to_string();
    let mut heartbeat = create_kernel_heartbeat_connection(&info)
        .await
        .map_err(err)?;
    let shell = create_kernel_shell_connection(&info, &session_id)
        .await
        .map_err(err)?;
    let (mut shell_writer, mut shell_reader) = shell.split();
    let mut control = create_kernel_control_connection(&info, &session_id)
        .await
        .map_err(err)?;
    let _stdin = create_kernel_stdin_connection(&info, &session_id)
        .await
        .map_err(err)?;
    let mut iopub = create_kernel_iopub_xpub_connection(&info, &session_id)
        .await
        .map_err(err)?;

    // IOPub: one task owns the socket; everyone else sends through a channel.
    let (iopub_tx, mut iopub_rx) = mpsc::unbounded_channel::<JupyterMessage>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                msg = iopub_rx.recv() => match msg {
                    Some(m) => { let _ = iopub.send(m).await; }
                    None => break,
                },
                sub = iopub.recv_subscription() => {
                    if let Ok(SubscriptionEvent::Subscribe(topic)) = sub {
                        let welcome: JupyterMessage = IoPubWelcome::new(topic).into();
                        let _ = iopub.send(welcome).await;
                    }
                }
            }
        }
    });
    tokio::spawn(async move { while heartbeat.single_heartbeat().await.is_ok() {} });

    let (jobs, interrupt) = worker::start(iopub_tx.clone());
    let shutdown_interrupt = interrupt.clone();
    let (shutdown_tx, mut shutdown_rx) = mpsc::channel::<()>(1);

    // Control: interrupt, shutdown and kernel_info, answered even while a cell runs.
    let control_iopub = iopub_tx.clone();
    let control_shutdown = shutdown_tx.clone();
    tokio::spawn(async move {
        loop {
            let message = match control.read().await {
                Ok(m) => m,
                Err(e) => {
                    // A forged or garbled message: dropped, never acted on.
                    eprintln!("tilebook kernel: dropped a control message: {e}");
                    continue;
                }
            };
            let status = |s: Status| {
                let _ = control_iopub.send(s.as_child_of(&message).with_zmq_identities(vec![]));
            };
            match &message.content {
                JupyterMessageContent::KernelInfoRequest(_) => {
                    status(Status::busy());
                    let _ = control.send(kernel_info().as_child_of(&message)).await;
                    status(Status::idle());
                }
                JupyterMessageContent::InterruptRequest(_) => {
                    interrupt.store(true, Ordering::Relaxed);
                    let _ = control
                        .send(InterruptReply::new().as_child_of(&message))
                        .await;
                }
                JupyterMessageContent::ShutdownRequest(req) => {
                    let reply = ShutdownReply {
                        restart: req.restart,
                        status: ReplyStatus::Ok,
                        error: None,
                    };
                    let _ = control.send(reply.as_child_of(&message)).await;
                    let _ = control_shutdown.send(()).await;
                    return;
                }
                _ => {}
            }
        }
    });

    loop {
        let message = tokio::select! {
            m = crate::wire::read_lenient(&mut shell_reader) => m,
            _ = shutdown_rx.recv() => break,
        };
        let message = match message {
            Ok(m) => m,
            Err(e) => {
                eprintln!("tilebook kernel: dropped a shell message: {e}");
                continue;
            }
        };
        let busy = Status::busy()
            .as_child_of(&message)
            .with_zmq_identities(vec![]);
        let _ = iopub_tx.send(busy);
        // A shutdown on the control channel ends the kernel even while a
        // cell runs (the cell is interrupted; the process exits with us).
        let reply = tokio::select! {
            r = shell_reply(&jobs, &message) => r,
            _ = shutdown_rx.recv() => {
                shutdown_interrupt.store(true, Ordering::Relaxed);
                break;
            }
        };
        let shutdown = matches!(message.content, JupyterMessageContent::ShutdownRequest(_));
        if let Some(r) = reply {
            let _ = shell_writer.send(r).await;
        }
        let idle = Status::idle()
            .as_child_of(&message)
            .with_zmq_identities(vec![]);
        let _ = iopub_tx.send(idle);
        if shutdown {
            break;
        }
    }
    // Let IOPub drain the last messages.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    Ok(())
}

/// A session id for our side of the connection.
fn uuid_like() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("tilebook-{}-{t:x}", std::process::id())
}

async fn ask<T>(
    jobs: &std::sync::mpsc::Sender<Job>,
    make: impl FnOnce(oneshot::Sender<T>) -> Job,
) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    jobs.send(make(tx)).ok()?;
    rx.await.ok()
}

async fn shell_reply(
    jobs: &std::sync::mpsc::Sender<Job>,
    m: &JupyterMessage,
) -> Option<JupyterMessage> {
    Some(match &m.content {
        JupyterMessageContent::KernelInfoRequest(_) => kernel_info().as_child_of(m),
        JupyterMessageContent::ExecuteRequest(req) => {
            let parent = Box::new(m.clone());
            let done = ask(jobs, |reply| Job::Execute {
                code: req.code.clone(),
                silent: req.silent,
                store_history: req.store_history,
                parent,
                reply,
            })
            .await?;
            let mut payload = vec![];
            if let Some(text) = done.page {
                payload.push(Payload::Page {
                    data: Media::new(vec![MediaType::Plain(text)]),
                    start: 0,
                });
            }
            if let Some(text) = done.next_input {
                payload.push(Payload::SetNextInput {
                    text,
                    replace: false,
                });
            }
            let (status, error) = match done.error {
                Some(e) => (
                    ReplyStatus::Error,
                    Some(Box::new(ReplyError {
                        ename: e.ename,
                        evalue: e.evalue,
                        traceback: e.traceback,
                    })),
                ),
                None => (ReplyStatus::Ok, None),
            };
            ExecuteReply {
                status,
                execution_count: ExecutionCount::new(done.count),
                payload,
                user_expressions: Some(Default::default()),
                error,
            }
            .as_child_of(m)
        }
        JupyterMessageContent::CompleteRequest(req) => {
            let (start, end, matches) = ask(jobs, |reply| Job::Complete {
                code: req.code.clone(),
                cursor: req.cursor_pos,
                reply,
            })
            .await?;
            CompleteReply {
                matches,
                cursor_start: start,
                cursor_end: end,
                metadata: Default::default(),
                status: ReplyStatus::Ok,
                error: None,
            }
            .as_child_of(m)
        }
        JupyterMessageContent::InspectRequest(req) => {
            let doc = ask(jobs, |reply| Job::Inspect {
                code: req.code.clone(),
                cursor: req.cursor_pos,
                detail: req.detail_level.unwrap_or(0),
                reply,
            })
            .await?;
            InspectReply {
                found: doc.is_some(),
                data: doc
                    .map(|d| Media::new(vec![MediaType::Plain(d)]))
                    .unwrap_or_default(),
                metadata: Default::default(),
                status: ReplyStatus::Ok,
                error: None,
            }
            .as_child_of(m)
        }
        JupyterMessageContent::IsCompleteRequest(req) => {
            let (state, indent) = ask(jobs, |reply| Job::IsComplete {
                code: req.code.clone(),
                reply,
            })
            .await?;
            match state {
                Completeness::Complete => IsCompleteReply::complete(),
                Completeness::Incomplete => IsCompleteReply::incomplete(indent),
                Completeness::Invalid => IsCompleteReply::invalid(),
            }
            .as_child_of(m)
        }
        JupyterMessageContent::HistoryRequest(req) => {
            let history = ask(jobs, |reply| Job::History {
                request: req.clone(),
                reply,
            })
            .await?;
            HistoryReply::new(history).as_child_of(m)
        }
        JupyterMessageContent::CommInfoRequest(_) => CommInfoReply {
            status: ReplyStatus::Ok,
            comms: Default::default(),
            error: None,
        }
        .as_child_of(m),
        JupyterMessageContent::ShutdownRequest(req) => ShutdownReply {
            restart: req.restart,
            status: ReplyStatus::Ok,
            error: None,
        }
        .as_child_of(m),
        _ => return None,
    })
}
