//! A fast, order-independent checksum of the frames a sink stored.
//!
//! Every sink reports the same [`crate::SinkSummary::checksum`] for the same frames, however
//! the streams interleaved, so a run can be compared across sinks (and the null sink's work
//! cannot be optimised away). Not cryptographic: it detects corruption and mix-ups, nothing more.

use crate::frame::Frame;

const K1: u64 = 0xC2B2_AE3D_27D4_EB4F;
const K3: u64 = 0xD6E8_FEB8_6659_FD93;

/// splitmix64's finaliser: spreads every input bit over the whole word.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Checksum of one frame's bytes, mixed with its stream and index.
///
/// The data's hash (the one [`Frame::hash_data`] caches): position within the frame matters, so swapped bytes
/// change the result. Sinks add these up with `wrapping_add`,
/// which makes the run checksum independent of the order frames of different streams
/// arrive in. `Running` computes the same value piece by piece.
///
/// Uses [`Frame::data_hash`] when the producer computed it.
pub fn frame_checksum(frame: &Frame) -> u64 {
    with_frame(frame.data_hash.unwrap_or_else(|| data_hash(&frame.data)), frame)
}

/// Bytes of one block of a frame's hash ([`Frame::hash_data`]): small enough that a block copied
/// out of a GPU's staging buffer is still in the CPU's cache when it is hashed, and the unit
/// in which several threads copy and hash one frame at once ([`BlockHasher`]).
pub const HASH_BLOCK: usize = 256 << 10;

/// The hash of a frame's bytes alone, before it is mixed with the frame's stream and index:
/// what [`Frame::hash_data`] caches. XXH3-64 seeded with the frame's length; a frame longer
/// than [`HASH_BLOCK`] is hashed block by block (each block's XXH3-64, seeded with the
/// frame's length) and its hash is the XXH3-64 of the blocks' hashes (little-endian, in
/// order, seeded likewise), so that the blocks can be hashed on several threads.
fn data_hash(data: &[u8]) -> u64 {
    let seed = data.len() as u64;
    if data.len() <= HASH_BLOCK {
        return xxhash_rust::xxh3::xxh3_64_with_seed(data, seed);
    }
    let blocks: Vec<u8> = data
        .chunks(HASH_BLOCK)
        .flat_map(|block| xxhash_rust::xxh3::xxh3_64_with_seed(block, seed).to_le_bytes())
        .collect();
    xxhash_rust::xxh3::xxh3_64_with_seed(&blocks, seed)
}

/// The hash [`Frame::hash_data`] computes, of blocks hashed in any order, on any thread: [`BlockHasher::hash_block`]
/// for every block of [`HASH_BLOCK`] bytes, then [`Frame::with_block_hashes`].
pub struct BlockHasher {
    len: usize,
    blocks: Vec<std::sync::atomic::AtomicU64>,
    /// Whether each block was hashed.
    done: Vec<std::sync::atomic::AtomicBool>,
    /// Blocks hashed so far, each counted once.
    hashed: std::sync::atomic::AtomicUsize,
}

impl BlockHasher {
    /// Hashes for a frame of `len` bytes.
    pub fn new(len: usize) -> Self {
        let count = len.div_ceil(HASH_BLOCK).max(1);
        let blocks = (0..count).map(|_| std::sync::atomic::AtomicU64::new(0)).collect();
        let done = (0..count).map(|_| std::sync::atomic::AtomicBool::new(false)).collect();
        BlockHasher { len, blocks, done, hashed: std::sync::atomic::AtomicUsize::new(0) }
    }

    /// Hashes block `index`: the frame's bytes from `index` × [`HASH_BLOCK`] on, all of them
    /// up to the next block or the frame's end. Each block once.
    pub fn hash_block(&self, index: usize, bytes: &[u8]) {
        use std::sync::atomic::Ordering;
        let expected = self.len.saturating_sub(index * HASH_BLOCK).min(HASH_BLOCK);
        let Some(slot) = self.blocks.get(index) else { return };
        if bytes.len() != expected {
            return;
        }
        slot.store(xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.len as u64), Ordering::Relaxed);
        // A block hashed again counts once: another one missing leaves the hash incomplete.
        if !self.done[index].swap(true, Ordering::Relaxed) {
            self.hashed.fetch_add(1, Ordering::Release);
        }
    }

    /// The hash, if every block was hashed (once; a frame of no bytes has one empty block).
    fn digest(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        if self.hashed.load(Ordering::Acquire) != self.blocks.len() {
            return None;
        }
        let seed = self.len as u64;
        if self.len <= HASH_BLOCK {
            return Some(self.blocks[0].load(Ordering::Relaxed));
        }
        let hashes: Vec<u8> = self.blocks.iter().flat_map(|b| b.load(Ordering::Relaxed).to_le_bytes()).collect();
        Some(xxhash_rust::xxh3::xxh3_64_with_seed(&hashes, seed))
    }
}

/// The producer's side of the checksum. Here rather than in `frame.rs` so that the hash a
/// frame caches and the hash `Running` computes are one algorithm, written in one module
/// (and `frame.rs`, which this module reads, does not read it back).
impl Frame {
    /// Computes [`Frame::data_hash`] now, on the calling thread, so that sinks do not have
    /// to (the wgpipe runner calls it on the device thread that produced the frame).
    #[must_use]
    pub fn hash_data(mut self) -> Self {
        self.data_hash = Some(data_hash(&self.data));
        self
    }

    /// Takes [`Frame::data_hash`] from `hasher`, which was fed the frame's bytes as they were
    /// filled in. A hasher that was not fed exactly the frame's length is a bug of the
    /// caller's: debug builds panic (so that tests see it); release builds compute the hash
    /// here, as [`Frame::hash_data`] does, so that the checksum stays right.
    #[must_use]
    pub fn with_data_hash(mut self, hasher: &DataHasher) -> Self {
        debug_assert!(
            hasher.fed == self.data.len() && hasher.len == self.data.len(),
            "hashed {} of {} bytes for a frame of {}",
            hasher.fed,
            hasher.len,
            self.data.len()
        );
        self.data_hash = match hasher.digest() {
            Some(hash) if hasher.len == self.data.len() => Some(hash),
            _ => Some(data_hash(&self.data)),
        };
        self
    }

    /// Takes [`Frame::data_hash`] from `hasher`, whose blocks were hashed as the frame was
    /// filled in (by several threads, say). Blocks missing or a hasher made for another
    /// length are a bug of the caller's: debug builds panic; release builds compute the hash
    /// here.
    #[must_use]
    pub fn with_block_hashes(mut self, hasher: &BlockHasher) -> Self {
        let digest = hasher.digest().filter(|_| hasher.len == self.data.len());
        debug_assert!(
            digest.is_some(),
            "blocks of {} bytes hashed in part for a frame of {}",
            hasher.len,
            self.data.len()
        );
        self.data_hash = Some(digest.unwrap_or_else(|| data_hash(&self.data)));
        self
    }
}

/// Mixes the data's hash with the frame's stream and index.
fn with_frame(data: u64, frame: &Frame) -> u64 {
    mix(mix(data) ^ mix((frame.stream as u64).wrapping_mul(K1) ^ frame.index.wrapping_mul(K3)))
}

/// [`Frame::data_hash`] fed piece by piece by whoever fills the frame, while each piece is in
/// the CPU's cache: the wgpipe runner hashes a frame as it copies it out of the GPU's staging
/// buffer instead of reading it again afterwards (on a fast GPU a second pass over a large
/// frame costs as much as the copy: the guide's benchmark page, "On a real GPU").
/// [`Frame::with_data_hash`] takes the result.
pub struct DataHasher {
    /// The block being hashed.
    block: xxhash_rust::xxh3::Xxh3,
    /// Its bytes so far.
    in_block: usize,
    /// The hashes of the blocks done (frames longer than [`HASH_BLOCK`]).
    blocks: xxhash_rust::xxh3::Xxh3,
    len: usize,
    fed: usize,
}

impl DataHasher {
    /// A hash of a frame of `len` bytes.
    pub fn new(len: usize) -> Self {
        let seed = len as u64;
        DataHasher {
            block: xxhash_rust::xxh3::Xxh3::with_seed(seed),
            in_block: 0,
            blocks: xxhash_rust::xxh3::Xxh3::with_seed(seed),
            len,
            fed: 0,
        }
    }

    /// Adds the next bytes of the frame.
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.fed += bytes.len();
        // Bytes past the frame's length (a caller's bug) are counted, not hashed: the hash
        // then has none ([`Frame::with_data_hash`]).
        if self.fed > self.len {
            return;
        }
        while !bytes.is_empty() {
            let (now, rest) = bytes.split_at(bytes.len().min(HASH_BLOCK - self.in_block));
            self.block.update(now);
            self.in_block += now.len();
            bytes = rest;
            // A frame of one block is that block's hash; a longer one hashes the blocks' hashes.
            if self.in_block == HASH_BLOCK && self.len > HASH_BLOCK {
                self.end_block();
            }
        }
    }

    /// Adds the finished block's hash to the blocks' and starts the next block.
    fn end_block(&mut self) {
        self.blocks.update(&self.block.digest().to_le_bytes());
        self.block = xxhash_rust::xxh3::Xxh3::with_seed(self.len as u64);
        self.in_block = 0;
    }

    /// The hash, if exactly the frame's `len` bytes were added.
    fn digest(&self) -> Option<u64> {
        if self.fed != self.len {
            return None;
        }
        if self.len <= HASH_BLOCK {
            return Some(self.block.digest());
        }
        let mut blocks = self.blocks.clone();
        if self.in_block > 0 {
            blocks.update(&self.block.digest().to_le_bytes());
        }
        Some(blocks.digest())
    }
}

/// [`frame_checksum`] fed piece by piece, so that a sink can checksum each piece of a frame
/// right before it writes it, while the piece is in the CPU cache.
///
/// Why the checksum is XXH3 and fed this way: the earlier checksum (four multiply lanes) plus
/// a second read of a frame larger than the cache put the raw sink well behind a plain `write`
/// loop of the same bytes on tmpfs (`cargo xtask bench peers posix` measures the sink, hashing
/// or not, against that loop; the guide's benchmarks page has the figures).
pub(crate) struct Running {
    hash: DataHasher,
}

impl Running {
    /// A checksum of a frame of `len` bytes.
    pub(crate) fn new(len: usize) -> Self {
        Running { hash: DataHasher::new(len) }
    }

    /// Adds the next bytes of the frame.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.hash.update(bytes);
    }

    /// The checksum of `frame`, whose bytes were all added.
    pub(crate) fn finish(self, frame: &Frame) -> u64 {
        match self.hash.digest() {
            Some(hash) if self.hash.len == frame.data.len() => with_frame(hash, frame),
            _ => frame_checksum(frame),
        }
    }
}

/// Adds one frame's checksum to a running total (order-independent).
pub(crate) fn combine(total: u64, frame: &Frame) -> u64 {
    add(total, frame_checksum(frame))
}

/// Adds a frame checksum computed by the caller ([`Running`]) to a running total.
pub(crate) fn add(total: u64, frame_checksum: u64) -> u64 {
    total.wrapping_add(frame_checksum)
}

#[cfg(test)]
mod tests {
    use super::frame_checksum;
    use crate::frame::Frame;

    #[test]
    fn a_frame_hashed_as_it_is_filled_equals_one_hashed_afterwards() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 13 % 241) as u8).collect();
        let whole = Frame::new(2, 4, 8, data.clone()).hash_data();
        for cut in [1usize, 64, 1000, 5000] {
            let mut h = super::DataHasher::new(data.len());
            for piece in data.chunks(cut) {
                h.update(piece);
            }
            let f = Frame::new(2, 4, 8, data.clone()).with_data_hash(&h);
            assert_eq!(f.data_hash, whole.data_hash, "pieces of {cut}");
        }
    }

    /// A hasher fed part of the frame is a caller's bug: a debug build (the tests') panics.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "hashed 10 of 5000 bytes for a frame of 5000")]
    fn a_frame_hashed_in_part_panics_in_debug_builds() {
        let data = vec![7u8; 5000];
        let mut short = super::DataHasher::new(data.len());
        short.update(&data[..10]);
        let _ = Frame::new(2, 4, 8, data).with_data_hash(&short);
    }

    /// Frames of one block, of a few blocks and a partial one, and of whole blocks: hashed
    /// whole, piece by piece (pieces crossing blocks), and block by block out of order.
    #[test]
    fn every_way_of_hashing_a_frame_gives_one_hash() {
        use super::{BlockHasher, DataHasher, HASH_BLOCK};
        for len in [0, 1, 5000, HASH_BLOCK, HASH_BLOCK + 1, 3 * HASH_BLOCK + 777, 4 * HASH_BLOCK] {
            let data: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]).collect();
            let whole = Frame::new(0, 1, 2, data.clone()).hash_data();
            for cut in [1000usize, 100_003, HASH_BLOCK] {
                let mut h = DataHasher::new(len);
                data.chunks(cut).for_each(|p| h.update(p));
                assert_eq!(
                    Frame::new(0, 1, 2, data.clone()).with_data_hash(&h).data_hash,
                    whole.data_hash,
                    "{len} in {cut}"
                );
            }
            let b = BlockHasher::new(len);
            let blocks: Vec<_> = data.chunks(HASH_BLOCK).enumerate().collect();
            for (i, block) in blocks.iter().rev() {
                b.hash_block(*i, block);
            }
            if len == 0 {
                b.hash_block(0, &[]);
            }
            assert_eq!(Frame::new(0, 1, 2, data.clone()).with_block_hashes(&b).data_hash, whole.data_hash, "{len}");
        }
        // Too many bytes, or a block twice and another not at all: no hash from the hasher.
        let mut long = DataHasher::new(100);
        long.update(&[0; 300_000]);
        assert_eq!(long.digest(), None);
        let twice = BlockHasher::new(2 * HASH_BLOCK);
        twice.hash_block(0, &[1; HASH_BLOCK]);
        twice.hash_block(0, &[1; HASH_BLOCK]);
        assert_eq!(twice.digest(), None);
        // One block is hashed as before blocks existed: XXH3-64 seeded with the length.
        let small = Frame::new(0, 1, 2, vec![9; 5000]).hash_data();
        assert_eq!(small.data_hash, Some(xxhash_rust::xxh3::xxh3_64_with_seed(&[9; 5000], 5000)));
        // Blocks swapped change the hash.
        let mut two: Vec<u8> = vec![1; HASH_BLOCK];
        two.extend(vec![2; HASH_BLOCK]);
        let mut swapped: Vec<u8> = vec![2; HASH_BLOCK];
        swapped.extend(vec![1; HASH_BLOCK]);
        assert_ne!(Frame::new(0, 1, 2, two).hash_data().data_hash, Frame::new(0, 1, 2, swapped).hash_data().data_hash);
    }

    #[test]
    fn piece_by_piece_equals_the_whole_frame() {
        let f = Frame::new(1, 3, 10, (0..1000u32).map(|i| (i * 7 % 251) as u8).collect());
        for cut in [1usize, 63, 64, 65, 200, 999] {
            let mut r = super::Running::new(f.data.len());
            for piece in f.data.chunks(cut) {
                r.update(piece);
            }
            assert_eq!(r.finish(&f), frame_checksum(&f), "pieces of {cut}");
        }
    }

    #[test]
    fn checksum_depends_on_data_stream_index_and_position() {
        let f = Frame::new(0, 0, 10, (0..100u8).collect());
        let base = frame_checksum(&f);
        let mut g = f.clone();
        g.data[5] ^= 1;
        assert_ne!(frame_checksum(&g), base, "data");
        let mut g = f.clone();
        g.stream = 1;
        assert_ne!(frame_checksum(&g), base, "stream");
        let mut g = f.clone();
        g.index = 1;
        assert_ne!(frame_checksum(&g), base, "index");
        let mut g = f.clone();
        g.data.swap(20, 40);
        assert_ne!(frame_checksum(&g), base, "order of bytes");
        let mut g = f.clone();
        g.data.push(0);
        assert_ne!(frame_checksum(&g), base, "a trailing zero byte");
        let mut g = f.clone();
        g.step = 11;
        assert_eq!(frame_checksum(&g), base, "the step is not part of the data");
    }

    #[test]
    fn a_hash_computed_by_the_producer_gives_the_same_checksum() {
        let f = Frame::new(2, 7, 10, (0..5000u32).map(|i| (i * 13 % 241) as u8).collect());
        let hashed = f.clone().hash_data();
        assert!(hashed.data_hash.is_some());
        assert_eq!(frame_checksum(&hashed), frame_checksum(&f));
        assert_eq!(hashed, f, "equality ignores whether the hash was computed");
        let mut moved = hashed.clone();
        moved.index = 8;
        assert_ne!(frame_checksum(&moved), frame_checksum(&hashed), "the index is mixed in after the cached hash");
    }
}
