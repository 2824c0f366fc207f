//! The document's JSON Schema (draft 7), derived from the model in [`crate::document`] so it is
//! never written twice. Editors use it to complete and check `fleet.json`; it states what a
//! schema can (shapes, names, ranges, list sizes, unknown fields) and leaves the rest to
//! [`crate::validate()`] (repeated names, duplicate keys, `warm.min <= warm.max`, references).

use crate::document::Document;
use schemars::Schema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// A name: 1-63 of `a-z 0-9 . _ -`, starting with a letter or digit. Tenant ids too.
pub const NAME_PATTERN: &str = "^[a-z0-9][a-z0-9._-]{0,62}$";

/// A resource (quota key): a letter, then up to 63 letters, digits, `.`, `_`, `-`.
pub const RESOURCE_PATTERN: &str = "^[A-Za-z][A-Za-z0-9._-]{0,63}$";

/// A secret reference: `secret://...`, `vault://...` or `env://NAME`.
pub const SECRET_REFERENCE_PATTERN: &str =
    "^(secret://.+|vault://.+|env://[A-Za-z_][A-Za-z0-9_]*)$";

/// The JSON Schema of a version 1 document.
pub fn document_schema() -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<Document>().to_value();
    strip_null(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.insert(
            "$id".into(),
            json!("https://better-compute.dev/fleet.schema.json"),
        );
        root.insert("title".into(), json!("FleetConfig document"));
    }
    schema
}

/// `version` is exactly 1.
pub fn version_one(schema: &mut Schema) {
    schema.insert("const".into(), json!(1));
}

/// A quota map's keys are resource names and its maxima integers of 0 or more.
pub fn resource_keys(schema: &mut Schema) {
    schema.insert(
        "propertyNames".into(),
        json!({ "pattern": RESOURCE_PATTERN }),
    );
}

/// `providerAccount` is required when the class is `provider`, and forbidden otherwise.
pub fn provider_account_iff_provider(schema: &mut Schema) {
    schema.insert(
        "if".into(),
        json!({ "properties": { "class": { "const": "provider" } }, "required": ["class"] }),
    );
    schema.insert("then".into(), json!({ "required": ["providerAccount"] }));
    schema.insert(
        "else".into(),
        json!({ "not": { "required": ["providerAccount"] } }),
    );
}

/// Absent optional fields are left out, never `null`: drop the `null` schemars allows for
/// every `Option`.
fn strip_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(any_of)) = map.get("anyOf") {
                let rest: Vec<Value> = any_of
                    .iter()
                    .filter(|s| s.get("type") != Some(&json!("null")))
                    .cloned()
                    .collect();
                if rest.len() == 1 {
                    map.remove("anyOf");
                    if let Value::Object(only) = &rest[0] {
                        for (k, v) in only {
                            map.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            map.values_mut().for_each(strip_null);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        _ => {}
    }
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
        assert_eq!(schema["properties"]["pools"]["type"], "array");
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
        let flavor = &schema["definitions"]["Flavor"];
        assert_eq!(flavor["properties"]["vcpu"]["minimum"], 1);
        assert_eq!(flavor["properties"]["memoryGiB"]["minimum"], 1);
        let budget = &schema["definitions"]["Policy"]["properties"]["disruptionBudget"];
        assert_eq!(
            (budget["minimum"].clone(), budget["maximum"].clone()),
            (json!(0), json!(1))
        );
        assert!(
            !schema.to_string().contains("\"null\""),
            "optional fields are never null"
        );
    }
}
