//! The Gray-Scott initial condition.

/// SplitMix64: a tiny, well-mixed, seedable generator, so a seed gives the same noise on
/// every platform without a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn next_signed(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// u = 1, v = 0 everywhere except the centred square rows [2·rows/5, 3·rows/5) ×
/// cols [2·cols/5, 3·cols/5) (integer division), where u = 0 and v = 1.
///
/// With `noise > 0`, every cell of u and of v then gets `noise × uniform(-1, 1)` drawn from
/// `seed`, clamped to [0, 1]; `noise = 0` gives the exact pattern whatever the seed.
/// Returns u then v, each row-major.
pub fn initial_state(rows: usize, cols: usize, seed: u64, noise: f32) -> Vec<f32> {
    let cells = rows * cols;
    let mut state = vec![0.0f32; 2 * cells];
    let (u, v) = state.split_at_mut(cells);
    u.fill(1.0);
    for r in 2 * rows / 5..3 * rows / 5 {
        for c in 2 * cols / 5..3 * cols / 5 {
            u[r * cols + c] = 0.0;
            v[r * cols + c] = 1.0;
        }
    }
    if noise > 0.0 {
        let mut rng = SplitMix64(seed);
        for x in state.iter_mut() {
            *x = (*x + noise * rng.next_signed()).clamp(0.0, 1.0);
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_is_centred_with_integer_division() {
        let (rows, cols) = (10, 7);
        let s = initial_state(rows, cols, 0, 0.0);
        let v = &s[rows * cols..];
        // rows [4, 6), cols [2, 4)
        for r in 0..rows {
            for c in 0..cols {
                let inside = (4..6).contains(&r) && (2..4).contains(&c);
                assert_eq!(v[r * cols + c], if inside { 1.0 } else { 0.0 }, "v at ({r}, {c})");
                assert_eq!(s[r * cols + c], if inside { 0.0 } else { 1.0 }, "u at ({r}, {c})");
            }
        }
    }

    #[test]
    fn noise_is_seeded_bounded_and_off_by_default() {
        assert_eq!(initial_state(16, 16, 1, 0.0), initial_state(16, 16, 2, 0.0));
        let a = initial_state(16, 16, 7, 0.1);
        assert_eq!(a, initial_state(16, 16, 7, 0.1));
        assert_ne!(a, initial_state(16, 16, 8, 0.1));
        assert!(a.iter().all(|x| (0.0..=1.0).contains(x)));
        let plain = initial_state(16, 16, 7, 0.0);
        let max_diff = a.iter().zip(&plain).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
        assert!(max_diff > 0.0 && max_diff <= 0.1, "noise amplitude {max_diff}");
    }
}
