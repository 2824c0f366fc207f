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

/// Why a call failed: the server refused it, or it never got a readable answer.
#[derive(Debug)]
pub enum CallError {
    /// The server answered with an error.
    Api(ApiError),
    /// No usable answer (network, unreadable body).
    Transport(CliError),
}

impl From<CallError> for CliError {
    fn from(err: CallError) -> Self {
        match err {
            CallError::Api(api) => api.into(),
            CallError::Transport(err) => err,
        }
    }
}

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
            .timeout(Duration::from_secs(120))
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
            .map_err(|err| {
                CallError::Transport(CliError::failed(format!(
                    "cannot reach {}: {}",
                    self.connection.url,
                    error_chain(&err)
                )))
            })?;
        let status = response.status();
        let body = response.bytes().map_err(|err| {
            CallError::Transport(CliError::failed(format!(
                "reading the answer of {method}: {}",
                error_chain(&err)
            )))
        })?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|err| {
                CallError::Transport(CliError::failed(format!(
                    "the answer of {method} is not what this CLI expects: {err}"
                )))
            });
        }
        Err(CallError::Api(read_error(status, &body)))
    }
}

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
                "the server answered {status} without an error body (is the URL a \
                 better-compute server, without a path?)"
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
