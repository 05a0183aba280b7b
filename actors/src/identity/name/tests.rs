//! Valid and invalid examples for every string identity.

use std::sync::Arc;

use super::{Authority, IdentityError, IdentityKind, ProviderId, ServiceName, TenantId};

#[test]
fn provider_id_accepts_its_alphabet() {
    for value in ["a", "7", "billing-api", "s3.eu_west-1", &"a".repeat(64)] {
        assert_eq!(
            ProviderId::new(value).map(|id| id.to_string()),
            Ok(value.to_owned())
        );
    }
}

#[test]
fn provider_id_refuses_bad_input() {
    let kind = IdentityKind::ProviderId;
    let cases = [
        ("", IdentityError::Empty { kind }),
        (
            &"a".repeat(65),
            IdentityError::TooLong {
                kind,
                len: 65,
                max: 64,
            },
        ),
        (
            "Api",
            IdentityError::BadChar {
                kind,
                index: 0,
                ch: 'A',
            },
        ),
        (
            "a/b",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: '/',
            },
        ),
        (
            "ab:c",
            IdentityError::BadChar {
                kind,
                index: 2,
                ch: ':',
            },
        ),
        (
            "aé",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: 'é',
            },
        ),
        ("-a", IdentityError::BadStart { kind }),
        ("_a", IdentityError::BadStart { kind }),
        (".a", IdentityError::BadStart { kind }),
    ];
    for (value, error) in cases {
        assert_eq!(ProviderId::new(value), Err(error), "{value:?}");
    }
}

#[test]
fn service_name_accepts_inner_slashes() {
    for value in ["a", "billing/v1/charges", "a/b.c/d_e-f", &"s".repeat(128)] {
        assert_eq!(
            ServiceName::new(value).map(|name| name.to_string()),
            Ok(value.to_owned())
        );
    }
}

#[test]
fn service_name_refuses_bad_input() {
    let kind = IdentityKind::ServiceName;
    let cases = [
        ("", IdentityError::Empty { kind }),
        (
            &"s".repeat(129),
            IdentityError::TooLong {
                kind,
                len: 129,
                max: 128,
            },
        ),
        (
            "a b",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: ' ',
            },
        ),
        (
            "Billing",
            IdentityError::BadChar {
                kind,
                index: 0,
                ch: 'B',
            },
        ),
        ("-a/b", IdentityError::BadStart { kind }),
        ("/a", IdentityError::BadSeparator { kind }),
        ("/", IdentityError::BadSeparator { kind }),
        ("a/", IdentityError::BadSeparator { kind }),
        ("a//b", IdentityError::BadSeparator { kind }),
    ];
    for (value, error) in cases {
        assert_eq!(ServiceName::new(value), Err(error), "{value:?}");
    }
}

#[test]
fn tenant_id_accepts_either_case_and_colons() {
    for value in ["T", "Acme:prod-1", "org.example_TEAM:7", &"T".repeat(128)] {
        assert_eq!(
            TenantId::new(value).map(|id| id.to_string()),
            Ok(value.to_owned())
        );
    }
}

#[test]
fn tenant_id_refuses_bad_input() {
    let kind = IdentityKind::TenantId;
    let cases = [
        ("", IdentityError::Empty { kind }),
        (
            &"T".repeat(129),
            IdentityError::TooLong {
                kind,
                len: 129,
                max: 128,
            },
        ),
        (
            "abc d",
            IdentityError::BadChar {
                kind,
                index: 3,
                ch: ' ',
            },
        ),
        (
            "a/b",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: '/',
            },
        ),
        (":a", IdentityError::BadStart { kind }),
        ("-a", IdentityError::BadStart { kind }),
    ];
    for (value, error) in cases {
        assert_eq!(TenantId::new(value), Err(error), "{value:?}");
    }
}

#[test]
fn authority_accepts_printable_ascii() {
    let long = "~".repeat(256);
    for value in [
        "https://api.example.com:443",
        "vault:kv/app",
        "-",
        "!~",
        &long,
    ] {
        assert_eq!(
            Authority::new(value).map(|a| a.to_string()),
            Ok(value.to_owned())
        );
    }
}

#[test]
fn authority_refuses_bad_input() {
    let kind = IdentityKind::Authority;
    let cases = [
        ("", IdentityError::Empty { kind }),
        (
            &"a".repeat(257),
            IdentityError::TooLong {
                kind,
                len: 257,
                max: 256,
            },
        ),
        (
            "a b",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: ' ',
            },
        ),
        (
            "a\tb",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: '\t',
            },
        ),
        (
            "\u{7f}",
            IdentityError::BadChar {
                kind,
                index: 0,
                ch: '\u{7f}',
            },
        ),
        (
            "hé",
            IdentityError::BadChar {
                kind,
                index: 1,
                ch: 'é',
            },
        ),
        (
            "https://user:s3cret@host",
            IdentityError::BadChar {
                kind,
                index: 19,
                ch: '@',
            },
        ),
        (
            "https://user:s3cret%40host",
            IdentityError::BadChar {
                kind,
                index: 19,
                ch: '%',
            },
        ),
    ];
    for (value, error) in cases {
        assert_eq!(Authority::new(value), Err(error), "{value:?}");
    }
}

#[test]
fn error_messages_are_exact() {
    let too_long = ProviderId::new("a".repeat(70)).map_err(|error| error.to_string());
    assert_eq!(
        too_long,
        Err("provider id is 70 bytes, more than 64".to_owned())
    );
    let bad_char = TenantId::new("abc d").map_err(|error| error.to_string());
    assert_eq!(
        bad_char,
        Err("tenant id has a forbidden character ' ' at byte 3".to_owned())
    );
}

#[test]
fn error_does_not_echo_the_input() {
    let secretish = "token=hunter2 and more";
    let message = TenantId::new(secretish)
        .map(|_| ())
        .expect_err("'=' is forbidden")
        .to_string();
    assert!(!message.contains("hunter2"), "{message}");
}

#[test]
fn conversions_agree_and_clones_share_storage() {
    let parsed: ServiceName = "billing/v1".parse().expect("valid service name");
    let tried = ServiceName::try_from(String::from("billing/v1")).expect("valid service name");
    assert_eq!(parsed, tried);
    assert_eq!(parsed.as_ref(), "billing/v1");
    assert_eq!(parsed.as_str(), parsed.to_string());
    assert!("Billing".parse::<ServiceName>().is_err());
    assert!(ServiceName::try_from(String::new()).is_err());
    let clone = parsed.clone();
    assert!(Arc::ptr_eq(&parsed.0, &clone.0));
}

#[test]
fn order_and_equality_follow_the_string() {
    let a = ProviderId::new("a").expect("valid provider id");
    let b = ProviderId::new("b").expect("valid provider id");
    assert!(a < b);
    assert_eq!(
        a,
        ProviderId::new(String::from("a")).expect("valid provider id")
    );
}
