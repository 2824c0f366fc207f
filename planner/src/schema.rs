//! The document's JSON Schema (draft 7), derived from the model in [`crate::document`] so it is
//! never written twice. Editors use it to complete and check `fleet.json`; it states what a
//! schema can (shapes, names, ranges, list sizes, unknown fields) and leaves the rest to
//! [`crate::validate()`] (repeated names, duplicate keys, `warm.min <= warm.max`, references).
//! Like the validator, it accepts `null` for an optional field (the same as leaving it out).

use crate::document::Document;
use schemars::Schema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// A name: 1-63 of `a-z 0-9 . _ -`, starting with a letter or digit. Tenant ids too.
pub const NAME_PATTERN: &str = "^[a-z0-9][a-z0-9._-]{0,62}$";

/// A resource (quota key): a letter, then up to 63 letters, digits, `.`, `_`, `-`.
pub const RESOURCE_PATTERN: &str = "^[A-Za-z][A-Za-z0-9._-]{0,63}$";

/// Free text (a provider, a region, a GPU model, an image) as [`crate::validate::text_problem`]
/// takes it: more than whitespace, and no NUL. Its length, 1 to
/// [`crate::validate::MAX_TEXT`] characters, is stated beside it (`minLength`, `maxLength`).
pub const NON_BLANK_PATTERN: &str = r"^[^\x00]*[^\s\x00][^\x00]*$";

/// A secret reference: `secret://...`, `vault://...` or `env://NAME`.
pub const SECRET_REFERENCE_PATTERN: &str =
    r"^(secret://[\s\S]+|vault://[\s\S]+|env://[A-Za-z_][A-Za-z0-9_]*)$";

/// The JSON Schema of a version 1 document.
pub fn document_schema() -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<Document>().to_value();
    integer_formats_to_ranges(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.insert("title".into(), json!("FleetConfig document"));
    }
    schema
}

/// schemars marks integers with Rust formats (`uint32`) that validators do not know (ajv's
/// strict mode refuses them); state the range they stand for instead.
pub fn integer_formats_to_ranges(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let format = map.get("format").and_then(Value::as_str).map(str::to_owned);
            match format.as_deref() {
                Some("uint32") => {
                    map.remove("format");
                    map.insert("maximum".into(), json!(u32::MAX));
                }
                Some("uint64" | "int64" | "double") => {
                    map.remove("format");
                }
                _ => {}
            }
            map.values_mut().for_each(integer_formats_to_ranges);
        }
        Value::Array(items) => items.iter_mut().for_each(integer_formats_to_ranges),
        _ => {}
    }
}

/// `version` is exactly 1.
pub fn version_one(schema: &mut Schema) {
    schema.insert("const".into(), json!(1));
}

/// A quota map's keys are resource names and its maxima integers from 0 to
/// [`crate::validate::MAX_QUOTA`].
pub fn resource_keys(schema: &mut Schema) {
    schema.insert(
        "propertyNames".into(),
        json!({ "pattern": RESOURCE_PATTERN }),
    );
    schema.insert(
        "additionalProperties".into(),
        json!({ "type": "integer", "minimum": 0, "maximum": crate::validate::MAX_QUOTA }),
    );
}

/// Keys that look secret (token, password, secret, key, credential; any case), as
/// [`crate::validate::looks_secret`] decides, must hold references.
pub fn secret_references(schema: &mut Schema) {
    let any_case = |word: &str| -> String {
        word.chars()
            .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c))
            .collect()
    };
    let needles = ["token", "password", "secret", "key", "credential"];
    let keys = needles.map(any_case).join("|");
    schema.insert(
        "patternProperties".into(),
        json!({ keys: { "type": "string", "pattern": SECRET_REFERENCE_PATTERN } }),
    );
}

/// `providerAccount` is required (a name) when the class is `provider`, and left out otherwise.
/// `null` is the field left out, as the validator reads it: `null` is no account for a
/// `provider` pool, and allowed for any other.
pub fn provider_account_iff_provider(schema: &mut Schema) {
    schema.insert(
        "if".into(),
        json!({ "properties": { "class": { "const": "provider" } }, "required": ["class"] }),
    );
    schema.insert(
        "then".into(),
        json!({
            "required": ["providerAccount"],
            "properties": { "providerAccount": { "type": "string" } },
        }),
    );
    schema.insert(
        "else".into(),
        json!({ "properties": { "providerAccount": { "type": "null" } } }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_states_the_validators_shapes() {
        let schema = document_schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["version"]["const"], 1);
        assert_eq!(schema["properties"]["pools"]["maxItems"], 1000);
        assert_eq!(
            schema["properties"]["pools"]["type"],
            json!(["array", "null"])
        );
        let pool = &schema["definitions"]["Pool"];
        assert_eq!(pool["additionalProperties"], false);
        assert_eq!(pool["properties"]["name"]["pattern"], NAME_PATTERN);
        assert_eq!(pool["properties"]["offers"]["maxItems"], 1000);
        assert_eq!(
            pool["properties"]["ownerQuota"]["propertyNames"]["pattern"],
            RESOURCE_PATTERN
        );
        assert_eq!(
            pool["properties"]["ownerQuota"]["additionalProperties"]["minimum"],
            0
        );
        assert_eq!(pool["then"]["required"], json!(["providerAccount"]));
        // `null` is the field left out: no account, for any class (as the validator reads it).
        assert_eq!(
            pool["then"]["properties"]["providerAccount"]["type"],
            "string"
        );
        assert_eq!(
            pool["else"]["properties"]["providerAccount"]["type"],
            "null"
        );
        let flavor = &schema["definitions"]["Flavor"];
        assert_eq!(flavor["properties"]["vcpu"]["minimum"], 1);
        assert_eq!(flavor["properties"]["memoryGiB"]["minimum"], 1);
        assert_eq!(flavor["properties"]["memoryGiB"]["maximum"], u32::MAX);
        assert!(
            !schema.to_string().contains("\"format\""),
            "only standard keywords"
        );
        let budget = &schema["definitions"]["Policy"]["properties"]["disruptionBudget"];
        assert_eq!(
            (budget["minimum"].clone(), budget["maximum"].clone()),
            (json!(0), json!(1))
        );
        let account = &schema["definitions"]["ProviderAccount"]["properties"];
        let secrets = account["config"]["patternProperties"].as_object().unwrap();
        let (keys, value) = secrets.iter().next().unwrap();
        assert!(keys.contains("[Tt][Oo][Kk][Ee][Nn]"), "{keys}");
        assert_eq!(value["pattern"], SECRET_REFERENCE_PATTERN);
        assert_eq!(account["provider"]["minLength"], 1);
        // Free text as the validator and the object methods take it.
        let texts = [
            &schema["definitions"]["Site"]["properties"]["region"],
            &account["provider"],
            &pool["properties"]["gpuModel"],
            &schema["definitions"]["SandboxTemplate"]["properties"]["imageId"],
        ];
        for text in texts {
            assert_eq!(text["maxLength"], crate::validate::MAX_TEXT, "{text}");
            assert_eq!(text["minLength"], 1, "{text}");
            assert_eq!(text["pattern"], NON_BLANK_PATTERN, "{text}");
        }
        let required = &schema["definitions"]["ProviderAccount"]["required"];
        assert_eq!(*required, json!(["name", "provider", "config"]));
    }

    /// `planner/fleet.schema.json` is what editors load: it must match the model. Run with
    /// `UPDATE_EXPECT=1` to rewrite it.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_committed_schema_file_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fleet.schema.json");
        let mut expected = serde_json::to_string_pretty(&document_schema()).unwrap();
        expected.push('\n');
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::write(&path, &expected).unwrap();
            return;
        }
        let actual = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            actual == expected,
            "{} is stale: run `UPDATE_EXPECT=1 cargo test -p planner --lib schema`",
            path.display()
        );
    }
}
