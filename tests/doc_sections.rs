//! Every public function that returns a future documents what dropping it
//! does (`# Cancel safety`) and, when it returns a `Result`, when it fails
//! (`# Errors`).
//!
//! The check reads the workspace's library sources (`src/`, `actors/src/`,
//! `adapters/src/`, `control-plane/src/`): each `pub async fn`, each
//! `pub fn` returning `impl Future` or a `BoxFuture`, and each trait method
//! declared (without a body) returning a `BoxFuture`, must carry those
//! headings in the `///` block directly above it (attributes may sit
//! between). A trait implementation inherits its trait's docs and is not
//! checked; `pub(crate)` items are not public.

use std::fs;
use std::path::{Path, PathBuf};

/// The library source roots of the workspace, relative to this crate.
const ROOTS: [&str; 4] = ["src", "actors/src", "adapters/src", "control-plane/src"];

/// One function missing a heading.
#[derive(Debug, PartialEq, Eq)]
struct Missing {
    location: String,
    heading: &'static str,
}

/// True when `signature` (from `fn` to its body or `;`) returns a future.
fn returns_future(line: &str, signature: &str) -> bool {
    let trimmed = line.trim_start();
    if trimmed.starts_with("pub async fn ") {
        return true;
    }
    let returns = signature.split_once("->").map(|(_, after)| after);
    let future = returns.is_some_and(|r| r.contains("impl Future") || r.contains("BoxFuture"));
    if trimmed.starts_with("pub fn ") {
        return future;
    }
    // A trait method declaration: `fn name(..) -> BoxFuture<..>;`.
    trimmed.starts_with("fn ") && future && signature.trim_end().ends_with(';')
}

/// The signature starting at `lines[start]`: up to the first `{` or `;`.
fn signature(lines: &[&str], start: usize) -> String {
    let mut text = String::new();
    for line in &lines[start..] {
        text.push_str(line);
        text.push('\n');
        let code = line.split("//").next().unwrap_or("");
        if code.contains('{') || code.trim_end().ends_with(';') {
            break;
        }
    }
    match text.find('{') {
        Some(body) => text[..body].to_owned(),
        None => text,
    }
}

/// The `///` lines directly above `lines[at]`, skipping attributes.
fn doc_above(lines: &[&str], at: usize) -> String {
    let mut doc = Vec::new();
    let mut index = at;
    while index > 0 {
        index -= 1;
        let line = lines[index].trim_start();
        if line.starts_with("///") {
            doc.push(line);
        } else if line.starts_with("#[") || line.starts_with("#![") {
            continue;
        } else {
            break;
        }
    }
    doc.join("\n")
}

/// The functions of one source text missing a heading.
fn check_source(name: &str, source: &str) -> Vec<Missing> {
    let lines: Vec<&str> = source.lines().collect();
    let mut missing = Vec::new();
    // Whether the trait being read (if any) is public: declarations in a
    // private trait are not public API.
    let mut in_public_trait = false;
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("pub trait ") {
            in_public_trait = true;
        } else if trimmed.starts_with("trait ")
            || trimmed.starts_with("pub(") && trimmed.contains(" trait ")
            || line.starts_with("impl")
            || line.starts_with('}')
        {
            in_public_trait = false;
        }
        if trimmed.starts_with("fn ") && !in_public_trait {
            continue;
        }
        if !(trimmed.starts_with("pub async fn ")
            || trimmed.starts_with("pub fn ")
            || trimmed.starts_with("fn "))
        {
            continue;
        }
        let signature = signature(&lines, index);
        if !returns_future(line, &signature) {
            continue;
        }
        let doc = doc_above(&lines, index);
        let location = format!("{name}:{}", index + 1);
        if !doc.contains("# Cancel safety") {
            missing.push(Missing {
                location: location.clone(),
                heading: "# Cancel safety",
            });
        }
        let returns = signature.split_once("->").map_or("", |(_, after)| after);
        if returns.contains("Result") && !doc.contains("# Errors") {
            missing.push(Missing {
                location,
                heading: "# Errors",
            });
        }
    }
    missing
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_public_future_documents_cancel_safety_and_errors() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for root in ROOTS {
        rust_files(&workspace.join(root), &mut files);
    }
    files.sort();
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in &files {
        let source = fs::read_to_string(file).expect("source file");
        let name = file
            .strip_prefix(workspace)
            .unwrap_or(file)
            .display()
            .to_string();
        checked += source
            .lines()
            .filter(|line| line.trim_start().starts_with("pub async fn "))
            .count();
        missing.extend(check_source(&name, &source));
    }
    assert!(checked > 40, "found only {checked} public async fns");
    let report: Vec<String> = missing
        .iter()
        .map(|m| format!("{} lacks {}", m.location, m.heading))
        .collect();
    assert!(report.is_empty(), "\n{}", report.join("\n"));
}

#[test]
fn the_check_flags_a_future_without_its_headings() {
    let source = "\
/// Waits.
pub async fn wait() -> Result<(), E> {}

/// Boxed.
///
/// # Cancel safety
///
/// Nothing is lost.
pub fn boxed(&self) -> BoxFuture<'_, Result<(), E>> {}

pub trait Public {
    /// Declared.
    fn declared(&self) -> BoxFuture<'_, ()>;
}

trait Private {
    fn hidden(&self) -> BoxFuture<'_, ()>;
}

/// Fine.
///
/// # Cancel safety
///
/// Only sleeps.
#[must_use]
pub async fn sleeps() {}

/// Not a future.
pub fn plain() -> Result<(), E> {}
";
    let missing = check_source("sample.rs", source);
    let found: Vec<(&str, &str)> = missing
        .iter()
        .map(|m| (m.location.as_str(), m.heading))
        .collect();
    assert_eq!(
        found,
        vec![
            ("sample.rs:2", "# Cancel safety"),
            ("sample.rs:2", "# Errors"),
            ("sample.rs:9", "# Errors"),
            ("sample.rs:13", "# Cancel safety"),
        ]
    );
}
