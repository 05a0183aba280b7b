//! The `host[:port]` part of an approved target, shared by the adapters
//! whose targets name a network server (HTTP origins, NATS servers).
//!
//! Invariants:
//! - A host is a DNS name or IPv4 address of `[A-Za-z0-9.-]` (at most 253
//!   bytes), or a bracketed IPv6 literal of hex digits and `:`.
//! - A port is 1 to 65535, written with digits only.

/// Which part of an authority was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthorityError {
    /// The host is empty, too long, or has a character no host has.
    InvalidHost,
    /// The port is empty, zero, too large, or not digits.
    InvalidPort,
}

/// Splits `authority` into its host (IPv6 literals keep their brackets)
/// and its port text, when one is written.
pub(crate) fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), AuthorityError> {
    if let Some(rest) = authority.strip_prefix('[') {
        let close = rest.find(']').ok_or(AuthorityError::InvalidHost)?;
        let literal = &rest[..close];
        if literal.is_empty() || !literal.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return Err(AuthorityError::InvalidHost);
        }
        let host = &authority[..close + 2];
        return match &rest[close + 1..] {
            "" => Ok((host, None)),
            tail => tail
                .strip_prefix(':')
                .map(|port| (host, Some(port)))
                .ok_or(AuthorityError::InvalidHost),
        };
    }
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    if host.is_empty() || host.len() > 253 || !host.bytes().all(valid) {
        return Err(AuthorityError::InvalidHost);
    }
    Ok((host, port))
}

/// Parses a port of 1 to 65535.
pub(crate) fn parse_port(port: &str) -> Result<u16, AuthorityError> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AuthorityError::InvalidPort);
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(AuthorityError::InvalidPort),
        Ok(port) => Ok(port),
    }
}
