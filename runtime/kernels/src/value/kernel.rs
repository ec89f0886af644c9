//! The kernel objects values hold: a `@triton.jit` function with its
//! compile cache, what `@triton.autotune` asked for, one compiled
//! specialization. They live beside `Val` because each holds the other;
//! what is done with them is in `kernels` and `autotune`.

use super::{Config, Scope, Val};
use crate::Host;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_cpu::CpuKernel;
use tilebook_frontend::kernel::JitFunction;

/// One compiled specialization and its inspection texts.
pub struct Compiled {
    pub key: String,
    pub signature: String,
    pub tir: String,
    /// The CPU kernel: built when no GPU is in use, or as the reference when
    /// GPU launches are cross-checked (`TILEBOOK_CHECK_GPU=1`).
    pub kernel: Option<CpuKernel>,
    /// PTX and the loaded function when the session runs on a GPU.
    pub gpu: Option<(tilebook_nvptx::GpuKernel, tilebook_cuda::GpuFunction)>,
    pub compile_seconds: f64,
    /// Not launched yet (its first launch reports the compile time).
    pub fresh: Cell<bool>,
    /// Seconds per stage, front end to loaded module (`kernel.stages`).
    pub stages: Vec<(&'static str, f64)>,
    /// Loaded from the disk cache instead of compiled in this session.
    pub from_disk: bool,
    /// The launch's `num_warps` (the CPU backend reports it as given).
    pub num_warps: u32,
    /// The GPU code loaded on devices other than the backend's, by ordinal
    /// (from the driver's cubin, loaded on a device's first launch).
    pub on_other_gpus: RefCell<Vec<(u32, Rc<tilebook_cuda::GpuFunction>)>>,
    /// The `CompiledKernel` object a launch returns, made on the first
    /// launch and shared by the later ones (no allocation per launch).
    pub object: RefCell<Option<crate::value::Val>>,
    /// The options the GPU code was built with.
    pub gpu_options: Option<tilebook_nvptx::GpuOptions>,
    /// The same specialization built without bulk copies for pointer loads
    /// (`GpuOptions::pointer_maps`), on the device of that ordinal: made for
    /// the first launch whose arguments their tensor maps cannot describe.
    pub plain: RefCell<Option<PlainBuild>>,
}

/// `Compiled::plain`: a device ordinal, the code and its loaded function.
pub type PlainBuild = (
    u32,
    Rc<(tilebook_nvptx::GpuKernel, tilebook_cuda::GpuFunction)>,
);

impl Compiled {
    /// The GPU function for another device than the one it was compiled
    /// for: loaded there from the cubin (or the PTX) on first use.
    pub fn function_on(
        &self,
        g: &tilebook_cuda::Gpu,
    ) -> Result<Rc<tilebook_cuda::GpuFunction>, String> {
        if let Some((_, f)) = self
            .on_other_gpus
            .borrow()
            .iter()
            .find(|(o, _)| *o == g.ordinal)
        {
            return Ok(f.clone());
        }
        let Some((gk, f)) = &self.gpu else {
            return Err("no GPU code was compiled".into());
        };
        let loader = g.loader();
        let threads = 32 * gk.num_warps;
        let loaded = match &f.cubin {
            Some(c) => loader
                .load_cubin(c.clone(), &gk.name, gk.shared_bytes, threads)
                .or_else(|_| loader.load(&gk.ptx, &gk.name, gk.shared_bytes, threads)),
            None => loader.load(&gk.ptx, &gk.name, gk.shared_bytes, threads),
        };
        let f = Rc::new(loaded?);
        self.on_other_gpus.borrow_mut().push((g.ordinal, f.clone()));
        Ok(f)
    }
}

/// A `@triton.jit` function as the session holds it.
pub struct KernelObj {
    pub jit: RefCell<Rc<JitFunction>>,
    pub defaults: RefCell<HashMap<String, Val>>,
    pub cache: RefCell<HashMap<String, Rc<Compiled>>>,
    /// Specializations whose compile failed, with the error (an autotuning
    /// config that needs more shared memory than the GPU has is refused
    /// again at once, not generated again each time the tuner runs).
    pub failed: RefCell<HashMap<String, crate::value::Exc>>,
    /// How many specializations were compiled (for tests and `%cache`).
    pub compiles: Cell<usize>,
    /// The specialization launched or compiled last (what `%ptx` shows).
    pub last: RefCell<Option<Rc<Compiled>>>,
    /// `@triton.autotune(...)` around the kernel.
    pub autotune: RefCell<Option<Rc<Autotuner>>>,
    /// `@triton.heuristics({...})`: meta-parameters computed from the arguments.
    pub heuristics: RefCell<Vec<(String, Val)>>,
    /// The module namespace its global names resolve in, when it is not
    /// the session's (tilebook's own stdlib kernels).
    pub namespace: Option<Namespace>,
    /// The source part of the cache key (a digest of the kernel's text, its
    /// callees' and the constants they name), with the namespace snapshot
    /// and body it was computed for: reused while both are the same objects.
    pub(crate) source_memo: RefCell<Option<SourceMemo>>,
    /// The last launch's cache key, what it was made from and the code it
    /// found: a launch specialized like the one before (a loop's) reuses
    /// them without formatting the key or looking it up.
    pub(crate) key_memo: RefCell<Option<KeyMemo>>,
    /// `@triton.jit(launch_metadata=fn)`: what a profiler hook names each
    /// launch by (`fn(grid, kernel, args)` returns a dict with "name" and
    /// metrics).
    pub launch_metadata: RefCell<Option<Val>>,
}

/// A source digest with the namespace snapshot and body it was made for.
pub(crate) type SourceMemo = (Scope, Rc<JitFunction>, Rc<str>);

/// A cache key with everything it was made from (see `KernelObj::key_memo`)
/// and, once a launch found or compiled it, the code.
pub(crate) struct KeyMemo {
    pub(crate) digest: Rc<str>,
    pub(crate) specs: Vec<tilebook_frontend::kernel::ArgSpec>,
    pub(crate) meta: Vec<(String, tilebook_frontend::kernel::ConstVal)>,
    pub(crate) options: tilebook_frontend::kernel::CompileOptions,
    pub(crate) check_bounds: bool,
    /// The GPU's architecture and context generation; `None` on the CPU.
    pub(crate) target: Option<(String, u32)>,
    pub(crate) key: Rc<str>,
    pub(crate) compiled: Option<Rc<Compiled>>,
}

/// Where a kernel's global names resolve.
#[derive(Clone)]
pub enum Namespace {
    /// A fixed module namespace (tilebook's own stdlib kernels).
    Scope(Scope),
    /// A Python module's globals, read when the kernel is launched or
    /// compiled: the closure gives the names the kernel uses as values.
    Host(Rc<dyn Fn(&JitFunction) -> Scope>),
}

impl KernelObj {
    pub fn new(jit: JitFunction, defaults: HashMap<String, Val>) -> KernelObj {
        KernelObj::new_shared(Rc::new(jit), defaults)
    }

    /// A new kernel object for a decorator to configure: the same body and
    /// defaults with a compile cache of its own, so that
    /// `tuned = triton.autotune(...)(kernel)` leaves `kernel` as it was.
    pub fn wrapped(&self) -> KernelObj {
        let k = KernelObj::new_shared(self.jit.borrow().clone(), self.defaults.borrow().clone());
        *k.autotune.borrow_mut() = self.autotune.borrow().clone();
        *k.heuristics.borrow_mut() = self.heuristics.borrow().clone();
        *k.launch_metadata.borrow_mut() = self.launch_metadata.borrow().clone();
        KernelObj {
            namespace: self.namespace.clone(),
            ..k
        }
    }

    /// A kernel whose global names resolve in `ns` rather than the session.
    pub fn in_namespace(jit: JitFunction, ns: Scope) -> KernelObj {
        KernelObj {
            namespace: Some(Namespace::Scope(ns)),
            ..KernelObj::new(jit, HashMap::new())
        }
    }

    pub fn with_namespace(
        jit: JitFunction,
        defaults: HashMap<String, Val>,
        ns: Namespace,
    ) -> KernelObj {
        KernelObj {
            namespace: Some(ns),
            ..KernelObj::new(jit, defaults)
        }
    }

    /// Forget every compiled specialization (and the failed ones).
    pub fn clear_compiled(&self) {
        self.cache.borrow_mut().clear();
        self.failed.borrow_mut().clear();
        *self.key_memo.borrow_mut() = None;
    }

    /// Whether it is one of tilebook's own kernels (behind a torch
    /// operation), whose names resolve in a fixed module namespace.
    pub fn is_library(&self) -> bool {
        matches!(self.namespace, Some(Namespace::Scope(_)))
    }

    /// Whether its names resolve in a Python module's globals.
    pub fn is_host(&self) -> bool {
        matches!(self.namespace, Some(Namespace::Host(_)))
    }

    /// The namespace its global names resolve in.
    pub fn scope(&self, s: &dyn Host) -> Scope {
        match &self.namespace {
            Some(Namespace::Scope(ns)) => ns.clone(),
            Some(Namespace::Host(f)) => f(&self.jit.borrow()),
            None => s.globals(),
        }
    }

    fn new_shared(jit: Rc<JitFunction>, defaults: HashMap<String, Val>) -> KernelObj {
        KernelObj {
            jit: RefCell::new(jit),
            defaults: RefCell::new(defaults),
            cache: RefCell::new(HashMap::new()),
            failed: RefCell::new(HashMap::new()),
            compiles: Cell::new(0),
            last: RefCell::new(None),
            autotune: RefCell::new(None),
            heuristics: RefCell::new(vec![]),
            namespace: None,
            source_memo: RefCell::new(None),
            key_memo: RefCell::new(None),
            launch_metadata: RefCell::new(None),
        }
    }

    /// Replace the body (a cell redefined the kernel).
    pub fn redefine(&self, jit: JitFunction, defaults: HashMap<String, Val>) {
        *self.jit.borrow_mut() = Rc::new(jit);
        *self.defaults.borrow_mut() = defaults;
    }
}

/// What `@triton.autotune(...)` asked for, and what it learned.
pub struct Autotuner {
    pub configs: Vec<Rc<Config>>,
    pub key: Vec<String>,
    /// `key` names that are not parameters: ignored, as Triton ignores
    /// them, and said once at the first tuning.
    pub ignored_keys: Vec<String>,
    pub reset_to_zero: Vec<String>,
    pub restore_value: Vec<String>,
    /// `prune_configs_by`: `early_config_prune(configs, named_args, **kwargs)`,
    /// then `perf_model(**named_args, **config, num_warps, num_stages)` and `top_k`.
    pub early_prune: Option<Val>,
    pub perf_model: Option<Val>,
    pub top_k: Option<Val>,
    /// Milliseconds of warm-up and of measured calls per config.
    pub warmup: f64,
    pub rep: f64,
    /// The best config per tuning key.
    pub cache: RefCell<HashMap<String, Rc<Config>>>,
    /// The config of the latest launch (`kernel.best_config`).
    pub best: RefCell<Option<Rc<Config>>>,
    /// Skipped configs already reported (each is said once per kernel).
    pub reported: RefCell<std::collections::HashSet<String>>,
}
