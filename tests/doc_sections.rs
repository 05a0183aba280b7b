//! Every public function that returns a future documents what dropping it
//! does (`# Cancel safety`) and, when it returns a `Result`, when it fails
//! (`# Errors`); every public function whose body panics on purpose says
//! when (`# Panics`).
//!
//! The check reads the workspace's library sources (`src/`, `actors/src/`,
//! `adapters/src/`, `control-plane/src/`): each `pub async fn`, each
//! `pub fn` returning `impl Future` or a `BoxFuture`, and each trait method
//! declared (without a body) returning a `BoxFuture`, must carry those
//! headings in the `///` block directly above it (attributes may sit
//! between). A trait implementation inherits its trait's docs and is not
//! checked; `pub(crate)` items are not public.
//!
//! `# Panics` is required of a `pub fn` whose own body (comments and
//! string literals left out) calls `panic!`, `unreachable!`,
//! `unimplemented!`, `todo!`, `assert!`, `assert_eq!`, `assert_ne!`,
//! `.expect(` or `.unwrap()`. Items under a `cfg` of `test`, `loom` or
//! `doctest`, and the files of modules so declared, are test code and
//! skipped. A panic reached through a private helper is not seen: the check
//! is a floor, not a proof.

use std::fs;
use std::path::{Path, PathBuf};

/// The library source roots of the workspace, relative to this crate.
const ROOTS: [&str; 6] = [
    "src",
    "actors/src",
    "adapters/src",
    "control-plane/src",
    "mailbox/src",
    "tls-roots/src",
];

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

/// Calls that panic when reached; a macro only counts as a whole word
/// (`debug_assert!` is not `assert!`).
const PANICKING: [&str; 9] = [
    "panic!(",
    "unreachable!(",
    "unimplemented!(",
    "todo!(",
    "assert!(",
    "assert_eq!(",
    "assert_ne!(",
    ".expect(",
    ".unwrap()",
];

/// The first panicking call in `code`, if any.
fn panicking_call(code: &str) -> Option<&'static str> {
    PANICKING.into_iter().find(|call| {
        code.match_indices(call).any(|(at, _)| {
            call.starts_with('.')
                || !code[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// Where a [`Blanker`] is between lines.
#[derive(Clone, Copy, Default)]
enum Literal {
    /// In code.
    #[default]
    Code,
    /// Inside a `"…"` string.
    Str,
    /// Inside a raw string closed by `"` and this many `#`.
    Raw(usize),
    /// Inside a `/* … */` comment.
    Block,
}

/// Turns source lines into code only: comments dropped, the contents of
/// string and character literals blanked, so braces and calls inside them
/// are not counted. Strings and block comments may span lines.
#[derive(Default)]
struct Blanker {
    state: Literal,
}

impl Blanker {
    fn code(&mut self, line: &str) -> String {
        let chars: Vec<char> = line.chars().collect();
        let mut out = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match self.state {
                Literal::Str => {
                    if c == '\\' {
                        i += 1;
                    } else if c == '"' {
                        self.state = Literal::Code;
                        out.push('"');
                    }
                }
                Literal::Raw(hashes) => {
                    let closes =
                        c == '"' && (1..=hashes).all(|k| chars.get(i + k).copied() == Some('#'));
                    if closes {
                        self.state = Literal::Code;
                        out.push('"');
                        i += hashes;
                    }
                }
                Literal::Block => {
                    if c == '*' && next == Some('/') {
                        self.state = Literal::Code;
                        i += 1;
                    }
                }
                Literal::Code => {
                    let after_word = i > 0
                        && chars[i - 1].is_alphanumeric()
                        && chars[i - 1] != 'b'
                        && chars[i - 1] != 'r';
                    if c == '/' && next == Some('/') {
                        break;
                    } else if c == '/' && next == Some('*') {
                        self.state = Literal::Block;
                        i += 1;
                    } else if c == '"' {
                        self.state = Literal::Str;
                        out.push('"');
                    } else if c == 'r' && !after_word && matches!(next, Some('"' | '#')) {
                        let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                        if chars.get(i + 1 + hashes) == Some(&'"') {
                            self.state = Literal::Raw(hashes);
                            out.push('"');
                            i += 1 + hashes;
                        } else {
                            out.push(c);
                        }
                    } else if c == '\'' && next == Some('\\') {
                        // An escaped character literal: skip to its close.
                        let close = chars[i + 2..].iter().position(|&q| q == '\'');
                        i += close.map_or(1, |at| at + 2);
                        out.push_str("' '");
                    } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
                        i += 2;
                        out.push_str("' '");
                    } else {
                        out.push(c);
                    }
                }
            }
            i += 1;
        }
        out
    }
}

/// The last line of the item starting at `codes[start]` (attributes and
/// doc comments above it included): the line that closes its first brace,
/// or a line ending in `;` before any brace opened.
fn item_end(codes: &[String], start: usize) -> usize {
    let mut depth = 0usize;
    let mut opened = false;
    for (index, code) in codes.iter().enumerate().skip(start) {
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if opened && depth == 0 || !opened && code.trim_end().ends_with(';') {
            return index;
        }
    }
    codes.len().saturating_sub(1)
}

/// True for a `cfg` under which only tests, loom models or doctests build.
fn test_only(code: &str) -> bool {
    code.starts_with("#[cfg(")
        && !code.contains("not(")
        && (code.contains("test") || code.contains("loom"))
}

/// A module declared test-only (`#[cfg(test)] mod name;`): its name, and
/// the `#[path]` it was given, if any.
#[derive(Debug, PartialEq, Eq)]
struct TestModule {
    name: String,
    path: Option<String>,
}

/// What one source text owes: the public functions that panic without
/// `# Panics`, and the test-only modules it declares, whose files are
/// skipped.
fn check_panics(name: &str, source: &str) -> (Vec<Missing>, Vec<TestModule>, usize) {
    let lines: Vec<&str> = source.lines().collect();
    let mut blanker = Blanker::default();
    let codes: Vec<String> = lines.iter().map(|line| blanker.code(line)).collect();
    let mut missing = Vec::new();
    let mut modules = Vec::new();
    let mut checked = 0;
    let mut index = 0;
    while index < codes.len() {
        let code = codes[index].trim_start();
        if test_only(code) {
            let end = item_end(&codes, index);
            let item = codes[end].trim();
            if let Some(module) = item
                .strip_prefix("mod ")
                .or_else(|| item.strip_prefix("pub mod "))
                .or_else(|| item.strip_prefix("pub(crate) mod "))
                .and_then(|rest| rest.strip_suffix(';'))
            {
                let path = lines[index..end].iter().find_map(|line| {
                    let rest = line.trim().strip_prefix("#[path = \"")?;
                    Some(rest.split('"').next()?.to_owned())
                });
                modules.push(TestModule {
                    name: module.trim().to_owned(),
                    path,
                });
            }
            index = end + 1;
            continue;
        }
        let public = ["pub fn ", "pub async fn ", "pub const fn "]
            .iter()
            .any(|start| code.starts_with(start));
        if public {
            let end = item_end(&codes, index);
            let body = codes[index..=end].join("\n");
            if body.contains('{') {
                checked += 1;
                if panicking_call(&body).is_some() && !doc_above(&lines, index).contains("# Panics")
                {
                    missing.push(Missing {
                        location: format!("{name}:{}", index + 1),
                        heading: "# Panics",
                    });
                }
            }
        }
        index += 1;
    }
    (missing, modules, checked)
}

/// The files (and directories) of the test-only modules `file` declares.
fn test_module_paths(file: &Path, modules: &[TestModule]) -> Vec<PathBuf> {
    let parent = file.parent().unwrap_or(Path::new(""));
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = if matches!(stem, "mod" | "lib" | "main") {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    let mut paths = Vec::new();
    for module in modules {
        match &module.path {
            Some(path) => paths.push(parent.join(path)),
            None => {
                paths.push(dir.join(format!("{}.rs", module.name)));
                paths.push(dir.join(&module.name));
            }
        }
    }
    paths
}

/// Every `.rs` file under the library roots, sorted.
fn library_files(workspace: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for root in ROOTS {
        rust_files(&workspace.join(root), &mut files);
    }
    files.sort();
    files
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
    let files = library_files(workspace);
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

#[test]
fn every_public_function_that_panics_documents_when() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = library_files(workspace);
    let mut results = Vec::new();
    let mut test_paths = Vec::new();
    for file in &files {
        let source = fs::read_to_string(file).expect("source file");
        let name = file
            .strip_prefix(workspace)
            .unwrap_or(file)
            .display()
            .to_string();
        let (missing, modules, checked) = check_panics(&name, &source);
        test_paths.extend(test_module_paths(file, &modules));
        results.push((file, missing, checked));
    }
    assert!(
        test_paths.len() > 50,
        "found only {} test modules",
        test_paths.len()
    );
    let is_test = |file: &Path| test_paths.iter().any(|path| file.starts_with(path));
    let mut report = Vec::new();
    let mut checked = 0;
    for (file, missing, count) in results {
        if is_test(file) {
            continue;
        }
        checked += count;
        report.extend(
            missing
                .iter()
                .map(|m| format!("{} lacks {}", m.location, m.heading)),
        );
    }
    assert!(checked > 300, "found only {checked} public fns with a body");
    assert!(report.is_empty(), "\n{}", report.join("\n"));
}

#[test]
fn the_check_flags_a_panic_without_its_heading() {
    let source = r##"
/// Checks.
pub fn checks(x: u32) -> u32 {
    assert!(x > 0, "{x} is zero");
    x
}

/// Explained.
///
/// # Panics
///
/// If the lock is poisoned.
pub fn explained(&self) -> u32 {
    *self.lock.lock().expect("poisoned")
}

/// Quiet: only strings and comments mention a panic.
pub fn quiet(&self) -> &str {
    // .expect( in a comment
    debug_assert!(self.ok);
    let _brace = '{';
    let _escaped = '\'';
    r#"panic!("not code") }"#
}

/// Multi-line string, then a real unwrap.
pub fn after_string() -> u32 {
    let _text = "a { b
        .unwrap() }";
    "7".parse().unwrap()
}

pub(crate) fn internal() {
    unreachable!()
}

#[cfg(test)]
mod tests {
    pub fn helper() {
        panic!("test code");
    }
}

#[cfg(all(test, loom))]
#[path = "model_tests.rs"]
mod model;

#[cfg(not(all(test, loom)))]
/// Production code under a negated cfg.
pub fn production() {
    todo!()
}
"##;
    let (missing, modules, checked) = check_panics("sample.rs", source);
    let found: Vec<(&str, &str)> = missing
        .iter()
        .map(|m| (m.location.as_str(), m.heading))
        .collect();
    assert_eq!(
        found,
        vec![
            ("sample.rs:3", "# Panics"),
            ("sample.rs:27", "# Panics"),
            ("sample.rs:50", "# Panics"),
        ]
    );
    assert_eq!(checked, 5);
    // An inline test module is skipped where it stands; only a declared
    // one names files to skip.
    let model = TestModule {
        name: "model".to_owned(),
        path: Some("model_tests.rs".to_owned()),
    };
    assert_eq!(modules, vec![model]);
    let declared = [
        TestModule {
            name: "tests".to_owned(),
            path: None,
        },
        TestModule {
            name: "model".to_owned(),
            path: Some("model_tests.rs".to_owned()),
        },
    ];
    assert_eq!(
        test_module_paths(Path::new("src/queue/mod.rs"), &declared),
        vec![
            PathBuf::from("src/queue/tests.rs"),
            PathBuf::from("src/queue/tests"),
            PathBuf::from("src/queue/model_tests.rs"),
        ]
    );
    assert_eq!(
        test_module_paths(Path::new("src/queue.rs"), &declared),
        vec![
            PathBuf::from("src/queue/tests.rs"),
            PathBuf::from("src/queue/tests"),
            PathBuf::from("src/model_tests.rs"),
        ]
    );
}
