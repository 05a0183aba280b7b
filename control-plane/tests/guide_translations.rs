//! The control-plane guide exists in English, Portuguese and French with
//! the same structure and the very same examples. The English guide's
//! examples run as doctests (`src/lib.rs`, module `guide`), so identical
//! examples in the translations are checked code too.

use std::fs;
use std::path::PathBuf;

/// The guide in `language`.
fn guide(language: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/control-plane")
        .join(format!("{language}.md"));
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The fenced blocks of `text` whose info string is `language`, verbatim.
fn blocks(text: &str, language: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<(bool, String)> = None;
    for line in text.lines() {
        match current.as_mut() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    current = Some((info.trim() == language, String::new()));
                }
            }
            Some((keep, body)) => {
                if line.trim_end() == "```" {
                    if *keep {
                        found.push(std::mem::take(body));
                    }
                    current = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    assert!(current.is_none(), "an unclosed code block");
    found
}

/// The heading levels, in order: the structure of a guide.
fn heading_levels(text: &str) -> Vec<usize> {
    let mut in_code = false;
    let mut levels = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            levels.push(line.chars().take_while(|c| *c == '#').count());
        }
    }
    levels
}

#[test]
fn the_translations_carry_the_english_examples_verbatim() {
    let english = guide("en");
    let rust = blocks(&english, "rust");
    assert!(
        rust.len() >= 5,
        "the English guide has {} Rust examples",
        rust.len()
    );
    let shell = blocks(&english, "sh");
    for language in ["pt", "fr"] {
        let translation = guide(language);
        assert_eq!(
            blocks(&translation, "rust"),
            rust,
            "{language}: Rust examples differ"
        );
        assert_eq!(
            blocks(&translation, "sh"),
            shell,
            "{language}: shell examples differ"
        );
    }
}

#[test]
fn the_translations_have_the_english_structure() {
    let english = heading_levels(&guide("en"));
    for language in ["pt", "fr"] {
        assert_eq!(
            heading_levels(&guide(language)),
            english,
            "{language}: headings differ"
        );
    }
}

#[test]
fn a_changed_example_is_noticed() {
    let original = "text\n```rust\nfn main() {}\n```\n";
    let changed = "texte\n```rust\nfn main() { }\n```\n";
    assert_ne!(blocks(original, "rust"), blocks(changed, "rust"));
    assert_eq!(blocks(original, "rust"), vec!["fn main() {}\n".to_owned()]);
    assert!(blocks(original, "sh").is_empty());
}
