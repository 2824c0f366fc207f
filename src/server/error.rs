//! The API's one error type and its envelope: `{"error": {"code", "message", "details"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The error codes of PRODUCT.md section 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// 400, with `details.path`.
    InvalidInput,
    /// 401.
    Unauthenticated,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 409: the fleet moved since the reviewed plan.
    ConfigDrift,
    /// 409: the plan has blocked changes.
    PlanBlocked,
    /// 409: an object moved since its revision was read.
    Conflict,
    /// 413.
    PayloadTooLarge,
    /// 501: the deployment does not serve this.
    Unsupported,
    /// 500, details never leave the server.
    Internal,
}

impl Code {
    /// The code as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidInput => "INVALID_INPUT",
            Code::Unauthenticated => "UNAUTHENTICATED",
            Code::Forbidden => "FORBIDDEN",
            Code::NotFound => "NOT_FOUND",
            Code::ConfigDrift => "CONFIG_DRIFT",
            Code::PlanBlocked => "PLAN_BLOCKED",
            Code::Conflict => "CONFLICT",
            Code::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Code::Unsupported => "UNSUPPORTED",
            Code::Internal => "INTERNAL",
        }
    }

    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            Code::InvalidInput => StatusCode::BAD_REQUEST,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::Forbidden => StatusCode::FORBIDDEN,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::ConfigDrift | Code::PlanBlocked | Code::Conflict => StatusCode::CONFLICT,
            Code::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Code::Unsupported => StatusCode::NOT_IMPLEMENTED,
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// An error answered to the client.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// The code.
    pub code: Code,
    /// A sentence for a person.
    pub message: String,
    /// Structured details (`{}` when none).
    pub details: Value,
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: json!({}),
        }
    }

    /// An error with details.
    pub fn with(code: Code, message: impl Into<String>, details: Value) -> Self {
        ApiError {
            code,
            message: message.into(),
            details,
        }
    }

    /// INVALID_INPUT at `path`.
    pub fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        let (path, message) = (path.into(), message.into());
        let details = json!({ "path": path, "problems": [{ "path": path, "message": message }] });
        ApiError::with(Code::InvalidInput, message, details)
    }

    /// NOT_FOUND for an object of `kind`.
    pub fn not_found(kind: &str, id: &str) -> Self {
        ApiError::with(
            Code::NotFound,
            format!("{kind} {id:?} not found"),
            json!({ "kind": kind, "id": id }),
        )
    }

    /// CONFLICT naming the object whose revision moved.
    pub fn conflict(object: &str, expected: u64, actual: Option<i64>) -> Self {
        let message = match actual {
            Some(actual) => format!(
                "{object} has moved: it is at revision {actual}, the call expected {expected}"
            ),
            None => format!("{object} no longer exists (the call expected revision {expected})"),
        };
        ApiError::with(
            Code::Conflict,
            message,
            json!({ "object": object, "expected": expected, "actual": actual }),
        )
    }

    /// UNSUPPORTED for a kind the deployment does not serve.
    pub fn unsupported(what: &str) -> Self {
        ApiError::new(
            Code::Unsupported,
            format!("this deployment does not serve {what}"),
        )
    }

    /// INTERNAL; the cause is logged, never answered.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(Code::Internal, "internal error")
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        // PostgreSQL ends one of two transactions that wait on each other (a deadlock: two
        // tenants' applies each using the other's pools) or cannot be serialized: nothing of
        // it was written, and the same request again succeeds. That is a conflict, not a fault.
        let collided = err
            .as_database_error()
            .and_then(|e| e.code())
            .is_some_and(|code| code == "40P01" || code == "40001");
        if collided {
            tracing::warn!(error = %err, "transaction collided with another");
            return ApiError::new(
                Code::Conflict,
                "the request collided with another one touching the same objects; nothing was \
                 changed: send it again",
            );
        }
        ApiError::internal(&err)
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(err: serde_json::Error) -> Self {
        ApiError::internal(&err)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({ "error": {
            "code": self.code.as_str(),
            "message": self.message,
            "details": self.details,
        }});
        (self.code.status(), axum::Json(body)).into_response()
    }
}
