//! [`MicroUsd`]: amounts of money as whole millionths of a US dollar, so sums are exact.

use serde::{Deserialize, Serialize};

/// An amount in millionths of a US dollar (`1_000_000` = $1). Integer, so totals add up exactly
/// however many requests they sum; a request's provider-reported `f64` cost is rounded to the
/// nearest micro-dollar once, when it is recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MicroUsd(pub u64);

impl MicroUsd {
    /// Nothing.
    pub const ZERO: MicroUsd = MicroUsd(0);

    /// `usd` dollars, rounded to the nearest micro-dollar; negative, NaN and infinite amounts
    /// (a provider's nonsense) count as zero, amounts past `u64` saturate.
    pub fn from_usd(usd: f64) -> MicroUsd {
        if !usd.is_finite() || usd <= 0.0 {
            return MicroUsd::ZERO;
        }
        // `as` saturates at u64::MAX for values past it.
        MicroUsd((usd * 1_000_000.0).round() as u64)
    }

    /// The amount in dollars.
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1_000_000.0
    }

    /// `self + other`, saturating.
    pub fn plus(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_add(other.0))
    }

    /// `self - other`, at least zero.
    pub fn minus(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_sub(other.0))
    }
}

impl std::fmt::Display for MicroUsd {
    /// Dollars with cents, and more digits when the amount is below a cent (`$0.0042`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 != 0 && self.0 < 10_000 {
            write!(f, "${:.4}", self.usd())
        } else {
            write!(f, "${:.2}", self.usd())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MicroUsd;

    #[test]
    fn dollars_round_to_the_nearest_micro_dollar_and_nonsense_is_zero() {
        assert_eq!(MicroUsd::from_usd(0.0000015), MicroUsd(2));
        assert_eq!(MicroUsd::from_usd(1.5), MicroUsd(1_500_000));
        assert_eq!(MicroUsd::from_usd(-3.0), MicroUsd::ZERO);
        assert_eq!(MicroUsd::from_usd(f64::NAN), MicroUsd::ZERO);
        assert_eq!(MicroUsd::from_usd(f64::INFINITY), MicroUsd::ZERO);
        assert_eq!(MicroUsd(u64::MAX).plus(MicroUsd(1)), MicroUsd(u64::MAX));
        assert_eq!(MicroUsd(1).minus(MicroUsd(2)), MicroUsd::ZERO);
    }

    #[test]
    fn amounts_show_cents_or_four_digits_below_a_cent() {
        assert_eq!(MicroUsd(1_234_567).to_string(), "$1.23");
        assert_eq!(MicroUsd(4_200).to_string(), "$0.0042");
        assert_eq!(MicroUsd::ZERO.to_string(), "$0.00");
    }
}
