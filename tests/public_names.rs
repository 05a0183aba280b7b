//! No public type name is repeated within a crate.
//!
//! A reader who meets two public types of one name in one crate must
//! check which one each use means. Every library crate of the workspace
//! warns on `unreachable_pub` (and the lint gate denies warnings), so a
//! type declared `pub` is part of its crate's public API; the check reads
//! every non-test source file (the shared walker in
//! `support/sources.rs`) and collects the `pub struct`, `pub enum`,
//! `pub trait`, `pub type` and `pub union` declarations. A name declared
//! in two files of one crate fails the test with both files; two
//! declarations in one file are variants of one item under different
//! `cfg`s.

#[path = "support/sources.rs"]
mod sources;

use std::collections::{BTreeMap, BTreeSet};

use sources::{library_crates, sources, workspace, Source};

#[test]
fn no_public_type_name_is_repeated_within_a_crate() {
    let crates = library_crates();
    assert!(crates.len() >= 5, "the walk found only {crates:?}");
    let mut repeated = Vec::new();
    for dir in &crates {
        let sources = sources(&workspace().join(dir).join("src"));
        for (name, files) in public_types(&sources) {
            if files.len() > 1 {
                repeated.push(format!("\n{dir}: {name} in {files:?}"));
            }
        }
    }
    assert!(
        repeated.is_empty(),
        "public type names declared twice in one crate:{}",
        repeated.concat()
    );
}

#[test]
fn the_check_finds_a_name_declared_in_two_files_only() {
    let source = |shown: &str, code: &str| Source {
        shown: shown.into(),
        path: vec![shown.trim_end_matches(".rs").into()],
        code: code.into(),
    };
    let sources = [
        source(
            "a.rs",
            "pub struct Answer;\npub(crate) struct Held;\n#[cfg(loom)]\npub enum Flag { A }\n",
        ),
        source(
            "b.rs",
            "    pub enum Answer { Yes }\npub struct Held<T>(T);\n#[cfg(not(loom))]\n",
        ),
        source(
            "c.rs",
            "pub type Flag = u8;\npub trait Flag2 {}\npub type Flag = u16;\n",
        ),
    ];
    let types = public_types(&sources);
    assert_eq!(
        types["Answer"],
        BTreeSet::from(["a.rs".to_string(), "b.rs".to_string()])
    );
    assert_eq!(types["Held"].len(), 1, "pub(crate) is not public");
    assert_eq!(
        types["Flag"],
        BTreeSet::from(["a.rs".to_string(), "c.rs".to_string()]),
        "two declarations in one file count once"
    );
    assert_eq!(types["Flag2"].len(), 1);
}

/// Each public type name of the crate whose `sources` these are, with the
/// files that declare it.
fn public_types(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        for line in source.code.lines() {
            let Some(rest) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            let Some(rest) = ["struct ", "enum ", "trait ", "type ", "union "]
                .iter()
                .find_map(|kind| rest.strip_prefix(kind))
            else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                types.entry(name).or_default().insert(source.shown.clone());
            }
        }
    }
    types
}
