//! What leaves the GPU: the element type of the frames a [`crate::FrameProducer`] reads back
//! (f16 is made by the pack pass in `f16_pack.rs`), or a ZFP stream of them (`zfp/`).

use crate::zfp::ZfpRate;

/// The element type of the fields a [`crate::FrameProducer`] hands out. The kernels always
/// compute in f32; this is what leaves the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutputDType {
    /// IEEE binary32, the values as computed (the default).
    #[default]
    F32,
    /// IEEE binary16, converted on the GPU with WGSL's `pack2x16float`: half the bytes, 11
    /// significant bits (a relative rounding error of at most 2^-11 for normal values).
    /// Values beyond binary16's range (±65504) have no defined conversion in WGSL.
    F16,
}

impl OutputDType {
    /// Both types, as configs list them.
    pub const ALL: [OutputDType; 2] = [OutputDType::F32, OutputDType::F16];

    /// Bytes of one element.
    pub fn size(self) -> u64 {
        match self {
            OutputDType::F32 => 4,
            OutputDType::F16 => 2,
        }
    }

    /// `f32` or `f16`, the spelling of configs (`output.dtype`).
    pub fn name(self) -> &'static str {
        match self {
            OutputDType::F32 => "f32",
            OutputDType::F16 => "f16",
        }
    }
}

impl std::fmt::Display for OutputDType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How each field a [`crate::FrameProducer`] reads back leaves the GPU: its values, or its
/// values compressed on the device (only the compressed bytes are read back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldEncoding {
    /// The values, as f32 or converted to f16.
    Values(OutputDType),
    /// The f32 values as a ZFP fixed-rate stream at this rate, the array without its axes of
    /// size 1 ([`crate::zfp::ZfpField::squeezed`]): each field's bytes are
    /// [`crate::zfp::ZfpField::stream_bytes`] long, byte for byte what the zfp C library writes.
    Zfp(ZfpRate),
}

impl Default for FieldEncoding {
    fn default() -> Self {
        FieldEncoding::Values(OutputDType::F32)
    }
}

impl From<OutputDType> for FieldEncoding {
    fn from(dtype: OutputDType) -> Self {
        FieldEncoding::Values(dtype)
    }
}
