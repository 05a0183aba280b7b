//! No circle of files inside any module of the workspace's library crates.
//!
//! Two files that name each other are one concern, or need a third that
//! both use. For every library crate of the workspace (its `src/lib.rs`),
//! the check reads the sources from `lib.rs` down, following `mod`
//! declarations (test-only ones, under a `cfg` naming `test`, are left
//! out, and so are inline `#[cfg(test)] mod … { … }` blocks and comments).
//! Each module's children (its files and directories) are the nodes of one
//! graph: there is an edge from child `a` to child `b` when code anywhere
//! under `a` names `b` (or something under it) through a `crate::`,
//! `super::` or `self::` path. The crate root is a module like the others,
//! so a circle of top-level modules is caught too. Every circle (a strongly
//! connected set of children) fails the test with the files that make each
//! of its edges.
//!
//! And, in the engine crate, an actor's messages stay inside its module:
//! only the actor's own code (its loop, its state, its handle) names its
//! `Msg`.

#[path = "support/sources.rs"]
mod sources;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use sources::{library_crates, sources, strip, workspace, Source};

/// Circles not broken yet, in the same form. Temporary: an entry leaves
/// the list with the commit that breaks its circle.
const CIRCLES_TO_BREAK: &[(&str, &str, &[&str])] = &[];

/// The modules of the engine's actors: only their own code (the loop, the
/// state, the handle) names their `Msg`.
const ACTORS: [&str; 5] = ["registry", "scheduler", "epoch", "workers", "cleanup"];

#[test]
fn an_actors_messages_are_named_only_inside_its_module() {
    let mut named = Vec::new();
    for source in sources(&workspace().join("actors").join("src")) {
        let module = source.path.first().map_or("", String::as_str);
        for actor in ACTORS.iter().filter(|actor| **actor != module) {
            let outside = [format!("{actor}::Msg"), format!("{actor}::actor::Msg")];
            if outside
                .iter()
                .any(|path| source.code.contains(path.as_str()))
            {
                named.push(format!("{} names {actor}'s Msg", source.shown));
            }
        }
    }
    assert!(
        named.is_empty(),
        "messages are built only by their actor's handle:\n  {}",
        named.join("\n  ")
    );
}

/// One module's graph: child → the children it names → the files that
/// name them.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn no_module_of_a_library_crate_holds_a_circle_of_files() {
    let crates = library_crates();
    assert!(
        crates.len() >= 5,
        "the walk found only {crates:?}: is the workspace's member list still in Cargo.toml?"
    );
    let mut circles = Vec::new();
    for dir in &crates {
        let sources = sources(&workspace().join(dir).join("src"));
        assert!(!sources.is_empty(), "{dir}/src/lib.rs declares no module");
        let graphs = module_graphs(&sources);
        if dir == "actors" {
            assert!(
                graphs[&Vec::new()].len() > 10,
                "the walk found only {:?}: is actors/src/lib.rs still the root?",
                graphs[&Vec::new()].keys().collect::<Vec<_>>()
            );
        }
        for (module, graph) in graphs {
            for circle in strongly_connected(&graph) {
                let shown_module = if module.is_empty() {
                    "crate root".to_string()
                } else {
                    module.join("::")
                };
                let mut listed = CIRCLES_TO_BREAK.iter();
                let known = listed.any(|(c, m, files)| {
                    *c == dir.as_str()
                        && *m == shown_module
                        && files.iter().copied().collect::<BTreeSet<_>>()
                            == circle.iter().map(String::as_str).collect()
                });
                if known {
                    continue;
                }
                let mut report = format!("\n{dir}: {shown_module}: {circle:?}");
                for from in &circle {
                    for (to, files) in &graph[from] {
                        if circle.contains(to) {
                            report.push_str(&format!("\n    {from} -> {to}  ({files:?})"));
                        }
                    }
                }
                circles.push(report);
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files that name each other, in a circle:{}",
        circles.concat()
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
    let circles = strongly_connected(&graph);
    assert_eq!(circles.len(), 1, "one circle: {circles:?}");
    let nodes: BTreeSet<&str> = circles[0].iter().map(String::as_str).collect();
    assert_eq!(nodes, BTreeSet::from(["a", "b", "c"]));

    graph.get_mut("c").map(|edges| edges.remove("a"));
    assert_eq!(
        strongly_connected(&graph),
        Vec::<BTreeSet<String>>::new(),
        "without c → a the graph is acyclic"
    );
}

#[test]
fn the_check_resolves_super_and_crate_paths_to_top_level_modules() {
    let path = ["epoch".to_string(), "connection".to_string()];
    let code = "use super::super::admission::RunningRequest;\n\
                use crate::{accounts::Accounts, identity::TenantId};\n\
                use super::idle; // crate::registry in a comment\n";
    let mut sources = vec![Source {
        shown: "epoch/connection.rs".into(),
        path: path.to_vec(),
        code: strip(code),
    }];
    for module in ["admission", "epoch", "identity", "accounts", "registry"] {
        sources.push(Source {
            shown: format!("{module}.rs"),
            path: vec![module.to_string()],
            code: String::new(),
        });
    }
    let named: BTreeSet<String> = module_graphs(&sources)
        .remove(&Vec::new())
        .map(|graph| graph["epoch"].keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(
        named,
        BTreeSet::from(["admission".into(), "identity".into(), "accounts".into()])
    );
}

/// A circle of two files inside a nested module, written as a small crate
/// on disk and read the way the real crates are: the check finds it, and
/// only it.
#[test]
fn the_check_finds_a_planted_circle_of_files_inside_a_nested_module() {
    let root = std::env::temp_dir().join(format!("module-graph-plant-{}", std::process::id()));
    let src = root.join("src");
    let files = [
        ("lib.rs", "pub mod outer;\nmod other;\n"),
        ("other.rs", "pub(crate) fn helper() {}\n"),
        ("outer/mod.rs", "mod inner;\nmod top;\n"),
        ("outer/top.rs", "pub(crate) struct Top;\n"),
        (
            "outer/inner/mod.rs",
            "mod delivery;\nmod exchange;\n#[cfg(test)]\nmod tests;\n",
        ),
        (
            "outer/inner/delivery.rs",
            "use super::exchange::Exchange;\nuse crate::other::helper;\n",
        ),
        (
            "outer/inner/exchange.rs",
            "pub(crate) struct Exchange;\n\
             pub(crate) fn deliver() {\n    super::delivery::send();\n}\n\
             // super::super::top is only a comment\n",
        ),
        ("outer/inner/tests.rs", "use super::delivery::send;\n"),
    ];
    for (file, code) in files {
        let path = src.join(file);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create the plant");
        fs::write(&path, code).expect("write the plant");
    }
    let sources = sources(&src);
    fs::remove_dir_all(&root).expect("remove the plant");

    let shown: BTreeSet<&str> = sources.iter().map(|s| s.shown.as_str()).collect();
    assert!(
        !shown.contains("outer/inner/tests.rs"),
        "test-only modules are left out"
    );
    let graphs = module_graphs(&sources);
    let inner = &graphs[&vec!["outer".to_string(), "inner".to_string()]];
    assert_eq!(
        strongly_connected(inner),
        vec![BTreeSet::from(["delivery".into(), "exchange".into()])],
        "delivery.rs ↔ exchange.rs is a circle inside outer::inner"
    );
    for (module, graph) in &graphs {
        if module.len() < 2 {
            assert!(
                strongly_connected(graph).is_empty(),
                "no circle in {module:?}: {graph:?}"
            );
        }
    }
}

/// Every module's graph of its children, keyed by the module's path (the
/// crate root is the empty path).
fn module_graphs(sources: &[Source]) -> BTreeMap<Vec<String>, Graph> {
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    for source in sources {
        if let Some((last, parent)) = source.path.split_last() {
            children
                .entry(parent.to_vec())
                .or_default()
                .insert(last.clone());
        }
    }
    let mut graphs: BTreeMap<Vec<String>, Graph> = children
        .iter()
        .map(|(module, names)| {
            let graph = names.iter().map(|n| (n.clone(), BTreeMap::new())).collect();
            (module.clone(), graph)
        })
        .collect();
    for source in sources {
        for named in named_paths(&source.code, &source.path) {
            // Every module that holds both the naming file and the named
            // path below two different children gets an edge.
            let common = source
                .path
                .iter()
                .zip(&named)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= source.path.len() || common >= named.len() {
                continue;
            }
            let module = &source.path[..common];
            let (from, to) = (&source.path[common], &named[common]);
            let Some(graph) = graphs.get_mut(module) else {
                continue;
            };
            if !graph.contains_key(to) {
                continue;
            }
            graph
                .entry(from.clone())
                .or_default()
                .entry(to.clone())
                .or_default()
                .insert(source.shown.clone());
        }
    }
    graphs
}

/// The module paths `code` (in module `path`) names through `crate::`,
/// `super::` or `self::` paths, as absolute paths of lower-case segments.
fn named_paths(code: &str, path: &[String]) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut named = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .any(|p| bytes[at..].starts_with(p.as_bytes()));
        let after_ident = at > 0 && {
            let c = bytes[at - 1];
            c.is_ascii_alphanumeric() || c == b'_' || c == b':'
        };
        if starts && !after_ident {
            let mut trees = Vec::new();
            at = use_tree(code, at, Vec::new(), &mut trees);
            named.extend(trees.iter().filter_map(|tree| absolute(tree, path)));
        } else {
            at += 1;
        }
    }
    named
}

/// Parses the path or `use` tree starting at `at` (its segments appended to
/// `prefix`), pushing every leaf path; returns where the tree ends.
fn use_tree(
    code: &str,
    mut at: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let skip = |at: usize| at + code[at..].len() - code[at..].trim_start().len();
    loop {
        at = skip(at);
        if code[at..].starts_with('{') {
            at += 1;
            loop {
                at = skip(at);
                if at >= code.len() || code[at..].starts_with('}') {
                    return (at + 1).min(code.len());
                }
                let before = at;
                at = use_tree(code, at, prefix.clone(), out);
                at = skip(at);
                if code[at..].starts_with(',') {
                    at += 1;
                } else if at == before {
                    at += code[at..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
        let ident: String = code[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            out.push(prefix);
            return at;
        }
        at += ident.len();
        prefix.push(ident);
        if code[at..].starts_with("::") {
            at += 2;
        } else {
            out.push(prefix);
            return at;
        }
    }
}

/// The absolute module path `tree` (from module `path`) names: its leading
/// module segments, types and functions' capitals ending it.
fn absolute(tree: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut segments = tree.iter();
    let mut resolved = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "super" => path[..path.len().saturating_sub(1)].to_vec(),
        "self" => path.to_vec(),
        _ => return None,
    };
    for segment in segments {
        match segment.as_str() {
            "super" => {
                resolved.pop();
            }
            "self" => {}
            s if s.starts_with(|c: char| c.is_ascii_lowercase()) => resolved.push(s.to_string()),
            _ => break,
        }
    }
    Some(resolved)
}

/// The circles of `graph`: its strongly connected sets of more than one
/// node (Tarjan's algorithm).
fn strongly_connected(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, node: &'g str) {
            let i = self.index.len();
            self.index.insert(node, i);
            self.low.insert(node, i);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph[node].keys() {
                let next = next.as_str();
                if !self.graph.contains_key(next) {
                    continue;
                }
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut set = BTreeSet::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    set.insert(top.to_string());
                    if top == node {
                        break;
                    }
                }
                if set.len() > 1 {
                    self.found.push(set);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}
