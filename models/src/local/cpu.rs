//! Which of the kernels' instruction sets runs: the best the CPU has, chosen once per
//! process, or the one `WALKRAG_CPU` names (for tests and benchmarks).

use std::sync::OnceLock;

use crate::LoadError;

/// An instruction set the int8 matrix kernels are written for, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpu {
    /// AVX-512 VNNI (`vpdpbusd` on 512-bit registers), with AVX-512 F/BW and AVX2/FMA/F16C.
    Avx512,
    /// AVX-VNNI (`vpdpbusd` on 256-bit registers, VEX-encoded), with AVX2/FMA/F16C.
    AvxVnni,
    /// AVX2 with FMA and F16C (`vpmaddubsw` + `vpmaddwd`).
    Avx2,
    /// Plain Rust, on every CPU.
    Scalar,
}

impl Cpu {
    pub const ALL: [Cpu; 4] = [Cpu::Avx512, Cpu::AvxVnni, Cpu::Avx2, Cpu::Scalar];

    /// The name `WALKRAG_CPU` takes and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Cpu::Avx512 => "avx512",
            Cpu::AvxVnni => "avxvnni",
            Cpu::Avx2 => "avx2",
            Cpu::Scalar => "scalar",
        }
    }

    /// Whether this CPU can run the kernels of this set.
    pub fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 = is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c");
            match self {
                Cpu::Avx512 => {
                    avx2 && is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                        && is_x86_feature_detected!("avx512vnni")
                }
                Cpu::AvxVnni => avx2 && is_x86_feature_detected!("avxvnni"),
                Cpu::Avx2 => avx2,
                Cpu::Scalar => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Cpu::Scalar
        }
    }

    /// The best set this CPU supports.
    pub fn best() -> Cpu {
        Cpu::ALL
            .into_iter()
            .find(|c| c.supported())
            .unwrap_or(Cpu::Scalar)
    }

    /// Whether the kernels of this set read every matrix repacked into 16-row panels
    /// (`quant::Panel`) rather than the 4-row groups (AVX2 reads only some kinds so:
    /// `quant::Kind::in_panels`).
    pub fn panels(self) -> bool {
        matches!(self, Cpu::Avx512 | Cpu::AvxVnni)
    }

    /// The set `WALKRAG_CPU` names (`None`: unset or empty), or why it cannot run.
    fn from_env() -> Result<Option<Cpu>, String> {
        let Some(value) = std::env::var_os("WALKRAG_CPU") else {
            return Ok(None);
        };
        let value = value.to_string_lossy();
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        let names = || Cpu::ALL.map(Cpu::name).join(", ");
        let Some(cpu) = Cpu::ALL.into_iter().find(|c| c.name() == value) else {
            return Err(format!("WALKRAG_CPU={value}: expected one of {}", names()));
        };
        if !cpu.supported() {
            let has: Vec<&str> = Cpu::ALL
                .into_iter()
                .filter(|c| c.supported())
                .map(Cpu::name)
                .collect();
            return Err(format!(
                "WALKRAG_CPU={value}: this CPU cannot run it (it can run {})",
                has.join(", ")
            ));
        }
        Ok(Some(cpu))
    }
}

/// The kernels this process runs: `WALKRAG_CPU` when set, else the best the CPU supports.
/// Read once; a forced set the CPU lacks is an error, never a silent fallback.
pub fn cpu() -> Result<Cpu, LoadError> {
    static CHOICE: OnceLock<Result<Cpu, String>> = OnceLock::new();
    CHOICE
        .get_or_init(|| Cpu::from_env().map(|forced| forced.unwrap_or_else(Cpu::best)))
        .clone()
        .map_err(LoadError::Unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_set_is_supported_and_scalar_always_is() {
        assert!(Cpu::best().supported());
        assert!(Cpu::Scalar.supported());
        // The order is a preference: every set better than the best one is missing.
        let best = Cpu::ALL.iter().position(|&c| c == Cpu::best()).unwrap();
        assert!(Cpu::ALL[..best].iter().all(|c| !c.supported()));
    }
}
