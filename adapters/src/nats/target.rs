//! [`NatsTarget`]: the one NATS server a slot approves.
//!
//! Invariants:
//! - A target is exactly a scheme (`nats` or `tls`), a host and a port:
//!   no userinfo (credentials travel in the epoch's credential, never in a
//!   target), no path, query or fragment.
//! - The client connects to this server only: servers the server
//!   advertises are ignored.

use std::fmt;

use crate::authority::{parse_port, split_host_port, AuthorityError};

/// The NATS port when a target names none.
pub const DEFAULT_PORT: u16 = 4222;

/// Why a configured target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NatsTargetError {
    /// The scheme is neither `nats://` nor `tls://`.
    #[error("nats target scheme must be nats or tls")]
    UnsupportedScheme,
    /// The target carries `user@`.
    #[error("nats target must not carry userinfo")]
    Userinfo,
    /// The target carries a path, query or fragment.
    #[error("nats target must be scheme, host and port only")]
    Extra,
    /// The host is empty or has characters a host cannot have.
    #[error("nats target host is empty or invalid")]
    InvalidHost,
    /// The port is empty, not a number, zero or above 65535.
    #[error("nats target port is invalid")]
    InvalidPort,
}

/// One approved NATS server: `nats://host[:port]` or `tls://host[:port]`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NatsTarget {
    tls: bool,
    host: String,
    port: u16,
}

impl NatsTarget {
    /// Parses `nats://host[:port]` or `tls://host[:port]` (port 4222 when
    /// omitted). Hosts are DNS names, IPv4 literals or bracketed IPv6
    /// literals.
    ///
    /// # Errors
    ///
    /// The [`NatsTargetError`] naming the first part that is not allowed.
    pub fn parse(text: &str) -> Result<Self, NatsTargetError> {
        let (scheme, authority) = text
            .split_once("://")
            .ok_or(NatsTargetError::UnsupportedScheme)?;
        let tls = if scheme.eq_ignore_ascii_case("nats") {
            false
        } else if scheme.eq_ignore_ascii_case("tls") {
            true
        } else {
            return Err(NatsTargetError::UnsupportedScheme);
        };
        if authority.contains('@') {
            return Err(NatsTargetError::Userinfo);
        }
        if authority.contains(['/', '?', '#']) {
            return Err(NatsTargetError::Extra);
        }
        let (host, port) = split_host_port(authority)?;
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => parse_port(port)?,
        };
        Ok(Self {
            tls,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// True for `tls://`: the connection runs TLS to [`Self::host`].
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The host, as configured (IPv6 literals keep their brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server address handed to the client.
    pub(crate) fn server_addr(&self) -> String {
        self.to_string()
    }
}

impl fmt::Debug for NatsTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NatsTarget({self})")
    }
}

impl fmt::Display for NatsTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "tls" } else { "nats" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

impl From<AuthorityError> for NatsTargetError {
    fn from(error: AuthorityError) -> Self {
        match error {
            AuthorityError::InvalidHost => Self::InvalidHost,
            AuthorityError::InvalidPort => Self::InvalidPort,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_scheme_host_and_port() {
        let target = NatsTarget::parse("nats://127.0.0.1:4333").expect("valid");
        assert!(!target.is_tls());
        assert_eq!((target.host(), target.port()), ("127.0.0.1", 4333));
        assert_eq!(target.to_string(), "nats://127.0.0.1:4333");
        let target = NatsTarget::parse("TLS://Nats.Example").expect("valid");
        assert!(target.is_tls());
        assert_eq!(target.to_string(), "tls://nats.example:4222");
        let target = NatsTarget::parse("nats://[::1]:5").expect("valid");
        assert_eq!(target.host(), "[::1]");
    }

    #[test]
    fn refuses_everything_else() {
        for (text, error) in [
            ("127.0.0.1:4222", NatsTargetError::UnsupportedScheme),
            ("http://127.0.0.1:4222", NatsTargetError::UnsupportedScheme),
            ("ws://h:1", NatsTargetError::UnsupportedScheme),
            ("nats://user:pass@h:1", NatsTargetError::Userinfo),
            ("nats://token@h", NatsTargetError::Userinfo),
            ("nats://h:1/", NatsTargetError::Extra),
            ("nats://h:1?x", NatsTargetError::Extra),
            ("nats://h#f", NatsTargetError::Extra),
            ("nats://:1", NatsTargetError::InvalidHost),
            ("nats://h_x:1", NatsTargetError::InvalidHost),
            ("nats://[zz]:1", NatsTargetError::InvalidHost),
            ("nats://h:", NatsTargetError::InvalidPort),
            ("nats://h:0", NatsTargetError::InvalidPort),
            ("nats://h:65536", NatsTargetError::InvalidPort),
            ("nats://h:1x", NatsTargetError::InvalidPort),
        ] {
            assert_eq!(NatsTarget::parse(text), Err(error), "{text}");
        }
    }
}
