//! The JavaScript API (wasm-bindgen), for the console and JS tooling.

use wasm_bindgen::prelude::*;

/// The planHash of a JSON value given as text: lowercase hex SHA-256 of its RFC 8785 form.
#[wasm_bindgen(js_name = canonicalHash)]
pub fn canonical_hash(json: &str) -> Result<String, JsError> {
    let value: serde_json::Value = serde_json::from_str(json)?;
    Ok(crate::PlanHash::of(&value).0)
}
