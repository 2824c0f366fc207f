//! Webhooks per the Standard Webhooks specification: endpoints per tenant with event-type
//! filters and a `whsec_` signing secret; deliveries from the outbox by the `webhook.deliver`
//! reconciler (one key per delivery), so retries, backoff and surviving a restart come from
//! the durable queue; every attempt recorded; checked targets.
//!
//! A delivery is `POST <url>` with the event's body and the headers `webhook-id` (the event
//! id, the same on every attempt and redelivery: the receiver's idempotency key),
//! `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature`
//! (`v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>`, one per live secret,
//! space-separated, while a rotated-out secret is still honoured).

use super::AppState;
use super::api::Items;
use super::db::{new_id, now_ms};
use super::error::ApiError;
use super::events::{self, TYPES};
use super::iam::{Caller, check_name, commit_audited, parse};
use super::objects::Deleted;
use super::reconciler::{self, Backoff, BoxFut, Lease, Outcome, Reconciler};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::Sha256;
use sqlx::{AnyConnection, Row as _};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

/// The delivery reconciler's name; its keys are delivery ids.
pub const DELIVER: &str = "webhook.deliver";
/// Permission of `webhook.create`.
pub const CREATE: &str = "events:webhook:create";
/// Permission of `webhook.list` and `webhook.deliveries`.
pub const READ: &str = "events:webhook:read";
/// Permission of `webhook.delete`.
pub const DELETE: &str = "events:webhook:delete";
/// Permission of `webhook.redeliver`.
pub const REDELIVER: &str = "events:webhook:redeliver";
/// Permission of `webhook.rotateSecret`.
pub const UPDATE: &str = "events:webhook:update";

/// The reconciler's own limit of attempts for one delivery key: a delivery gives up by age
/// ([`give_up_after`]); this only stops a run that keeps failing before it even attempts.
pub const MAX_ATTEMPTS: u32 = 1000;
/// How long a rotated-out secret keeps signing beside the new one.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a receiver may be down before anything is given up, in milliseconds: a delivery
/// is retried (backoff capped at 30 minutes) until it is this old, and an endpoint whose
/// attempts have all failed for this long is disabled. Three days, or
/// `BETTER_COMPUTE_WEBHOOK_GIVE_UP_SECONDS`: an outage shorter than that loses nothing (a count
/// of failures would be reached in a minute by a few queued events).
pub fn give_up_after() -> i64 {
    static VALUE: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *VALUE.get_or_init(|| {
        std::env::var("BETTER_COMPUTE_WEBHOOK_GIVE_UP_SECONDS")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(3 * 24 * 3600)
            .saturating_mul(1000)
    })
}

// ---------------------------------------------------------------------------------------
// Secrets and signatures

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    format!("whsec_{}", B64.encode(bytes))
}

/// A secret that is not `whsec_<base64>`.
#[derive(Debug, thiserror::Error)]
#[error("a webhook secret is whsec_ followed by base64")]
pub struct BadSecret;

/// The signature `v1,<base64 HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")>`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &str) -> Result<String, BadSecret> {
    let key = B64
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .map_err(|_| BadSecret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| BadSecret)?;
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body.as_bytes());
    Ok(format!("v1,{}", B64.encode(mac.finalize().into_bytes())))
}

// ---------------------------------------------------------------------------------------
// Targets

/// Why a webhook URL is refused.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Not a URL.
    #[error("not a URL: {0}")]
    Url(String),
    /// Not http or https.
    #[error("the scheme {0:?} is not allowed (use http or https)")]
    Scheme(String),
    /// No host.
    #[error("the URL has no host")]
    NoHost,
    /// A host name that does not resolve, or resolves to an address webhooks may not
    /// target: one message for both, naming no address, so that a tenant cannot map the
    /// server's internal names by creating webhooks.
    #[error(
        "{host} does not resolve to an address webhooks may target: public addresses only \
         (loopback and private ones when the server runs with --webhook-allow-private)"
    )]
    NotPublic {
        /// The host.
        host: String,
    },
    /// An address literal that is not allowed.
    #[error("{host} ({addr}) is a {why} address, which webhooks may not target")]
    Refused {
        /// The host.
        host: String,
        /// The address.
        addr: IpAddr,
        /// Its class.
        why: &'static str,
    },
}

/// A checked target: the URL and the addresses to connect to (checked, so a later DNS answer
/// cannot move the request elsewhere).
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL.
    pub url: reqwest::Url,
    /// Its host name, when it is not an IP literal.
    pub domain: Option<String>,
    /// The resolved, allowed addresses.
    pub addrs: Vec<SocketAddr>,
}

/// Host names of cloud metadata services, refused whatever they resolve to.
const METADATA_HOSTS: &[&str] = &["metadata.google.internal", "metadata.goog", "metadata"];

/// The class of an address webhooks may not target, if any: link-local, metadata,
/// non-unicast and special-purpose (documentation, benchmarking, IETF protocol, discard)
/// addresses always; loopback and private ranges unless `allow_private`. An IPv4 address
/// carried inside an IPv6 one (mapped, compatible, NAT64 well-known and local-use, 6to4) is
/// judged as itself, so no IPv6 spelling reaches what its IPv4 one may not.
pub fn refused(ip: IpAddr, allow_private: bool) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4, allow_private),
        IpAddr::V6(v6) if v6.segments()[..3] == [0x64, 0xff9b, 1] => {
            // NAT64's local-use prefix (RFC 8215) is a network's own, of a length this server
            // cannot know: judge the IPv4 address of a /48 and of a /96 embedding (RFC 6052),
            // and the prefix itself as private.
            let o = v6.octets();
            [
                Ipv4Addr::new(o[12], o[13], o[14], o[15]),
                Ipv4Addr::new(o[6], o[7], o[9], o[10]),
            ]
            .into_iter()
            .find_map(|v4| refused_v4(v4, allow_private))
            .or((!allow_private).then_some("private"))
        }
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => refused_v4(v4, allow_private),
            None => refused_v6(v6, allow_private),
        },
    }
}

/// The IPv4 address an IPv6 one carries, if any (NAT64's local-use prefix aside: see
/// [`refused`]).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Some(mapped);
    }
    // IPv4-compatible (::a.b.c.d, deprecated but still routed by some stacks); `::` and `::1`
    // are IPv6's own unspecified and loopback addresses.
    if s[..6] == [0; 6] && !ip.is_unspecified() && !ip.is_loopback() {
        return Some(last);
    }
    // NAT64, well-known prefix 64:ff9b::/96 (RFC 6052).
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(last);
    }
    // 6to4 (2002::/16) embeds the IPv4 address in bytes 2-5.
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

fn refused_v4(ip: Ipv4Addr, allow_private: bool) -> Option<&'static str> {
    let o = ip.octets();
    // Alibaba's metadata service, Azure's wire server.
    if o == [100, 100, 100, 200] || o == [168, 63, 129, 16] {
        return Some("metadata");
    }
    if ip.is_link_local() {
        return Some("link-local");
    }
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || o[0] == 0 || o[0] >= 240 {
        return Some("non-unicast or reserved");
    }
    // IANA special-purpose: IETF protocol assignments 192.0.0.0/24, documentation
    // 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24, benchmarking 198.18.0.0/15.
    let special = matches!(o, [192, 0, 0 | 2, _] | [198, 51, 100, _] | [203, 0, 113, _])
        || (o[0] == 198 && (o[1] & 0xfe) == 18);
    if special {
        return Some("special-purpose");
    }
    if allow_private {
        return None;
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // 100.64.0.0/10 is carrier-grade NAT: private to its network.
    if ip.is_private() || (o[0] == 100 && (o[1] & 0xc0) == 64) {
        return Some("private");
    }
    None
}

fn refused_v6(ip: Ipv6Addr, allow_private: bool) -> Option<&'static str> {
    let s = ip.segments();
    // AWS's IPv6 metadata service.
    if ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        return Some("metadata");
    }
    if (s[0] & 0xffc0) == 0xfe80 {
        return Some("link-local");
    }
    if ip.is_unspecified() || ip.is_multicast() {
        return Some("non-unicast or reserved");
    }
    // Documentation 2001:db8::/32, discard-only 100::/64.
    if s[..2] == [0x2001, 0xdb8] || s[..4] == [0x100, 0, 0, 0] {
        return Some("special-purpose");
    }
    if allow_private {
        return None;
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // fc00::/7 unique local, fec0::/10 the old site-local.
    if (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfec0 {
        return Some("private");
    }
    None
}

/// Checks a webhook URL: http or https, a host that resolves, and only allowed addresses.
pub async fn check_target(url: &str, allow_private: bool) -> Result<Target, TargetError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| TargetError::Url(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TargetError::Scheme(parsed.scheme().to_string()));
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let raw_host = parsed.host_str().ok_or(TargetError::NoHost)?;
    let literal = raw_host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let (domain, ips) = match literal {
        Some(ip) => (None, vec![ip]),
        None => {
            let host = raw_host.trim_end_matches('.').to_ascii_lowercase();
            if METADATA_HOSTS.contains(&host.as_str()) {
                return Err(TargetError::Refused {
                    host,
                    addr: IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
                    why: "metadata",
                });
            }
            let resolved = tokio::net::lookup_host((host.as_str(), port))
                .await
                .map(|addrs| addrs.map(|a| a.ip()).collect::<Vec<_>>())
                .unwrap_or_default();
            let allowed = !resolved.is_empty()
                && resolved
                    .iter()
                    .all(|ip| refused(*ip, allow_private).is_none());
            if !allowed {
                tracing::debug!(host, addresses = ?resolved, "webhook target refused");
                return Err(TargetError::NotPublic { host });
            }
            (Some(raw_host.to_string()), resolved)
        }
    };
    let host = parsed.host_str().unwrap_or_default().to_string();
    for ip in &ips {
        if let Some(why) = refused(*ip, allow_private) {
            return Err(TargetError::Refused {
                host,
                addr: *ip,
                why,
            });
        }
    }
    Ok(Target {
        url: parsed,
        domain,
        addrs: ips
            .into_iter()
            .map(|ip| SocketAddr::new(ip, port))
            .collect(),
    })
}

// ---------------------------------------------------------------------------------------
// Fan-out and delivery

fn subscribed(events: &str, kind: &str) -> bool {
    serde_json::from_str::<Vec<String>>(events)
        .unwrap_or_default()
        .iter()
        .any(|e| e == kind || e == "*")
}

/// Creates one pending delivery of an event (and queues it) on `conn`.
async fn insert_delivery(
    conn: &mut AnyConnection,
    tenant: &str,
    webhook_id: &str,
    event_id: &str,
) -> Result<String, sqlx::Error> {
    let id = new_id("dlv");
    let now = now_ms();
    sqlx::query(
        "INSERT INTO webhook_deliveries (id, webhook_id, event_id, tenant_id, status, attempts, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5)",
    )
    .bind(&id)
    .bind(webhook_id)
    .bind(event_id)
    .bind(tenant)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    reconciler::enqueue(conn, DELIVER, &id, now).await?;
    Ok(id)
}

/// Creates a pending delivery of a new event for every enabled webhook of its tenant that
/// subscribes to its type, in the event's transaction.
pub async fn fan_out(
    conn: &mut AnyConnection,
    tenant: &str,
    event_id: &str,
    kind: &str,
) -> Result<(), sqlx::Error> {
    let hooks = sqlx::query(
        "SELECT id, events FROM webhooks WHERE tenant_id = $1 AND disabled_at IS NULL ORDER BY id",
    )
    .bind(tenant)
    .fetch_all(&mut *conn)
    .await?;
    for hook in hooks {
        let (id, events): (String, String) = (hook.try_get(0)?, hook.try_get(1)?);
        if subscribed(&events, kind) {
            insert_delivery(conn, tenant, &id, event_id).await?;
        }
    }
    Ok(())
}

/// The `webhook.deliver` reconciler: one attempt of one delivery per run.
#[derive(Debug, Default)]
pub struct Deliver;

impl Reconciler for Deliver {
    fn name(&self) -> &'static str {
        DELIVER
    }

    fn reconcile<'a>(
        &'a self,
        state: &'a AppState,
        key: &'a str,
        _attempt: u32,
        lease: &'a Lease,
    ) -> BoxFut<'a, Outcome> {
        Box::pin(async move {
            match deliver(state, key, lease).await {
                Ok(outcome) => outcome,
                Err(err) => Outcome::Retry(format!("database: {err}")),
            }
        })
    }

    fn backoff(&self, _state: &AppState) -> Backoff {
        Backoff {
            base: Duration::from_secs(1),
            max: Duration::from_secs(1800),
            // The delivery itself gives up by age (give_up_after); this only stops a run that
            // keeps panicking or failing before an attempt.
            max_attempts: Some(MAX_ATTEMPTS),
        }
    }
}

/// What an attempt came to.
enum Verdict {
    Delivered,
    Gone,
    Failed,
}

/// What an attempt says until its answer is written: while its POST is in flight, and for
/// good when it was cut off before the answer's record (its process stopped, or the database
/// failed it).
///
/// Stored in the rows and told apart by it (an unanswered attempt is no failure of the
/// endpoint's): a new wording must still match the rows written with this one.
pub const NO_ANSWER: &str =
    "no answer recorded: the attempt is in flight, or was cut off before its answer was written";

/// One attempt of the delivery. The attempt is written before its POST, so that one cut off
/// by a crash is still in the log ([`NO_ANSWER`]); its answer is written after, and the
/// delivery's status only while `lease` holds the delivery's key (as the drift check's): a
/// worker paused past its lease must not write the delivery's status over the next
/// holder's. Its POST may still have gone out: delivery is at least once, and receivers drop
/// a repeated `webhook-id`.
async fn deliver(
    state: &AppState,
    delivery_id: &str,
    lease: &Lease,
) -> Result<Outcome, sqlx::Error> {
    let mut conn = state.db.pool.acquire().await?;
    // Not ours any more: the holder attempts it (a POST fewer, not a guarantee: see the fence).
    if !lease.hold(&mut conn, state.db.backend).await? {
        return Ok(Outcome::Done);
    }
    let Some(d) = sqlx::query(
        "SELECT status, webhook_id, event_id, created_at FROM webhook_deliveries WHERE id = $1",
    )
    .bind(delivery_id)
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(Outcome::Done); // its webhook was deleted
    };
    let status: String = d.try_get(0)?;
    let webhook_id: String = d.try_get(1)?;
    let event_id: String = d.try_get(2)?;
    let created_at: i64 = d.try_get(3)?;
    if status != "pending" {
        return Ok(Outcome::Done);
    }
    let hook = sqlx::query(
        "SELECT url, secret, previous_secret, previous_until, disabled_at FROM webhooks WHERE id = $1",
    )
    .bind(&webhook_id)
    .fetch_optional(&mut *conn)
    .await?;
    let event = events::load(&mut conn, &event_id).await?;
    drop(conn);
    let (Some(hook), Some(event)) = (hook, event) else {
        settle(
            state,
            delivery_id,
            "failed",
            "the endpoint or the event is gone",
        )
        .await?;
        return Ok(Outcome::Done);
    };
    if hook.try_get::<Option<i64>, _>(4)?.is_some() {
        settle(state, delivery_id, "failed", "the endpoint is disabled").await?;
        return Ok(Outcome::Done);
    }
    let url: String = hook.try_get(0)?;
    let mut secrets = vec![hook.try_get::<String, _>(1)?];
    if let (Some(previous), Some(until)) = (
        hook.try_get::<Option<String>, _>(2)?,
        hook.try_get::<Option<i64>, _>(3)?,
    ) && until > now_ms()
    {
        secrets.push(previous);
    }

    let Some((attempt_id, attempt)) =
        begin_attempt(state, delivery_id, &webhook_id, &event_id, lease).await?
    else {
        return Ok(Outcome::Done);
    };
    let started = Instant::now();
    let result = attempt_once(state, &url, &secrets, &event).await;
    let elapsed = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
    let (http_status, error, verdict) = match result {
        Ok(s) if (200..300).contains(&s) => (Some(s), None, Verdict::Delivered),
        Ok(410) => (
            Some(410),
            Some("the endpoint answered 410 Gone".to_string()),
            Verdict::Gone,
        ),
        Ok(s) => (Some(s), Some(format!("HTTP {s}")), Verdict::Failed),
        Err(e) => (None, Some(e), Verdict::Failed),
    };
    tracing::info!(delivery = %delivery_id, webhook = %webhook_id, event = %event_id, attempt, status = ?http_status, error = ?error, "webhook attempt");

    let now = now_ms();
    let mut tx = state.db.write_tx().await?;
    // The attempt's own row is this worker's whoever holds the key now: its answer is the
    // truth of that POST. (Gone with its delivery when the webhook was deleted meanwhile.)
    let recorded = sqlx::query(
        "UPDATE webhook_attempts SET status = $1, error = $2, duration_ms = $3 WHERE id = $4",
    )
    .bind(http_status.map(i64::from))
    .bind(error.as_deref())
    .bind(elapsed)
    .bind(&attempt_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if recorded == 0 {
        return Ok(Outcome::Done);
    }
    if !lease.hold(&mut tx, state.db.backend).await? {
        tracing::warn!(delivery = %delivery_id, attempt, "webhook attempt's answer recorded, the delivery left alone: its lease ran out and another worker holds it");
        tx.commit().await?;
        return Ok(Outcome::Done);
    }
    let (delivery_status, outcome) = match verdict {
        Verdict::Delivered => {
            sqlx::query("UPDATE webhooks SET failures = 0 WHERE id = $1")
                .bind(&webhook_id)
                .execute(&mut *tx)
                .await?;
            ("succeeded", Outcome::Done)
        }
        Verdict::Gone => {
            disable(&mut tx, &webhook_id, "the endpoint answered 410 Gone", now).await?;
            ("failed", Outcome::Done)
        }
        Verdict::Failed => {
            sqlx::query("UPDATE webhooks SET failures = failures + 1 WHERE id = $1")
                .bind(&webhook_id)
                .execute(&mut *tx)
                .await?;
            // Failing since: the first failed attempt after the endpoint's last success (one
            // without an answer, in flight or cut off, is no failure of the endpoint's).
            let since: Option<i64> = sqlx::query(
                "SELECT MIN(at) FROM webhook_attempts WHERE webhook_id = $1 \
                 AND ((status IS NULL AND error <> $2) OR status < 200 OR status >= 300) \
                 AND at > COALESCE((SELECT MAX(at) FROM webhook_attempts WHERE webhook_id = $1 \
                 AND status >= 200 AND status < 300), -1)",
            )
            .bind(&webhook_id)
            .bind(NO_ANSWER)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            let give_up = give_up_after();
            if since.is_some_and(|since| now - since >= give_up) {
                let reason = format!(
                    "every attempt failed for {} (since {})",
                    span(give_up),
                    since.unwrap_or(now)
                );
                disable(&mut tx, &webhook_id, &reason, now).await?;
                ("failed", Outcome::Done)
            } else if now - created_at >= give_up {
                ("failed", Outcome::Done)
            } else {
                let e = error.clone().unwrap_or_default();
                ("pending", Outcome::Retry(e))
            }
        }
    };
    sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, last_status = $2, last_error = $3, updated_at = $4 \
         WHERE id = $5",
    )
    .bind(delivery_status)
    .bind(http_status.map(i64::from))
    .bind(error.as_deref())
    .bind(now)
    .bind(delivery_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(outcome)
}

/// Writes the attempt before its POST, while `lease` holds the delivery's key: its number
/// (the delivery's count of attempts, one more) and its start, with [`NO_ANSWER`] (on the
/// delivery too, as its last error) until the answer is written. `None` when the key or the
/// pending delivery is gone.
async fn begin_attempt(
    state: &AppState,
    delivery_id: &str,
    webhook_id: &str,
    event_id: &str,
    lease: &Lease,
) -> Result<Option<(String, i64)>, sqlx::Error> {
    let mut tx = state.db.write_tx().await?;
    if !lease.hold(&mut tx, state.db.backend).await? {
        return Ok(None);
    }
    let now = now_ms();
    let Some(row) = sqlx::query(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = NULL, last_error = $1, \
         updated_at = $2 WHERE id = $3 AND status = 'pending' RETURNING attempts",
    )
    .bind(NO_ANSWER)
    .bind(now)
    .bind(delivery_id)
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let attempt: i64 = row.try_get(0)?;
    let id = new_id("att");
    sqlx::query(
        "INSERT INTO webhook_attempts (id, delivery_id, webhook_id, event_id, attempt, at, status, error, duration_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, 0)",
    )
    .bind(&id)
    .bind(delivery_id)
    .bind(webhook_id)
    .bind(event_id)
    .bind(attempt)
    .bind(now)
    .bind(NO_ANSWER)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some((id, attempt)))
}

/// A span of milliseconds in words: `3 days`, `90 seconds`.
fn span(ms: i64) -> String {
    let seconds = ms / 1000;
    match seconds {
        s if s % 86_400 == 0 => format!("{} day(s)", s / 86_400),
        s if s % 3600 == 0 => format!("{} hour(s)", s / 3600),
        s => format!("{s} second(s)"),
    }
}

async fn disable(
    tx: &mut AnyConnection,
    webhook_id: &str,
    reason: &str,
    now: i64,
) -> Result<(), sqlx::Error> {
    tracing::warn!(webhook = %webhook_id, reason, "webhook endpoint disabled");
    sqlx::query(
        "UPDATE webhooks SET disabled_at = $1, disabled_reason = $2, revision = revision + 1 \
         WHERE id = $3 AND disabled_at IS NULL",
    )
    .bind(now)
    .bind(reason)
    .bind(webhook_id)
    .execute(tx)
    .await?;
    Ok(())
}

/// Ends a delivery without an attempt.
async fn settle(
    state: &AppState,
    delivery_id: &str,
    status: &str,
    error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE webhook_deliveries SET status = $1, last_error = $2, updated_at = $3 WHERE id = $4",
    )
    .bind(status)
    .bind(error)
    .bind(now_ms())
    .bind(delivery_id)
    .execute(&state.db.pool)
    .await?;
    Ok(())
}

/// One POST: the HTTP status, or why there was none.
async fn attempt_once(
    state: &AppState,
    url: &str,
    secrets: &[String],
    event: &events::Event,
) -> Result<u16, String> {
    let target = check_target(url, state.config.webhook_allow_private)
        .await
        .map_err(|e| e.to_string())?;
    let body = event.body();
    let timestamp = now_ms() / 1000;
    let signatures = secrets
        .iter()
        .map(|s| sign(s, &event.id, timestamp, &body))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?
        .join(" ");
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(ATTEMPT_TIMEOUT)
        .user_agent(concat!(
            "better-compute-webhooks/",
            env!("CARGO_PKG_VERSION")
        ));
    if let Some(domain) = &target.domain {
        // Connect only to the addresses just checked.
        builder = builder.resolve_to_addrs(domain, &target.addrs);
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    let response = client
        .post(target.url)
        .header("content-type", "application/json")
        .header("webhook-id", &event.id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signatures)
        .body(body)
        .send()
        .await
        .map_err(|e| {
            // Without the URL: the record names its endpoint already, and a URL may carry a
            // token in its query (`...?token=...`), which the record and the log must not
            // repeat (reqwest drops only `user:password@`).
            let e = e.without_url();
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        })?;
    Ok(response.status().as_u16())
}

// ---------------------------------------------------------------------------------------
// Methods

/// Input of `webhook.create`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookCreate {
    /// The tenant whose events it receives.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// Where to POST (http or https; loopback and private addresses only when the server
    /// allows them; link-local and metadata addresses never; the schema cannot say which
    /// addresses a name resolves to).
    #[schemars(length(max = 2048), pattern(r"^[Hh][Tt][Tt][Pp][Ss]?://"))]
    pub url: String,
    /// The event types it receives (`fleet.drifted`, `fleet.converged`, or `*`).
    #[schemars(length(min = 1), transform = event_types)]
    pub events: Vec<String>,
}

/// `events` lists known event types, or `*`.
fn event_types(schema: &mut schemars::Schema) {
    let mut known: Vec<&str> = TYPES.to_vec();
    known.push("*");
    schema.insert(
        "items".into(),
        serde_json::json!({ "type": "string", "enum": known }),
    );
}

/// Input of `webhook.list`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookList {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
}

/// Input of `webhook.delete` and `webhook.rotateSecret`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookRef {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The webhook's id.
    pub id: String,
}

/// Input of `webhook.deliveries`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliveryList {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The webhook's id.
    pub id: String,
    /// At most this many deliveries, newest first (default 50, at most 500).
    #[serde(default, deserialize_with = "super::numbers::optional_u32")]
    #[schemars(with = "Option<u32>")]
    pub limit: Option<u32>,
}

/// Input of `webhook.redeliver`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redeliver {
    /// The tenant.
    #[schemars(pattern(planner::schema::NAME_PATTERN))]
    pub tenant_id: String,
    /// The webhook's id.
    pub id: String,
    /// The event to deliver again.
    pub event_id: String,
}

fn target_error(err: TargetError) -> ApiError {
    ApiError::invalid("url", err.to_string())
}

async fn require_webhook(
    conn: &mut AnyConnection,
    tenant: &str,
    id: &str,
) -> Result<sqlx::any::AnyRow, ApiError> {
    let row = sqlx::query(
        "SELECT id, url, events, disabled_at, disabled_reason, failures, revision, created_at \
         FROM webhooks WHERE id = $1 AND tenant_id = $2",
    )
    .bind(id)
    .bind(tenant)
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        Some(row) => Ok(row),
        None => Err(super::iam::not_found_in(conn, tenant, "webhook", id).await),
    }
}

/// A webhook endpoint, as `webhook.list` answers it: never its secret.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// `wh_...`.
    pub id: String,
    /// Where it POSTs.
    pub url: String,
    /// The event types it receives (`*`: all).
    pub events: Vec<String>,
    /// False once disabled after failing deliveries.
    pub enabled: bool,
    /// Failed deliveries in a row.
    pub failures: i64,
    /// Its revision.
    pub revision: i64,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it was disabled (Unix milliseconds); left out while enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<i64>,
    /// Why it was disabled; left out while enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
}

fn webhook_json(r: &sqlx::any::AnyRow) -> Result<Webhook, sqlx::Error> {
    let events: String = r.try_get(2)?;
    let disabled_at: Option<i64> = r.try_get(3)?;
    Ok(Webhook {
        id: r.try_get(0)?,
        url: r.try_get(1)?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        enabled: disabled_at.is_none(),
        failures: r.try_get(5)?,
        revision: r.try_get(6)?,
        created_at: r.try_get(7)?,
        disabled_at,
        // Written with `disabled_at`, and cleared with it.
        disabled_reason: match disabled_at {
            Some(_) => r.try_get(4)?,
            None => None,
        },
    })
}

/// `webhook.create`'s answer: the secret, shown here and on rotation only.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NewWebhook {
    /// `wh_...`.
    pub id: String,
    /// The signing secret, `whsec_<base64 of 32 bytes>`.
    pub secret: String,
    /// Where it POSTs (as parsed: `https://example.com/hook`).
    pub url: String,
    /// The event types it receives, each once.
    pub events: Vec<String>,
    /// Always `true`.
    #[schemars(extend("const" = true))]
    pub enabled: bool,
}

/// `webhook.rotateSecret`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedSecret {
    /// The webhook's id.
    pub id: String,
    /// The new signing secret.
    pub secret: String,
    /// Until when (Unix milliseconds) the previous secret also signs.
    pub previous_secret_until: i64,
}

/// One delivery of an event to an endpoint, as `webhook.deliveries` answers it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// `dlv_...`.
    pub id: String,
    /// The endpoint.
    pub webhook_id: String,
    /// The event (its `webhook-id`).
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    #[schemars(extend("enum" = ["pending", "succeeded", "failed"]))]
    pub status: String,
    /// Attempts made.
    pub attempts: i64,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds.
    pub updated_at: i64,
    /// Every attempt, in order.
    pub log: Vec<Attempt>,
    /// The last attempt's HTTP status; left out when it had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_status: Option<i64>,
    /// The last attempt's error; left out when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// Its number, from 1.
    pub attempt: i64,
    /// When it started (Unix milliseconds).
    pub at: i64,
    /// How long it took; 0 while it has no answer.
    pub duration_ms: i64,
    /// The HTTP status answered; left out when none came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// Why it failed, or "no answer recorded: the attempt is in flight, or was cut off before
    /// its answer was written" while it has no answer; left out when it succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `webhook.redeliver`'s answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Redelivery {
    /// The new delivery.
    pub delivery_id: String,
    /// The endpoint.
    pub webhook_id: String,
    /// The event delivered again.
    pub event_id: String,
}

async fn require_tenant(conn: &mut AnyConnection, tenant: &str) -> Result<(), ApiError> {
    check_name("tenantId", tenant)?;
    if super::db::exists(conn, "SELECT id FROM tenants WHERE id = $1", &[tenant]).await? {
        Ok(())
    } else {
        Err(ApiError::not_found("tenant", tenant))
    }
}

/// `webhook.create`: decides `events:webhook:create`; answers the secret (it is shown here
/// and on rotation only).
pub async fn create(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<NewWebhook, ApiError> {
    let input: WebhookCreate = parse(input)?;
    let method = "webhook.create";
    caller
        .check_tenant(state, method, &input.tenant_id, CREATE)
        .await?;
    if input.url.chars().count() > 2048 {
        return Err(ApiError::invalid("url", "a URL of at most 2048 characters"));
    }
    // As the schema's pattern says: the URL parser would also take `http:host/path`.
    let scheme_end = input.url.find("://").unwrap_or(0);
    if !matches!(
        input.url[..scheme_end].to_ascii_lowercase().as_str(),
        "http" | "https"
    ) {
        return Err(ApiError::invalid(
            "url",
            "a URL starting with http:// or https://",
        ));
    }
    if input.events.is_empty() {
        return Err(ApiError::invalid(
            "events",
            format!("name at least one event type: {}", TYPES.join(", ")),
        ));
    }
    let mut kinds = Vec::new();
    for (i, e) in input.events.iter().enumerate() {
        if e != "*" && !TYPES.contains(&e.as_str()) {
            return Err(ApiError::invalid(
                format!("events[{i}]"),
                format!(
                    "unknown event type {e:?} (known: {}, or * for all)",
                    TYPES.join(", ")
                ),
            ));
        }
        if !kinds.contains(e) {
            kinds.push(e.clone());
        }
    }
    let target = check_target(&input.url, state.config.webhook_allow_private)
        .await
        .map_err(target_error)?;
    let url = target.url.to_string();
    let id = new_id("wh");
    let secret = new_secret();
    let now = now_ms();
    let mut tx = state.db.write_tx().await?;
    require_tenant(&mut tx, &input.tenant_id).await?;
    sqlx::query(
        "INSERT INTO webhooks (id, tenant_id, url, events, secret, failures, revision, created_at) \
         VALUES ($1, $2, $3, $4, $5, 0, 1, $6)",
    )
    .bind(&id)
    .bind(&input.tenant_id)
    .bind(&url)
    .bind(serde_json::to_string(&kinds)?)
    .bind(&secret)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&id),
        json!({ "url": url, "events": kinds }),
    )
    .await?;
    Ok(NewWebhook {
        id,
        secret,
        url,
        events: kinds,
        enabled: true,
    })
}

/// `webhook.list`: decides `events:webhook:read`; never answers secrets.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<Webhook>, ApiError> {
    let input: WebhookList = parse(input)?;
    caller
        .check_tenant(state, "webhook.list", &input.tenant_id, READ)
        .await?;
    super::iam::require_tenant(&mut *state.db.pool.acquire().await?, &input.tenant_id).await?;
    let rows = sqlx::query(
        "SELECT id, url, events, disabled_at, disabled_reason, failures, revision, created_at \
         FROM webhooks WHERE tenant_id = $1 ORDER BY id",
    )
    .bind(&input.tenant_id)
    .fetch_all(&state.db.pool)
    .await?;
    let items = rows
        .iter()
        .map(webhook_json)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Items { items })
}

/// `webhook.delete`: decides `events:webhook:delete`; its deliveries and their log go too.
pub async fn delete(state: &AppState, caller: &Caller, input: &[u8]) -> Result<Deleted, ApiError> {
    let input: WebhookRef = parse(input)?;
    let method = "webhook.delete";
    caller
        .check_tenant(state, method, &input.tenant_id, DELETE)
        .await?;
    let mut tx = state.db.write_tx().await?;
    require_webhook(&mut tx, &input.tenant_id, &input.id).await?;
    // Deliveries first: their row locks order this against an attempt being begun (which
    // updates its delivery, then writes its row), so that on PostgreSQL an attempt committed
    // meanwhile is seen, and deleted, by the next statement rather than left behind.
    for table in ["webhook_deliveries", "webhook_attempts"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE webhook_id = $1"))
            .bind(&input.id)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query("DELETE FROM webhooks WHERE id = $1")
        .bind(&input.id)
        .execute(&mut *tx)
        .await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&input.id),
        json!({}),
    )
    .await?;
    Ok(Deleted {
        id: input.id,
        deleted: true,
    })
}

/// `webhook.rotateSecret`: decides `events:webhook:update`; answers the new secret. The old
/// one keeps signing beside it (a second `v1,` signature) for 24 hours.
pub async fn rotate_secret(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<RotatedSecret, ApiError> {
    let input: WebhookRef = parse(input)?;
    let method = "webhook.rotateSecret";
    caller
        .check_tenant(state, method, &input.tenant_id, UPDATE)
        .await?;
    let secret = new_secret();
    let now = now_ms();
    let until = now + i64::try_from(ROTATION_OVERLAP.as_millis()).unwrap_or(0);
    let mut tx = state.db.write_tx().await?;
    require_webhook(&mut tx, &input.tenant_id, &input.id).await?;
    sqlx::query(
        "UPDATE webhooks SET previous_secret = secret, previous_until = $1, secret = $2, \
         revision = revision + 1 WHERE id = $3",
    )
    .bind(until)
    .bind(&secret)
    .bind(&input.id)
    .execute(&mut *tx)
    .await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&input.id),
        json!({ "previousUntil": until }),
    )
    .await?;
    Ok(RotatedSecret {
        id: input.id,
        secret,
        previous_secret_until: until,
    })
}

/// `webhook.deliveries`: decides `events:webhook:read`; the endpoint's deliveries, newest
/// first, each with its attempts.
pub async fn deliveries(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Items<Delivery>, ApiError> {
    let input: DeliveryList = parse(input)?;
    caller
        .check_tenant(state, "webhook.deliveries", &input.tenant_id, READ)
        .await?;
    let mut conn = state.db.pool.acquire().await?;
    require_webhook(&mut conn, &input.tenant_id, &input.id).await?;
    let limit = i64::from(input.limit.unwrap_or(50).min(500));
    let rows = sqlx::query(
        "SELECT d.id, d.event_id, e.type, d.status, d.attempts, d.last_status, d.last_error, \
         d.created_at, d.updated_at FROM webhook_deliveries d JOIN events e ON e.id = d.event_id \
         WHERE d.webhook_id = $1 ORDER BY d.id DESC LIMIT $2",
    )
    .bind(&input.id)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    let oldest = rows
        .last()
        .map(|r| r.try_get::<String, _>(0))
        .transpose()?
        .unwrap_or_default();
    let mut log: BTreeMap<String, Vec<Attempt>> = BTreeMap::new();
    for a in sqlx::query(
        "SELECT delivery_id, attempt, at, status, error, duration_ms FROM webhook_attempts \
         WHERE webhook_id = $1 AND delivery_id >= $2 ORDER BY id",
    )
    .bind(&input.id)
    .bind(&oldest)
    .fetch_all(&mut *conn)
    .await?
    {
        let entry = Attempt {
            attempt: a.try_get(1)?,
            at: a.try_get(2)?,
            duration_ms: a.try_get(5)?,
            status: a.try_get(3)?,
            error: a.try_get(4)?,
        };
        log.entry(a.try_get(0)?).or_default().push(entry);
    }
    let mut items = Vec::with_capacity(rows.len());
    for r in &rows {
        let id: String = r.try_get(0)?;
        let log = log.remove(&id).unwrap_or_default();
        items.push(Delivery {
            id,
            webhook_id: input.id.clone(),
            event_id: r.try_get(1)?,
            event_type: r.try_get(2)?,
            status: r.try_get(3)?,
            attempts: r.try_get(4)?,
            created_at: r.try_get(7)?,
            updated_at: r.try_get(8)?,
            log,
            last_status: r.try_get(5)?,
            last_error: r.try_get(6)?,
        });
    }
    Ok(Items { items })
}

/// `webhook.redeliver`: decides `events:webhook:redeliver`; delivers one event again to the
/// endpoint (same `webhook-id`), as a new delivery with its own attempts. An endpoint that
/// was disabled is enabled again: redelivering is the operator saying it is back.
pub async fn redeliver(
    state: &AppState,
    caller: &Caller,
    input: &[u8],
) -> Result<Redelivery, ApiError> {
    let input: Redeliver = parse(input)?;
    let method = "webhook.redeliver";
    caller
        .check_tenant(state, method, &input.tenant_id, REDELIVER)
        .await?;
    let mut tx = state.db.write_tx().await?;
    let hook = require_webhook(&mut tx, &input.tenant_id, &input.id).await?;
    let event = events::load(&mut tx, &input.event_id).await?;
    let Some(event) = event.filter(|e| e.tenant_id == input.tenant_id) else {
        return Err(ApiError::not_found("event", &input.event_id));
    };
    // A redelivery repeats what the endpoint subscribed to; it never widens the subscription.
    let events: String = hook.try_get(2)?;
    if !subscribed(&events, &event.kind) {
        return Err(ApiError::invalid(
            "eventId",
            format!(
                "webhook {} does not subscribe to {} events (it subscribes to {events})",
                input.id, event.kind
            ),
        ));
    }
    if hook.try_get::<Option<i64>, _>(3)?.is_some() {
        sqlx::query(
            "UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failures = 0, \
             revision = revision + 1 WHERE id = $1",
        )
        .bind(&input.id)
        .execute(&mut *tx)
        .await?;
    }
    let delivery = insert_delivery(&mut tx, &input.tenant_id, &input.id, &input.event_id).await?;
    commit_audited(
        tx,
        caller,
        &input.tenant_id,
        method,
        Some(&input.id),
        json!({ "eventId": input.event_id, "deliveryId": delivery }),
    )
    .await?;
    state.reconcilers.notify();
    Ok(Redelivery {
        delivery_id: delivery,
        webhook_id: input.id,
        event_id: input.event_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::iam;
    use crate::server::reconciler::tests::test_state;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one HTTP request whole (headers, then `content-length` bytes of body).
    async fn read_request(stream: &mut tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length || n == 0 {
                    return;
                }
            } else if n == 0 {
                return;
            }
        }
    }

    /// A server state with the delivery reconciler, an endpoint for every event on a loopback
    /// listener (the receiver, played by the test), one event and its delivery, claimed by
    /// `wrk_first.0`: the state, the delivery's id and the listener.
    async fn one_delivery(dir: &std::path::Path) -> (AppState, String, tokio::net::TcpListener) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let mut state = test_state(dir, vec![Arc::new(Deliver)]).await;
        let mut config = (*state.config).clone();
        config.webhook_allow_private = true;
        state.config = Arc::new(config);
        iam::bootstrap(&state.db).await.unwrap();
        let mut tx = state.db.write_tx().await.unwrap();
        sqlx::query(
            "INSERT INTO webhooks (id, tenant_id, url, events, secret, revision, created_at) \
             VALUES ('wh_fence', 'root', $1, '[\"*\"]', $2, 1, 0)",
        )
        .bind(&url)
        .bind(new_secret())
        .execute(&mut *tx)
        .await
        .unwrap();
        let event = events::publish(
            &mut tx,
            "root",
            "fleet.drifted",
            "root",
            &serde_json::json!({}),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let delivery: String = sqlx::query("SELECT id FROM webhook_deliveries WHERE event_id = $1")
            .bind(&event)
            .fetch_one(&state.db.pool)
            .await
            .unwrap()
            .get(0);
        sqlx::query("UPDATE reconciler_queue SET claimed_by = 'wrk_first.0' WHERE key = $1")
            .bind(&delivery)
            .execute(&state.db.pool)
            .await
            .unwrap();
        (state, delivery, listener)
    }

    fn lease(delivery: &str, holder: &str) -> Lease {
        Lease {
            reconciler: DELIVER.into(),
            key: delivery.into(),
            holder: holder.into(),
        }
    }

    /// The delivery's status, count of attempts and last error, and its log (attempt, HTTP
    /// status, error).
    #[allow(clippy::type_complexity)]
    async fn written(
        state: &AppState,
        delivery: &str,
    ) -> (
        String,
        i64,
        Option<String>,
        Vec<(i64, Option<i64>, Option<String>)>,
    ) {
        let row = sqlx::query(
            "SELECT status, attempts, last_error FROM webhook_deliveries WHERE id = $1",
        )
        .bind(delivery)
        .fetch_one(&state.db.pool)
        .await
        .unwrap();
        let log = sqlx::query(
            "SELECT attempt, status, error FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt",
        )
        .bind(delivery)
        .fetch_all(&state.db.pool)
        .await
        .unwrap()
        .iter()
        .map(|a| (a.get(0), a.get(1), a.get(2)))
        .collect();
        (row.get(0), row.get(1), row.get(2), log)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_attempt_that_outlived_its_lease_records_only_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        // A receiver that answers 200; while the first POST is in flight, another worker
        // takes the delivery's key (this one was paused past its lease).
        let (state, delivery, listener) = one_delivery(dir.path()).await;
        let posts = Arc::new(AtomicUsize::new(0));
        let (pool, seen) = (state.db.pool.clone(), posts.clone());
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                read_request(&mut stream).await;
                if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                    sqlx::query("UPDATE reconciler_queue SET claimed_by = 'wrk_next.0' WHERE reconciler = $1")
                        .bind(DELIVER)
                        .execute(&pool)
                        .await
                        .unwrap();
                }
                let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                stream.write_all(ok.as_bytes()).await.unwrap();
            }
        });

        // The paused worker's POST went out, and its lease ran out meanwhile: its attempt
        // (written before the POST) has its answer; the delivery is the holder's to settle.
        let late = deliver(&state, &delivery, &lease(&delivery, "wrk_first.0"))
            .await
            .unwrap();
        assert!(matches!(late, Outcome::Done));
        assert_eq!(posts.load(Ordering::SeqCst), 1);
        assert_eq!(
            written(&state, &delivery).await,
            (
                "pending".to_string(),
                1,
                Some(NO_ANSWER.to_string()),
                vec![(1, Some(200), None)]
            )
        );

        // Run again with the lost lease: no POST, no attempt.
        deliver(&state, &delivery, &lease(&delivery, "wrk_first.0"))
            .await
            .unwrap();
        assert_eq!(posts.load(Ordering::SeqCst), 1);
        assert_eq!(written(&state, &delivery).await.1, 1);

        // The holder's attempt settles the delivery.
        deliver(&state, &delivery, &lease(&delivery, "wrk_next.0"))
            .await
            .unwrap();
        assert_eq!(posts.load(Ordering::SeqCst), 2);
        assert_eq!(
            written(&state, &delivery).await,
            (
                "succeeded".to_string(),
                2,
                None,
                vec![(1, Some(200), None), (2, Some(200), None)]
            )
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_attempt_cut_off_before_its_answer_is_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        // A receiver that reads the first POST and never answers it; it answers the next.
        let (state, delivery, listener) = one_delivery(dir.path()).await;
        let (got_first, first) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut hung, _) = listener.accept().await.unwrap();
            read_request(&mut hung).await;
            got_first.send(()).unwrap();
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                read_request(&mut stream).await;
                let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                stream.write_all(ok.as_bytes()).await.unwrap();
            }
        });

        // The worker stops (its future dropped, as by a crash) while its POST is in flight.
        let cut = tokio::spawn({
            let (state, delivery) = (state.clone(), delivery.clone());
            async move { deliver(&state, &delivery, &lease(&delivery, "wrk_first.0")).await }
        });
        first.await.unwrap();
        cut.abort();
        assert!(cut.await.unwrap_err().is_cancelled());
        assert_eq!(
            written(&state, &delivery).await,
            (
                "pending".to_string(),
                1,
                Some(NO_ANSWER.to_string()),
                vec![(1, None, Some(NO_ANSWER.to_string()))]
            )
        );

        // The next holder's attempt is the second, and the first keeps its record.
        sqlx::query("UPDATE reconciler_queue SET claimed_by = 'wrk_next.0' WHERE key = $1")
            .bind(&delivery)
            .execute(&state.db.pool)
            .await
            .unwrap();
        deliver(&state, &delivery, &lease(&delivery, "wrk_next.0"))
            .await
            .unwrap();
        assert_eq!(
            written(&state, &delivery).await,
            (
                "succeeded".to_string(),
                2,
                None,
                vec![(1, None, Some(NO_ANSWER.to_string())), (2, Some(200), None)]
            )
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_attempt_without_an_answer_is_no_failure_of_the_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        // A receiver that answers 500 to everything.
        let (state, delivery, listener) = one_delivery(dir.path()).await;
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                read_request(&mut stream).await;
                let no = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                stream.write_all(no.as_bytes()).await.unwrap();
            }
        });
        // An attempt cut off four days ago, longer than an endpoint may fail before it is
        // disabled: it tells nothing of the endpoint.
        let long_ago = now_ms() - 4 * 86_400_000;
        sqlx::query(
            "INSERT INTO webhook_attempts (id, delivery_id, webhook_id, event_id, attempt, at, status, error, duration_ms) \
             SELECT 'att_cut', id, webhook_id, event_id, 0, $1, NULL, $2, 0 FROM webhook_deliveries WHERE id = $3",
        )
        .bind(long_ago)
        .bind(NO_ANSWER)
        .bind(&delivery)
        .execute(&state.db.pool)
        .await
        .unwrap();

        let outcome = deliver(&state, &delivery, &lease(&delivery, "wrk_first.0"))
            .await
            .unwrap();
        assert!(matches!(outcome, Outcome::Retry(e) if e == "HTTP 500"));
        let disabled: Option<i64> =
            sqlx::query("SELECT disabled_at FROM webhooks WHERE id = 'wh_fence'")
                .fetch_one(&state.db.pool)
                .await
                .unwrap()
                .get(0);
        assert_eq!(
            disabled, None,
            "one failure now is no three days of failures"
        );
        assert_eq!(written(&state, &delivery).await.0, "pending");
    }

    #[test]
    fn the_attempts_schema_quotes_what_an_unanswered_one_says() {
        let schema = serde_json::to_value(schemars::schema_for!(Attempt)).unwrap();
        let error = schema["properties"]["error"]["description"]
            .as_str()
            .unwrap();
        assert!(error.replace('\n', " ").contains(NO_ANSWER), "{error}");
    }

    #[test]
    fn addresses() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for (addr, strict, allowed) in [
            ("169.254.169.254", Some("link-local"), Some("link-local")),
            ("169.254.1.1", Some("link-local"), Some("link-local")),
            ("fe80::1", Some("link-local"), Some("link-local")),
            ("fd00:ec2::254", Some("metadata"), Some("metadata")),
            ("100.100.100.200", Some("metadata"), Some("metadata")),
            (
                "::ffff:169.254.169.254",
                Some("link-local"),
                Some("link-local"),
            ),
            ("64:ff9b::a9fe:a9fe", Some("link-local"), Some("link-local")),
            (
                "0.0.0.0",
                Some("non-unicast or reserved"),
                Some("non-unicast or reserved"),
            ),
            (
                "224.0.0.1",
                Some("non-unicast or reserved"),
                Some("non-unicast or reserved"),
            ),
            ("127.0.0.1", Some("loopback"), None),
            ("::1", Some("loopback"), None),
            ("::ffff:127.0.0.1", Some("loopback"), None),
            ("10.1.2.3", Some("private"), None),
            ("172.16.0.1", Some("private"), None),
            ("192.168.1.1", Some("private"), None),
            ("100.64.0.1", Some("private"), None),
            ("fd12::1", Some("private"), None),
            // IPv4 inside IPv6: compatible, NAT64 local-use, 6to4 (found by an audit).
            ("::169.254.169.254", Some("link-local"), Some("link-local")),
            ("::127.0.0.1", Some("loopback"), None),
            (
                "64:ff9b:1::a9fe:a9fe",
                Some("link-local"),
                Some("link-local"),
            ),
            (
                "64:ff9b:1:a9fe:a9:fe00::",
                Some("non-unicast or reserved"),
                Some("non-unicast or reserved"),
            ),
            (
                "64:ff9b:1:a9fe:a9:fe00:5db8:d70e",
                Some("link-local"),
                Some("link-local"),
            ),
            ("64:ff9b:1:5db8:d7:e00:5db8:d70e", Some("private"), None),
            ("2002:a9fe:a9fe::", Some("link-local"), Some("link-local")),
            ("2002:7f00:1::", Some("loopback"), None),
            ("2002:5db8:d70e::1", None, None),
            // Special-purpose ranges.
            (
                "192.0.2.1",
                Some("special-purpose"),
                Some("special-purpose"),
            ),
            (
                "192.0.0.8",
                Some("special-purpose"),
                Some("special-purpose"),
            ),
            (
                "198.19.0.1",
                Some("special-purpose"),
                Some("special-purpose"),
            ),
            (
                "203.0.113.9",
                Some("special-purpose"),
                Some("special-purpose"),
            ),
            (
                "2001:db8::1",
                Some("special-purpose"),
                Some("special-purpose"),
            ),
            ("100::1", Some("special-purpose"), Some("special-purpose")),
            ("198.20.0.1", None, None),
            ("93.184.215.14", None, None),
            ("2606:4700::1111", None, None),
        ] {
            assert_eq!(refused(ip(addr), false), strict, "{addr} strict");
            assert_eq!(refused(ip(addr), true), allowed, "{addr} allowing private");
        }
    }

    #[tokio::test]
    async fn targets() {
        assert!(matches!(
            check_target("ftp://example.com/x", true).await,
            Err(TargetError::Scheme(_))
        ));
        assert!(matches!(
            check_target("not a url", true).await,
            Err(TargetError::Url(_))
        ));
        assert!(matches!(
            check_target("http://169.254.169.254/latest/meta-data", true).await,
            Err(TargetError::Refused {
                why: "link-local",
                ..
            })
        ));
        assert!(matches!(
            check_target("http://metadata.google.internal/", true).await,
            Err(TargetError::Refused {
                why: "metadata",
                ..
            })
        ));
        assert!(matches!(
            check_target("http://[fe80::1]:8080/", true).await,
            Err(TargetError::Refused {
                why: "link-local",
                ..
            })
        ));
        assert!(matches!(
            check_target("http://127.0.0.1:9/hook", false).await,
            Err(TargetError::Refused {
                why: "loopback",
                ..
            })
        ));
        // A name is refused without saying what it resolves to.
        let named = check_target("http://localhost:9/hook", false).await;
        assert!(
            matches!(&named, Err(TargetError::NotPublic { host }) if host == "localhost"),
            "{named:?}"
        );
        assert!(
            !named.unwrap_err().to_string().contains("127.0.0.1"),
            "the message names no address"
        );
        assert!(matches!(
            check_target("http://no-such-host.invalid/", true).await,
            Err(TargetError::NotPublic { .. })
        ));
        let ok = check_target("http://localhost:9/hook", true).await.unwrap();
        assert!(
            ok.addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 9)
        );
    }

    #[test]
    fn signature_matches_the_specification_example() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1614265330, body).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        assert!(new_secret().starts_with("whsec_"));
        assert_eq!(
            B64.decode(&new_secret()["whsec_".len()..]).unwrap().len(),
            32
        );
    }
}
