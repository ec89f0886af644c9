//! The GPU worker process: owns the CUDA contexts, device memory, modules,
//! events and communicators of one session and runs the commands the
//! session queues in the shared region (`ipc`). A kernel fault poisons the
//! contexts of this process only; the session then ends it and starts
//! another, its own state untouched.
//!
//! Objects are named by ids the session chooses, so a command that makes
//! one (an event, a module load) needs no answer.

use crate::driver::{DeviceBuffer, Gpu, GpuFunction, Mark};
use crate::ipc::{Dec, Enc, Region, SLOT, STAGING};
use crate::nccl::Communicator;
use crate::{op, Arg, BlasType, Collective, NcclOp, NcclType, Operand};
use std::collections::HashMap;
use std::thread::JoinHandle;

/// The argument that makes a tilebook binary a GPU worker, and the file
/// descriptor its shared region arrives on.
pub(crate) const WORKER_ARG: &str = "__tilebook-gpu-worker";
pub(crate) const REGION_FD: i32 = 3;

/// Where the data of a download starts in the staging area (after the status).
pub(crate) const DATA_AT: usize = 8;

type Load = JoinHandle<Result<GpuFunction, String>>;

struct Worker {
    region: Region,
    gpus: HashMap<u32, Gpu>,
    bufs: HashMap<u64, (u32, DeviceBuffer)>,
    funcs: HashMap<u64, GpuFunction>,
    loads: HashMap<u64, Load>,
    marks: HashMap<u64, Mark>,
    comms: HashMap<u64, Communicator>,
    /// The first failure of a command without answer, until the session asks.
    failure: Option<String>,
    /// A launch's decoded arguments (kept to reuse the allocation).
    launch_args: Vec<Arg>,
}

/// Run as a worker when this process was started as one: returns the exit
/// code to end with, or `None` in every other process.
pub fn run_if_worker() -> Option<i32> {
    if std::env::args().nth(1).as_deref() != Some(WORKER_ARG) {
        return None;
    }
    let region = match Region::map(REGION_FD) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tilebook GPU worker: {e}");
            return Some(2);
        }
    };
    // SAFETY: plain libc calls. Ctrl-C in a terminal reaches the whole
    // process group; the session decides what an interrupt stops, so the
    // worker ignores it. It ends with the thread that started it (the
    // session's, which lives as long as the session) or, failing that,
    // notices its parent gone within a second of idling.
    let parent = unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::getppid()
    };
    if parent == 1 {
        return Some(0);
    }
    let mut w = Worker {
        region,
        gpus: HashMap::new(),
        bufs: HashMap::new(),
        funcs: HashMap::new(),
        loads: HashMap::new(),
        marks: HashMap::new(),
        comms: HashMap::new(),
        failure: None,
        launch_args: vec![],
    };
    // SAFETY: as above.
    let keep_going = || unsafe { libc::getppid() } == parent;
    let mut cmd = Vec::with_capacity(SLOT);
    while let Some(seq) = w.region.next(&keep_going, &mut cmd) {
        if !w.handle(seq, &cmd) {
            break;
        }
    }
    // Whatever the driver holds goes with the process.
    std::process::exit(0)
}

fn missing(what: &str, id: u64) -> String {
    format!("the GPU worker has no {what} {id} (already freed?)")
}

impl Worker {
    fn gpu(&self, dev: u32) -> Result<&Gpu, String> {
        self.gpus
            .get(&dev)
            .ok_or_else(|| format!("cuda:{dev} was not opened in the GPU worker"))
    }

    fn buf(&self, id: u64) -> Result<&(u32, DeviceBuffer), String> {
        self.bufs.get(&id).ok_or_else(|| missing("buffer", id))
    }

    fn answer(&self, seq: u64, e: Enc) {
        let n = e.0.len().min(STAGING);
        self.region.staging()[..n].copy_from_slice(&e.0[..n]);
        self.region.answer(seq, n);
    }

    fn quiet(&mut self, seq: u64, r: Result<(), String>) {
        if let Err(e) = r {
            self.failure.get_or_insert(e);
            self.region.set_failed();
        }
        self.region.done(seq);
    }

    /// Run one command; false ends the worker.
    fn handle(&mut self, seq: u64, cmd: &[u8]) -> bool {
        let mut d = Dec::new(cmd);
        let code = d.u8();
        match code {
            op::EXIT => {
                self.answer(seq, Enc::default());
                return false;
            }
            op::COUNT => self.answer(
                seq,
                Enc::default().u64(crate::driver::device_count() as u64),
            ),
            op::OPEN => {
                let dev = d.u32();
                let r = match self.gpus.get(&dev) {
                    Some(_) => Ok(()),
                    None => Gpu::open_device(dev).map(|g| {
                        self.gpus.insert(dev, g);
                    }),
                };
                let e = Enc::default().status(&r);
                let e = match self.gpus.get(&dev) {
                    Some(g) if r.is_ok() => e
                        .str(&g.name)
                        .str(&g.arch)
                        .u32(g.driver_version as u32)
                        .u64(g.total_memory as u64)
                        .u32(g.max_shared)
                        .u32(g.sm_count)
                        .u32(g.max_regs)
                        .str(g.loader().target()),
                    _ => e,
                };
                self.answer(seq, e);
            }
            op::ALLOC => {
                let (dev, id, bytes, zero) = (d.u32(), d.u64(), d.u64(), d.u8() != 0);
                let r = self.gpu(dev).and_then(|g| {
                    let bytes = usize::try_from(bytes).map_err(|e| e.to_string())?;
                    let b = if zero {
                        g.alloc(bytes)
                    } else {
                        g.alloc_uninit(bytes)
                    }?;
                    Ok(g.address(&b)).map(|a| (a, b))
                });
                let e = match r {
                    Ok((addr, b)) => {
                        self.bufs.insert(id, (dev, b));
                        Enc::default().status(&Ok(())).u64(addr)
                    }
                    Err(e) => Enc::default().status(&Err(e)),
                };
                self.answer(seq, e);
            }
            op::FREE => {
                self.bufs.remove(&d.u64());
                self.region.done(seq);
            }
            op::MEMINFO => {
                let (free, total) = self.gpu(d.u32()).map(Gpu::mem_info).unwrap_or((0, 0));
                self.answer(seq, Enc::default().u64(free as u64).u64(total as u64));
            }
            op::UPLOAD => {
                let (id, offset, len) = (d.u64(), d.u64() as usize, d.u64() as usize);
                let r = self.buf(id).and_then(|(dev, b)| {
                    let g = self.gpu(*dev)?;
                    check_range(b, offset, len)?;
                    let data = &self.region.staging()[..len.min(STAGING)];
                    g.upload_at(g.address(b) + offset as u64, data)
                });
                self.answer(seq, Enc::default().status(&r));
            }
            op::DOWNLOAD => {
                let (id, offset, len) = (d.u64(), d.u64() as usize, d.u64() as usize);
                let r = self.buf(id).and_then(|(dev, b)| {
                    let g = self.gpu(*dev)?;
                    check_range(b, offset, len)?;
                    let to = &mut self.region.staging()[DATA_AT..];
                    let to = &mut to[..len.min(STAGING - DATA_AT)];
                    g.download_at(g.address(b) + offset as u64, to)
                });
                match r {
                    Ok(()) => {
                        self.region.staging()[0] = 0;
                        self.region.answer(seq, DATA_AT + len);
                    }
                    Err(e) => self.answer(seq, Enc::default().status(&Err(e))),
                }
            }
            op::SYNC => {
                let r = self.gpu(d.u32()).and_then(Gpu::synchronize);
                self.answer(seq, Enc::default().status(&r));
            }
            op::FAULT => {
                let f = self.gpu(d.u32()).ok().and_then(Gpu::context_fault);
                let e = match f {
                    Some(f) => Enc::default().u8(1).str(&f),
                    None => Enc::default().u8(0),
                };
                self.answer(seq, e);
            }
            op::LOAD => self.load(seq, &mut d),
            op::LOAD_STATUS => {
                let id = d.u64();
                let e = match self.loads.get(&id) {
                    Some(h) if !h.is_finished() => Enc::default().u8(0),
                    Some(_) => {
                        let h = self.loads.remove(&id).expect("present above");
                        match h.join() {
                            Ok(Ok(f)) => {
                                let e = Enc::default()
                                    .u8(1)
                                    .u32(f.shared_bytes)
                                    .u32(f.threads)
                                    .u32(f.regs)
                                    .u32(f.local_bytes)
                                    .bytes(f.cubin.as_deref().unwrap_or(&[]));
                                self.funcs.insert(id, f);
                                e
                            }
                            Ok(Err(e)) => Enc::default().u8(2).str(&e),
                            Err(_) => Enc::default().u8(2).str("the module load panicked"),
                        }
                    }
                    None => Enc::default().u8(2).str(&missing("module load", id)),
                };
                self.answer(seq, e);
            }
            op::UNLOAD => {
                self.funcs.remove(&d.u64());
                self.region.done(seq);
            }
            op::LAUNCH => {
                let r = self.launch(&mut d);
                self.quiet(seq, r);
            }
            op::ZERO => {
                let (dev, id) = (d.u32(), d.u64());
                let r = match (self.gpus.get(&dev), self.bufs.get_mut(&id)) {
                    (Some(g), Some((_, b))) => g.zero(b),
                    _ => Err(missing("buffer", id)),
                };
                self.quiet(seq, r);
            }
            op::FILL => {
                let (dev, id, elem) = (d.u32(), d.u64(), d.bytes().to_vec());
                let r = match (self.gpus.get(&dev), self.bufs.get_mut(&id)) {
                    (Some(g), Some((_, b))) => g.fill(b, &elem).map(|_| ()),
                    _ => Err(missing("buffer", id)),
                };
                self.quiet(seq, r);
            }
            op::MARK => {
                let (dev, id) = (d.u32(), d.u64());
                let r = self.gpu(dev).and_then(Gpu::mark).map(|m| {
                    self.marks.insert(id, m);
                });
                self.quiet(seq, r);
            }
            op::ELAPSED => {
                let (dev, a, b) = (d.u32(), d.u64(), d.u64());
                let r = match (self.marks.get(&a), self.marks.get(&b)) {
                    (Some(a), Some(b)) => self.gpu(dev).and_then(|g| g.elapsed_ms(a, b)),
                    _ => Err(missing("timing event", a)),
                };
                let e = match r {
                    Ok(ms) => Enc::default().status(&Ok(())).u32(ms.to_bits()),
                    Err(e) => Enc::default().status(&Err(e)),
                };
                self.answer(seq, e);
            }
            op::UNMARK => {
                self.marks.remove(&d.u64());
                self.region.done(seq);
            }
            op::GEMM => {
                let r = self.gemm(&mut d);
                self.quiet(seq, r);
            }
            op::CAN_PEER => {
                let (a, b) = (d.u32(), d.u32());
                let yes = match (self.gpus.get(&a), self.gpus.get(&b)) {
                    (Some(a), Some(b)) => a.can_access_peer(b),
                    _ => false,
                };
                self.answer(seq, Enc::default().u8(yes as u8));
            }
            op::ENABLE_PEER => {
                let (a, b) = (d.u32(), d.u32());
                let r = self
                    .gpu(a)
                    .and_then(|ga| ga.enable_peer_access(self.gpu(b)?));
                self.answer(seq, Enc::default().status(&r));
            }
            op::WAIT_FOR => {
                let (a, b) = (d.u32(), d.u32());
                let r = self.gpu(a).and_then(|ga| ga.wait_for(self.gpu(b)?));
                self.quiet(seq, r);
            }
            op::COPY_PEER => {
                let (dd, di, sd, si, n) = (d.u32(), d.u64(), d.u32(), d.u64(), d.u64());
                let r = self.copy_peer(dd, di, sd, si, n as usize);
                self.quiet(seq, r);
            }
            op::COMM_NEW => {
                let id = d.u64();
                let devs: Vec<u32> = (0..d.u32().min(64)).map(|_| d.u32()).collect();
                let r = devs
                    .iter()
                    .map(|&o| self.gpu(o))
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|gs| Communicator::new(&gs))
                    .map(|c| {
                        self.comms.insert(id, c);
                    });
                self.answer(seq, Enc::default().status(&r));
            }
            op::COMM_RUN => {
                let r = self.collective(&mut d);
                self.answer(seq, Enc::default().status(&r));
            }
            op::COMM_DROP => {
                self.comms.remove(&d.u64());
                self.region.done(seq);
            }
            op::NCCL => {
                let e = match crate::nccl::nccl_version() {
                    Ok(v) => Enc::default().status(&Ok(())).u32(v as u32),
                    Err(e) => Enc::default().status(&Err(e)),
                };
                self.answer(seq, e.u8(crate::nccl::nccl_available() as u8));
            }
            op::TAKE_FAILURE => {
                let f = self.failure.take().unwrap_or_default();
                self.region.clear_failed();
                self.answer(seq, Enc::default().str(&f));
            }
            _ => {
                // Unknown command: an answer so a waiting session is not stuck.
                let e = format!("the GPU worker got an unknown command {code}");
                self.failure.get_or_insert(e.clone());
                self.region.set_failed();
                self.answer(seq, Enc::default().status(&Err(e)));
            }
        }
        true
    }

    /// Start a module load on a thread of its own (the driver's JIT runs in
    /// parallel for configs compiled together); the session asks for the
    /// result with `LOAD_STATUS`.
    fn load(&mut self, seq: u64, d: &mut Dec) {
        let (dev, id, name) = (d.u32(), d.u64(), d.str());
        let (shared, threads, is_cubin, len) = (d.u32(), d.u32(), d.u8() != 0, d.u64() as usize);
        let code = self.region.staging()[..len.min(STAGING)].to_vec();
        let r = self.gpu(dev).map(Gpu::loader).map(|loader| {
            std::thread::spawn(move || {
                if is_cubin {
                    loader.load_cubin(code.into(), &name, shared, threads)
                } else {
                    let ptx = String::from_utf8_lossy(&code);
                    loader.load(&ptx, &name, shared, threads)
                }
            })
        });
        let status = r.map(|h| {
            self.loads.insert(id, h);
        });
        self.answer(seq, Enc::default().status(&status));
    }

    fn launch(&mut self, d: &mut Dec) -> Result<(), String> {
        let (dev, fid) = (d.u32(), d.u64());
        let grid = [d.u32(), d.u32(), d.u32()];
        let n = d.u32().min(1024);
        // Decoded into a vector kept between launches (no allocation).
        let mut args = std::mem::take(&mut self.launch_args);
        args.clear();
        args.extend((0..n).map(|_| {
            let (tag, bits) = (d.u8(), d.u64());
            match tag {
                0 => Arg::Ptr(bits),
                1 => Arg::I32(bits as u32 as i32),
                2 => Arg::I64(bits as i64),
                3 => Arg::F32(f32::from_bits(bits as u32)),
                5 => {
                    let (dtype, rank) = (d.u32(), d.u32());
                    let dims = [d.u64(), d.u64(), d.u64(), d.u64(), d.u64()];
                    let strides = [d.u64(), d.u64(), d.u64(), d.u64()];
                    let boxes = [d.u32(), d.u32(), d.u32(), d.u32(), d.u32()];
                    let swizzle = d.u32();
                    Arg::TensorMap(crate::TensorMap {
                        addr: bits,
                        dtype,
                        rank,
                        dims,
                        strides,
                        boxes,
                        swizzle,
                        nan_fill: d.u8() != 0,
                    })
                }
                _ => Arg::F64(f64::from_bits(bits)),
            }
        }));
        let r = if d.short {
            Err("a malformed launch command reached the GPU worker".into())
        } else {
            match self.funcs.get(&fid) {
                Some(f) => self.gpu(dev).and_then(|g| g.launch(f, grid, &args)),
                None => Err(missing("kernel", fid)),
            }
        };
        self.launch_args = args;
        r
    }

    fn gemm(&mut self, d: &mut Dec) -> Result<(), String> {
        let dev = d.u32();
        let t = match d.u8() {
            0 => BlasType::F32,
            2 => BlasType::F16,
            _ => BlasType::BF16,
        };
        let dims = (d.u32() as i32, d.u32() as i32, d.u32() as i32);
        let mut operand = || Operand {
            ptr: d.u64(),
            trans: d.u8() != 0,
            ld: d.u32() as i32,
        };
        let (a, b) = (operand(), operand());
        let (c, ldc) = (d.u64(), d.u32() as i32);
        self.gpu(dev)?.gemm(t, dims, a, b, c, ldc)
    }

    fn copy_peer(&mut self, dd: u32, di: u64, sd: u32, si: u64, n: usize) -> Result<(), String> {
        let (_, mut dst) = self.bufs.remove(&di).ok_or_else(|| missing("buffer", di))?;
        let r = (|| {
            let (_, src) = self.buf(si)?;
            self.gpu(dd)?
                .copy_from_peer(&mut dst, self.gpu(sd)?, src, n)
        })();
        self.bufs.insert(di, (dd, dst));
        r
    }

    fn collective(&mut self, d: &mut Dec) -> Result<(), String> {
        let id = d.u64();
        let devs: Vec<u32> = (0..d.u32().min(64)).map(|_| d.u32()).collect();
        let (kind, opc, root) = (d.u8(), d.u8(), d.u32() as usize);
        let bufs: Vec<(u64, u64)> = (0..d.u32().min(64)).map(|_| (d.u64(), d.u64())).collect();
        let (count, ty) = (d.u64() as usize, d.u8());
        let red = [
            NcclOp::Sum,
            NcclOp::Prod,
            NcclOp::Max,
            NcclOp::Min,
            NcclOp::Avg,
        ];
        let red = red[(opc as usize).min(4)];
        let what = match kind {
            0 => Collective::AllReduce(red),
            1 => Collective::Broadcast { root },
            2 => Collective::AllGather,
            _ => Collective::ReduceScatter(red),
        };
        let types = [
            NcclType::I8,
            NcclType::U8,
            NcclType::I32,
            NcclType::I64,
            NcclType::F16,
            NcclType::BF16,
            NcclType::F32,
            NcclType::F64,
        ];
        let ty = types[(ty as usize).min(7)];
        let comm = self
            .comms
            .get(&id)
            .ok_or_else(|| missing("communicator", id))?;
        let gs = devs
            .iter()
            .map(|&o| self.gpu(o))
            .collect::<Result<Vec<_>, _>>()?;
        comm.run(&gs, what, &bufs, count, ty)
    }
}

fn check_range(b: &DeviceBuffer, offset: usize, len: usize) -> Result<(), String> {
    match offset.checked_add(len) {
        Some(end) if end <= b.bytes && len <= STAGING - DATA_AT => Ok(()),
        _ => Err(format!(
            "a copy of {len} bytes at offset {offset} does not fit a buffer of {} bytes",
            b.bytes
        )),
    }
}
