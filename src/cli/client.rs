//! The HTTP client every fleet command uses: `POST /api/<method>` with a bearer key, the
//! server's `{"error": {code, message, details}}` turned into [`ApiError`].

use super::config::Connection;
use super::error::CliError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// A server's refusal, as it sent it.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// `FORBIDDEN`, `CONFIG_DRIFT`, ...
    pub code: String,
    /// The server's message.
    pub message: String,
    /// The server's details (`null` when none).
    pub details: Value,
}

impl From<ApiError> for CliError {
    fn from(err: ApiError) -> Self {
        CliError::Coded {
            code: err.code,
            message: err.message,
        }
    }
}

/// Why a call failed: the server refused it, the request never left, or no answer came back.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with an error.
    Api(ApiError),
    /// The request was sent (or may have been) but no usable answer came back: the server
    /// may have carried it out. The text says what happened (`no answer within 120 s`, ...).
    Unanswered {
        /// The method called.
        method: String,
        /// What went wrong, for a person.
        detail: String,
    },
    /// Nothing usable: the server could not be reached, or its answer is unreadable.
    Transport(CliError),
}

impl From<CallError> for CliError {
    fn from(err: CallError) -> Self {
        match err {
            CallError::Api(api) => api.into(),
            CallError::Unanswered { method, detail } => {
                CliError::failed(format!("no answer to {method}: {detail}"))
            }
            CallError::Transport(err) => err,
        }
    }
}

/// How long a call may take, answer included; said in the error when it runs out.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A connected client.
pub struct Client {
    http: reqwest::blocking::Client,
    connection: Connection,
}

impl Client {
    /// A client for `connection`.
    pub fn new(connection: Connection) -> Result<Client, CliError> {
        let http = reqwest::blocking::Client::builder()
            .user_agent(concat!("better-compute-cli/", env!("CARGO_PKG_VERSION")))
            // A redirect is answered, not followed: reqwest would drop the key on the way (the
            // server then says UNAUTHENTICATED to a caller who gave one) and a 301 would turn
            // the POST into a GET without its document.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .map_err(|err| CliError::failed(format!("setting up the HTTP client: {err}")))?;
        Ok(Client { http, connection })
    }

    /// Calls `method` with `input` and reads its output.
    pub fn call<I: Serialize, O: DeserializeOwned>(
        &self,
        method: &str,
        input: &I,
    ) -> Result<O, CallError> {
        let url = format!("{}/api/{method}", self.connection.url);
        let response = self
            .http
            .post(&url)
            .bearer_auth(&self.connection.token)
            .json(input)
            .send()
            .map_err(|err| self.failure(method, &err))?;
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().map_err(|err| self.failure(method, &err))?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|err| {
                // A login page or a proxy's answers 200 too: that is not the server.
                let why = match serde_json::from_slice::<serde::de::IgnoredAny>(&body) {
                    Ok(_) => err.to_string(),
                    Err(_) => format!("the server answered {status} with text that is not JSON ({err}); {NOT_THE_SERVER}"),
                };
                CallError::Transport(CliError::failed(format!(
                    "the answer of {method} is not what this CLI expects: {why}"
                )))
            });
        }
        let mut error = read_error(status, &body);
        if let Some(location) = location.filter(|_| status.is_redirection()) {
            error.message = format!(
                "the server answered {status}, a redirect to {location}; the CLI does not \
                 follow redirects (the API key would not go along): give the URL it redirects to"
            );
        }
        Err(CallError::Api(error))
    }

    /// A failed request, as far as the client can tell what reached the server: a connection
    /// that was never made sent nothing ("cannot reach"), anything later may have delivered the
    /// request while losing its answer.
    fn failure(&self, method: &str, err: &reqwest::Error) -> CallError {
        if err.is_connect() {
            return CallError::Transport(CliError::failed(format!(
                "cannot reach {}: {}",
                self.connection.url,
                error_chain(err)
            )));
        }
        let detail = if err.is_timeout() {
            format!("no answer within {} s", TIMEOUT.as_secs())
        } else {
            format!(
                "the connection broke before the answer came: {}",
                error_chain(err)
            )
        };
        CallError::Unanswered {
            method: method.to_owned(),
            detail,
        }
    }
}

/// The hint of an answer that no better-compute server gives.
const NOT_THE_SERVER: &str = "is the URL a better-compute server, without a path?";

/// The server's error body, or a stand-in when it sent something else (a proxy's page).
fn read_error(status: reqwest::StatusCode, body: &[u8]) -> ApiError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|body| body.get("error"));
    match error.and_then(|e| Some((e.get("code")?.as_str()?, e.get("message")?.as_str()?))) {
        Some((code, message)) => ApiError {
            code: code.to_owned(),
            message: message.to_owned(),
            details: error
                .and_then(|e| e.get("details"))
                .cloned()
                .unwrap_or(Value::Null),
        },
        None => ApiError {
            code: format!("HTTP_{}", status.as_u16()),
            // A proxy's page, a web server's 404 or 405: the URL is likely not the server's.
            message: format!(
                "the server answered {status} without an error body ({NOT_THE_SERVER})"
            ),
            details: Value::Null,
        },
    }
}

/// An error and its sources, `a: b: c`, since reqwest's top-level message alone says little.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}
