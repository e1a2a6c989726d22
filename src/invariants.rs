//! ARCHITECTURE.md's invariants that a reading of the source can check, as
//! tests over the text of `src/` (each file up to its `#[cfg(test)]` part):
//! the module graph has no circle, only `src/http/` names hyper, only the
//! dialect writes one engine's own SQL, handlers reach the store only through
//! their `Ctx`, only `src/db/` and the CLI open the data file, and tenancy is
//! loaded in one place. The invariants about behaviour are
//! checked by the tests of the modules that keep them (see ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, by its path relative to the crate (`src/app.rs`),
/// with its text up to its tests.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("utf-8 source");
                let code = match text.find("#[cfg(test)]") {
                    Some(at) => text[..at].to_string(),
                    None => text,
                };
                let name = path.strip_prefix(root).expect("under the crate");
                out.insert(name.to_string_lossy().replace('\\', "/"), code);
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = BTreeMap::new();
    walk(&root.join("src"), &root, &mut out);
    assert!(out.len() > 40, "found only {} source files", out.len());
    out
}

/// The lines of `text` that are code: comments and doc comments left out.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim_start)
        .filter(|line| !line.starts_with("//"))
}

/// The module path of a file: `src/auth/check.rs` -> `["auth", "check"]`,
/// `src/auth/mod.rs` -> `["auth"]`, `src/lib.rs` -> `[]`.
fn module_of(file: &str) -> Vec<String> {
    let inner = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = inner.split('/').map(String::from).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths a `use` statement names, expanded (`crate::a::{b, c::d}` ->
/// `crate::a::b`, `crate::a::c::d`).
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..i], &head, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &head, out);
    } else if !tree.is_empty() {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        out.push(format!("{prefix}{path}"));
    }
}

/// The files a file imports with `use crate::…`, `use super::…` or
/// `use self::…`: each path resolved to the deepest module that is a file.
fn imports(file: &str, text: &str, modules: &BTreeMap<Vec<String>, String>) -> BTreeSet<String> {
    let here = module_of(file);
    let is_mod_file = file.ends_with("mod.rs") || file.ends_with("lib.rs");
    let mut statements = Vec::new();
    let mut current = String::new();
    for line in code_lines(text) {
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
        if current.is_empty() && !line.starts_with("use ") {
            continue;
        }
        current.push_str(line);
        current.push(' ');
        if line.trim_end().ends_with(';') {
            statements.push(std::mem::take(&mut current));
        }
    }
    let mut found = BTreeSet::new();
    for statement in statements {
        let tree = statement
            .trim()
            .trim_start_matches("use ")
            .trim_end()
            .trim_end_matches(';');
        let mut paths = Vec::new();
        expand_use(tree, "", &mut paths);
        for path in paths {
            let mut parts: Vec<&str> = path.split("::").map(str::trim).collect();
            let mut base: Vec<String> = match parts.first().copied() {
                Some("crate") => Vec::new(),
                Some("super") => {
                    let mut parent = here.clone();
                    if !is_mod_file {
                        parent.pop();
                    }
                    while parts.get(1) == Some(&"super") {
                        parent.pop();
                        parts.remove(1);
                    }
                    parent
                }
                Some("self") if is_mod_file => here.clone(),
                _ => continue,
            };
            for part in &parts[1..] {
                base.push(part.to_string());
            }
            while !base.is_empty() && !modules.contains_key(&base) {
                base.pop();
            }
            if let Some(target) = modules.get(&base) {
                if target != file && !base.is_empty() {
                    found.insert(target.clone());
                }
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let sources = sources();
    let modules: BTreeMap<Vec<String>, String> = sources
        .keys()
        .filter(|f| f.as_str() != "src/main.rs")
        .map(|f| (module_of(f), f.clone()))
        .collect();
    let graph: BTreeMap<&str, BTreeSet<String>> = sources
        .iter()
        .map(|(file, text)| (file.as_str(), imports(file, text, &modules)))
        .collect();
    assert!(
        graph["src/app.rs"].contains("src/auth/check.rs"),
        "the import reader lost its way: {:?}",
        graph["src/app.rs"]
    );
    // Depth-first search for a back edge, reporting the circle it closes.
    fn visit<'a>(
        file: &'a str,
        graph: &'a BTreeMap<&str, BTreeSet<String>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if done.contains(file) {
            return;
        }
        if let Some(at) = stack.iter().position(|f| *f == file) {
            panic!("import circle: {} -> {file}", stack[at..].join(" -> "));
        }
        stack.push(file);
        for next in graph.get(file).into_iter().flatten() {
            visit(next, graph, stack, done);
        }
        stack.pop();
        done.insert(file);
    }
    let mut done = BTreeSet::new();
    for file in graph.keys() {
        visit(file, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn only_src_http_names_hyper() {
    for (file, text) in sources() {
        if file.starts_with("src/http/") {
            continue;
        }
        for line in code_lines(&text) {
            assert!(!line.contains("hyper"), "{file} names hyper: {line}");
        }
    }
}

/// The storage engine's crate is named under `src/db/` only: everything else
/// reaches the store through the seam (`db::Conn`, `db::Row`, `db::Error`).
#[test]
fn only_src_db_names_the_engine() {
    for (file, text) in sources() {
        if file.starts_with("src/db/") {
            continue;
        }
        for line in code_lines(&text) {
            assert!(!line.contains("rusqlite"), "{file} names rusqlite: {line}");
        }
    }
}

/// The SQL that differs between the engines is written by `db::Dialect`
/// only: elsewhere, a fragment of one engine's own would be that engine's
/// alone.
#[test]
fn only_the_dialect_writes_one_engine_s_sql() {
    for (file, text) in sources() {
        if file.starts_with("src/db/") {
            continue;
        }
        for line in code_lines(&text) {
            for fragment in [
                "json_extract(",
                "json_each(",
                "instr(",
                "INDEXED BY",
                "strpos(",
                "jsonb",
                "NULLS FIRST",
                "NULLS LAST",
            ] {
                assert!(
                    !line.contains(fragment),
                    "{file} writes {fragment} itself (ask conn.dialect()): {line}"
                );
            }
        }
    }
}

#[test]
fn handlers_reach_the_store_only_through_their_ctx() {
    for (file, text) in sources() {
        if file == "src/app.rs" {
            continue;
        }
        for line in code_lines(&text) {
            assert!(
                !line.contains("app.db") && !line.contains(".app.reads"),
                "{file} reaches the store around its Ctx: {line}"
            );
        }
    }
}

#[test]
fn only_the_store_and_the_cli_open_the_data_file_or_begin_a_transaction() {
    // The CLI's commands (accounts, backup, check, the UN/LOCODE import) run in
    // their own process; everything the server writes goes through the writer.
    const ALLOWED: &[&str] = &["src/cli.rs", "src/locations/import.rs"];
    for (file, text) in sources() {
        if file.starts_with("src/db/") || ALLOWED.contains(&file.as_str()) {
            continue;
        }
        for line in code_lines(&text) {
            for call in [
                "open_connection(",
                "open_and_migrate(",
                "Connection::open",
                "Conn::open",
                "begin_write(",
                ".transaction()",
                "\"BEGIN",
                "\"COMMIT",
                "SAVEPOINT",
            ] {
                assert!(!line.contains(call), "{file} calls {call}: {line}");
            }
        }
    }
}

#[test]
fn a_workspace_is_loaded_for_a_caller_in_one_place() {
    for (file, text) in sources() {
        if file == "src/app.rs" || file.starts_with("src/workspaces/") {
            continue;
        }
        for line in code_lines(&text) {
            assert!(
                !line.contains("scope::load(") && !line.contains("workspaces::store::get("),
                "{file} loads a workspace by itself: {line}"
            );
        }
    }
}

#[test]
fn the_import_reader_resolves_groups_super_and_renames() {
    let modules: BTreeMap<Vec<String>, String> = [
        ("src/app.rs", vec!["app"]),
        ("src/auth/mod.rs", vec!["auth"]),
        ("src/auth/check.rs", vec!["auth", "check"]),
        ("src/auth/principal.rs", vec!["auth", "principal"]),
        ("src/http/mod.rs", vec!["http"]),
    ]
    .into_iter()
    .map(|(f, m)| (m.into_iter().map(String::from).collect(), f.to_string()))
    .collect();
    let text = "use super::principal::Principal;\n\
                use crate::http::{Method::{Get, Post}, Response};\n\
                use crate::app::Ctx as Context;\n\
                // use crate::nowhere;\n";
    let found = imports("src/auth/check.rs", text, &modules);
    let expected: BTreeSet<String> = ["src/auth/principal.rs", "src/http/mod.rs", "src/app.rs"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
}
