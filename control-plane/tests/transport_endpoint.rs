//! Secure endpoint validation: https everywhere, plain http to loopback
//! only, never userinfo, query or fragment; the normalized form is what is
//! kept and joined.

use provider_pools_control_plane::transport::{Endpoint, Scheme, MAX_ENDPOINT_BYTES};
use provider_pools_control_plane::{ControlPlaneError, ErrorCode};

/// `(input, normalized base, scheme, host, port, base path, loopback)`.
const ACCEPTED: &[(&str, &str, Scheme, &str, u16, &str, bool)] = &[
    (
        "https://cp.example.com",
        "https://cp.example.com",
        Scheme::Https,
        "cp.example.com",
        443,
        "",
        false,
    ),
    (
        "https://cp.example.com/",
        "https://cp.example.com",
        Scheme::Https,
        "cp.example.com",
        443,
        "",
        false,
    ),
    (
        "HTTPS://CP.Example.COM:8443/Base/",
        "https://cp.example.com:8443/Base",
        Scheme::Https,
        "cp.example.com",
        8443,
        "/Base",
        false,
    ),
    (
        "https://10.0.0.7:443/control/v",
        "https://10.0.0.7/control/v",
        Scheme::Https,
        "10.0.0.7",
        443,
        "/control/v",
        false,
    ),
    (
        "https://[2001:db8::1]:9443",
        "https://[2001:db8::1]:9443",
        Scheme::Https,
        "[2001:db8::1]",
        9443,
        "",
        false,
    ),
    (
        "http://127.0.0.1:7000",
        "http://127.0.0.1:7000",
        Scheme::Http,
        "127.0.0.1",
        7000,
        "",
        true,
    ),
    (
        "http://127.0.0.2",
        "http://127.0.0.2",
        Scheme::Http,
        "127.0.0.2",
        80,
        "",
        true,
    ),
    (
        "http://127.255.255.254:1/",
        "http://127.255.255.254:1",
        Scheme::Http,
        "127.255.255.254",
        1,
        "",
        true,
    ),
    (
        "http://[::1]:80",
        "http://[::1]",
        Scheme::Http,
        "[::1]",
        80,
        "",
        true,
    ),
    (
        "http://[0:0:0:0:0:0:0:1]:8080/cp",
        "http://[::1]:8080/cp",
        Scheme::Http,
        "[::1]",
        8080,
        "/cp",
        true,
    ),
    (
        "http://localhost",
        "http://localhost",
        Scheme::Http,
        "localhost",
        80,
        "",
        true,
    ),
    (
        "HTTP://LocalHost:65535/a/b/",
        "http://localhost:65535/a/b",
        Scheme::Http,
        "localhost",
        65535,
        "/a/b",
        true,
    ),
    // What is kept is what is dialled: the parser's normal form.
    (
        "http://127.1:9",
        "http://127.0.0.1:9",
        Scheme::Http,
        "127.0.0.1",
        9,
        "",
        true,
    ),
    (
        "http://0x7f.0.0.1",
        "http://127.0.0.1",
        Scheme::Http,
        "127.0.0.1",
        80,
        "",
        true,
    ),
    (
        "https://cp.example.com/a/./b/../c",
        "https://cp.example.com/a/c",
        Scheme::Https,
        "cp.example.com",
        443,
        "/a/c",
        false,
    ),
    (
        "https://bücher.example",
        "https://xn--bcher-kva.example",
        Scheme::Https,
        "xn--bcher-kva.example",
        443,
        "",
        false,
    ),
];

#[test]
fn accepted_endpoints_keep_their_normalized_form() {
    for &(input, base, scheme, host, port, path, loopback) in ACCEPTED {
        let endpoint = Endpoint::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(endpoint.as_str(), base, "{input}");
        assert_eq!(endpoint.to_string(), base, "{input}");
        assert_eq!(endpoint.scheme(), scheme, "{input}");
        assert_eq!(endpoint.host(), host, "{input}");
        assert_eq!(endpoint.port(), port, "{input}");
        assert_eq!(endpoint.base_path(), path, "{input}");
        assert_eq!(endpoint.is_loopback(), loopback, "{input}");
        assert_eq!(input.parse::<Endpoint>().expect("FromStr"), endpoint);
    }
}

/// `(input, what the reason mentions)`: refused as insecure.
const INSECURE: &[(&str, &str)] = &[
    ("http://example.com", "loopback"),
    ("http://cp.example.com:8080/base", "loopback"),
    ("http://127.0.0.1.evil.com", "loopback"),
    ("http://localhost.evil.com", "loopback"),
    ("http://localhost.", "loopback"),
    ("http://evil-localhost", "loopback"),
    ("http://10.0.0.1", "loopback"),
    ("http://0.0.0.0", "loopback"),
    ("http://128.0.0.1", "loopback"),
    ("http://[::]", "loopback"),
    ("http://[::2]", "loopback"),
    ("http://[2001:db8::1]:80", "loopback"),
    ("http://[::ffff:127.0.0.1]", "loopback"),
    ("https://user@host.example", "userinfo"),
    ("https://user:hunter2@host.example", "userinfo"),
    ("https://:hunter2@host.example", "userinfo"),
    ("https://@host.example", "userinfo"),
    ("http://user:hunter2@127.0.0.1", "userinfo"),
    ("https://host.example@evil.example/", "userinfo"),
];

#[test]
fn insecure_endpoints_are_refused_without_quoting_them() {
    for &(input, mentions) in INSECURE {
        let error = Endpoint::parse(input).expect_err(input);
        assert_eq!(
            error.code(),
            ErrorCode::InsecureEndpoint,
            "{input}: {error}"
        );
        let ControlPlaneError::InsecureEndpoint { reason } = &error else {
            unreachable!()
        };
        assert!(reason.contains(mentions), "{input}: {reason}");
        assert!(!error.to_string().contains("hunter2"), "{input}: {error}");
    }
}

/// `(input, what the reason mentions)`: refused as malformed.
const MALFORMED: &[(&str, &str)] = &[
    ("", "empty"),
    ("cp.example.com", "absolute URL"),
    ("https:cp.example.com", "absolute URL"),
    ("//cp.example.com", "absolute URL"),
    ("://cp.example.com", "scheme"),
    ("ftp://cp.example.com", "scheme"),
    ("wss://cp.example.com", "scheme"),
    ("https://", "host"),
    ("http://", "host"),
    ("https:///path", "host"),
    ("https://:443", "host"),
    ("https://cp.example.com:0", "port 0"),
    ("https://cp.example.com:65536", "port"),
    ("https://cp.example.com:-1", "port"),
    ("https://cp.example.com:http", "port"),
    ("https://cp.example.com/?a=1", "query"),
    ("https://cp.example.com?", "query"),
    ("https://cp.example.com/#top", "fragment"),
    ("https://cp.example.com/ base", "whitespace"),
    (" https://cp.example.com", "whitespace"),
    ("https://cp.example.com\t", "whitespace"),
    ("https://cp.exa\nmple.com", "control"),
    ("https://cp.example.com/\u{0}", "control"),
    ("https://cp.example.com\u{7f}", "control"),
    ("https://cp.example.com\\base", "backslash"),
    ("http://[::1", "IPv6"),
    ("https://cp example.com", "whitespace"),
    ("https://exa%00mple.com", "domain"),
];

#[test]
fn malformed_endpoints_are_invalid_naming_the_field() {
    for &(input, mentions) in MALFORMED {
        let error = Endpoint::parse(input).expect_err(input);
        let ControlPlaneError::Invalid { field, reason } = &error else {
            panic!("{input:?}: expected Invalid, got {error:?}");
        };
        assert_eq!(*field, "endpoint", "{input:?}");
        assert!(
            reason.to_lowercase().contains(&mentions.to_lowercase()),
            "{input:?}: {reason}"
        );
    }
}

#[test]
fn an_endpoint_longer_than_the_bound_is_invalid() {
    let long = format!("https://cp.example.com/{}", "a".repeat(MAX_ENDPOINT_BYTES));
    let error = Endpoint::parse(&long).expect_err("too long");
    assert_eq!(error.code(), ErrorCode::Invalid);
    assert!(error.to_string().contains("longer than"), "{error}");
    let fits = format!("https://h.example/{}", "a".repeat(MAX_ENDPOINT_BYTES - 18));
    assert_eq!(fits.len(), MAX_ENDPOINT_BYTES);
    Endpoint::parse(&fits).expect("exactly the bound");
}

#[test]
fn join_puts_exactly_one_slash_between_base_and_path() {
    let bare = Endpoint::parse("https://cp.example.com").expect("bare");
    let based = Endpoint::parse("https://cp.example.com:8443/control/").expect("based");
    let v6 = Endpoint::parse("http://[::1]:7000").expect("v6");
    assert_eq!(
        bare.join("/v1/leases/acquire"),
        "https://cp.example.com/v1/leases/acquire"
    );
    assert_eq!(
        bare.join("v1/presence"),
        "https://cp.example.com/v1/presence"
    );
    assert_eq!(
        based.join("/v1/leases/acquire"),
        "https://cp.example.com:8443/control/v1/leases/acquire"
    );
    assert_eq!(
        based.join("v1/x"),
        "https://cp.example.com:8443/control/v1/x"
    );
    assert_eq!(v6.join("/v1/x"), "http://[::1]:7000/v1/x");
    assert_eq!(bare.join(""), "https://cp.example.com/");
}
