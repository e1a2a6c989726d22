//! Paging by cursor (#16): `Link: <...>; rel="next"` and `X-Next-Cursor`
//! lead through a whole list, each record exactly once and in order, while
//! other clients add records; `X-Total-Count` is exact up to 1,000 and then
//! says it is capped; the older paths answer 100 per page.

use super::*;

/// The target of a `Link` header's `rel="next"`, if any.
fn next_link(reply: &Reply) -> Option<String> {
    let link = reply.header("link")?;
    assert!(link.ends_with("; rel=\"next\""), "{link}");
    let target = link.strip_prefix('<')?.split_once(">;")?.0.to_string();
    assert_eq!(
        reply.header("x-next-cursor"),
        target.rsplit_once("after=").map(|(_, c)| c),
        "X-Next-Cursor is the Link's `after`"
    );
    Some(target)
}

/// Follows `rel="next"` from `first`; every page's envelopes, in order.
fn walk(w: &World, first: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next {
        let reply = w.server.get(&path, &w.alice);
        items.extend(expect(&reply, 200).as_array().unwrap().clone());
        next = next_link(&reply);
    }
    items
}

const STATUSES: [&str; 3] = ["pending", "active", "complete"];

/// A job body: status by turn, and an ETA on two jobs in three (some equal,
/// some missing: ties and NULLs in the order).
fn job(i: usize) -> Value {
    let mut body = json!({"status": STATUSES[i % 3], "xref": format!("P{i}")});
    if i % 3 != 2 {
        body["eta"] = json!(format!("2026-03-{:02}T08:00:00Z", i % 17 + 1));
    }
    body
}

fn create_jobs(w: &World, range: std::ops::Range<usize>) {
    let range: Vec<usize> = range.collect();
    std::thread::scope(|scope| {
        for chunk in range.chunks(range.len().div_ceil(4).max(1)) {
            scope.spawn(move || {
                for &i in chunk {
                    expect(&w.server.post(&w.jobs_path(), &w.alice, &job(i)), 201);
                }
            });
        }
    });
}

#[test]
fn cursor_pages_give_every_job_once_in_order_while_jobs_are_added() {
    let w = World::new();
    create_jobs(&w, 0..130);

    // The older paths' default page: 100, with a link to the rest.
    let first = w.server.get(&w.jobs_path(), &w.alice);
    assert_eq!(expect(&first, 200).as_array().unwrap().len(), 100);
    assert_eq!(first.header("x-total-count"), Some("130"));
    assert_eq!(first.header("x-total-count-capped"), None);
    let link = next_link(&first).expect("a next page");
    assert!(
        link.starts_with(&format!("{}?after=", w.jobs_path())),
        "{link}"
    );
    let rest = w.server.get(&link, &w.alice);
    assert_eq!(expect(&rest, 200).as_array().unwrap().len(), 30);
    assert_eq!(next_link(&rest), None);

    for params in [
        vec![("limit", "7")],
        vec![("limit", "7"), ("sort", "eta:desc")],
        vec![("limit", "9"), ("sort", "eta:asc")],
        vec![("limit", "5"), ("status", "active"), ("sort", "eta:desc")],
        vec![("limit", "6"), ("sort", "status,eta:desc")],
    ] {
        let path = with_query(&w.jobs_path(), &params);
        let (before, _) = list(
            &w.server,
            &w.alice,
            &with_query(&w.jobs_path(), &[("limit", "1000")]),
        );
        let matches = |body: &Value| {
            params
                .iter()
                .all(|(name, value)| *name != "status" || body["status"] == *value)
        };
        let expected: Vec<String> = before
            .iter()
            .filter(|item| matches(&item["body"]))
            .map(|item| envelope(item).0)
            .collect();
        // Another client adds jobs while this one pages.
        let (seen, added) = std::thread::scope(|scope| {
            let adder = scope.spawn(|| {
                let start = 1000 + expected.len() * 10;
                create_jobs(&w, start..start + 12);
            });
            let seen = walk(&w, &path);
            adder.join().unwrap();
            (seen, ())
        });
        let () = added;
        let ids: Vec<String> = seen.iter().map(|item| envelope(item).0).collect();
        let unique: std::collections::BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "a job seen twice with {params:?}");
        for id in &expected {
            assert!(ids.contains(id), "job {id} missed with {params:?}");
        }
        for item in &seen {
            assert!(matches(&item["body"]), "{item} does not match {params:?}");
        }
        // In order: the same records listed in one page are in this order.
        let (all, _) = list(
            &w.server,
            &w.alice,
            &with_query(
                &w.jobs_path(),
                &params
                    .iter()
                    .map(|(n, v)| {
                        if *n == "limit" {
                            ("limit", "1000")
                        } else {
                            (*n, *v)
                        }
                    })
                    .collect::<Vec<_>>(),
            ),
        );
        let in_one: Vec<String> = all
            .iter()
            .map(|item| envelope(item).0)
            .filter(|id| unique.contains(id))
            .collect();
        assert_eq!(in_one, ids, "order of the pages with {params:?}");
    }
}

#[test]
fn the_total_is_exact_up_to_a_thousand_then_capped() {
    let w = World::new();
    create_jobs(&w, 0..1001);
    let reply = w
        .server
        .get(&with_query(&w.jobs_path(), &[("limit", "10")]), &w.alice);
    expect(&reply, 200);
    assert_eq!(reply.header("x-total-count"), Some("1000"));
    assert_eq!(reply.header("x-total-count-capped"), Some("true"));
    // A list of fewer is exact, and says nothing more.
    let active = w.server.get(
        &with_query(&w.jobs_path(), &[("limit", "10"), ("status", "active")]),
        &w.alice,
    );
    assert_eq!(active.header("x-total-count"), Some("334"));
    assert_eq!(active.header("x-total-count-capped"), None);
    // Every job is reached by following the links.
    assert_eq!(walk(&w, &w.jobs_path()).len(), 1001);
}

#[test]
fn a_cursor_is_refused_with_another_sort_an_offset_or_when_it_is_not_one() {
    let w = World::new();
    create_jobs(&w, 0..3);
    let first = w
        .server
        .get(&with_query(&w.jobs_path(), &[("limit", "1")]), &w.alice);
    let cursor = first.header("x-next-cursor").expect("a cursor").to_string();
    for (params, says) in [
        (vec![("after", "garbage!")], "not a cursor"),
        (vec![("after", "e30")], "not a cursor"),
        (
            vec![("after", cursor.as_str()), ("sort", "eta")],
            "another sort order",
        ),
        (
            vec![("after", cursor.as_str()), ("offset", "1")],
            "cannot be combined",
        ),
    ] {
        let reply = w.server.get(&with_query(&w.jobs_path(), &params), &w.alice);
        reply.assert_error(400, "invalid_query");
        assert_eq!(reply.error_field().as_deref(), Some("after"));
        assert!(reply.text().contains(says), "{params:?}: {}", reply.text());
    }
    // The same cursor on the same list still works.
    let next = w.server.get(
        &with_query(&w.jobs_path(), &[("limit", "1"), ("after", &cursor)]),
        &w.alice,
    );
    assert_eq!(expect(&next, 200).as_array().unwrap().len(), 1);
}

#[test]
fn v2_lists_page_by_cursor_too() {
    let w = World::new();
    for d in ["one", "two", "three"] {
        w.shared(d);
    }
    let first = w.server.get("/v2/workspaces?limit=2", &w.alice);
    let mut ids: Vec<String> = expect(&first, 200)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(first.header("x-total-count"), Some("4"));
    let link = next_link(&first).expect("a next page");
    assert!(link.starts_with("/v2/workspaces?limit=2&after="), "{link}");
    let second = w.server.get(&link, &w.alice);
    ids.extend(
        expect(&second, 200)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string()),
    );
    assert_eq!(next_link(&second), None);
    let (all, _) = list(&w.server, &w.alice, "/v2/workspaces?limit=10");
    let every: Vec<String> = all
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, every);
}
