//! An actor's messages stay inside its module.
//!
//! Reads the crate's sources from `src/lib.rs` down, following `mod`
//! declarations (test-only ones, under a `cfg` naming `test`, are left
//! out). Circles of modules and files, in this crate and the others, are
//! the workspace's `tests/module_graph.rs`.

use std::fs;
use std::path::{Path, PathBuf};

/// The modules of the engine's actors: only their own code (the loop, the
/// state, the handle) names their `Msg`.
const ACTORS: [&str; 5] = ["registry", "scheduler", "epoch", "workers", "cleanup"];

#[test]
fn an_actors_messages_are_named_only_inside_its_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut named = Vec::new();
    for (file, module, code) in sources(&src) {
        for actor in ACTORS.iter().filter(|actor| **actor != module) {
            let outside = [format!("{actor}::Msg"), format!("{actor}::actor::Msg")];
            if outside.iter().any(|path| code.contains(path.as_str())) {
                named.push(format!("{file} names {actor}'s Msg"));
            }
        }
    }
    assert!(
        named.is_empty(),
        "messages are built only by their actor's handle:\n  {}",
        named.join("\n  ")
    );
}

/// Every non-test file under `src`, with its top-level module and its code
/// (comments and inline test modules left out).
fn sources(src: &Path) -> Vec<(String, String, String)> {
    fn visit(file: &Path, path: &[String], src: &Path, out: &mut Vec<(String, String, String)>) {
        let code = read(file);
        let kept: Vec<&str> = code[..inline_tests_start(&code)]
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect();
        let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
        out.push((shown, path[0].clone(), kept.join("\n")));
        for (name, child) in submodules(&code, &module_dir(file, path)) {
            let mut child_path = path.to_vec();
            child_path.push(name);
            visit(&child, &child_path, src, out);
        }
    }
    let mut out = Vec::new();
    for (name, file) in submodules(&read(&src.join("lib.rs")), src) {
        visit(&file, &[name], src, &mut out);
    }
    out
}

/// Where the submodules of `file` (module `path`) live: `foo.rs` keeps
/// them in `foo/`, `foo/mod.rs` in `foo/`.
fn module_dir(file: &Path, path: &[String]) -> PathBuf {
    match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") => file.parent().map(Path::to_path_buf),
        _ => file
            .parent()
            .map(|p| p.join(path.last().map_or("", String::as_str))),
    }
    .unwrap_or_default()
}

/// The non-test `mod name;` declarations of `code`, with their files in
/// `dir`.
fn submodules(code: &str, dir: &Path) -> Vec<(String, PathBuf)> {
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
fn inline_tests_start(code: &str) -> usize {
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

fn read(file: &Path) -> String {
    fs::read_to_string(file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}
