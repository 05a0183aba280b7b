//! The rule over every userinfo spelling, by example and by property.

use proptest::prelude::*;

use super::{redact_setting, redact_urls_in, redact_userinfo, REDACTED, USERINFO};

const SECRET: &str = "s3cret-PLANTED";

#[test]
fn every_userinfo_form_is_redacted() {
    for url in [
        format!("https://user:{SECRET}@host/base"),
        format!("https://{SECRET}@host"),
        format!("https://:{SECRET}@host"),
        format!("https:user:{SECRET}@host"),
        format!("https:{SECRET}@host"),
        format!("{SECRET}:x@host"),
        format!("HTTPS://user:{SECRET}@HOST:8443"),
        format!("HtTpS:\\\\user:{SECRET}@host"),
        format!("http:/user:{SECRET}@127.0.0.1:1"),
        format!("//user:{SECRET}@host/path"),
        format!("\\\\user:{SECRET}@host"),
        format!("user:{SECRET}@host"),
        format!("  https://user:{SECRET}@host"),
        format!("https://a@b:{SECRET}@host?q"),
        format!("https://user:{SECRET}@[::1]:8443/x"),
        format!("https://user:{SECRET}@[2001:db8::1]"),
        format!("https://user%3A{SECRET}@host"),
        format!("https://user:{SECRET}%40host"),
        format!("https://user:{SECRET}%40host%40evil"),
        format!("nats://{SECRET}@127.0.0.1:4222"),
    ] {
        let shown = redact_userinfo(&url);
        assert!(!shown.contains(SECRET), "{url} -> {shown}");
        assert!(shown.contains(USERINFO), "{url} -> {shown}");
    }
}

#[test]
fn hosts_ports_and_paths_are_kept() {
    assert_eq!(
        redact_userinfo("https://u:p@[2001:db8::1]:8443/a?b#c"),
        "https://<userinfo>@[2001:db8::1]:8443/a?b#c"
    );
    assert_eq!(
        redact_userinfo("HTTPS:\\\\u:p@host\\x"),
        "HTTPS:\\\\<userinfo>@host\\x"
    );
    assert_eq!(redact_userinfo("//u@host"), "//<userinfo>@host");
    assert_eq!(redact_userinfo("https:u:p@host"), "<userinfo>@host");
}

#[test]
fn text_without_userinfo_is_borrowed_unchanged() {
    for text in [
        "https://host/a@b",
        "https://host?x=a@b",
        "https://host#a@b",
        "https://[::1]:443",
        "file:local",
        "/var/lib/node/blobs",
        "",
        "@",
    ] {
        let shown = redact_userinfo(text);
        if text == "@" {
            assert_eq!(shown, "<userinfo>@");
        } else {
            assert!(matches!(shown, std::borrow::Cow::Borrowed(_)), "{text}");
            assert_eq!(shown, text);
        }
    }
}

#[test]
fn urls_quoted_in_free_text_are_redacted() {
    let message = format!(
        "invalid type: string \"https:u:{SECRET}@h\", expected `http://x:{SECRET}@y` (or endpoint=//{SECRET}@z)"
    );
    let shown = redact_urls_in(&message);
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.starts_with("invalid type: string \""), "{shown}");
    assert_eq!(redact_urls_in("no urls here"), "no urls here");
}

#[test]
fn settings_named_like_secrets_are_hidden_whole() {
    for key in [
        "password",
        "DB_PASSWORD",
        "token",
        "api-key",
        "client_secret",
        "Credential",
    ] {
        assert_eq!(redact_setting(key, SECRET), REDACTED, "{key}");
    }
    assert_eq!(redact_setting("mount", "kv"), "kv");
    let endpoint = format!("https:u:{SECRET}@h");
    let shown = redact_setting("endpoint", &endpoint);
    assert!(!shown.contains(SECRET), "{shown}");
}

/// A scheme spelling: its letters in any case, then a separator.
fn scheme() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["http", "https", "nats", "tls", "s3", "x+y.z-1"]);
    let separator = prop::sample::select(vec!["://", ":", ":/", ":\\\\", ":\\", "//", ""]);
    (name, separator, any::<u64>()).prop_map(|(name, separator, case)| {
        let name: String = name
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if case >> (i % 64) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        if separator == "//" {
            separator.to_owned()
        } else {
            format!("{name}{separator}")
        }
    })
}

/// Userinfo holding the secret, raw or percent-encoded, with or without a
/// user part, ending in `@` or `%40`.
fn userinfo() -> impl Strategy<Value = String> {
    let user = prop::sample::select(vec!["", "user", "a@b", "u%3Av", "ghp_x"]);
    let joiner = prop::sample::select(vec![":", "%3A", "%3a", ""]);
    let at = prop::sample::select(vec!["@", "%40"]);
    (user, joiner, at).prop_map(|(user, joiner, at)| format!("{user}{joiner}{SECRET}{at}"))
}

fn host() -> impl Strategy<Value = String> {
    let host = prop::sample::select(vec![
        "host",
        "api.example.net",
        "127.0.0.1",
        "[::1]",
        "[2001:db8::1]",
        "[fe80::1%25eth0]",
    ]);
    let port = prop::option::of(1u16..);
    (host, port).prop_map(|(host, port)| match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

fn tail() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "/", "/base/v1", "?q=a@b", "#f", "\\x", "/a@b"])
}

proptest! {
    #[test]
    fn no_spelling_of_userinfo_shows_the_secret(
        scheme in scheme(),
        userinfo in userinfo(),
        host in host(),
        tail in tail(),
    ) {
        let url = format!("{scheme}{userinfo}{host}{tail}");
        let shown = redact_userinfo(&url);
        prop_assert!(!shown.contains(SECRET), "{} -> {}", url, shown);
        prop_assert!(shown.contains(&host), "{} -> {}", url, shown);
        prop_assert!(shown.ends_with(tail), "{} -> {}", url, shown);
        let quoted = format!("bad value \"{url}\" at line 3");
        prop_assert!(!redact_urls_in(&quoted).contains(SECRET));
    }

    #[test]
    fn text_without_an_at_sign_is_unchanged(text in "[^@%]*") {
        prop_assert_eq!(redact_userinfo(&text), text.as_str());
        prop_assert_eq!(redact_urls_in(&text), text.as_str());
    }
}
