//! The peer of the native benchmarks: the document and the export as a serde user would type
//! them, every string a `String` (the planner's own model borrows its strings from the input;
//! see `planner::text`). A frozen copy of the model's shape, so that the peer's cost stays what
//! it was when the targets were set: "two typed `serde_json` parses of the same bytes".

#![allow(dead_code)]

use planner::document::{Network, Policy, PoolClass, SiteKind, Warm};
use planner::export::{Kind, Section};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::hint::black_box;

/// The peer: two typed serde_json parses of the same bytes, into these `String` structs.
/// Answers the export's object count (so nothing is optimized away).
pub fn two_parses(desired: &[u8], export: &[u8]) -> usize {
    let document: Document = serde_json::from_slice(desired).expect("the document parses");
    let export: Export = serde_json::from_slice(export).expect("the export parses");
    black_box(&document);
    export.objects.len()
}

/// The same two parses into the planner's own types, which borrow their strings: printed
/// beside the peer, so the share of the ratio that borrowing earns is in plain sight.
pub fn two_borrowing_parses(desired: &[u8], export: &[u8]) -> usize {
    let document: planner::Document = serde_json::from_slice(desired).expect("the document parses");
    let export: planner::Export = serde_json::from_slice(export).expect("the export parses");
    black_box(&document);
    export.objects.len()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document {
    pub version: u32,
    #[serde(default)]
    pub sites: Option<Vec<Site>>,
    #[serde(default)]
    pub provider_accounts: Option<Vec<ProviderAccount>>,
    #[serde(default)]
    pub pools: Option<Vec<Pool>>,
    #[serde(default)]
    pub flavors: Option<Vec<Flavor>>,
    #[serde(default)]
    pub sandbox_templates: Option<Vec<SandboxTemplate>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Site {
    pub name: String,
    pub kind: SiteKind,
    pub region: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderAccount {
    pub name: String,
    pub provider: String,
    pub config: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pool {
    pub name: String,
    pub site: String,
    pub class: PoolClass,
    #[serde(default)]
    pub gpu_model: Option<String>,
    #[serde(default)]
    pub provider_account: Option<String>,
    #[serde(default)]
    pub policy: Option<Policy>,
    #[serde(default)]
    pub owner_quota: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub offers: Option<Vec<Offer>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Offer {
    pub tenant: String,
    pub quota: BTreeMap<String, u64>,
    #[serde(default)]
    pub priority: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flavor {
    pub pool: String,
    pub name: String,
    pub vcpu: u32,
    #[serde(rename = "memoryGiB")]
    pub memory_gib: u32,
    #[serde(rename = "diskGiB")]
    pub disk_gib: u32,
    #[serde(default)]
    pub gpu: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxTemplate {
    pub name: String,
    pub pool: String,
    pub flavor: String,
    pub image_id: String,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    pub network: Network,
    #[serde(default)]
    pub warm: Option<Warm>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Export {
    pub tenant_id: String,
    pub caller: String,
    pub config: Document,
    #[serde(default)]
    pub missing: Vec<Section>,
    #[serde(default)]
    pub objects: Vec<ObjectRef>,
    #[serde(default)]
    pub tenants: Vec<String>,
    #[serde(default)]
    pub offered_pools: Vec<OfferedPool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    pub kind: Kind,
    pub name: String,
    #[serde(default)]
    pub id: Option<String>,
    pub revision: u64,
    #[serde(default)]
    pub used_by: Option<Box<ExternalUser>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalUser {
    pub tenant_id: String,
    pub kind: Kind,
    pub name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfferedPool {
    pub id: String,
    #[serde(default)]
    pub flavors: Vec<OfferedFlavor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OfferedFlavor {
    pub name: String,
    pub id: String,
}
