//! Search: the envelope, order by client code, paging, filters (country,
//! status, name, client codes, modification dates) and refused parameters.

use super::*;

#[test]
fn search_defaults_to_page_one_of_25() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        assert_eq!(
            api.search(catalog, &[]),
            json!({
                "totalResultsAvailable": 0,
                "firstResultPosition": 1,
                "resultsPerPage": 25,
                "results": []
            })
        );
        for i in 0..30 {
            api.create_named(catalog, &format!("D{i:02}"), &format!("Default {i}"));
        }
        let page = api.search(catalog, &[]);
        assert_eq!(page["totalResultsAvailable"], 30);
        assert_eq!(page["firstResultPosition"], 1);
        assert_eq!(page["resultsPerPage"], 25);
        let expected: Vec<String> = (0..25).map(|i| format!("D{i:02}")).collect();
        assert_eq!(codes_of(&page), expected);
        // Results are whole read-shape records, equal to what GET answers.
        assert_eq!(page["results"][3], api.read(catalog, "D03"));
        // The api_key query parameter is not a search parameter.
        let by_query = server.request(
            "GET",
            &format!("{catalog}?api_key={}&page=2", api.key),
            None,
            &[],
            None,
        );
        assert_eq!(by_query.status, 200, "{}", by_query.text());
        assert_eq!(by_query.json()["firstResultPosition"], 26);
    }
}

#[test]
fn search_is_ordered_by_client_code() {
    let server = Server::start();
    let api = Api::admin(&server);
    let codes = [
        "b", "B", "a-1", "a.1", "a0", "a_", "Z9", "10", "9", "A", "aa", "a",
    ];
    for catalog in CATALOGS {
        for code in codes {
            api.create_named(catalog, code, &format!("Name of {code}"));
        }
        let mut expected = strings(&codes);
        expected.sort(); // byte order: digits, upper case, `_`, lower case
        assert_eq!(
            api.search_codes(catalog, &[], codes.len()),
            expected.clone()
        );
        // The order does not follow the name or the insertion order.
        let by_page: Vec<String> = (1..=4)
            .flat_map(|p| {
                let page = p.to_string();
                api.search_codes(
                    catalog,
                    &[("page", page.as_str()), ("resultsPerPage", "3")],
                    codes.len(),
                )
            })
            .collect();
        assert_eq!(by_page, expected);
    }
}

#[test]
fn search_pages_through_all_matches() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        // Created out of order.
        for i in (0..30).rev() {
            api.create_named(catalog, &format!("C{i:02}"), "Paged");
        }
        let all: Vec<String> = (0..30).map(|i| format!("C{i:02}")).collect();

        let page = api.search(catalog, &[("page", "2"), ("resultsPerPage", "10")]);
        assert_eq!(page["totalResultsAvailable"], 30);
        assert_eq!(page["firstResultPosition"], 11);
        assert_eq!(page["resultsPerPage"], 10);
        assert_eq!(codes_of(&page), all[10..20]);

        let page = api.search(catalog, &[("page", "3"), ("resultsPerPage", "10")]);
        assert_eq!(page["firstResultPosition"], 21);
        assert_eq!(codes_of(&page), all[20..30]);

        // Past the end: empty, but the envelope still tells where it is.
        let page = api.search(catalog, &[("page", "4"), ("resultsPerPage", "10")]);
        assert_eq!(page["totalResultsAvailable"], 30);
        assert_eq!(page["firstResultPosition"], 31);
        assert_eq!(page["resultsPerPage"], 10);
        assert_eq!(page["results"], json!([]));

        // An uneven page size walks every record exactly once; the last page is short.
        let mut walked = Vec::new();
        for p in 1..=5 {
            let number = p.to_string();
            let page = api.search(
                catalog,
                &[("page", number.as_str()), ("resultsPerPage", "7")],
            );
            assert_eq!(page["firstResultPosition"], (p - 1) * 7 + 1);
            assert_eq!(page["resultsPerPage"], 7);
            assert_eq!(page["totalResultsAvailable"], 30);
            walked.extend(codes_of(&page));
        }
        assert_eq!(walked, all);

        // A filtered total counts all matches, not the page.
        let page = api.search(
            catalog,
            &[
                ("clientCodes", r#"["C01","C05","C07","C29","C99"]"#),
                ("resultsPerPage", "2"),
                ("page", "2"),
            ],
        );
        assert_eq!(page["totalResultsAvailable"], 4);
        assert_eq!(page["firstResultPosition"], 3);
        assert_eq!(codes_of(&page), ["C07", "C29"]);
    }
}

#[test]
fn search_page_size_must_be_1_to_200() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        for i in 0..3 {
            api.create_named(catalog, &format!("S{i}"), "Sized");
        }
        for size in ["1", "200"] {
            let page = api.search(catalog, &[("resultsPerPage", size)]);
            assert_eq!(page["resultsPerPage"], size.parse::<u64>().unwrap());
            assert_eq!(page["totalResultsAvailable"], 3);
        }
        assert_eq!(
            api.search_codes(catalog, &[("resultsPerPage", "1")], 3),
            ["S0"]
        );
        for size in ["201", "0", "-1", "x", "", "2.5", "99999999999999999999"] {
            api.search_rejected(catalog, &[("resultsPerPage", size)], "resultsPerPage");
        }
    }
}

#[test]
fn search_page_must_be_a_positive_whole_number() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        for page in ["0", "x", "-1", "", "1.5"] {
            api.search_rejected(catalog, &[("page", page)], "page");
        }
        let far = api.search(catalog, &[("page", "1000000"), ("resultsPerPage", "200")]);
        assert_eq!(far["firstResultPosition"], 999_999u64 * 200 + 1);
        assert_eq!(far["results"], json!([]));
    }
}

/// Records for the filter tests: (code, name, country, status).
const FILTERED: [(&str, &str, Option<&str>, &str); 7] = [
    ("F1", "Rotterdam", Some("NL"), "ACTIVE"),
    ("F2", "Łódź", Some("PL"), "ACTIVE"),
    ("F3", "Port of ŁÓDŹ Inland", Some("PL"), "INACTIVE"),
    ("F4", "Amsterdam", Some("NL"), "INACTIVE"),
    ("F5", "100%_Pure", None, "ACTIVE"),
    ("F6", "Gdańsk", Some("PL"), "ACTIVE"),
    ("F7", "Straße am Hafen", Some("DE"), "ACTIVE"),
];

fn create_filtered(api: &Api, catalog: &str) {
    for (code, name, country, status) in FILTERED {
        api.create(
            catalog,
            code,
            &json!({"name": name, "countryCode": country, "statusCode": status}),
        );
    }
}

#[test]
fn search_filters_by_country_status_and_name() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        create_filtered(&api, catalog);
        let cases: Vec<SearchCase> = vec![
            (vec![("countryCode", "PL")], vec!["F2", "F3", "F6"]),
            (vec![("countryCode", "NL")], vec!["F1", "F4"]),
            (vec![("countryCode", "BE")], vec![]),
            (vec![("statusCode", "INACTIVE")], vec!["F3", "F4"]),
            (
                vec![("statusCode", "ACTIVE")],
                vec!["F1", "F2", "F5", "F6", "F7"],
            ),
            (vec![("name", "dam")], vec!["F1", "F4"]),
            (vec![("name", "DAM")], vec!["F1", "F4"]),
            (vec![("name", "rOTTERDAM")], vec!["F1"]),
            (vec![("name", "łÓDŹ")], vec!["F2", "F3"]),
            (vec![("name", "ŁÓDŹ")], vec!["F2", "F3"]),
            (vec![("name", "łódź")], vec!["F2", "F3"]),
            (vec![("name", "GDAŃSK")], vec!["F6"]),
            (vec![("name", "STRAßE")], vec!["F7"]),
            (vec![("name", "port of")], vec!["F3"]),
            (vec![("name", "am Haf")], vec!["F7"]),
            // `%` and `_` are plain characters, not wildcards.
            (vec![("name", "%")], vec!["F5"]),
            (vec![("name", "_")], vec!["F5"]),
            (vec![("name", "0%_p")], vec!["F5"]),
            (vec![("name", "Rotterdam!")], vec![]),
        ];
        for (params, expected) in cases {
            assert_eq!(
                api.search_codes(catalog, &params, expected.len()),
                expected,
                "{catalog} {params:?}"
            );
        }
        for (params, field) in [
            (vec![("countryCode", "pl")], "countryCode"),
            (vec![("countryCode", "QQ")], "countryCode"),
            (vec![("countryCode", "")], "countryCode"),
            (vec![("statusCode", "DELETED")], "statusCode"),
            (vec![("statusCode", "active")], "statusCode"),
            (vec![("name", "")], "name"),
        ] {
            api.search_rejected(catalog, &params, field);
        }
    }
}

#[test]
fn search_filters_combine_with_and() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        create_filtered(&api, catalog);
        let cases: Vec<SearchCase> = vec![
            (
                vec![("countryCode", "PL"), ("statusCode", "ACTIVE")],
                vec!["F2", "F6"],
            ),
            (
                vec![
                    ("countryCode", "PL"),
                    ("name", "łódź"),
                    ("statusCode", "INACTIVE"),
                ],
                vec!["F3"],
            ),
            (vec![("countryCode", "NL"), ("name", "łódź")], vec![]),
            (
                vec![
                    ("clientCodes", r#"["F1","F3","F4","F9"]"#),
                    ("statusCode", "INACTIVE"),
                ],
                vec!["F3", "F4"],
            ),
            (
                vec![
                    ("clientCodes", r#"["F1","F3","F4"]"#),
                    ("countryCode", "NL"),
                    ("name", "rotter"),
                ],
                vec!["F1"],
            ),
            (
                vec![
                    ("name", "a"),
                    ("statusCode", "ACTIVE"),
                    ("countryCode", "PL"),
                ],
                vec!["F6"],
            ),
        ];
        for (params, expected) in cases {
            assert_eq!(
                api.search_codes(catalog, &params, expected.len()),
                expected,
                "{catalog} {params:?}"
            );
        }
    }
}

#[test]
fn search_filters_by_client_codes_as_a_json_array() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        create_filtered(&api, catalog);
        assert_eq!(
            api.search_codes(catalog, &[("clientCodes", r#"["F6","F1","nope","F1"]"#)], 2),
            ["F1", "F6"]
        );
        assert_eq!(
            api.search_codes(catalog, &[("clientCodes", r#"["f1"]"#)], 0),
            Vec::<String>::new()
        );
        assert_eq!(
            api.search_codes(catalog, &[("clientCodes", "[]")], 0),
            Vec::<String>::new()
        );
        // Exactly 200 codes are allowed.
        let mut many: Vec<String> = (0..198).map(|i| format!("X{i}")).collect();
        many.extend(["F2".to_string(), "F7".to_string()]);
        let list = serde_json::to_string(&many).unwrap();
        assert_eq!(
            api.search_codes(catalog, &[("clientCodes", list.as_str())], 2),
            ["F2", "F7"]
        );
        // 201 are not.
        many.push("F3".into());
        let list = serde_json::to_string(&many).unwrap();
        api.search_rejected(catalog, &[("clientCodes", list.as_str())], "clientCodes");
        for bad in [
            "F1",
            "F1,F2",
            "[F1]",
            "[\"F1\"",
            r#"{"codes":["F1"]}"#,
            r#""F1""#,
            "[1,2]",
            r#"[["F1"]]"#,
            r#"[null]"#,
            "",
        ] {
            api.search_rejected(catalog, &[("clientCodes", bad)], "clientCodes");
        }
        // A string that is not a valid code is named by its position.
        api.search_rejected(
            catalog,
            &[("clientCodes", r#"["F1","bad code"]"#)],
            "clientCodes[1]",
        );
    }
}

#[test]
fn search_date_bounds_from_inclusive_to_exclusive() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        let mut stamps = Vec::new();
        for code in ["A", "B", "C"] {
            api.create_named(catalog, code, code);
            stamps.push(
                api.read(catalog, code)["dateModified"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            tick();
        }
        let (ta, tb, tc) = (stamps[0].as_str(), stamps[1].as_str(), stamps[2].as_str());
        assert!(ta < tb && tb < tc, "{stamps:?}");
        let after_b = format!("{}5Z", &tb[..tb.len() - 1]); // tb + 0.5 ms
        let after_b = after_b.as_str();
        let b_offset = with_offset(tb);
        let b_offset = b_offset.as_str();

        let cases: Vec<SearchCase> = vec![
            (vec![("dateModifiedFrom", tb)], vec!["B", "C"]),
            (vec![("dateModifiedTo", tb)], vec!["A"]),
            (
                vec![("dateModifiedFrom", ta), ("dateModifiedTo", tc)],
                vec!["A", "B"],
            ),
            (
                vec![("dateModifiedFrom", tb), ("dateModifiedTo", tb)],
                vec![],
            ),
            (
                vec![("dateModifiedFrom", tc), ("dateModifiedTo", ta)],
                vec![],
            ),
            // The same instant with an offset is the same bound.
            (vec![("dateModifiedFrom", b_offset)], vec!["B", "C"]),
            (vec![("dateModifiedTo", b_offset)], vec!["A"]),
            // Half a millisecond after B: B is before the bound.
            (vec![("dateModifiedFrom", after_b)], vec!["C"]),
            (vec![("dateModifiedTo", after_b)], vec!["A", "B"]),
            (
                vec![("dateModifiedFrom", "2000-01-01T00:00:00Z")],
                vec!["A", "B", "C"],
            ),
            (vec![("dateModifiedTo", "2000-01-01T00:00:00Z")], vec![]),
        ];
        for (params, expected) in &cases {
            assert_eq!(
                api.search_codes(catalog, params, expected.len()),
                *expected,
                "{catalog} {params:?}"
            );
        }

        // Deactivating A moves its dateModified past C.
        tick();
        api.delete_expect(catalog, "A", "INACTIVE");
        assert_eq!(
            api.search_codes(catalog, &[("dateModifiedFrom", tc)], 2),
            ["A", "C"]
        );
        assert_eq!(
            api.search_codes(catalog, &[("dateModifiedTo", tc)], 1),
            ["B"]
        );
    }
}

#[test]
fn search_rejects_bad_dates_unknown_and_repeated_parameters() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        for param in ["dateModifiedFrom", "dateModifiedTo"] {
            for bad in [
                "2026-11-21",
                "yesterday",
                "2026-11-21T09:30:00",
                "2026-13-01T00:00:00Z",
                "21/11/2026 09:30",
                "1795253400000",
                "",
            ] {
                api.search_rejected(catalog, &[(param, bad)], param);
            }
        }
        for unknown in ["foo", "sort", "PAGE", "clientcode", "results_per_page"] {
            api.search_rejected(catalog, &[(unknown, "1")], unknown);
        }
        for (params, field) in [
            (vec![("page", "1"), ("page", "1")], "page"),
            (
                vec![("resultsPerPage", "10"), ("resultsPerPage", "20")],
                "resultsPerPage",
            ),
            (
                vec![("countryCode", "NL"), ("countryCode", "PL")],
                "countryCode",
            ),
            (vec![("name", "a"), ("name", "b")], "name"),
            (
                vec![("clientCodes", r#"["A"]"#), ("clientCodes", r#"["B"]"#)],
                "clientCodes",
            ),
        ] {
            api.search_rejected(catalog, &params, field);
        }
    }
}

/// Every bad query parameter is reported with the same error code, so a client
/// can tell "fix your query" apart from "fix your body" by the code alone.
#[test]
fn regression_country_code_search_error_is_invalid_query() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        for params in [
            vec![("resultsPerPage", "0")],
            vec![("page", "0")],
            vec![("statusCode", "DELETED")],
            vec![("name", "")],
            vec![("dateModifiedFrom", "yesterday")],
            vec![("clientCodes", "F1")],
            vec![("foo", "1")],
            vec![("countryCode", "pl")],
            vec![("countryCode", "QQ")],
        ] {
            api.search_reply(catalog, &params)
                .assert_error(400, "invalid_query");
        }
    }
}

/// Searching a name by a piece of it written exactly as stored must find it.
/// Greek capital sigma lower-cases to final sigma (ς) at the end of the search
/// text but to σ inside the stored name, so the fold breaks the match.
#[test]
fn regression_greek_final_sigma_name_search() {
    let server = Server::start();
    let api = Api::admin(&server);
    for catalog in CATALOGS {
        api.create(
            catalog,
            "GRSKG",
            &json!({"name": "ΘΕΣΣΑΛΟΝΙΚΗ", "countryCode": "GR"}),
        );
        api.create(
            catalog,
            "GRPIR",
            &json!({"name": "ΠΕΙΡΑΙΑΣ", "countryCode": "GR"}),
        );
        for (query, expected) in [
            ("θεσ", "GRSKG"),
            ("ΘΕΣΣΑΛΟΝΙΚΗ", "GRSKG"),
            ("ΠΕΙΡΑΙΑΣ", "GRPIR"),
            ("πειραιας", "GRPIR"),
            ("ΘΕΣ", "GRSKG"),
            ("ΘΕΣΣ", "GRSKG"),
            ("Θεσσ", "GRSKG"),
            ("πειραιασ", "GRPIR"),
        ] {
            assert_eq!(
                api.search_codes(catalog, &[("name", query)], 1),
                [expected],
                "name={query}"
            );
        }
    }
}
