//! The `host[:port]` part of an approved target, shared by the adapters
//! whose targets name a network server (HTTP origins, NATS servers).
//!
//! Invariants:
//! - A host is a DNS name or IPv4 address of `[A-Za-z0-9.-]` (at most 253
//!   bytes; dot-separated labels of 1–63 bytes that neither start nor end
//!   with `-`, so `-`, `.` and `..` are refused), or a bracketed literal
//!   that `std::net::Ipv6Addr` parses (so `[:::::]` is refused).
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
        if literal.parse::<std::net::Ipv6Addr>().is_err() {
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
    if host.is_empty() || host.len() > 253 || !host.split('.').all(is_label) {
        return Err(AuthorityError::InvalidHost);
    }
    Ok((host, port))
}

/// A DNS label: 1–63 letters, digits and `-`, not starting or ending
/// with `-`.
fn is_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_that_no_resolver_accepts_are_refused() {
        for bad in [
            "-",
            ".",
            "..",
            "a..b",
            "-a.b",
            "a-.b",
            "[:::::]",
            "[]",
            "[1::2::3]",
        ] {
            assert_eq!(
                split_host_port(bad),
                Err(AuthorityError::InvalidHost),
                "{bad}"
            );
        }
        for good in [
            "a",
            "api.example.net",
            "127.0.0.1",
            "[::1]",
            "[2001:db8::1]",
            "x-1.y",
        ] {
            assert!(split_host_port(good).is_ok(), "{good}");
        }
    }
}
