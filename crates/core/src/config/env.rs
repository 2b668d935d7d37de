//! `HOOKGATE_*` overrides: a deployment value from the environment wins over
//! the file's, which wins over the default. Each override is one call.

use std::time::Duration;

use super::ConfigError;

/// The variables a config is loaded with (a function, so tests need not
/// touch the process environment).
pub(super) struct Env<F>(pub F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    /// The raw value of `var`, if set.
    pub fn get(&self, var: &str) -> Option<String> {
        (self.0)(var)
    }

    /// A whole number: `var`, else the file's value, else `default`.
    pub fn number(
        &self,
        var: &'static str,
        file: Option<u64>,
        default: u64,
    ) -> Result<u64, ConfigError> {
        match self.get(var) {
            Some(value) => value
                .trim()
                .parse()
                .map_err(|_| ConfigError::BadNumber { var, value }),
            None => Ok(file.unwrap_or(default)),
        }
    }

    /// A duration in whole seconds, as [`Env::number`].
    pub fn secs(
        &self,
        var: &'static str,
        file: Option<u64>,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        self.number(var, file, default.as_secs())
            .map(Duration::from_secs)
    }

    /// A count that fits `usize` (larger values saturate).
    pub fn count(
        &self,
        var: &'static str,
        file: Option<u64>,
        default: usize,
    ) -> Result<usize, ConfigError> {
        let n = self.number(var, file, u64::try_from(default).unwrap_or(u64::MAX))?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// A value set by `var` or the file's `key` (empty counts as unset).
    pub fn text(&self, var: &'static str, file: Option<String>) -> Option<String> {
        self.get(var).or(file).filter(|v| !v.is_empty())
    }

    /// As [`Env::text`], and required: its absence names the key and the
    /// variable.
    pub fn required(
        &self,
        var: &'static str,
        key: &'static str,
        file: Option<String>,
    ) -> Result<String, ConfigError> {
        self.text(var, file)
            .ok_or(ConfigError::Missing { key, var })
    }
}
