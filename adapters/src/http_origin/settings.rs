//! [`ConnectionSettings`]: the per-provider settings that bound one HTTP
//! connection — the response head it reads, how long it idles, how long
//! and for how many requests it lives.
//!
//! Invariants:
//! - Every setting has a default and a ceiling (and a floor); a value out
//!   of range is refused with [`HttpError::Setting`] naming it, before any
//!   dial.
//! - A connection takes its settings at its dial and keeps them: a
//!   replacement epoch's settings apply to the connections it dials.

use std::time::Duration;

use crate::http_origin::error::HttpError;

/// The provider setting bounding a response head, in bytes: the HTTP/1.1
/// status line and headers, and the HTTP/2 header list (RFC 9113's
/// measure: names, values and 32 bytes per field).
pub const MAX_HEAD_SETTING: &str = "max_head_bytes";

/// The provider setting bounding how long a connection stays parked, in
/// milliseconds; an origin's `Keep-Alive: timeout=N` shortens it. A
/// connection left with 100 ms or less to idle is not parked at all (it
/// would retire before a checkout could take it).
pub const IDLE_TIMEOUT_SETTING: &str = "idle_timeout_ms";

/// The provider setting bounding a connection's age, in milliseconds:
/// past it the connection is not parked again.
pub const MAX_AGE_SETTING: &str = "max_connection_age_ms";

/// The provider setting bounding the requests one connection carries:
/// past it the connection is not parked again.
pub const MAX_REQUESTS_SETTING: &str = "max_connection_requests";

/// The bounds of one HTTP connection, from its provider's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Largest response head read (`max_head_bytes`).
    pub max_head: usize,
    /// Longest time parked (`idle_timeout_ms`).
    pub idle_timeout: Duration,
    /// Longest life (`max_connection_age_ms`).
    pub max_age: Duration,
    /// Most requests carried (`max_connection_requests`).
    pub max_requests: u32,
}

impl ConnectionSettings {
    /// The defaults: a 64 KiB head; 4 s idle, below the 5 s keep-alive of
    /// lighttpd, Apache httpd and Node.js, so a parked connection retires
    /// before such an origin closes it; 10 minutes of life; 10,000
    /// requests.
    pub const DEFAULT: Self = Self {
        max_head: 64 << 10,
        idle_timeout: Duration::from_secs(4),
        max_age: Duration::from_secs(10 * 60),
        max_requests: 10_000,
    };

    /// The ceilings: a 1 MiB head, an hour idle (the engine's own ceiling
    /// of `idle_age`), a day of life, a million requests.
    pub const CEILING: Self = Self {
        max_head: 1 << 20,
        idle_timeout: Duration::from_secs(60 * 60),
        max_age: Duration::from_secs(24 * 60 * 60),
        max_requests: 1_000_000,
    };

    /// The smallest head taken: 8 KiB, the least hyper's HTTP/1.1 reader
    /// works with.
    pub const MIN_HEAD: usize = 8 << 10;

    /// The settings `setting` gives (each key unset takes its default).
    ///
    /// # Errors
    ///
    /// [`HttpError::Setting`] naming the first setting that is not a whole
    /// number within its range.
    pub fn read<'a>(setting: impl Fn(&str) -> Option<&'a str>) -> Result<Self, HttpError> {
        let (default, ceiling) = (Self::DEFAULT, Self::CEILING);
        let max_head = number(
            &setting,
            MAX_HEAD_SETTING,
            Self::MIN_HEAD as u64,
            ceiling.max_head as u64,
            "must be a whole number of bytes from 8192 to 1048576",
        )?
        .map_or(default.max_head, |n| n as usize);
        let idle_timeout = millis(
            &setting,
            IDLE_TIMEOUT_SETTING,
            ceiling.idle_timeout,
            "must be a whole number of milliseconds from 1 to 3600000",
        )?
        .unwrap_or(default.idle_timeout);
        let max_age = millis(
            &setting,
            MAX_AGE_SETTING,
            ceiling.max_age,
            "must be a whole number of milliseconds from 1 to 86400000",
        )?
        .unwrap_or(default.max_age);
        let max_requests = number(
            &setting,
            MAX_REQUESTS_SETTING,
            1,
            u64::from(ceiling.max_requests),
            "must be a whole number from 1 to 1000000",
        )?
        .map_or(default.max_requests, |n| n as u32);
        Ok(Self {
            max_head,
            idle_timeout,
            max_age,
            max_requests,
        })
    }
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The whole number `name` is set to, from `min` to `max`; `None` unset.
fn number<'a>(
    setting: &impl Fn(&str) -> Option<&'a str>,
    name: &'static str,
    min: u64,
    max: u64,
    reason: &'static str,
) -> Result<Option<u64>, HttpError> {
    let Some(value) = setting(name) else {
        return Ok(None);
    };
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(HttpError::Setting {
            setting: name,
            reason,
        }),
    }
}

/// The duration `name` is set to in milliseconds, from 1 to `max`.
fn millis<'a>(
    setting: &impl Fn(&str) -> Option<&'a str>,
    name: &'static str,
    max: Duration,
    reason: &'static str,
) -> Result<Option<Duration>, HttpError> {
    let max = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    Ok(number(setting, name, 1, max, reason)?.map(Duration::from_millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<ConnectionSettings, HttpError> {
        ConnectionSettings::read(|key| {
            pairs
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, value)| *value)
        })
    }

    #[test]
    fn unset_settings_take_their_defaults() {
        assert_eq!(read(&[]).ok(), Some(ConnectionSettings::DEFAULT));
    }

    #[test]
    fn each_setting_at_its_ceiling_is_taken() {
        let read = read(&[
            (MAX_HEAD_SETTING, "1048576"),
            (IDLE_TIMEOUT_SETTING, "3600000"),
            (MAX_AGE_SETTING, "86400000"),
            (MAX_REQUESTS_SETTING, "1000000"),
        ]);
        assert_eq!(read.ok(), Some(ConnectionSettings::CEILING));
    }

    #[test]
    fn a_setting_out_of_its_range_is_refused_by_name() {
        for (name, value) in [
            (MAX_HEAD_SETTING, "1048577"),
            (MAX_HEAD_SETTING, "8191"),
            (IDLE_TIMEOUT_SETTING, "3600001"),
            (IDLE_TIMEOUT_SETTING, "0"),
            (MAX_AGE_SETTING, "86400001"),
            (MAX_REQUESTS_SETTING, "0"),
            (MAX_REQUESTS_SETTING, "1000001"),
            (MAX_REQUESTS_SETTING, "ten"),
        ] {
            match read(&[(name, value)]) {
                Err(HttpError::Setting { setting, .. }) => assert_eq!(setting, name, "{value}"),
                other => panic!("{name} = {value}: {other:?}"),
            }
        }
    }
}
