//! Element types (`DType`), pointer elements and block types of the tile IR.
//!
//! A `Type` is an element (`DType` or a pointer to one) with a shape; the
//! empty shape is a scalar. Text spellings follow Triton's (`fp16`, `*fp32`,
//! `<64x32xfp16>`), so they read the same in IR dumps and AOT signatures.

use std::fmt;

/// A scalar element type, with Triton's names.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    /// fp8 with 5 exponent and 2 mantissa bits (`tl.float8e5`, torch `float8_e5m2`).
    F8E5,
    /// fp8 with 4 exponent and 3 mantissa bits, no infinities (`tl.float8e4nv`, torch `float8_e4m3fn`).
    F8E4NV,
}

/// The kind order Triton uses when a Python scalar meets a tensor: bool < uint < int < float.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Bool,
    Uint,
    Int,
    Float,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E5,
        DType::F8E4NV,
    ];

    /// Triton's short name (`fp16`, `i32`, ...), used in IR text and signatures.
    pub fn name(self) -> &'static str {
        match self {
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "fp16",
            DType::BF16 => "bf16",
            DType::F32 => "fp32",
            DType::F64 => "fp64",
            DType::F8E5 => "fp8e5",
            DType::F8E4NV => "fp8e4nv",
        }
    }

    /// The `tl.` spelling (`tl.float16`), used in messages.
    pub fn tl_name(self) -> &'static str {
        match self {
            DType::I1 => "tl.int1",
            DType::I8 => "tl.int8",
            DType::I16 => "tl.int16",
            DType::I32 => "tl.int32",
            DType::I64 => "tl.int64",
            DType::U8 => "tl.uint8",
            DType::U16 => "tl.uint16",
            DType::U32 => "tl.uint32",
            DType::U64 => "tl.uint64",
            DType::F16 => "tl.float16",
            DType::BF16 => "tl.bfloat16",
            DType::F32 => "tl.float32",
            DType::F64 => "tl.float64",
            DType::F8E5 => "tl.float8e5",
            DType::F8E4NV => "tl.float8e4nv",
        }
    }

    pub fn from_name(s: &str) -> Option<DType> {
        let alias = match s {
            "fp8e4" => Some(DType::F8E4NV),
            "f32" => Some(DType::F32),
            "f16" => Some(DType::F16),
            "f64" => Some(DType::F64),
            "bf" => Some(DType::BF16),
            _ => None,
        };
        alias.or_else(|| DType::ALL.into_iter().find(|d| d.name() == s))
    }

    /// Bits of one element. `i1` is one bit in registers but a byte in memory.
    pub fn bits(self) -> u32 {
        match self {
            DType::I1 => 1,
            DType::I8 | DType::U8 | DType::F8E5 | DType::F8E4NV => 8,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::U64 | DType::F64 => 64,
        }
    }

    /// Bytes one element occupies in memory.
    pub fn size_bytes(self) -> usize {
        (self.bits().max(8) / 8) as usize
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E5 | DType::F8E4NV
        )
    }

    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E5 | DType::F8E4NV)
    }

    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    pub fn kind(self) -> Kind {
        if self == DType::I1 {
            Kind::Bool
        } else if self.is_unsigned_int() {
            Kind::Uint
        } else if self.is_signed_int() {
            Kind::Int
        } else {
            Kind::Float
        }
    }

    /// Mantissa bits (without the implicit one), for float promotion.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            DType::F16 => 10,
            DType::BF16 => 7,
            DType::F32 => 23,
            DType::F64 => 52,
            DType::F8E5 => 2,
            DType::F8E4NV => 3,
            _ => 0,
        }
    }

    /// The integer type of the same width and signedness `signed`.
    pub fn int_of_bits(bits: u32, signed: bool) -> DType {
        match (bits, signed) {
            (1, _) => DType::I1,
            (8, true) => DType::I8,
            (16, true) => DType::I16,
            (32, true) => DType::I32,
            (64, true) => DType::I64,
            (8, false) => DType::U8,
            (16, false) => DType::U16,
            (32, false) => DType::U32,
            _ => DType::U64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one element of a value is: a number or a pointer to numbers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    Scalar(DType),
    Ptr(DType),
}

impl Elem {
    pub fn dtype(self) -> Option<DType> {
        match self {
            Elem::Scalar(d) => Some(d),
            Elem::Ptr(_) => None,
        }
    }
    pub fn is_ptr(self) -> bool {
        matches!(self, Elem::Ptr(_))
    }
    pub fn pointee(self) -> Option<DType> {
        match self {
            Elem::Ptr(d) => Some(d),
            Elem::Scalar(_) => None,
        }
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Scalar(d) => write!(f, "{d}"),
            Elem::Ptr(d) => write!(f, "*{d}"),
        }
    }
}

/// The type of an IR value: an element and a shape (empty for scalars).
/// Block dimensions are powers of two, as in Triton.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    pub elem: Elem,
    pub shape: Vec<usize>,
}

impl Type {
    pub fn scalar(d: DType) -> Type {
        Type {
            elem: Elem::Scalar(d),
            shape: vec![],
        }
    }
    pub fn ptr(d: DType) -> Type {
        Type {
            elem: Elem::Ptr(d),
            shape: vec![],
        }
    }
    pub fn block(elem: Elem, shape: Vec<usize>) -> Type {
        Type { elem, shape }
    }
    pub fn is_block(&self) -> bool {
        !self.shape.is_empty()
    }
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn dtype(&self) -> Option<DType> {
        self.elem.dtype()
    }
    /// The same shape with another element.
    pub fn with_elem(&self, elem: Elem) -> Type {
        Type {
            elem,
            shape: self.shape.clone(),
        }
    }
    pub fn with_shape(&self, shape: Vec<usize>) -> Type {
        Type {
            elem: self.elem,
            shape,
        }
    }
    /// Parse `i32`, `*fp16`, `<64x32xfp16>`, `<8x*fp32>`.
    pub fn parse(s: &str) -> Option<Type> {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
            let mut shape = Vec::new();
            let mut rest = inner;
            loop {
                let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
                if digits == 0 || !rest[digits..].starts_with('x') {
                    break;
                }
                shape.push(rest[..digits].parse().ok()?);
                rest = &rest[digits + 1..];
            }
            // Every block's element count fits in 2^31 (the front end keeps
            // them far smaller); a text claiming more is not a type.
            let numel = shape
                .iter()
                .try_fold(1usize, |n: usize, &d| n.checked_mul(d))?;
            if shape.is_empty() || numel > 1 << 31 {
                return None;
            }
            return Some(Type {
                elem: parse_elem(rest)?,
                shape,
            });
        }
        Some(Type {
            elem: parse_elem(s)?,
            shape: vec![],
        })
    }
}

fn parse_elem(s: &str) -> Option<Elem> {
    match s.strip_prefix('*') {
        Some(d) => DType::from_name(d).map(Elem::Ptr),
        None => DType::from_name(s).map(Elem::Scalar),
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shape.is_empty() {
            return write!(f, "{}", self.elem);
        }
        f.write_str("<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.elem)
    }
}

/// Numpy-style broadcasting of two shapes (the shorter padded with leading 1s).
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_text_round_trips() {
        for s in [
            "i32",
            "*fp16",
            "<1024xfp32>",
            "<64x32x*bf16>",
            "<2x4x8xfp8e4nv>",
            "i1",
        ] {
            let t = Type::parse(s).unwrap();
            assert_eq!(t.to_string(), s);
        }
        assert!(Type::parse("<x>").is_none());
        assert!(Type::parse("f17").is_none());
    }
}
