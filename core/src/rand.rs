//! A small, fast, reproducible random generator for sampling and generated benchmark data.

/// SplitMix64 (Steele, Lea and Flood 2014): one add and three xor-shift-multiplies per draw,
/// passes BigCrush, and any seed (0 included) is a good one.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`: the top 24 bits as a fraction.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[0, 1)`: the top 53 bits as a fraction.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_fills_the_unit_interval() {
        let mut rng = SplitMix64(0);
        let xs: Vec<f32> = (0..10_000).map(|_| rng.next_f32()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = xs.iter().sum::<f32>() / xs.len() as f32;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let ys: Vec<f64> = (0..10_000).map(|_| rng.next_f64()).collect();
        assert!(ys.iter().all(|&y| (0.0..1.0).contains(&y)));
    }
}
