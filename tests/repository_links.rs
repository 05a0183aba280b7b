//! The repository stands alone: every relative link of its Markdown
//! documents names a file or directory that exists in it, and every file a
//! library crate's sources include (`include_str!`, `include_bytes!`) lies
//! inside that crate's own directory, so the crate can be packaged.
//!
//! A link is the target of an inline Markdown link, `[text](target)`;
//! targets with a scheme (`https:`, `mailto:`) and pure anchors (`#…`) are
//! not files and are skipped; an anchor after a path is dropped. Files
//! under `target/` and hidden directories are not documents of the
//! repository, and a symbolic link to a document (a crate's copy of a
//! guide, for packaging) is checked where the document lives.

use std::fs;
use std::path::{Component, Path, PathBuf};

/// The workspace root (this crate's directory).
fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` whose name ends with `extension`, skipping
/// `target/` and hidden directories.
fn files(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            files(&path, extension, out);
        } else if name.ends_with(extension) {
            out.push(path);
        }
    }
}

/// The targets of the inline links in `text`, code spans and fenced code
/// blocks left out.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: a link inside backticks is text.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].trim().to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The file a relative link target names, from the document at `from`;
/// `None` for a URL or a pure anchor.
fn linked_path(from: &Path, target: &str) -> Option<PathBuf> {
    if target.is_empty() || target.starts_with('#') || target.contains("://") {
        return None;
    }
    if target.starts_with("mailto:") {
        return None;
    }
    let path = target.split('#').next().unwrap_or(target);
    let dir = from.parent().expect("a document has a directory");
    Some(dir.join(path))
}

/// Lexically normalised `path` (`a/b/../c` → `a/c`).
fn normalised(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The broken links of the documents under `root`, as `document: target`.
fn broken_links(root: &Path) -> Vec<String> {
    let mut documents = Vec::new();
    files(root, ".md", &mut documents);
    let mut broken = Vec::new();
    for document in documents {
        // A link to a document (a crate's copy of a guide) is checked where
        // the document itself lives.
        let link = fs::symlink_metadata(&document).expect("document metadata");
        if link.file_type().is_symlink() {
            continue;
        }
        let text = fs::read_to_string(&document).expect("a readable document");
        for target in link_targets(&text) {
            let Some(path) = linked_path(&document, &target) else {
                continue;
            };
            let inside = normalised(&path).starts_with(root);
            if !inside || !path.exists() {
                let shown = document.strip_prefix(root).unwrap_or(&document);
                broken.push(format!("{}: {target}", shown.display()));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_a_document_names_a_file_of_the_repository() {
    let broken = broken_links(&workspace());
    assert!(
        broken.is_empty(),
        "links to files that are not in the repository:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_flags_a_missing_file_and_a_path_outside_the_repository() {
    let root = tempfile::tempdir().expect("a temporary directory");
    fs::create_dir(root.path().join("docs")).expect("docs");
    fs::write(root.path().join("docs/there.md"), "# There\n").expect("write");
    fs::write(
        root.path().join("docs/guide.md"),
        "[ok](there.md#a) [up](../docs/there.md) [web](https://example.com/x.md) \
         [anchor](#top) `[code](nowhere.md)`\n[gone](missing.md) [out](../../outside.md)\n\
         ```\n[fenced](fenced.md)\n```\n",
    )
    .expect("write");
    let broken = broken_links(root.path());
    assert_eq!(
        broken,
        vec![
            "docs/guide.md: missing.md".to_owned(),
            "docs/guide.md: ../../outside.md".to_owned()
        ]
    );
}

/// The library crates of the workspace: their directories, relative to the
/// root, and the root itself.
const CRATES: [&str; 8] = [
    "",
    "actors",
    "adapters",
    "cluster",
    "control-plane",
    "mailbox",
    "redact",
    "tls-roots",
];

#[test]
fn every_file_a_library_includes_lies_inside_its_crate() {
    let root = workspace();
    let mut outside = Vec::new();
    for name in CRATES {
        let crate_dir = root.join(name);
        let mut sources = Vec::new();
        files(&crate_dir.join("src"), ".rs", &mut sources);
        for source in sources {
            let text = fs::read_to_string(&source).expect("a readable source");
            for marker in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in text.match_indices(marker) {
                    let after = &text[at + marker.len()..];
                    let included = &after[..after.find('"').expect("a closed literal")];
                    let path = normalised(&source.parent().expect("a dir").join(included));
                    if !path.starts_with(&crate_dir) || !path.exists() {
                        outside.push(format!("{}: {included}", source.display()));
                    }
                }
            }
        }
    }
    assert!(
        outside.is_empty(),
        "included files outside their crate or missing (the crate cannot be packaged):\n{}",
        outside.join("\n")
    );
}
