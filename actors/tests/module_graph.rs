//! The engine's modules import each other without a cycle.
//!
//! Reads the crate's sources from `src/lib.rs` down, following `mod`
//! declarations (test-only ones, under a `cfg` naming `test`, are left
//! out), and records an edge from a top-level module to every other
//! top-level module its code names through `crate::` or `super::`. A cycle
//! fails the test with the files that make each edge of it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Top-level module → the modules it names → the files that name them.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn the_engine_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    assert!(
        graph.len() > 10,
        "the walk found only {:?}: is src/lib.rs still the root?",
        graph.keys().collect::<Vec<_>>()
    );
    if let Some(cycle) = find_cycle(&graph) {
        let mut report = String::new();
        for pair in cycle.windows(2) {
            let files = &graph[&pair[0]][&pair[1]];
            report.push_str(&format!("\n  {} -> {}  ({:?})", pair[0], pair[1], files));
        }
        panic!("the engine's modules import each other in a cycle:{report}");
    }
}

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

#[test]
fn the_check_finds_a_cycle_through_three_modules() {
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(from.into())
            .or_default()
            .entry(to.into())
            .or_default()
            .insert(format!("{from}.rs"));
    }
    graph.entry("d".into()).or_default();
    let cycle = find_cycle(&graph).expect("a → b → c → a is a cycle");
    assert_eq!(cycle.first(), cycle.last(), "a cycle ends where it began");
    let nodes: BTreeSet<&str> = cycle.iter().map(String::as_str).collect();
    assert_eq!(nodes, BTreeSet::from(["a", "b", "c"]));

    graph.get_mut("c").map(|edges| edges.remove("a"));
    assert_eq!(
        find_cycle(&graph),
        None,
        "without c → a the graph is acyclic"
    );
}

#[test]
fn the_check_resolves_super_and_crate_paths_to_top_level_modules() {
    let path = ["epoch".to_string(), "connection".to_string()];
    let code = "use super::super::admission::RunningRequest;\n\
                use crate::{ledger::Ledger, identity::TenantId};\n\
                use super::idle; // crate::registry in a comment\n";
    let named = named_modules(code, &path);
    assert_eq!(
        named,
        BTreeSet::from(["admission".into(), "identity".into(), "ledger".into()])
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

/// The graph of top-level modules under `src`.
fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    let lib = read(&src.join("lib.rs"));
    for (name, file) in submodules(&lib, src) {
        walk(&file, &[name], src, &mut graph);
    }
    graph
}

/// Records the modules named by `file` (module `path`) and its own
/// submodules.
fn walk(file: &Path, path: &[String], src: &Path, graph: &mut Graph) {
    let code = read(file);
    let top = &path[0];
    let edges = graph.entry(top.clone()).or_default();
    let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
    for named in named_modules(&code, path) {
        if &named != top {
            edges.entry(named).or_default().insert(shown.clone());
        }
    }
    // `foo.rs` keeps its submodules in `foo/`, `foo/mod.rs` in `foo/`.
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") => file.parent().map(Path::to_path_buf),
        _ => file
            .parent()
            .map(|p| p.join(path.last().map_or("", String::as_str))),
    }
    .unwrap_or_default();
    for (name, child) in submodules(&code, &dir) {
        let mut child_path = path.to_vec();
        child_path.push(name);
        walk(&child, &child_path, src, graph);
    }
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

/// The top-level modules `code` (in module `path`) names through `crate::`
/// or `super::` paths, outside comments and inline test modules.
fn named_modules(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let code = &code[..inline_tests_start(code)];
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = find_path_start(rest) {
            rest = &rest[at..];
            let (module, after) = resolve(rest, path);
            named.extend(module);
            rest = after;
        }
    }
    named
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

/// Where the next `crate::` or `super::` path starts in `text`.
fn find_path_start(text: &str) -> Option<usize> {
    let candidates = [text.find("crate::"), text.find("super::")];
    candidates.into_iter().flatten().min()
}

/// Resolves the path at the start of `text` (from module `path`) to the
/// top-level modules it names; returns them and the text after the path's
/// prefix.
fn resolve<'t>(text: &'t str, path: &[String]) -> (Vec<String>, &'t str) {
    let mut depth = path.len();
    let mut rest = text;
    if let Some(after) = rest.strip_prefix("crate::") {
        depth = 0;
        rest = after;
    } else {
        while let Some(after) = rest.strip_prefix("super::") {
            depth = depth.saturating_sub(1);
            rest = after;
        }
    }
    if depth > 0 {
        // Still inside this top-level module.
        return (Vec::new(), rest);
    }
    if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        let names = group[..end]
            .split(',')
            .filter_map(|item| leading_ident(item.trim()))
            .collect();
        return (names, &group[end..]);
    }
    (leading_ident(rest).into_iter().collect(), rest)
}

/// The identifier at the start of `text` when it is a module name (lower
/// case), not a type or macro.
fn leading_ident(text: &str) -> Option<String> {
    let ident: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let module = ident.starts_with(|c: char| c.is_ascii_lowercase());
    (module && ident != "self").then_some(ident)
}

/// A cycle in `graph` as the list of its modules, first and last the same.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !graph.contains_key(next) {
                continue;
            }
            match marks.get(next) {
                Some(Mark::Open) => {
                    let start = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, marks, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if !marks.contains_key(node) {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, graph, &mut marks, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

fn read(file: &Path) -> String {
    fs::read_to_string(file).unwrap_or_else(|err| panic!("reading {}: {err}", file.display()))
}
