//! A fast, order-independent checksum of the frames a sink stored.
//!
//! Every sink reports the same [`crate::SinkSummary::checksum`] for the same frames, however
//! the streams interleaved, so a run can be compared across sinks (and the null sink's work
//! cannot be optimised away). Not cryptographic: it detects corruption and mix-ups, nothing more.

use crate::frame::Frame;

const K0: u64 = 0x9E37_79B9_7F4A_7C15;
const K1: u64 = 0xC2B2_AE3D_27D4_EB4F;
const K2: u64 = 0x1656_67B1_9E37_79F9;
const K3: u64 = 0xD6E8_FEB8_6659_FD93;

/// splitmix64's finaliser: spreads every input bit over the whole word.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One lane step: bijective in `lane` for a fixed word, so no word is lost.
#[inline(always)]
fn step(lane: u64, word: u64, k: u64) -> u64 {
    (lane ^ word).wrapping_mul(k).rotate_left(29)
}

/// Checksum of one frame's bytes, mixed with its stream and index.
///
/// Reads the data 32 bytes at a time in four independent lanes (8 bytes each, so the
/// multiplies pipeline), which runs at several GB/s; position within the frame matters,
/// so swapped bytes change the result. Sinks add these up with `wrapping_add`, which makes
/// the run checksum independent of the order frames of different streams arrive in.
pub fn frame_checksum(frame: &Frame) -> u64 {
    let data = &frame.data;
    let mut lanes = [K0, K1, K2, K3 ^ data.len() as u64];
    let mut blocks = data.chunks_exact(32);
    for b in &mut blocks {
        let w = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        lanes[0] = step(lanes[0], w(0), K1);
        lanes[1] = step(lanes[1], w(1), K2);
        lanes[2] = step(lanes[2], w(2), K3);
        lanes[3] = step(lanes[3], w(3), K0);
    }
    let mut tail = [0u8; 32];
    let rest = blocks.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    for (i, c) in tail.chunks_exact(8).enumerate() {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        lanes[i] = step(lanes[i], u64::from_le_bytes(a) ^ rest.len() as u64, K0);
    }
    let mut h = mix(lanes[0]) ^ mix(lanes[1].wrapping_add(K1)).rotate_left(17);
    h ^= mix(lanes[2].wrapping_add(K2)).rotate_left(31) ^ mix(lanes[3].wrapping_add(K3)).rotate_left(47);
    mix(h ^ mix((frame.stream as u64).wrapping_mul(K1) ^ frame.index.wrapping_mul(K3)))
}

/// Adds one frame's checksum to a running total (order-independent).
pub(crate) fn combine(total: u64, frame: &Frame) -> u64 {
    total.wrapping_add(frame_checksum(frame))
}

#[cfg(test)]
mod tests {
    use super::frame_checksum;
    use crate::frame::Frame;

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
}
