//! `[allowance]`: spending allowances in USD (docs/costs.md). The section's presence turns
//! counting on (every model request is held and recorded in `<state_dir>/allowance/`); each key
//! is optional, and a key left out sets no cap of its kind. Owners change a chat's or a user's
//! caps at run time with `/allowance`. Read by the allowance feature
//! (`features::allowance`); every error names its key.

use serde::Deserialize;
use volcanic_allowance::MicroUsd;

/// `[allowance]` as written (unknown keys refused).
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawAllowance {
    chat_daily_usd: Option<f64>,
    chat_monthly_usd: Option<f64>,
    user_daily_usd: Option<f64>,
    user_monthly_usd: Option<f64>,
}

/// `[allowance]`, resolved: the caps every chat and user has unless an owner set their own.
/// `None`: no cap of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllowanceConfig {
    /// `chat_daily_usd`: what one chat may spend per day (in its time zone).
    pub chat_daily: Option<MicroUsd>,
    /// `chat_monthly_usd`: per calendar month.
    pub chat_monthly: Option<MicroUsd>,
    /// `user_daily_usd`: what one person may spend per day, across chats.
    pub user_daily: Option<MicroUsd>,
    /// `user_monthly_usd`: per calendar month.
    pub user_monthly: Option<MicroUsd>,
}

/// `usd` dollars as an allowance amount: finite, from 0 to a million (the one rule for
/// `[allowance]`, `daily_usd` of A2A callers and `/allowance`); `None` for anything else.
pub fn usd_amount(usd: f64) -> Option<MicroUsd> {
    (usd.is_finite() && (0.0..=1_000_000.0).contains(&usd)).then(|| MicroUsd::from_usd(usd))
}

impl RawAllowance {
    /// Checks each amount. Errors: the key and what to write instead (a non-negative number of
    /// dollars, at most a million).
    pub fn resolve(self) -> Result<AllowanceConfig, super::ConfigError> {
        let usd = |key: &str, v: Option<f64>| -> Result<Option<MicroUsd>, super::ConfigError> {
            let Some(v) = v else { return Ok(None) };
            usd_amount(v).map(Some).ok_or_else(|| {
                super::invalid(
                    format!("allowance.{key}"),
                    format!("{v} is not an amount: write dollars from 0 to 1000000, e.g. 5 or 0.5"),
                )
            })
        };
        Ok(AllowanceConfig {
            chat_daily: usd("chat_daily_usd", self.chat_daily_usd)?,
            chat_monthly: usd("chat_monthly_usd", self.chat_monthly_usd)?,
            user_daily: usd("user_daily_usd", self.user_daily_usd)?,
            user_monthly: usd("user_monthly_usd", self.user_monthly_usd)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AllowanceConfig, String> {
        let raw: RawAllowance = toml::from_str(text).map_err(|e| e.to_string())?;
        raw.resolve().map_err(|e| e.to_string())
    }

    #[test]
    fn amounts_become_caps_and_missing_keys_none() {
        assert_eq!(
            parse("chat_daily_usd = 5\nuser_monthly_usd = 0.5"),
            Ok(AllowanceConfig {
                chat_daily: Some(MicroUsd(5_000_000)),
                user_monthly: Some(MicroUsd(500_000)),
                ..Default::default()
            })
        );
    }

    #[test]
    fn a_negative_amount_or_an_unknown_key_names_the_key() {
        let err = parse("chat_daily_usd = -1").err().unwrap_or_default();
        assert!(err.contains("allowance.chat_daily_usd"), "{err}");
        let err = parse("chat_weekly_usd = 1").err().unwrap_or_default();
        assert!(err.contains("chat_weekly_usd"), "{err}");
    }
}
