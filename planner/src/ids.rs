//! Deterministic ids: an apply retried after a failure converges instead of duplicating.

use crate::export::Kind;
use sha2::{Digest, Sha256};

const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// `fleet:<tenant>:<kind>:<plan name>`.
pub fn idempotency_key(tenant_id: &str, kind: Kind, name: &str) -> String {
    // Pieces pushed into a string of the right size: one per create of a plan, and the
    // formatting machinery grew the string piece by piece.
    let kind = kind.as_str();
    let mut key =
        String::with_capacity("fleet:::".len() + tenant_id.len() + kind.len() + name.len());
    for piece in ["fleet:", tenant_id, ":", kind, ":", name] {
        key.push_str(piece);
    }
    key
}

/// The id prefix of a kind that has ids (`pool_`); `None` for owner quotas and offers.
pub fn prefix(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Site => Some("site_"),
        Kind::Pool => Some("pool_"),
        Kind::ProviderAccount => Some("pa_"),
        Kind::Flavor => Some("flv_"),
        Kind::SandboxTemplate => Some("tpl_"),
        Kind::OwnerQuota | Kind::Offer => None,
    }
}

/// Whether `name` has the shape of an id of `kind` (its prefix, then 26 Crockford base32
/// characters), as a random or derived id has.
pub fn has_id_shape(kind: Kind, name: &str) -> bool {
    prefix(kind)
        .and_then(|prefix| name.strip_prefix(prefix))
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| CROCKFORD.contains(&b)))
}

/// The id an object created with `idempotency_key` by `caller` gets: the prefix, then 26
/// lowercase Crockford base32 characters of SHA-256(`caller` "\n" `idempotency_key`).
///
/// # Panics
/// When `kind` has no ids (owner quotas, offers).
pub fn derive_id(kind: Kind, caller: &str, idempotency_key: &str) -> String {
    let prefix = prefix(kind).expect("derive_id of a kind that has ids");
    let mut hasher = Sha256::new();
    hasher.update(caller.as_bytes());
    hasher.update(b"\n");
    hasher.update(idempotency_key.as_bytes());
    format!("{prefix}{}", base32_26(&hasher.finalize()))
}

/// 26 base32 characters (130 bits) from the first bits of `bytes`, most significant first.
pub fn base32_26(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(26);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut iter = bytes.iter();
    while out.len() < 26 {
        if bits < 5 {
            acc = (acc << 8) | u32::from(*iter.next().unwrap_or(&0));
            bits += 8;
        }
        bits -= 5;
        out.push(CROCKFORD[((acc >> bits) & 31) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_shaped() {
        let key = idempotency_key("root", Kind::Pool, "vps-fra");
        assert_eq!(key, "fleet:root:pool:vps-fra");
        let a = derive_id(Kind::Pool, "usr_ops", &key);
        assert_eq!(a, derive_id(Kind::Pool, "usr_ops", &key));
        assert_ne!(a, derive_id(Kind::Pool, "usr_other", &key));
        assert!(a.starts_with("pool_") && a.len() == 5 + 26, "{a}");
        assert!(a[5..].bytes().all(|b| CROCKFORD.contains(&b)));
        assert!(has_id_shape(Kind::Pool, &a));
        assert!(!has_id_shape(Kind::Site, &a));
        assert!(!has_id_shape(Kind::Pool, "pool_short"));
        assert!(!has_id_shape(Kind::Pool, &a.replace('p', "P")));
        assert!(!has_id_shape(Kind::Pool, "vps-fra"));
    }

    #[test]
    fn base32_reads_bits_most_significant_first() {
        assert_eq!(&base32_26(&[0xff; 32])[..3], "zzz");
        assert_eq!(&base32_26(&[0x08, 0x42, 0x10, 0x84, 0x21])[..8], "11111111");
    }
}
