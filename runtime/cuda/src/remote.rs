//! The session's side of the GPU worker process (`worker`): starting it,
//! sending it commands through the shared region (`ipc`), and the handles
//! (`RemoteGpu`, `RemoteBuffer`, ...) that stand for objects living there.
//!
//! One worker serves every device the session opens (NCCL's communicators
//! and peer copies need them in one process). After a fault the session
//! abandons it (`Client::abandon`: killed, its objects forgotten without
//! commands) and the next `open` starts a fresh one.

use crate::ipc::{Dec, Enc, Region, DEAD, STAGING};
use crate::worker::{DATA_AT, REGION_FD, WORKER_ARG};
use crate::{op, Arg, BlasType, Collective, DeviceInfo, NcclOp, NcclType, Operand};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The binary that can serve as worker (set by `serve_from_this_binary`).
static WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();
/// The worker of the devices opened so far.
static CURRENT: Mutex<Option<Arc<Client>>> = Mutex::new(None);

/// Say that this program's binary runs `worker::run_if_worker` first thing
/// in `main`, so sessions may start it as their GPU worker.
pub fn serve_from_this_binary() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = WORKER_EXE.set(exe);
    }
}

/// Whether GPU work goes to a worker process: the binary serves as one and
/// `TILEBOOK_GPU_WORKER` is not `0`.
pub fn worker_enabled() -> bool {
    WORKER_EXE.get().is_some() && std::env::var("TILEBOOK_GPU_WORKER").map_or(true, |v| v != "0")
}

pub(crate) struct Client {
    region: Region,
    /// One producer at a time, and one user of the staging area.
    lock: Mutex<()>,
    child: Mutex<Child>,
    lost: AtomicBool,
    next_id: AtomicU64,
    /// Buffers the session freed, kept for its next allocations of the same
    /// size on the same device (see `FreeBuffers`).
    free: Mutex<FreeBuffers>,
}

/// Freed buffers by (device, bytes): an allocation of a size the session
/// freed before takes one back without a round trip to the worker (the
/// worker's stream orders every later use after the earlier ones, as the
/// caching allocators of torch and of the worker's own pool rely on).
/// Bounded in bytes; given back to the worker when an allocation fails and
/// by `torch.cuda.empty_cache()`.
#[derive(Default)]
struct FreeBuffers {
    by_size: std::collections::HashMap<(u32, u64), Vec<(u64, u64)>>,
    bytes: u64,
}

/// The most bytes `FreeBuffers` keeps, and the largest buffer it keeps.
const FREE_KEPT: u64 = 1 << 30;
const FREE_LARGEST: u64 = 256 << 20;

impl Client {
    fn spawn() -> Result<Arc<Client>, String> {
        let exe = WORKER_EXE
            .get()
            .ok_or("this program cannot start a GPU worker")?;
        Client::spawn_from(exe)
    }

    fn spawn_from(exe: &std::path::Path) -> Result<Arc<Client>, String> {
        let region = Region::create()?;
        let fd = region.fd;
        let mut cmd = Command::new(exe);
        cmd.arg(WORKER_ARG)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if fd == REGION_FD {
                    let flags = libc::fcntl(fd, libc::F_GETFD);
                    libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
                } else if libc::dup2(fd, REGION_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
        let child = cmd
            .spawn()
            .map_err(|e| format!("starting the GPU worker ({}): {e}", exe.display()))?;
        Ok(Arc::new(Client {
            region,
            lock: Mutex::new(()),
            child: Mutex::new(child),
            lost: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            free: Mutex::new(FreeBuffers::default()),
        }))
    }

    /// The worker every device shares, started if there is none (or the
    /// last one was abandoned).
    pub(crate) fn current() -> Result<Arc<Client>, String> {
        let mut cur = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cur.as_ref().filter(|c| !c.is_lost()) {
            return Ok(c.clone());
        }
        let c = Client::spawn()?;
        *cur = Some(c.clone());
        Ok(c)
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    pub(crate) fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn alive(&self) -> bool {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        matches!(c.try_wait(), Ok(None))
    }

    /// Why the worker is gone, if it is.
    pub(crate) fn exit_status(&self) -> Option<String> {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match c.try_wait() {
            Ok(Some(s)) => Some(format!("{DEAD} ({s})")),
            Ok(None) => None,
            Err(e) => Some(format!("{DEAD} ({e})")),
        }
    }

    /// Forget the worker: kill it and let every handle of it drop silently.
    pub(crate) fn abandon(&self) {
        self.lost.store(true, Ordering::Relaxed);
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let _ = c.kill();
        let _ = c.wait();
    }

    fn check(&self) -> Result<(), String> {
        if self.is_lost() {
            return Err("the GPU context was abandoned after a fault".into());
        }
        Ok(())
    }

    /// A failure of an earlier command without answer, if one happened.
    fn take_failure(&self) -> Result<(), String> {
        if !self.region.failed() {
            return Ok(());
        }
        let alive = || self.alive();
        let seq = self.region.push(&Enc::new(op::TAKE_FAILURE).0, &alive)?;
        let n = self.region.wait_reply(seq, &alive)?;
        Err(Dec::new(&self.region.staging()[..n]).str())
    }

    /// Queue a command without answer. Reports a failure of an earlier one.
    pub(crate) fn send(&self, cmd: Enc) -> Result<(), String> {
        self.check()?;
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.take_failure()?;
        let alive = || self.alive();
        self.region.push(&cmd.0, &alive).map(|_| ())
    }

    /// A buffer of `bytes` on `dev` the session freed before: (id, address).
    fn reuse(&self, dev: u32, bytes: u64) -> Option<(u64, u64)> {
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let found = f.by_size.get_mut(&(dev, bytes))?.pop()?;
        f.bytes -= bytes;
        Some(found)
    }

    /// Keep a freed buffer for reuse, or free it in the worker.
    fn free_buffer(&self, dev: u32, bytes: u64, id: u64, addr: u64) {
        if self.is_lost() {
            return;
        }
        {
            let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
            if bytes <= FREE_LARGEST && f.bytes + bytes <= FREE_KEPT {
                f.by_size.entry((dev, bytes)).or_default().push((id, addr));
                f.bytes += bytes;
                return;
            }
        }
        self.release(Enc::new(op::FREE).u64(id));
    }

    /// Free every kept buffer in the worker; whether there were any.
    pub(crate) fn release_kept(&self) -> bool {
        let kept = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        for (id, _) in kept.by_size.into_values().flatten() {
            self.release(Enc::new(op::FREE).u64(id));
        }
        kept.bytes > 0
    }

    /// Queue a command that frees something: nothing is reported.
    pub(crate) fn release(&self, cmd: Enc) {
        if self.is_lost() {
            return;
        }
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let alive = || self.alive();
        let _ = self.region.push(&cmd.0, &alive);
    }

    /// Run a command and read its answer: `put` fills the staging area
    /// first, `get` reads the answer from it.
    pub(crate) fn call<T>(
        &self,
        cmd: Enc,
        put: impl FnOnce(&mut [u8]),
        get: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, String> {
        self.check()?;
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let alive = || self.alive();
        put(self.region.staging());
        let seq = self.region.push(&cmd.0, &alive)?;
        let n = self
            .region
            .wait_reply(seq, &alive)
            .map_err(|e| self.exit_status().unwrap_or(e))?;
        let out = get(&self.region.staging()[..n.min(STAGING)]);
        // Commands run in order: a command without answer queued before
        // this one that failed has said so by now, and its failure comes
        // first (the answer may rest on its work).
        self.take_failure()?;
        Ok(out)
    }

    /// A command whose answer is a status alone.
    pub(crate) fn status(&self, cmd: Enc) -> Result<(), String> {
        self.call(cmd, |_| {}, |a| Dec::new(a).status())?
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if !self.is_lost() {
            let alive = || self.alive();
            if let Ok(seq) = self.region.push(&Enc::new(op::EXIT).0, &alive) {
                let _ = self.region.wait_reply(seq, &alive);
            }
        }
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        // Give it a moment to leave by itself, then make sure.
        for _ in 0..50 {
            if !matches!(c.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A device of the worker.
#[derive(Clone)]
pub(crate) struct RemoteGpu {
    pub(crate) client: Arc<Client>,
    pub(crate) dev: u32,
}

pub(crate) struct RemoteBuffer {
    client: Arc<Client>,
    pub(crate) id: u64,
    pub(crate) addr: u64,
    dev: u32,
    bytes: u64,
}

impl Drop for RemoteBuffer {
    fn drop(&mut self) {
        self.client
            .free_buffer(self.dev, self.bytes, self.id, self.addr);
    }
}

pub(crate) struct RemoteFunction {
    client: Arc<Client>,
    pub(crate) id: u64,
}

impl Drop for RemoteFunction {
    fn drop(&mut self) {
        self.client.release(Enc::new(op::UNLOAD).u64(self.id));
    }
}

pub(crate) struct RemoteMark {
    client: Arc<Client>,
    pub(crate) id: u64,
}

impl Drop for RemoteMark {
    fn drop(&mut self) {
        self.client.release(Enc::new(op::UNMARK).u64(self.id));
    }
}

pub(crate) struct RemoteComm {
    client: Arc<Client>,
    id: u64,
}

impl Drop for RemoteComm {
    fn drop(&mut self) {
        self.client.release(Enc::new(op::COMM_DROP).u64(self.id));
    }
}

/// A loaded function's facts, from the worker.
pub(crate) struct Loaded {
    pub f: RemoteFunction,
    pub shared_bytes: u32,
    pub threads: u32,
    pub regs: u32,
    pub local_bytes: u32,
    pub cubin: Vec<u8>,
}

/// Start `exe` as a GPU worker, ask it how many devices its driver shows,
/// and end it; returns the count and the worker's process id (gone when
/// this returns). Checks the channel where there is no GPU.
pub fn probe_worker(exe: &std::path::Path) -> Result<(usize, u32), String> {
    let c = Client::spawn_from(exe)?;
    let n = c.call(Enc::new(op::COUNT), |_| {}, |a| Dec::new(a).u64() as usize)?;
    // An unknown command is answered with an error, not a hang or a crash.
    let bad = c.status(Enc::new(200));
    if bad.is_ok() {
        return Err("the worker accepted an unknown command".into());
    }
    let pid = c.child.lock().unwrap_or_else(|e| e.into_inner()).id();
    drop(c);
    Ok((n, pid))
}

/// How many devices the worker's driver shows.
pub(crate) fn device_count() -> usize {
    Client::current()
        .and_then(|c| c.call(Enc::new(op::COUNT), |_| {}, |a| Dec::new(a).u64() as usize))
        .unwrap_or(0)
}

/// NCCL's availability and version, as the worker sees them.
pub(crate) fn nccl() -> (bool, Result<i32, String>) {
    let r = Client::current().and_then(|c| {
        c.call(
            Enc::new(op::NCCL),
            |_| {},
            |a| {
                let mut d = Dec::new(a);
                let v = d.status().map(|_| d.u32() as i32);
                (d.u8() != 0, v)
            },
        )
    });
    r.unwrap_or_else(|e| (false, Err(e)))
}

impl RemoteGpu {
    /// Open device `dev` in the worker: its facts and its cubins' target.
    pub(crate) fn open(dev: u32) -> Result<(RemoteGpu, DeviceInfo, String), String> {
        let client = Client::current()?;
        let (info, target) = client.call(
            Enc::new(op::OPEN).u32(dev),
            |_| {},
            |a| {
                let mut d = Dec::new(a);
                d.status().map(|_| {
                    let info = DeviceInfo {
                        name: d.str(),
                        ordinal: dev,
                        arch: d.str(),
                        driver_version: d.u32() as i32,
                        total_memory: d.u64() as usize,
                        generation: 0,
                        max_shared: d.u32(),
                        sm_count: d.u32(),
                        max_regs: d.u32(),
                    };
                    (info, d.str())
                })
            },
        )??;
        Ok((RemoteGpu { client, dev }, info, target))
    }

    pub(crate) fn alloc(&self, bytes: usize, zero: bool) -> Result<RemoteBuffer, String> {
        let size = bytes as u64;
        if let Some((id, addr)) = self.client.reuse(self.dev, size) {
            let b = RemoteBuffer {
                client: self.client.clone(),
                id,
                addr,
                dev: self.dev,
                bytes: size,
            };
            if zero {
                self.zero(&b)?;
            }
            return Ok(b);
        }
        let ask = || {
            let id = self.client.id();
            let cmd = Enc::new(op::ALLOC)
                .u32(self.dev)
                .u64(id)
                .u64(size)
                .u8(zero as u8);
            let addr = self.client.call(
                cmd,
                |_| {},
                |a| {
                    let mut d = Dec::new(a);
                    d.status().map(|_| d.u64())
                },
            )??;
            Ok::<_, String>((id, addr))
        };
        // Out of memory with freed buffers kept: give them back and ask again.
        let (id, addr) = match ask() {
            Err(_) if self.client.release_kept() => ask()?,
            other => other?,
        };
        Ok(RemoteBuffer {
            client: self.client.clone(),
            id,
            addr,
            dev: self.dev,
            bytes: size,
        })
    }

    /// Give the buffers kept for reuse back to the worker.
    pub(crate) fn release_kept(&self) {
        self.client.release_kept();
    }

    pub(crate) fn mem_info(&self) -> Option<(usize, usize)> {
        self.client
            .call(
                Enc::new(op::MEMINFO).u32(self.dev),
                |_| {},
                |a| {
                    let mut d = Dec::new(a);
                    (d.u64() as usize, d.u64() as usize)
                },
            )
            .ok()
    }

    pub(crate) fn upload(&self, host: &[u8], b: &RemoteBuffer) -> Result<(), String> {
        for (i, chunk) in host.chunks(STAGING - DATA_AT).enumerate() {
            let offset = (i * (STAGING - DATA_AT)) as u64;
            let cmd = Enc::new(op::UPLOAD)
                .u64(b.id)
                .u64(offset)
                .u64(chunk.len() as u64);
            self.client.call(
                cmd,
                |s| s[..chunk.len()].copy_from_slice(chunk),
                |a| Dec::new(a).status(),
            )??;
        }
        Ok(())
    }

    pub(crate) fn download(&self, b: &RemoteBuffer, host: &mut [u8]) -> Result<(), String> {
        if host.is_empty() {
            return self.synchronize();
        }
        for (i, chunk) in host.chunks_mut(STAGING - DATA_AT).enumerate() {
            let offset = (i * (STAGING - DATA_AT)) as u64;
            let n = chunk.len();
            let cmd = Enc::new(op::DOWNLOAD).u64(b.id).u64(offset).u64(n as u64);
            self.client.call(
                cmd,
                |_| {},
                |a| match a.first() {
                    Some(0) if a.len() >= DATA_AT + n => {
                        chunk.copy_from_slice(&a[DATA_AT..DATA_AT + n]);
                        Ok(())
                    }
                    _ => Dec::new(a).status().and(Err("a short answer".to_string())),
                },
            )??;
        }
        Ok(())
    }

    pub(crate) fn synchronize(&self) -> Result<(), String> {
        self.client.status(Enc::new(op::SYNC).u32(self.dev))
    }

    pub(crate) fn context_fault(&self) -> Option<String> {
        if self.client.is_lost() {
            return Some("the context was abandoned".into());
        }
        let r = self.client.call(
            Enc::new(op::FAULT).u32(self.dev),
            |_| {},
            |a| {
                let mut d = Dec::new(a);
                (d.u8() == 1).then(|| d.str())
            },
        );
        match r {
            Ok(f) => f,
            Err(e) => Some(e),
        }
    }

    /// Start loading a module (the worker compiles on a thread of its own)
    /// and wait for it, polling, so that loads from several threads overlap.
    pub(crate) fn load(
        &self,
        code: &[u8],
        is_cubin: bool,
        name: &str,
        shared_bytes: u32,
        threads: u32,
    ) -> Result<Loaded, String> {
        if code.len() > STAGING {
            return Err(format!(
                "the code of `{name}` ({} bytes) is larger than the GPU worker takes ({STAGING})",
                code.len()
            ));
        }
        let id = self.client.id();
        let cmd = Enc::new(op::LOAD)
            .u32(self.dev)
            .u64(id)
            .str(name)
            .u32(shared_bytes)
            .u32(threads)
            .u8(is_cubin as u8)
            .u64(code.len() as u64);
        self.client.call(
            cmd,
            |s| s[..code.len()].copy_from_slice(code),
            |a| Dec::new(a).status(),
        )??;
        let mut pause = Duration::from_micros(100);
        loop {
            let r = self.client.call(
                Enc::new(op::LOAD_STATUS).u64(id),
                |_| {},
                |a| {
                    let mut d = Dec::new(a);
                    match d.u8() {
                        0 => None,
                        1 => Some(Ok((d.u32(), d.u32(), d.u32(), d.u32(), d.bytes().to_vec()))),
                        _ => Some(Err(d.str())),
                    }
                },
            )?;
            if let Some(r) = r {
                let (shared_bytes, threads, regs, local_bytes, cubin) = r?;
                return Ok(Loaded {
                    f: RemoteFunction {
                        client: self.client.clone(),
                        id,
                    },
                    shared_bytes,
                    threads,
                    regs,
                    local_bytes,
                    cubin,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    pub(crate) fn launch(
        &self,
        f: &RemoteFunction,
        grid: [u32; 3],
        args: &[Arg],
    ) -> Result<(), String> {
        let mut e = Enc::new(op::LAUNCH)
            .u32(self.dev)
            .u64(f.id)
            .u32(grid[0])
            .u32(grid[1])
            .u32(grid[2])
            .u32(args.len() as u32);
        for a in args {
            e = match *a {
                Arg::Ptr(p) => e.u8(0).u64(p),
                Arg::I32(v) => e.u8(1).u64(v as u32 as u64),
                Arg::I64(v) => e.u8(2).u64(v as u64),
                Arg::F32(v) => e.u8(3).u64(v.to_bits() as u64),
                Arg::F64(v) => e.u8(4).u64(v.to_bits()),
                Arg::TensorMap(m) => {
                    let mut e = e.u8(5).u64(m.addr).u32(m.dtype).u32(m.rank);
                    for d in m.dims {
                        e = e.u64(d);
                    }
                    for s in m.strides {
                        e = e.u64(s);
                    }
                    for b in m.boxes {
                        e = e.u32(b);
                    }
                    e.u32(m.swizzle).u8(m.nan_fill as u8)
                }
            };
        }
        self.client
            .send(e)
            .map_err(|e| format!("launch failed: {e}"))
    }

    pub(crate) fn zero(&self, b: &RemoteBuffer) -> Result<(), String> {
        self.client.send(Enc::new(op::ZERO).u32(self.dev).u64(b.id))
    }

    pub(crate) fn fill(&self, b: &RemoteBuffer, elem: &[u8]) -> Result<bool, String> {
        if ![1, 2, 4].contains(&elem.len()) {
            return Ok(false);
        }
        self.client
            .send(Enc::new(op::FILL).u32(self.dev).u64(b.id).bytes(elem))
            .map(|_| true)
    }

    pub(crate) fn mark(&self) -> Result<RemoteMark, String> {
        let id = self.client.id();
        self.client.send(Enc::new(op::MARK).u32(self.dev).u64(id))?;
        Ok(RemoteMark {
            client: self.client.clone(),
            id,
        })
    }

    pub(crate) fn elapsed_ms(&self, a: &RemoteMark, b: &RemoteMark) -> Result<f32, String> {
        let cmd = Enc::new(op::ELAPSED).u32(self.dev).u64(a.id).u64(b.id);
        self.client.call(
            cmd,
            |_| {},
            |a| {
                let mut d = Dec::new(a);
                d.status().map(|_| f32::from_bits(d.u32()))
            },
        )?
    }

    pub(crate) fn gemm(
        &self,
        t: BlasType,
        dims: (i32, i32, i32),
        a: Operand,
        b: Operand,
        c: u64,
        ldc: i32,
    ) -> Result<(), String> {
        let operand = |e: Enc, o: Operand| e.u64(o.ptr).u8(o.trans as u8).u32(o.ld as u32);
        let e = Enc::new(op::GEMM)
            .u32(self.dev)
            .u8(t as u8)
            .u32(dims.0 as u32)
            .u32(dims.1 as u32)
            .u32(dims.2 as u32);
        let e = operand(operand(e, a), b).u64(c).u32(ldc as u32);
        self.client.send(e)
    }

    pub(crate) fn can_access_peer(&self, other: &RemoteGpu) -> bool {
        let cmd = Enc::new(op::CAN_PEER).u32(self.dev).u32(other.dev);
        self.client
            .call(cmd, |_| {}, |a| Dec::new(a).u8() != 0)
            .unwrap_or(false)
    }

    pub(crate) fn enable_peer_access(&self, owner: &RemoteGpu) -> Result<(), String> {
        self.client
            .status(Enc::new(op::ENABLE_PEER).u32(self.dev).u32(owner.dev))
    }

    pub(crate) fn wait_for(&self, other: &RemoteGpu) -> Result<(), String> {
        self.client
            .send(Enc::new(op::WAIT_FOR).u32(self.dev).u32(other.dev))
    }

    pub(crate) fn copy_from_peer(
        &self,
        dst: &RemoteBuffer,
        src_gpu: &RemoteGpu,
        src: &RemoteBuffer,
        bytes: usize,
    ) -> Result<(), String> {
        let cmd = Enc::new(op::COPY_PEER)
            .u32(self.dev)
            .u64(dst.id)
            .u32(src_gpu.dev)
            .u64(src.id)
            .u64(bytes as u64);
        self.client.send(cmd)
    }
}

impl RemoteComm {
    pub(crate) fn new(gpus: &[&RemoteGpu]) -> Result<RemoteComm, String> {
        let client = gpus
            .first()
            .ok_or("a communicator over no devices")?
            .client
            .clone();
        let id = client.id();
        let mut e = Enc::new(op::COMM_NEW).u64(id).u32(gpus.len() as u32);
        for g in gpus {
            e = e.u32(g.dev);
        }
        client.status(e)?;
        Ok(RemoteComm { client, id })
    }

    pub(crate) fn run(
        &self,
        gpus: &[&RemoteGpu],
        what: Collective,
        bufs: &[(u64, u64)],
        count: usize,
        ty: NcclType,
    ) -> Result<(), String> {
        let red = |o: NcclOp| o as u8;
        let (kind, opc, root) = match what {
            Collective::AllReduce(o) => (0, red(o), 0),
            Collective::Broadcast { root } => (1, 0, root as u32),
            Collective::AllGather => (2, 0, 0),
            Collective::ReduceScatter(o) => (3, red(o), 0),
        };
        let mut e = Enc::new(op::COMM_RUN).u64(self.id).u32(gpus.len() as u32);
        for g in gpus {
            e = e.u32(g.dev);
        }
        e = e.u8(kind).u8(opc).u32(root).u32(bufs.len() as u32);
        for &(s, r) in bufs {
            e = e.u64(s).u64(r);
        }
        self.client.status(e.u64(count as u64).u8(ty as u8))
    }
}
