//! An error shows its cause once: either in its message or from
//! `source()`, never both, so a printer that walks the chain (`{:#}` of
//! anyhow, tracing's error fields, a host's own loop) prints every cause
//! once. The one way the workspace makes errors is thiserror, so the check
//! reads the library sources: no `#[error("…")]` message may name a field
//! that is the variant's source (`#[source]`, `#[from]`, or a field named
//! `source`). A method of the source in the message (`.0.kind()`) is a
//! summary, not the cause, and is allowed. The engine's errors are also
//! walked at run time.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use provider_pools::{
    AdmitError, Denied, InstallError, LimitField, LimitsError, ProviderId, SpawnError, StartError,
    TenantId,
};

/// The library source roots of the workspace, relative to this crate.
const ROOTS: [&str; 8] = [
    "src",
    "actors/src",
    "adapters/src",
    "cluster/src",
    "control-plane/src",
    "mailbox/src",
    "redact/src",
    "tls-roots/src",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first string literal of `text` (escapes kept) and what follows it.
fn literal(text: &str) -> Option<(&str, &str)> {
    let start = text.find('"')? + 1;
    let bytes = text.as_bytes();
    let mut at = start;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some((&text[start..at], &text[at + 1..])),
            _ => at += 1,
        }
    }
    None
}

/// The fields a message shows: `{name}`/`{0}` placeholders (with or
/// without a format spec) and format arguments that are a bare field
/// (`.0`, `.source`), not a method of one.
fn shown_fields(attribute: &str) -> Vec<String> {
    let Some((message, arguments)) = literal(attribute) else {
        return Vec::new();
    };
    let mut shown = Vec::new();
    let mut rest = message;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        if let Some(escaped) = after.strip_prefix('{') {
            rest = escaped;
            continue;
        }
        let Some(close) = after.find('}') else { break };
        let name = after[..close].split(':').next().unwrap_or("");
        if !name.is_empty() {
            shown.push(name.to_owned());
        }
        rest = &after[close..];
    }
    for argument in arguments.split([',', ')']) {
        let argument = argument.split('=').next_back().unwrap_or("").trim();
        if let Some(field) = argument.strip_prefix('.') {
            if !field.contains('.') && !field.contains('(') && !field.is_empty() {
                shown.push(field.to_owned());
            }
        }
    }
    shown
}

/// The source fields of the variant declared in `lines` (after its
/// attributes): tuple positions or field names.
fn source_fields(lines: &[&str]) -> Vec<String> {
    let Some(head) = lines.iter().position(|l| {
        let t = l.trim_start();
        !(t.starts_with("///") || t.starts_with("#[") || t.is_empty())
    }) else {
        return Vec::new();
    };
    let declaration = lines[head].trim();
    let mut sources = Vec::new();
    let tuple = declaration
        .find('(')
        .filter(|&p| declaration.find('{').is_none_or(|b| p < b));
    if let Some(open) = tuple {
        let mut text = declaration[open + 1..].to_owned();
        for line in &lines[head + 1..] {
            if text.contains(')') {
                break;
            }
            text.push_str(line.trim());
        }
        let inner = text.rsplit_once(')').map_or(text.as_str(), |(a, _)| a);
        for (index, part) in inner.split(',').enumerate() {
            if part.contains("#[source]") || part.contains("#[from]") {
                sources.push(index.to_string());
            }
        }
    } else if declaration.ends_with('{') {
        let mut marked = false;
        for line in &lines[head + 1..] {
            let t = line.trim();
            if t.starts_with('}') {
                break;
            }
            if t.starts_with("#[source]") || t.starts_with("#[from]") {
                marked = true;
                continue;
            }
            if t.starts_with("///") || t.starts_with("#[") {
                continue;
            }
            if let Some((name, _)) = t.split_once(':') {
                let name = name.trim().trim_start_matches("pub ").trim();
                if marked || name == "source" || t.contains("#[source]") || t.contains("#[from]") {
                    sources.push(name.to_owned());
                }
                marked = false;
            }
        }
    }
    sources
}

/// Every `#[error]` of `source` whose message shows a source field, as
/// `name:line: field`.
fn repeated_causes(name: &str, source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if !lines[at].trim_start().starts_with("#[error(") {
            at += 1;
            continue;
        }
        let start = at;
        let mut attribute = lines[at].trim().to_owned();
        while !attribute.ends_with(")]") && at + 1 < lines.len() {
            at += 1;
            attribute.push_str(lines[at].trim());
        }
        at += 1;
        if attribute.contains("transparent") {
            continue;
        }
        let sources = source_fields(&lines[at..]);
        for field in shown_fields(&attribute) {
            if sources.contains(&field) {
                found.push(format!("{name}:{}: {field}", start + 1));
            }
        }
    }
    found
}

#[test]
fn no_error_message_repeats_its_source() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for root in ROOTS {
        rust_files(&workspace.join(root), &mut files);
    }
    let mut repeated = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("a readable source");
        let name = file
            .strip_prefix(workspace)
            .unwrap_or(file)
            .display()
            .to_string();
        repeated.extend(repeated_causes(&name, &text));
    }
    assert!(
        repeated.is_empty(),
        "messages that show their source (return it from `source()` or show it, not both):\n{}",
        repeated.join("\n")
    );
}

#[test]
fn the_check_flags_a_message_that_shows_its_source() {
    let source = r#"
pub enum E {
    /// Shows it.
    #[error("denied: {0}")]
    Denied(#[source] Inner),
    #[error("wrapped")]
    Wrapped(#[from] Inner),
    #[error("read: {}", .0)]
    Read(#[source] std::io::Error),
    #[error("open: {}", .0.kind())]
    Open(#[source] std::io::Error),
    #[error("install {provider}: {source}")]
    Install {
        provider: String,
        source: Inner,
    },
    #[error("start: {cause}")]
    Start {
        #[source]
        cause: Inner,
    },
    #[error("plain {0}")]
    Plain(String),
    #[error(transparent)]
    Through(#[from] Inner),
}
"#;
    assert_eq!(
        repeated_causes("e.rs", source),
        vec![
            "e.rs:4: 0".to_owned(),
            "e.rs:8: 0".to_owned(),
            "e.rs:12: source".to_owned(),
            "e.rs:17: cause".to_owned(),
        ]
    );
}

/// Every message of `error`'s chain, outermost first.
fn chain(error: &dyn Error) -> Vec<String> {
    let mut messages = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        messages.push(cause.to_string());
        next = cause.source();
    }
    messages
}

/// Fails when a message of the chain contains the next one's text.
fn assert_each_cause_shown_once(error: &dyn Error) {
    let messages = chain(error);
    assert!(
        messages.len() > 1,
        "a wrapped cause is the source: {messages:?}"
    );
    for pair in messages.windows(2) {
        assert!(
            !pair[0].contains(&pair[1]),
            "{:?} repeats its cause {:?}",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn the_engines_wrapped_errors_show_each_cause_once() {
    let limits = LimitsError::Zero {
        field: LimitField::Connections,
    };
    assert_each_cause_shown_once(&StartError::Limits(limits));
    assert_each_cause_shown_once(&InstallError::Spawn {
        cause: SpawnError::Controls,
    });
    let denied = Denied {
        tenant: TenantId::new("acme").expect("a tenant id"),
        provider: ProviderId::new("weather").expect("a provider id"),
    };
    assert_each_cause_shown_once(&AdmitError::Revoked(denied));
}
