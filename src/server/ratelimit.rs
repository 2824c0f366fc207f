//! Rate limits per API key: a token bucket per key id, checked before the request reaches
//! its method, answered `RATE_LIMITED` (429, with `Retry-After`) when empty.
//!
//! `BETTER_COMPUTE_RATE_LIMIT=RATE[:BURST]` sets the sustained requests per second and the
//! burst of each key (default `1000:2000`: generous, so people, CI, the console and
//! benchmarks never meet it, while one runaway key cannot hold the whole server); `off` turns
//! it off. The bucket is keyed by the key's id (`bc_<id>_...`), so guesses at one key's
//! secret share that key's bucket. Requests without a bearer key are not limited here (they
//! are answered 401 before any work).

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default sustained rate (requests per second per key).
pub const DEFAULT_RATE: f64 = 1000.0;
/// The default burst (requests a key may send at once).
pub const DEFAULT_BURST: f64 = 2000.0;
/// Buckets kept before idle ones are forgotten (random key ids cannot grow memory forever).
const MAX_BUCKETS: usize = 10_000;
/// The bucket of new key ids while every kept bucket owes tokens (no key id is empty: the
/// header's `bc_<id>_` reading gives at least the empty string, which this is not).
const OVERFLOW: &str = "\u{0}overflow";

/// The buckets of every key, or nothing when limits are off.
#[derive(Debug)]
pub struct Limiter {
    limits: Option<(f64, f64)>,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl Limiter {
    /// From `BETTER_COMPUTE_RATE_LIMIT` (see the module); an unreadable value keeps the
    /// default and says so.
    pub fn from_env() -> Arc<Limiter> {
        let spec = std::env::var("BETTER_COMPUTE_RATE_LIMIT").unwrap_or_default();
        let limits = match parse(&spec) {
            Ok(limits) => limits,
            Err(()) => {
                tracing::warn!(value = %spec, "BETTER_COMPUTE_RATE_LIMIT is not RATE[:BURST] or off; using the default");
                Some((DEFAULT_RATE, DEFAULT_BURST))
            }
        };
        Arc::new(Limiter::new(limits))
    }

    /// Limits of `rate` per second and `burst` at once, or none.
    pub fn new(limits: Option<(f64, f64)>) -> Limiter {
        Limiter {
            limits,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token of `key`'s bucket, or answers how long until one is there.
    pub fn take(&self, key: &str) -> Result<(), Duration> {
        self.take_at(key, Instant::now())
    }

    /// [`Self::take`] at `now` (tests pass their own clock: timing a busy machine is noise).
    fn take_at(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let Some((rate, burst)) = self.limits else {
            return Ok(());
        };
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let mut key = key;
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            // Forget the buckets that refilled completely: they hold no debt.
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
            // Every bucket still owes: a new id shares one overflow bucket. Forgetting owing
            // buckets would let anyone clear every key's debt with made-up key ids.
            if buckets.len() >= MAX_BUCKETS {
                key = OVERFLOW;
            }
        }
        let (tokens, at) = buckets.entry(key.to_string()).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / rate))
        }
    }
}

fn parse(spec: &str) -> Result<Option<(f64, f64)>, ()> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Ok(Some((DEFAULT_RATE, DEFAULT_BURST)));
    }
    if spec.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (rate, burst) = match spec.split_once(':') {
        Some((r, b)) => (r.trim().parse::<f64>(), b.trim().parse::<f64>()),
        None => (spec.parse::<f64>(), spec.parse::<f64>()),
    };
    match (rate, burst) {
        (Ok(r), Ok(b)) if r > 0.0 && r.is_finite() && b >= 1.0 && b.is_finite() => Ok(Some((r, b))),
        _ => Err(()),
    }
}

/// The id part of `Authorization: Bearer bc_<id>_<secret>`.
fn key_id(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    // The same reading as authentication's, so no spelling of the scheme escapes the limit.
    let key = super::iam::bearer(value)?;
    key.strip_prefix("bc_")?.split_once('_').map(|(id, _)| id)
}

/// The middleware (`axum::middleware::from_fn_with_state(Limiter::from_env(), limit)`).
pub async fn limit(State(limiter): State<Arc<Limiter>>, request: Request, next: Next) -> Response {
    let refused = key_id(&request).and_then(|id| limiter.take(id).err());
    match refused {
        None => next.run(request).await,
        Some(wait) => too_many(wait),
    }
}

fn too_many(wait: Duration) -> Response {
    let ms = wait.as_millis().max(1) as u64;
    let body = serde_json::json!({ "error": {
        "code": "RATE_LIMITED",
        "message": format!("too many requests with this API key; retry in {ms} ms"),
        "details": { "retryAfterMs": ms },
    }});
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    if let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_then_refills() {
        let limiter = Limiter::new(Some((1000.0, 3.0)));
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limiter.take_at("a", start).is_ok());
        }
        let wait = limiter.take_at("a", start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(1));
        // Another key has its own bucket.
        assert!(limiter.take_at("b", start).is_ok());
        assert!(
            limiter
                .take_at("a", start + Duration::from_millis(1))
                .is_ok()
        );
        assert!(
            limiter
                .take_at("a", start + Duration::from_millis(1))
                .is_err()
        );
    }

    #[test]
    fn specs() {
        assert_eq!(parse(""), Ok(Some((DEFAULT_RATE, DEFAULT_BURST))));
        assert_eq!(parse("off"), Ok(None));
        assert_eq!(parse("5"), Ok(Some((5.0, 5.0))));
        assert_eq!(parse("2:10"), Ok(Some((2.0, 10.0))));
        assert_eq!(parse("0"), Err(()));
        assert_eq!(parse("x"), Err(()));
    }

    #[test]
    fn every_spelling_of_the_scheme_names_the_same_bucket() {
        let id = |value: &str| {
            let request = Request::builder()
                .header(header::AUTHORIZATION, value)
                .body(axum::body::Body::empty())
                .unwrap();
            key_id(&request).map(str::to_owned)
        };
        for value in ["Bearer bc_k1_s", "bearer bc_k1_s", "BEARER  bc_k1_s "] {
            assert_eq!(id(value).as_deref(), Some("k1"), "{value}");
        }
        assert_eq!(id("Basic bc_k1_s"), None);
        assert_eq!(id("Bearer"), None);
    }

    #[test]
    fn made_up_key_ids_do_not_clear_a_key_s_debt() {
        let limiter = Limiter::new(Some((1.0, 2.0)));
        let now = Instant::now();
        assert!(limiter.take_at("real", now).is_ok());
        assert!(limiter.take_at("real", now).is_ok());
        assert!(limiter.take_at("real", now).is_err());
        for i in 0..(MAX_BUCKETS + 50) {
            let _ = limiter.take_at(&format!("junk{i}"), now);
            let _ = limiter.take_at(&format!("junk{i}"), now);
        }
        let real = limiter.take_at("real", now);
        assert!(real.is_err(), "the real key's bucket was forgiven");
        assert!(limiter.buckets.lock().unwrap().len() <= MAX_BUCKETS + 1);
    }

    #[test]
    fn random_key_ids_cannot_grow_memory_forever() {
        let limiter = Limiter::new(Some((1.0, 1.0)));
        for i in 0..(MAX_BUCKETS * 2) {
            let _ = limiter.take(&i.to_string());
        }
        assert!(limiter.buckets.lock().unwrap().len() <= MAX_BUCKETS + 1);
    }
}
