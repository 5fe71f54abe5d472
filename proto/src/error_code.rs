//! Directus's error codes (Directus docs "Error Codes"; docs/directus-compatibility.md) and the one place
//! where they are mapped to gRPC codes and HTTP statuses.
//!
//! On the wire a failed call is a `tonic::Status` whose message is the human message, whose
//! metadata `error-code` holds the code (ASCII, e.g. `FORBIDDEN`) and whose metadata
//! `error-extensions-bin` holds an optional JSON object with the code's extensions
//! (e.g. `{"reason":"..."}` for INVALID_QUERY).

use tonic::metadata::{BinaryMetadataValue, MetadataValue};

/// Metadata key carrying the error code.
pub const ERROR_CODE_KEY: &str = "error-code";
/// Metadata key carrying the JSON extensions (binary metadata).
pub const ERROR_EXTENSIONS_KEY: &str = "error-extensions-bin";

/// Every error code the API returns. `as_str()` is the code as clients see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 400: validation of the item failed.
    FailedValidation,
    /// 403: not allowed, or the item does not exist (docs/security.md "Threat model").
    Forbidden,
    /// 403: the token is invalid.
    InvalidToken,
    /// 401: the token is valid but expired.
    TokenExpired,
    /// 401: wrong username/password or access token.
    InvalidCredentials,
    /// 401: caller IP not allow-listed.
    InvalidIp,
    /// 401: wrong one-time password.
    InvalidOtp,
    /// 400: the payload is invalid.
    InvalidPayload,
    /// 400: the query parameters cannot be used.
    InvalidQuery,
    /// 413: the request body is larger than allowed (Directus `CONTENT_TOO_LARGE`).
    ContentTooLarge,
    /// 415: unsupported payload format or Content-Type.
    UnsupportedMediaType,
    /// 416: the `Range` of an asset request lies outside the file.
    RangeNotSatisfiable,
    /// 400: an image transformation that may not run (Directus `ILLEGAL_ASSET_TRANSFORMATION`:
    /// an image larger than the transformation limit, or not an image it can decode).
    IllegalAssetTransformation,
    /// 429: rate limit hit.
    RequestsExceeded,
    /// 404: the endpoint does not exist.
    RouteNotFound,
    /// 405: the endpoint exists but not with this method (Directus behaviour).
    MethodNotAllowed,
    /// 503: an external service could not be used.
    ServiceUnavailable,
    /// 422: an illegal action was attempted.
    UnprocessableContent,
    /// 400: a unique constraint was violated (Directus `RECORD_NOT_UNIQUE`).
    RecordNotUnique,
    /// 400: a foreign key does not point at an existing item.
    InvalidForeignKey,
    /// 500: anything unexpected; details only in logs.
    InternalServerError,
}

impl ErrorCode {
    /// Every code, for lookups by name.
    pub const ALL: [ErrorCode; 21] = [
        Self::FailedValidation,
        Self::Forbidden,
        Self::InvalidToken,
        Self::TokenExpired,
        Self::InvalidCredentials,
        Self::InvalidIp,
        Self::InvalidOtp,
        Self::InvalidPayload,
        Self::InvalidQuery,
        Self::ContentTooLarge,
        Self::UnsupportedMediaType,
        Self::RangeNotSatisfiable,
        Self::IllegalAssetTransformation,
        Self::RequestsExceeded,
        Self::RouteNotFound,
        Self::MethodNotAllowed,
        Self::ServiceUnavailable,
        Self::UnprocessableContent,
        Self::RecordNotUnique,
        Self::InvalidForeignKey,
        Self::InternalServerError,
    ];

    /// The code as it appears in `extensions.code`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailedValidation => "FAILED_VALIDATION",
            Self::Forbidden => "FORBIDDEN",
            Self::InvalidToken => "INVALID_TOKEN",
            Self::TokenExpired => "TOKEN_EXPIRED",
            Self::InvalidCredentials => "INVALID_CREDENTIALS",
            Self::InvalidIp => "INVALID_IP",
            Self::InvalidOtp => "INVALID_OTP",
            Self::InvalidPayload => "INVALID_PAYLOAD",
            Self::InvalidQuery => "INVALID_QUERY",
            Self::ContentTooLarge => "CONTENT_TOO_LARGE",
            Self::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Self::RangeNotSatisfiable => "RANGE_NOT_SATISFIABLE",
            Self::IllegalAssetTransformation => "ILLEGAL_ASSET_TRANSFORMATION",
            Self::RequestsExceeded => "REQUESTS_EXCEEDED",
            Self::RouteNotFound => "ROUTE_NOT_FOUND",
            Self::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Self::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            Self::UnprocessableContent => "UNPROCESSABLE_CONTENT",
            Self::RecordNotUnique => "RECORD_NOT_UNIQUE",
            Self::InvalidForeignKey => "INVALID_FOREIGN_KEY",
            Self::InternalServerError => "INTERNAL_SERVER_ERROR",
        }
    }

    /// Parses a code name; unknown names are `None`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// HTTP status of the code (Directus docs "Error Codes").
    pub fn http_status(self) -> u16 {
        match self {
            Self::FailedValidation
            | Self::InvalidPayload
            | Self::InvalidQuery
            | Self::IllegalAssetTransformation
            | Self::RecordNotUnique
            | Self::InvalidForeignKey => 400,
            Self::TokenExpired | Self::InvalidCredentials | Self::InvalidIp | Self::InvalidOtp => 401,
            Self::Forbidden | Self::InvalidToken => 403,
            Self::RouteNotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::ContentTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::RangeNotSatisfiable => 416,
            Self::UnprocessableContent => 422,
            Self::RequestsExceeded => 429,
            Self::ServiceUnavailable => 503,
            Self::InternalServerError => 500,
        }
    }

    /// gRPC status code used when the error crosses a gRPC boundary.
    pub fn grpc_code(self) -> tonic::Code {
        use tonic::Code;
        match self {
            Self::FailedValidation
            | Self::InvalidPayload
            | Self::InvalidQuery
            | Self::UnsupportedMediaType
            | Self::RangeNotSatisfiable
            | Self::IllegalAssetTransformation
            | Self::ContentTooLarge
            | Self::InvalidForeignKey => Code::InvalidArgument,
            Self::RecordNotUnique => Code::AlreadyExists,
            Self::Forbidden | Self::InvalidIp => Code::PermissionDenied,
            Self::InvalidToken | Self::TokenExpired | Self::InvalidCredentials | Self::InvalidOtp => Code::Unauthenticated,
            Self::RequestsExceeded => Code::ResourceExhausted,
            Self::RouteNotFound => Code::NotFound,
            Self::MethodNotAllowed => Code::Unimplemented,
            Self::ServiceUnavailable => Code::Unavailable,
            Self::UnprocessableContent => Code::FailedPrecondition,
            Self::InternalServerError => Code::Internal,
        }
    }

    /// Code assumed for a Status that carries no `error-code` metadata (e.g. from a proxy).
    pub fn from_grpc_code(code: tonic::Code) -> Self {
        use tonic::Code;
        match code {
            Code::InvalidArgument => Self::InvalidPayload,
            Code::PermissionDenied => Self::Forbidden,
            Code::Unauthenticated => Self::InvalidCredentials,
            Code::ResourceExhausted => Self::RequestsExceeded,
            Code::NotFound => Self::RouteNotFound,
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled => Self::ServiceUnavailable,
            Code::FailedPrecondition => Self::UnprocessableContent,
            _ => Self::InternalServerError,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API error as every process handles it: code, human message and extensions. Its
/// `Display` (for logs, never for clients) is `CODE: message`, then ` (cause: …)` when it
/// carries a [`cause`](Self::cause).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}{}", .cause.as_deref().map(|c| format!(" (cause: {c})")).unwrap_or_default())]
pub struct ApiError {
    /// The error code.
    pub code: ErrorCode,
    /// Human message, e.g. `Invalid query. Unknown field "x".` (Directus wording).
    pub message: String,
    /// Extra `extensions` members besides `code` (a JSON object), e.g. `{"reason": "..."}`.
    pub extensions: serde_json::Map<String, serde_json::Value>,
    /// Why an internal error happened ([`ApiError::internal_because`]): kept until the error
    /// leaves the process, logged there once ([`ApiError::to_status`], and the edges' error
    /// reply), never sent to the client. Boxed: an error stays small enough to return by value.
    pub cause: Option<Box<String>>,
}

impl ApiError {
    /// An error with a message and no extensions.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), extensions: serde_json::Map::new(), cause: None }
    }

    /// INVALID_QUERY with `reason` (message `Invalid query. <reason>.` as Directus words it).
    pub fn invalid_query(reason: impl Into<String>) -> Self {
        Self::with_reason(ErrorCode::InvalidQuery, "Invalid query", reason.into())
    }

    /// INVALID_PAYLOAD with `reason` (message `Invalid payload. <reason>.`).
    pub fn invalid_payload(reason: impl Into<String>) -> Self {
        Self::with_reason(ErrorCode::InvalidPayload, "Invalid payload", reason.into())
    }

    /// UNPROCESSABLE_CONTENT with `reason` (message `Can't process content. <reason>.`, as
    /// Directus words it).
    pub fn unprocessable(reason: impl Into<String>) -> Self {
        Self::with_reason(ErrorCode::UnprocessableContent, "Can't process content", reason.into())
    }

    /// FAILED_VALIDATION for `field` with the check `kind` (`eq`, `null`, ...) and a sentence
    /// of detail: Directus's shape, `extensions.field` and `extensions.type`.
    pub fn failed_validation(field: &str, kind: &str, detail: &str) -> Self {
        let mut e = Self::new(ErrorCode::FailedValidation, format!("Validation failed for field \"{field}\". {detail}"));
        e.extensions.insert("field".into(), field.into());
        e.extensions.insert("type".into(), kind.into());
        e
    }

    /// FORBIDDEN for a collection that does not exist or may not be used, worded as Directus
    /// does (the same answer for both, so a caller cannot probe which collections exist).
    pub fn forbidden_collection(collection: &str) -> Self {
        let mut e = Self::forbidden();
        e.message = format!("You don't have permission to access collection \"{collection}\" or it does not exist.");
        e.extensions.insert("reason".into(), e.message.clone().into());
        e
    }

    /// FORBIDDEN for a field that does not exist or may not be read, worded as Directus does.
    pub fn forbidden_field(collection: &str, field: &str) -> Self {
        let mut e = Self::forbidden();
        e.message = format!("You don't have permission to access field \"{field}\" in collection \"{collection}\" or it does not exist.");
        e.extensions.insert("reason".into(), e.message.clone().into());
        e
    }

    /// FORBIDDEN with Directus's message.
    pub fn forbidden() -> Self {
        Self::new(ErrorCode::Forbidden, "You don't have permission to access this.")
    }

    /// REQUESTS_EXCEEDED (429) for a limit of `limit` requests that frees up again in
    /// `retry_after`: Directus's message and extensions `{limit, reset}` (`reset`: RFC 3339
    /// time), plus `retry_after` (whole seconds, at least 1), which the edges also send as the
    /// `Retry-After` header.
    pub fn requests_exceeded(limit: u32, retry_after: std::time::Duration) -> Self {
        let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let secs = secs.max(1);
        let reset = std::time::SystemTime::now() + std::time::Duration::from_secs(secs);
        let mut e = Self::new(ErrorCode::RequestsExceeded, format!("Too many requests, retry after {secs}s."));
        e.extensions.insert("limit".into(), limit.into());
        e.extensions.insert("reset".into(), humantime::format_rfc3339_seconds(reset).to_string().into());
        e.extensions.insert("retry_after".into(), secs.into());
        e
    }

    /// ROUTE_NOT_FOUND for `path` (the request path, without its query), with Directus's message
    /// and its `path` extension.
    pub fn route_not_found(path: &str) -> Self {
        let mut e = Self::new(ErrorCode::RouteNotFound, format!("Route {path} doesn't exist."));
        e.extensions.insert("path".into(), path.into());
        e
    }

    /// INVALID_CREDENTIALS with Directus's message: one answer for a wrong email, a wrong
    /// password, an unknown token and an inactive user (docs/authentication.md).
    pub fn invalid_credentials() -> Self {
        Self::new(ErrorCode::InvalidCredentials, "Invalid user credentials.")
    }

    /// INVALID_IP with Directus's message: the caller's address is not allow-listed.
    pub fn invalid_ip() -> Self {
        Self::new(ErrorCode::InvalidIp, "Invalid IP address.")
    }

    /// INTERNAL_SERVER_ERROR with Directus's message (the cause belongs in logs only).
    pub fn internal() -> Self {
        Self::new(ErrorCode::InternalServerError, "An unexpected error occurred.")
    }

    /// [`ApiError::internal`] that keeps its `cause` (any error's text) for the log line written
    /// where it leaves the process: `.map_err(ApiError::internal_because)`.
    pub fn internal_because(cause: impl std::fmt::Display) -> Self {
        let mut e = Self::internal();
        e.cause = Some(Box::new(cause.to_string()));
        e
    }

    fn with_reason(code: ErrorCode, prefix: &str, reason: String) -> Self {
        let trimmed = reason.trim_end_matches('.');
        let mut extensions = serde_json::Map::new();
        extensions.insert("reason".into(), serde_json::Value::String(trimmed.to_owned()));
        Self { code, message: format!("{prefix}. {trimmed}."), extensions, cause: None }
    }

    /// Logs the [`cause`](Self::cause), if the error carries one, at `error` level: called
    /// once where the error leaves the process (a gRPC status, a GraphQL error), so a cause is
    /// neither lost nor sent.
    pub fn log_cause(&self) {
        if let Some(cause) = &self.cause {
            tracing::error!(code = self.code.as_str(), cause = %cause, "{}", self.message);
        }
    }

    /// Encodes the error as a `tonic::Status` (see module docs for the metadata keys); its
    /// cause is logged ([`Self::log_cause`]), not encoded.
    pub fn to_status(&self) -> tonic::Status {
        self.log_cause();
        let mut status = tonic::Status::new(self.code.grpc_code(), self.message.clone());
        let md = status.metadata_mut();
        md.insert(ERROR_CODE_KEY, MetadataValue::from_static(self.code.as_str()));
        if !self.extensions.is_empty() {
            let json = serde_json::Value::Object(self.extensions.clone()).to_string();
            md.insert_bin(ERROR_EXTENSIONS_KEY, BinaryMetadataValue::from_bytes(json.as_bytes()));
        }
        status
    }

    /// Decodes a `tonic::Status` received from a service. A status without our metadata (a
    /// transport failure) becomes SERVICE_UNAVAILABLE or the closest error code.
    pub fn from_status(status: &tonic::Status) -> Self {
        let md = status.metadata();
        let code = md.get(ERROR_CODE_KEY).and_then(|v| v.to_str().ok()).and_then(ErrorCode::parse);
        let Some(code) = code else {
            // No `error-code`: the transport's or the framework's status, not a service's
            // answer. UNKNOWN is how a connection lost in the middle of a call surfaces (a
            // replica killed): the backend failed, so 503, not a 500 that reads as our bug.
            let code = match status.code() {
                tonic::Code::Unknown => ErrorCode::ServiceUnavailable,
                other => ErrorCode::from_grpc_code(other),
            };
            return match code {
                ErrorCode::ServiceUnavailable => {
                    // Worth another try soon: the edges send `Retry-After: 1`.
                    let mut e = Self::new(code, "Service unavailable: a backend service could not be reached.");
                    e.extensions.insert("retry_after".into(), 1.into());
                    e
                }
                ErrorCode::InternalServerError => Self::internal(),
                _ => Self::new(code, status.message()),
            };
        };
        let extensions = md
            .get_bin(ERROR_EXTENSIONS_KEY)
            .and_then(|v| v.to_bytes().ok())
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| match v {
                serde_json::Value::Object(m) => Some(m),
                _ => None,
            })
            .unwrap_or_default();
        Self { code, message: status.message().to_owned(), extensions, cause: None }
    }

    /// The Directus error body as JSON text: `{"errors":[{"message":..,"extensions":{..,"code":..}}]}`,
    /// the other extensions first and `code` last, in the order Directus writes them.
    pub fn to_body(&self) -> String {
        let mut ext = String::from("{");
        for (k, v) in self.extensions.iter().filter(|(k, _)| k.as_str() != "code") {
            ext.push_str(&serde_json::Value::String(k.clone()).to_string());
            ext.push(':');
            ext.push_str(&v.to_string());
            ext.push(',');
        }
        ext.push_str(&format!("\"code\":\"{}\"}}", self.code.as_str()));
        format!(r#"{{"errors":[{{"message":{},"extensions":{ext}}}]}}"#, serde_json::Value::String(self.message.clone()))
    }
}

impl From<tonic::Status> for ApiError {
    /// [`ApiError::from_status`]: a service's answer back into the API error, so a gRPC
    /// call's error needs nothing but `?`.
    fn from(s: tonic::Status) -> Self {
        ApiError::from_status(&s)
    }
}

impl From<ApiError> for tonic::Status {
    fn from(e: ApiError) -> Self {
        e.to_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_error_keeps_its_cause_but_never_sends_it() {
        let Err(e) = "x".parse::<u8>().map_err(ApiError::internal_because) else { panic!("\"x\" parsed as a number") };
        assert_eq!((e.code, e.cause.as_deref().map(String::as_str)), (ErrorCode::InternalServerError, Some("invalid digit found in string")));
        let status = e.to_status();
        assert_eq!(status.message(), "An unexpected error occurred.");
        let back = ApiError::from_status(&status);
        assert_eq!((back.code, back.cause), (ErrorCode::InternalServerError, None));
        assert!(!format!("{:?}", status.metadata()).contains("invalid digit"));
        // Logs written from `Display` (background work, start-up) keep it too.
        assert_eq!(e.to_string(), "INTERNAL_SERVER_ERROR: An unexpected error occurred. (cause: invalid digit found in string)");
        assert_eq!(ApiError::forbidden().to_string(), format!("FORBIDDEN: {}", ApiError::forbidden().message));
    }

    #[test]
    fn status_round_trip_keeps_code_message_and_extensions() {
        let e = ApiError::invalid_query("Unknown field \"nope\"");
        let back = ApiError::from_status(&e.to_status());
        assert_eq!(back, e);
        assert_eq!(back.message, "Invalid query. Unknown field \"nope\".");
        assert_eq!(back.extensions["reason"], "Unknown field \"nope\"");
    }

    #[test]
    fn body_writes_code_last_as_directus() {
        let body = ApiError::route_not_found("/nope").to_body();
        assert_eq!(body, r#"{"errors":[{"message":"Route /nope doesn't exist.","extensions":{"path":"/nope","code":"ROUTE_NOT_FOUND"}}]}"#);
        let body = ApiError::invalid_query("Bad \"x\"").to_body();
        assert_eq!(body, r#"{"errors":[{"message":"Invalid query. Bad \"x\".","extensions":{"reason":"Bad \"x\"","code":"INVALID_QUERY"}}]}"#);
    }

    #[test]
    fn every_code_parses_back_and_maps_to_spec_status() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCode::Forbidden.http_status(), 403);
        assert_eq!(ErrorCode::TokenExpired.http_status(), 401);
        assert_eq!(ErrorCode::InvalidToken.http_status(), 403);
        assert_eq!(ErrorCode::RequestsExceeded.http_status(), 429);
        assert_eq!(ErrorCode::UnprocessableContent.http_status(), 422);
    }

    #[test]
    fn transport_failures_become_service_unavailable() {
        let e = ApiError::from_status(&tonic::Status::unavailable("connection refused"));
        assert_eq!(e.code, ErrorCode::ServiceUnavailable);
        assert!(!e.message.contains("refused"));
        let e = ApiError::from_status(&tonic::Status::unknown("h2 protocol error: connection reset"));
        assert_eq!(e.code, ErrorCode::ServiceUnavailable, "a connection lost mid-call");
        assert_eq!(e.extensions.get("retry_after"), Some(&serde_json::json!(1)), "answered with Retry-After");
        // A service's own error keeps its code.
        let e = ApiError::from_status(&ApiError::internal().to_status());
        assert_eq!(e.code, ErrorCode::InternalServerError);
    }
}
