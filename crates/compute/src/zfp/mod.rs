//! ZFP fixed-rate compression on the GPU, before readback: only the compressed bytes leave
//! the device.
//!
//! ZFP (Lindstrom 2014, <https://zfp.io>) cuts an array of 1 to 3 dimensions into blocks of
//! 4, 4 × 4 or 4 × 4 × 4 values and codes each block on its own. In its *fixed-rate* mode every
//! block takes exactly `R · 4^d` bits (R bits per value), so the blocks can be coded in
//! parallel, one GPU invocation each, and the compressed stream is their concatenation. The
//! stream [`ZfpEncoder`] writes is byte for byte what the zfp C library (1.0, as built by
//! default) writes for the same array with `zfp_stream_set_rate(stream, R, zfp_type_float,
//! d, 0)` and `zfp_compress`: any ZFP reader that is given the shape and the rate decodes it
//! (the H5Z-ZFP filter, numcodecs' zfpy, zarrs' zfp codec, `zfp_decompress`).
//!
//! What a fixed rate means for the error: the rate bounds the bytes exactly, not the error;
//! smooth fields lose least. zfp's own guide (`docs/source/modes.rst`) gives the error bounds.
//!
//! Partial blocks at the grid's far edges are padded as zfp pads them, so every grid size is
//! encoded. Values must be finite: zfp gives NaN and infinity no defined encoding.

mod encoder;
pub(crate) mod packer;
mod unrolled;

pub use encoder::{ZfpBinding, ZfpEncoder};

use crate::error::{Error, Result};
use crate::grid::Grid;

/// Bits per value of ZFP's fixed-rate mode: 1 to 32 for f32 fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZfpRate(u32);

impl ZfpRate {
    /// The rates a fixed-rate f32 stream can have.
    pub const RANGE: std::ops::RangeInclusive<u32> = 1..=32;

    /// `bits` per value; an error names the range when it lies outside 1 to 32.
    pub fn new(bits: u32) -> Result<Self> {
        if Self::RANGE.contains(&bits) {
            Ok(ZfpRate(bits))
        } else {
            Err(Error::InvalidEncoding {
                what: format!("ZFP rate {bits}"),
                message: "a fixed rate is 1 to 32 bits per f32 value".to_owned(),
            })
        }
    }

    /// Bits per value.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Bits of one block of a `dims`-dimensional array, as `zfp_stream_set_rate` sets them
    /// (rounded to whole bits, at least the 9 bits of a block's exponent; not word-aligned).
    pub fn block_bits(self, dims: usize) -> u32 {
        let values = 1u32 << (2 * dims.clamp(1, 3));
        (self.0 * values).max(9)
    }
}

/// Where an f32 field's cells lie in its buffer: a [`Grid`]'s shape, with element strides that
/// need not be the grid's own (a block of a split grid sits inside a buffer with ghost layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZfpField {
    grid: Grid,
    /// Elements between neighbours along `[z, y, x]`.
    strides: [usize; 3],
    /// The element of cell (0, 0, 0).
    offset: usize,
}

impl ZfpField {
    /// A field stored as the grid stores it: C order, no gaps.
    pub fn contiguous(grid: Grid) -> Self {
        ZfpField { grid, strides: [grid.ny() * grid.nx(), grid.nx(), 1], offset: 0 }
    }

    /// A contiguous field of `grid`'s cells encoded as an array without its axes of size 1
    /// (a 1 × 64 × 64 grid as 64 × 64), as the H5Z-ZFP filter encodes an HDF5 chunk: what
    /// [`crate::FrameProducer`] writes for [`crate::FieldEncoding::Zfp`].
    pub fn squeezed(grid: &Grid) -> Self {
        let shape: Vec<usize> = grid.shape().iter().copied().filter(|&n| n > 1).collect();
        // The same cells (at most the grid's, so a valid grid), rank 1 for a single cell.
        let squeezed = Grid::new(if shape.is_empty() { &[1] } else { &shape }).unwrap_or(*grid);
        ZfpField::contiguous(squeezed)
    }

    /// The cells of a block of extent `shape` (1 to 3 axes, C order) whose cell `i` is
    /// element `offset + Σ i[a]·strides[a]` of its buffer, encoded as an array without its axes
    /// of size 1 (as [`ZfpField::squeezed`]): a rank's block of a split grid inside its
    /// buffer with ghost layers, coded as the Zarr chunk of that block is. Errors for a shape
    /// the encoder cannot take, or strides of another length.
    pub fn squeezed_within(shape: &[usize], strides: &[usize], offset: usize) -> Result<Self> {
        if strides.len() != shape.len() {
            return Err(Error::InvalidEncoding {
                what: format!("ZFP encoding of a block of shape {shape:?}"),
                message: format!("{} strides given for its {} axes", strides.len(), shape.len()),
            });
        }
        let kept: Vec<(usize, usize)> =
            shape.iter().copied().zip(strides.iter().copied()).filter(|&(n, _)| n > 1).collect();
        let coded: Vec<usize> = if kept.is_empty() { vec![1] } else { kept.iter().map(|&(n, _)| n).collect() };
        // [sz, sy, sx], the coded axes right-aligned (an absent axis has one cell).
        let mut along = [0usize; 3];
        for (slot, &(_, stride)) in along.iter_mut().rev().zip(kept.iter().rev()) {
            *slot = stride;
        }
        Ok(ZfpField::strided(Grid::new(&coded)?, along, offset))
    }

    /// A field of `grid`'s shape whose cell (z, y, x) is element `offset + z·sz + y·sy + x·sx`
    /// of its buffer, with `strides = [sz, sy, sx]`.
    pub fn strided(grid: Grid, strides: [usize; 3], offset: usize) -> Self {
        ZfpField { grid, strides, offset }
    }

    /// The grid of cells the stream encodes.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// Blocks along `[z, y, x]`, partial blocks included.
    pub fn blocks(&self) -> [usize; 3] {
        [self.grid.nz(), self.grid.ny(), self.grid.nx()].map(|n| n.div_ceil(4))
    }

    /// Elements the buffer must hold: one past the last cell.
    pub fn elements(&self) -> usize {
        let g = self.grid;
        let last = [g.nz(), g.ny(), g.nx()].iter().zip(self.strides).map(|(n, s)| (n - 1) * s).sum::<usize>();
        self.offset + last + 1
    }

    /// Bytes of the encoded stream at `rate`: every block's bits, padded to whole 64-bit words
    /// as `zfp_compress` flushes its stream.
    pub fn stream_bytes(&self, rate: ZfpRate) -> u64 {
        let blocks: u64 = self.blocks().iter().map(|&b| b as u64).product();
        let bits = blocks * u64::from(rate.block_bits(self.grid.rank()));
        bits.div_ceil(64) * 8
    }
}
