//! The console's shared state: the session (API key, tenant) and what the server said about
//! the tenant, each with its loading state. Views read it from the context and ask it to
//! refresh; answers to an older request (another tenant, a signed-out key) are dropped.

use crate::api::{self, ApiError};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;
use std::pin::Pin;

/// An answer on its way.
type Answer<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

const KEY_ITEM: &str = "better-compute.apiKey";
const TENANT_ITEM: &str = "better-compute.tenant";
const EVERY_ITEM: &str = "better-compute.statusEveryMs";
/// How often [`Console::poll`] re-reads the status, in milliseconds.
const EVERY_MS: u64 = 30_000;

/// Something fetched: the last value (kept while refreshing, so the layout does not jump),
/// whether a request is in flight, and the last error.
#[derive(Debug, Clone, PartialEq)]
pub struct Load<T> {
    /// The last answer.
    pub value: Option<T>,
    /// A request is in flight.
    pub loading: bool,
    /// The last request failed.
    pub error: Option<ApiError>,
    /// When `value` was read (Unix milliseconds).
    pub read_at: i64,
    /// The last quiet re-read failed (the value is kept): its error and when.
    pub stale: Option<(ApiError, i64)>,
}

impl<T> Default for Load<T> {
    fn default() -> Self {
        Load {
            value: None,
            loading: false,
            error: None,
            read_at: 0,
            stale: None,
        }
    }
}

impl<T> Load<T> {
    /// A quiet re-read was refused (the key revoked, its grant removed): the re-reads stop
    /// until the user asks for something.
    pub fn refused_quietly(&self) -> bool {
        self.stale.as_ref().is_some_and(|(e, _)| e.is_refusal())
    }
}

/// The key may not read events: not asked again (each refusal is audited).
fn events_forbidden(events: &Load<Vec<api::Event>>) -> bool {
    [events.error.as_ref(), events.stale.as_ref().map(|s| &s.0)]
        .into_iter()
        .flatten()
        .any(|e| e.code == "FORBIDDEN")
}

fn now() -> i64 {
    js_sys::Date::now() as i64
}

/// The console's state, provided as context (`expect_context::<Console>()`).
#[derive(Clone, Copy)]
pub struct Console {
    /// The session's API key (sessionStorage only, never in the URL).
    pub key: RwSignal<Option<String>>,
    /// The tenant shown.
    pub tenant: RwSignal<String>,
    /// `tenant.list`.
    pub tenants: RwSignal<Load<Vec<api::Tenant>>>,
    /// `fleet.status` of the tenant.
    pub status: RwSignal<Load<api::Status>>,
    /// `fleet.export` of the tenant.
    pub export: RwSignal<Load<api::Exported>>,
    /// `event.list` of the tenant (`None` value and no error: the server has no events).
    pub events: RwSignal<Load<Vec<api::Event>>>,
    /// Whether the server has `event.list`.
    pub events_available: RwSignal<bool>,
    /// Whether the server has `fleet.check`.
    pub check_available: RwSignal<bool>,
    /// A `fleet.check` asked by Check now is in flight (other reloads of the status are no
    /// check: "Checking…" is for this one).
    pub checking: RwSignal<bool>,
    /// The key was refused: unknown, or refused the fleet methods (a refusal of `tenant.list`
    /// or `event.list` alone stays in its [`Load`]: the fleet pages work without them).
    pub refused: RwSignal<Option<ApiError>>,
    generation: StoredValue<u64>,
    /// Requests asked (not quiet re-reads): a quiet answer is dropped when one was asked since.
    asked: StoredValue<u64>,
}

fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

impl Console {
    /// The state, with the session restored from sessionStorage.
    pub fn restore() -> Console {
        let storage = session_storage();
        let item = |name| {
            storage
                .as_ref()
                .and_then(|s| s.get_item(name).ok().flatten())
        };
        Console {
            key: RwSignal::new(item(KEY_ITEM).filter(|k| !k.is_empty())),
            tenant: RwSignal::new(item(TENANT_ITEM).unwrap_or_else(|| "root".to_owned())),
            tenants: RwSignal::new(Load::default()),
            status: RwSignal::new(Load::default()),
            export: RwSignal::new(Load::default()),
            events: RwSignal::new(Load::default()),
            events_available: RwSignal::new(true),
            check_available: RwSignal::new(true),
            checking: RwSignal::new(false),
            refused: RwSignal::new(None),
            generation: StoredValue::new(0),
            asked: StoredValue::new(0),
        }
    }

    /// Starts a session with `key` (already accepted by the server).
    pub fn sign_in(self, key: String) {
        if let Some(storage) = session_storage() {
            let _ = storage.set_item(KEY_ITEM, &key);
        }
        self.refused.set(None);
        self.key.set(Some(key));
    }

    /// Ends the session and forgets the key.
    pub fn sign_out(self) {
        if let Some(storage) = session_storage() {
            let _ = storage.remove_item(KEY_ITEM);
        }
        self.generation.update_value(|g| *g += 1);
        self.key.set(None);
        self.refused.set(None);
        self.status.set(Load::default());
        self.export.set(Load::default());
        self.events.set(Load::default());
        self.tenants.set(Load::default());
    }

    /// Shows another tenant.
    pub fn choose_tenant(self, tenant: String) {
        if let Some(storage) = session_storage() {
            let _ = storage.set_item(TENANT_ITEM, &tenant);
        }
        self.status.set(Load::default());
        self.export.set(Load::default());
        self.events.set(Load::default());
        self.tenant.set(tenant);
    }

    /// Fetches everything about the session's tenant (after sign-in or a tenant change).
    pub fn refresh_all(self) {
        self.generation.update_value(|g| *g += 1);
        self.refresh_tenants();
        self.refresh_status();
        self.refresh_export();
        self.refresh_events();
    }

    /// Runs `fetch` with the session's key and tenant into `target`, unless the session
    /// changes before it answers. An unknown key, or a refusal of a `fleet` method (they need
    /// compute:fleet:admin), ends up in `refused`; a FORBIDDEN of another method (`tenant.list`,
    /// `event.list`) only in `target`, as the fleet pages work without them.
    ///
    /// The answer's future is boxed: one small `load` per answer type instead of one per
    /// request with the whole HTTP exchange inlined (the .wasm is smaller).
    fn load<T, F>(self, target: RwSignal<Load<T>>, fetch: F, fleet: bool)
    where
        T: PartialEq + Send + Sync + 'static,
        F: FnOnce(String, String) -> Answer<T> + 'static,
    {
        self.fetch_into(target, fetch, false, fleet);
    }

    /// [`Self::load`], or, `quiet`, a re-read nobody asked for: no loading state (no "Checking…",
    /// no busy card), and the view is touched only when the answer differs from what it shows
    /// (an open "Show all" or a focused button in it stays as it is).
    fn fetch_into<T, F>(self, target: RwSignal<Load<T>>, fetch: F, quiet: bool, fleet: bool)
    where
        T: PartialEq + Send + Sync + 'static,
        F: FnOnce(String, String) -> Answer<T> + 'static,
    {
        let Some(key) = self.key.get_untracked() else {
            return;
        };
        let tenant = self.tenant.get_untracked();
        let generation = self.generation.get_value();
        if !quiet {
            self.asked.update_value(|n| *n += 1);
            target.update(|load| load.loading = true);
        }
        let asked = self.asked.get_value();
        spawn_local(async move {
            let answer = fetch(key, tenant).await;
            if self.generation.try_get_value() != Some(generation) {
                return;
            }
            // A quiet read is older than any request asked since it started: dropped.
            if quiet && self.asked.try_get_value() != Some(asked) {
                return;
            }
            target.maybe_update(|load| {
                let changed = match answer {
                    Ok(value) => {
                        let changed = load.value.as_ref() != Some(&value)
                            || load.error.is_some()
                            || load.stale.is_some();
                        load.value = Some(value);
                        load.error = None;
                        load.stale = None;
                        load.read_at = now();
                        changed
                    }
                    // A re-read nobody asked for keeps what is shown, with a note: a network
                    // blip or a revoked key must not unmount the page (and a document being
                    // edited with it) nor move the focus.
                    Err(error) if quiet && (load.value.is_some() || error.is_refusal()) => {
                        load.stale = Some((error, now()));
                        true
                    }
                    Err(error) => {
                        load.stale = None;
                        if error.code == "UNAUTHENTICATED" || (fleet && error.is_refusal()) {
                            self.refused.set(Some(error.clone()));
                        }
                        let changed = load.error.as_ref() != Some(&error);
                        load.error = Some(error);
                        changed
                    }
                };
                if quiet {
                    return changed;
                }
                load.loading = false;
                true
            });
        });
    }

    /// Re-reads the status and the events every 30 s (sessionStorage
    /// `better-compute.statusEveryMs` overrides it, for tests) while the page is visible and
    /// signed in, quietly: the reconciler checks the fleet on its own schedule, and a page left
    /// open should show the drift it found without a click. A read still on its way is not
    /// asked again, nor one made less than half an interval ago (after an apply, Check now or
    /// Refresh: a tick just after them read the same status and events a second time).
    pub fn poll(self) {
        let every: u64 = session_storage()
            .and_then(|s| s.get_item(EVERY_ITEM).ok().flatten())
            .and_then(|v| v.parse().ok())
            .unwrap_or(EVERY_MS);
        // Not due: on its way, or read less than half an interval ago.
        let busy = move |loading: bool, read_at: i64| loading || now() - read_at < every as i64 / 2;
        let polling = StoredValue::new(false);
        set_interval(
            move || {
                let hidden = web_sys::window()
                    .and_then(|w| w.document())
                    .is_none_or(|d| d.hidden());
                let away = self.key.with_untracked(Option::is_none)
                    || self.refused.with_untracked(Option::is_some)
                    || self.status.with_untracked(Load::refused_quietly)
                    || self.events.with_untracked(|e| {
                        e.stale
                            .as_ref()
                            .is_some_and(|(e, _)| e.code == "UNAUTHENTICATED")
                    });
                if hidden || away || polling.get_value() {
                    return;
                }
                if !self.status.with_untracked(|s| busy(s.loading, s.read_at)) {
                    self.fetch_into(
                        self.status,
                        move |key, tenant| {
                            Box::pin(async move {
                                polling.set_value(true);
                                let answer = api::fleet_status(&key, &tenant).await;
                                polling.set_value(false);
                                answer
                            })
                        },
                        true,
                        true,
                    );
                }
                // A key that may not read events is not asked again (each refusal is audited).
                if self.events_available.get_untracked()
                    && !self
                        .events
                        .with_untracked(|e| busy(e.loading, e.read_at) || events_forbidden(e))
                {
                    self.fetch_into(
                        self.events,
                        |key, tenant| {
                            Box::pin(async move { api::fleet_events(&key, &tenant).await })
                        },
                        true,
                        false,
                    );
                }
            },
            std::time::Duration::from_millis(every),
        );
    }

    /// `tenant.list`.
    pub fn refresh_tenants(self) {
        self.load(
            self.tenants,
            |key, _| Box::pin(async move { api::tenant_list(&key).await }),
            false,
        );
    }

    /// `fleet.status`.
    pub fn refresh_status(self) {
        self.load(
            self.status,
            |key, tenant| Box::pin(async move { api::fleet_status(&key, &tenant).await }),
            true,
        );
    }

    /// `fleet.export`.
    pub fn refresh_export(self) {
        self.load(
            self.export,
            |key, tenant| Box::pin(async move { api::fleet_export(&key, &tenant).await }),
            true,
        );
    }

    /// `event.list`; an older server without it hides the timeline. A key known to be
    /// refused events is not asked again (each refusal is audited): Check now and Refresh
    /// skip it; a tenant change or a new session forgets the refusal.
    pub fn refresh_events(self) {
        if self.events.with_untracked(events_forbidden) {
            return;
        }
        let available = self.events_available;
        self.load(
            self.events,
            move |key, tenant| {
                Box::pin(async move {
                    let answer = api::fleet_events(&key, &tenant).await;
                    if answer.as_ref().is_err_and(ApiError::is_unknown_method) {
                        available.set(false);
                    }
                    answer
                })
            },
            false,
        );
    }

    /// `fleet.check`: the drift check now; its answer is the new status.
    pub fn check_now(self) {
        let available = self.check_available;
        let checking = self.checking;
        let events = self;
        checking.set(true);
        self.load(
            self.status,
            move |key, tenant| {
                Box::pin(async move {
                    let answer = api::fleet_check(&key, &tenant).await;
                    checking.set(false);
                    if answer.as_ref().is_err_and(ApiError::is_unknown_method) {
                        available.set(false);
                        return api::fleet_status(&key, &tenant).await;
                    }
                    if answer.is_ok() {
                        events.refresh_events();
                    }
                    answer
                })
            },
            true,
        );
    }
}
