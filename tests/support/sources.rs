//! The sources of the workspace's library crates, read the way the
//! compiler finds them: from each crate's `src/lib.rs` down, following
//! `mod` declarations. Test-only modules (under a `cfg` naming `test`),
//! inline `#[cfg(test)] mod … { … }` blocks and line comments are left
//! out. Shared by the structure tests (`module_graph.rs`,
//! `public_names.rs`).

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// A source file of a crate: its module path and its code (comments and
/// inline test modules left out).
pub(crate) struct Source {
    /// The file, relative to `src/`.
    pub(crate) shown: String,
    /// Its module path (empty for `lib.rs`).
    pub(crate) path: Vec<String>,
    /// Its code.
    pub(crate) code: String,
}

/// The workspace root (this crate's directory).
pub(crate) fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace members that are library crates (they have `src/lib.rs`).
pub(crate) fn library_crates() -> Vec<String> {
    let manifest = read(&workspace().join("Cargo.toml"));
    let start = manifest.find("members").expect("a workspace member list");
    let list = &manifest[start..];
    let list = &list[list.find('[').expect("[")..list.find(']').expect("]")];
    list.split('"')
        .skip(1)
        .step_by(2)
        .filter(|dir| workspace().join(dir).join("src/lib.rs").exists())
        .map(str::to_string)
        .collect()
}

/// Every non-test file under `src`, from `lib.rs` down.
pub(crate) fn sources(src: &Path) -> Vec<Source> {
    fn visit(file: &Path, path: &[String], src: &Path, out: &mut Vec<Source>) {
        let raw = read(file);
        let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
        let dir = module_dir(file, path);
        let children = submodules(&raw, &dir);
        out.push(Source {
            shown,
            path: path.to_vec(),
            code: strip(&raw),
        });
        for (name, child) in children {
            let mut child_path = path.to_vec();
            child_path.push(name);
            visit(&child, &child_path, src, out);
        }
    }
    let mut out = Vec::new();
    visit(&src.join("lib.rs"), &[], src, &mut out);
    out
}

/// `code` without its inline test modules and its line comments.
pub(crate) fn strip(code: &str) -> String {
    code[..inline_tests_start(code)]
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where the submodules of `file` (module `path`) live: `lib.rs` and
/// `foo/mod.rs` keep them beside themselves, `foo.rs` in `foo/`.
pub(crate) fn module_dir(file: &Path, path: &[String]) -> PathBuf {
    match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs") => file.parent().map(Path::to_path_buf),
        _ => file
            .parent()
            .map(|p| p.join(path.last().map_or("", String::as_str))),
    }
    .unwrap_or_default()
}

/// The non-test `mod name;` declarations of `code`, with their files in
/// `dir`.
pub(crate) fn submodules(code: &str, dir: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let mut test_only = false;
    for line in code.lines().map(str::trim) {
        if line.starts_with("#[cfg(") {
            test_only = line.contains("test");
            continue;
        }
        let decl = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
            .or_else(|| line.strip_prefix("pub(super) "))
            .unwrap_or(line);
        if let Some(name) = decl
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            if !test_only {
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(name).join("mod.rs");
                let file = if flat.exists() { flat } else { nested };
                found.push((name.to_string(), file));
            }
        }
        if !line.starts_with("#[") {
            test_only = false;
        }
    }
    found
}

/// Where an inline `#[cfg(test)] mod name { … }` starts (the end of the
/// code when there is none): unit tests may name any module.
pub(crate) fn inline_tests_start(code: &str) -> usize {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]\nmod ") {
        let start = from + at;
        let line_end = code[start..]
            .find("\nmod ")
            .and_then(|m| code[start + m + 1..].find('\n').map(|e| start + m + 1 + e))
            .unwrap_or(code.len());
        if code[..line_end].trim_end().ends_with('{') {
            return start;
        }
        from = start + 1;
    }
    code.len()
}

pub(crate) fn read(file: &Path) -> String {
    fs::read_to_string(file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}
