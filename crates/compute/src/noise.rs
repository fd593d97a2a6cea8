//! Counter-based noise: a value per (seed, global cell index, step), not a generator's stream.
//!
//! A stream of random numbers depends on the order cells draw from it, so a run split over
//! devices or domains, or resumed from a stored step, would draw different noise. A hash of
//! the cell's identity does not. The per-step part ([`noise_key`]) is computed here and handed
//! to the shader in its `clock`; the per-cell part is the prelude's WGSL `uniform_noise`, whose
//! twin is [`uniform_noise`]. u32 arithmetic only, so every device computes the same bits.

/// The prelude's `pcg_hash`: the output permutation of the PCG generator (a bijection of u32).
pub fn pcg_hash(x: u32) -> u32 {
    let s = x.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let w = ((s >> ((s >> 28) + 4)) ^ s).wrapping_mul(277_803_737);
    (w >> 22) ^ w
}

/// The key of step `step`'s noise under `seed`: every 32-bit half of both, hashed in turn.
pub fn noise_key(seed: u64, step: u64) -> u32 {
    let words = [seed as u32, (seed >> 32) as u32, step as u32, (step >> 32) as u32];
    words.into_iter().fold(0, |h, w| pcg_hash(h ^ w))
}

/// Twin of the prelude's `uniform_noise(i)`: uniform in [-1, 1) for global cell index `index`
/// at step `step` (steps done before this one) under `seed`; 24 hash bits scaled by 2^-23,
/// exact in f32.
pub fn uniform_noise(seed: u64, index: u32, step: u64) -> f32 {
    let h = pcg_hash(pcg_hash(index) ^ noise_key(seed, step));
    (h >> 8) as f32 * (1.0 / (1u32 << 23) as f32) - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_uniform_on_minus_one_to_one_and_keyed_by_every_input() {
        let n = 1 << 16;
        let values: Vec<f32> = (0..n).map(|i| uniform_noise(7, i, 3)).collect();
        assert!(values.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = values.iter().map(|v| f64::from(*v)).sum::<f64>() / f64::from(n);
        let var = values.iter().map(|v| (f64::from(*v) - mean).powi(2)).sum::<f64>() / f64::from(n);
        // Uniform on [-1, 1): mean 0 (standard error 0.0023 here), variance 1/3.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0 / 3.0).abs() < 0.01, "variance {var}");
        for (other, what) in [
            (uniform_noise(8, 5, 3), "seed"),
            (uniform_noise(7, 6, 3), "cell"),
            (uniform_noise(7, 5, 4), "step"),
            (uniform_noise(7 + (1 << 32), 5, 3), "seed's high half"),
            (uniform_noise(7, 5, 3 + (1 << 32)), "step's high half"),
        ] {
            assert_ne!(other, uniform_noise(7, 5, 3), "the noise ignores the {what}");
        }
    }

    #[test]
    fn pcg_hash_matches_known_values() {
        // The PCG-RXS-M-XS 32-bit output function applied to one LCG step of the input.
        assert_eq!(pcg_hash(0), 129_708_002);
        assert_ne!(pcg_hash(1), pcg_hash(0));
    }
}
