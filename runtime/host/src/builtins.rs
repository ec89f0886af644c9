//! The notebook builtins (`display`, `clear_output`) and `tilebook.trace`,
//! `len`/`abs` of library values, `triton.Config`, the driver object, and
//! the attributes of configs, devices, dtypes and exceptions.

use crate::args::{to_int, Args};
use crate::ops::map_tensor;
use crate::registry::Entry;
use crate::tensor::{Device, Scalar};
use crate::value::{Config, Exc, Val, R};
use crate::Engine;
use std::cell::RefCell;
use std::rc::Rc;
use tilebook_tir::DType;

impl Engine {
    /// `triton.runtime.driver.active`.
    pub fn active_driver(&self) -> Val {
        Val::object(
            "Driver",
            vec![
                (
                    "get_current_target",
                    Val::Builtin(Rc::from("driver.get_current_target")),
                ),
                (
                    "get_active_torch_device",
                    Val::Builtin(Rc::from("driver.get_active_torch_device")),
                ),
                (
                    "utils",
                    Val::object(
                        "DriverUtils",
                        vec![(
                            "get_device_properties",
                            Val::Builtin(Rc::from("driver.get_device_properties")),
                        )],
                    ),
                ),
            ],
        )
    }

    /// `driver.active.utils.get_device_properties(index)`, the keys Triton's
    /// CUDA driver gives. On the CPU backend: one "multiprocessor" per
    /// hardware thread and GPU-like limits, so occupancy arithmetic in host
    /// code still yields a sensible program count.
    pub fn device_properties(&self) -> Val {
        let (sms, regs, smem) = match &self.backend {
            crate::Backend::Cuda(g) => (g.sm_count as i64, g.max_regs as i64, g.max_shared as i64),
            crate::Backend::Cpu => (
                std::thread::available_parallelism().map_or(1, |n| n.get()) as i64,
                65536,
                232448,
            ),
        };
        let items = [
            ("multiprocessor_count", sms),
            ("max_num_regs", regs),
            ("max_shared_mem", smem),
            ("warpSize", 32),
        ];
        Val::Dict(Rc::new(RefCell::new(
            items
                .iter()
                .map(|(k, v)| (Val::str(k), Val::Int(*v)))
                .collect(),
        )))
    }

    pub fn stdout(&mut self, text: &str) {
        self.emit_stream("stdout", text);
    }
}

impl Engine {
    pub fn device_arg(&mut self, v: Option<Val>) -> R<Device> {
        let d = match v {
            None | Some(Val::None) => Device::Cpu,
            Some(Val::Device(d)) => d,
            // A bare 'cuda' is the current device, as in torch.
            Some(Val::Str(s)) if &*s == "cuda" => Device::Cuda(self.current_device),
            Some(Val::Str(s)) => crate::tensor_lib::parse_device(&s)?,
            Some(other) => {
                return Err(Exc::type_error(format!(
                    "device must be a string or torch.device, got {}",
                    other.type_name()
                )))
            }
        };
        if let Device::Cuda(i) = d {
            self.check_cuda_index(i as i64)?;
            self.announce_backend();
            return Ok(Device::Cuda(self.remapped(i)));
        }
        Ok(d)
    }

    /// The GPUs `torch.cuda.device_count()` reports: those the driver shows
    /// when the session runs on a GPU, none on the CPU backend (where
    /// `cuda:0` tensors are host memory, as `is_available()` says).
    pub fn cuda_device_count(&self) -> usize {
        match &self.backend {
            crate::Backend::Cuda(_) => tilebook_cuda::device_count().max(1),
            crate::Backend::Cpu => 0,
        }
    }

    /// `cuda:i` names a device of the machine (`devices::check_index`):
    /// on the CPU backend only cuda:0, which is host memory.
    pub fn check_cuda_index(&self, i: i64) -> R<u32> {
        tilebook_kernels::devices::check_index(i, self.cuda_device_count())
            .map_err(|(kind, m)| Exc::new(kind, m))
    }

    pub fn next_u64(&mut self) -> u64 {
        // splitmix64: small, fast, and the same on every machine for a seed.
        self.rng = self.rng.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform number in [0, 1) on the grid of `dtype`'s significand (24
    /// bits for fp32, 11 for fp16, 8 for bf16), so that rounding it to the
    /// dtype never gives 1.0 (as torch.rand never does).
    pub fn uniform_for(&mut self, dtype: DType) -> f64 {
        let bits = match dtype {
            DType::F16 => 11,
            DType::BF16 => 8,
            DType::F32 => 24,
            _ => 53,
        };
        (self.next_u64() >> (64 - bits)) as f64 / (1u64 << bits) as f64
    }

    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The notebook builtins (as IPython provides them) and `tilebook`.
pub const TABLE: &[Entry] = &[
    Entry {
        name: "tilebook.trace",
        f: tilebook_trace,
        doc: r#"tilebook.trace(kernel[grid], *args, **kwargs)
Launch on the CPU backend with every load and store lane recorded, and
return a Trace: t.visiting_order(out, wave=None) draws which program
wrote each output tile, in launch order (with wave=n, the first n
programs are outlined and the bytes they load are counted);
t.mask_view(pid=0) draws each load and store of one program, lanes
coloured by the mask. The launch is real: outputs are written.
"#,
    },
    Entry {
        name: "display",
        f: display,
        doc: "IPython.display.display(*objs): show values as cell outputs (rich MIME where they have it).",
    },
    Entry {
        name: "clear_output",
        f: clear_output,
        doc: "IPython.display.clear_output(wait=False): clear this cell's outputs so far.",
    },
];

fn tilebook_trace(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let mut pos = a.pos;
    if pos.is_empty() {
        return Err(Exc::type_error(
            "tilebook.trace(kernel[grid], *args, **kwargs)",
        ));
    }
    let launcher = pos.remove(0);
    crate::trace::trace(s, &launcher, pos, a.kw)
}

fn display(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    for v in &a.pos {
        let text = v.repr();
        s.display(vec![("text/plain".into(), text)]);
    }
    Ok(Val::None)
}

fn clear_output(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let wait = a
        .kw("wait")
        .map(|v| v.truth())
        .transpose()?
        .unwrap_or(false);
    s.clear_output(wait);
    Ok(Val::None)
}

pub fn len(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let v = a.req(0, "obj")?;
    Ok(Val::Int(match &v {
        Val::Str(x) => x.chars().count(),
        Val::List(l) => l.borrow().len(),
        Val::Tuple(t) => t.len(),
        Val::Object(_) if v.named_tuple_items().is_some() => 2,
        Val::Dict(d) => d.borrow().len(),
        Val::Range(..) => s.iterate(&v)?.len(),
        Val::Tensor(t) => *t
            .shape
            .first()
            .ok_or_else(|| Exc::type_error("len() of a 0-d tensor"))?,
        other => {
            return Err(Exc::type_error(format!(
                "object of type '{}' has no len()",
                other.type_name()
            )))
        }
    } as i64))
}

pub fn abs(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    match a.req(0, "x")? {
        Val::Int(i) => Ok(Val::Int(i.abs())),
        Val::Float(f) => Ok(Val::Float(f.abs())),
        Val::Bool(b) => Ok(Val::Int(b as i64)),
        Val::Tensor(t) => match crate::device_ops::unary(s, &t, "abs")? {
            Some(v) => Ok(v),
            None => Ok(Val::tensor(map_tensor(&t, t.dtype, |x| match x {
                Scalar::F(f) => Scalar::F(f.abs()),
                o => Scalar::I(o.i().abs()),
            }))),
        },
        other => Err(Exc::type_error(format!(
            "bad operand type for abs(): '{}'",
            other.type_name()
        ))),
    }
}

/// `triton.Config(kwargs, num_warps=4, num_stages=3, ...)`.
pub fn make_config(a: &Args) -> R<Val> {
    let kwargs = match a.get(0, "kwargs") {
        Some(Val::Dict(d)) => d
            .borrow()
            .iter()
            .map(|(k, v)| (k.to_str(), v.clone()))
            .collect(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "triton.Config expects a dict of meta-parameters, got {}",
                other.type_name()
            )))
        }
        None => vec![],
    };
    let num_warps = a
        .kw("num_warps")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(4);
    let num_stages = a
        .kw("num_stages")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(3);
    let pre_hook = a.kw("pre_hook").filter(|h| !matches!(h, Val::None));
    let maxnreg = a
        .kw("maxnreg")
        .filter(|v| !matches!(v, Val::None))
        .map(|v| to_int(&v))
        .transpose()?;
    Ok(Val::Config(Rc::new(Config {
        kwargs,
        num_warps,
        num_stages,
        maxnreg,
        pre_hook,
    })))
}

/// The attributes of configs, devices, dtypes and caught exceptions.
pub fn value_attr(v: &Val, name: &str) -> R<Val> {
    match v {
        Val::Config(c) => match name {
            "kwargs" => Ok(Val::Dict(Rc::new(RefCell::new(
                c.kwargs
                    .iter()
                    .map(|(k, v)| (Val::str(k), v.clone()))
                    .collect(),
            )))),
            "num_warps" => Ok(Val::Int(c.num_warps)),
            "num_stages" => Ok(Val::Int(c.num_stages)),
            "maxnreg" => Ok(c.maxnreg.map_or(Val::None, Val::Int)),
            _ => Err(Exc::new(
                "AttributeError",
                format!("'Config' object has no attribute '{name}'"),
            )),
        },
        Val::Device(d) => match name {
            "type" => Ok(Val::str(if matches!(d, Device::Cpu) {
                "cpu"
            } else {
                "cuda"
            })),
            "index" => Ok(match d {
                Device::Cuda(i) => Val::Int(*i as i64),
                Device::Cpu => Val::None,
            }),
            _ => Err(Exc::new(
                "AttributeError",
                format!("'device' object has no attribute '{name}'"),
            )),
        },
        Val::DType(d, _) => match name {
            "itemsize" => Ok(Val::Int(d.size_bytes() as i64)),
            "is_floating_point" => Ok(Val::Bool(d.is_float())),
            _ => Err(Exc::new(
                "AttributeError",
                format!("'dtype' object has no attribute '{name}'"),
            )),
        },
        Val::Exception(e) => match name {
            "args" => Ok(Val::tuple(vec![Val::str(&e.message)])),
            _ => Err(Exc::new(
                "AttributeError",
                format!("exception has no attribute '{name}'"),
            )),
        },
        other => Err(Exc::new(
            "AttributeError",
            format!("'{}' object has no attribute '{name}'", other.type_name()),
        )),
    }
}
