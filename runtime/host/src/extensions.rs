//! What the session layer adds to host code, registered when a session is
//! made: native functions by qualified name (`triton.testing.perf_report`),
//! the methods of its object types (`Mark.run`, a `Trace`'s pictures) and
//! the handler of `%magic` lines. The engine looks here before its own
//! tables, so this crate never names the crate above it.

use crate::value::{Args, Object, Val, R};
use crate::Engine;
use std::collections::HashMap;

pub type NativeFn = fn(&mut Engine, Args) -> R<Val>;
pub type MethodFn = fn(&mut Engine, &Object, &str, &Args) -> R<Val>;
pub type MagicFn = fn(&mut Engine, &str) -> R<Val>;

/// A native function: the function and its `help()` text.
#[derive(Clone, Copy)]
pub struct Native {
    pub f: NativeFn,
    pub doc: &'static str,
}

/// The methods of one object type: the dispatcher and the names it
/// answers (what completion and `dir()` list).
#[derive(Clone, Copy)]
pub struct Methods {
    pub f: MethodFn,
    pub names: &'static [&'static str],
}

#[derive(Default)]
pub struct Extensions {
    pub natives: HashMap<&'static str, Native>,
    pub methods: HashMap<&'static str, Methods>,
    pub magic: Option<MagicFn>,
}

impl Extensions {
    pub fn native(&mut self, name: &'static str, f: NativeFn, doc: &'static str) {
        self.natives.insert(name, Native { f, doc });
    }

    pub fn methods(
        &mut self,
        type_name: &'static str,
        f: MethodFn,
        names: &'static [&'static str],
    ) {
        self.methods.insert(type_name, Methods { f, names });
    }
}

impl Engine {
    /// Run a `%magic` line through the session's handler.
    pub fn magic(&mut self, text: &str) -> R<Val> {
        match self.extensions.magic {
            Some(f) => f(self, text),
            None => Err(crate::value::Exc::new(
                "UsageError",
                "magics need a session (this engine runs without one)",
            )),
        }
    }
}
