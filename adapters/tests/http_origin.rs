//! Approved origins and guest request targets: only `http://host:port`
//! and `https://host:port` origins are approved, and a guest names only an origin-form target —
//! never a URL, another authority, userinfo or an escaping path.

use provider_pools_adapters::http_origin::{
    ApprovedOrigin, OriginError, RequestTarget, TargetError, MAX_TARGET,
};

#[test]
fn an_approved_origin_is_scheme_host_and_port() {
    let origin = ApprovedOrigin::parse("http://127.0.0.1:8080").expect("valid");
    assert_eq!(
        (origin.scheme(), origin.host(), origin.port()),
        ("http", "127.0.0.1", 8080)
    );
    assert_eq!(origin.host_header(), "127.0.0.1:8080");

    let origin = ApprovedOrigin::parse("HTTP://Api.Example.com").expect("valid");
    assert_eq!((origin.host(), origin.port()), ("api.example.com", 80));
    assert_eq!(origin.host_header(), "api.example.com");

    let origin = ApprovedOrigin::parse("http://[::1]:9000").expect("valid");
    assert_eq!((origin.host(), origin.port()), ("[::1]", 9000));
    assert_eq!(origin.connect_address(), "[::1]:9000");
}

#[test]
fn an_https_origin_defaults_to_port_443() {
    let origin = ApprovedOrigin::parse("HTTPS://Api.Example.com").expect("valid");
    assert_eq!(
        (
            origin.scheme(),
            origin.host(),
            origin.port(),
            origin.is_tls()
        ),
        ("https", "api.example.com", 443, true)
    );
    assert_eq!(origin.host_header(), "api.example.com");
    assert_eq!(origin.connect_address(), "api.example.com:443");
    assert_eq!(origin.to_string(), "https://api.example.com:443");

    let origin = ApprovedOrigin::parse("https://127.0.0.1:8443").expect("valid");
    assert_eq!(origin.host_header(), "127.0.0.1:8443");
    let origin = ApprovedOrigin::parse("https://localhost:80").expect("valid");
    assert_eq!(
        origin.host_header(),
        "localhost:80",
        "80 is not https's default"
    );
    assert!(!ApprovedOrigin::parse("http://localhost")
        .expect("valid")
        .is_tls());
}

#[test]
fn anything_but_an_http_or_https_origin_is_refused_naming_the_part() {
    let cases = [
        ("wss://api.example.com", OriginError::UnsupportedScheme),
        ("https:/api.example.com", OriginError::UnsupportedScheme),
        ("https://user@api.example.com", OriginError::Userinfo),
        ("https://api.example.com/", OriginError::Path),
        ("https://api.example.com:0", OriginError::InvalidPort),
        ("ftp://api.example.com", OriginError::UnsupportedScheme),
        ("api.example.com:80", OriginError::UnsupportedScheme),
        ("http://user:pw@api.example.com", OriginError::Userinfo),
        ("http://api.example.com/", OriginError::Path),
        ("http://api.example.com/v1", OriginError::Path),
        ("http://api.example.com?x=1", OriginError::Query),
        ("http://api.example.com#top", OriginError::Fragment),
        ("http://", OriginError::InvalidHost),
        ("http://:80", OriginError::InvalidHost),
        ("http://bad_host", OriginError::InvalidHost),
        ("http://[zz]:80", OriginError::InvalidHost),
        ("http://api.example.com:", OriginError::InvalidPort),
        ("http://api.example.com:0", OriginError::InvalidPort),
        ("http://api.example.com:65536", OriginError::InvalidPort),
        ("http://api.example.com:http", OriginError::InvalidPort),
    ];
    for (text, expected) in cases {
        assert_eq!(ApprovedOrigin::parse(text), Err(expected), "{text}");
    }
}

#[test]
fn approved_origins_refuse_hosts_no_resolver_accepts() {
    for host in [
        "-",
        ".",
        "..",
        "a..b",
        "-a.example",
        "a-.example",
        "[:::::]",
        "[]",
    ] {
        for text in [format!("http://{host}"), format!("https://{host}:8443")] {
            assert_eq!(
                ApprovedOrigin::parse(&text),
                Err(OriginError::InvalidHost),
                "{text}"
            );
        }
    }
    for text in ["http://a", "http://x-1.example:8080", "https://[::1]:8443"] {
        assert!(ApprovedOrigin::parse(text).is_ok(), "{text}");
    }
}

#[test]
fn origin_form_targets_are_accepted() {
    for text in [
        "/",
        "/v1/items",
        "/v1/items?limit=10&after=a%2Fb",
        "/a/../b",
    ] {
        let target = RequestTarget::parse(text).expect(text);
        assert_eq!(target.as_str(), text);
    }
}

#[test]
fn a_target_naming_another_origin_or_smuggling_bytes_is_refused() {
    let long = format!("/{}", "a".repeat(MAX_TARGET));
    let cases: Vec<(&str, TargetError)> = vec![
        ("", TargetError::Empty),
        (&long, TargetError::TooLong),
        ("http://evil.example/x", TargetError::AbsoluteUrl),
        ("HTTPS://evil.example", TargetError::AbsoluteUrl),
        ("mailto:someone", TargetError::AbsoluteUrl),
        ("//evil.example/x", TargetError::SchemeRelative),
        ("evil.example:443", TargetError::AuthorityForm),
        ("evil.example/x", TargetError::NotOriginForm),
        ("*", TargetError::NotOriginForm),
        ("/x@evil.example", TargetError::AtSign),
        ("/\\evil.example", TargetError::Backslash),
        ("\\\\evil.example", TargetError::Backslash),
        ("/x\r\nHost: evil.example", TargetError::Control),
        ("/x\nfoo", TargetError::Control),
        ("/x\0", TargetError::Control),
        ("/x\u{7f}", TargetError::Control),
        ("/x y", TargetError::Whitespace),
        ("/caf\u{e9}", TargetError::NonAscii),
        ("/x#frag", TargetError::Fragment),
    ];
    for (text, expected) in cases {
        assert_eq!(
            RequestTarget::parse(text).map(|t| t.as_str().to_owned()),
            Err(expected),
            "{text:?}"
        );
    }
}
