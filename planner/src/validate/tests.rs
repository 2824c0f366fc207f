//! One test per rule: `check(document, expect)` where `expect` lists each problem as
//! `path: part of the message`, in order.

use super::*;

/// The seed's example document, which must validate clean.
pub(crate) const SEED: &str = r#"{
  "version": 1,
  "sites": [{ "name": "fra", "kind": "shared", "region": "eu-central" }],
  "providerAccounts": [
    {
      "name": "cloud",
      "provider": "hetzner-cloud",
      "config": { "token": "secret://hetzner", "location": "fsn1" }
    }
  ],
  "pools": [
    {
      "name": "vps-fra",
      "site": "fra",
      "class": "vps-host",
      "gpuModel": "L40S",
      "policy": { "disruptionBudget": 0.1 },
      "ownerQuota": { "gpu": 8 },
      "offers": [{ "tenant": "acme", "quota": { "vcpu": 64, "gpu": 2 }, "priority": 5 }]
    },
    { "name": "burst", "site": "fra", "class": "provider", "providerAccount": "cloud" }
  ],
  "flavors": [{ "pool": "vps-fra", "name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40 }],
  "sandboxTemplates": [
    {
      "name": "py-small",
      "pool": "vps-fra",
      "flavor": "g1.small",
      "imageId": "ubuntu-24.04",
      "env": { "PIP_INDEX_URL": "secret://root/sec_01k…" },
      "network": "private",
      "warm": { "min": 2, "max": 4 }
    }
  ]
}"#;

#[track_caller]
fn check(input: &str, expect: &str) {
    let problems = match validate(input.as_bytes()) {
        Ok(_) => Vec::new(),
        Err(invalid) => invalid.problems,
    };
    let expect: Vec<(&str, &str)> = expect
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split_once(": ")
                .unwrap_or(("", l.trim_start_matches(':')))
        })
        .collect();
    let got: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect();
    assert_eq!(
        problems.len(),
        expect.len(),
        "problems differ:\n{}",
        got.join("\n")
    );
    for (p, (path, part)) in problems.iter().zip(&expect) {
        assert!(
            p.path == *path && p.message.contains(part),
            "expected `{path}: …{part}…`, got:\n{}",
            got.join("\n")
        );
    }
}

/// A document with one pool holding `pool` fields merged into a valid base.
fn pool(fields: &str) -> String {
    format!(
        r#"{{"version": 1, "pools": [{{"name": "p", "site": "fra", "class": "vps-host"{fields}}}]}}"#
    )
}

fn flavor(fields: &str) -> String {
    format!(
        r#"{{"version": 1, "flavors": [{{"pool": "p", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0{fields}}}]}}"#
    )
}

fn template(fields: &str) -> String {
    format!(
        r#"{{"version": 1, "sandboxTemplates": [{{"name": "t", "pool": "p", "flavor": "f", "imageId": "img", "network": "none"{fields}}}]}}"#
    )
}

#[test]
fn strings_are_borrowed_from_the_input_unless_escaped() {
    // What keeps reading a document cheap: a string without escapes is a slice of the
    // input, map keys and values included; an escaped one is unescaped into its own String.
    let json = r#"{"version": 1,
        "providerAccounts": [{"name": "cloud", "provider": "h\u0065tzner",
                              "config": {"token": "secret://a", "re\u0067ion": "fsn1"}}],
        "pools": [{"name": "vps", "site": "fra", "class": "vps-host",
                   "ownerQuota": {"vcpu": 8}, "offers": [{"tenant": "acme", "quota": {}}]}]}"#;
    let document = validate(json.as_bytes()).unwrap();
    let account = &document.provider_accounts.as_ref().unwrap()[0];
    assert!(account.name.is_borrowed());
    assert!(!account.provider.is_borrowed());
    assert_eq!(account.provider, "hetzner");
    let (key, value) = account.config.iter().next().unwrap();
    assert_eq!((key.as_str(), value.as_str()), ("region", "fsn1"));
    assert!(!key.is_borrowed() && value.is_borrowed());
    let pool = &document.pools.as_ref().unwrap()[0];
    assert!(pool.name.is_borrowed() && pool.site.is_borrowed());
    assert!(
        pool.owner_quota
            .as_ref()
            .unwrap()
            .keys()
            .all(|k| k.is_borrowed())
    );
    assert!(pool.offers.as_ref().unwrap()[0].tenant.is_borrowed());
    // The export's reader borrows too.
    let export = format!(
        r#"{{"tenantId": "root", "caller": "usr_ops", "config": {json},
            "objects": [{{"kind": "pool", "name": "vps", "id": "pool_1", "revision": 3}}]}}"#
    );
    let export = crate::Export::from_json(export.as_bytes()).unwrap();
    assert!(export.tenant_id.is_borrowed() && export.objects[0].name.is_borrowed());
    assert!(export.config.pools.as_ref().unwrap()[0].name.is_borrowed());
    // into_owned keeps every value and owns every string.
    let owned = document.clone().into_owned();
    assert_eq!(owned, document);
    let owned_account = &owned.provider_accounts.as_ref().unwrap()[0];
    assert!(!owned_account.name.is_borrowed());
    assert!(owned_account.config.keys().all(|k| !k.is_borrowed()));
}

#[test]
fn seed_example_is_valid() {
    let doc = validate(SEED.as_bytes()).expect("the seed's example validates");
    assert_eq!(doc.pools.as_ref().map(Vec::len), Some(2));
    assert_eq!(
        doc.pools.unwrap()[0]
            .policy
            .as_ref()
            .unwrap()
            .disruption_budget,
        0.1
    );
    check(r#"{"version": 1}"#, "");
}

#[test]
fn syntax_error_has_line_and_column() {
    check(
        "{\n  \"version\": 1,\n}",
        ": not valid JSON: trailing comma at line 3 column 1",
    );
    // serde_json's column 0 (nothing read on the line yet) is the line's first character.
    check(
        "",
        ": not valid JSON: EOF while parsing a value at line 1 column 1",
    );
    check("{} x", ": trailing characters at line 1 column 4");
}

/// The column ending the message counts characters, as the CLI's `FILE:LINE:COLUMN:` and
/// editors do (serde_json's counts bytes: `é` is two), for every error of text that is not
/// JSON, bytes that are not UTF-8 among them.
#[test]
fn a_syntax_errors_column_counts_characters() {
    check(
        "{\"version\": 1,\n \"sites\": [{\"region\": \"éé\"}], x}",
        ": not valid JSON: key must be a string at line 2 column 31",
    );
    check(
        "{\"a\": \"€\"} 𝄞",
        ": not valid JSON: trailing characters at line 1 column 12",
    );
    let bytes = b"{\"version\":1,\"sites\":[{\"name\":\"fra\",\"kind\":\"shared\",\"region\":\"\xc3\xa9\xc3\xa9\"}],\xff}";
    let problems = validate(bytes).unwrap_err().problems;
    assert_eq!(
        problems[0].message,
        "the document is not valid JSON: invalid unicode code point at line 1 column 69"
    );
    // The place the message names is where the locator (and so the CLI's prefix) puts it.
    for text in ["{\"k\": \"ä\",\n  \"ö\": ]", "[\"ü\"]  ü"] {
        let problems = validate(text.as_bytes()).unwrap_err().problems;
        let at = crate::locate::locate_problem(text, &problems[0]).unwrap();
        assert!(
            problems[0]
                .message
                .ends_with(&format!(" at line {} column {}", at.line, at.column)),
            "{text:?}: {:?} at {at:?}",
            problems[0]
        );
    }
}

#[test]
fn a_number_past_a_double_is_a_problem_at_its_path() {
    // JSON's grammar allows it; no double holds it. The problems before it are kept.
    let doc = r#"{"version": 1, "pools": [
        {"name": "P", "site": "fra", "class": "vps-host", "ownerQuota": {"gpu": 1e309}}]}"#;
    check(
        doc,
        r#"pools[0].name: is not a valid name
           pools[0].ownerQuota.gpu: is a number out of range: a double holds at most about 1.8e308"#,
    );
    let digits = "9".repeat(400);
    check(
        &format!(
            r#"{{"version": 1, "flavors": [{{"pool": "p", "name": "f", "vcpu": {digits}, "memoryGiB": 1, "diskGiB": 0}}]}}"#
        ),
        "flavors[0].vcpu: is a number out of range",
    );
    // The editor and the CLI find the value from the path; serde_json's place, past the
    // number, would only disagree with it.
    let problems = validate(doc.as_bytes()).unwrap_err().problems;
    let at = crate::locate::locate_problem(doc, &problems[1]).unwrap();
    assert_eq!(at.line, 2);
    assert!(!problems[1].message.contains(" at line "), "{problems:?}");
}

#[test]
fn a_byte_order_mark_is_named_with_its_place() {
    let problems = validate(b"\xEF\xBB\xBF{\"version\": 1}\n")
        .unwrap_err()
        .problems;
    assert_eq!(
        problems,
        vec![crate::Problem {
            path: String::new(),
            message: "the document starts with a UTF-8 byte order mark; save it without one at \
                      line 1 column 1"
                .to_owned(),
        }]
    );
    let text = "\u{feff}{\"version\": 1}";
    let at = crate::locate::locate_problem(text, &problems[0]).unwrap();
    assert_eq!((at.line, at.column), (1, 1));
    // Not at the start, it is a character like any other: not JSON there either.
    check(
        "{\"version\": 1}\u{feff}",
        ": not valid JSON: trailing characters at line 1 column 15",
    );
}

#[test]
fn invalid_utf8_is_a_syntax_error_with_its_place() {
    // The text is checked as UTF-8 once, up front; the error is still serde_json's own.
    let bytes = b"{\n  \"version\": 1,\n  \"sites\": [{\"name\": \"fr\xffa\"}]\n}";
    let problems = validate(bytes).unwrap_err().problems;
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].path, "");
    assert_eq!(
        problems[0].message,
        "the document is not valid JSON: invalid unicode code point at line 3 column 25"
    );
    // An export's is placed the same way (the column in characters: `é` is one).
    let bytes = b"{\"tenantId\": \"\xc3\xa9\xff\"}";
    let export = crate::Export::from_json(bytes).unwrap_err().to_string();
    assert_eq!(export, "invalid unicode code point at line 1 column 16");
    assert_eq!(Err(export), json_text(bytes));
}

#[test]
fn root_must_be_an_object() {
    check("[]", ": a document must be an object, not a list");
}

#[test]
fn version_must_be_1() {
    check(r#"{"version": 2}"#, "version: version must be 1, not 2");
    check(
        r#"{"version": "1"}"#,
        "version: version must be 1, not a string",
    );
    check(r#"{"sites": []}"#, r#": missing required field "version""#);
    check(r#"{"version": 1.0}"#, "");
}

#[test]
fn unknown_fields_anywhere() {
    check(
        r#"{"version": 1, "extra": true}"#,
        r#"extra: unknown field "extra"; a document has version, sites"#,
    );
    check(
        &pool(r#", "color": "red""#),
        r#"pools[0].color: unknown field "color"; a pool has name, site"#,
    );
    check(
        &pool(r#", "policy": {"disruptionBudget": 0.5, "x": 1}"#),
        "pools[0].policy.x: unknown field",
    );
    check(
        &template(r#", "warm": {"min": 1, "max": 2, "size": 3}"#),
        "sandboxTemplates[0].warm.size: unknown field",
    );
}

#[test]
fn duplicate_keys() {
    check(
        r#"{"version": 1, "sites": [{"name": "a", "kind": "shared", "region": "r", "name": "b"}]}"#,
        r#"sites[0].name: duplicate key "name""#,
    );
    check(
        r#"{"version": 1, "version": 1}"#,
        r#"version: duplicate key "version""#,
    );
    check(
        &pool(r#", "ownerQuota": {"gpu": 1, "gpu": 2}"#),
        r#"pools[0].ownerQuota.gpu: duplicate key "gpu""#,
    );
    // Past the linear scan: a big map finds repeats with a set.
    let mut env: Vec<String> = (0..40).map(|i| format!(r#""V{i}": "x""#)).collect();
    env.push(r#""V3": "y""#.to_owned());
    check(
        &template(&format!(r#", "env": {{{}}}"#, env.join(","))),
        r#"sandboxTemplates[0].env.V3: duplicate key "V3""#,
    );
}

#[test]
fn missing_required_fields() {
    check(
        r#"{"version": 1, "sites": [{"name": "fra"}]}"#,
        r#"
        sites[0]: missing required field "kind"
        sites[0]: missing required field "region"
        "#,
    );
    check(
        r#"{"version": 1, "flavors": [{"pool": "p", "name": "f"}]}"#,
        r#"
        flavors[0]: missing required field "vcpu"
        flavors[0]: missing required field "memoryGiB"
        flavors[0]: missing required field "diskGiB"
        "#,
    );
    check(
        &pool(r#", "offers": [{"tenant": "acme"}]"#),
        r#"pools[0].offers[0]: missing required field "quota""#,
    );
}

#[test]
fn wrong_types() {
    check(
        r#"{"version": 1, "sites": {}}"#,
        "sites: must be a list, not an object",
    );
    check(
        r#"{"version": 1, "sites": [{"name": 5, "kind": "shared", "region": "r"}]}"#,
        "sites[0].name: must be a string, not a number",
    );
    check(
        r#"{"version": 1, "sites": ["fra"]}"#,
        "sites[0]: a site must be an object, not a string",
    );
    check(
        &pool(r#", "ownerQuota": [1]"#),
        "pools[0].ownerQuota: must be an object, not a list",
    );
}

#[test]
fn optional_fields_may_be_null() {
    check(
        &pool(r#", "gpuModel": null, "policy": null, "offers": null"#),
        "",
    );
    check(r#"{"version": 1, "sites": null}"#, "");
}

#[test]
fn lists_over_1000_items() {
    let sites: Vec<String> = (0..1001)
        .map(|i| format!(r#"{{"name": "s{i}", "kind": "shared", "region": "r"}}"#))
        .collect();
    check(
        &format!(r#"{{"version": 1, "sites": [{}]}}"#, sites.join(",")),
        "sites: has 1001 items; a list holds at most 1000",
    );
    let offers: Vec<String> = (0..1001)
        .map(|i| format!(r#"{{"tenant": "t{i}", "quota": {{}}}}"#))
        .collect();
    check(
        &pool(&format!(r#", "offers": [{}]"#, offers.join(","))),
        "pools[0].offers: has 1001 items",
    );
}

#[test]
fn repeated_names() {
    check(
        r#"{"version": 1, "sites": [
            {"name": "fra", "kind": "shared", "region": "r"},
            {"name": "ber", "kind": "shared", "region": "r"},
            {"name": "fra", "kind": "dedicated", "region": "r"}]}"#,
        r#"sites[2].name: site "fra" is repeated; sites[0] has it already"#,
    );
    check(
        r#"{"version": 1, "providerAccounts": [
            {"name": "c", "provider": "x", "config": {}}, {"name": "c", "provider": "y", "config": {}}]}"#,
        r#"providerAccounts[1].name: provider account "c" is repeated"#,
    );
    check(
        r#"{"version": 1, "pools": [
            {"name": "p", "site": "s", "class": "vps-host"},
            {"name": "p", "site": "s", "class": "vps-host"}]}"#,
        r#"pools[1].name: pool "p" is repeated"#,
    );
    check(
        r#"{"version": 1, "sandboxTemplates": [
            {"name": "t", "pool": "p", "flavor": "f", "imageId": "i", "network": "none"},
            {"name": "t", "pool": "p", "flavor": "f", "imageId": "i", "network": "none"}]}"#,
        r#"sandboxTemplates[1].name: sandbox template "t" is repeated"#,
    );
}

#[test]
fn names_whose_hashes_collide_are_told_apart() {
    // The validator remembers names by a 64-bit FxHash, which anyone can collide: a crafted
    // pair is two names, and a repeat of either is still a repeat.
    let (a, b) = crate::hash::colliding_names(crate::hash::FxHasher::default());
    let pools = |names: &[&str]| {
        let pools: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"name": "{n}", "site": "s", "class": "vps-host"}}"#))
            .collect();
        format!(r#"{{"version": 1, "pools": [{}]}}"#, pools.join(","))
    };
    check(&pools(&[&a, &b]), "");
    check(
        &pools(&[&a, &b, &b]),
        &format!(r#"pools[2].name: pool "{b}" is repeated; pools[1] has it already"#),
    );
    check(
        &pools(&[&a, &b, &a]),
        &format!(r#"pools[2].name: pool "{a}" is repeated; pools[0] has it already"#),
    );
}

#[test]
fn flavors_repeat_by_pool_and_name() {
    check(
        r#"{"version": 1, "flavors": [
            {"pool": "a", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0},
            {"pool": "b", "name": "f", "vcpu": 1, "memoryGiB": 1, "diskGiB": 0},
            {"pool": "a", "name": "f", "vcpu": 2, "memoryGiB": 1, "diskGiB": 0}]}"#,
        r#"flavors[2].name: flavor "f" of pool "a" is repeated; flavors[0] has it already"#,
    );
}

#[test]
fn offers_repeat_by_tenant_within_a_pool() {
    check(
        &pool(r#", "offers": [{"tenant": "acme", "quota": {}}, {"tenant": "acme", "quota": {}}]"#),
        r#"pools[0].offers[1].tenant: offer to tenant "acme" is repeated; pools[0].offers[0] has it already"#,
    );
    // The same tenant in two pools is fine.
    check(
        r#"{"version": 1, "pools": [
            {"name": "a", "site": "s", "class": "vps-host", "offers": [{"tenant": "acme", "quota": {}}]},
            {"name": "b", "site": "s", "class": "vps-host", "offers": [{"tenant": "acme", "quota": {}}]}]}"#,
        "",
    );
}

#[test]
fn name_syntax() {
    let bad = |name: &str| {
        format!(
            r#"{{"version": 1, "sites": [{{"name": "{name}", "kind": "shared", "region": "r"}}]}}"#
        )
    };
    for name in ["Fra", "-fra", ".x", "", "a b", "é", &"a".repeat(64)] {
        check(&bad(name), "sites[0].name: is not a valid name");
    }
    for name in ["fra", "0", "a.b_c-d", "pool_01jxyz", &"a".repeat(63)] {
        check(&bad(name), "");
    }
}

#[test]
fn references_have_name_syntax() {
    check(
        r#"{"version": 1, "pools": [{"name": "p", "site": "Fra", "class": "provider", "providerAccount": "C"}]}"#,
        r#"
        pools[0].site: "Fra" is not a valid name
        pools[0].providerAccount: "C" is not a valid name
        "#,
    );
    check(
        &flavor("").replace(r#""pool": "p""#, r#""pool": "P""#),
        "flavors[0].pool: is not a valid name",
    );
    check(
        &template("").replace(r#""flavor": "f""#, r#""flavor": "F/1""#),
        "sandboxTemplates[0].flavor: is not a valid name",
    );
    check(
        &pool(r#", "offers": [{"tenant": "ACME", "quota": {}}]"#),
        "pools[0].offers[0].tenant: is not a valid name",
    );
}

#[test]
fn resource_syntax() {
    check(
        &pool(r#", "ownerQuota": {"1gpu": 1, "nvidia.com/gpu": 1, "a.b": 1, "G_p-u": 2}"#),
        r#"
        pools[0].ownerQuota.1gpu: "1gpu" is not a valid resource name
        pools[0].ownerQuota["nvidia.com/gpu"]: is not a valid resource name
        "#,
    );
    check(
        &pool(&format!(r#", "ownerQuota": {{"{}": 1}}"#, "a".repeat(65))),
        "pools[0].ownerQuota.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa: is not a valid resource name",
    );
    check(
        &pool(&format!(r#", "ownerQuota": {{"{}": 1}}"#, "a".repeat(64))),
        "",
    );
}

/// Past 2^53 - 1 a double cannot hold every integer, and the planHash (RFC 8785, numbers as
/// doubles) would give 2^53 and 2^53 + 1 one hash: the document's integers stay within I-JSON.
#[test]
fn quota_maxima_are_integers_from_0_to_2_53_minus_1() {
    check(
        &pool(
            r#", "offers": [{"tenant": "acme", "quota": {"vcpu": 1.5, "gpu": -1, "ram": 18446744073709551616, "disk": "1"}}]"#,
        ),
        r#"
        pools[0].offers[0].quota.vcpu: must be an integer from 0 to 9007199254740991, not 1.5
        pools[0].offers[0].quota.gpu: must be an integer from 0 to 9007199254740991, not -1
        pools[0].offers[0].quota.ram: must be an integer from 0 to 9007199254740991; this number is too large
        pools[0].offers[0].quota.disk: must be an integer from 0 to 9007199254740991, not a string
        "#,
    );
    check(
        &pool(r#", "ownerQuota": {"gpu": 0, "ram": 9007199254740991, "x": 2.0}"#),
        "",
    );
    check(
        &pool(r#", "ownerQuota": {"ram": 9007199254740993}"#),
        "pools[0].ownerQuota.ram: must be an integer from 0 to 9007199254740991; \
         9007199254740993 is too large",
    );
    check(
        &pool(r#", "ownerQuota": {"ram": 9223372036854775808}"#),
        "pools[0].ownerQuota.ram: must be an integer from 0 to 9007199254740991; \
         9223372036854775808 is too large",
    );
    // A float past the range reads as the double its text rounds to: the message does not show
    // that double (9007199254740992, 1e20 as 100000000000000000000), which was never written.
    for written in ["9007199254740991.5", "9007199254740992.0", "1e20"] {
        check(
            &pool(&format!(r#", "ownerQuota": {{"ram": {written}}}"#)),
            "pools[0].ownerQuota.ram: must be an integer from 0 to 9007199254740991; \
             this number is too large",
        );
    }
}

#[test]
fn priorities_are_integers_within_2_53_minus_1() {
    let offer = |priority: &str| {
        pool(&format!(
            r#", "offers": [{{"tenant": "acme", "quota": {{}}, "priority": {priority}}}]"#
        ))
    };
    check(&offer("9007199254740991"), "");
    check(&offer("-9007199254740991"), "");
    check(&offer("-3"), "");
    let range = "pools[0].offers[0].priority: must be an integer from -9007199254740991 to \
                 9007199254740991; this number is out of range";
    for priority in [
        "9007199254740992",
        "-9007199254740993",
        "9223372036854775807",
        "1e300",
    ] {
        check(&offer(priority), range);
    }
    check(
        &offer("1.5"),
        "pools[0].offers[0].priority: must be an integer from -9007199254740991 to \
         9007199254740991, not 1.5",
    );
}

#[test]
fn flavor_ranges() {
    check(
        &flavor("")
            .replace(r#""vcpu": 1"#, r#""vcpu": 0"#)
            .replace(r#""memoryGiB": 1"#, r#""memoryGiB": 0"#)
            .replace(r#""diskGiB": 0"#, r#""diskGiB": -1"#),
        r#"
        flavors[0].vcpu: must be an integer from 1 to 4294967295, not 0
        flavors[0].memoryGiB: must be an integer from 1 to 4294967295, not 0
        flavors[0].diskGiB: must be an integer from 0 to 4294967295, not -1
        "#,
    );
    check(
        &flavor(r#", "gpu": 4294967296"#),
        "flavors[0].gpu: must be an integer from 0 to 4294967295; 4294967296 is too large",
    );
    check(&flavor(r#", "gpu": 0"#), "");
}

#[test]
fn disruption_budget_in_0_to_1() {
    check(
        &pool(r#", "policy": {"disruptionBudget": 1.5}"#),
        "pools[0].policy.disruptionBudget: must be a number from 0 to 1, not 1.5",
    );
    check(
        &pool(r#", "policy": {"disruptionBudget": "half"}"#),
        "pools[0].policy.disruptionBudget: must be a number from 0 to 1, not a string",
    );
    check(
        &pool(r#", "policy": {}"#),
        r#"pools[0].policy: missing required field "disruptionBudget""#,
    );
    check(&pool(r#", "policy": {"disruptionBudget": 0}"#), "");
    check(&pool(r#", "policy": {"disruptionBudget": 1}"#), "");
}

#[test]
fn enumerations() {
    check(
        r#"{"version": 1, "sites": [{"name": "s", "kind": "big", "region": "r"}]}"#,
        r#"sites[0].kind: must be "shared" or "dedicated", not "big""#,
    );
    check(
        &pool("").replace("vps-host", "gpu-host"),
        r#"pools[0].class: must be "vps-host", "sandbox-host" or "provider", not "gpu-host""#,
    );
    check(
        &template("").replace(r#""none""#, r#""open""#),
        r#"sandboxTemplates[0].network: must be "private", "public" or "none", not "open""#,
    );
}

#[test]
fn provider_account_iff_class_provider() {
    check(
        &pool("").replace("vps-host", "provider"),
        r#"pools[0]: missing required field "providerAccount""#,
    );
    check(
        &pool(r#", "providerAccount": "cloud""#),
        r#"pools[0].providerAccount: only a pool of class "provider" has a provider account"#,
    );
    check(
        &pool(r#", "providerAccount": "cloud""#).replace("vps-host", "provider"),
        "",
    );
    // The pool's other problems are reported too.
    check(
        r#"{"version": 1, "pools": [{"class": "vps-host", "providerAccount": "cloud"}]}"#,
        r#"pools[0].providerAccount: only a pool of class "provider" has a provider account
           pools[0]: missing required field "name"
           pools[0]: missing required field "site""#,
    );
}

/// `region`, `provider`, `gpuModel` and `imageId` take what the object methods take
/// (`text_problem`, shared with them): 1 to 200 characters, not only whitespace, no NUL.
#[test]
fn free_text_has_1_to_200_characters() {
    assert_eq!(MAX_TEXT, 200);
    let site = |region: &str| {
        format!(
            r#"{{"version": 1, "sites": [{{"name": "ber", "kind": "shared", "region": {}}}]}}"#,
            serde_json::to_string(region).unwrap()
        )
    };
    check(
        &site(&"r".repeat(201)),
        "sites[0].region: has 201 characters; a text holds at most 200",
    );
    check(&site(&"r".repeat(200)), "");
    // Characters, not bytes: 200 two-byte letters fit, as JSON Schema's maxLength counts.
    check(&site(&"é".repeat(200)), "");
    check(
        &site(&"é".repeat(201)),
        "sites[0].region: has 201 characters",
    );
    check(&site(""), "sites[0].region: must not be empty");
    check(
        &site(" \t\n"),
        "sites[0].region: must not be only whitespace",
    );
    check(
        &site("eu\u{0}central"),
        r"sites[0].region: must not contain a NUL character (\u0000)",
    );
    check(&site(" eu-central "), "");
    // White space as the schema's `\s` (ECMAScript's) means it, so an editor checking with
    // the schema agrees: U+FEFF is white space there, U+0085 (NEL) is not.
    check(
        &site("\u{feff}\u{3000}\u{a0}"),
        "sites[0].region: must not be only whitespace",
    );
    check(&site("\u{85}"), "");
    let long = "x".repeat(201);
    check(
        &format!(
            r#"{{"version": 1, "providerAccounts": [{{"name": "c", "provider": "{long}", "config": {{}}}}]}}"#
        ),
        "providerAccounts[0].provider: has 201 characters",
    );
    check(
        &pool(&format!(r#", "gpuModel": "{long}""#)),
        "pools[0].gpuModel: has 201 characters",
    );
    check(
        &pool(r#", "gpuModel": " ""#),
        "pools[0].gpuModel: must not be only whitespace",
    );
    check(
        &template("").replace(r#""img""#, &format!(r#""{long}""#)),
        "sandboxTemplates[0].imageId: has 201 characters",
    );
    // The rule is one function for the validator and the methods.
    assert_eq!(text_problem("eu"), None);
    assert_eq!(
        text_problem(&long).as_deref(),
        Some("has 201 characters; a text holds at most 200")
    );
}

/// A map entry with a bad resource name and a bad maximum has both problems, key first, at
/// the entry's path, in document order with the other entries'.
#[test]
fn a_bad_quota_entry_reports_its_name_and_its_maximum() {
    check(
        &pool(r#", "ownerQuota": {"nvidia.com/gpu": -1, "gpu": -1, "9x": 1, "_y": null}"#),
        r#"
        pools[0].ownerQuota["nvidia.com/gpu"]: "nvidia.com/gpu" is not a valid resource name
        pools[0].ownerQuota["nvidia.com/gpu"]: must be an integer from 0 to 9007199254740991, not -1
        pools[0].ownerQuota.gpu: must be an integer from 0 to 9007199254740991, not -1
        pools[0].ownerQuota.9x: "9x" is not a valid resource name
        pools[0].ownerQuota._y: "_y" is not a valid resource name
        pools[0].ownerQuota._y: must be an integer from 0 to 9007199254740991, not null
        "#,
    );
    check(
        &pool(r#", "offers": [{"tenant": "acme", "quota": {"a/b": "1", "a/b": 2}}]"#),
        r#"
        pools[0].offers[0].quota["a/b"]: "a/b" is not a valid resource name
        pools[0].offers[0].quota["a/b"]: must be an integer from 0 to 9007199254740991, not a string
        pools[0].offers[0].quota["a/b"]: duplicate key "a/b"
        "#,
    );
}

/// PRODUCT.md lists a provider account's config without `?`: it is required (`{}` for none),
/// as `providerAccount.create` requires it.
#[test]
fn provider_account_config_is_required() {
    check(
        r#"{"version": 1, "providerAccounts": [{"name": "c", "provider": "x"}]}"#,
        r#"providerAccounts[0]: missing required field "config""#,
    );
    check(
        r#"{"version": 1, "providerAccounts": [{"name": "c", "provider": "x", "config": null}]}"#,
        "providerAccounts[0].config: must be an object, not null",
    );
    let doc = validate(
        br#"{"version": 1, "providerAccounts": [{"name": "c", "provider": "x", "config": {}}]}"#,
    )
    .unwrap();
    assert!(doc.provider_accounts.unwrap()[0].config.is_empty());
}

#[test]
fn warm_min_at_most_max() {
    check(
        &template(r#", "warm": {"min": 5, "max": 4}"#),
        "sandboxTemplates[0].warm: min (5) must not be greater than max (4)",
    );
    check(&template(r#", "warm": {"min": 4, "max": 4}"#), "");
}

#[test]
fn secret_keys_hold_references() {
    check(
        r#"{"version": 1, "providerAccounts": [{"name": "c", "provider": "x", "config": {
            "apiToken": "hunter2", "PASSWORD": "env://1BAD", "ssh_key": "vault://", "Credentials": "s3cr3t",
            "region": "plain is fine", "mySecret": "secret://ok", "api_key": "env://API_KEY", "k": "vault://a/b"}}]}"#,
        r#"
        providerAccounts[0].config.apiToken: "apiToken" looks like a secret
        providerAccounts[0].config.PASSWORD: looks like a secret
        providerAccounts[0].config.ssh_key: looks like a secret
        providerAccounts[0].config.Credentials: looks like a secret
        "#,
    );
    check(
        &template(r#", "env": {"GITHUB_TOKEN": "ghp_abc", "HOME": "/root"}"#),
        "sandboxTemplates[0].env.GITHUB_TOKEN: looks like a secret",
    );
    // The message never repeats the value.
    let err = validate(template(r#", "env": {"TOKEN": "hunter2"}"#).as_bytes()).unwrap_err();
    assert!(!err.problems[0].message.contains("hunter2"));
}

#[test]
fn string_maps_hold_strings() {
    check(
        &template(r#", "env": {"A": 1, "B": null}"#),
        r#"
        sandboxTemplates[0].env.A: must be a string, not a number
        sandboxTemplates[0].env.B: must be a string, not null
        "#,
    );
}

#[test]
fn every_problem_in_document_order() {
    check(
        r#"{"version": 3, "sites": [{"name": "Fra", "kind": "x", "region": "r"}],
            "pools": [{"name": "p", "site": "s", "class": "vps-host", "ownerQuota": {"gpu": -1}}],
            "bogus": 1}"#,
        r#"
        version: must be 1
        sites[0].name: not a valid name
        sites[0].kind: must be
        pools[0].ownerQuota.gpu: must be an integer
        bogus: unknown field
        "#,
    );
}

#[test]
fn helpers() {
    assert!(looks_secret("x-API-Key") && looks_secret("CREDENTIAL") && !looks_secret("ke_y"));
    // Each needle anywhere, in any case; a needle cut short at the end is none.
    for needle in ["token", "password", "secret", "key", "credential"] {
        for key in [
            needle.to_owned(),
            format!("api_{}", needle.to_uppercase()),
            format!("x{needle}y"),
            format!("tt{needle}"),
        ] {
            assert!(looks_secret(&key), "{key}");
        }
        assert!(!looks_secret(&needle[..needle.len() - 1]), "{needle}");
    }
    for plain in [
        "",
        "endpoint",
        "region",
        "ke",
        "tokn",
        "passwor",
        "secre",
        "credentia",
        "cpu",
    ] {
        assert!(!looks_secret(plain), "{plain}");
    }
    assert!(is_secret_reference("env://_A1") && !is_secret_reference("env://A-B"));
    assert!(is_secret_reference("secret://x") && !is_secret_reference("secret:/x"));
    assert!(is_resource("a") && !is_resource("_a") && !is_resource(""));
}

#[test]
fn an_escaped_surrogate_without_its_pair_is_said_so() {
    // serde_json says `unexpected end of hex escape` for the first and `lone leading
    // surrogate` for the others, the second of a trailing one.
    let unpaired = "a \\u escape of a UTF-16 surrogate (\\uD800 to \\uDFFF) without its pair: \
                    surrogates come in pairs, high then low, and one alone is no Unicode character";
    for (escaped, column) in [(r"\ud800", 76), (r"\udc00", 75), (r"\ud800\u0041", 81)] {
        let text = format!(
            r#"{{"version": 1, "sites": [{{"name": "s", "kind": "shared", "region": "é{escaped}"}}]}}"#
        );
        check(
            &text,
            &format!(": the document is not valid JSON: {unpaired} at line 1 column {column}"),
        );
    }
    // A pair is a character.
    let text =
        r#"{"version": 1, "sites": [{"name": "s", "kind": "shared", "region": "\ud83d\ude00"}]}"#;
    assert!(validate(text.as_bytes()).is_ok());
}
