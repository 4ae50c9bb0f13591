//! Who calls and what they ask about: the caller's `sub` from the authorizer's claims, a JSON
//! body as sent, and the position id the path names (what every handler module starts from).

use crate::edge::error::ApiError;
use crate::edge::http::{caller, content_encoding, is_json};
use crate::edge::validation::{is_position_id, MAX_BODY_BYTES};
use lambda_http::{Request, RequestExt};

/// The caller's `sub`; without the authorizer's claims the request is unauthorized.
pub fn owner(request: &Request) -> Result<String, ApiError> {
    caller(request).ok_or(ApiError::Unauthorized)
}

fn position_not_found() -> ApiError {
    ApiError::NotFound("position not found".into())
}

/// The position id the path names; a malformed one is 404, as an unknown one is.
pub fn position_id(request: &Request) -> Result<String, ApiError> {
    request
        .path_parameters_ref()
        .and_then(|p| p.first("id"))
        .filter(|id| is_position_id(id))
        .map(str::to_string)
        .ok_or_else(position_not_found)
}

/// The request's body, if it is uncompressed JSON within [`MAX_BODY_BYTES`].
pub fn json_body(request: &Request) -> Result<&[u8], ApiError> {
    if !is_json(request) {
        return Err(ApiError::UnsupportedMediaType(
            "Content-Type must be application/json".into(),
        ));
    }
    if let Some(encoding) = content_encoding(request) {
        return Err(ApiError::UnsupportedMediaType(format!(
            "Content-Encoding {encoding} is not supported: send the body uncompressed"
        )));
    }
    let body = request.body().as_ref();
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge {
            limit: MAX_BODY_BYTES,
        });
    }
    Ok(body)
}
